/*
 * collections.h - small containers private to the analysis layer: a
 * growable array of fixed-size records, an int64 -> uint32 hash map and an
 * LSD radix sort of uint64 keys.  Header-only (static functions).
 */
#ifndef XPV_ANALYSIS_COLLECTIONS_H
#define XPV_ANALYSIS_COLLECTIONS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

/* Growable array of fixed-size records. */
typedef struct vec {
    void *p;
    size_t n, cap, sz;
} vec;

static inline void *vec_push(vec *v) {
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 256;
        v->p = xpv_xrealloc(v->p, v->cap * v->sz);
    }
    return (char *)v->p + v->sz * v->n++;
}

/* int64 -> uint32 open-addressing map (keys are any int64). */
typedef struct i64map {
    int64_t *keys;
    uint32_t *vals;
    uint8_t *used;
    size_t cap, n;
} i64map;

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static inline void i64map_free(i64map *m) {
    free(m->keys);
    free(m->vals);
    free(m->used);
    memset(m, 0, sizeof *m);
}

static inline void i64map_put(i64map *m, int64_t k, uint32_t v);

static inline void i64map_grow(i64map *m) {
    i64map old = *m;
    m->cap = old.cap ? old.cap * 2 : 64;
    m->n = 0;
    m->keys = xpv_xmalloc(m->cap * sizeof *m->keys);
    m->vals = xpv_xmalloc(m->cap * sizeof *m->vals);
    m->used = xpv_xcalloc(m->cap, 1);
    for (size_t i = 0; i < old.cap; i++)
        if (old.used[i]) i64map_put(m, old.keys[i], old.vals[i]);
    i64map_free(&old);
}

static inline void i64map_put(i64map *m, int64_t k, uint32_t v) {
    if ((m->n + 1) * 2 > m->cap) i64map_grow(m);
    size_t mask = m->cap - 1, i = mix64((uint64_t)k) & mask;
    while (m->used[i]) {
        if (m->keys[i] == k) {
            m->vals[i] = v;
            return;
        }
        i = (i + 1) & mask;
    }
    m->used[i] = 1;
    m->keys[i] = k;
    m->vals[i] = v;
    m->n++;
}

/* Returns 1 and fills *v when present. */
static inline int i64map_get(const i64map *m, int64_t k, uint32_t *v) {
    if (!m->cap) return 0;
    size_t mask = m->cap - 1, i = mix64((uint64_t)k) & mask;
    while (m->used[i]) {
        if (m->keys[i] == k) {
            *v = m->vals[i];
            return 1;
        }
        i = (i + 1) & mask;
    }
    return 0;
}

/* LSD radix sort of uint64 keys (11-bit digits up to the highest set bit,
 * constant digits skipped). */
static inline void radix_sort_u64(uint64_t *a, uint64_t *tmp, size_t n) {
    if (n < 64) {
        for (size_t i = 1; i < n; i++) {
            uint64_t x = a[i];
            size_t j = i;
            while (j > 0 && a[j - 1] > x) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = x;
        }
        return;
    }
    uint64_t maxk = 0;
    for (size_t i = 0; i < n; i++)
        if (a[i] > maxk) maxk = a[i];
    uint64_t *src = a, *dst = tmp;
    size_t cnt[2048];
    for (int shift = 0; shift < 64 && (maxk >> shift) != 0; shift += 11) {
        memset(cnt, 0, sizeof cnt);
        for (size_t i = 0; i < n; i++) cnt[(src[i] >> shift) & 2047]++;
        if (cnt[(src[0] >> shift) & 2047] == n) continue;
        size_t pos = 0;
        for (int d = 0; d < 2048; d++) {
            size_t c = cnt[d];
            cnt[d] = pos;
            pos += c;
        }
        for (size_t i = 0; i < n; i++) dst[cnt[(src[i] >> shift) & 2047]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a) memcpy(a, src, n * sizeof *a);
}

#endif /* XPV_ANALYSIS_COLLECTIONS_H */
