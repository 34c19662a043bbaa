#define _GNU_SOURCE
#include "icy_shims.h"
#include <zlib.h>
#include <zstd.h>
#include <unistd.h>
#include <string.h>
#include <stdlib.h>
#include <errno.h>

/* Every decompressing cookie starts with its error text, so that one function reads it. */
typedef struct {
    char error[256];
} icy_cookie_header;

typedef struct {
    char error[256];      /* first: see icy_cookie_header */
    gzFile gz;
    char *stdio_buffer;   /* the FILE's buffer: glibc ignores setvbuf's size without one */
} icy_gz_cookie;

#define ICY_STDIO_BUFFER (256 * 1024)

/* Gives a decompressing FILE a 256 KiB buffer (glibc ignores setvbuf's size without one);
   returns it for the cookie to free at close, or NULL when the FILE keeps its own. */
static char *icy_large_stdio_buffer(FILE *f) {
    char *buffer = malloc(ICY_STDIO_BUFFER);
    if (buffer && setvbuf(f, buffer, _IOFBF, ICY_STDIO_BUFFER) != 0) {
        free(buffer);
        return NULL;
    }
    return buffer;
}

static ssize_t icy_gz_read(void *cookie, char *buf, size_t size) {
    icy_gz_cookie *c = (icy_gz_cookie *)cookie;
    if (size > (1u << 30)) size = 1u << 30;
    int n = gzread(c->gz, buf, (unsigned)size);
    if (n < 0) {
        int errnum = 0;
        const char *msg = gzerror(c->gz, &errnum);
        snprintf(c->error, sizeof c->error, "%s", msg ? msg : "gzip error");
        errno = EIO;
        return -1;
    }
    if (n == 0) {
        int errnum = 0;
        const char *msg = gzerror(c->gz, &errnum);
        if (errnum != Z_OK && msg && c->error[0] == 0) {
            snprintf(c->error, sizeof c->error, "%s", msg);
        }
    }
    return n;
}

static int icy_gz_close(void *cookie) {
    icy_gz_cookie *c = (icy_gz_cookie *)cookie;
    int rc = gzclose(c->gz);
    free(c->stdio_buffer);
    free(c);
    return rc == Z_OK ? 0 : EOF;
}

FILE *icy_gzip_fdopen(int fd, void **cookie) {
    icy_gz_cookie *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->gz = gzdopen(fd, "rb");
    if (!c->gz) { free(c); return NULL; }
    gzbuffer(c->gz, 256 * 1024);
    cookie_io_functions_t io = { .read = icy_gz_read, .write = NULL, .seek = NULL, .close = icy_gz_close };
    FILE *f = fopencookie(c, "rb", io);
    if (!f) { gzclose(c->gz); free(c); return NULL; }
    c->stdio_buffer = icy_large_stdio_buffer(f);
    if (cookie) *cookie = c;
    return f;
}

/* zstd (RFC 8878): the frames of a .zst file, decompressed as they are read. */
typedef struct {
    char error[256];      /* first: see icy_cookie_header */
    int fd;
    ZSTD_DStream *stream;
    ZSTD_inBuffer in;
    char *input;
    size_t input_size;
    int ended;            /* read(2) returned 0 */
    size_t last_result;   /* ZSTD_decompressStream's last hint: 0 at a frame's end */
    char *stdio_buffer;
} icy_zstd_cookie;

static ssize_t icy_zstd_read(void *cookie, char *buf, size_t size) {
    icy_zstd_cookie *c = (icy_zstd_cookie *)cookie;
    ZSTD_outBuffer out = { buf, size, 0 };
    while (out.pos == 0) {
        if (c->in.pos == c->in.size) {
            if (c->ended) break;
            ssize_t n = read(c->fd, c->input, c->input_size);
            if (n < 0) {
                if (errno == EINTR) return -1;
                snprintf(c->error, sizeof c->error, "read failed: %s", strerror(errno));
                errno = EIO;
                return -1;
            }
            if (n == 0) { c->ended = 1; break; }
            c->in.src = c->input; c->in.size = (size_t)n; c->in.pos = 0;
        }
        size_t r = ZSTD_decompressStream(c->stream, &out, &c->in);
        if (ZSTD_isError(r)) {
            snprintf(c->error, sizeof c->error, "%s", ZSTD_getErrorName(r));
            errno = EIO;
            return -1;
        }
        c->last_result = r;
    }
    if (out.pos == 0 && c->ended && c->last_result != 0 && c->error[0] == 0) {
        snprintf(c->error, sizeof c->error, "the zstd stream ends inside a frame");
    }
    return (ssize_t)out.pos;
}

static int icy_zstd_close(void *cookie) {
    icy_zstd_cookie *c = (icy_zstd_cookie *)cookie;
    ZSTD_freeDStream(c->stream);
    close(c->fd);
    free(c->input);
    free(c->stdio_buffer);
    free(c);
    return 0;
}

FILE *icy_zstd_fdopen(int fd, void **cookie) {
    icy_zstd_cookie *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->fd = fd;
    c->stream = ZSTD_createDStream();
    c->input_size = ZSTD_DStreamInSize() * 4;
    c->input = malloc(c->input_size);
    if (!c->stream || !c->input) { ZSTD_freeDStream(c->stream); free(c->input); free(c); return NULL; }
    ZSTD_initDStream(c->stream);
    cookie_io_functions_t io = { .read = icy_zstd_read, .write = NULL, .seek = NULL, .close = icy_zstd_close };
    FILE *f = fopencookie(c, "rb", io);
    if (!f) { ZSTD_freeDStream(c->stream); free(c->input); free(c); return NULL; }
    c->stdio_buffer = icy_large_stdio_buffer(f);
    if (cookie) *cookie = c;
    return f;
}

const char *icy_gzip_error(void *cookie) {
    icy_cookie_header *c = (icy_cookie_header *)cookie;
    if (!c) return NULL;
    return c->error[0] ? c->error : NULL;
}

#include <sched.h>
#include <unistd.h>

int icy_available_cpus(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}
