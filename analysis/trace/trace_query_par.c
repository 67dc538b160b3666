/*
 * trace_query_par.c - a viewport query on two threads (issue 17: on a
 * profile of 147 rows a zoom step's query and its budget took 0.1-0.7 s
 * on one core while the other waited).
 *
 * Both halves of a budgeted query are independent per group or per row:
 * the visible events of each group (xpv_ti_query_group), and each busy
 * row's re-query at a coarser resolution (the budget's fit).  The work is
 * cut into chunks of consecutive groups (rows) that the two threads take
 * in turn; every chunk writes its own hits, and the chunks are joined in
 * order, so the answer is the serial one byte for byte whatever the
 * schedule.
 */
#include "trace_index_int.h"
#include "par.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

int xpv_ti_query_threads = 0;
uint64_t xpv_ti_query_parallel_min = 4000000;

int xpv_ti_query_parallel(const xpv_trace_index *ix) {
    return xpv_ti_query_threads != 1 && ix->nidx >= xpv_ti_query_parallel_min;
}

#define CHUNK_GROUPS 4

typedef struct group_pool {
    const xpv_trace_index *ix;
    int64_t start_ps, end_ps, res_ps;
    xpv_ti_hits *chunks;            /* one per CHUNK_GROUPS groups */
    uint32_t nchunks;
    _Atomic uint32_t next;
} group_pool;

static void groups_run(void *arg) {
    group_pool *gp = arg;
    for (;;) {
        uint32_t c = atomic_fetch_add(&gp->next, 1);
        if (c >= gp->nchunks) break;
        uint32_t g0 = c * CHUNK_GROUPS, g1 = g0 + CHUNK_GROUPS;
        if (g1 > gp->ix->ngroups) g1 = gp->ix->ngroups;
        for (uint32_t gi = g0; gi < g1; gi++)
            xpv_ti_query_group(&gp->chunks[c], gp->ix, gi, gp->start_ps, gp->end_ps, gp->res_ps);
        free(gp->chunks[c].cs);
        gp->chunks[c].cs = NULL;
    }
}

void xpv_ti_query_all(xpv_ti_hits *q, const xpv_trace_index *ix, int64_t start_ps,
                      int64_t end_ps, int64_t res_ps) {
    if (!xpv_ti_query_parallel(ix) || ix->ngroups < 2 * CHUNK_GROUPS) {
        for (uint32_t gi = 0; gi < ix->ngroups; gi++)
            xpv_ti_query_group(q, ix, gi, start_ps, end_ps, res_ps);
        return;
    }
    group_pool gp = {ix, start_ps, end_ps, res_ps, NULL, 0, 0};
    gp.nchunks = (ix->ngroups + CHUNK_GROUPS - 1) / CHUNK_GROUPS;
    gp.chunks = xpv_xcalloc(gp.nchunks, sizeof *gp.chunks);
    xpv_par_run(groups_run, &gp, groups_run, &gp);
    size_t n = q->n;
    for (uint32_t c = 0; c < gp.nchunks; c++) n += gp.chunks[c].n;
    if (n > q->cap) {
        q->hits = xpv_xrealloc(q->hits, n * sizeof *q->hits);
        q->cap = n;
    }
    if (n > q->gcap) {
        q->hg = xpv_xrealloc(q->hg, n * sizeof *q->hg);
        q->gcap = n;
    }
    for (uint32_t c = 0; c < gp.nchunks; c++) {
        xpv_ti_hits *h = &gp.chunks[c];
        if (h->n) {
            memcpy(q->hits + q->n, h->hits, h->n * sizeof *h->hits);
            memcpy(q->hg + q->n, h->hg, h->n * sizeof *h->hg);
            q->n += h->n;
        }
        free(h->hits);
        free(h->hg);
    }
    free(gp.chunks);
}

typedef struct fit_pool {
    void (*fit)(void *ctx, size_t k);
    void *ctx;
    size_t n;
    _Atomic size_t next;
} fit_pool;

static void fits_run(void *arg) {
    fit_pool *fp = arg;
    for (;;) {
        size_t k = atomic_fetch_add(&fp->next, 1);
        if (k >= fp->n) break;
        fp->fit(fp->ctx, k);
    }
}

void xpv_ti_for_each_par(void (*fn)(void *ctx, size_t k), void *ctx, size_t n) {
    fit_pool fp = {fn, ctx, n, 0};
    xpv_par_run(fits_run, &fp, fits_run, &fp);
}
