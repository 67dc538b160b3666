/*
 * util.h - small helpers shared by every layer: the error record (err.h),
 * gzip compression of response bodies, clocks, hashing.
 */
#ifndef XPV_UTIL_H
#define XPV_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "err.h"
#include "gz.h"

/* Strict parsing of request parameters: plain decimal digits only (no sign,
 * no spaces, no hex, no exponent), at most `max`.  Returns 1 with *out set,
 * or 0 (empty, malformed, out of range). */
int xpv_parse_u64_strict(const char *s, uint64_t max, uint64_t *out);
/* "-?digits[.digits]" (milliseconds and the like) within +-`max_abs`.
 * Returns 1 with *out set, or 0. */
int xpv_parse_decimal_strict(const char *s, double max_abs, double *out);

/* Monotonic clock in milliseconds. */
int64_t xpv_now_ms(void);
/* The CLOCK_REALTIME time `ms` (>= 0) milliseconds from now: the deadline
 * pthread_cond_timedwait takes. */
struct timespec xpv_deadline_in_ms(int64_t ms);

/* 64-bit FNV-1a hash of `n` bytes. */
uint64_t xpv_hash64(const void *p, size_t n);

/* A random value drawn once per process (getrandom, at start-up): hash
 * tables keyed by values from a profile (ids, names) mix it in, so a file
 * cannot choose keys that collide in them (issue 26: ids chosen to collide
 * under mix64 made lookups linear; 13.5 MB took ~11 minutes).  Never 0. */
extern uint64_t xpv_hash_seed;
/* xpv_hash64 started from a state the seed changes, mixed with it again. */
uint64_t xpv_hash64_seeded(const void *p, size_t n);

#endif
