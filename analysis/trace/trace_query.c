/*
 * trace_query.c - the query stage of a trace index (trace_index.h): one
 * group's events visible at a resolution (binary searches in the level
 * segments the resolution needs, then the rule re-applied at the exact
 * resolution), flow ends added to an answer, uids decoded.  Over every
 * group: trace_query_par.c; within a budget: trace_budget.c.
 */
#include "checked.h"
#include "group_events.h"
#include "trace_index.h"
#include "trace_index_int.h"
#include "derived_lines.h"
#include "enrich.h"
#include "par.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define LV XPV_TRACE_LEVELS
#define NONE INT64_MIN


typedef xpv_ti_cand cand;

static int cmp_cand(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->ev < y->ev ? -1 : x->ev > y->ev;
}

/* First position in idx[lo, hi) whose event ends after `t` (end' = start +
 * max(dur, 1); counters: start + 1).  Ends are sorted inside a segment. */
static uint64_t first_ending_after(const xpv_event *evs, const uint32_t *idx, uint64_t lo,
                                   uint64_t hi, int64_t t, int counter) {
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        const xpv_event *e = &evs[idx[mid]];
        int64_t d = counter ? 0 : ev_dur(e);
        int64_t end = e->start_ps + (d > 1 ? d : 1);
        if (end > t) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* First position in idx[lo, hi) whose event starts at or after `t`. */
static uint64_t first_starting_at(const xpv_event *evs, const uint32_t *idx, uint64_t lo,
                                  uint64_t hi, int64_t t) {
    /* Gallop from lo: cursors usually move a little. */
    uint64_t step = 1, base = lo;
    while (base + step < hi && evs[idx[base + step]].start_ps < t) {
        base += step;
        step *= 2;
    }
    if (lo < hi && evs[idx[lo]].start_ps >= t) return lo;
    lo = base;
    if (base + step < hi) hi = base + step + 1;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (evs[idx[mid]].start_ps < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static inline int cand_before(int64_t s1, uint32_t e1, int64_t s2, uint32_t e2) {
    return s1 < s2 || (s1 == s2 && e1 < e2);
}

/* Open-addressing set of nonzero 64-bit keys, growing at half full. */
typedef struct u64set {
    uint64_t *t;
    size_t mask, n;
} u64set;

static void u64set_init(u64set *s, size_t n) {
    size_t c = 16;
    while (c < 2 * n) c *= 2;
    s->t = xpv_xcalloc(c, sizeof *s->t);
    s->mask = c - 1;
    s->n = 0;
}

static inline size_t u64_hash(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

static int u64set_has(const u64set *s, uint64_t k) {
    size_t i = u64_hash(k) & s->mask;
    while (s->t[i]) {
        if (s->t[i] == k) return 1;
        i = (i + 1) & s->mask;
    }
    return 0;
}

static void u64set_add(u64set *s, uint64_t k) {
    if (2 * (s->n + 1) > s->mask + 1) {
        u64set big;
        u64set_init(&big, s->mask + 1);
        for (size_t i = 0; i <= s->mask; i++)
            if (s->t[i]) u64set_add(&big, s->t[i]);
        free(s->t);
        *s = big;
    }
    size_t i = u64_hash(k) & s->mask;
    while (s->t[i] && s->t[i] != k) i = (i + 1) & s->mask;
    if (!s->t[i]) s->n++;
    s->t[i] = k;
}

typedef struct ghit {
    uint32_t group;
    int64_t start;
    xpv_trace_hit h;
} ghit;

static int cmp_ghit(const void *a, const void *b) {
    const ghit *x = a, *y = b;
    if (x->group != y->group) return x->group < y->group ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->h.ev < y->h.ev ? -1 : x->h.ev > y->h.ev;
}

/* A visible launching end whose other end is still to be found. */
typedef struct launch {
    uint64_t key;
    int64_t start;
    uint32_t group, ev;
} launch;

/* Level of event `ev` (starting at `s`) in group `g`, or -1. */
static int level_of(const xpv_trace_index *ix, const xpv_trace_group *g, const xpv_event *evs,
                    uint32_t ev, int64_t s) {
    for (int L = 0; L < LV; L++) {
        uint64_t lo = g->off + g->seg[L], hi = g->off + g->seg[L + 1];
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (evs[ix->idx[mid]].start_ps < s) lo = mid + 1;
            else hi = mid;
        }
        for (; lo < g->off + g->seg[L + 1] && evs[ix->idx[lo]].start_ps == s; lo++)
            if (ix->idx[lo] == ev) return L;
    }
    return -1;
}

#define FLOW_SCAN 64    /* events looked at per level when chasing an end */

/* Phase 2 of a query: the flows whose launching end is among the `n` hits
 * get their other ends in the window added (the ones the rule hid).
 * Other ends lie at the launching end's level or coarser (promote_flows):
 * levels <= Lq are scanned over the window; for a launching end at a finer
 * level Ls (shown by the exact rule although the whole-trace levels put it
 * finer), levels (Lq, Ls] are searched from its start, FLOW_SCAN events
 * per level and group (an other end follows its launch closely).  `hg`
 * holds each hit's group; the result stays ordered by (group, start).
 * No end is added once the count reaches `limit` (the viewport budget).
 * Returns the new count. */
size_t xpv_ti_add_flow_ends(const xpv_hostset *hs, const xpv_trace_index *ix, int64_t start_ps,
                            int64_t end_ps, int Lq, xpv_trace_hit **phits, size_t *cap,
                            uint32_t **phg, size_t *gcap, size_t n, size_t limit) {
    xpv_trace_hit *hits = *phits;
    uint32_t *hg = *phg;
    u64set starters, seen, found;
    launch *ls = NULL;
    size_t nl = 0, lcap = 0;
    u64set_init(&starters, 16);
    xpv_stat_set set;
    uint32_t set_row = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        const xpv_trace_row *r = &ix->rows[hits[i].row];
        if (!ti_row_launches(r)) continue;
        if (hits[i].row != set_row) {
            ti_flow_set_init(&set, hs, r);
            set_row = hits[i].row;
        }
        int st;
        const xpv_event *e = xpv_trace_event(hs, r, hits[i].ev);
        uint64_t key = ti_flow_key(hs, r, &set, e, &st);
        if (!key || !st) continue;
        u64set_add(&starters, key);
        ls = xpv_ti_grow(ls, &lcap, nl + 1, sizeof *ls);
        ls[nl++] = (launch){key, e->start_ps, hg[i], hits[i].ev};
    }
    if (!nl) {
        free(starters.t);
        return n;
    }
    u64set_init(&seen, n);
    u64set_init(&found, nl);
    for (size_t i = 0; i < n; i++) u64set_add(&seen, xpv_trace_uid(hits[i]) + 1);
    size_t n0 = n;
#define ADD_HIT(GI, ROW, EV, KEY)                                           \
    do {                                                                    \
        if (n >= limit) break;                                              \
        xpv_trace_hit h_ = {(ROW), (EV)};                                   \
        u64set_add(&seen, xpv_trace_uid(h_) + 1);                           \
        u64set_add(&found, (KEY));                                          \
        hits = xpv_ti_grow(hits, cap, n + 1, sizeof *hits);                        \
        hg = xpv_ti_grow(hg, gcap, n + 1, sizeof *hg);                             \
        hg[n] = (GI);                                                       \
        hits[n++] = h_;                                                     \
    } while (0)
    /* 1. levels <= Lq over the window */
    for (uint32_t gi = 0; gi < ix->ngroups; gi++) {
        const xpv_trace_group *g = &ix->groups[gi];
        const xpv_trace_row *r = &ix->rows[g->row];
        if (!ti_row_receives(r)) continue;
        const xpv_event *evs = xpv_trace_event(hs, r, 0);
        ti_flow_set_init(&set, hs, r);
        for (int L = 0; L <= Lq && L < LV; L++) {
            uint64_t lo = g->off + g->seg[L], hi = g->off + g->seg[L + 1];
            for (uint64_t i = first_ending_after(evs, ix->idx, lo, hi, start_ps, 0); i < hi; i++) {
                uint32_t ev = ix->idx[i];
                if (evs[ev].start_ps >= end_ps) break;
                xpv_trace_hit h = {g->row, ev};
                if (u64set_has(&seen, xpv_trace_uid(h) + 1)) continue;
                int st;
                uint64_t key = ti_flow_key(hs, r, &set, &evs[ev], &st);
                if (!key || st || !u64set_has(&starters, key)) continue;
                ADD_HIT(gi, g->row, ev, key);
            }
        }
    }
    /* 2. launching ends at finer levels whose other end is still missing */
    for (size_t k = 0; k < nl; k++) {
        if (u64set_has(&found, ls[k].key)) continue;
        const xpv_trace_group *sg = &ix->groups[ls[k].group];
        int Ls = level_of(ix, sg, xpv_trace_event(hs, &ix->rows[sg->row], 0), ls[k].ev, ls[k].start);
        if (Ls <= Lq) continue;
        for (uint32_t gi = 0; gi < ix->ngroups && !u64set_has(&found, ls[k].key); gi++) {
            const xpv_trace_group *g = &ix->groups[gi];
            const xpv_trace_row *r = &ix->rows[g->row];
            if (!ti_row_receives(r)) continue;
            const xpv_event *evs = xpv_trace_event(hs, r, 0);
            ti_flow_set_init(&set, hs, r);
            for (int L = Lq + 1; L <= Ls; L++) {
                uint64_t lo = g->off + g->seg[L], hi = g->off + g->seg[L + 1];
                while (lo < hi) {
                    uint64_t mid = lo + (hi - lo) / 2;
                    if (evs[ix->idx[mid]].start_ps < ls[k].start) lo = mid + 1;
                    else hi = mid;
                }
                hi = g->off + g->seg[L + 1];
                for (uint64_t i = lo; i < hi && i < lo + FLOW_SCAN; i++) {
                    uint32_t ev = ix->idx[i];
                    if (evs[ev].start_ps >= end_ps) break;
                    int st;
                    uint64_t key = ti_flow_key(hs, r, &set, &evs[ev], &st);
                    if (key != ls[k].key || st) continue;
                    xpv_trace_hit h = {g->row, ev};
                    if (!u64set_has(&seen, xpv_trace_uid(h) + 1)) ADD_HIT(gi, g->row, ev, key);
                    break;
                }
            }
        }
    }
#undef ADD_HIT
    if (n > n0) {
        ghit *t = xpv_xmalloc(n * sizeof *t);
        for (size_t i = 0; i < n; i++) {
            const xpv_trace_row *r = &ix->rows[hits[i].row];
            t[i] = (ghit){hg[i], xpv_trace_event(hs, r, hits[i].ev)->start_ps, hits[i]};
        }
        qsort(t, n, sizeof *t, cmp_ghit);
        for (size_t i = 0; i < n; i++) {
            hits[i] = t[i].h;
            hg[i] = t[i].group;
        }
        free(t);
    }
    free(starters.t);
    free(seen.t);
    free(found.t);
    free(ls);
    *phits = hits;
    *phg = hg;
    return n;
}

/* Remove level L from the active list (its order is irrelevant). */
static void drop_level(int *act, int *nact, int L) {
    for (int a = 0; a < *nact; a++)
        if (act[a] == L) {
            act[a] = act[--*nact];
            return;
        }
}

/*
 * Per group, the rule is applied exactly over every event of the window:
 * the first overlapping event is visible; after a visible event ending at E
 * the next visible one is the first (in start order) with dur >= R or start
 * >= E + R.  Events with dur >= R all have a level <= Lq (the coarsest level
 * with resolution <= R), so levels <= Lq are scanned (few events), and the
 * finer levels are only jumped into with galloping searches for start >=
 * E + R.  The group's visible events are appended to `q` (with the group);
 * returns how many.
 */
size_t xpv_ti_query_group(xpv_ti_hits *q, const xpv_trace_index *ix, uint32_t gi,
                          int64_t start_ps, int64_t end_ps, int64_t res_ps) {
    int Lq = res_ps > 0 ? level_for(res_ps) : LV - 1;  /* RES(Lq) in (R/4, R] */
    uint64_t p[LV], ph[LV];
    const xpv_trace_group *g = &ix->groups[gi];
    const xpv_trace_row *r = &ix->rows[g->row];
    const xpv_event *evs = (*r->ln).events;
    const uint32_t *idx = ix->idx;
    int counter = r->is_counter;
    size_t nc = 0, nseg = 0, n0 = q->n;
    cand *cs = q->cs;
    cand before = {INT64_MIN, UINT32_MAX};
    for (int L = 0; L < LV; L++) {
        uint64_t lo = g->off + g->seg[L], hi = g->off + g->seg[L + 1];
        p[L] = ph[L] = hi;
        if (lo == hi) continue;
        uint64_t i = first_ending_after(evs, idx, lo, hi, start_ps, counter);
        if (counter && i > lo) {
            const xpv_event *e = &evs[idx[i - 1]];
            if (e->start_ps > before.start) before = (cand){e->start_ps, idx[i - 1]};
        }
        if (L > Lq) {
            p[L] = i;
            continue;
        }
        size_t nc0 = nc;
        for (; i < hi; i++) {
            const xpv_event *e = &evs[idx[i]];
            if (e->start_ps >= end_ps) break;
            cs = xpv_ti_grow(cs, &q->ccap, nc + 1, sizeof *cs);
            cs[nc++] = (cand){e->start_ps, idx[i]};
        }
        nseg += nc > nc0;
    }
    q->cs = cs;
    if (nseg > 1) qsort(cs, nc, sizeof *cs, cmp_cand);
    /* The finer levels that still have events ahead (most of the 25 are
     * empty or run out in a window): the loops below visit only those.
     * Their heads' starts and events are kept here, so that choosing the
     * next event and skipping touch an event only when its level moves
     * (events are far apart in memory: one cache miss each). */
    int act[LV], nact = 0;
    int64_t hs[LV];
    uint32_t he[LV];
    for (int L = Lq + 1; L < LV; L++)
        if (p[L] < ph[L]) {
            act[nact++] = L;
            he[L] = idx[p[L]];
            hs[L] = evs[he[L]].start_ps;
        }
    if (counter && before.ev != UINT32_MAX) xpv_ti_hits_add(q, gi, g->row, before.ev);
    size_t ci = 0;
    int64_t last_end = NONE;
    for (;;) {
        /* The next visible event: coarse cursor vs the fine heads. */
        int64_t bs = INT64_MAX;
        uint32_t be = UINT32_MAX;
        int from = -1;
        if (ci < nc) {
            bs = cs[ci].start;
            be = cs[ci].ev;
        }
        for (int a = 0; a < nact; a++) {
            int L = act[a];
            if (cand_before(hs[L], he[L], bs, be)) {
                bs = hs[L];
                be = he[L];
                from = L;
            }
        }
        if (be == UINT32_MAX || bs >= end_ps) break;
        xpv_ti_hits_add(q, gi, g->row, be);
        if (from < 0) {
            ci++;
        } else if (++p[from] < ph[from]) {
            he[from] = idx[p[from]];
            hs[from] = evs[he[from]].start_ps;
        } else {
            drop_level(act, &nact, from);
        }
        int64_t d = counter ? 0 : ev_dur(&evs[be]);
        if (xpv_add_i64(bs, d, NULL) > last_end) last_end = xpv_add_i64(bs, d, NULL);
        if (res_ps <= 0) continue;
        int64_t t = xpv_add_i64(last_end, res_ps, NULL);
        while (ci < nc && cs[ci].start < t && (counter || ev_dur(&evs[cs[ci].ev]) < res_ps))
            ci++;
        for (int a = 0; a < nact; a++) {
            int L = act[a];
            if (hs[L] >= t) continue;
            p[L] = first_starting_at(evs, idx, p[L], ph[L], t);
            if (p[L] < ph[L]) {
                he[L] = idx[p[L]];
                hs[L] = evs[he[L]].start_ps;
            } else {
                act[a--] = act[--nact];     /* ran out: order is irrelevant */
            }
        }
    }
    return q->n - n0;
}

void xpv_ti_hits_add(xpv_ti_hits *q, uint32_t group, uint32_t row, uint32_t ev) {
    q->hits = xpv_ti_grow(q->hits, &q->cap, q->n + 1, sizeof *q->hits);
    q->hg = xpv_ti_grow(q->hg, &q->gcap, q->n + 1, sizeof *q->hg);
    q->hg[q->n] = group;
    q->hits[q->n++] = (xpv_trace_hit){row, ev};
}

int xpv_trace_uid_decode(const xpv_hostset *hs, const xpv_trace_index *ix, uint64_t uid,
                         xpv_trace_hit *out) {
    uint64_t row = uid >> 32;
    uint32_t ev = (uint32_t)uid;
    if (row >= ix->nrows) return 0;
    const xpv_trace_row *r = &ix->rows[row];
    if (r->host >= hs->n) return 0;
    const xpv_profile *p = hs->profiles[r->host];
    if (r->plane >= p->nplanes) return 0;
    if (ev >= r->ln->nevents) return 0;
    out->row = (uint32_t)row;
    out->ev = ev;
    return 1;
}
