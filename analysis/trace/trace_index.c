/*
 * trace_index.c - per-host-set trace event index with levels of detail
 * (see trace_index.h for the layout and the visibility rule).
 *
 * Build: the rows and processes of the host set, then each row indexed
 * (trace_index_row.c; rows on several threads: trace_index_par.c), then
 * flow promotion and the step markers.  Query: per group,
 * binary searches in the level segments the resolution needs, then the
 * rule re-applied at the exact resolution.
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

/* ==== Names ============================================================= */

static const char *const internal_names[] = {
    "MemoryAllocation", "MemoryDeallocation",
    "PrefetchProduce", "PrefetchConsume",
    "ParallelInterleaveProduce", "ParallelInterleaveConsume",
    "ParallelMapProduce", "ParallelMapConsume",
    "MapAndBatchProduce", "MapAndBatchConsume",
    "ParseExampleProduce", "ParseExampleConsume",
    "ParallelBatchProduce", "ParallelBatchConsume",
};

int xpv_trace_is_internal(xpv_str name) {
    for (size_t i = 0; i < sizeof internal_names / sizeof internal_names[0]; i++)
        if (xpv_str_eq(name, internal_names[i])) return 1;
    return 0;
}

/* ==== Plane selection (pid mapping) ===================================== */

static int has_prefix(xpv_str s, const char *p) { return xpv_str_has_prefix(s, p); }

/* pid of every plane (-1: not shown).  The first plane named exactly
 * `/host:CPU` gets 701, every other `/host:CPU*` plane 702, 703... in plane
 * order; GPU planes 1 + id (TPU planes when there is no GPU plane), clamped
 * to 1 beyond 500; `/device:CUSTOM:*` 501 + id. */
static void plane_pids(const xpv_profile *p, int64_t *pids) {
    int any_gpu = 0;
    int64_t exact = -1;
    for (uint32_t i = 0; i < p->nplanes; i++) {
        if (has_prefix(p->planes[i].name, "/device:GPU:")) any_gpu = 1;
        if (exact < 0 && xpv_str_eq(p->planes[i].name, "/host:CPU")) exact = i;
    }
    int64_t next_host = exact >= 0 ? 702 : 701;
    for (uint32_t i = 0; i < p->nplanes; i++) {
        const xpv_plane *pl = &p->planes[i];
        int64_t pid = -1;
        if ((int64_t)i == exact) {
            pid = 701;
        } else if (has_prefix(pl->name, "/host:CPU")) {
            pid = next_host++;
        } else if (has_prefix(pl->name, any_gpu ? "/device:GPU:" : "/device:TPU:")) {
            pid = pl->id + 1;
            if (pid > 500 || pid < 1) pid = 1;
        } else if (has_prefix(pl->name, "/device:CUSTOM:")) {
            pid = 501 + pl->id;
        }
        pids[i] = pid;
    }
}

/* ==== Build ============================================================= */

/* (One row at a time: trace_index_row.c.) */

/* ==== Flows ============================================================= */

/*
 * XProf decides a flow's visibility by its first event (§2.12): when the
 * launching end is visible, the other ends are shown too.  At build time
 * every other end of a flow is moved up to its launching end's level (a
 * coarser level never hides anything: the query applies the rule exactly
 * over all levels), so at a resolution where the launching end is a
 * candidate, so are its other ends; the query then adds the ones the rule
 * hid (xpv_trace_query, phase 2).
 */

/* The stats a flow key needs, prepared once per row: `flow`, then
 * `correlation_id`. */
static void flow_set_init(xpv_stat_set *set, const xpv_hostset *hs, const xpv_trace_row *r) {
    int32_t ids[2] = {r->st_flow, r->st_corr};
    xpv_stat_set_init(set, r->pl, ids, 2);
}

/* Flow key of an event (0: none), as trace_viewer.c binds it: a `flow`
 * stat (bits 0-1 direction, 2-57 id; direction 0 means no flow), else a
 * `correlation_id` (host side launches, device side receives; ids are per
 * host).  *starter: 1 for the launching end (direction "out" only, or the
 * host side of a correlation id). */
static uint64_t flow_key(const xpv_hostset *hs, const xpv_trace_row *r, const xpv_stat_set *set,
                         const xpv_event *e, int *starter) {
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

typedef struct lv_ev {
    int64_t start;
    uint32_t ev;
    uint8_t level;
} lv_ev;

static int cmp_lv_ev(const void *a, const void *b) {
    const lv_ev *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->ev < y->ev ? -1 : x->ev > y->ev;
}

static inline size_t flow_hash(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

/* key -> coarsest level of a launching end: a direct table when the keys
 * are dense (correlation ids of one host are), else open addressing. */
typedef struct level_map {
    uint64_t base, *keys;
    uint8_t *lv;
    size_t size;                    /* direct: range; hash: capacity (pow2) */
    int direct;
} level_map;

typedef struct key_lv {
    uint64_t key;
    uint8_t level;
} key_lv;

/* The launching ends found by one thread. */
typedef struct kv_part {
    const key_lv *kv;
    size_t n;
} kv_part;

/* The map of the launching ends of `np` parts (read in place: no copy of
 * them all; their order does not matter, each key keeps its coarsest
 * level). */
static void level_map_build(level_map *m, const kv_part *parts, int np) {
    uint64_t lo = UINT64_MAX, hi = 0;
    size_t n = 0;
    for (int p = 0; p < np; p++) {
        n += parts[p].n;
        for (size_t i = 0; i < parts[p].n; i++) {
            if (parts[p].kv[i].key < lo) lo = parts[p].kv[i].key;
            if (parts[p].kv[i].key > hi) hi = parts[p].kv[i].key;
        }
    }
    memset(m, 0, sizeof *m);
    if (hi - lo < 8 * (uint64_t)n + 4096) {
        m->direct = 1;
        m->base = lo;
        m->size = (size_t)(hi - lo + 1);
        m->lv = xpv_xmalloc(m->size);
        memset(m->lv, 0xff, m->size);
        for (int p = 0; p < np; p++)
            for (size_t i = 0; i < parts[p].n; i++) {
                uint8_t *l = &m->lv[parts[p].kv[i].key - lo];
                if (parts[p].kv[i].level < *l) *l = parts[p].kv[i].level;
            }
        return;
    }
    m->size = 16;
    while (m->size < 2 * n) m->size *= 2;
    m->keys = xpv_xcalloc(m->size, sizeof *m->keys);
    m->lv = xpv_xmalloc(m->size);
    for (int p = 0; p < np; p++)
        for (size_t i = 0; i < parts[p].n; i++) {
            const key_lv *kv = &parts[p].kv[i];
            size_t h = flow_hash(kv->key) & (m->size - 1);
            while (m->keys[h] && m->keys[h] != kv->key) h = (h + 1) & (m->size - 1);
            if (!m->keys[h] || kv->level < m->lv[h]) m->lv[h] = kv->level;
            m->keys[h] = kv->key;
        }
}

/* Level of the launching end of `key`, or 0xff. */
static inline uint8_t level_map_get(const level_map *m, uint64_t key) {
    if (m->direct) return key >= m->base && key - m->base < m->size ? m->lv[key - m->base] : 0xff;
    size_t h = flow_hash(key) & (m->size - 1);
    while (m->keys[h]) {
        if (m->keys[h] == key) return m->lv[h];
        h = (h + 1) & (m->size - 1);
    }
    return 0xff;
}

/* Rows that can hold launching ends / other ends of flows. */
static int row_launches(const xpv_trace_row *r) {
    return !r->is_counter && (r->st_flow >= 0 || (r->is_host && r->st_corr >= 0));
}
static int row_receives(const xpv_trace_row *r) {
    return !r->is_counter && (r->st_flow >= 0 || (!r->is_host && r->st_corr >= 0));
}

/* Order `v` by (start, ev).  Its starts never decrease (as assign_levels
 * leaves them), so only runs of equal starts need sorting; anything else
 * is sorted whole. */
static void sort_equal_starts(lv_ev *v, size_t n) {
    for (size_t i = 1; i < n; i++)
        if (v[i].start < v[i - 1].start) {
            qsort(v, n, sizeof *v, cmp_lv_ev);
            return;
        }
    for (size_t a = 0; a < n;) {
        size_t b = a + 1;
        while (b < n && v[b].start == v[a].start) b++;
        if (b - a > 16) {
            qsort(v + a, b - a, sizeof *v, cmp_lv_ev);
        } else {
            for (size_t i = a + 1; i < b; i++) {
                lv_ev x = v[i];
                size_t j = i;
                while (j > a && v[j - 1].ev > x.ev) {
                    v[j] = v[j - 1];
                    j--;
                }
                v[j] = x;
            }
        }
        a = b;
    }
}

/* Move the events of group `g` to their new levels: nlv[ev] for event `ev`
 * of the row (0xff: it stays).  A level that receives events ends up
 * ordered by (start, ev); the others keep their order.  The events staying
 * in a level are already in start order, so the newcomers (sorted) are
 * merged into them.  Scratch buffers are kept across calls. */
typedef struct promote_buf {
    lv_ev *inc, *st;
    uint32_t *out;
    size_t icap, scap, ocap;
} promote_buf;

static void promote_group(xpv_trace_index *ix, const xpv_event *evs, xpv_trace_group *g,
                          const uint8_t *nlv, promote_buf *pb) {
    uint32_t cnt = g->seg[LV], *gidx = ix->idx + g->off;
    uint32_t ic[LV + 1], seg[LV + 1];
    memset(ic, 0, sizeof ic);
    size_t ninc = 0;
    for (uint32_t i = 0; i < cnt; i++) {
        uint8_t l = nlv[gidx[i]];
        if (l != 0xff) {
            ic[l + 1]++;
            ninc++;
        }
    }
    if (!ninc) return;
    for (int L = 0; L < LV; L++) ic[L + 1] += ic[L];
    pb->inc = xpv_ti_grow(pb->inc, &pb->icap, ninc, sizeof *pb->inc);
    pb->out = xpv_ti_grow(pb->out, &pb->ocap, cnt, sizeof *pb->out);
    lv_ev *inc = pb->inc;
    uint32_t *out = pb->out;
    {
        uint32_t c[LV + 1];
        memcpy(c, ic, sizeof c);
        for (uint32_t i = 0; i < cnt; i++) {
            uint32_t ev = gidx[i];
            uint8_t l = nlv[ev];
            if (l != 0xff) inc[c[l]++] = (lv_ev){evs[ev].start_ps, ev, l};
        }
    }
    uint32_t o = 0;
    for (int L = 0; L < LV; L++) {
        seg[L] = o;
        uint32_t i0 = g->seg[L], i1 = g->seg[L + 1];
        size_t na = ic[L + 1] - ic[L];
        if (!na) {
            for (uint32_t i = i0; i < i1; i++)
                if (nlv[gidx[i]] == 0xff) out[o++] = gidx[i];
            continue;
        }
        lv_ev *a = inc + ic[L];
        qsort(a, na, sizeof *a, cmp_lv_ev);
        pb->st = xpv_ti_grow(pb->st, &pb->scap, i1 - i0, sizeof *pb->st);
        lv_ev *st = pb->st;
        size_t ns = 0;
        for (uint32_t i = i0; i < i1; i++) {
            uint32_t ev = gidx[i];
            if (nlv[ev] == 0xff) st[ns++] = (lv_ev){evs[ev].start_ps, ev, (uint8_t)L};
        }
        sort_equal_starts(st, ns);
        size_t x = 0, y = 0;
        while (x < ns && y < na) {
            if (cmp_lv_ev(&st[x], &a[y]) < 0)
                out[o++] = st[x++].ev;
            else
                out[o++] = a[y++].ev;
        }
        while (x < ns) out[o++] = st[x++].ev;
        while (y < na) out[o++] = a[y++].ev;
    }
    seg[LV] = o;
    memcpy(g->seg, seg, sizeof seg);
    memcpy(gidx, out, (size_t)cnt * sizeof *out);
}

/* Move every other end of a flow up to the level of its launching end
 * (the coarsest one when a flow has several).  Flows without a launching
 * end are left alone: nothing decides for them.  Pass 1 reads the flow
 * keys of the rows that launch, pass 2 those of the events that could
 * move (finer than the coarsest launching end) on the rows that receive,
 * and moves them row by row (a row's decisions depend only on its own
 * levels and on pass 1).  Both passes read event stats, the costly part:
 * their rows are shared out to threads (flow_run), and the result does not
 * depend on who did which row (pass 1 keeps the coarsest level per key,
 * pass 2 writes only the row's own groups and idx entries). */
typedef struct flow_pool {
    xpv_trace_index *ix;
    const xpv_hostset *hs;
    const uint32_t *order;          /* rows, most events first */
    int pass, lrecv;
    uint8_t lmin;                   /* pass 2: coarsest launching end */
    const level_map *map;           /* pass 2 */
    _Atomic uint32_t next;
} flow_pool;

/* One thread's buffers and pass-1 findings. */
typedef struct flow_worker {
    flow_pool *pool;
    uint8_t *lvl, *nlv;             /* per event of the row: level, new level */
    size_t mcap;
    promote_buf pb;
    key_lv *kv;                     /* pass 1: (key, level) of launching ends */
    size_t nkv, kcap;
    uint8_t lmin;
} flow_worker;

static void flow_row(flow_worker *w, uint32_t ri) {
    const flow_pool *fp = w->pool;
    xpv_trace_index *ix = fp->ix;
    const int pass = fp->pass;
    const xpv_trace_row *r = &ix->rows[ri];
    if (!r->ngroups || !(pass ? row_receives(r) : row_launches(r))) return;
    const xpv_line *ln = &(*r->ln);
    size_t n = ln->nevents;
    if (n > w->mcap) {
        size_t c = w->mcap;
        w->lvl = xpv_ti_grow(w->lvl, &c, n, 1);
        c = w->mcap;
        w->nlv = xpv_ti_grow(w->nlv, &c, n, 1);
        w->mcap = c;
    }
    uint8_t *lvl = w->lvl, *nlv = w->nlv;
    memset(lvl, 0xff, n);
    for (uint32_t gi = r->group0; gi < r->group0 + r->ngroups; gi++) {
        const xpv_trace_group *g = &ix->groups[gi];
        const uint32_t *gidx = ix->idx + g->off;
        for (int L = 0; L < LV; L++)
            for (uint32_t i = g->seg[L]; i < g->seg[L + 1]; i++) lvl[gidx[i]] = (uint8_t)L;
    }
    if (pass) memset(nlv, 0xff, n);
    size_t moved = 0;
    xpv_stat_set set;
    flow_set_init(&set, fp->hs, r);
    for (size_t ev = 0; ev < n; ev++) {
        uint8_t L = lvl[ev];
        if (L == 0xff || (pass ? L <= fp->lmin : L >= fp->lrecv)) continue;
        int starter;
        uint64_t key = flow_key(fp->hs, r, &set, &ln->events[ev], &starter);
        if (!key || starter != !pass) continue;
        if (!pass) {
            w->kv = xpv_ti_grow(w->kv, &w->kcap, w->nkv + 1, sizeof *w->kv);
            w->kv[w->nkv++] = (key_lv){key, L};
            if (L < w->lmin) w->lmin = L;
            continue;
        }
        uint8_t ls = level_map_get(fp->map, key);
        if (ls >= L) continue;
        nlv[ev] = ls;
        moved++;
    }
    if (!moved) return;
    const xpv_event *evs = xpv_trace_event(fp->hs, r, 0);
    for (uint32_t gi = r->group0; gi < r->group0 + r->ngroups; gi++)
        promote_group(ix, evs, &ix->groups[gi], nlv, &w->pb);
}

static void flow_run(void *arg) {
    flow_worker *w = arg;
    for (;;) {
        uint32_t i = atomic_fetch_add(&w->pool->next, 1);
        if (i >= w->pool->ix->nrows) break;
        flow_row(w, w->pool->order[i]);
    }
}

/* Rows by events, most first (ties by row), so that threads end together. */
typedef struct flow_size {
    uint64_t n;
    uint32_t row;
} flow_size;

static int cmp_flow_size(const void *a, const void *b) {
    const flow_size *x = a, *y = b;
    if (x->n != y->n) return x->n > y->n ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

static void promote_flows(xpv_trace_index *ix, const xpv_hostset *hs) {
    if (!ix->nrows) return;
    /* A launching end at the finest level of the receiving rows or finer
     * moves nothing (no other end lies finer than it): the first pass skips
     * it without reading its stats. */
    int lrecv = -1;
    uint64_t total = 0;
    for (uint32_t ri = 0; ri < ix->nrows; ri++) {
        const xpv_trace_row *r = &ix->rows[ri];
        total += r->ln->nevents;
        if (!r->ngroups || !row_receives(r)) continue;
        for (uint32_t gi = r->group0; gi < r->group0 + r->ngroups; gi++)
            for (int L = LV - 1; L > lrecv; L--)
                if (ix->groups[gi].seg[L + 1] > ix->groups[gi].seg[L]) {
                    lrecv = L;
                    break;
                }
    }
    int threads = xpv_ti_thread_count(ix->nrows, total);
    flow_size *sz = xpv_xmalloc(ix->nrows * sizeof *sz);
    for (uint32_t ri = 0; ri < ix->nrows; ri++) sz[ri] = (flow_size){ix->rows[ri].ln->nevents, ri};
    if (threads > 1) qsort(sz, ix->nrows, sizeof *sz, cmp_flow_size);
    uint32_t *order = xpv_xmalloc(ix->nrows * sizeof *order);
    for (uint32_t ri = 0; ri < ix->nrows; ri++) order[ri] = sz[ri].row;
    free(sz);
    flow_worker *w = xpv_xcalloc((size_t)threads, sizeof *w);
    void **args = xpv_xcalloc((size_t)threads, sizeof *args);
    flow_pool fp = {.ix = ix, .hs = hs, .order = order, .lrecv = lrecv};
    for (int t = 0; t < threads; t++) {
        w[t].pool = &fp;
        w[t].lmin = LV;
        args[t] = &w[t];
    }
    level_map map;
    memset(&map, 0, sizeof map);
    kv_part *parts = xpv_xcalloc((size_t)threads, sizeof *parts);
    for (int pass = 0; pass < 2; pass++) {
        fp.pass = pass;
        atomic_store(&fp.next, 0);
        if (threads > 1) xpv_par_many(flow_run, args, threads);
        else flow_run(&w[0]);
        if (pass) break;
        /* The launching ends of all threads, read where they are, then
         * released before pass 2. */
        uint8_t lmin = LV;
        size_t nkv = 0;
        for (int t = 0; t < threads; t++) {
            parts[t] = (kv_part){w[t].kv, w[t].nkv};
            nkv += w[t].nkv;
            if (w[t].lmin < lmin) lmin = w[t].lmin;
        }
        if (nkv) level_map_build(&map, parts, threads);
        for (int t = 0; t < threads; t++) {
            free(w[t].kv);
            w[t].kv = NULL;
        }
        if (!nkv) break;
        fp.lmin = lmin;
        fp.map = &map;
    }
    free(parts);
    free(map.keys);
    free(map.lv);
    for (int t = 0; t < threads; t++) {
        free(w[t].kv);
        free(w[t].lvl);
        free(w[t].nlv);
        free(w[t].pb.inc);
        free(w[t].pb.st);
        free(w[t].pb.out);
    }
    free(w);
    free(args);
    free(order);
}


static int cmp_step(const void *a, const void *b) {
    const xpv_trace_step *x = a, *y = b;
    return x->start_ps < y->start_ps ? -1 : x->start_ps > y->start_ps;
}

typedef struct row_key {
    int64_t pid, tid;
    uint32_t order;
} row_key;

/* An absent string (a line or plane with no name field: NULL, 0) is "". */
static char *dup_str(xpv_arena *a, xpv_str s) {
    return xpv_arena_strndup(a, s.len ? s.ptr : "", s.len);
}

/* Comparisons made by the layout sorts (qsort has no context argument;
 * per thread, as several threads build indexes). */
static _Thread_local uint64_t *layout_cmp_count;

/* (pid, tid), then original order: a total order, so qsort is stable. */
static int cmp_row_key(const void *a, const void *b) {
    const row_key *x = a, *y = b;
    if (layout_cmp_count) ++*layout_cmp_count;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

typedef struct proc_key {
    int64_t pid;
    uint32_t order;
} proc_key;

static int cmp_proc_key(const void *a, const void *b) {
    const proc_key *x = a, *y = b;
    if (layout_cmp_count) ++*layout_cmp_count;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Escape every event metadata's shown name once (the renderer copies). */
static void json_names(xpv_arena *a, const xpv_plane *pl, xpv_trace_proc *pr) {
    uint32_t n = pl->nevent_meta;
    pr->jname = xpv_arena_calloc(a, n ? n : 1, sizeof *pr->jname);
    pr->jname_len = xpv_arena_calloc(a, n ? n : 1, sizeof *pr->jname_len);
    xpv_buf b;
    xpv_buf_init(&b);
    for (uint32_t k = 0; k < n; k++) {
        const xpv_event_meta *m = &pl->event_meta[k];
        xpv_str s = m->display_name.len ? m->display_name : m->name;
        xpv_buf_reset(&b);
        xpv_buf_json_str(&b, s.ptr, s.len);
        pr->jname[k] = xpv_arena_strndup(a, b.data, b.len);
        pr->jname_len[k] = (uint32_t)b.len;
    }
    xpv_buf_free(&b);
}

/* Pass 1 of a build (and of a load): processes and rows of the host set,
 * ordered, with their names, pids/tids and stat ids; group ranges are left
 * empty.  Returns the number of events of the shown lines (an upper bound
 * of the indexed events). */
uint64_t xpv_ti_layout(builder *bd, const xpv_hostset *hs) {
    xpv_trace_index *ix = bd->ix;
    uint64_t total = 0;
    for (size_t h = 0; h < hs->n; h++) {
        const xpv_profile *p = hs->profiles[h];
        if (!p || !p->nplanes) continue;
        int64_t *pids = xpv_xcalloc(p->nplanes, sizeof *pids);
        plane_pids(p, pids);
        if (!ix->derived) {
            ix->derived = xpv_xcalloc(hs->n, sizeof *ix->derived);
            ix->nderived = hs->n;
        }
        /* The profile's derived lines (enrich.h): borrowed, kept with it. */
        ix->derived[h] = xpv_profile_derived_lines(p);
        const xpv_derived_lines *dl = ix->derived[h];
        const char *hname = xpv_arena_strndup(&ix->arena, hs->hostnames ? hs->hostnames[h] : "",
                                              hs->hostnames ? strlen(hs->hostnames[h]) : 0);
        for (uint32_t pi = 0; pi < p->nplanes; pi++) {
            if (pids[pi] < 0) continue;
            const xpv_plane *pl = &p->planes[pi];
            int64_t pid = pids[pi] + (hs->n > 1 ? 1000 * (int64_t)(h + 1) : 0);
            uint32_t proc = ix->nprocs;
            ix->procs = xpv_ti_grow(ix->procs, &bd->cap_procs, (size_t)ix->nprocs + 1,
                             sizeof *ix->procs);
            ix->procs[proc] = (xpv_trace_proc){pid, (uint32_t)h, pi, dup_str(&ix->arena, pl->name),
                                               hname, 0, NULL, NULL};
            json_names(&ix->arena, pl, &ix->procs[proc]);
            ix->nprocs++;
            int host = has_prefix(pl->name, "/host:");
            const xpv_dl_plane *dlp = xpv_derived_lines_plane(dl, pi);
            const char *const *djname = NULL;
            const uint32_t *djname_len = NULL;
            if (dlp) {
                xpv_trace_proc tmp;
                json_names(&ix->arena, &dlp->synth, &tmp);
                djname = tmp.jname;
                djname_len = tmp.jname_len;
            }
            uint32_t nall = pl->nlines + (dlp ? dlp->synth.nlines : 0);
            for (uint32_t li = 0; li < nall; li++) {
                int der = li >= pl->nlines;
                const xpv_plane *rpl = der ? &dlp->synth : pl;
                const xpv_line *ln = der ? &dlp->synth.lines[li - pl->nlines] : &pl->lines[li];
                if (!ln->nevents || has_prefix(ln->name, "counters_")) continue;
                ix->rows = xpv_ti_grow(ix->rows, &bd->cap_rows, (size_t)ix->nrows + 1, sizeof *ix->rows);
                xpv_trace_row *r = &ix->rows[ix->nrows++];
                memset(r, 0, sizeof *r);
                r->host = (uint32_t)h;
                r->plane = pi;
                r->line = li;
                r->proc = proc;
                r->pid = pid;
                r->tid = ln->display_id;
                if (dlp && !der) r->tid = dlp->line_display_id[li];
                r->pl = rpl;
                r->ln = ln;
                r->jname = der ? djname : (const char *const *)ix->procs[proc].jname;
                r->jname_len = der ? djname_len : ix->procs[proc].jname_len;
                r->name = dup_str(&ix->arena, ln->display_name);
                r->is_counter = xpv_str_eq(ln->name, "_counters_");
                r->is_host = host;
                r->st_step_name = xpv_stat_id(rpl, "step_name");
                r->st_group_id = xpv_stat_id(rpl, "group_id");
                /* a derived event's correlation_id (XLA Ops of a CUDA
                 * graph node) is an arg, not a launch flow: XProf binds
                 * flows before deriving lines */
                r->st_corr = der ? -1 : xpv_stat_id(rpl, "correlation_id");
                r->st_flow = xpv_stat_id(rpl, "flow");
                r->st_async = xpv_stat_id(rpl, "_a");
                ix->procs[proc].nthreads++;
                total += ln->nevents;
            }
        }
        free(pids);
    }
    /* Order: processes by pid (stable), rows by (pid, tid) (stable). */
    {
        row_key *keys = xpv_xcalloc(ix->nrows ? ix->nrows : 1, sizeof *keys);
        xpv_trace_row *sorted = xpv_xcalloc(ix->nrows ? ix->nrows : 1, sizeof *sorted);
        for (uint32_t i = 0; i < ix->nrows; i++)
            keys[i] = (row_key){ix->rows[i].pid, ix->rows[i].tid, i};
        /* One sort, O(n log n) whatever the file order (lines in
         * descending id order used to make an insertion sort quadratic). */
        layout_cmp_count = &ix->build_work;
        qsort(keys, ix->nrows, sizeof *keys, cmp_row_key);
        for (uint32_t i = 0; i < ix->nrows; i++) sorted[i] = ix->rows[keys[i].order];
        ix->build_work += ix->nrows;
        free(ix->rows);
        ix->rows = sorted;
        free(keys);
        /* procs: sort by pid, remap rows' proc */
        proc_key *pk = xpv_xcalloc(ix->nprocs ? ix->nprocs : 1, sizeof *pk);
        for (uint32_t i = 0; i < ix->nprocs; i++) pk[i] = (proc_key){ix->procs[i].pid, i};
        qsort(pk, ix->nprocs, sizeof *pk, cmp_proc_key);
        layout_cmp_count = NULL;
        uint32_t *perm = xpv_xcalloc(ix->nprocs ? ix->nprocs : 1, sizeof *perm);
        for (uint32_t i = 0; i < ix->nprocs; i++) perm[i] = pk[i].order;
        free(pk);
        ix->build_work += ix->nprocs;
        xpv_trace_proc *np = xpv_xcalloc(ix->nprocs ? ix->nprocs : 1, sizeof *np);
        uint32_t *inv = xpv_xcalloc(ix->nprocs ? ix->nprocs : 1, sizeof *inv);
        for (uint32_t i = 0; i < ix->nprocs; i++) {
            np[i] = ix->procs[perm[i]];
            inv[perm[i]] = i;
        }
        for (uint32_t i = 0; i < ix->nrows; i++) ix->rows[i].proc = inv[ix->rows[i].proc];
        free(ix->procs);
        ix->procs = np;
        free(perm);
        free(inv);
    }

    return total;
}

/* (The derived lines themselves are counted with their profile.) */
static size_t derived_bytes(const xpv_trace_index *ix) {
    return ix->nderived * sizeof *ix->derived;
}

/* The grouping of each host whose file carries no group ids: the trace
 * shows computed group ids and step names (XProf groups before drawing). */
void xpv_ti_attach_groups(xpv_trace_index *ix, const xpv_hostset *hs) {
    ix->nhosts = (uint32_t)hs->n;
    ix->hgroups = xpv_xcalloc(hs->n ? hs->n : 1, sizeof *ix->hgroups);
    for (size_t h = 0; h < hs->n; h++) {
        /* The profile's grouping (enrich.h): borrowed, kept with it. */
        const xpv_groups *g = hs->profiles[h] ? xpv_profile_groups(hs->profiles[h]) : NULL;
        ix->hgroups[h] = g && g->source == XPV_GROUPS_COMPUTED ? g : NULL;
    }
}

/* Memory held by an index (for the cache budget). */
size_t xpv_ti_index_bytes(const xpv_trace_index *ix) {
    return sizeof *ix + ix->arena.total + ix->nidx * sizeof *ix->idx +
           (size_t)ix->ngroups * sizeof *ix->groups + (size_t)ix->nrows * sizeof *ix->rows +
           (size_t)ix->nprocs * sizeof *ix->procs + (size_t)ix->nsteps * sizeof *ix->steps +
           derived_bytes(ix);
}

xpv_trace_index *xpv_trace_index_build(const xpv_hostset *hs) {
    xpv_trace_index *ix = xpv_xcalloc(1, sizeof *ix);
    builder b;
    memset(&b, 0, sizeof b);
    b.ix = ix;
    xpv_arena_init(&ix->arena, 1 << 16);
    ix->min_ps = INT64_MAX;
    ix->max_ps = INT64_MIN;
    uint64_t total = xpv_ti_layout(&b, hs);

    /* Pass 2: index each row, on several threads when it is worth it
     * (trace_index_par.c), else here. */
    ix->idx = xpv_xmalloc((total ? total : 1) * sizeof *ix->idx);
    uint8_t *dropped = NULL;
    size_t cap_dropped = 0;
    const xpv_plane *last_pl = NULL;
    uint32_t ri0 = xpv_ti_index_rows_parallel(&b, total) ? ix->nrows : 0;
    for (uint32_t ri = ri0; ri < ix->nrows; ri++) {
        xpv_trace_row *r = &ix->rows[ri];
        const xpv_plane *pl = r->pl;
        if (pl != last_pl) {
            dropped = xpv_ti_grow(dropped, &cap_dropped, pl->nevent_meta + 1, 1);
            for (uint32_t k = 0; k < pl->nevent_meta; k++)
                dropped[k] = (uint8_t)xpv_trace_is_internal(pl->event_meta[k].name);
            last_pl = pl;
        }
        xpv_ti_index_row(&b, ri, pl, r->ln, dropped);
    }
    free(dropped);

    /* Steps fallback: top-level host events that are step roots (_r > 0). */
    if (!ix->nsteps) {
        for (uint32_t ri = 0; ri < ix->nrows; ri++) {
            xpv_trace_row *r = &ix->rows[ri];
            if (!r->is_host || r->is_counter || !r->ngroups) continue;
            const xpv_plane *pl = r->pl;
            int32_t sr = xpv_stat_id(pl, "_r");
            const xpv_trace_group *g = &ix->groups[r->group0];
            if (sr < 0 || g->key != 0) continue;
            const xpv_line *ln = r->ln;
            uint64_t n = g->seg[LV];
            for (uint64_t i = 0; i < n; i++) {
                uint32_t ev = ix->idx[g->off + i];
                xpv_stat st;
                int64_t v;
                if (xpv_event_stat(pl, ln, &ln->events[ev], sr, &st) && xpv_stat_as_int(&st, &v) &&
                    v > 0)
                    xpv_ti_add_step(&b, ln->events[ev].start_ps, ev_dur(&ln->events[ev]), ri, ev);
            }
        }
    }
    if (ix->nsteps) qsort(ix->steps, ix->nsteps, sizeof *ix->steps, cmp_step);
    if (ix->min_ps > ix->max_ps) ix->min_ps = ix->max_ps = 0;

    free(b.ord);
    free(b.keep);
    free(b.tmp);
    free(b.lvl);
    free(b.dep);
    free(b.stack);
    free(b.gcount);
    promote_flows(ix, hs);
    xpv_ti_attach_groups(ix, hs);
    ix->bytes = xpv_ti_index_bytes(ix);
    /* Give back the unused tail of idx (dropped events). */
    if (ix->nidx < total) ix->idx = xpv_xrealloc(ix->idx, (ix->nidx ? ix->nidx : 1) * sizeof *ix->idx);
    return ix;
}

void xpv_trace_index_free(xpv_trace_index *ix) {
    if (!ix) return;
    free(ix->procs);
    free(ix->rows);
    free(ix->groups);
    free(ix->idx);
    free(ix->steps);
    free(ix->derived);            /* the lines and groups belong to the profiles */
    free(ix->hgroups);
    xpv_trace_names_free(ix->names);
    xpv_arena_free(&ix->arena);
    free(ix);
}

static void *kind_build(const xpv_hostset *hs, xpv_err *err) {
    (void)err;
    return xpv_trace_index_build(hs);
}
static void kind_free(void *d) { xpv_trace_index_free(d); }
/* With the name index once a search has built it (the server charges
 * the growth to its budget after each answer). */
static size_t kind_size(const void *d) {
    const xpv_trace_index *ix = d;
    return ix->bytes + xpv_trace_names_bytes(ix);
}

const xpv_derived_kind xpv_derived_trace_index = {
    .name = "trace_index", .build = kind_build, .free = kind_free, .size = kind_size,
};

/* ==== Query ============================================================= */

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
static size_t add_flow_ends(const xpv_hostset *hs, const xpv_trace_index *ix, int64_t start_ps,
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
        if (!row_launches(r)) continue;
        if (hits[i].row != set_row) {
            flow_set_init(&set, hs, r);
            set_row = hits[i].row;
        }
        int st;
        const xpv_event *e = xpv_trace_event(hs, r, hits[i].ev);
        uint64_t key = flow_key(hs, r, &set, e, &st);
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
        if (!row_receives(r)) continue;
        const xpv_event *evs = xpv_trace_event(hs, r, 0);
        flow_set_init(&set, hs, r);
        for (int L = 0; L <= Lq && L < LV; L++) {
            uint64_t lo = g->off + g->seg[L], hi = g->off + g->seg[L + 1];
            for (uint64_t i = first_ending_after(evs, ix->idx, lo, hi, start_ps, 0); i < hi; i++) {
                uint32_t ev = ix->idx[i];
                if (evs[ev].start_ps >= end_ps) break;
                xpv_trace_hit h = {g->row, ev};
                if (u64set_has(&seen, xpv_trace_uid(h) + 1)) continue;
                int st;
                uint64_t key = flow_key(hs, r, &set, &evs[ev], &st);
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
            if (!row_receives(r)) continue;
            const xpv_event *evs = xpv_trace_event(hs, r, 0);
            flow_set_init(&set, hs, r);
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
                    uint64_t key = flow_key(hs, r, &set, &evs[ev], &st);
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
        q.n = add_flow_ends(hs, ix, start_ps, end_ps, Lq, &q.hits, &q.cap, &q.hg, &q.gcap, q.n,
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
