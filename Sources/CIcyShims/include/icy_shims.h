#pragma once
#include <stdio.h>

/// Compressed input formats, recognised by their magic bytes.
enum { ICY_PLAIN = 0, ICY_GZIP = 1, ICY_ZSTD = 2, ICY_LZ4 = 3, ICY_XZ = 4, ICY_BZIP2 = 5 };

/// The format whose magic bytes `b` (at least 6 bytes, when the input has them) start with:
/// gzip, zstd, an LZ4 frame, xz or bzip2; ICY_PLAIN otherwise.
int icy_compression_of(const unsigned char *b, size_t n);

/// Opens a FILE* that yields the decompressed bytes of `fd` in format `kind` (ICY_PLAIN: the
/// bytes as they are), decompressed as they are read, never held whole in memory. Members,
/// frames and streams one after another are one stream. `prefix` (at most 16 bytes) is what the
/// caller already read from `fd` to recognise the format: it is read first. `fd` is owned by the
/// returned FILE* on success. Returns NULL on failure (errno set).
FILE *icy_decompress_fdopen(int fd, int kind, const unsigned char *prefix, size_t prefix_len, void **cookie);

/// The decompression error seen by the stream whose cookie icy_decompress_fdopen returned (a
/// corrupt stream, or one that ends inside a member or frame), or NULL when there is none.
/// Valid until the FILE* is closed.
const char *icy_decompress_error(void *cookie);

/// Processors this process may run on: the size of its CPU affinity mask (what `nproc` prints),
/// or the online processors when the mask cannot be read. At least 1.
int icy_available_cpus(void);

/// Names the calling thread (`pthread_setname_np`, which needs _GNU_SOURCE: Swift's Glibc
/// module does not declare it): the first 15 bytes of `name` are what top -H, perf and
/// /proc/PID/task/TID/comm show. 0, or an error number.
int icy_name_this_thread(const char *name);

/// A read-only mapping of a whole regular file that survives the file shrinking under it.
///
/// Touching a page of a file mapping past the file's end raises SIGBUS; a capture that another
/// program truncates while icy-sniff reads it would kill the process. Mappings made here are
/// registered with a SIGBUS handler (installed once, the previous handler kept for every other
/// fault): a fault inside a registered mapping replaces that page with a page of zeros and is
/// counted, and the reader, which checks the count for every record, stops with a message
/// instead. Up to 1024 mappings at once (batch runs one per file being read).
///
/// Maps `length` (> 0) bytes of `fd` from offset 0, PROT_READ and MAP_PRIVATE, and registers
/// them. Returns the slot (>= 0) and the address in `*base`, or -1 with errno set.
int icy_map_file(int fd, size_t length, const void **base);

/// Pages of slot's mapping that were touched past the end of the file (each now reads as zeros).
unsigned long icy_mapping_faults(int slot);

/// Advice for the range of slot's mapping (madvise(2)); the range is rounded to whole pages
/// inside it. Returns 0, or -1 with errno set.
int icy_mapping_advise(int slot, size_t offset, size_t length, int advice);

/// Unregisters and unmaps the slot.
void icy_unmap_file(int slot);

/// A hint that the cache line at `p` is read soon (x86 PREFETCHT0): never faults, whatever `p`.
static inline void icy_prefetch(const void *p) { __builtin_prefetch(p, 0, 3); }
