/*
 * util.h - small helpers shared by the server layer: the error record every
 * server function fills, gzip compression of response bodies, clocks.
 */
#ifndef XPV_UTIL_H
#define XPV_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* An error for the user: HTTP-like status, message, and when the error is
 * about a profile file, the file (relative to the logdir) and the byte
 * offset where decoding failed (-1 when unknown). */
typedef struct xpv_err {
    int status;          /* 400, 404, 405, 413, 422, 500 */
    char msg[384];
    char file[512];      /* "" when not about a file */
    int64_t offset;      /* -1 when unknown */
} xpv_err;

/* Reset `e` to "no error". */
void xpv_err_clear(xpv_err *e);
/* Fill status and a printf-style message; returns -1 for `return
 * xpv_err_set(...)` convenience.  file/offset are left unchanged. */
int xpv_err_set(xpv_err *e, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* gzip-compress `len` bytes at `level` (1..9) into a new malloc'ed buffer
 * whose length is stored in *out_len.  Never fails (OOM aborts). */
unsigned char *xpv_gzip(const void *data, size_t len, int level, size_t *out_len);

/* Monotonic clock in milliseconds. */
int64_t xpv_now_ms(void);

/* 64-bit FNV-1a hash of `n` bytes. */
uint64_t xpv_hash64(const void *p, size_t n);

#endif
