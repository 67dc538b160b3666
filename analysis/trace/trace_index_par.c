/*
 * trace_index_par.c - pass 2 of the trace index build (one row at a time,
 * xpv_ti_index_row) on several threads, for large profiles.
 *
 * Rows are independent: each thread takes rows (most events first) and
 * indexes them with a builder of its own into a private index shell whose
 * idx is the shared array, row ri writing from its upper-bound offset (the
 * events of the rows before it) so that threads never write the same
 * entries.  Then, in row order, one pass moves every row's entries down
 * to where the serial build puts them (dropped internal events leave
 * gaps), appends its groups (offsets moved alike) and its steps (capped
 * as the serial build caps them), and sums the counts: the index is the
 * serial build's byte for byte, whatever the threads' schedule.
 * (Flow promotion, the build's last pass, splits its rows alike: see
 * promote_flows in trace_index.c.)
 */
#include "collections.h"
#include "trace_index_int.h"
#include "par.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int xpv_ti_threads = 0;
uint64_t xpv_ti_parallel_min = 2000000;

/* Where one row's output landed. */
typedef struct row_out {
    uint32_t part;                 /* which thread's shell */
    uint32_t group0, ngroups;      /* in that shell's groups */
    uint32_t step0, nsteps;        /* in that shell's steps */
} row_out;

typedef struct row_pool {
    xpv_trace_index *ix;
    const uint64_t *start;         /* per row: its upper-bound idx offset */
    const uint32_t *order;         /* rows, most events first */
    row_out *out;
    _Atomic uint32_t next;
} row_pool;

typedef struct part {
    row_pool *pool;
    uint32_t id;
    xpv_trace_index shell;         /* groups, steps, counts of its rows */
    builder b;
} part;

static void part_run(void *arg) {
    part *pt = arg;
    row_pool *rp = pt->pool;
    xpv_trace_index *ix = rp->ix;
    pt->shell.rows = ix->rows;
    pt->shell.idx = ix->idx;
    pt->shell.min_ps = INT64_MAX;
    pt->shell.max_ps = INT64_MIN;
    pt->b.ix = &pt->shell;
    uint8_t *dropped = NULL;
    size_t cap_dropped = 0;
    const xpv_plane *last_pl = NULL;
    for (;;) {
        uint32_t i = atomic_fetch_add(&rp->next, 1);
        if (i >= ix->nrows) break;
        uint32_t ri = rp->order[i];
        const xpv_trace_row *r = &ix->rows[ri];
        if (r->pl != last_pl) {
            if (r->pl->nevent_meta + 1 > cap_dropped) {
                cap_dropped = r->pl->nevent_meta + 1;
                dropped = xpv_xrealloc(dropped, cap_dropped);
            }
            for (uint32_t k = 0; k < r->pl->nevent_meta; k++)
                dropped[k] = (uint8_t)xpv_trace_is_internal(r->pl->event_meta[k].name);
            last_pl = r->pl;
        }
        pt->shell.nidx = rp->start[ri];
        pt->b.steps0 = pt->shell.nsteps;
        xpv_ti_index_row(&pt->b, ri, r->pl, r->ln, dropped);
        rp->out[ri] = (row_out){pt->id, r->group0, r->ngroups, pt->b.steps0,
                                pt->shell.nsteps - pt->b.steps0};
    }
    free(dropped);
    free(pt->b.ord);
    free(pt->b.keep);
    free(pt->b.tmp);
    free(pt->b.lvl);
    free(pt->b.dep);
    free(pt->b.stack);
    free(pt->b.gcount);
}

/* The serial build's layout from the threads' output, in row order. */
static void merge(builder *b, part *parts, uint32_t nparts, const uint64_t *start,
                  const row_out *out) {
    xpv_trace_index *ix = b->ix;
    uint64_t ngroups = 0, nsteps = 0;
    for (uint32_t p = 0; p < nparts; p++) {
        ngroups += parts[p].shell.ngroups;
        nsteps += parts[p].shell.nsteps;
    }
    ix->groups = xpv_xmalloc((ngroups ? ngroups : 1) * sizeof *ix->groups);
    b->cap_groups = ngroups ? ngroups : 1;
    if (nsteps > MAX_STEPS) nsteps = MAX_STEPS;
    ix->steps = xpv_xmalloc((nsteps ? nsteps : 1) * sizeof *ix->steps);
    b->cap_steps = nsteps ? nsteps : 1;
    uint64_t off = 0;
    for (uint32_t ri = 0; ri < ix->nrows; ri++) {
        xpv_trace_row *r = &ix->rows[ri];
        const part *pt = &parts[out[ri].part];
        uint64_t delta = start[ri] - off;
        if (delta && r->nevents)
            memmove(ix->idx + off, ix->idx + start[ri], r->nevents * sizeof *ix->idx);
        r->group0 = ix->ngroups;
        /* memcpy: the groups' padding too (new_group zeroes it). */
        xpv_trace_group *g = ix->groups + ix->ngroups;
        memcpy(g, pt->shell.groups + out[ri].group0, out[ri].ngroups * sizeof *g);
        for (uint32_t k = 0; k < out[ri].ngroups; k++) g[k].off -= delta;
        ix->ngroups += out[ri].ngroups;
        for (uint32_t s = 0; s < out[ri].nsteps && ix->nsteps < MAX_STEPS; s++)
            ix->steps[ix->nsteps++] = pt->shell.steps[out[ri].step0 + s];
        off += r->nevents;
    }
    ix->nidx = off;
    for (uint32_t p = 0; p < nparts; p++) {
        const xpv_trace_index *sh = &parts[p].shell;
        ix->ndropped += sh->ndropped;
        ix->ncounter += sh->ncounter;
        if (sh->min_ps < ix->min_ps) ix->min_ps = sh->min_ps;
        if (sh->max_ps > ix->max_ps) ix->max_ps = sh->max_ps;
    }
}

int xpv_ti_thread_count(uint32_t nrows, uint64_t total) {
    int threads = xpv_ti_threads;
    if (!threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n < 1 ? 1 : n > 8 ? 8 : (int)n;
    }
    if (threads > (int)nrows) threads = (int)nrows;
    return threads < 2 || total < xpv_ti_parallel_min ? 1 : threads;
}

int xpv_ti_index_rows_parallel(builder *b, uint64_t total) {
    xpv_trace_index *ix = b->ix;
    int threads = xpv_ti_thread_count(ix->nrows, total);
    if (threads < 2 || ix->ngroups || ix->nsteps) return 0;
    uint64_t *start = xpv_xmalloc(ix->nrows * sizeof *start);
    xpv_ranked *sz = xpv_xmalloc(ix->nrows * sizeof *sz);
    uint32_t *order = xpv_xmalloc(ix->nrows * sizeof *order);
    row_out *out = xpv_xcalloc(ix->nrows, sizeof *out);
    uint64_t at = 0;
    for (uint32_t ri = 0; ri < ix->nrows; ri++) {
        start[ri] = at;
        at += ix->rows[ri].ln->nevents;   /* what xpv_ti_layout counted */
        sz[ri] = (xpv_ranked){(int64_t)ix->rows[ri].ln->nevents, ri};
    }
    xpv_ranked_sort_desc(sz, ix->nrows);   /* most events first, then row order */
    for (uint32_t ri = 0; ri < ix->nrows; ri++) order[ri] = (uint32_t)sz[ri].pos;
    free(sz);
    row_pool rp = {.ix = ix, .start = start, .order = order, .out = out};
    atomic_init(&rp.next, 0);
    part *parts = xpv_xcalloc((size_t)threads, sizeof *parts);
    void **args = xpv_xcalloc((size_t)threads, sizeof *args);
    for (int t = 0; t < threads; t++) {
        parts[t].pool = &rp;
        parts[t].id = (uint32_t)t;
        args[t] = &parts[t];
    }
    /* Each part takes rows from the pool until none is left; an allocation
     * failure in any is raised here once all have stopped. */
    xpv_par_many(part_run, args, threads);
    merge(b, parts, (uint32_t)threads, start, out);
    for (int t = 0; t < threads; t++) {
        free(parts[t].shell.groups);
        free(parts[t].shell.steps);
    }
    free(parts);
    free(args);
    free(start);
    free(order);
    free(out);
    return 1;
}
