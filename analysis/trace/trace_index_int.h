/*
 * trace_index_int.h - what the trace index's builder and query
 * (trace_index.c), its image loader (trace_index_image.c) and its viewport
 * budget (trace_budget.c) share; private to those.
 */
#ifndef XPV_TRACE_INDEX_INT_H
#define XPV_TRACE_INDEX_INT_H

#include "trace_index.h"

#include <stdatomic.h>

#define MAX_STEPS 100000

typedef struct ord_ev {
    int64_t start, negdur;
    uint32_t ev;
} ord_ev;

typedef struct builder {
    xpv_trace_index *ix;
    size_t cap_rows, cap_groups, cap_steps, cap_procs;
    /* scratch, reused across rows: ord and keep (an unsorted row's
     * events, cap_scratch), tmp and lvl (one group's, cap_group), dep
     * (a sorted row's depths, one byte per event, cap_dep) */
    ord_ev *ord;
    uint32_t *keep, *tmp;
    uint8_t *lvl, *dep;
    int64_t *stack;
    size_t cap_scratch, cap_group, cap_dep, cap_stack;
    uint32_t *gcount;
    size_t cap_gcount;
    uint32_t steps0;     /* ix->steps before the current row's: MAX_STEPS
                          * caps steps - steps0 (0: all rows together) */
} builder;

static inline int64_t ev_dur(const xpv_event *e) { return e->dur_ps > 0 ? e->dur_ps : 0; }

/* floor(log2(v)) for v >= 1. */
static inline int xpv_ti_ilog2(uint64_t v) { return 63 - __builtin_clzll(v); }

/* Coarsest level L with RES(L) <= v (v >= 1). */
static inline int level_for(int64_t v) {
    int L = XPV_TRACE_LEVELS - 1 - xpv_ti_ilog2((uint64_t)v) / 2;
    return L < 0 ? 0 : L;
}

/* Grow `p` (of *cap elements of `elem` bytes) to hold `need`: capacity
 * doubled from 16, *cap updated. */
void *xpv_ti_grow(void *p, size_t *cap, size_t need, size_t elem);
/* Append a step marker, at most MAX_STEPS per build (since b->steps0). */
void xpv_ti_add_step(builder *b, int64_t s, int64_t d, uint32_t row, uint32_t ev);

/* Pass 1 of a build (and of a load): processes and rows of the host set,
 * ordered, with their names, pids/tids and stat ids; group ranges are left
 * empty.  Returns the number of events of the shown lines. */
uint64_t xpv_ti_layout(builder *bd, const xpv_hostset *hs);
/* Index row `ri` (events of `ln`, plane `pl`; dropped[meta] 1 for
 * internal events): its idx entries from ix->nidx on, its groups appended
 * to ix->groups, its steps to ix->steps, counts and span into b->ix
 * (trace_index_row.c). */
void xpv_ti_index_row(builder *b, uint32_t ri, const xpv_plane *pl, const xpv_line *ln,
                      const uint8_t *dropped);
/* Pass 2 of a build on several threads (trace_index_par.c): every row
 * indexed as the serial loop does, same index byte for byte.  Returns 0
 * (nothing done: the caller indexes the rows) when one thread is to be
 * used or the rows hold too few events to be worth it. */
int xpv_ti_index_rows_parallel(builder *b, uint64_t total);
/* Threads for that (0: the online CPUs, at most 8; 1: serial) and the
 * events below which it stays serial (tests set both). */
extern int xpv_ti_threads;
extern uint64_t xpv_ti_parallel_min;
/* The most scratch one row's builder has held (bytes; any thread, any
 * build since a test last zeroed it): tests bound it. */
extern _Atomic uint64_t xpv_ti_scratch_peak;
/* Threads to split `nrows` rows holding `total` events over by those two
 * settings (1: stay serial). */
int xpv_ti_thread_count(uint32_t nrows, uint64_t total);

/* The computed grouping of each host (borrowed from its enrichment). */
void xpv_ti_attach_groups(xpv_trace_index *ix, const xpv_hostset *hs);
/* Memory held by an index (for the cache budget). */
size_t xpv_ti_index_bytes(const xpv_trace_index *ix);

/* A query's growing result: hits with the group of each. */
typedef struct xpv_ti_cand {
    int64_t start;
    uint32_t ev;
} xpv_ti_cand;

typedef struct xpv_ti_hits {
    xpv_trace_hit *hits;
    uint32_t *hg;                   /* group of each hit */
    size_t n, cap, gcap;
    xpv_ti_cand *cs;                /* scratch of xpv_ti_query_group */
    size_t ccap;
} xpv_ti_hits;

void xpv_ti_hits_add(xpv_ti_hits *q, uint32_t group, uint32_t row, uint32_t ev);
/* Append the events of group `gi` visible in [start_ps, end_ps) at
 * `res_ps` (XProf's rule, trace_index.h) to `q`, in start order; returns
 * how many. */
size_t xpv_ti_query_group(xpv_ti_hits *q, const xpv_trace_index *ix, uint32_t gi,
                          int64_t start_ps, int64_t end_ps, int64_t res_ps);
/* Queries on two threads (trace_query_par.c), the serial answers byte for
 * byte: used when xpv_ti_query_threads is not 1 and the index holds at
 * least xpv_ti_query_parallel_min events (tests set both). */
extern int xpv_ti_query_threads;
extern uint64_t xpv_ti_query_parallel_min;
int xpv_ti_query_parallel(const xpv_trace_index *ix);
/* Every group's visible events appended to `q` in group order (as a loop
 * of xpv_ti_query_group over the groups). */
void xpv_ti_query_all(xpv_ti_hits *q, const xpv_trace_index *ix, int64_t start_ps,
                      int64_t end_ps, int64_t res_ps);
/* fn(ctx, k) for k in [0, n) on two threads, in any order. */
void xpv_ti_for_each_par(void (*fn)(void *ctx, size_t k), void *ctx, size_t n);

/* Bring the visible events `q` (ordered by group, then start) within
 * `b` (trace_budget.c); fills `info` when not NULL. */
void xpv_ti_apply_budget(const xpv_hostset *hs, const xpv_trace_index *ix, int64_t start_ps,
                         int64_t end_ps, int64_t res_ps, const xpv_trace_budget *b,
                         xpv_ti_hits *q, xpv_trace_budget_info *info);

#endif
