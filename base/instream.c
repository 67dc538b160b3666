/*
 * instream.c - bytes from memory or a file descriptor, plain or gunzipped
 * as they are read (see instream.h).
 */
#include "instream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "arena.h"
#include "gz.h"

#define SRC_CHUNK (1024 * 1024)   /* fd reads of compressed input */

/* The raw bytes come from memory (mem != NULL) or from fd, read into
 * ibuf; gzip input is inflated into the tokenizer's window.  Plain fd
 * input is read straight into the window (no copy), after whatever the
 * magic-number probe left in ibuf. */
struct xpv_instream {
    const unsigned char *mem;
    size_t mem_len, mem_pos;
    int fd;
    unsigned char *ibuf;
    size_t ipos, ilen;            /* unread raw bytes: ibuf[ipos..ilen) */
    uint64_t raw;                 /* raw bytes taken from mem / fd */
    int raw_eof, raw_err, raw_errno;
    int gz, zinit, zend, zfail;
    int bomb;                     /* stopped: a ratio no real input has */
    uint64_t zout;                /* bytes inflated so far */
    int early_err;                /* the fd probe failed */
    z_stream z;
};

/* read() from the fd into `buf` (EINTR retried): bytes read, 0 at the end
 * of the file (remembered), -1 on error (errno kept). */
static long src_fd_read(xpv_instream *s, unsigned char *buf, size_t cap) {
    if (s->raw_eof) return 0;
    for (;;) {
        ssize_t r = read(s->fd, buf, cap);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            s->raw_err = 1;
            s->raw_errno = errno;
            return -1;
        }
        if (r == 0) s->raw_eof = 1;
        s->raw += (uint64_t)r;
        return (long)r;
    }
}

/* The next raw chunk (at most `cap` bytes; from ibuf first).  Returns its
 * length, 0 at end of input, -1 on a read error. */
static long src_raw(xpv_instream *s, const unsigned char **p, size_t cap) {
    if (s->ipos < s->ilen) {
        size_t n = s->ilen - s->ipos < cap ? s->ilen - s->ipos : cap;
        *p = s->ibuf + s->ipos;
        s->ipos += n;
        return (long)n;
    }
    if (s->mem) {
        size_t n = s->mem_len - s->mem_pos < cap ? s->mem_len - s->mem_pos : cap;
        *p = s->mem + s->mem_pos;
        s->mem_pos += n;
        s->raw += n;
        return (long)n;
    }
    long r = src_fd_read(s, s->ibuf, cap < SRC_CHUNK ? cap : SRC_CHUNK);
    *p = s->ibuf;
    s->ipos = s->ilen = 0;
    return r;
}

/* Plain input: copy (memory, probe leftovers) or read into the window. */
static long src_plain(xpv_instream *s, unsigned char *buf, size_t cap) {
    if (s->mem || s->ipos < s->ilen) {
        const unsigned char *p;
        long n = src_raw(s, &p, cap);
        if (n > 0) memcpy(buf, p, (size_t)n);
        return n;
    }
    return src_fd_read(s, buf, cap);
}

/* Whether another gzip member follows the one that just ended. */
static int src_more_gzip(xpv_instream *s) {
    if (s->z.avail_in == 0) {
        const unsigned char *p;
        long n = src_raw(s, &p, SRC_CHUNK);
        if (n <= 0) return 0;
        s->z.next_in = (unsigned char *)(uintptr_t)p;
        s->z.avail_in = (uInt)n;
    }
    /* A member header split after its first byte is too short to be one. */
    return s->z.avail_in >= 2 && s->z.next_in[0] == 0x1f && s->z.next_in[1] == 0x8b;
}

long xpv_instream_read(void *vctx, void *vbuf, size_t cap) {
    xpv_instream *s = vctx;
    unsigned char *buf = vbuf;
    if (!s->gz) return src_plain(s, buf, cap);
    if (s->zend) return 0;
    if (!s->zinit) {
        memset(&s->z, 0, sizeof s->z);
        if (inflateInit2(&s->z, 15 + 32) != Z_OK) return s->zfail = 1, -1;
        s->zinit = 1;
    }
    if (cap > UINT32_MAX) cap = UINT32_MAX;
    s->z.next_out = buf;
    s->z.avail_out = (uInt)cap;
    while (s->z.avail_out == cap) {
        if (s->z.avail_in == 0) {
            const unsigned char *p;
            long n = src_raw(s, &p, s->mem ? (1u << 30) : SRC_CHUNK);
            if (n < 0) return -1;
            if (n == 0) {           /* the stream ends before its trailer */
                s->zend = 1;
                break;
            }
            s->z.next_in = (unsigned char *)(uintptr_t)p;
            s->z.avail_in = (uInt)n;
        }
        int zr = inflate(&s->z, Z_NO_FLUSH);
        if (zr == Z_STREAM_END) {
            /* Concatenated gzip members: continue with the next one. */
            if (src_more_gzip(s)) {
                if (inflateReset(&s->z) != Z_OK) return s->zfail = 1, -1;
                continue;
            }
            if (s->raw_err) return -1;
            s->zend = 1;
            break;
        }
        if (zr != Z_OK && zr != Z_BUF_ERROR) return s->zfail = 1, -1;
    }
    /* The gzip bomb rule of gz.c: past the floor, more than
     * XPV_GZ_MAX_RATIO:1 stops the stream (413, see xpv_instream_error). */
    s->zout += cap - s->z.avail_out;
    if (s->zout > XPV_GZ_RATIO_FLOOR && s->zout / XPV_GZ_MAX_RATIO > s->raw - s->z.avail_in)
        return s->bomb = 1, -1;
    return (long)(cap - s->z.avail_out);
}

xpv_instream *xpv_instream_mem(const void *data, size_t len) {
    xpv_instream *s = xpv_xcalloc(1, sizeof *s);
    s->mem = data ? data : (const void *)"";
    s->mem_len = data ? len : 0;
    s->fd = -1;
    s->gz = len >= 2 && s->mem[0] == 0x1f && s->mem[1] == 0x8b;
    return s;
}

xpv_instream *xpv_instream_fd(int fd) {
    xpv_instream *s = xpv_xcalloc(1, sizeof *s);
    s->fd = fd;
    s->ibuf = xpv_xmalloc(SRC_CHUNK);
    /* Probe the magic: read until 2 bytes are in (or the input ends). */
    while (s->ilen < 2 && !s->raw_eof && !s->raw_err) {
        ssize_t r = read(fd, s->ibuf + s->ilen, SRC_CHUNK - s->ilen);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            s->raw_err = 1;
            s->raw_errno = errno;
            s->early_err = 1;
        } else if (r == 0) {
            s->raw_eof = 1;
        } else {
            s->raw += (uint64_t)r;
            s->ilen += (size_t)r;
        }
    }
    s->gz = s->ilen >= 2 && s->ibuf[0] == 0x1f && s->ibuf[1] == 0x8b;
    return s;
}

void xpv_instream_free(xpv_instream *s) {
    if (!s) return;
    if (s->zinit) inflateEnd(&s->z);
    free(s->ibuf);
    free(s);
}

int xpv_instream_is_gzip(const xpv_instream *s) { return s->gz; }
uint64_t xpv_instream_raw_bytes(const xpv_instream *s) { return s->raw; }
int xpv_instream_failed_early(const xpv_instream *s) { return s->early_err; }

int xpv_instream_error(const xpv_instream *s, char *msg, size_t n) {
    if (s->bomb) {
        snprintf(msg, n, "gzip bomb: %llu compressed bytes inflate to over %llu MiB (more "
                 "than %u:1; no real profile compresses that well)",
                 (unsigned long long)(s->raw - s->z.avail_in),
                 (unsigned long long)(s->zout >> 20), (unsigned)XPV_GZ_MAX_RATIO);
        return 413;
    }
    if (s->early_err)
        snprintf(msg, n, "read error: %s", strerror(s->raw_errno));
    else if (s->raw_err)
        snprintf(msg, n, "read error after %llu bytes: %s", (unsigned long long)s->raw,
                 strerror(s->raw_errno));
    else if (s->gz && s->zfail)
        snprintf(msg, n, "corrupt gzip stream (at compressed byte %llu)",
                 (unsigned long long)(s->raw - (s->zinit ? s->z.avail_in : 0)));
    else
        return 0;
    return 500;
}
