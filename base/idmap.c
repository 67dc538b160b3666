/*
 * idmap.c - int64 id -> dense index map (see idmap.h).
 */
#include "idmap.h"

xpv_idmap *xpv_idmap_build(xpv_arena *a, const int64_t *ids, uint32_t n) {
    xpv_idmap *m = xpv_arena_calloc(a, 1, sizeof *m);
    int64_t max = -1;
    int neg = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (ids[i] < 0) neg = 1;
        else if (ids[i] > max) max = ids[i];
    }
    /* (uint64_t)max + 1 cannot overflow (max <= INT64_MAX); an id of
     * INT64_MAX is far past the dense bound and takes the hash path. */
    if (!neg && (uint64_t)max + 1 <= 4 * (uint64_t)n + 1024) {
        m->ndirect = (uint64_t)max + 1;
        m->direct = xpv_arena_calloc(a, m->ndirect ? m->ndirect : 1, sizeof(uint32_t));
        for (uint32_t i = 0; i < n; i++) m->direct[ids[i]] = i + 1;
        return m;
    }
    uint64_t cap = 16;
    while (cap < 2 * (uint64_t)n) cap *= 2;
    m->mask = cap - 1;
    m->keys = xpv_arena_alloc(a, cap * sizeof(int64_t));
    m->vals = xpv_arena_calloc(a, cap, sizeof(uint32_t));
    for (uint32_t i = 0; i < n; i++) {
        uint64_t h = (uint64_t)ids[i] * 0x9E3779B97F4A7C15ull;
        for (uint64_t j = h >> 20;; j++) {
            uint64_t s = j & m->mask;
            if (!m->vals[s] || m->keys[s] == ids[i]) {
                m->keys[s] = ids[i];
                m->vals[s] = i + 1; /* later duplicates win */
                break;
            }
        }
    }
    return m;
}
