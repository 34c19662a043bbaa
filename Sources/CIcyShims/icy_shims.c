#define _GNU_SOURCE
#include "icy_shims.h"
#include <zlib.h>
#include <zstd.h>
#include <lz4frame.h>
#include <lzma.h>
#include <bzlib.h>
#include <unistd.h>
#include <string.h>
#include <stdlib.h>
#include <errno.h>
#include <pthread.h>

/* Compressed captures, decompressed as they are read (never held whole): gzip (RFC 1952, members
   one after another), zstd (RFC 8878, frames one after another), LZ4 frames, xz (streams one after
   another) and bzip2 (streams one after another, as pbzip2 writes them), recognised by their magic
   bytes; anything else passes through as it is. One cookie type reads them all through one input
   buffer, which starts with the bytes the caller already read to recognise the format (a pipe
   cannot be read twice). */
typedef struct {
    char error[256];
    int fd;
    int kind;
    unsigned char *input;
    size_t input_size, in_pos, in_len;
    unsigned char prefix[16];
    size_t prefix_len;
    int ended;            /* read(2) returned 0 */
    int in_unit;          /* inside a member/frame/stream: the input must not end here */
    int finished;         /* gzip: trailing bytes that are no member are ignored, as zlib does */
    union {
        z_stream z;
        ZSTD_DStream *zstd;
        LZ4F_dctx *lz4;
        lzma_stream xz;
        bz_stream bz;
    } s;
    char *stdio_buffer;   /* the FILE's buffer: glibc ignores setvbuf's size without one */
} icy_cookie;

#define ICY_STDIO_BUFFER (256 * 1024)
#define ICY_INPUT_BUFFER (512 * 1024)

int icy_compression_of(const unsigned char *b, size_t n) {
    if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) return ICY_GZIP;
    if (n >= 4 && b[0] == 0x28 && b[1] == 0xB5 && b[2] == 0x2F && b[3] == 0xFD) return ICY_ZSTD;
    if (n >= 4 && b[0] == 0x04 && b[1] == 0x22 && b[2] == 0x4D && b[3] == 0x18) return ICY_LZ4;
    if (n >= 6 && b[0] == 0xFD && b[1] == '7' && b[2] == 'z' && b[3] == 'X' && b[4] == 'Z' && b[5] == 0) return ICY_XZ;
    if (n >= 4 && b[0] == 'B' && b[1] == 'Z' && b[2] == 'h' && b[3] >= '1' && b[3] <= '9') return ICY_BZIP2;
    return ICY_PLAIN;
}

static const char *icy_kind_name(int kind) {
    switch (kind) {
    case ICY_GZIP: return "gzip";
    case ICY_ZSTD: return "zstd";
    case ICY_LZ4: return "lz4";
    case ICY_XZ: return "xz";
    case ICY_BZIP2: return "bzip2";
    default: return "input";
    }
}

/* Makes input available: the caller's prefix first, then read(2). 0 at the end, -1 on error. */
static int icy_fill(icy_cookie *c) {
    if (c->in_pos < c->in_len) return 1;
    if (c->prefix_len) {
        memcpy(c->input, c->prefix, c->prefix_len);
        c->in_pos = 0; c->in_len = c->prefix_len; c->prefix_len = 0;
        return 1;
    }
    if (c->ended) return 0;
    ssize_t n = read(c->fd, c->input, c->input_size);
    if (n < 0) {
        if (errno != EINTR) snprintf(c->error, sizeof c->error, "read failed: %s", strerror(errno));
        return -1;
    }
    if (n == 0) { c->ended = 1; return 0; }
    c->in_pos = 0; c->in_len = (size_t)n;
    return 1;
}

static int icy_start(icy_cookie *c) {
    switch (c->kind) {
    case ICY_GZIP: return inflateInit2(&c->s.z, 15 + 16) == Z_OK;
    case ICY_ZSTD: c->s.zstd = ZSTD_createDStream(); return c->s.zstd && !ZSTD_isError(ZSTD_initDStream(c->s.zstd));
    case ICY_LZ4: return !LZ4F_isError(LZ4F_createDecompressionContext(&c->s.lz4, LZ4F_VERSION));
    case ICY_XZ: {
        lzma_stream init = LZMA_STREAM_INIT;
        c->s.xz = init;
        return lzma_stream_decoder(&c->s.xz, UINT64_MAX, LZMA_CONCATENATED) == LZMA_OK;
    }
    case ICY_BZIP2: return BZ2_bzDecompressInit(&c->s.bz, 0, 0) == BZ_OK;
    default: return 1;
    }
}

static void icy_stop(icy_cookie *c) {
    switch (c->kind) {
    case ICY_GZIP: inflateEnd(&c->s.z); break;
    case ICY_ZSTD: ZSTD_freeDStream(c->s.zstd); break;
    case ICY_LZ4: LZ4F_freeDecompressionContext(c->s.lz4); break;
    case ICY_XZ: lzma_end(&c->s.xz); break;
    case ICY_BZIP2: BZ2_bzDecompressEnd(&c->s.bz); break;
    default: break;
    }
}

/* One decompression step from the input into out[0..size): bytes produced, or -1 (error set). */
static ssize_t icy_step(icy_cookie *c, char *out, size_t size) {
    unsigned char *in = c->input + c->in_pos;
    size_t avail = c->in_len - c->in_pos;
    switch (c->kind) {
    case ICY_GZIP: {
        if (c->finished) { c->in_pos = c->in_len; return 0; }
        if (!c->in_unit && !(avail >= 2 ? in[0] == 0x1f && in[1] == 0x8b : in[0] == 0x1f)) {
            /* After a member: more members, or trailing bytes zlib's gzread ignores. */
            c->finished = 1; c->in_pos = c->in_len; return 0;
        }
        c->s.z.next_in = in; c->s.z.avail_in = (uInt)(avail > (1u << 30) ? (1u << 30) : avail);
        c->s.z.next_out = (Bytef *)out; c->s.z.avail_out = (uInt)(size > (1u << 30) ? (1u << 30) : size);
        c->in_unit = 1;
        int rc = inflate(&c->s.z, Z_NO_FLUSH);
        c->in_pos += (size_t)(c->s.z.next_in - in);
        if (rc == Z_STREAM_END) { c->in_unit = 0; inflateReset(&c->s.z); }
        else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            snprintf(c->error, sizeof c->error, "%s", c->s.z.msg ? c->s.z.msg : "invalid gzip data");
            return -1;
        }
        return (ssize_t)((char *)c->s.z.next_out - out);
    }
    case ICY_ZSTD: {
        ZSTD_inBuffer zin = { in, avail, 0 };
        ZSTD_outBuffer zout = { out, size, 0 };
        size_t r = ZSTD_decompressStream(c->s.zstd, &zout, &zin);
        c->in_pos += zin.pos;
        if (ZSTD_isError(r)) { snprintf(c->error, sizeof c->error, "%s", ZSTD_getErrorName(r)); return -1; }
        c->in_unit = r != 0;
        return (ssize_t)zout.pos;
    }
    case ICY_LZ4: {
        size_t out_size = size, in_size = avail;
        size_t r = LZ4F_decompress(c->s.lz4, out, &out_size, in, &in_size, NULL);
        c->in_pos += in_size;
        if (LZ4F_isError(r)) { snprintf(c->error, sizeof c->error, "%s", LZ4F_getErrorName(r)); return -1; }
        c->in_unit = r != 0;
        return (ssize_t)out_size;
    }
    case ICY_XZ: {
        c->s.xz.next_in = in; c->s.xz.avail_in = avail;
        c->s.xz.next_out = (uint8_t *)out; c->s.xz.avail_out = size;
        lzma_ret rc = lzma_code(&c->s.xz, avail == 0 ? LZMA_FINISH : LZMA_RUN);
        c->in_pos += (size_t)(c->s.xz.next_in - in);
        c->in_unit = 1;
        if (rc == LZMA_STREAM_END) c->in_unit = 0;
        else if (rc != LZMA_OK && rc != LZMA_BUF_ERROR) {
            snprintf(c->error, sizeof c->error, "xz error %d%s", (int)rc, rc == LZMA_DATA_ERROR ? " (corrupt data)" : "");
            return -1;
        }
        return (ssize_t)((char *)c->s.xz.next_out - out);
    }
    case ICY_BZIP2: {
        c->s.bz.next_in = (char *)in; c->s.bz.avail_in = (unsigned)(avail > (1u << 30) ? (1u << 30) : avail);
        c->s.bz.next_out = out; c->s.bz.avail_out = (unsigned)(size > (1u << 30) ? (1u << 30) : size);
        c->in_unit = 1;
        int rc = BZ2_bzDecompress(&c->s.bz);
        c->in_pos += (size_t)((unsigned char *)c->s.bz.next_in - in);
        ssize_t produced = (ssize_t)(c->s.bz.next_out - out);
        if (rc == BZ_STREAM_END) {
            /* Ready for the next stream of a concatenation (pbzip2 writes them). */
            c->in_unit = 0;
            BZ2_bzDecompressEnd(&c->s.bz);
            memset(&c->s.bz, 0, sizeof c->s.bz);
            if (BZ2_bzDecompressInit(&c->s.bz, 0, 0) != BZ_OK) { snprintf(c->error, sizeof c->error, "bzip2: out of memory"); return -1; }
        } else if (rc != BZ_OK) { snprintf(c->error, sizeof c->error, "bzip2 error %d (corrupt data)", rc); return -1; }
        return produced;
    }
    default: {
        size_t n = avail < size ? avail : size;
        memcpy(out, in, n);
        c->in_pos += n;
        return (ssize_t)n;
    }
    }
}

static ssize_t icy_read(void *cookie, char *buf, size_t size) {
    icy_cookie *c = (icy_cookie *)cookie;
    if (c->error[0]) { errno = EIO; return -1; }
    for (;;) {
        int more = icy_fill(c);
        if (more < 0) { if (c->error[0]) errno = EIO; return -1; }
        if (more == 0) {
            if (c->kind == ICY_XZ && c->in_unit) {
                /* xz reports a stream cut short only when told the input is finished. */
                ssize_t n = icy_step(c, buf, size);
                if (n != 0) return n;
            }
            if (c->in_unit && c->error[0] == 0) {
                if (c->kind == ICY_GZIP) snprintf(c->error, sizeof c->error, "unexpected end of file");
                else snprintf(c->error, sizeof c->error, "the %s stream is cut short", icy_kind_name(c->kind));
            }
            return 0;
        }
        ssize_t n = icy_step(c, buf, size);
        if (n != 0) { if (n < 0) errno = EIO; return n; }
    }
}

static int icy_close(void *cookie) {
    icy_cookie *c = (icy_cookie *)cookie;
    icy_stop(c);
    close(c->fd);
    free(c->input);
    free(c->stdio_buffer);
    free(c);
    return 0;
}

FILE *icy_decompress_fdopen(int fd, int kind, const unsigned char *prefix, size_t prefix_len, void **cookie) {
    if (prefix_len > sizeof ((icy_cookie *)0)->prefix) { errno = EINVAL; return NULL; }
    icy_cookie *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->fd = fd;
    c->kind = kind;
    c->input_size = ICY_INPUT_BUFFER;
    c->input = malloc(c->input_size);
    memcpy(c->prefix, prefix, prefix_len);
    c->prefix_len = prefix_len;
    if (!c->input || !icy_start(c)) { free(c->input); free(c); errno = ENOMEM; return NULL; }
    cookie_io_functions_t io = { .read = icy_read, .write = NULL, .seek = NULL, .close = icy_close };
    FILE *f = fopencookie(c, "rb", io);
    if (!f) { icy_stop(c); free(c->input); free(c); return NULL; }
    /* A 256 KiB FILE buffer: glibc ignores setvbuf's size unless it is given the buffer too. */
    char *buffer = malloc(ICY_STDIO_BUFFER);
    if (buffer && setvbuf(f, buffer, _IOFBF, ICY_STDIO_BUFFER) != 0) { free(buffer); buffer = NULL; }
    c->stdio_buffer = buffer;
    if (cookie) *cookie = c;
    return f;
}

const char *icy_decompress_error(void *cookie) {
    icy_cookie *c = (icy_cookie *)cookie;
    if (!c) return NULL;
    return c->error[0] ? c->error : NULL;
}

#include <sched.h>
#include <unistd.h>

int icy_name_this_thread(const char *name) {
    char cut[16];
    strncpy(cut, name, 15);
    cut[15] = 0;
    return pthread_setname_np(pthread_self(), cut);
}

int icy_available_cpus(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}
