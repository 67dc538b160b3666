/*
 * util.c - see util.h.
 */
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "arena.h"

void xpv_err_clear(xpv_err *e) {
    e->status = 0;
    e->msg[0] = '\0';
    e->file[0] = '\0';
    e->offset = -1;
}

int xpv_err_set(xpv_err *e, int status, const char *fmt, ...) {
    va_list ap;
    e->status = status;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

unsigned char *xpv_gzip(const void *data, size_t len, int level, size_t *out_len) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        fprintf(stderr, "xpview: deflateInit2 failed\n");
        abort();
    }
    size_t cap = deflateBound(&z, (uLong)len) + 64;
    unsigned char *out = xpv_xmalloc(cap);
    const unsigned char *in = data;
    size_t left = len;
    z.next_out = out;
    z.avail_out = (uInt)(cap > UINT32_MAX ? UINT32_MAX : cap);
    for (;;) {
        if (z.avail_in == 0 && left) {
            /* avail_in is 32-bit: feed the input in chunks. */
            size_t chunk = left > (1u << 30) ? (1u << 30) : left;
            z.next_in = (Bytef *)(uintptr_t)in;
            z.avail_in = (uInt)chunk;
            in += chunk;
            left -= chunk;
        }
        if (z.avail_out == 0) {
            size_t used = z.total_out;
            cap *= 2;
            out = xpv_xrealloc(out, cap);
            z.next_out = out + used;
            z.avail_out = (uInt)((cap - used) > UINT32_MAX ? UINT32_MAX : cap - used);
        }
        int rc = deflate(&z, left ? Z_NO_FLUSH : Z_FINISH);
        if (rc == Z_STREAM_END) break;
        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            fprintf(stderr, "xpview: deflate failed\n");
            abort();
        }
    }
    *out_len = z.total_out;
    deflateEnd(&z);
    return out;
}

int64_t xpv_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t xpv_hash64(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

int xpv_parse_u64_strict(const char *s, uint64_t max, uint64_t *out) {
    if (!s || !*s) return 0;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return 0;
        unsigned d = (unsigned)(*p - '0');
        if (v > (max - d) / 10) return 0;   /* v * 10 + d > max */
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

int xpv_parse_decimal_strict(const char *s, double max_abs, double *out) {
    if (!s) return 0;
    const char *p = s;
    if (*p == '-') p++;
    size_t ndig = 0, nfrac = 0;
    while (*p >= '0' && *p <= '9') p++, ndig++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') p++, nfrac++;
        if (!nfrac) return 0;
    }
    if (!ndig || *p || ndig > 20) return 0;
    double v = strtod(s, NULL);
    if (!(v <= max_abs && v >= -max_abs)) return 0;
    *out = v;
    return 1;
}
