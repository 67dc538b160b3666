/*
 * checked.h - saturating integer arithmetic.
 *
 * Values read from files (timestamps, durations, byte counts) can be anything
 * a hostile or broken writer put there; sums and unit conversions of them
 * must clamp to the type's range instead of wrapping (signed overflow is
 * undefined behaviour, and a wrapped duration shows up as a negative one).
 * Each helper returns the saturated result and, when `clamped` is non-NULL,
 * sets *clamped to 1 if it had to clamp (it never clears it, so one flag can
 * collect a whole pass and become a per-file warning).
 */
#ifndef XPV_CHECKED_H
#define XPV_CHECKED_H

#include <stdint.h>

static inline int64_t xpv_add_i64(int64_t a, int64_t b, int *clamped) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) {
        if (clamped) *clamped = 1;
        return b > 0 ? INT64_MAX : INT64_MIN;
    }
    return r;
}

static inline int64_t xpv_sub_i64(int64_t a, int64_t b, int *clamped) {
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) {
        if (clamped) *clamped = 1;
        return b < 0 ? INT64_MAX : INT64_MIN;
    }
    return r;
}

static inline int64_t xpv_mul_i64(int64_t a, int64_t b, int *clamped) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) {
        if (clamped) *clamped = 1;
        return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
    }
    return r;
}

static inline uint64_t xpv_add_u64(uint64_t a, uint64_t b, int *clamped) {
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r)) {
        if (clamped) *clamped = 1;
        return UINT64_MAX;
    }
    return r;
}

static inline uint64_t xpv_mul_u64(uint64_t a, uint64_t b, int *clamped) {
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r)) {
        if (clamped) *clamped = 1;
        return UINT64_MAX;
    }
    return r;
}

/* a - b for unsigned counters that must not go below zero. */
static inline uint64_t xpv_sub_u64_floor(uint64_t a, uint64_t b, int *clamped) {
    if (b > a) {
        if (clamped) *clamped = 1;
        return 0;
    }
    return a - b;
}

/* Unsigned nanoseconds -> signed picoseconds, clamped to INT64_MAX. */
static inline int64_t xpv_ns_to_ps_u64(uint64_t ns, int *clamped) {
    if (ns > (uint64_t)INT64_MAX / 1000) {
        if (clamped) *clamped = 1;
        return INT64_MAX;
    }
    return (int64_t)(ns * 1000);
}

#endif
