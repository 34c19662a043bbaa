#define _GNU_SOURCE
#include "icy_shims.h"
#include <zlib.h>
#include <string.h>
#include <stdlib.h>
#include <errno.h>

typedef struct {
    gzFile gz;
    char error[256];
    char *stdio_buffer;   /* the FILE's buffer: glibc ignores setvbuf's size without one */
} icy_gz_cookie;

#define ICY_STDIO_BUFFER (256 * 1024)

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
    c->stdio_buffer = malloc(ICY_STDIO_BUFFER);
    if (c->stdio_buffer && setvbuf(f, c->stdio_buffer, _IOFBF, ICY_STDIO_BUFFER) != 0) {
        free(c->stdio_buffer);
        c->stdio_buffer = NULL;
    }
    if (cookie) *cookie = c;
    return f;
}

const char *icy_gzip_error(void *cookie) {
    icy_gz_cookie *c = (icy_gz_cookie *)cookie;
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
