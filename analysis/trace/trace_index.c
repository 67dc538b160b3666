/*
 * trace_index.c - per-host-set trace event index with levels of detail
 * (see trace_index.h for the layout and the visibility rule).
 *
 * The build stage: the rows and processes of the host set
 * (trace_layout.c), then each row indexed (trace_index_row.c; rows on
 * several threads: trace_index_par.c), then flow promotion and the step
 * markers.  The files read as a pipeline, each calling only the ones
 * before it: trace_layout -> trace_index_row -> trace_index_par ->
 * trace_index (build) -> trace_query (one group) -> trace_query_par (all
 * groups) -> trace_budget (the viewport answer); trace_index_image and
 * trace_search work on a built index.
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
    if (!r->ngroups || !(pass ? ti_row_receives(r) : ti_row_launches(r))) return;
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
    ti_flow_set_init(&set, fp->hs, r);
    for (size_t ev = 0; ev < n; ev++) {
        uint8_t L = lvl[ev];
        if (L == 0xff || (pass ? L <= fp->lmin : L >= fp->lrecv)) continue;
        int starter;
        uint64_t key = ti_flow_key(fp->hs, r, &set, &ln->events[ev], &starter);
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
        if (!r->ngroups || !ti_row_receives(r)) continue;
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

