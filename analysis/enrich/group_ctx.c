/*
 * group_ctx.c - the producer / consumer keys of XLA's event grouping
 * (`_pt`/`_p` -> `_ct`/`_c`, executor -> iterator), sorted so that
 * group_events.c can link equal keys in one merge pass.
 */
#include <stdlib.h>
#include <string.h>

#include "group_events_int.h"

int xpv_ge_cmp_ctx_key(const void *a, const void *b) {
    const ctx_key *x = a, *y = b;
    if (x->type != y->type) return x->type < y->type ? -1 : 1;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    if (x->id2 != y->id2) return x->id2 < y->id2 ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

static uint64_t ctx_hash(const ctx_key *k) {
    return mix64((uint64_t)k->type * 0x9e3779b97f4a7c15ULL ^ mix64((uint64_t)k->id) ^
                 (uint64_t)k->id2 * 0xc2b2ae3d27d4eb4fULL);
}

/* A distinct context key and how many producers / consumers hold it. */
typedef struct key_rec {
    int64_t type, id, id2;
    uint32_t np, nc, rank;
} key_rec;

typedef struct key_tab {
    key_rec *k;
    size_t n, cap;
    uint32_t *slot;            /* key index + 1, 0 empty */
    size_t mask;
} key_tab;

static uint32_t key_find(key_tab *t, const ctx_key *c) {
    size_t s = ctx_hash(c) & t->mask;
    for (;; s = (s + 1) & t->mask) {
        uint32_t v = t->slot[s];
        if (!v) break;
        const key_rec *r = &t->k[v - 1];
        if (r->type == c->type && r->id == c->id && r->id2 == c->id2) return v - 1;
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 1024;
        t->k = xpv_xrealloc(t->k, t->cap * sizeof *t->k);
    }
    t->k[t->n] = (key_rec){c->type, c->id, c->id2, 0, 0, 0};
    t->slot[s] = (uint32_t)++t->n;
    return (uint32_t)(t->n - 1);
}

static int cmp_key_rec(const void *a, const void *b) {
    const key_rec *x = *(const key_rec *const *)a, *y = *(const key_rec *const *)b;
    if (x->type != y->type) return x->type < y->type ? -1 : 1;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return (x->id2 > y->id2) - (x->id2 < y->id2);
}

/* Records of the useful keys, in (key, node) order: a counting sort on the
 * key's rank (stable), then by node inside a key where the scan did not
 * already give node order. */
static void ctx_place(vec *v, const uint32_t *kid, const key_tab *t, uint32_t nuseful) {
    size_t *off = xpv_xcalloc((size_t)nuseful + 1, sizeof *off);
    const ctx_key *in = v->p;
    for (size_t i = 0; i < v->n; i++) {
        const key_rec *r = &t->k[kid[i]];
        if (r->rank != UINT32_MAX) off[r->rank + 1]++;
    }
    for (uint32_t r = 0; r < nuseful; r++) off[r + 1] += off[r];
    size_t nout = off[nuseful];
    ctx_key *out = xpv_xmalloc((nout ? nout : 1) * sizeof *out);
    size_t *pos = xpv_xmalloc(((size_t)nuseful + 1) * sizeof *pos);
    memcpy(pos, off, ((size_t)nuseful + 1) * sizeof *pos);
    for (size_t i = 0; i < v->n; i++) {
        const key_rec *r = &t->k[kid[i]];
        if (r->rank != UINT32_MAX) out[pos[r->rank]++] = in[i];
    }
    for (uint32_t r = 0; r < nuseful; r++) {
        size_t a = off[r], b = off[r + 1];
        int sorted = 1;
        for (size_t i = a + 1; i < b && sorted; i++)
            if (out[i].node < out[i - 1].node) sorted = 0;
        if (!sorted) qsort(out + a, b - a, sizeof *out, xpv_ge_cmp_ctx_key);
    }
    free(pos);
    free(off);
    free(v->p);
    v->p = out;
    v->n = v->cap = nout;
}

/* Sort producers and consumers by (type, id, process, node), keeping only
 * the records context_edges can link: keys held on both sides, and (but
 * for executor keys) not by CONTEXT_EDGE_LIMIT or more on each.  The
 * result is what sorting everything gives, less records that make no
 * edge.  Producers and consumers run to millions on big profiles and
 * mostly do not match: a comparison sort of all of them cost more than
 * the rest of the pass. */
void xpv_ge_ctx_sort(vec *prod, vec *cons) {
    size_t n = prod->n + cons->n, nslot = 1024;
    while (nslot < 2 * n) nslot <<= 1;
    key_tab t = {NULL, 0, 0, xpv_xcalloc(nslot, sizeof(uint32_t)), nslot - 1};
    uint32_t *kp = xpv_xmalloc((prod->n ? prod->n : 1) * sizeof *kp);
    uint32_t *kc = xpv_xmalloc((cons->n ? cons->n : 1) * sizeof *kc);
    const ctx_key *P = prod->p, *C = cons->p;
    for (size_t i = 0; i < prod->n; i++) {
        kp[i] = key_find(&t, &P[i]); /* (may move t.k) */
        t.k[kp[i]].np++;
    }
    for (size_t i = 0; i < cons->n; i++) {
        kc[i] = key_find(&t, &C[i]);
        t.k[kc[i]].nc++;
    }
    free(t.slot);
    key_rec **useful = xpv_xmalloc((t.n ? t.n : 1) * sizeof *useful);
    uint32_t nu = 0;
    for (size_t i = 0; i < t.n; i++) {
        key_rec *r = &t.k[i];
        r->rank = UINT32_MAX;
        if (!r->np || !r->nc) continue;
        if (r->type != TYPE_EXECUTOR && r->np >= CONTEXT_EDGE_LIMIT && r->nc >= CONTEXT_EDGE_LIMIT)
            continue;
        useful[nu++] = r;
    }
    if (nu) qsort(useful, nu, sizeof *useful, cmp_key_rec);
    for (uint32_t r = 0; r < nu; r++) useful[r]->rank = r;
    ctx_place(prod, kp, &t, nu);
    ctx_place(cons, kc, &t, nu);
    free(useful);
    free(kp);
    free(kc);
    free(t.k);
}
