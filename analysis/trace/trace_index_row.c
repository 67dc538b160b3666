/*
 * trace_index_row.c - pass 2 of the trace index build: one row (a shown
 * line) at a time (trace_index_int.h: xpv_ti_index_row).
 *
 * Order (sort only when the file is not in (start, -dur) order), internal
 * events dropped, structural depth by a stack of end times, one group per
 * depth (counter rows: per counter), then per group one pass assigning
 * every event its coarsest visible level and a stable counting sort by
 * level.  A sorted row (the common case) is read once for its order check,
 * span, depths and counts, keeping one byte per event (its depth); its
 * idx entries are then placed from those bytes, so the row needs scratch
 * of one byte per event plus one group's (5 bytes per event), not copies
 * of the row.
 */
#include "trace_index_int.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define LV XPV_TRACE_LEVELS
#define NONE INT64_MIN

static int cmp_ord(const void *a, const void *b) {
    const ord_ev *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->negdur != y->negdur) return x->negdur < y->negdur ? -1 : 1;
    return x->ev < y->ev ? -1 : x->ev > y->ev;
}

/* Assign levels to a group's events (in start order, `n` of them) and
 * write them to `dst` ordered by (level, start); fills seg[].
 *
 * LE(k), the latest end of the events placed at levels <= k, never
 * decreases with k.  Levels from `top` up all hold the latest end `hi`
 * (an event that ends past every other sets every level from its own up),
 * so only the levels below `top` are stored: an event past `hi` writes
 * the levels between the old and the new top, not all the levels above
 * its own. */
static void assign_levels(const xpv_event *evs, const uint32_t *in, size_t n,
                          int counter, uint32_t *dst, uint32_t *seg, uint8_t *lvl) {
    int64_t last_end[LV], hi = NONE;
    int top = 0;
#define LE(k) ((k) >= top ? hi : last_end[k])
    uint32_t cnt[LV + 1];
    memset(cnt, 0, sizeof cnt);
    for (size_t j = 0; j < n; j++) {
        /* The group's events lie spread over the row: ask for one a few
         * iterations ahead (the loop is bound by these loads). */
        if (j + 8 < n) __builtin_prefetch(&evs[in[j + 8]]);
        const xpv_event *e = &evs[in[j]];
        int64_t s = e->start_ps, d = counter ? 0 : ev_dur(e), end = s + d;
        int L;
        int64_t le0 = LE(0);
        if (le0 == NONE) {
            L = 0;
        } else {
            int Ld = d >= 1 ? level_for(d) : LV;     /* visible by duration */
            int64_t gap0 = s - le0;
            L = Ld < LV ? Ld : LV - 1;
            /* The first k in [level_for(gap0), Ld) with s - LE(k) >=
             * RES(k).  As LE(k) never decreases with k, neither does
             * s - LE(k): when k fails with gap dk, every level coarser
             * than level_for(dk) fails too (its RES is above dk), and
             * none can pass once dk < 1. */
            if (gap0 >= 1) {
                int k = level_for(gap0);
                while (k < Ld && k < LV) {
                    int64_t dk = s - LE(k);
                    if (dk >= XPV_TRACE_RES(k)) {
                        L = k;
                        break;
                    }
                    if (dk < 1) break;
                    int nk = level_for(dk);
                    k = nk > k ? nk : k + 1;
                }
            }
        }
        lvl[j] = (uint8_t)L;
        cnt[L + 1]++;
        /* LE(k) = max(LE(k), end) for k >= L. */
        if (end > hi) {
            for (int k = top; k < L; k++) last_end[k] = hi;
            top = L;
            hi = end;
        } else {
            /* Levels from top up keep hi >= end; below it, once end is not
             * past LE(k) it is not past any later one either. */
            for (int k = L; k < top && end > last_end[k]; k++) last_end[k] = end;
        }
    }
#undef LE
    for (int L = 0; L < LV; L++) cnt[L + 1] += cnt[L];
    memcpy(seg, cnt, sizeof cnt);
    for (size_t j = 0; j < n; j++) dst[cnt[lvl[j]]++] = in[j];
}


static xpv_trace_group *new_group(builder *b, uint32_t row, uint32_t key) {
    xpv_trace_index *ix = b->ix;
    ix->groups = xpv_ti_grow(ix->groups, &b->cap_groups, ix->ngroups + 1, sizeof *ix->groups);
    xpv_trace_group *g = &ix->groups[ix->ngroups++];
    memset(g, 0, sizeof *g);
    g->row = row;
    g->key = key;
    return g;
}

void xpv_ti_add_step(builder *b, int64_t s, int64_t d, uint32_t row, uint32_t ev) {
    xpv_trace_index *ix = b->ix;
    if (ix->nsteps - b->steps0 >= MAX_STEPS) return;
    ix->steps = xpv_ti_grow(ix->steps, &b->cap_steps, ix->nsteps + 1, sizeof *ix->steps);
    ix->steps[ix->nsteps++] = (xpv_trace_step){s, d, row, ev};
}

/* The kept (not dropped) events of a row in (start, -dur) order with the
 * key of their group: the line's events in file order when they are
 * sorted so (nothing copied), else b->keep.  The depth is recomputed on
 * each pass (a stack of the enclosing events' ends), so a row needs no
 * per-event scratch beyond its idx entries and one group's. */
typedef struct kept_iter {
    builder *b;
    const xpv_event *evs;
    const uint8_t *dropped;
    const uint32_t *keep;      /* NULL: file order, dropped events skipped */
    size_t n, pos;             /* events (keep NULL) or entries of keep */
    size_t sp;                 /* depth: entries of b->stack */
    int counter;               /* key: the metadata index, not the depth */
} kept_iter;

static void kept_rewind(kept_iter *it) {
    it->pos = 0;
    it->sp = 0;
}

/* The next kept event in *ev and its group key in *key; 0 at the end. */
static inline int kept_next(kept_iter *it, uint32_t *ev, uint32_t *key) {
    uint32_t i;
    if (it->keep) {
        if (it->pos >= it->n) return 0;
        i = it->keep[it->pos++];
    } else {
        do {
            if (it->pos >= it->n) return 0;
            i = (uint32_t)it->pos++;
        } while (it->dropped[it->evs[i].meta]);
    }
    const xpv_event *e = &it->evs[i];
    *ev = i;
    if (it->counter) {
        *key = e->meta;
        return 1;
    }
    builder *b = it->b;
    while (it->sp && b->stack[it->sp - 1] <= e->start_ps) it->sp--;
    *key = (uint32_t)it->sp;
    b->stack = xpv_ti_grow(b->stack, &b->cap_stack, it->sp + 1, sizeof *b->stack);
    b->stack[it->sp++] = e->start_ps + ev_dur(e);
    return 1;
}

/* Whether the events are in (start asc, dur desc) order already. */
static int row_sorted(const xpv_event *evs, size_t n) {
    for (size_t i = 1; i < n; i++) {
        const xpv_event *a = &evs[i - 1], *c = &evs[i];
        if (c->start_ps < a->start_ps || (c->start_ps == a->start_ps && ev_dur(c) > ev_dur(a)))
            return 0;
    }
    return 1;
}

/* b->keep <- the kept events of an unsorted row in (start, -dur, index)
 * order; returns how many. */
static size_t sort_kept(builder *b, const xpv_event *evs, size_t n, const uint8_t *dropped) {
    size_t c = b->cap_scratch;
    b->ord = xpv_ti_grow(b->ord, &c, n, sizeof *b->ord);
    c = b->cap_scratch;
    b->keep = xpv_ti_grow(b->keep, &c, n, sizeof *b->keep);
    b->cap_scratch = c;
    for (size_t i = 0; i < n; i++)
        b->ord[i] = (ord_ev){evs[i].start_ps, -ev_dur(&evs[i]), (uint32_t)i};
    qsort(b->ord, n, sizeof *b->ord, cmp_ord);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!dropped[evs[b->ord[i].ev].meta]) b->keep[m++] = b->ord[i].ev;
    return m;
}

/* One more event of group key `key` in b->gcount[key + 1]; *nk is the
 * number of keys so far (the entries past it are zeroed as they come). */
static inline void count_key(builder *b, uint32_t key, uint32_t *nk) {
    if (key + 1 > *nk) {
        b->gcount = xpv_ti_grow(b->gcount, &b->cap_gcount, (size_t)key + 2, sizeof *b->gcount);
        memset(b->gcount + *nk + 1, 0, ((size_t)key + 1 - *nk) * sizeof *b->gcount);
        *nk = key + 1;
    }
    b->gcount[key + 1]++;
}

/* Pass 1 of a row: counts per group key into b->gcount[key + 1] (the
 * keys' count in *ngk) and the span into ix; returns the kept events. */
static size_t count_keys(kept_iter *it, xpv_trace_index *ix, uint32_t *ngk) {
    builder *b = it->b;
    size_t m = 0;
    uint32_t ev, key, nk = 0;
    b->gcount = xpv_ti_grow(b->gcount, &b->cap_gcount, 1, sizeof *b->gcount);
    b->gcount[0] = 0;
    kept_rewind(it);
    while (kept_next(it, &ev, &key)) {
        const xpv_event *e = &it->evs[ev];
        int64_t s = e->start_ps, end = s + (it->counter ? 0 : ev_dur(e));
        if (s < ix->min_ps) ix->min_ps = s;
        if (end > ix->max_ps) ix->max_ps = end;
        count_key(b, key, &nk);
        m++;
    }
    *ngk = nk;
    return m;
}

/* b->dep entries: the depth of an event below DEP_DEEP; dropped events. */
#define DEP_DEEP 0xfe
#define DEP_DROPPED 0xff

/* Pass 1 of a row that is not a counter row, in one read of its events:
 * 0 at the first event out of (start asc, dur desc) order (nothing
 * counted then).  Else as count_keys (*m the kept events), and b->dep[i]
 * holds event i's depth (DEP_DEEP from there on: *deep set, the depths
 * are recomputed when placed), or DEP_DROPPED. */
static int count_sorted(kept_iter *it, xpv_trace_index *ix, size_t *m, uint32_t *ngk,
                        int *deep) {
    builder *b = it->b;
    const xpv_event *evs = it->evs;
    size_t n = it->n, kept = 0, sp = 0;
    uint32_t nk = 0;
    int64_t lo = ix->min_ps, hi = ix->max_ps;
    b->dep = xpv_ti_grow(b->dep, &b->cap_dep, n, 1);
    b->gcount = xpv_ti_grow(b->gcount, &b->cap_gcount, 1, sizeof *b->gcount);
    b->gcount[0] = 0;
    for (size_t i = 0; i < n; i++) {
        const xpv_event *e = &evs[i];
        int64_t s = e->start_ps, d = ev_dur(e);
        if (i && (s < evs[i - 1].start_ps || (s == evs[i - 1].start_ps && d > ev_dur(&evs[i - 1]))))
            return 0;
        if (it->dropped[e->meta]) {
            b->dep[i] = DEP_DROPPED;
            continue;
        }
        if (s < lo) lo = s;
        if (s + d > hi) hi = s + d;
        while (sp && b->stack[sp - 1] <= s) sp--;
        b->dep[i] = sp < DEP_DEEP ? (uint8_t)sp : DEP_DEEP;
        if (sp >= DEP_DEEP) *deep = 1;
        count_key(b, (uint32_t)sp, &nk);
        b->stack = xpv_ti_grow(b->stack, &b->cap_stack, sp + 1, sizeof *b->stack);
        b->stack[sp++] = s + d;
        kept++;
    }
    ix->min_ps = lo;
    ix->max_ps = hi;
    *m = kept;
    *ngk = nk;
    return 1;
}

static void index_row(builder *b, uint32_t ri, const xpv_plane *pl, const xpv_line *ln,
                      const uint8_t *dropped) {
    xpv_trace_index *ix = b->ix;
    xpv_trace_row *row = &ix->rows[ri];
    size_t n = ln->nevents;
    const xpv_event *evs = ln->events;
    kept_iter it = {.b = b, .evs = evs, .dropped = dropped, .n = n, .counter = row->is_counter};
    /* 1. order: file order when sorted by (start asc, dur desc).
     * 2. group key per event (depth, or the counter's metadata index):
     * counts, then one group per key. */
    uint32_t ngk = 0, ev, key;
    size_t m = 0;
    int deep = 0, fast = !row->is_counter && count_sorted(&it, ix, &m, &ngk, &deep);
    if (!fast) {
        if (!row->is_counter || !row_sorted(evs, n)) {
            it.n = sort_kept(b, evs, n, dropped);
            it.keep = b->keep;
        }
        m = count_keys(&it, ix, &ngk);
    }
    ix->ndropped += n - m;
    row->group0 = ix->ngroups;
    row->nevents = m;
    if (!m) return;
    if (row->is_counter) ix->ncounter += m;
    for (uint32_t k = 0; k < ngk; k++) b->gcount[k + 1] += b->gcount[k];
    uint64_t base = ix->nidx;
    size_t gmax = 0;
    for (uint32_t k = 0; k < ngk; k++) {
        uint32_t cnt = b->gcount[k + 1] - b->gcount[k];
        if (!cnt) continue;
        if (cnt > gmax) gmax = cnt;
        xpv_trace_group *g = new_group(b, ri, k);
        g->off = base + b->gcount[k];
    }
    /* 3. counting sort by key (stable: keeps start order) into the row's
     * idx entries. */
    uint32_t *out = ix->idx + base;
    if (fast && !deep) {
        const uint8_t *dep = b->dep;
        for (size_t i = 0; i < n; i++)
            if (dep[i] != DEP_DROPPED) out[b->gcount[dep[i]]++] = (uint32_t)i;
    } else {
        kept_rewind(&it);
        while (kept_next(&it, &ev, &key)) out[b->gcount[key]++] = ev;
    }
    /* 4. levels per group, through a scratch of the largest group. */
    if (gmax > b->cap_group) {
        size_t c = b->cap_group;
        b->tmp = xpv_ti_grow(b->tmp, &c, gmax, sizeof *b->tmp);
        c = b->cap_group;
        b->lvl = xpv_ti_grow(b->lvl, &c, gmax, 1);
        b->cap_group = c;
    }
    for (uint32_t gi = row->group0; gi < ix->ngroups; gi++) {
        xpv_trace_group *g = &ix->groups[gi];
        size_t cnt = (gi + 1 < ix->ngroups ? ix->groups[gi + 1].off : base + m) - g->off;
        assign_levels(evs, ix->idx + g->off, cnt, row->is_counter, b->tmp, g->seg, b->lvl);
        memcpy(ix->idx + g->off, b->tmp, cnt * sizeof *b->tmp);
    }
    row->ngroups = ix->ngroups - row->group0;
    ix->nidx += m;

    /* 5. step markers from lines named "Steps". */
    if (!row->is_counter && xpv_str_eq(ln->name, "Steps") && ix->groups[row->group0].key == 0) {
        kept_rewind(&it);
        while (kept_next(&it, &ev, &key))
            if (key == 0) xpv_ti_add_step(b, evs[ev].start_ps, ev_dur(&evs[ev]), ri, ev);
    }
    (void)pl;
}

_Atomic uint64_t xpv_ti_scratch_peak;

/* Index the events of row `ri` (see trace_index_int.h), then note the
 * scratch its builder holds. */
void xpv_ti_index_row(builder *b, uint32_t ri, const xpv_plane *pl, const xpv_line *ln,
                      const uint8_t *dropped) {
    index_row(b, ri, pl, ln, dropped);
    uint64_t n = (uint64_t)b->cap_scratch * (sizeof *b->ord + sizeof *b->keep) +
                 (uint64_t)b->cap_group * (sizeof *b->tmp + 1) + b->cap_dep +
                 (uint64_t)b->cap_stack * sizeof *b->stack +
                 (uint64_t)b->cap_gcount * sizeof *b->gcount;
    uint64_t cur = atomic_load(&xpv_ti_scratch_peak);
    while (n > cur && !atomic_compare_exchange_weak(&xpv_ti_scratch_peak, &cur, n)) {
    }
}
