/*
 * gz.c - every gzip step but the streaming reader of Chrome traces
 * (ingest/chrome_trace.c, which inflates from a file descriptor chunk by
 * chunk): compressing responses, inflating whole files within a cap, and
 * inflating small gzip-compressed strings of the model.
 *
 * Inflating a file is bounded twice: by a byte cap (the caller passes the
 * smaller of --max_file_size and what the memory budget admits), and by
 * the compression ratio: past XPV_GZ_RATIO_FLOOR inflated bytes, more than
 * XPV_GZ_MAX_RATIO:1 is refused at once (a 6 MB gzip of 6 GB of zeros is
 * refused after 64 MiB, not after the cap).  Output is produced in 8 MiB
 * steps so both checks run often, and allocation failures fail the file
 * (503), never the process.
 */
#include "gz.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "arena.h"

/* Once zlib has taken all its input, hand it the next piece of the `*left`
 * bytes at `*in`: avail_in is 32-bit, so at most 1 GiB at a time. */
static void feed_input(z_stream *z, const unsigned char **in, size_t *left) {
    if (z->avail_in != 0 || *left == 0) return;
    size_t chunk = *left > (1u << 30) ? (1u << 30) : *left;
    z->next_in = (Bytef *)(uintptr_t)*in;
    z->avail_in = (uInt)chunk;
    *in += chunk;
    *left -= chunk;
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
        feed_input(&z, &in, &left);
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

/* Room for the next inflate() call: at most XPV_GZ_STEP bytes, so the
 * ratio and cap checks run every few MiB whatever the buffer's size. */
#define XPV_GZ_STEP (8u << 20)

static uInt out_room(size_t cap, size_t used) {
    size_t room = cap - used;
    return (uInt)(room > XPV_GZ_STEP ? XPV_GZ_STEP : room);
}

void *xpv_gunzip_limited(const void *data, size_t len, uint64_t cap, const char *cap_name,
                         size_t *out_len, xpv_err *err) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (!cap_name) cap_name = "limit";
    if (inflateInit2(&z, MAX_WBITS + 32) != Z_OK) {
        xpv_err_set(err, XPV_E_INTERNAL, "inflateInit2 failed");
        return NULL;
    }
    size_t ocap = len < (64u << 20) ? len * 4 + 4096 : len * 2;
    if (ocap > cap + 1) ocap = (size_t)cap + 1;
    /* + the NUL after the data.  Allocation failures fail this file only:
     * the buffer is sized by the input, so it must never abort the server. */
    unsigned char *out = malloc(ocap + 1);
    if (!out) {
        inflateEnd(&z);
        xpv_err_set(err, XPV_E_BUSY, "out of memory: cannot allocate %zu bytes to inflate; "
                    "retry later", ocap + 1);
        return NULL;
    }
    const unsigned char *in = data;
    size_t left = len;
    int rc = Z_OK, bomb = 0;
    z.next_out = out;
    z.avail_out = out_room(ocap, 0);
    for (;;) {
        feed_input(&z, &in, &left);
        size_t used = (size_t)(z.next_out - out);
        /* A ratio no real profile has: refuse now instead of inflating
         * (and holding) gigabytes of one repeated byte pattern. */
        uint64_t consumed = (uint64_t)(len - left - z.avail_in);
        if (used > XPV_GZ_RATIO_FLOOR && used / XPV_GZ_MAX_RATIO > consumed) {
            bomb = 1;
            break;
        }
        if (z.avail_out == 0) {
            if (used > cap) break;  /* over the cap: reported below */
            if (used == ocap) {
                size_t ncap = ocap * 2;
                if (ncap > cap + 1) ncap = (size_t)cap + 1;
                unsigned char *grown = realloc(out, ncap + 1);
                if (!grown) {
                    free(out);
                    inflateEnd(&z);
                    xpv_err_set(err, XPV_E_BUSY, "out of memory: cannot grow the inflate buffer "
                                "to %zu bytes; retry later", ncap + 1);
                    return NULL;
                }
                out = grown;
                ocap = ncap;
                z.next_out = out + used;
            }
            z.avail_out = out_room(ocap, used);
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
    if (bomb) {
        free(out);
        err->offset = (int64_t)consumed;
        xpv_err_set(err, XPV_E_TOO_LARGE, "gzip bomb: %llu compressed bytes inflate to over %llu MiB "
                    "(more than %u:1; no real profile compresses that well)",
                    (unsigned long long)consumed, (unsigned long long)(total >> 20),
                    (unsigned)XPV_GZ_MAX_RATIO);
        return NULL;
    }
    if (total > cap) {
        free(out);
        err->offset = (int64_t)consumed;
        xpv_err_set(err, XPV_E_TOO_LARGE, "gzip data inflates beyond the %llu-byte %s",
                    (unsigned long long)cap, cap_name);
        return NULL;
    }
    if (rc != Z_STREAM_END) {
        free(out);
        err->offset = (int64_t)consumed;
        if (rc == Z_BUF_ERROR || rc == Z_OK)
            xpv_err_set(err, XPV_E_BAD_PROFILE, "incomplete: the gzip stream ends early (after %llu "
                        "compressed bytes; still being written?)",
                        (unsigned long long)consumed);
        else
            xpv_err_set(err, XPV_E_BAD_PROFILE, "corrupt gzip stream at compressed byte %llu: %s",
                        (unsigned long long)consumed, z.msg ? z.msg : "data error");
        return NULL;
    }
    out[total] = 0;
    *out_len = total;
    return out;
}

void *xpv_gunzip(const void *data, size_t len, uint64_t cap, size_t *out_len,
                 xpv_err *err) {
    return xpv_gunzip_limited(data, len, cap, NULL, out_len, err);
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
