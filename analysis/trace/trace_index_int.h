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

/* The flows of the n hits (grouped as hg says) whose other end lies
 * outside the viewport, added as hits at level Lq (at most `limit` hits
 * in all); returns the new count (trace_query.c). */
size_t xpv_ti_add_flow_ends(const xpv_hostset *hs, const xpv_trace_index *ix, int64_t start_ps,
                            int64_t end_ps, int Lq, xpv_trace_hit **phits, size_t *cap,
                            uint32_t **phg, size_t *gcap, size_t n, size_t limit);

/* Bring the visible events `q` (ordered by group, then start) within
 * `b` (trace_budget.c); fills `info` when not NULL. */
void xpv_ti_apply_budget(const xpv_hostset *hs, const xpv_trace_index *ix, int64_t start_ps,
                         int64_t end_ps, int64_t res_ps, const xpv_trace_budget *b,
                         xpv_ti_hits *q, xpv_trace_budget_info *info);

/* ==== Flows (the build promotes them, a query adds their ends) ======== */

/* The stats a flow key needs, prepared once per row: `flow`, then
 * `correlation_id`. */
static inline void ti_flow_set_init(xpv_stat_set *set, const xpv_hostset *hs, const xpv_trace_row *r) {
    int32_t ids[2] = {r->st_flow, r->st_corr};
    xpv_stat_set_init(set, r->pl, ids, 2);
}

/* Flow key of an event (0: none), as trace_viewer.c binds it: a `flow`
 * stat (bits 0-1 direction, 2-57 id; direction 0 means no flow), else a
 * `correlation_id` (host side launches, device side receives; ids are per
 * host).  *starter: 1 for the launching end (direction "out" only, or the
 * host side of a correlation id). */
static inline uint64_t ti_flow_key(const xpv_hostset *hs, const xpv_trace_row *r,
                                   const xpv_stat_set *set, const xpv_event *e, int *starter) {
    *starter = 0;
    if (r->is_counter || e->wire == XPV_NO_STATS || (r->st_flow < 0 && r->st_corr < 0)) return 0;
    const xpv_plane *pl = r->pl;
    xpv_stat st[2];
    uint32_t m = xpv_event_stats_in(pl, r->ln, e, set, st, NULL);
    if ((m & 1) && (st[0].kind == XPV_STAT_UINT || st[0].kind == XPV_STAT_INT)) {
        uint64_t v = st[0].v.u;
        unsigned dir = (unsigned)(v & 3);
        if (!dir) return 0;
        *starter = dir == 2;
        return ((v >> 2) & (((uint64_t)1 << 56) - 1)) | ((uint64_t)1 << 62);
    }
    int64_t c;
    if ((m & 2) && xpv_stat_as_int(&st[1], &c)) {
        *starter = r->is_host;
        return ((uint64_t)1 << 61) | ((uint64_t)(r->host & 0x3ff) << 40) |
               ((uint64_t)c & (((uint64_t)1 << 40) - 1));
    }
    return 0;
}

/* Rows that can hold launching ends / other ends of flows. */
static inline int ti_row_launches(const xpv_trace_row *r) {
    return !r->is_counter && (r->st_flow >= 0 || (r->is_host && r->st_corr >= 0));
}
static inline int ti_row_receives(const xpv_trace_row *r) {
    return !r->is_counter && (r->st_flow >= 0 || (!r->is_host && r->st_corr >= 0));
}

#endif
