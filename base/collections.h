/*
 * collections.h - the containers every layer uses: a growable array of
 * fixed-size records, the hash maps (int64 -> uint32 and string -> uint32,
 * open addressing, linear probing, power-of-two capacity), the two hash
 * functions (mix64 for integers, FNV-1a xpv_hash64 for bytes), an LSD
 * radix sort of uint64 keys and the largest-first sort of (key, position)
 * pairs.  Header-only (static inline functions).
 *
 * Ownership: a map or vec is a struct the caller owns (zero-initialised =
 * empty); its arrays are malloc'd and released by *_free().  strmap copies
 * keys into the arena the caller passes, which must outlive the map.
 */
#ifndef XPV_COLLECTIONS_H
#define XPV_COLLECTIONS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "util.h"

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

/* mix64 of x and the process's hash seed (util.h): for tables whose keys
 * come from files. */
static inline uint64_t mix64s(uint64_t x) { return mix64(x ^ xpv_hash_seed); }

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
    size_t mask = m->cap - 1, i = mix64s((uint64_t)k) & mask;
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
    size_t mask = m->cap - 1, i = mix64s((uint64_t)k) & mask;
    while (m->used[i]) {
        if (m->keys[i] == k) {
            *v = m->vals[i];
            return 1;
        }
        i = (i + 1) & mask;
    }
    return 0;
}

/* Value slot of key k, created (value 0) when absent. */
static inline uint32_t *i64map_slot(i64map *m, int64_t k) {
    if ((m->n + 1) * 2 > m->cap) i64map_grow(m);
    size_t mask = m->cap - 1, i = mix64s((uint64_t)k) & mask;
    while (m->used[i]) {
        if (m->keys[i] == k) return &m->vals[i];
        i = (i + 1) & mask;
    }
    m->used[i] = 1;
    m->keys[i] = k;
    m->vals[i] = 0;
    m->n++;
    return &m->vals[i];
}

/* Value of k, or 0 when absent (for maps whose values are never 0). */
static inline uint32_t i64map_at(const i64map *m, int64_t k) {
    uint32_t v = 0;
    return i64map_get(m, k, &v) ? v : 0;
}

/* String -> uint32 map; keys are copied into an arena. */
typedef struct strmap_ent {
    const char *k;
    uint32_t klen, val;
    uint64_t h;
} strmap_ent;

typedef struct strmap {
    strmap_ent *slots;
    size_t n, cap;
} strmap;

static inline uint64_t strmap_hash(const char *k, size_t n) {
    return xpv_hash64_seeded(k, n);
}

static inline void strmap_free(strmap *m) {
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static inline void strmap_grow(strmap *m) {
    size_t nc = m->cap ? m->cap * 2 : 256;
    strmap_ent *ns = xpv_xcalloc(nc, sizeof *ns);
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].k) continue;
        size_t j = m->slots[i].h & (nc - 1);
        while (ns[j].k) j = (j + 1) & (nc - 1);
        ns[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = ns;
    m->cap = nc;
}

/* Entry of key (k, n); *found tells whether it existed.  A new entry has
 * the key copied into `a` and val 0 for the caller to set. */
static inline strmap_ent *strmap_put(strmap *m, xpv_arena *a, const char *k, size_t n,
                                     int *found) {
    if ((m->n + 1) * 2 > m->cap) strmap_grow(m);
    uint64_t h = strmap_hash(k, n);
    size_t j = h & (m->cap - 1);
    while (m->slots[j].k) {
        strmap_ent *e = &m->slots[j];
        if (e->h == h && e->klen == n && !memcmp(e->k, k, n)) {
            *found = 1;
            return e;
        }
        j = (j + 1) & (m->cap - 1);
    }
    strmap_ent *e = &m->slots[j];
    e->k = xpv_arena_strndup(a, k, n);
    e->klen = (uint32_t)n;
    e->h = h;
    e->val = 0;
    m->n++;
    *found = 0;
    return e;
}

/* Entry of key (k, n), or NULL. */
static inline const strmap_ent *strmap_get(const strmap *m, const char *k, size_t n) {
    if (!m->cap) return NULL;
    uint64_t h = strmap_hash(k, n);
    size_t j = h & (m->cap - 1);
    while (m->slots[j].k) {
        const strmap_ent *e = &m->slots[j];
        if (e->h == h && e->klen == n && !memcmp(e->k, k, n)) return e;
        j = (j + 1) & (m->cap - 1);
    }
    return NULL;
}

/* A key with the position it came from.  xpv_ranked_sort_desc orders an
 * array largest key first and, among equal keys, by ascending position: a
 * total order, so the result does not depend on qsort's (unstable) choices.
 * Used to hand out work biggest first and to rank rows by size. */
typedef struct xpv_ranked {
    int64_t key;
    uint64_t pos;
} xpv_ranked;

static inline int xpv_ranked_cmp_desc(const void *a, const void *b) {
    const xpv_ranked *x = a, *y = b;
    if (x->key != y->key) return x->key > y->key ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static inline void xpv_ranked_sort_desc(xpv_ranked *a, size_t n) {
    if (n > 1) qsort(a, n, sizeof *a, xpv_ranked_cmp_desc);
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

#endif /* XPV_COLLECTIONS_H */
