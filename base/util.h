/*
 * util.h - small helpers shared by every layer: the error record (err.h),
 * gzip compression of response bodies, clocks, hashing.
 */
#ifndef XPV_UTIL_H
#define XPV_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* gzip-compress `len` bytes at `level` (1..9) into a new malloc'ed buffer
 * whose length is stored in *out_len.  Never fails (OOM aborts). */
unsigned char *xpv_gzip(const void *data, size_t len, int level, size_t *out_len);

/* Monotonic clock in milliseconds. */
int64_t xpv_now_ms(void);

/* 64-bit FNV-1a hash of `n` bytes. */
uint64_t xpv_hash64(const void *p, size_t n);

#endif
