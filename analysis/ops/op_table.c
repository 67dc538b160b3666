/*
 * op_table.c - the row table every op metrics database is built in
 * (op_metrics_int.h): (program id, op name) -> row, the rows' names in the
 * arena, open addressing over a hash of the name seeded per process (an op
 * name from a file cannot choose to collide), and the hash the other
 * lookups of the build share.  The builds (op_metrics.c, op_metrics_tpu.c)
 * call it; it calls nothing of theirs.
 */
#include <stdlib.h>
#include <string.h>

#include "collections.h"
#include "op_metrics.h"
#include "op_metrics_int.h"

static inline uint64_t rd64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

uint64_t xpv_om_hash_bytes(uint64_t h, const void *p, size_t n) {
    const unsigned char *s = p;
    h ^= (uint64_t)n * 0x9e3779b97f4a7c15ull;
    while (n >= 8) {
        h = (h ^ rd64(s)) * 0x9fb21c651e98df25ull;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    if (n) {
        uint64_t t = 0;
        memcpy(&t, s, n);
        h = (h ^ t) * 0x9fb21c651e98df25ull;
    }
    return mix64(h);
}

/* ==== Op table: name (+ program id) -> row ================================ */

void xpv_om_optab_init(optab *t, xpv_arena *a) {
    memset(t, 0, sizeof *t);
    t->arena = a;
}

void xpv_om_optab_free(optab *t) {
    free(t->rows);
    free(t->hash);
    free(t->pid);
    free(t->len);
    free(t->slots);
}

/* Doubles the slot array of a row table (slot = row index + 1, 0 empty;
 * linear probing on hash[row]): the growth step of optab and ktab. */
void xpv_om_slots_rehash(uint32_t **slots, size_t *nslots, const uint64_t *hash, size_t n) {
    size_t ns = *nslots ? *nslots * 2 : 64;
    uint32_t *s = xpv_xcalloc(ns, sizeof *s);
    for (size_t i = 0; i < n; i++) {
        size_t j = hash[i] & (ns - 1);
        while (s[j]) j = (j + 1) & (ns - 1);
        s[j] = (uint32_t)i + 1;
    }
    free(*slots);
    *slots = s;
    *nslots = ns;
}

/* Index of the row for (pid, name), created zeroed (name copied into the
 * arena, min_time_ps = INT64_MAX until the first occurrence) when absent. */
uint32_t xpv_om_optab_row(optab *t, int64_t pid, xpv_str name) {
    uint64_t h = xpv_om_hash_bytes((uint64_t)pid ^ XPV_OM_HASH_SEED, name.ptr, name.len);
    if ((t->n + 1) * 2 > t->nslots) xpv_om_slots_rehash(&t->slots, &t->nslots, t->hash, t->n);
    size_t j = h & (t->nslots - 1);
    while (t->slots[j]) {
        size_t i = t->slots[j] - 1;
        if (t->hash[i] == h && t->pid[i] == pid && t->len[i] == name.len &&
            (name.len == 0 || memcmp(t->rows[i].name, name.ptr, name.len) == 0))
            return (uint32_t)i;
        j = (j + 1) & (t->nslots - 1);
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->rows = xpv_xrealloc(t->rows, t->cap * sizeof *t->rows);
        t->hash = xpv_xrealloc(t->hash, t->cap * sizeof *t->hash);
        t->pid = xpv_xrealloc(t->pid, t->cap * sizeof *t->pid);
        t->len = xpv_xrealloc(t->len, t->cap * sizeof *t->len);
    }
    size_t i = t->n++;
    xpv_op_metric *r = &t->rows[i];
    memset(r, 0, sizeof *r);
    r->name = xpv_arena_strndup(t->arena, name.ptr ? name.ptr : "", name.len);
    r->category = "";
    r->provenance = "";
    r->long_name = "";
    r->program_id = pid;
    r->min_time_ps = INT64_MAX;
    t->hash[i] = h;
    t->pid[i] = pid;
    t->len[i] = name.len;
    t->slots[j] = (uint32_t)i + 1;
    return (uint32_t)i;
}

const char *xpv_om_arena_str(xpv_arena *a, xpv_str s) {
    return xpv_arena_strndup(a, s.ptr ? s.ptr : "", s.len);
}

