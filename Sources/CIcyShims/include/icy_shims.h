#pragma once
#include <stdio.h>

/// Opens a FILE* that yields the decompressed bytes of a gzip stream (or the bytes as they are,
/// when the stream is not gzip: zlib reads such data transparently). The stream is decompressed
/// as it is read, never held whole in memory. `fd` is owned by the returned FILE* on success.
/// Returns NULL on failure (errno set).
FILE *icy_gzip_fdopen(int fd, void **cookie);

/// The same for a zstd-compressed stream (RFC 8878, `.zst`: one or more frames), decompressed as
/// it is read. `fd` is owned by the returned FILE* on success. NULL on failure.
FILE *icy_zstd_fdopen(int fd, void **cookie);

/// The decompression error seen by the stream whose cookie icy_gzip_fdopen or icy_zstd_fdopen
/// returned, or NULL when there is none. Valid until the FILE* is closed.
const char *icy_gzip_error(void *cookie);

/// Processors this process may run on: the size of its CPU affinity mask (what `nproc` prints),
/// or the online processors when the mask cannot be read. At least 1.
int icy_available_cpus(void);
