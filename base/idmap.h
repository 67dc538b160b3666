/*
 * idmap.h - int64 metadata id -> dense index.  Used by the decoder and the model
 * for metadata ids.
 *
 * Metadata ids in real files are small and dense (1..N), so the common case
 * is a direct array; sparse or negative ids fall back to open addressing.
 */
#ifndef XPV_IDMAP_H
#define XPV_IDMAP_H

#include <stdint.h>

#include "arena.h"

typedef struct xpv_idmap {
    uint32_t *direct;      /* direct[id] = index + 1 (0 = absent), when dense */
    uint64_t ndirect;
    int64_t *keys;         /* open addressing otherwise */
    uint32_t *vals;        /* index + 1 (0 = empty slot) */
    uint64_t mask;
} xpv_idmap;

/* Build a map for `n` (id, index) pairs; later duplicates win. */
xpv_idmap *xpv_idmap_build(xpv_arena *a, const int64_t *ids, uint32_t n);

/* Index + 1 for `id`, or 0 when absent. */
static inline uint32_t xpv_idmap_get(const xpv_idmap *m, int64_t id) {
    if (m->direct) {
        return (id >= 0 && (uint64_t)id < m->ndirect) ? m->direct[id] : 0;
    }
    uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ull;
    for (uint64_t i = h >> 20;; i++) {
        uint64_t s = i & m->mask;
        if (!m->vals[s]) return 0;
        if (m->keys[s] == id) return m->vals[s];
    }
}

#endif
