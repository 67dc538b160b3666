/*
 * srv_fixture.h - tiny XSpace writer and file helpers for the server-layer
 * tests (discovery, loader, routes).  Header-only: each test includes it.
 *
 * The XSpace is encoded by hand (field numbers from proto/xplane.proto) so
 * the tests depend on nothing but the decoder under test.
 */
#ifndef XPV_SRV_FIXTURE_H
#define XPV_SRV_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "buf.h"

static inline void fx_varint(xpv_buf *b, uint64_t v) {
    while (v >= 0x80) {
        xpv_buf_putc(b, (char)(v | 0x80));
        v >>= 7;
    }
    xpv_buf_putc(b, (char)v);
}

static inline void fx_int(xpv_buf *b, int field, int64_t v) {
    fx_varint(b, (uint64_t)field << 3);
    fx_varint(b, (uint64_t)v);
}

static inline void fx_bytes(xpv_buf *b, int field, const void *p, size_t n) {
    fx_varint(b, ((uint64_t)field << 3) | 2);
    fx_varint(b, n);
    xpv_buf_add(b, p, n);
}

static inline void fx_str(xpv_buf *b, int field, const char *s) {
    fx_bytes(b, field, s, strlen(s));
}

/* An XSpace with one plane per name in `planes` (NULL-terminated), each
 * with one line of `nevents` events of metadata "op", and one hostname. */
static inline void fx_xspace(xpv_buf *out, const char *const *planes, int nevents,
                             const char *hostname) {
    for (int p = 0; planes[p]; p++) {
        xpv_buf plane, line, ev, tmp, md;
        xpv_buf_init(&plane);
        xpv_buf_init(&line);
        xpv_buf_init(&ev);
        xpv_buf_init(&tmp);
        xpv_buf_init(&md);
        fx_int(&plane, 1, p + 1);
        fx_str(&plane, 2, planes[p]);
        fx_int(&line, 1, 1);
        fx_str(&line, 2, "line");
        fx_int(&line, 3, 1000);
        for (int i = 0; i < nevents; i++) {
            xpv_buf_reset(&ev);
            fx_int(&ev, 1, 1);
            fx_int(&ev, 2, (int64_t)i * 1000);
            fx_int(&ev, 3, 500);
            fx_bytes(&line, 4, ev.data, ev.len);
        }
        fx_bytes(&plane, 3, line.data, line.len);
        /* event_metadata map entry {1: XEventMetadata{id 1, name "op"}} */
        fx_int(&md, 1, 1);
        fx_str(&md, 2, "op");
        fx_int(&tmp, 1, 1);
        fx_bytes(&tmp, 2, md.data, md.len);
        fx_bytes(&plane, 4, tmp.data, tmp.len);
        fx_bytes(out, 1, plane.data, plane.len);
        xpv_buf_free(&plane);
        xpv_buf_free(&line);
        xpv_buf_free(&ev);
        xpv_buf_free(&tmp);
        xpv_buf_free(&md);
    }
    if (hostname) fx_str(out, 4, hostname);
}

static inline int fx_write(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = n ? fwrite(p, 1, n, f) : 0;
    return fclose(f) == 0 && w == n ? 0 : -1;
}

/* mkdir -p */
static inline void fx_mkdirs(const char *path) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
    mkdir(tmp, 0755);
}

/* Write `<dir>/<name>` holding a small XSpace with the given planes. */
static inline void fx_host_file(const char *dir, const char *name,
                                const char *const *planes, int nevents) {
    char path[8300];
    xpv_buf b;
    xpv_buf_init(&b);
    fx_mkdirs(dir);
    fx_xspace(&b, planes, nevents, name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    fx_write(path, b.data, b.len);
    xpv_buf_free(&b);
}

/* gzip `n` bytes (level 6) into a malloc'ed buffer. */
static inline unsigned char *fx_gzip(const void *p, size_t n, size_t *out_len) {
    z_stream z;
    memset(&z, 0, sizeof z);
    deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    size_t cap = deflateBound(&z, (uLong)n) + 64;
    unsigned char *out = malloc(cap);
    z.next_in = (Bytef *)(uintptr_t)p;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    deflate(&z, Z_FINISH);
    *out_len = z.total_out;
    deflateEnd(&z);
    return out;
}

#endif
