/*
 * tf_data_bottleneck_analysis.c - the tf.data bottleneck analysis tool
 * (XProf's `tf_data_bottleneck_analysis`, removed upstream in March 2025,
 * restored here; xprof-reference.md §2.7).
 *
 * Per host (`/host:CPU` plane):
 *   1. Event forest restricted to what the analysis reads: same-line nesting
 *      over ALL events (async `_a` events excluded, as XProf does), kept as
 *      iterator -> iterator edges (only direct tf.data children count), plus
 *      XProf's produce/consume links: the iterator inside a `<X>Produce`
 *      event (key: its parent_id + the produce's element_id) becomes a child
 *      of the iterator enclosing the matching `<X>Consume`.
 *   2. Root iterators (`Iterator::X`) group calls into input pipelines
 *      (`Host:N`, or `Device:N` when an `Iterator::Prefetch::Generator`
 *      names the root as its parent).  Per call: recursive walk, self time =
 *      duration - overlap with tf.data children, blocking only through
 *      overlapping children, bottleneck = blocking iterator with max self
 *      time.  Per pipeline: min/avg/max latency, slow calls (> 50 us).
 *   3. Bottleneck table over host pipelines (slowest call each), sorted by
 *      max latency, suggestion by iterator type; summary and is_input_bound.
 *
 * Output: XProf's array of 3 DataTables [graph, summary, bottleneck].  The
 * graph table's name cell also carries a `p` object with the node's numbers
 * (start_time_us, duration_us, self_time_us, num_calls, name, long_name) so
 * the page needs no HTML parsing; otherwise the shape is XProf's.
 * Deterministic where XProf iterates hash maps: pipelines by root iterator
 * id, iterators by id, equal latencies by file order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collections.h"
#include "tool.h"

#define TD_SLOW_CALL_PS (50 * 1000000LL)   /* 50 us */
#define TD_MAX_LEVEL 100                   /* XProf's recursion limit */
#define TD_MAX_VISITS (1 << 20)            /* per call: guards cyclic links */

/* ==== int64 -> index map (base/collections.h) =========================== */

/* Value of k, or -1. */
static int64_t td_get(const i64map *m, int64_t k) {
    uint32_t v;
    return i64map_get(m, k, &v) ? (int64_t)v : -1;
}

/* Insert when absent; returns the value now stored (indices < 2^32). */
static int64_t td_put_new(i64map *m, int64_t k, int64_t v) {
    uint32_t old;
    if (i64map_get(m, k, &old)) return old;
    i64map_put(m, k, (uint32_t)v);
    return v;
}

/* ==== Per-host forest ===================================================== */

/* One iterator event (name `Iterator:...`). */
typedef struct td_node {
    int64_t start_ps, dur_ps;
    int64_t id, parent_id;
    uint8_t has_id, has_parent;
    uint8_t is_root;           /* exactly `Iterator::X` */
    uint8_t is_generator;      /* `Iterator::Prefetch::Generator` */
    xpv_str name;              /* full event name */
    uint32_t first_child, nchildren;   /* into forest.edges, after CSR */
} td_node;

typedef struct td_edge {
    uint32_t from, to;
} td_edge;

/* Iterator metadata: first event seen with this id. */
typedef struct td_iter_meta {
    int64_t id, parent_id;
    xpv_str long_name, name;
} td_iter_meta;

/* Aggregated stat of one iterator within one root call. */
typedef struct td_iter_stat {
    int64_t id;
    int64_t start_ps, duration_ps, self_ps;
    int64_t num_calls;
    int blocking;
} td_iter_stat;

/* One root-iterator call (XProf InputPipelineStat). */
typedef struct td_call {
    td_iter_stat *its;         /* sorted by id after the walk */
    size_t nits;
    int64_t bottleneck_id, bottleneck_ps;
    int64_t latency_ps;
} td_call;

typedef struct td_pipeline {
    int64_t id;                /* root iterator id */
    int is_device;
    char name[32];             /* "Host:N" / "Device:N" */
    td_call *calls;            /* slowest first */
    size_t ncalls;
    int64_t min_ps, avg_ps, max_ps, num_slow;
} td_pipeline;

typedef struct td_host {
    const char *hostname;      /* set for a render only */
    xpv_arena names;           /* the iterators' names, copied out of the
                                * profile */
    td_iter_meta *meta;
    size_t nmeta;
    i64map meta_ix;            /* id -> index into meta */
    td_pipeline *pipes;
    size_t npipes;
} td_host;

typedef struct td_forest {
    td_node *nodes;
    size_t n, cap;
    td_edge *edges;
    size_t nedges, capedges;
} td_forest;

static int td_is_tfdata(xpv_str name) {
    /* ParseTfOpFullname: first ':'-part is "Iterator" (and a ':' exists). */
    return name.len > 9 && !memcmp(name.ptr, "Iterator:", 9);
}

static int td_is_root(xpv_str name) {
    /* StrSplit(name, "::").size() == 2. */
    size_t parts = 1;
    for (uint32_t i = 0; i + 1 < name.len; i++)
        if (name.ptr[i] == ':' && name.ptr[i + 1] == ':') parts++, i++;
    return parts == 2;
}

/* Text after the last "::" (tsl IteratorName). */
static xpv_str td_short_name(xpv_str name) {
    for (uint32_t i = name.len; i >= 2; i--)
        if (name.ptr[i - 1] == ':' && name.ptr[i - 2] == ':') {
            xpv_str s = {name.ptr + i, name.len - i};
            return s;
        }
    return name;
}

static void td_add_edge(td_forest *f, uint32_t from, uint32_t to) {
    if (f->nedges == f->capedges) {
        f->capedges = f->capedges ? f->capedges * 2 : 256;
        f->edges = xpv_xrealloc(f->edges, f->capedges * sizeof *f->edges);
    }
    f->edges[f->nedges].from = from;
    f->edges[f->nedges].to = to;
    f->nedges++;
}

static int td_int_stat(const xpv_plane *pl, const xpv_line *ln, const xpv_event *e,
                       int32_t sid, int64_t *out) {
    xpv_stat st;
    if (sid < 0 || !xpv_event_or_meta_stat(pl, ln, e, sid, &st)) return 0;
    if (st.kind == XPV_STAT_INT) *out = st.v.i;
    else if (st.kind == XPV_STAT_UINT) *out = (int64_t)st.v.u;
    else return 0;
    return 1;
}

/* Produce/consume event families, in XProf's order. */
static const char *const td_families[] = {
    "Prefetch", "ParallelInterleave", "ParallelMap", "MapAndBatch", "ParseExample",
    "ParallelBatch",
};
#define TD_NFAMILIES (sizeof td_families / sizeof td_families[0])

/* Per event-metadata classification. */
enum { TD_OTHER = 0, TD_ITER, TD_PRODUCE, TD_CONSUME };

typedef struct td_mclass {
    uint8_t kind;
    uint8_t family;
} td_mclass;

static td_mclass *td_classify(const xpv_plane *pl) {
    td_mclass *c = xpv_xcalloc(pl->nevent_meta ? pl->nevent_meta : 1, sizeof *c);
    for (uint32_t i = 0; i < pl->nevent_meta; i++) {
        xpv_str n = pl->event_meta[i].name;
        if (td_is_tfdata(n)) {
            c[i].kind = TD_ITER;
            continue;
        }
        for (size_t f = 0; f < TD_NFAMILIES; f++) {
            size_t fl = strlen(td_families[f]);
            if (n.len <= fl || memcmp(n.ptr, td_families[f], fl)) continue;
            xpv_str rest = {n.ptr + fl, n.len - (uint32_t)fl};
            if (xpv_str_eq(rest, "Produce")) c[i].kind = TD_PRODUCE;
            else if (xpv_str_eq(rest, "Consume")) c[i].kind = TD_CONSUME;
            else continue;
            c[i].family = (uint8_t)f;
            break;
        }
    }
    return c;
}

/* A produce/consume event with its element id and linked iterator node. */
typedef struct td_pc {
    uint8_t family;
    int64_t element_id;
    uint32_t node;          /* produce: first iterator child; consume: parent iterator */
    int64_t key_iter;       /* produce: that child's parent_id; consume: parent's id */
} td_pc;

static int64_t td_pc_key(const td_pc *pc) {
    return (int64_t)((uint64_t)pc->key_iter * 0x9e3779b97f4a7c15ull ^ (uint64_t)pc->element_id);
}

/* Iterator nodes (with nesting edges) of one host plane, and its produce
 * and consume events for td_link(). */
static void td_scan(const xpv_plane *pl, td_forest *f, td_pc **prod_out, size_t *nprod_out,
                    td_pc **cons_out, size_t *ncons_out) {
    td_mclass *cls = td_classify(pl);
    int32_t sid_id = xpv_stat_id(pl, "id");
    int32_t sid_parent = xpv_stat_id(pl, "parent_id");
    int32_t sid_elem = xpv_stat_id(pl, "element_id");
    int32_t sid_async = xpv_stat_id(pl, "_a");

    td_pc *prod = NULL, *cons = NULL;
    size_t nprod = 0, capprod = 0, ncons = 0, capcons = 0;

    /* Stack of (event index, node index or -1, produce slot or -1). */
    typedef struct frame {
        const xpv_event *e;
        int64_t node;       /* iterator node of this event, or -1 */
        int64_t produce;    /* index into prod when this is a produce event */
    } frame;
    frame *stack = NULL;
    size_t cap = 0;

    for (uint32_t li = 0; li < pl->nlines; li++) {
        const xpv_line *ln = &pl->lines[li];
        size_t depth = 0;
        for (uint32_t ei = 0; ei < ln->nevents; ei++) {
            const xpv_event *e = &ln->events[ei];
            td_mclass c = e->meta < pl->nevent_meta ? cls[e->meta] : (td_mclass){0, 0};
            if (sid_async >= 0) {
                int64_t a = 0;
                xpv_stat st;
                if (xpv_event_stat(pl, ln, e, sid_async, &st) && xpv_stat_as_int(&st, &a) && a)
                    continue;
            }
            int64_t end = e->start_ps + e->dur_ps;
            while (depth > 0) {
                const xpv_event *p = stack[depth - 1].e;
                if (p->start_ps <= e->start_ps && end <= p->start_ps + p->dur_ps) break;
                depth--;
            }
            frame *parent = depth ? &stack[depth - 1] : NULL;
            int64_t node = -1, produce = -1;
            if (c.kind == TD_ITER) {
                if (f->n == f->cap) {
                    f->cap = f->cap ? f->cap * 2 : 256;
                    f->nodes = xpv_xrealloc(f->nodes, f->cap * sizeof *f->nodes);
                }
                td_node *nd = &f->nodes[f->n];
                memset(nd, 0, sizeof *nd);
                nd->start_ps = e->start_ps;
                nd->dur_ps = e->dur_ps;
                nd->name = pl->event_meta[e->meta].name;
                nd->has_id = (uint8_t)td_int_stat(pl, ln, e, sid_id, &nd->id);
                nd->has_parent = (uint8_t)td_int_stat(pl, ln, e, sid_parent, &nd->parent_id);
                nd->is_root = (uint8_t)td_is_root(nd->name);
                nd->is_generator = xpv_str_eq(nd->name, "Iterator::Prefetch::Generator");
                node = (int64_t)f->n++;
                if (parent && parent->node >= 0)
                    td_add_edge(f, (uint32_t)parent->node, (uint32_t)node);
                /* First iterator child of a produce event. */
                if (parent && parent->produce >= 0 && prod[parent->produce].node == UINT32_MAX) {
                    td_pc *pc = &prod[parent->produce];
                    pc->node = (uint32_t)node;
                    if (nd->has_parent) pc->key_iter = nd->parent_id;
                    else pc->node = UINT32_MAX - 1;   /* no parent_id: unusable */
                }
            } else if (c.kind == TD_PRODUCE) {
                int64_t el;
                if (td_int_stat(pl, ln, e, sid_elem, &el)) {
                    if (nprod == capprod) {
                        capprod = capprod ? capprod * 2 : 64;
                        prod = xpv_xrealloc(prod, capprod * sizeof *prod);
                    }
                    prod[nprod] = (td_pc){c.family, el, UINT32_MAX, 0};
                    produce = (int64_t)nprod++;
                }
            } else if (c.kind == TD_CONSUME) {
                int64_t el;
                if (parent && parent->node >= 0 && td_int_stat(pl, ln, e, sid_elem, &el) &&
                    f->nodes[parent->node].has_id) {
                    if (ncons == capcons) {
                        capcons = capcons ? capcons * 2 : 64;
                        cons = xpv_xrealloc(cons, capcons * sizeof *cons);
                    }
                    cons[ncons++] = (td_pc){c.family, el, (uint32_t)parent->node,
                                            f->nodes[parent->node].id};
                }
            }
            if (depth == cap) {
                cap = cap ? cap * 2 : 64;
                stack = xpv_xrealloc(stack, cap * sizeof *stack);
            }
            stack[depth++] = (frame){e, node, produce};
        }
    }
    free(stack);
    free(cls);
    *prod_out = prod;
    *nprod_out = nprod;
    *cons_out = cons;
    *ncons_out = ncons;
}

static void td_link(td_forest *f, const td_pc *prod, size_t nprod, const td_pc *cons,
                    size_t ncons) {
    /* Produce/consume links: (iterator id, element id) -> produce
     * iterators in XProf's order (family, then file order); consumers are
     * matched family by family.  Chains hang off a hash of the mixed key;
     * exact equality is re-checked while walking a chain. */
    if (!nprod || !ncons) return;
    {
        size_t *ent = xpv_xmalloc(nprod * sizeof *ent);   /* ordered produce ids */
        size_t k = 0;
        for (size_t fam = 0; fam < TD_NFAMILIES; fam++)
            for (size_t i = 0; i < nprod; i++)
                if (prod[i].family == fam && prod[i].node < UINT32_MAX - 1) ent[k++] = i;
        int64_t *next = xpv_xmalloc((k + 1) * sizeof *next);
        int64_t *tail = xpv_xmalloc((k + 1) * sizeof *tail);
        i64map heads;
        memset(&heads, 0, sizeof heads);
        for (size_t i = 0; i < k; i++) {
            const td_pc *pc = &prod[ent[i]];
            next[i] = -1;
            int64_t head = td_put_new(&heads, td_pc_key(pc), (int64_t)i);
            if (head != (int64_t)i) {
                next[tail[head]] = (int64_t)i;
                tail[head] = (int64_t)i;
            } else {
                tail[i] = (int64_t)i;
            }
        }
        for (size_t fam = 0; fam < TD_NFAMILIES; fam++) {
            for (size_t c = 0; c < ncons; c++) {
                const td_pc *cc = &cons[c];
                if (cc->family != fam) continue;
                for (int64_t i = td_get(&heads, td_pc_key(cc)); i >= 0; i = next[i]) {
                    const td_pc *pc = &prod[ent[i]];
                    if (pc->key_iter == cc->key_iter && pc->element_id == cc->element_id)
                        td_add_edge(f, cc->node, pc->node);
                }
            }
        }
        free(next);
        free(tail);
        free(ent);
        i64map_free(&heads);
    }
}

/* Edges to CSR: stable by source (insertion order kept per node). */
static void td_edges_to_csr(td_forest *f) {
    size_t *count = xpv_xcalloc(f->n + 1, sizeof *count);
    for (size_t i = 0; i < f->nedges; i++) count[f->edges[i].from + 1]++;
    for (size_t i = 0; i < f->n; i++) count[i + 1] += count[i];
    td_edge *sorted = xpv_xmalloc((f->nedges + 1) * sizeof *sorted);
    size_t *pos = xpv_xmalloc((f->n + 1) * sizeof *pos);
    memcpy(pos, count, (f->n + 1) * sizeof *pos);
    for (size_t i = 0; i < f->nedges; i++) sorted[pos[f->edges[i].from]++] = f->edges[i];
    for (size_t i = 0; i < f->n; i++) {
        f->nodes[i].first_child = (uint32_t)count[i];
        f->nodes[i].nchildren = (uint32_t)(count[i + 1] - count[i]);
    }
    free(f->edges);
    f->edges = sorted;
    free(count);
    free(pos);
}

/* Build the iterator forest of one host plane. */
static void td_build_forest(const xpv_plane *pl, td_forest *f) {
    td_pc *prod, *cons;
    size_t nprod, ncons;
    td_scan(pl, f, &prod, &nprod, &cons, &ncons);
    td_link(f, prod, nprod, cons, ncons);
    free(prod);
    free(cons);
    td_edges_to_csr(f);
}

/* ==== Per-call walk (XProf ProcessIteratorEvent) ========================== */

typedef struct td_walk {
    const td_forest *f;
    td_call *call;
    i64map ix;              /* iterator id -> index into call->its */
    size_t cap;
    size_t visits;
} td_walk;

static int64_t td_overlap(int64_t b1, int64_t d1, int64_t b2, int64_t d2) {
    int64_t lo = b1 > b2 ? b1 : b2;
    int64_t e1 = b1 + d1, e2 = b2 + d2;
    int64_t hi = e1 < e2 ? e1 : e2;
    return hi > lo ? hi - lo : 0;
}

static void td_visit(td_walk *w, uint32_t ni, int blocking, int level) {
    if (level > TD_MAX_LEVEL || w->visits >= TD_MAX_VISITS) return;
    w->visits++;
    const td_node *nd = &w->f->nodes[ni];
    if (!nd->has_id) return;
    td_call *c = w->call;
    int64_t at = td_get(&w->ix, nd->id);
    if (at < 0) {
        if (c->nits == w->cap) {
            w->cap = w->cap ? w->cap * 2 : 8;
            c->its = xpv_xrealloc(c->its, w->cap * sizeof *c->its);
        }
        at = (int64_t)c->nits++;
        td_put_new(&w->ix, nd->id, at);
        memset(&c->its[at], 0, sizeof c->its[at]);
        c->its[at].id = nd->id;
        c->its[at].start_ps = nd->start_ps;
    }
    c->its[at].duration_ps += nd->dur_ps;
    int64_t self = nd->dur_ps;
    for (uint32_t k = 0; k < nd->nchildren; k++) {
        uint32_t ci = w->f->edges[nd->first_child + k].to;
        const td_node *ch = &w->f->nodes[ci];
        int64_t ov = td_overlap(nd->start_ps, nd->dur_ps, ch->start_ps, ch->dur_ps);
        td_visit(w, ci, blocking && ov, level + 1);
        self -= ov;
    }
    /* c->its may have moved during recursion: index again. */
    c->its[at].self_ps += self;
    c->its[at].blocking = c->its[at].blocking || blocking;
    c->its[at].num_calls++;
}

static int td_cmp_its(const void *x, const void *y) {
    const td_iter_stat *a = x, *b = y;
    return a->id < b->id ? -1 : a->id > b->id;
}

static void td_walk_call(const td_forest *f, uint32_t root, td_call *c) {
    td_walk w;
    memset(&w, 0, sizeof w);
    w.f = f;
    w.call = c;
    td_visit(&w, root, 1, 0);
    i64map_free(&w.ix);
    if (c->nits > 1) qsort(c->its, c->nits, sizeof *c->its, td_cmp_its);
    c->bottleneck_id = 0;
    c->bottleneck_ps = 0;
    for (size_t i = 0; i < c->nits; i++)
        if (c->its[i].blocking && c->its[i].self_ps > c->bottleneck_ps) {
            c->bottleneck_id = c->its[i].id;
            c->bottleneck_ps = c->its[i].self_ps;
        }
    c->latency_ps = f->nodes[root].dur_ps;
}

/* ==== Per-host analysis ================================================== */

typedef struct td_rootref {
    int64_t id;
    int64_t dur_ps;
    uint32_t node;
} td_rootref;

static int td_cmp_root(const void *x, const void *y) {
    const td_rootref *a = x, *b = y;
    if (a->id != b->id) return a->id < b->id ? -1 : 1;
    return a->node < b->node ? -1 : a->node > b->node;
}

/* Calls of one pipeline: duration desc, then file order. */
static int td_cmp_call_node(const void *x, const void *y) {
    const td_rootref *a = x, *b = y;
    if (a->dur_ps != b->dur_ps) return a->dur_ps > b->dur_ps ? -1 : 1;
    return a->node < b->node ? -1 : a->node > b->node;
}

static void td_add_meta(td_host *h, const td_node *nd, size_t *cap) {
    if (td_get(&h->meta_ix, nd->id) >= 0) return;
    if (h->nmeta == *cap) {
        *cap = *cap ? *cap * 2 : 32;
        h->meta = xpv_xrealloc(h->meta, *cap * sizeof *h->meta);
    }
    td_iter_meta *m = &h->meta[h->nmeta];
    m->id = nd->id;
    m->parent_id = nd->has_parent ? nd->parent_id : 0;
    const char *copy = xpv_arena_strndup(&h->names, nd->name.ptr ? nd->name.ptr : "", nd->name.len);
    m->long_name = (xpv_str){copy, nd->name.len};
    m->name = td_short_name(m->long_name);
    td_put_new(&h->meta_ix, nd->id, (int64_t)h->nmeta);
    h->nmeta++;
}

static void td_analyze_host(const xpv_profile *p, td_host *h) {
    xpv_arena_init(&h->names, 16 * 1024);
    const xpv_plane *pl = xpv_find_plane(p, "/host:CPU");
    if (!pl) return;
    td_forest f;
    memset(&f, 0, sizeof f);
    td_build_forest(pl, &f);

    /* Iterator metadata: regular iterators first, then generators (whose
     * parent is a device input pipeline). */
    size_t capmeta = 0;
    i64map device_ids;
    memset(&device_ids, 0, sizeof device_ids);
    td_rootref *roots = xpv_xmalloc((f.n + 1) * sizeof *roots);
    size_t nroots = 0;
    for (size_t i = 0; i < f.n; i++) {
        const td_node *nd = &f.nodes[i];
        if (!nd->has_id || nd->is_generator) continue;
        td_add_meta(h, nd, &capmeta);
        if (nd->is_root) roots[nroots++] = (td_rootref){nd->id, nd->dur_ps, (uint32_t)i};
    }
    for (size_t i = 0; i < f.n; i++) {
        const td_node *nd = &f.nodes[i];
        if (!nd->has_id || !nd->is_generator) continue;
        if (td_get(&h->meta_ix, nd->id) >= 0) continue;
        td_add_meta(h, nd, &capmeta);
        if (nd->has_parent) td_put_new(&device_ids, nd->parent_id, 1);
    }

    /* Pipelines by root id. */
    qsort(roots, nroots, sizeof *roots, td_cmp_root);
    size_t npipes = 0;
    for (size_t i = 0; i < nroots; i++)
        if (i == 0 || roots[i].id != roots[i - 1].id) npipes++;
    h->pipes = xpv_xcalloc(npipes + 1, sizeof *h->pipes);
    int64_t nhost = 0, ndevice = 0;
    for (size_t i = 0; i < nroots;) {
        size_t j = i;
        while (j < nroots && roots[j].id == roots[i].id) j++;
        td_pipeline *pp = &h->pipes[h->npipes++];
        pp->id = roots[i].id;
        pp->is_device = td_get(&device_ids, pp->id) >= 0;
        snprintf(pp->name, sizeof pp->name, "%s:%lld", pp->is_device ? "Device" : "Host",
                 (long long)(pp->is_device ? ndevice++ : nhost++));
        qsort(roots + i, j - i, sizeof *roots, td_cmp_call_node);
        pp->ncalls = j - i;
        pp->calls = xpv_xcalloc(pp->ncalls, sizeof *pp->calls);
        int64_t sum = 0;
        pp->min_ps = INT64_MAX;
        for (size_t k = 0; k < pp->ncalls; k++) {
            td_walk_call(&f, roots[i + k].node, &pp->calls[k]);
            int64_t lat = pp->calls[k].latency_ps;
            sum += lat;
            if (lat < pp->min_ps) pp->min_ps = lat;
            if (lat > pp->max_ps) pp->max_ps = lat;
            if (lat > TD_SLOW_CALL_PS) pp->num_slow++;
        }
        pp->avg_ps = sum / (int64_t)pp->ncalls;
        i = j;
    }
    free(roots);
    i64map_free(&device_ids);
    free(f.nodes);
    free(f.edges);
}

static void td_free_host(td_host *h) {
    for (size_t i = 0; i < h->npipes; i++) {
        for (size_t k = 0; k < h->pipes[i].ncalls; k++) free(h->pipes[i].calls[k].its);
        free(h->pipes[i].calls);
    }
    free(h->pipes);
    free(h->meta);
    i64map_free(&h->meta_ix);
    xpv_arena_free(&h->names);
}

static const td_iter_meta *td_meta(const td_host *h, int64_t id) {
    int64_t i = td_get(&h->meta_ix, id);
    return i >= 0 ? &h->meta[i] : NULL;
}

/* ==== Suggestions (XProf GetBottleneckType / GetSuggestion) ============== */

enum { TD_OTHER_B, TD_SLOW_SOURCE, TD_SLOW_DATA_SERVICE, TD_SLOW_REMOTE,
       TD_SLOW_PARALLEL, TD_SLOW_SEQUENTIAL };

static int td_bottleneck_type(xpv_str name) {
    static const struct { const char *name; int type; } map[] = {
        {"TFRecord", TD_SLOW_SOURCE}, {"SSTable", TD_SLOW_SOURCE},
        {"RecordIO", TD_SLOW_SOURCE}, {"Spanner", TD_SLOW_SOURCE},
        {"TFColumn", TD_SLOW_SOURCE}, {"SleepwalkRemoteDataset", TD_SLOW_SOURCE},
        {"TextLine", TD_SLOW_SOURCE}, {"StitchedTimelineDataset", TD_SLOW_SOURCE},
        {"DateKeyDataset", TD_SLOW_SOURCE}, {"CapacitorProto", TD_SLOW_SOURCE},
        {"LMDB", TD_SLOW_SOURCE}, {"ExternalDataset", TD_SLOW_SOURCE},
        {"PearModel", TD_SLOW_SOURCE}, {"FixedLengthRecordV2", TD_SLOW_SOURCE},
        {"FromTensor", TD_SLOW_SOURCE}, {"TensorSlice", TD_SLOW_SOURCE},
        {"Generator", TD_SLOW_SOURCE}, {"SyntheticDatasetOp", TD_SLOW_SOURCE},
        {"DataService", TD_SLOW_DATA_SERVICE},
        {"GuzzlerDataGuzzlerRemoteDataset", TD_SLOW_REMOTE},
        {"ReverbDataset", TD_SLOW_REMOTE}, {"DatasetSampleGame", TD_SLOW_REMOTE},
        {"Courier", TD_SLOW_REMOTE}, {"ReverbEpisodeDataset", TD_SLOW_REMOTE},
        {"Map", TD_SLOW_PARALLEL}, {"Interleave", TD_SLOW_PARALLEL},
        {"Filter", TD_SLOW_SEQUENTIAL}, {"Batch", TD_SLOW_SEQUENTIAL},
        {"Unbatch", TD_SLOW_SEQUENTIAL},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (xpv_str_eq(name, map[i].name)) return map[i].type;
    return TD_OTHER_B;
}

#define TD_A(url, text) "<a href=\"" url "\" target=\"_blank\">" text "</a>"
#define TD_GUIDE "https://www.tensorflow.org/guide/"
#define TD_PLAYBOOK TD_GUIDE "data_performance_analysis"

static const char *td_suggestion(int type) {
    switch (type) {
    case TD_SLOW_SOURCE:
        return "1. Check the locality of a host and input data. Ideally, they should be "
               "in the same cell (or very close, like the same region).<br/>"
               "2. Parallelize reading from this dataset source. See "
               TD_A(TD_PLAYBOOK "#source_datasets", "here") " and "
               TD_A(TD_GUIDE "data_performance#parallelizing_data_extraction", "here")
               " for more details.<br/>";
    case TD_SLOW_DATA_SERVICE:
        return "1. Fetching data from tf.data service took a while. Profile the tf.data "
               "service worker to analyze the issue further.<br/>"
               "2. See "
               TD_A("https://www.tensorflow.org/api_docs/python/tf/data/experimental/"
                    "service?version=nightly", "this")
               " for more details on tf.data service.<br/>"
               "3. See " TD_A(TD_PLAYBOOK, "this") " for other suggestions.";
    case TD_SLOW_REMOTE:
        return "1. The remote data source is slow. Profile its host to analyze the issue "
               "further.<br/>"
               "2. See " TD_A(TD_PLAYBOOK, "this") " for other suggestions.";
    case TD_SLOW_PARALLEL:
        return "1. Parallelize this transformation by setting "
               "<code>num_parallel_calls=tf.data.experimental.AUTOTUNE</code>. See "
               TD_A(TD_GUIDE "data_performance#parallelizing_data_transformation", "this")
               " for more details.<br/>"
               "2. Consider adding <code>cache</code> after this transformation if your "
               "data fits into memory and it is appropriate (e.g., there is no randomness "
               "in upstream transformations like <code>shuffle</code>). See "
               TD_A(TD_GUIDE "data_performance#caching", "this") " for more details.<br/>"
               "3. Find more resources " TD_A(TD_PLAYBOOK "#transformation_datasets", "here")
               ".";
    case TD_SLOW_SEQUENTIAL:
        return "1. This transformation is inherently sequential. Add outer parallelism by "
               "running multiple copies of the input pipeline over sharded inputs and "
               "combining the results. See "
               TD_A(TD_PLAYBOOK "#transformation_datasets", "this")
               " for more details.<br/>"
               "2. Consider adding <code>cache</code> after this transformation if your "
               "data fits into memory and it is appropriate (e.g., there is no randomness "
               "in upstream transformations like <code>shuffle</code>). See "
               TD_A(TD_GUIDE "data_performance#caching", "this") " for more details.<br/>"
               "3. Find more resources "
               TD_A(TD_PLAYBOOK "#3_are_you_reaching_high_cpu_utilization", "here") ".";
    default:
        return "See " TD_A(TD_PLAYBOOK, "this") " for suggestions.";
    }
}

/* ==== JSON ================================================================ */

/* Append `s` HTML-escaped (names come from the profile). */
static void td_html(xpv_buf *b, xpv_str s) {
    for (uint32_t i = 0; i < s.len; i++) {
        char c = s.ptr[i];
        switch (c) {
        case '<': xpv_buf_puts(b, "&lt;"); break;
        case '>': xpv_buf_puts(b, "&gt;"); break;
        case '&': xpv_buf_puts(b, "&amp;"); break;
        case '"': xpv_buf_puts(b, "&quot;"); break;
        case '\'': xpv_buf_puts(b, "&#39;"); break;
        default: xpv_buf_putc(b, c);
        }
    }
}

/* Integer with thousands separators (Python "{:,}"). */
static void td_commas(xpv_buf *b, int64_t v) {
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    int start = tmp[0] == '-' ? 1 : 0;
    for (int i = 0; i < n; i++) {
        xpv_buf_putc(b, tmp[i]);
        int left = n - i - 1;
        if (i >= start && left > 0 && left % 3 == 0) xpv_buf_putc(b, ',');
    }
}

/* A new table of `doc` with columns {id, type, label}. */
static xpv_dt *td_table(xpv_dt_doc *doc, const char *const cols[][3], size_t n) {
    xpv_dt *t = xpv_dt_doc_table(doc, XPV_DT_PROPS_LAST);
    for (size_t i = 0; i < n; i++) xpv_dt_add_col(t, cols[i][0], cols[i][2], cols[i][1], NULL);
    return t;
}

/* A cell property holding ps as exact microseconds. */
static void td_prop_us(xpv_dt *t, const char *key, int64_t ps, xpv_buf *tmp) {
    xpv_buf_reset(tmp);
    xpv_buf_ps_as_us(tmp, ps);
    xpv_dt_cell_prop(t, key, tmp->data, tmp->len);
}

static int64_t td_us(int64_t ps) { return ps / 1000000; }

static void td_graph_table(xpv_dt_doc *doc, const td_host *hosts, size_t nh) {
    static const char *const cols[][3] = {
        {"host", "string", "Host"}, {"input_pipeline", "string", "Input Pipeline"},
        {"rank", "number", "Rank"}, {"name", "string", "Name"},
        {"parent", "string", "Parent"}, {"type", "number", "Type"},
    };
    xpv_dt *t = td_table(doc, cols, 6);
    xpv_buf tmp;
    xpv_buf_init(&tmp);
    char num[32];
    for (size_t h = 0; h < nh; h++) {
        const td_host *ho = &hosts[h];
        for (size_t pi = 0; pi < ho->npipes; pi++) {
            const td_pipeline *pp = &ho->pipes[pi];
            for (size_t r = 0; r < pp->ncalls; r++) {
                const td_call *c = &pp->calls[r];
                for (size_t k = 0; k < c->nits; k++) {
                    const td_iter_stat *it = &c->its[k];
                    const td_iter_meta *m = td_meta(ho, it->id);
                    xpv_str nm = m ? m->name : xpv_cstr("");
                    xpv_str ln = m ? m->long_name : xpv_cstr("");
                    int type = it->blocking ? (it->id == c->bottleneck_id ? 2 : 1) : 0;
                    xpv_dt_row(t);
                    xpv_dt_str(t, ho->hostname);
                    xpv_dt_str(t, pp->name);
                    xpv_dt_int(t, (int64_t)r);
                    snprintf(num, sizeof num, "%lld", (long long)it->id);
                    xpv_dt_str(t, num);
                    xpv_buf_reset(&tmp);
                    xpv_buf_puts(&tmp, "<div style='padding: 1px;'><b>");
                    td_html(&tmp, nm);
                    xpv_buf_printf(&tmp,
                                   "</b><br/><div style='text-align: left;'>Start Time: %lld "
                                   "us<br/>Total Duration: %lld us<br/>Self Duration: %lld "
                                   "us<br/># Calls: %lld</div></div>",
                                   (long long)td_us(it->start_ps),
                                   (long long)td_us(it->duration_ps),
                                   (long long)td_us(it->self_ps), (long long)it->num_calls);
                    xpv_dt_cell_f(t, tmp.data, tmp.len);
                    xpv_dt_cell_prop(t, "name", nm.ptr, nm.len);
                    xpv_dt_cell_prop(t, "long_name", ln.ptr, ln.len);
                    td_prop_us(t, "start_time_us", it->start_ps, &tmp);
                    td_prop_us(t, "duration_us", it->duration_ps, &tmp);
                    td_prop_us(t, "self_time_us", it->self_ps, &tmp);
                    snprintf(num, sizeof num, "%lld", (long long)it->num_calls);
                    xpv_dt_cell_prop(t, "num_calls", num, strlen(num));
                    num[0] = '\0';
                    if (m && m->parent_id) snprintf(num, sizeof num, "%lld", (long long)m->parent_id);
                    xpv_dt_str(t, num);
                    xpv_dt_int(t, type);
                }
            }
        }
    }
    xpv_buf_free(&tmp);
}

static void td_summary_table(xpv_dt_doc *doc, const td_host *hosts, size_t nh) {
    static const char *const cols[][3] = {
        {"host", "string", "Host"}, {"input_pipeline", "string", "Input Pipeline"},
        {"min", "number", "Min (us)"}, {"mean", "number", "Avg (us)"},
        {"max", "number", "Max (us)"}, {"num_calls", "number", "# calls"},
        {"num_slow_calls", "number", "# slow calls"},
    };
    xpv_dt *t = td_table(doc, cols, 7);
    for (size_t h = 0; h < nh; h++) {
        for (size_t pi = 0; pi < hosts[h].npipes; pi++) {
            const td_pipeline *pp = &hosts[h].pipes[pi];
            xpv_dt_row(t);
            xpv_dt_str(t, hosts[h].hostname);
            xpv_dt_str(t, pp->name);
            xpv_dt_int(t, td_us(pp->min_ps));
            xpv_dt_int(t, td_us(pp->avg_ps));
            xpv_dt_int(t, td_us(pp->max_ps));
            xpv_dt_int(t, (int64_t)pp->ncalls);
            xpv_dt_int(t, pp->num_slow);
        }
    }
}

typedef struct td_slow {
    size_t host, pipe;
} td_slow;

static void td_bottleneck_table(xpv_dt_doc *doc, const td_host *hosts, size_t nh) {
    static const char *const cols[][3] = {
        {"host", "string", "Host"}, {"input_pipeline", "string", "Input Pipeline"},
        {"max_latency", "number", "Max Latency (us)"}, {"bottleneck", "string", "Bottleneck"},
        {"suggestion", "string", "Suggestion"},
    };
    size_t n = 0;
    for (size_t h = 0; h < nh; h++) n += hosts[h].npipes;
    td_slow *pipes = xpv_xmalloc((n + 1) * sizeof *pipes);
    xpv_ranked *rank = xpv_xmalloc((n + 1) * sizeof *rank);
    size_t ns = 0;
    for (size_t h = 0; h < nh; h++)
        for (size_t pi = 0; pi < hosts[h].npipes; pi++) {
            if (hosts[h].pipes[pi].is_device) continue;
            pipes[ns] = (td_slow){h, pi};
            rank[ns] = (xpv_ranked){hosts[h].pipes[pi].max_ps, ns};
            ns++;
        }
    /* Slowest first; host and pipeline order among equals. */
    xpv_ranked_sort_desc(rank, ns);
    td_slow *slow = xpv_xmalloc((n + 1) * sizeof *slow);
    for (size_t i = 0; i < ns; i++) slow[i] = pipes[rank[i].pos];
    free(rank);
    free(pipes);
    xpv_dt *t = td_table(doc, cols, 5);
    xpv_buf tmp;
    xpv_buf_init(&tmp);
    for (size_t i = 0; i < ns; i++) {
        const td_host *ho = &hosts[slow[i].host];
        const td_pipeline *pp = &ho->pipes[slow[i].pipe];
        const td_call *c = &pp->calls[0];
        const td_iter_meta *m = td_meta(ho, c->bottleneck_id);
        xpv_str nm = m ? m->name : xpv_cstr("");
        xpv_dt_row(t);
        xpv_dt_str(t, ho->hostname);
        xpv_dt_str(t, pp->name);
        xpv_dt_int(t, td_us(pp->max_ps));
        xpv_buf_reset(&tmp);
        xpv_buf_puts(&tmp, "<u>Iterator Type</u>: <b>");
        td_html(&tmp, nm);
        xpv_buf_puts(&tmp, "</b><br/><u>Long Name</u>: ");
        td_html(&tmp, m ? m->long_name : xpv_cstr(""));
        xpv_buf_puts(&tmp, "<br/><u>Latency</u>: ");
        td_commas(&tmp, td_us(c->bottleneck_ps));
        xpv_buf_puts(&tmp, " us");
        xpv_dt_strn(t, tmp.data, tmp.len);
        xpv_dt_str(t, td_suggestion(td_bottleneck_type(nm)));
    }
    xpv_buf_free(&tmp);

    int64_t max_ps = ns ? hosts[slow[0].host].pipes[slow[0].pipe].max_ps : 0;
    /* Device-side pipelines (prefetch to device) are in the tables above
     * but not in the bottleneck analysis, which XProf runs on host
     * pipelines only: say so instead of "no tf.data activity". */
    int64_t dev_max_ps = 0, dev_slow = 0;
    for (size_t h = 0; h < nh; h++)
        for (size_t pi = 0; pi < hosts[h].npipes; pi++)
            if (hosts[h].pipes[pi].is_device) {
                if (hosts[h].pipes[pi].max_ps > dev_max_ps) dev_max_ps = hosts[h].pipes[pi].max_ps;
                dev_slow += hosts[h].pipes[pi].num_slow;
            }
    char dev_msg[400];
    const char *msg;
    int bound = 0;
    if (max_ps > TD_SLOW_CALL_PS) {
        bound = 1;
        msg = "Your profile has a tf.data input pipeline slower than 50 us. For each slow "
              "input pipeline, below shows a bottleneck in the input pipeline and a "
              "suggestion on how to fix it.";
    } else if (max_ps > 0) {
        msg = "Your profile does not have any tf.data input pipeline slower than 50 us. "
              "Your job could be still input bound if this profile didn't capture all "
              "workers.";
    } else if (dev_max_ps > 0) {
        snprintf(dev_msg, sizeof dev_msg,
                 "Only device-side tf.data input pipelines (prefetch to device) were captured: "
                 "their slowest call took %lld us (%lld calls slower than 50 us; see the "
                 "tables below). The bottleneck analysis covers host-side pipelines, and this "
                 "profile has none.",
                 (long long)td_us(dev_max_ps), (long long)dev_slow);
        msg = dev_msg;
    } else {
        msg = "No tf.data activity captured in your profile. If your job uses tf.data, try "
              "to capture a longer profile.";
    }
    free(slow);
    xpv_dt_prop(t, "is_input_bound", bound ? "true" : "false");
    xpv_dt_prop(t, "summary_message", msg);
}

/* ==== Derived data: one analysed host per part ========================== */

/* The analysed hosts of a run, in host order.  Built host by host by the
 * server (each host's td_host is a part, cached apart from its profile, so
 * a many-host run never holds all its profiles), or at once by build(). */
typedef struct td_run {
    const td_host *const *hosts;   /* [n]; NULL: a host without a profile */
    size_t n;
    td_host **own;                 /* build()'s hosts, freed with the run */
} td_run;

static void *td_part_build(const xpv_profile *p, xpv_err *err) {
    (void)err;
    td_host *h = xpv_xcalloc(1, sizeof *h);
    td_analyze_host(p, h);
    return h;
}

static void td_part_free(void *part) {
    td_free_host(part);
    free(part);
}

static size_t td_part_size(const void *part) {
    const td_host *h = part;
    size_t n = sizeof *h + h->names.total + h->nmeta * (sizeof *h->meta + 16) +
               (h->npipes + 1) * sizeof *h->pipes;
    for (size_t i = 0; i < h->npipes; i++) {
        n += h->pipes[i].ncalls * sizeof *h->pipes[i].calls;
        for (size_t k = 0; k < h->pipes[i].ncalls; k++)
            n += h->pipes[i].calls[k].nits * sizeof(td_iter_stat);
    }
    return n;
}

static void *td_combine(const void *const *parts, const char *const *names, size_t n,
                        xpv_err *err) {
    (void)names;
    (void)err;
    td_run *r = xpv_xcalloc(1, sizeof *r);
    const td_host **hosts = xpv_xcalloc(n + 1, sizeof *hosts);
    for (size_t i = 0; i < n; i++) hosts[i] = parts[i];
    r->hosts = hosts;
    r->n = n;
    return r;
}

static void td_run_free(void *d) {
    td_run *r = d;
    if (!r) return;
    for (size_t i = 0; r->own && i < r->n; i++) td_part_free(r->own[i]);
    free(r->own);
    free((void *)r->hosts);
    free(r);
}

static size_t td_run_size(const void *d) {
    const td_run *r = d;
    size_t n = sizeof *r + (r->n + 1) * sizeof *r->hosts;
    for (size_t i = 0; r->own && i < r->n; i++) n += td_part_size(r->own[i]);
    return n;
}

static void *td_run_build(const xpv_hostset *hs, xpv_err *err) {
    td_host **own = xpv_xcalloc(hs->n + 1, sizeof *own);
    for (size_t i = 0; i < hs->n; i++)
        if (hs->profiles[i]) own[i] = td_part_build(hs->profiles[i], err);
    td_run *r = td_combine((const void *const *)own, hs->hostnames, hs->n, err);
    r->own = own;
    return r;
}

const xpv_derived_kind xpv_derived_tf_data = {
    .name = "tf_data",
    .build = td_run_build,
    .free = td_run_free,
    .size = td_run_size,
    .part_build = td_part_build,
    .part_free = td_part_free,
    .part_size = td_part_size,
    .combine = td_combine,
};

/* ==== Tool ================================================================ */

int xpv_tf_data_bottleneck_analysis_tables(const xpv_hostset *hs, const void *derived,
                                           const xpv_params *q, xpv_dt_doc *doc, xpv_err *err) {
    (void)q;
    const td_run *run = derived;
    td_run *own = NULL;
    if (!run) run = own = td_run_build(hs, err);
    /* The hosts as this request names them (the parts are shared). */
    td_host *hosts = xpv_xcalloc(hs->n + 1, sizeof *hosts);
    for (size_t i = 0; i < hs->n && i < run->n; i++) {
        if (run->hosts[i]) hosts[i] = *run->hosts[i];
        hosts[i].hostname = hs->hostnames[i];
    }
    td_graph_table(doc, hosts, hs->n);
    td_summary_table(doc, hosts, hs->n);
    td_bottleneck_table(doc, hosts, hs->n);
    free(hosts);
    td_run_free(own);
    return 0;
}

/* Offered when the host plane has tf.data iterator events. */
int xpv_tf_data_bottleneck_analysis_available(const xpv_profile *p) {
    const xpv_plane *pl = xpv_find_plane(p, "/host:CPU");
    if (!pl) return 0;
    for (uint32_t i = 0; i < pl->nevent_meta; i++)
        if (td_is_tfdata(pl->event_meta[i].name)) return 1;
    return 0;
}
