/*
 * trace_budget.c - a total budget for one trace viewport answer (see
 * xpv_trace_budget in trace_index.h for the rule).
 *
 * The visible events of the window (XProf's rule at the requested
 * resolution, one pass of xpv_ti_query_group per group) arrive ordered by
 * group, and groups by row, so every row is one run of the hits.  When
 * they exceed the budget, a cap per row is found by water filling over
 * the rows' counts, and each row over the cap is queried again at a
 * coarser resolution (fit_row: a few probes aimed by the count, then
 * bisection).  The visibility rule is monotone enough in the resolution
 * for this to work on real rows; the row's longest events are the
 * fallback for a row that never fits.  Each busy row is re-queried on its
 * own into its own hits (on two threads for a large index,
 * trace_query_par.c), and the rows are joined in order afterwards.
 */
#include "collections.h"
#include "trace_index.h"
#include "trace_index_int.h"

#include <stdlib.h>
#include <string.h>

/* Bytes of one streamed event besides its escaped name: pid, tid, ts and
 * dur with their decimals, "ph":"X", args {group_id, uid} and separators
 * (trace_viewer.c); a counter sample is shorter. */
#define EVENT_BYTES 128
#define COUNTER_BYTES 80
#define MAX_PROBES 10

typedef struct row_run {
    uint32_t row;
    size_t a, b;                    /* hits [a, b) of q */
} row_run;

static size_t est_bytes(const xpv_trace_index *ix, const xpv_ti_hits *q, size_t i) {
    const xpv_trace_row *r = &ix->rows[q->hits[i].row];
    const xpv_event *e = &r->ln->events[q->hits[i].ev];
    return (r->is_counter ? COUNTER_BYTES : EVENT_BYTES) + r->jname_len[e->meta];
}

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* The largest cap c with sum(min(count, c)) <= total (at least 1). */
static size_t water_fill(const row_run *runs, size_t nruns, size_t total) {
    size_t *c = xpv_xmalloc((nruns ? nruns : 1) * sizeof *c);
    for (size_t i = 0; i < nruns; i++) c[i] = runs[i].b - runs[i].a;
    qsort(c, nruns, sizeof *c, cmp_size);
    size_t left = total, cap = 0;
    for (size_t i = 0; i < nruns; i++) {
        size_t share = left / (nruns - i);
        if (c[i] > share) {
            cap = share;
            break;
        }
        left -= c[i];
        cap = c[i];
    }
    free(c);
    return cap ? cap : 1;
}

/* The visible events of row `ri` at resolution `res` into `t` (emptied
 * first); returns the count. */
static size_t query_row(xpv_ti_hits *t, const xpv_trace_index *ix, uint32_t ri, int64_t start_ps,
                        int64_t end_ps, int64_t res) {
    const xpv_trace_row *r = &ix->rows[ri];
    t->n = 0;
    for (uint32_t gi = r->group0; gi < r->group0 + r->ngroups; gi++)
        xpv_ti_query_group(t, ix, gi, start_ps, end_ps, res);
    return t->n;
}

static int cmp_pos(const void *a, const void *b) {
    const xpv_ranked *x = a, *y = b;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Keep the `cap` longest events of `t` (counter samples: the first),
 * in their order. */
static void keep_longest(xpv_ti_hits *t, const xpv_trace_index *ix, size_t cap) {
    if (t->n <= cap) return;
    xpv_ranked *v = xpv_xmalloc(t->n * sizeof *v);
    for (size_t i = 0; i < t->n; i++) {
        const xpv_trace_row *r = &ix->rows[t->hits[i].row];
        const xpv_event *e = &r->ln->events[t->hits[i].ev];
        v[i] = (xpv_ranked){r->is_counter || e->dur_ps < 0 ? 0 : e->dur_ps, i};
    }
    /* Longest first; ties in position order (group, then start). */
    xpv_ranked_sort_desc(v, t->n);
    qsort(v, cap, sizeof *v, cmp_pos);
    for (size_t i = 0; i < cap; i++) {
        t->hits[i] = t->hits[v[i].pos];
        t->hg[i] = t->hg[v[i].pos];
    }
    t->n = cap;
    free(v);
}

/* Re-query row `ri` at a coarser resolution than `res_ps` where at most
 * `cap` events are visible (about the finest: within 3/4 of the cap, or
 * after MAX_PROBES queries), given `d` > cap visible at `res_ps`; the
 * result is left in `t`.  Visible counts fall about as 1/R, so each probe
 * aims at R * count / cap; once one fits, bisection.  Returns the
 * resolution used; *cut when none fits (the longest events are kept). */
static int64_t fit_row(xpv_ti_hits *t, xpv_ti_hits *best, const xpv_trace_index *ix, uint32_t ri,
                       int64_t start_ps, int64_t end_ps, int64_t res_ps, size_t d, size_t cap,
                       int *cut) {
    int64_t span = end_ps - start_ps > 0 ? end_ps - start_ps : 1;
    int64_t lo = res_ps > 0 ? res_ps : 1, hi = 0, r = lo;
    size_t c = d;
    best->n = 0;
    for (int k = 0; k < MAX_PROBES; k++) {
        if (!hi) {
            /* Beyond 4x the span nothing more is hidden. */
            if (lo > 4 * span) break;
            double aim = (double)lo * (double)c / (double)cap * 1.1;
            double min = (double)lo * 1.25 + 1;
            r = (int64_t)(aim > min ? aim : min);
            if (r > 8 * span) r = 8 * span;
        } else {
            if (hi - lo <= 1) break;
            r = lo + (hi - lo) / 2;
        }
        c = query_row(t, ix, ri, start_ps, end_ps, r);
        if (c <= cap) {
            xpv_ti_hits sw = *best;
            *best = *t;
            *t = sw;
            hi = r;
            if (4 * c >= 3 * cap) break;
        } else {
            lo = r;
        }
    }
    *cut = !hi;
    if (*cut) {
        /* the coarsest answer, cut to its longest events */
        r = 8 * span;
        query_row(best, ix, ri, start_ps, end_ps, r);
        keep_longest(best, ix, cap);
        return r;
    }
    return hi;
}

/* One row over the cap and what fit_row made of it. */
typedef struct fit_job {
    const row_run *rr;
    xpv_ti_hits best;
    int64_t r;
    int cut;
} fit_job;

typedef struct fit_jobs {
    const xpv_trace_index *ix;
    int64_t start_ps, end_ps, res_ps;
    size_t cap;
    fit_job *jobs;
    size_t n;
} fit_jobs;

static void fit_one(void *ctx, size_t k) {
    fit_jobs *fj = ctx;
    fit_job *jb = &fj->jobs[k];
    xpv_ti_hits t;
    memset(&t, 0, sizeof t);
    jb->r = fit_row(&t, &jb->best, fj->ix, jb->rr->row, fj->start_ps, fj->end_ps, fj->res_ps,
                    jb->rr->b - jb->rr->a, fj->cap, &jb->cut);
    free(t.hits);
    free(t.hg);
    free(t.cs);
    free(jb->best.cs);
    jb->best.cs = NULL;
}

void xpv_ti_apply_budget(const xpv_hostset *hs, const xpv_trace_index *ix, int64_t start_ps,
                         int64_t end_ps, int64_t res_ps, const xpv_trace_budget *b,
                         xpv_ti_hits *q, xpv_trace_budget_info *info) {
    (void)hs;
    size_t n = q->n;
    if (info) info->candidates = n;
    /* Events for the visible rule; the rest is for flows' other ends. */
    size_t ev_budget = b->max_events - b->max_events / 16;
    if (b->max_bytes && n) {
        size_t bytes = 0;
        for (size_t i = 0; i < n; i++) bytes += est_bytes(ix, q, i);
        if (bytes > b->max_bytes) {
            size_t fit = (size_t)((double)n * (double)b->max_bytes / (double)bytes);
            if (fit < ev_budget) ev_budget = fit;
        }
    }
    if (!ev_budget) ev_budget = 1;
    if (n <= ev_budget) return;
    row_run *runs = NULL;
    size_t nruns = 0;
    for (size_t i = 0; i < n; i++) {
        if (!nruns || runs[nruns - 1].row != q->hits[i].row) {
            runs = xpv_xrealloc(runs, (nruns + 1) * sizeof *runs);
            runs[nruns++] = (row_run){q->hits[i].row, i, i};
        }
        runs[nruns - 1].b = i + 1;
    }
    size_t cap = water_fill(runs, nruns, ev_budget);
    if (info) info->row_cap = cap;
    /* The rows over the cap, each re-queried on its own (two threads on
     * a large index), then every row joined in order. */
    fit_jobs fj = {ix, start_ps, end_ps, res_ps, cap, NULL, 0};
    fj.jobs = xpv_xcalloc(nruns ? nruns : 1, sizeof *fj.jobs);
    for (size_t k = 0; k < nruns; k++)
        if (runs[k].b - runs[k].a > cap) fj.jobs[fj.n++].rr = &runs[k];
    if (fj.n > 1 && xpv_ti_query_parallel(ix)) xpv_ti_for_each_par(fit_one, &fj, fj.n);
    else
        for (size_t k = 0; k < fj.n; k++) fit_one(&fj, k);
    xpv_ti_hits out;
    memset(&out, 0, sizeof out);
    size_t j = 0;
    for (size_t k = 0; k < nruns; k++) {
        const row_run *rr = &runs[k];
        if (rr->b - rr->a <= cap) {
            for (size_t i = rr->a; i < rr->b; i++)
                xpv_ti_hits_add(&out, q->hg[i], q->hits[i].row, q->hits[i].ev);
            continue;
        }
        fit_job *fb = &fj.jobs[j++];
        if (b->row_res_ps) b->row_res_ps[rr->row] = fb->r;
        if (info) {
            info->rows_coarsened++;
            info->rows_cut += (uint32_t)fb->cut;
            if (fb->r > info->max_row_res_ps) info->max_row_res_ps = fb->r;
        }
        for (size_t i = 0; i < fb->best.n; i++)
            xpv_ti_hits_add(&out, fb->best.hg[i], fb->best.hits[i].row, fb->best.hits[i].ev);
        free(fb->best.hits);
        free(fb->best.hg);
    }
    free(fj.jobs);
    free(runs);
    free(q->hits);
    free(q->hg);
    q->hits = out.hits;
    q->hg = out.hg;
    q->n = out.n;
    q->cap = out.cap;
    q->gcap = out.gcap;
}

/* ==== The viewport query: every group, the budget, the flow ends ===== */


#ifndef LV
#define LV XPV_TRACE_LEVELS
#endif

size_t xpv_trace_query_budget(const xpv_hostset *hs, const xpv_trace_index *ix, int64_t start_ps,
                              int64_t end_ps, int64_t res_ps, const xpv_trace_budget *budget,
                              xpv_trace_budget_info *info, xpv_trace_hit **out) {
    xpv_ti_hits q;
    memset(&q, 0, sizeof q);
    if (info) memset(info, 0, sizeof *info);
    xpv_ti_query_all(&q, ix, start_ps, end_ps, res_ps);
    size_t limit = SIZE_MAX;
    if (budget && budget->max_events) {
        limit = budget->max_events;
        xpv_ti_apply_budget(hs, ix, start_ps, end_ps, res_ps, budget, &q, info);
    }
    free(q.cs);
    int Lq = res_ps > 0 ? level_for(res_ps) : LV - 1;
    if (res_ps > 0 && q.n)
        q.n = xpv_ti_add_flow_ends(hs, ix, start_ps, end_ps, Lq, &q.hits, &q.cap, &q.hg, &q.gcap, q.n,
                            limit);
    free(q.hg);
    if (!q.hits) q.hits = xpv_xmalloc(sizeof *q.hits);
    *out = q.hits;
    return q.n;
}

size_t xpv_trace_query(const xpv_hostset *hs, const xpv_trace_index *ix, int64_t start_ps,
                       int64_t end_ps, int64_t res_ps, xpv_trace_hit **out) {
    return xpv_trace_query_budget(hs, ix, start_ps, end_ps, res_ps, NULL, NULL, out);
}

