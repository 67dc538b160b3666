/*
 * gz.c - every gzip step but the streaming reader of Chrome traces
 * (ingest/chrome_trace.c, which inflates from a file descriptor chunk by
 * chunk): compressing responses, inflating whole files within a cap, and
 * inflating small gzip-compressed strings of the model.
 */
#include "gz.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "arena.h"

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

void *xpv_gunzip(const void *data, size_t len, uint64_t cap, size_t *out_len,
                 xpv_err *err) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, MAX_WBITS + 32) != Z_OK) {
        xpv_err_set(err, 500, "inflateInit2 failed");
        return NULL;
    }
    size_t ocap = len < (64u << 20) ? len * 4 + 4096 : len * 2;
    if (ocap > cap + 1) ocap = (size_t)cap + 1;
    unsigned char *out = xpv_xmalloc(ocap + 1);   /* + the NUL after the data */
    const unsigned char *in = data;
    size_t left = len;
    int rc = Z_OK;
    z.next_out = out;
    z.avail_out = (uInt)(ocap > UINT32_MAX ? UINT32_MAX : ocap);
    for (;;) {
        if (z.avail_in == 0 && left) {
            size_t chunk = left > (1u << 30) ? (1u << 30) : left;
            z.next_in = (Bytef *)(uintptr_t)in;
            z.avail_in = (uInt)chunk;
            in += chunk;
            left -= chunk;
        }
        if (z.avail_out == 0) {
            size_t used = (size_t)(z.next_out - out);
            if (used > cap) break;  /* over the cap: reported below */
            size_t ncap = ocap * 2;
            if (ncap > cap + 1) ncap = (size_t)cap + 1;
            out = xpv_xrealloc(out, ncap + 1);
            ocap = ncap;
            z.next_out = out + used;
            z.avail_out = (uInt)((ocap - used) > UINT32_MAX ? UINT32_MAX : ocap - used);
        }
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc == Z_STREAM_END) {
            /* Concatenated gzip members: keep going if more input follows. */
            if (z.avail_in == 0 && left == 0) break;
            if (inflateReset(&z) != Z_OK) break;
            continue;
        }
        if (rc == Z_BUF_ERROR && z.avail_in == 0 && left == 0) break;
        if (rc != Z_OK && rc != Z_BUF_ERROR) break;
    }
    /* total_out restarts with every member: measure with the pointer. */
    size_t total = (size_t)(z.next_out - out);
    uint64_t consumed = (uint64_t)(len - left - z.avail_in);
    inflateEnd(&z);
    if (total > cap) {
        free(out);
        err->offset = (int64_t)consumed;
        xpv_err_set(err, 413, "gzip data inflates beyond the %llu-byte limit",
                    (unsigned long long)cap);
        return NULL;
    }
    if (rc != Z_STREAM_END) {
        free(out);
        err->offset = (int64_t)consumed;
        if (rc == Z_BUF_ERROR || rc == Z_OK)
            xpv_err_set(err, 422, "incomplete: the gzip stream ends early (after %llu "
                        "compressed bytes; still being written?)",
                        (unsigned long long)consumed);
        else
            xpv_err_set(err, 422, "corrupt gzip stream at compressed byte %llu: %s",
                        (unsigned long long)consumed, z.msg ? z.msg : "data error");
        return NULL;
    }
    out[total] = 0;
    *out_len = total;
    return out;
}

long xpv_gunzip_into(const void *data, size_t len, void *out, size_t cap) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (len > UINT32_MAX || cap > UINT32_MAX || inflateInit2(&z, 15 + 32) != Z_OK) return -1;
    z.next_in = (Bytef *)(uintptr_t)data;
    z.avail_in = (uInt)len;
    z.next_out = (Bytef *)out;
    z.avail_out = (uInt)cap;
    int rc = inflate(&z, Z_FINISH);
    long n = (long)z.total_out;
    inflateEnd(&z);
    return rc == Z_STREAM_END ? n : -1;
}
