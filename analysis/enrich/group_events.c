/*
 * group_events.c - XLA's event grouping as a pure function of a const
 * profile.  See group_events.h for the rules.
 *
 * The graph has one node per event (flat over planes and lines; a line's
 * nodes are numbered in visit order: start, then longer first, which is
 * file order for captured lines).  Same-line nesting is a tree kept as
 * `parent` and `end` (a node's subtree is the node range (node, end) less
 * the `_a` events in it), so propagation spreads by range scans; the other
 * edges (producer -> consumer, executor -> iterator, TF loop iterations)
 * are few and listed, and launch -> kernel links are a sorted array.
 * Propagation from a root reaches every node joined to it by a path of
 * nodes no earlier root has grouped, which is what XProf's breadth-first
 * walk reaches.  The ids the graph does not hold (a TPU core's lines but
 * its grouping line, GPU events left ungrouped) are group_lines.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collections.h"
#include "group_events.h"
#include "group_events_int.h"
#include "par.h"

#define NO_NODE UINT32_MAX
#define NO_PID INT64_MIN

enum {
    NODE_ASYNC = 1,            /* `_a` event: neither parent nor child */
    NODE_OUT_EDGE = 2,         /* source of a listed edge */
    NODE_IN_EDGE = 4,          /* target of a listed edge */
    NODE_LAUNCH = 8,           /* host launch with kernels */
    NODE_KERNEL = 16,          /* kernel with a launch */
};

typedef struct root_rec {
    uint32_t node;
    int32_t level;
    int64_t start;
} root_rec;

typedef struct corr_rec {
    int64_t corr;
    uint32_t node;
} corr_rec;

typedef struct edge {
    uint32_t from, to, seq;    /* seq: creation order */
} edge;

typedef struct node_val {
    uint32_t node;
    int64_t v;
} node_val;

typedef struct exec_rec {
    int64_t step_id, iter;
    int64_t start;
    uint32_t node;
} exec_rec;

/* Where a node lives. */
typedef struct line_ref {
    uint32_t plane, line;
    uint64_t base;
    uint32_t *pos;             /* event index -> visit position, or NULL */
    uint32_t *ev;              /* visit position -> event index, or NULL */
    int nested;                /* parent and end are set for its nodes */
} line_ref;

typedef struct builder {
    const xpv_profile *p;
    xpv_groups *g;
    uint32_t gcap;             /* g->groups' capacity (zeroed past ngroups) */
    uint32_t nn;
    line_ref *lines;           /* flat, in line_off order */
    uint32_t nlines;
    int32_t *group;            /* per node */
    uint8_t *flags;
    uint32_t *parent, *end;
    edge *out_e, *in_e;
    size_t nedges;
    uint64_t *kl_by_launch;    /* launch << 32 | kernel, sorted */
    size_t nkl;
    corr_rec *kernels;         /* kernel node -> launch node (in .corr), by node */
    size_t nkernels;
    vec iters, steps, gtypes;  /* node_val, sorted by node */
    i64map seen;
    uint32_t stamp;
    vec queue, pars;
    uint32_t line_hint;        /* line_of's last answer (serial phases only) */
    /* TPU cores' groups, named after the per-line ids are set going (see
     * group_tpu_cores): group tpu_next + i by root namer[i] of line
     * namer_lr[i] */
    uint32_t *namer, nnamed;
    const line_ref **namer_lr;
    int32_t tpu_next;
    uint32_t *stack;           /* nest_line_of's scratch */
    int64_t *stack_end;
    size_t stack_cap;
    int inert;                 /* only TPU planes take part (only_tpu_groups) */
} builder;

/* ==== Small helpers ====================================================== */

static int same_key(const ctx_key *x, const ctx_key *y) {
    return x->type == y->type && x->id == y->id && x->id2 == y->id2;
}

static int cmp_root(const void *a, const void *b) {
    const root_rec *x = a, *y = b;
    if (x->level != y->level) return x->level > y->level ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

static int cmp_edge_from(const void *a, const void *b) {
    const edge *x = a, *y = b;
    if (x->from != y->from) return x->from < y->from ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int cmp_edge_to(const void *a, const void *b) {
    const edge *x = a, *y = b;
    if (x->to != y->to) return x->to < y->to ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int cmp_node_val(const void *a, const void *b) {
    const node_val *x = a, *y = b;
    return (x->node > y->node) - (x->node < y->node);
}

static int cmp_exec(const void *a, const void *b) {
    const exec_rec *x = a, *y = b;
    if (x->step_id != y->step_id) return x->step_id < y->step_id ? -1 : 1;
    if (x->iter != y->iter) return x->iter < y->iter ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

static size_t edge_first(const edge *E, size_t n, uint32_t node, int by_to) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        uint32_t k = by_to ? E[mid].to : E[mid].from;
        if (k < node) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static const node_val *find_val(const vec *v, uint32_t node) {
    size_t lo = 0, hi = v->n;
    const node_val *arr = v->p;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (arr[mid].node < node) lo = mid + 1;
        else hi = mid;
    }
    return lo < v->n && arr[lo].node == node ? &arr[lo] : NULL;
}

static int is_tpu_plane(const xpv_plane *pl) {
    return xpv_str_has_prefix(pl->name, "/device:TPU:");
}

/* TensorCore planes are "/device:TPU:<digits>". */
static int is_tensor_core_plane(const xpv_plane *pl) {
    if (!is_tpu_plane(pl)) return 0;
    uint32_t n = (uint32_t)strlen("/device:TPU:");
    if (pl->name.len == n) return 0;
    for (uint32_t i = n; i < pl->name.len; i++)
        if (pl->name.ptr[i] < '0' || pl->name.ptr[i] > '9') return 0;
    return 1;
}

static int space_has_loop_ops(const xpv_profile *p) {
    static const char *const loops[] = {"WhileOp-EvalCond", "WhileOp-StartBody", "ForOp",
                                        "ParallelForOp", "ForeverOp"};
    for (uint32_t k = 0; k < p->nplanes; k++) {
        const xpv_plane *pl = &p->planes[k];
        for (uint32_t i = 0; i < pl->nevent_meta; i++)
            for (size_t j = 0; j < sizeof loops / sizeof loops[0]; j++)
                if (xpv_str_eq(pl->event_meta[i].name, loops[j])) return 1;
    }
    return 0;
}

/* Whether only TPU planes can take part in the grouping, so the others
 * need no scan (their events all stay ungrouped): no plane but TPU ones
 * can hold a root (no `_r` stat, no TraceContext or ExecutorState::Process
 * event), no TPU plane can produce a context (no `_p`/`_pt` stat: a TPU
 * group spreads nowhere), and no other plane holds a value a TPU group's
 * name could read through its consumers' producers (no `iter_num`,
 * `step_num` or `graph_type` stat).  That is JAX on TPU without step
 * annotations: the host plane's millions of events are skipped. */
static int only_tpu_groups(const xpv_profile *p) {
    int tpu = 0;
    for (uint32_t k = 0; k < p->nplanes; k++) {
        const xpv_plane *pl = &p->planes[k];
        if (is_tpu_plane(pl)) {
            tpu = 1;
            if (xpv_stat_id(pl, "_p") >= 0 && xpv_stat_id(pl, "_pt") >= 0) return 0;
            continue;
        }
        static const char *const stats[] = {"_r", "iter_num", "step_num", "graph_type"};
        for (size_t i = 0; i < sizeof stats / sizeof stats[0]; i++)
            if (xpv_stat_id(pl, stats[i]) >= 0) return 0;
        for (uint32_t i = 0; i < pl->nevent_meta; i++) {
            xpv_str nm = pl->event_meta[i].name;
            if (xpv_str_eq(nm, "TraceContext") || xpv_str_eq(nm, "ExecutorState::Process")) return 0;
        }
    }
    return tpu;
}

/* Whether a group root can exist: a plane defines the `_r` stat, holds a
 * TraceContext or ExecutorState::Process event metadata (legacy and TF
 * loop roots), or is a TensorCore plane with a grouping line. */
static int space_may_have_roots(const xpv_profile *p) {
    for (uint32_t k = 0; k < p->nplanes; k++) {
        const xpv_plane *pl = &p->planes[k];
        if (xpv_stat_id(pl, "_r") >= 0) return 1;
        if (is_tensor_core_plane(pl) && xpv_ge_tpu_grouping_line(pl) >= 0) return 1;
        for (uint32_t i = 0; i < pl->nevent_meta; i++) {
            xpv_str nm = pl->event_meta[i].name;
            if (xpv_str_eq(nm, "TraceContext") || xpv_str_eq(nm, "ExecutorState::Process")) return 1;
        }
    }
    return 0;
}

/* The line holding node `x` (the last one found, else a binary search
 * over line bases; propagation mostly stays on a line). */
static line_ref *line_of(builder *b, uint32_t x) {
    uint32_t c = b->line_hint;
    if (c < b->nlines && b->lines[c].base <= x && (c + 1 == b->nlines || x < b->lines[c + 1].base))
        return &b->lines[c];
    uint32_t lo = 0, hi = b->nlines;
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if (b->lines[mid].base <= x) lo = mid;
        else hi = mid;
    }
    b->line_hint = lo;
    return &b->lines[lo];
}

static uint32_t event_of(const line_ref *lr, uint32_t x) {
    uint32_t v = (uint32_t)(x - lr->base);
    return lr->ev ? lr->ev[v] : v;
}

/* Same-line nesting (parent, end) of the line holding node `x`, computed
 * the first time propagation or an ancestor query reaches the line: most
 * lines of a big profile are never reached (no root, no edge into them)
 * and cost no more than the scan of their stats.  The parent of an event
 * is the innermost open event that ends no earlier; popped events end at
 * the node that pops them; `_a` events neither nest nor hold. */
static void nest_line_of(builder *b, uint32_t x) {
    line_ref *lr = line_of(b, x);
    if (lr->nested) return;
    lr->nested = 1;
    const xpv_line *ln = &b->p->planes[lr->plane].lines[lr->line];
    uint32_t ne = ln->nevents, base = (uint32_t)lr->base;
    if (b->stack_cap < ne) {
        b->stack_cap = ne;
        b->stack = xpv_xrealloc(b->stack, ne * sizeof *b->stack);
        b->stack_end = xpv_xrealloc(b->stack_end, ne * sizeof *b->stack_end);
    }
    uint32_t *st = b->stack;
    int64_t *st_end = b->stack_end;
    size_t sp = 0;
    for (uint32_t j = 0; j < ne; j++) {
        uint32_t node = base + j;
        if (b->flags[node] & NODE_ASYNC) {
            b->parent[node] = NO_NODE;
            b->end[node] = node + 1;
            continue;
        }
        const xpv_event *ev = &ln->events[lr->ev ? lr->ev[j] : j];
        int64_t e = ev->start_ps + ev->dur_ps;
        while (sp > 0 && !(st_end[sp - 1] >= e)) b->end[st[--sp]] = node;
        b->parent[node] = sp > 0 ? st[sp - 1] : NO_NODE;
        st[sp] = node;
        st_end[sp] = e;
        sp++;
    }
    while (sp > 0) b->end[st[--sp]] = base + ne;
}

/* Parents of `x` in XProf's order: nesting, launch, listed edges. */
static void parents_of(builder *b, uint32_t x) {
    b->pars.n = 0;
    nest_line_of(b, x);
    if (b->parent[x] != NO_NODE) *(uint32_t *)vec_push(&b->pars) = b->parent[x];
    if (b->flags[x] & NODE_KERNEL) {
        size_t lo = 0, hi = b->nkernels;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (b->kernels[mid].node < x) lo = mid + 1;
            else hi = mid;
        }
        if (lo < b->nkernels && b->kernels[lo].node == x)
            *(uint32_t *)vec_push(&b->pars) = (uint32_t)b->kernels[lo].corr;
    }
    if (b->flags[x] & NODE_IN_EDGE)
        for (size_t k = edge_first(b->in_e, b->nedges, x, 1); k < b->nedges && b->in_e[k].to == x;
             k++)
            *(uint32_t *)vec_push(&b->pars) = b->in_e[k].from;
}

/* A breadth-first walk over the ancestors of a node (each visited once;
 * uses the builder's queue, pars and seen stamps, so one walk at a time). */
typedef struct anc_walk {
    size_t qh, k;
} anc_walk;

static void anc_start(builder *b, anc_walk *w, uint32_t x) {
    b->queue.n = 0;
    b->stamp++;
    i64map_put(&b->seen, x, b->stamp);
    *(uint32_t *)vec_push(&b->queue) = x;
    w->qh = 0;
    w->k = b->pars.n;   /* no parents read yet */
}

/* The next ancestor into *z: 0 when the walk is over. */
static int anc_next(builder *b, anc_walk *w, uint32_t *z) {
    for (;;) {
        while (w->k < b->pars.n) {
            uint32_t p = ((uint32_t *)b->pars.p)[w->k++], sv;
            if (i64map_get(&b->seen, p, &sv) && sv == b->stamp) continue;
            i64map_put(&b->seen, p, b->stamp);
            *(uint32_t *)vec_push(&b->queue) = p;
            *z = p;
            return 1;
        }
        if (w->qh >= b->queue.n) return 0;
        parents_of(b, ((uint32_t *)b->queue.p)[w->qh++]);
        w->k = 0;
    }
}

/* Breadth-first over `x` and its ancestors: the first node found in the
 * sorted list `v` (XProf's GetContextStat). */
static const node_val *context_val(builder *b, const vec *v, uint32_t x) {
    if (!v->n) return NULL;
    const node_val *hit = find_val(v, x);
    if (hit) return hit;
    anc_walk w;
    uint32_t z;
    anc_start(b, &w, x);
    while (anc_next(b, &w, &z))
        if ((hit = find_val(v, z))) return hit;
    return NULL;
}

/* Whether an ancestor of `x` is a root of level `level` (level_of: node
 * -> root level). */
static int ancestor_with_level(builder *b, const i64map *level_of, uint32_t x, int32_t level) {
    anc_walk w;
    uint32_t z, lv;
    anc_start(b, &w, x);
    while (anc_next(b, &w, &z))
        if (i64map_get(level_of, z, &lv) && (int32_t)lv == level) return 1;
    return 0;
}

/* ==== Propagation ========================================================= */

static void push_child(builder *b, vec *work, uint32_t y, int32_t gid) {
    if (b->group[y] >= 0) return;
    b->group[y] = gid;
    *(uint32_t *)vec_push(work) = y;
}

/* The listed children and kernels of `x`. */
static void push_edge_children(builder *b, vec *work, uint32_t x, int32_t gid) {
    if (b->flags[x] & NODE_OUT_EDGE)
        for (size_t k = edge_first(b->out_e, b->nedges, x, 0);
             k < b->nedges && b->out_e[k].from == x; k++)
            push_child(b, work, b->out_e[k].to, gid);
    if (b->flags[x] & NODE_LAUNCH) {
        uint64_t key = (uint64_t)x << 32;
        size_t lo = 0, hi = b->nkl;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (b->kl_by_launch[mid] < key) lo = mid + 1;
            else hi = mid;
        }
        for (; lo < b->nkl && (b->kl_by_launch[lo] >> 32) == x; lo++)
            push_child(b, work, (uint32_t)(b->kl_by_launch[lo] & 0xffffffffu), gid);
    }
}

/* Give `gid` to the root and every node reachable through ungrouped nodes.
 * Returns 0 when the root was grouped already (nothing spreads). */
static int propagate(builder *b, uint32_t root, int32_t gid, vec *work) {
    if (b->group[root] >= 0) return 0;
    work->n = 0;
    b->group[root] = gid;
    *(uint32_t *)vec_push(work) = root;
    while (work->n) {
        uint32_t x = ((uint32_t *)work->p)[--work->n];
        push_edge_children(b, work, x, gid);
        if (b->flags[x] & NODE_ASYNC) continue;
        nest_line_of(b, x);
        uint32_t y = x + 1, stop = b->end[x];
        while (y < stop) {
            if (b->group[y] >= 0) {
                y = b->end[y];
                continue;
            }
            if (b->flags[y] & NODE_ASYNC) {
                y++;
                continue;
            }
            b->group[y] = gid;
            if (b->flags[y] & (NODE_OUT_EDGE | NODE_LAUNCH)) push_edge_children(b, work, y, gid);
            y++;
        }
    }
    return 1;
}

static int is_implicit_root(const xpv_plane *pl, const xpv_line *ln, const xpv_event *ev) {
    xpv_str nm = pl->event_meta[ev->meta].name;
    if (xpv_str_eq(nm, "FunctionRun") || xpv_str_eq(nm, "SessionRun") ||
        xpv_str_eq(nm, "RunGraph") || xpv_str_eq(nm, "ExecutorState::Process"))
        return 1;
    if (is_tpu_plane(pl))
        return xpv_str_eq(ln->name, "Steps") || xpv_str_eq(ln->name, "Sparse Core Steps") ||
               xpv_str_eq(ln->name, "XLA Modules") ||
               xpv_str_eq(ln->name, "Sparse Core Modules");
    return 0;
}

/* `v` in decimal at `out` (at least 21 bytes), NUL-terminated; returns
 * its length. */
static size_t fmt_i64(char *out, int64_t v) {
    char tmp[24];
    size_t k = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[k++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    size_t n = 0;
    if (v < 0) out[n++] = '-';
    while (k) out[n++] = tmp[--k];
    out[n] = '\0';
    return n;
}

/* Record group `gid` rooted at `root` with its name (XProf's
 * ProcessRootEvent; a later root of the same id renames it). */
static void name_group(builder *b, const line_ref *lr, uint32_t root, int32_t gid) {
    xpv_groups *g = b->g;
    if (!lr) lr = line_of(b, root);
    uint32_t ei = event_of(lr, root);
    const xpv_plane *pl = &b->p->planes[lr->plane];
    const xpv_line *ln = &pl->lines[lr->line];
    const xpv_event *ev = &ln->events[ei];
    int implicit = is_implicit_root(pl, ln, ev);
    char buf[512];
    size_t n = 0;
    const node_val *gt = context_val(b, &b->gtypes, root);
    xpv_str label = {"", 0};
    if (gt) {
        const line_ref *gl = line_of(b, gt->node);
        const xpv_plane *gp = &b->p->planes[gl->plane];
        const xpv_line *gln = &gp->lines[gl->line];
        xpv_stat st;
        int32_t sid = xpv_stat_id(gp, "graph_type");
        if (sid >= 0 && xpv_event_stat(gp, gln, &gln->events[event_of(gl, gt->node)], sid, &st) &&
            st.kind == XPV_STAT_STR)
            label = st.v.s;
        n = (size_t)snprintf(buf, sizeof buf, "%.*s ", (int)(label.len > 400 ? 400 : label.len),
                             label.ptr ? label.ptr : "");
    } else if (!implicit) {
        xpv_str nm = pl->event_meta[ev->meta].name;
        n = (size_t)snprintf(buf, sizeof buf, "%.*s ", (int)(nm.len > 400 ? 400 : nm.len),
                             nm.ptr ? nm.ptr : "");
    }
    int64_t num = gid;
    const node_val *it = context_val(b, &b->iters, root);
    if (!it) it = context_val(b, &b->steps, root);
    if (it) num = it->v;
    n += fmt_i64(buf + n, num);
    if ((uint32_t)gid >= b->gcap) {
        uint32_t old = b->gcap;
        b->gcap = (uint32_t)gid + 1 > 2 * old ? (uint32_t)gid + 1 : 2 * old;
        g->groups = xpv_xrealloc(g->groups, (size_t)b->gcap * sizeof *g->groups);
        memset(g->groups + old, 0, (b->gcap - old) * sizeof *g->groups);
    }
    if ((uint32_t)gid >= g->ngroups) g->ngroups = (uint32_t)gid + 1;
    xpv_group_info *gi = &g->groups[gid];
    gi->name = xpv_arena_strndup(&g->arena, buf, n);
    gi->plane = lr->plane;
    gi->line = lr->line;
    gi->event = ei;
    gi->step_name = !implicit;
}

/* ==== The scan ============================================================ */

/* Stat ids read per event, as indices into the stat set. */
enum {
    GS_R, GS_STEP, GS_ITER, GS_PT, GS_P, GS_CT, GS_C, GS_ID, GS_CORR, GS_ASYNC, GS_GT, GS_COUNT
};

typedef struct scan_out {
    vec prod, cons, roots, launches, kernels, execs;
    vec iters, steps, gtypes;  /* node_val, in scan order */
    i64map tfdata_ids;
} scan_out;

/* Values by GS_* index; `has` bit i when value i is present (GS_ASYNC: a
 * non-zero `_a`; GS_GT: a string graph_type). */
typedef struct ev_stats {
    uint32_t has;
    int64_t v[GS_COUNT];
} ev_stats;

/* Set field `i` of `s` from stat value `v`. */
static void set_stat(ev_stats *s, int i, const xpv_stat *v) {
    int ok;
    if (i == GS_GT) ok = v->kind == XPV_STAT_STR;
    else ok = xpv_stat_as_int(v, &s->v[i]) && (i != GS_ASYNC || s->v[i] != 0);
    if (ok) s->has |= 1u << i;
    else s->has &= ~(1u << i);
}

/* The event's grouping stats over those of its metadata (`dflt`, may be
 * NULL): XProf's event visitor sees both. */
static void read_stats(const xpv_plane *pl, const xpv_line *ln, const xpv_event *ev,
                       const xpv_stat_set *set, const ev_stats *dflt, ev_stats *s) {
    if (dflt) *s = *dflt;
    else s->has = 0;
    if (ev->wire == XPV_NO_STATS) return;
    xpv_stat sv[GS_COUNT];
    uint32_t got = xpv_event_stats_in(pl, ln, ev, set, sv, NULL);
    for (; got; got &= got - 1) {
        int i = __builtin_ctz(got);
        set_stat(s, i, &sv[i]);
    }
}

/* Per event metadata, its grouping stats; NULL when no metadata has any. */
static ev_stats *meta_stats(const xpv_plane *pl, const int32_t *sids) {
    ev_stats *m = NULL;
    for (uint32_t i = 0; i < pl->nevent_meta; i++) {
        const xpv_event_meta *em = &pl->event_meta[i];
        for (uint32_t k = 0; k < em->nstats; k++)
            for (int j = 0; j < GS_COUNT; j++)
                if (sids[j] >= 0 && em->stats[k].meta == sids[j]) {
                    if (!m) m = xpv_xcalloc(pl->nevent_meta, sizeof *m);
                    set_stat(&m[i], j, &em->stats[k]);
                }
    }
    return m;
}

static void add_ctx(scan_out *o, const ev_stats *s, int64_t pid, uint32_t node) {
    if ((s->has & (1u << GS_PT)) && (s->has & (1u << GS_P))) {
        ctx_key *c = vec_push(&o->prod);
        *c = (ctx_key){s->v[GS_PT], s->v[GS_P], pid, node};
    }
    if ((s->has & (1u << GS_CT)) && (s->has & (1u << GS_C))) {
        ctx_key *c = vec_push(&o->cons);
        *c = (ctx_key){s->v[GS_CT], s->v[GS_C], pid, node};
    }
}

static void add_vals(scan_out *o, const ev_stats *s, uint32_t node) {
    if ((s->has & (1u << GS_ITER))) *(node_val *)vec_push(&o->iters) = (node_val){node, s->v[GS_ITER]};
    if ((s->has & (1u << GS_STEP))) *(node_val *)vec_push(&o->steps) = (node_val){node, s->v[GS_STEP]};
    if ((s->has & (1u << GS_GT))) *(node_val *)vec_push(&o->gtypes) = (node_val){node, 1};
}

enum { MK_NONE, MK_TRACE_CONTEXT, MK_EXECUTOR, MK_ITERATOR, MK_TFDATA, MK_ALLOC };

static uint8_t *meta_kinds(const xpv_plane *pl) {
    uint8_t *mk = xpv_xcalloc(pl->nevent_meta ? pl->nevent_meta : 1, 1);
    for (uint32_t i = 0; i < pl->nevent_meta; i++) {
        xpv_str nm = pl->event_meta[i].name;
        if (xpv_str_eq(nm, "TraceContext")) mk[i] = MK_TRACE_CONTEXT;
        else if (xpv_str_eq(nm, "ExecutorState::Process")) mk[i] = MK_EXECUTOR;
        else if (xpv_str_eq(nm, "IteratorGetNextOp::DoCompute") ||
                 xpv_str_eq(nm, "IteratorGetNextAsOptionalOp::DoCompute"))
            mk[i] = MK_ITERATOR;
        else if (xpv_str_has_prefix(nm, "InstantiatedCapturedFunction::Run"))
            mk[i] = MK_TFDATA;
        else if (xpv_str_eq(nm, "MemoryAllocation") || xpv_str_eq(nm, "MemoryDeallocation"))
            mk[i] = MK_ALLOC; /* allocator TraceMes: many stats, none for grouping */
    }
    return mk;
}

/* Visit order of a line; sets lr->pos/ev when it is not file order. */
static void visit_order(line_ref *lr, const xpv_line *ln) {
    lr->ev = xpv_line_time_order(ln);
    if (!lr->ev) return;
    lr->pos = xpv_xmalloc(ln->nevents * sizeof *lr->pos);
    for (uint32_t j = 0; j < ln->nevents; j++) lr->pos[lr->ev[j]] = j;
}

/* What the scan reads of a plane, resolved once before the workers. */
typedef struct plane_scan {
    int is_host, tpu, gline, any_stat;
    int mdef_ctx;              /* some event metadata holds a context stat */
    int inert;                 /* not scanned: only_tpu_groups() */
    int no_ctx;                /* contexts not read: only_tpu_groups() */
    int trace_context;         /* some event metadata is TraceContext (a root) */
    int32_t sids[GS_COUNT];
    xpv_stat_set set;
    xpv_stat_set ctx_set;      /* _pt, _p, _ct, _c: for xpv_line_may_have */
    int64_t pid;
    uint8_t *mk;               /* per event metadata: MK_* */
    ev_stats *mdef;            /* per event metadata: its grouping stats, or NULL */
} plane_scan;

static void plane_scan_init(plane_scan *ps, const xpv_plane *pl) {
    static const char *const names[GS_COUNT] = {"_r",  "step_num", "iter_num",       "_pt",
                                                "_p",  "_ct",      "_c",             "id",
                                                "correlation_id", "_a", "graph_type"};
    memset(ps, 0, sizeof *ps);
    ps->is_host = xpv_str_eq(pl->name, "/host:CPU");
    ps->tpu = is_tpu_plane(pl);
    ps->gline = ps->tpu ? xpv_ge_tpu_grouping_line(pl) : -1;
    for (int i = 0; i < GS_COUNT; i++) {
        ps->sids[i] = xpv_stat_id(pl, names[i]);
        if (ps->sids[i] >= 0 && i != GS_GT) ps->any_stat = 1;
    }
    xpv_stat_set_init(&ps->set, pl, ps->sids, GS_COUNT);
    xpv_stat_set_init(&ps->ctx_set, pl, ps->sids + GS_PT, 4);
    ps->pid = NO_PID;
    int32_t sid_pid = xpv_stat_id(pl, "process_id");
    xpv_stat pst;
    if (sid_pid >= 0 && xpv_plane_stat(pl, sid_pid, &pst)) {
        int64_t v;
        if (xpv_stat_as_int(&pst, &v)) ps->pid = (int32_t)v;
    }
    ps->mk = meta_kinds(pl);
    for (uint32_t i = 0; i < pl->nevent_meta; i++)
        if (ps->mk[i] == MK_TRACE_CONTEXT) ps->trace_context = 1;
    ps->mdef = meta_stats(pl, ps->sids);
    const uint32_t ctx_bits = (1u << GS_PT) | (1u << GS_P) | (1u << GS_CT) | (1u << GS_C);
    for (uint32_t i = 0; ps->mdef && i < pl->nevent_meta; i++)
        if (ps->mdef[i].has & ctx_bits) ps->mdef_ctx = 1;
}

/* When only TPU planes take part no plane produces a context (and the
 * others are not scanned), so a TPU event's consumer context can link to
 * nothing: the TPU scan leaves contexts out of what it reads. */
static void drop_contexts(plane_scan *ps, const xpv_plane *pl) {
    const uint32_t ctx_bits = (1u << GS_PT) | (1u << GS_P) | (1u << GS_CT) | (1u << GS_C);
    int32_t sids[GS_COUNT];
    memcpy(sids, ps->sids, sizeof sids);
    ps->any_stat = 0;
    for (int i = 0; i < GS_COUNT; i++) {
        if (ctx_bits & (1u << i)) sids[i] = -1;
        if (sids[i] >= 0 && i != GS_GT) ps->any_stat = 1;
    }
    xpv_stat_set_init(&ps->set, pl, sids, GS_COUNT);
    int any = 0;
    for (uint32_t i = 0; ps->mdef && i < pl->nevent_meta; i++) {
        ps->mdef[i].has &= ~ctx_bits;
        any |= ps->mdef[i].has != 0;
    }
    if (!any) {
        free(ps->mdef);
        ps->mdef = NULL;
    }
    ps->mdef_ctx = 0;
    ps->no_ctx = 1;
}

/* One worker of the scan: a contiguous run of units (a TPU plane, or one
 * line of another plane), its own outputs and buffers.  Outputs of the
 * workers are joined in unit order, so the result does not depend on how
 * many there were. */
typedef struct scan_unit {
    uint32_t plane;
    int32_t line;              /* -1: the whole (TPU) plane */
    uint64_t weight;           /* events */
} scan_unit;

typedef struct worker {
    builder *b;
    const plane_scan *ps;      /* per plane */
    const scan_unit *units;
    size_t nunits;
    scan_out o;
} worker;

/* A TPU plane: only the grouping line's events are nodes; the context
 * stats of the events they cover (other lines) are theirs. */
static void scan_tpu_plane(worker *w, uint32_t k) {
    builder *b = w->b;
    const xpv_plane *pl = &b->p->planes[k];
    const plane_scan *ps = &w->ps[k];
    scan_out *o = &w->o;
    uint32_t l0 = b->g->plane_line0[k];
    ev_stats s;
    /* Only the grouping line's nodes are ever reached or read: the other
     * lines' ids are set from it at the end (their node slots stay as
     * allocated, never touched). */
    for (uint32_t l = 0; l < pl->nlines; l++) b->lines[l0 + l].nested = 1;
    int gline = ps->gline;
    if (gline < 0) return;
    const xpv_line *gl = &pl->lines[gline];
    uint64_t gbase = b->lines[l0 + (uint32_t)gline].base;
    memset(b->group + gbase, 0xff, gl->nevents * sizeof *b->group);
    memset(b->flags + gbase, 0, gl->nevents);
    for (uint32_t j = 0; j < gl->nevents; j++) {
        b->parent[gbase + j] = NO_NODE;
        b->end[gbase + j] = (uint32_t)(gbase + j + 1);
    }
    if (!ps->any_stat && !ps->mdef) return;
    const ev_stats *mdef = ps->mdef;
    /* (no grouping-line event holds a stat read: nothing to add) */
    for (uint32_t j = 0; j < gl->nevents && (mdef || xpv_line_may_have(gl, &ps->set)); j++) {
        read_stats(pl, gl, &gl->events[j], &ps->set, mdef ? &mdef[gl->events[j].meta] : NULL, &s);
        add_ctx(o, &s, ps->pid, (uint32_t)(gbase + j));
        add_vals(o, &s, (uint32_t)(gbase + j));
    }
    for (uint32_t l = 0; l < pl->nlines && !ps->no_ctx; l++) {
        if ((int)l == gline) continue;
        const xpv_line *ln = &pl->lines[l];
        /* (a line none of whose events can hold a context stat adds
         * nothing: skipped without reading its events' bytes) */
        if (!ps->mdef_ctx && !xpv_line_may_have(ln, &ps->ctx_set)) continue;
        uint32_t pi = 0;
        for (uint32_t j = 0; j < ln->nevents; j++) {
            const xpv_event *ev = &ln->events[j];
            while (pi < gl->nevents &&
                   gl->events[pi].start_ps + gl->events[pi].dur_ps <= ev->start_ps)
                pi++;
            if (pi == gl->nevents) break;
            const xpv_event *pe = &gl->events[pi];
            if (!(pe->start_ps <= ev->start_ps &&
                  ev->start_ps + ev->dur_ps <= pe->start_ps + pe->dur_ps))
                continue;
            if (ev->wire == XPV_NO_STATS && !mdef) continue;
            read_stats(pl, ln, ev, &ps->set, mdef ? &mdef[ev->meta] : NULL, &s);
            ev_stats only = s;
            only.has &= (1u << GS_PT) | (1u << GS_P) | (1u << GS_CT) | (1u << GS_C);
            add_ctx(o, &only, ps->pid, (uint32_t)(gbase + pi));
        }
    }
}

/* One line of a host or GPU plane: its events' context stats, roots,
 * launches and kernels, and which events are `_a` (the nesting itself
 * waits until propagation reaches the line: nest_line_of). */
static void scan_line(worker *w, uint32_t k, uint32_t l) {
    builder *b = w->b;
    const xpv_plane *pl = &b->p->planes[k];
    const plane_scan *ps = &w->ps[k];
    const ev_stats *mdef = ps->mdef;
    const uint8_t *mk = ps->mk;
    scan_out *o = &w->o;
    const xpv_line *ln = &pl->lines[l];
    line_ref *lr = &b->lines[b->g->plane_line0[k] + l];
    uint32_t ne = ln->nevents;
    ev_stats s;
    uint32_t base = (uint32_t)lr->base;
    /* (never reached, no node order needed: it stores no ids, all -1:
     * see mark_inert_lines; its node slots are never touched) */
    if (ps->inert) return;
    memset(b->group + base, 0xff, (size_t)ne * sizeof *b->group);
    memset(b->flags + base, 0, ne);
    visit_order(lr, ln);
    /* (no event of the line holds a grouping stat: none is read; nothing
     * to record without one but TraceContext roots) */
    int any_stat = ps->any_stat && xpv_line_may_have(ln, &ps->set);
    if (!any_stat && !mdef && !ps->trace_context) return;
    for (uint32_t j = 0; j < ne; j++) {
        const xpv_event *ev = &ln->events[lr->ev ? lr->ev[j] : j];
        uint32_t node = base + j;
        uint8_t kind = ev->meta < pl->nevent_meta ? mk[ev->meta] : MK_NONE;
        if (any_stat && kind != MK_ALLOC && ev->wire != XPV_NO_STATS)
            read_stats(pl, ln, ev, &ps->set, mdef ? &mdef[ev->meta] : NULL, &s);
        else if (mdef)
            s = mdef[ev->meta];
        else
            s.has = 0;
        if (!s.has && kind != MK_TRACE_CONTEXT) continue; /* nothing below applies */
        if (s.has & (1u << GS_ASYNC)) b->flags[node] |= NODE_ASYNC;
        add_ctx(o, &s, ps->pid, node);
        add_vals(o, &s, node);
        if (kind == MK_EXECUTOR && (s.has & (1u << GS_ID)) && (s.has & (1u << GS_ITER))) {
            *(ctx_key *)vec_push(&o->prod) = (ctx_key){TYPE_EXECUTOR, s.v[GS_ID], s.v[GS_ITER], node};
            *(exec_rec *)vec_push(&o->execs) = (exec_rec){s.v[GS_ID], s.v[GS_ITER], ev->start_ps, node};
        }
        if (kind == MK_ITERATOR && (s.has & (1u << GS_ID)) && (s.has & (1u << GS_ITER)))
            *(ctx_key *)vec_push(&o->cons) = (ctx_key){TYPE_EXECUTOR, s.v[GS_ID], s.v[GS_ITER], node};
        if (kind == MK_TFDATA && (s.has & (1u << GS_ID))) i64map_put(&o->tfdata_ids, s.v[GS_ID], 1);
        int64_t level = (s.has & (1u << GS_R)) ? s.v[GS_R] : kind == MK_TRACE_CONTEXT ? 1 : 0;
        if (level > 0) {
            root_rec *rr = vec_push(&o->roots);
            rr->node = node;
            rr->level = (int32_t)(level > INT32_MAX ? INT32_MAX : level);
            rr->start = ev->start_ps;
        }
        if ((s.has & (1u << GS_CORR)))
            *(corr_rec *)vec_push(ps->is_host ? &o->launches : &o->kernels) =
                (corr_rec){s.v[GS_CORR], node};
    }
}

static void worker_run(void *arg) {
    worker *w = arg;
    for (size_t u = 0; u < w->nunits; u++) {
        const scan_unit *su = &w->units[u];
        if (su->line < 0) scan_tpu_plane(w, su->plane);
        else scan_line(w, su->plane, (uint32_t)su->line);
    }
}

static void scan_out_init(scan_out *o) {
    memset(o, 0, sizeof *o);
    o->prod.sz = o->cons.sz = sizeof(ctx_key);
    o->roots.sz = sizeof(root_rec);
    o->launches.sz = o->kernels.sz = sizeof(corr_rec);
    o->execs.sz = sizeof(exec_rec);
    o->iters.sz = o->steps.sz = o->gtypes.sz = sizeof(node_val);
}

static void vec_append(vec *dst, vec *src) {
    if (!src->n) return;
    if (!dst->n) {
        free(dst->p);
        *dst = *src;
        memset(src, 0, sizeof *src);
        return;
    }
    if (dst->n + src->n > dst->cap) {
        dst->cap = dst->n + src->n;
        dst->p = xpv_xrealloc(dst->p, dst->cap * dst->sz);
    }
    memcpy((char *)dst->p + dst->n * dst->sz, src->p, src->n * src->sz);
    dst->n += src->n;
    free(src->p);
    memset(src, 0, sizeof *src);
}

/* Join `src` (a later run of units) onto `dst`. */
static void scan_out_join(scan_out *dst, scan_out *src) {
    vec_append(&dst->prod, &src->prod);
    vec_append(&dst->cons, &src->cons);
    vec_append(&dst->roots, &src->roots);
    vec_append(&dst->launches, &src->launches);
    vec_append(&dst->kernels, &src->kernels);
    vec_append(&dst->execs, &src->execs);
    vec_append(&dst->iters, &src->iters);
    vec_append(&dst->steps, &src->steps);
    vec_append(&dst->gtypes, &src->gtypes);
    for (size_t i = 0; i < src->tfdata_ids.cap; i++)
        if (src->tfdata_ids.used[i]) i64map_put(&dst->tfdata_ids, src->tfdata_ids.keys[i], 1);
    i64map_free(&src->tfdata_ids);
}

/* Below this many events one thread does the whole scan. */
#define PARALLEL_MIN_EVENTS 200000

/* Scan every plane into `o`: two workers over the units (halves by event
 * count) when the profile is big enough and a thread can be started. */
static void scan_all(builder *b, scan_out *o) {
    const xpv_profile *p = b->p;
    plane_scan *ps = xpv_xcalloc(p->nplanes ? p->nplanes : 1, sizeof *ps);
    size_t nu = 0, cap = 0;
    scan_unit *units = NULL;
    uint64_t total = 0;
    int inert = b->inert = only_tpu_groups(p);
    for (uint32_t k = 0; k < p->nplanes; k++) {
        const xpv_plane *pl = &p->planes[k];
        plane_scan_init(&ps[k], pl);
        ps[k].inert = inert && !ps[k].tpu;
        if (inert && ps[k].tpu) drop_contexts(&ps[k], pl);
        uint32_t n = ps[k].tpu ? 1 : pl->nlines;
        for (uint32_t l = 0; l < n; l++) {
            if (nu == cap) {
                cap = cap ? cap * 2 : 64;
                units = xpv_xrealloc(units, cap * sizeof *units);
            }
            /* (an inert line costs nothing: it must not draw the split) */
            uint64_t wgt = ps[k].tpu ? pl->nevents : ps[k].inert ? 0 : pl->lines[l].nevents;
            units[nu++] = (scan_unit){k, ps[k].tpu ? -1 : (int32_t)l, wgt};
            total += wgt;
        }
    }
    worker w[2];
    memset(w, 0, sizeof w);
    size_t split = nu;
    if (total >= PARALLEL_MIN_EVENTS) {
        uint64_t acc = 0;
        for (split = 0; split < nu && acc < total / 2; split++) acc += units[split].weight;
    }
    for (int i = 0; i < 2; i++) {
        w[i].b = b;
        w[i].ps = ps;
        scan_out_init(&w[i].o);
    }
    w[0].units = units;
    w[0].nunits = split;
    w[1].units = units + split;
    w[1].nunits = nu - split;
    xpv_par_run_if(split < nu, worker_run, &w[1], worker_run, &w[0]);
    *o = w[0].o;
    scan_out_join(o, &w[1].o);
    for (uint32_t k = 0; k < p->nplanes; k++) {
        free(ps[k].mk);
        free(ps[k].mdef);
    }
    free(ps);
    free(units);
}

/* ==== Edges =============================================================== */

static void add_edge(builder *b, vec *edges, uint32_t from, uint32_t to) {
    if (from == to) return;
    edge *ed = vec_push(edges);
    ed->from = from;
    ed->to = to;
    ed->seq = (uint32_t)(edges->n - 1);
    b->flags[from] |= NODE_OUT_EDGE;
    b->flags[to] |= NODE_IN_EDGE;
}

/* Producer -> consumer edges on equal keys.  Executor -> iterator keys link
 * the last producer only (XProf's inter-thread map); context keys link
 * every pair unless both sides have CONTEXT_EDGE_LIMIT or more. */
static void context_edges(builder *b, scan_out *o, vec *edges, int executor_pass) {
    ctx_key *P = o->prod.p, *C = o->cons.p;
    size_t i = 0, j = 0;
    while (i < o->prod.n && j < o->cons.n) {
        ctx_key pk = P[i], ck = C[j];
        pk.node = ck.node = 0;
        int c = xpv_ge_cmp_ctx_key(&pk, &ck);
        if (c < 0) {
            i++;
            continue;
        }
        if (c > 0) {
            j++;
            continue;
        }
        size_t i2 = i, j2 = j;
        while (i2 < o->prod.n && same_key(&P[i2], &P[i])) i2++;
        while (j2 < o->cons.n && same_key(&C[j2], &C[j])) j2++;
        int exec = P[i].type == TYPE_EXECUTOR;
        if (exec == executor_pass) {
            if (exec) {
                for (size_t y = j; y < j2; y++) add_edge(b, edges, P[i2 - 1].node, C[y].node);
            } else if (!(i2 - i >= CONTEXT_EDGE_LIMIT && j2 - j >= CONTEXT_EDGE_LIMIT)) {
                for (size_t x = i; x < i2; x++)
                    for (size_t y = j; y < j2; y++) add_edge(b, edges, P[x].node, C[y].node);
            }
        }
        i = i2;
        j = j2;
    }
}

/* Launch -> kernel links on correlation_id (the last launch of an id). */
static void kernel_links(builder *b, scan_out *o) {
    if (!o->launches.n || !o->kernels.n) return;
    const corr_rec *L = o->launches.p;
    i64map last = {0};
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < o->launches.n; i++) {
        if (L[i].corr < lo) lo = L[i].corr;
        if (L[i].corr > hi) hi = L[i].corr;
    }
    uint64_t range = (uint64_t)hi - (uint64_t)lo;
    uint32_t *dense = NULL;
    if (range < 4 * (uint64_t)o->launches.n + 4096) {
        dense = xpv_xmalloc((range + 1) * sizeof *dense);
        memset(dense, 0xff, (range + 1) * sizeof *dense);
        for (size_t i = 0; i < o->launches.n; i++)
            dense[(uint64_t)L[i].corr - (uint64_t)lo] = L[i].node;
    } else {
        for (size_t i = 0; i < o->launches.n; i++) i64map_put(&last, L[i].corr, L[i].node);
    }
    corr_rec *K = o->kernels.p; /* in node order */
    size_t nk = 0;
    uint64_t *pairs = xpv_xmalloc(o->kernels.n * sizeof *pairs);
    for (size_t i = 0; i < o->kernels.n; i++) {
        uint32_t ln = NO_NODE;
        if (dense) {
            uint64_t d = (uint64_t)K[i].corr - (uint64_t)lo;
            if (d <= range) ln = dense[d];
        } else {
            uint32_t v;
            if (i64map_get(&last, K[i].corr, &v)) ln = v;
        }
        if (ln == NO_NODE) continue;
        b->flags[ln] |= NODE_LAUNCH;
        b->flags[K[i].node] |= NODE_KERNEL;
        pairs[nk] = (uint64_t)ln << 32 | K[i].node;
        K[nk].node = K[i].node;
        K[nk].corr = ln; /* now: the launch node */
        nk++;
    }
    free(dense);
    i64map_free(&last);
    uint64_t *tmp = xpv_xmalloc((nk ? nk : 1) * sizeof *tmp);
    radix_sort_u64(pairs, tmp, nk);
    free(tmp);
    b->kl_by_launch = pairs;
    b->nkl = nk;
    b->kernels = K;
    b->nkernels = nk;
    o->kernels.p = NULL; /* owned by the builder now */
}

/* TF loops (XProf's ProcessTensorFlowLoop): executor events by (id,
 * iter_num); ids with only iteration 0 are not loops.  Fills `roots` with
 * the first event of each iteration, by time, and links the others. */
static void tf_loops(builder *b, scan_out *o, vec *edges, vec *loop_roots) {
    if (!o->execs.n) return;
    exec_rec *X = o->execs.p;
    size_t w = 0;
    for (size_t i = 0; i < o->execs.n; i++) {
        uint32_t v;
        if (i64map_get(&o->tfdata_ids, X[i].step_id, &v)) continue;
        X[w++] = X[i];
    }
    if (w) qsort(X, w, sizeof *X, cmp_exec);
    vec firsts = {0, 0, 0, sizeof(exec_rec)};
    for (size_t i = 0; i < w;) {
        size_t j = i;
        int only_zero = 1;
        while (j < w && X[j].step_id == X[i].step_id) {
            if (X[j].iter != 0) only_zero = 0;
            j++;
        }
        if (!only_zero) {
            for (size_t a = i; a < j;) {
                size_t c = a;
                while (c < j && X[c].iter == X[a].iter) c++;
                *(exec_rec *)vec_push(&firsts) = X[a]; /* earliest of the iteration */
                /* (pointer loop: gcc -O3 misjudged an indexed one as overflowing) */
                for (const exec_rec *q = X + a + 1, *qe = X + c; q < qe; q++)
                    add_edge(b, edges, X[a].node, q->node);
                a = c;
            }
        }
        i = j;
    }
    /* By the first event's time. */
    exec_rec *F = firsts.p;
    for (size_t i = 0; i < firsts.n; i++) {
        root_rec *rr = vec_push(loop_roots);
        rr->node = F[i].node;
        rr->level = 0;
        rr->start = F[i].start;
    }
    free(firsts.p);
    if (loop_roots->n) {
        root_rec *R = loop_roots->p;
        for (size_t i = 1; i < loop_roots->n; i++) { /* insertion sort by start */
            root_rec x = R[i];
            size_t j = i;
            while (j > 0 && (R[j - 1].start > x.start ||
                             (R[j - 1].start == x.start && R[j - 1].node > x.node))) {
                R[j] = R[j - 1];
                j--;
            }
            R[j] = x;
        }
    }
}

/* ==== Entry =============================================================== */

static xpv_groups *groups_new(const xpv_profile *p, int source) {
    xpv_groups *g = xpv_xcalloc(1, sizeof *g);
    g->source = source;
    g->nplanes = p->nplanes;
    g->nevents = p->nevents;
    xpv_arena_init(&g->arena, 4096);
    return g;
}

/* The flat node layout: line bases, per-node arrays.  Returns the node
 * count (0 when there is nothing to group, or absurdly many). */
static uint32_t layout_nodes(builder *b) {
    const xpv_profile *p = b->p;
    xpv_groups *g = b->g;
    g->plane_line0 = xpv_xmalloc((p->nplanes + 1) * sizeof *g->plane_line0);
    uint32_t nlines = 0;
    for (uint32_t k = 0; k < p->nplanes; k++) {
        g->plane_line0[k] = nlines;
        nlines += p->planes[k].nlines;
    }
    g->plane_line0[p->nplanes] = nlines;
    g->line_off = xpv_xmalloc((nlines ? nlines : 1) * sizeof *g->line_off);
    b->lines = xpv_xcalloc(nlines ? nlines : 1, sizeof *b->lines);
    b->nlines = nlines;
    uint64_t total = 0;
    for (uint32_t k = 0; k < p->nplanes; k++)
        for (uint32_t l = 0; l < p->planes[k].nlines; l++) {
            uint32_t li = g->plane_line0[k] + l;
            g->line_off[li] = total;
            b->lines[li] = (line_ref){k, l, total, NULL, NULL, 0};
            total += p->planes[k].lines[l].nevents;
        }
    g->nevents = total;
    if (total >= INT32_MAX) total = 0; /* absurd: give up grouping */
    uint32_t nn = b->nn = (uint32_t)total;
    /* group and flags are set per line by the scan's workers (first touch
     * on their own thread), for the lines they scan: no other node is
     * ever reached (inert lines, TPU lines but the grouping one); parent
     * and end only for the lines propagation reaches (nest_line_of), so
     * most of their pages are never touched. */
    b->group = xpv_xmalloc((nn ? nn : 1) * sizeof *b->group);
    b->flags = xpv_xmalloc(nn ? nn : 1);
    b->parent = xpv_xmalloc((nn ? nn : 1) * sizeof *b->parent);
    b->end = xpv_xmalloc((nn ? nn : 1) * sizeof *b->end);
    return nn;
}

/* Edges in XProf's order (inter-thread, context, then TF loops), sorted
 * both ways; the context values sorted by node.  Fills `loop_roots`. */
static void build_edges(builder *b, scan_out *o, vec *loop_roots) {
    b->iters = o->iters;
    b->steps = o->steps;
    b->gtypes = o->gtypes;
    memset(&o->iters, 0, sizeof o->iters);
    memset(&o->steps, 0, sizeof o->steps);
    memset(&o->gtypes, 0, sizeof o->gtypes);
    vec edges = {0, 0, 0, sizeof(edge)};
    if (o->prod.n && o->cons.n) {
        xpv_ge_ctx_sort(&o->prod, &o->cons);
        context_edges(b, o, &edges, 1);
        context_edges(b, o, &edges, 0);
    }
    kernel_links(b, o);
    tf_loops(b, o, &edges, loop_roots);
    b->nedges = edges.n;
    b->out_e = edges.p;
    b->in_e = xpv_xmalloc((b->nedges ? b->nedges : 1) * sizeof *b->in_e);
    if (b->nedges) {
        memcpy(b->in_e, b->out_e, b->nedges * sizeof *b->in_e);
        qsort(b->out_e, b->nedges, sizeof *b->out_e, cmp_edge_from);
        qsort(b->in_e, b->nedges, sizeof *b->in_e, cmp_edge_to);
    }
    /* (empty vectors hold NULL: qsort must not see it) */
    if (b->iters.n) qsort(b->iters.p, b->iters.n, sizeof(node_val), cmp_node_val);
    if (b->steps.n) qsort(b->steps.p, b->steps.n, sizeof(node_val), cmp_node_val);
    if (b->gtypes.n) qsort(b->gtypes.p, b->gtypes.n, sizeof(node_val), cmp_node_val);
}

/* Groups from explicit roots, highest level first, then by start: roots
 * tied to a tf.data step id are not steps; a root is skipped when grouped
 * already or when an ancestor is a root of its level. */
static void group_roots(builder *b, scan_out *o, vec *work, int32_t *next) {
    const xpv_profile *p = b->p;
    i64map level_of = {0};
    root_rec *R = o->roots.p;
    size_t nr = 0;
    for (size_t i = 0; i < o->roots.n; i++) {
        const line_ref *lr = line_of(b, R[i].node);
        const xpv_plane *pl = &p->planes[lr->plane];
        const xpv_line *ln = &pl->lines[lr->line];
        int32_t sid = xpv_stat_id(pl, "id");
        xpv_stat st;
        int64_t id;
        uint32_t v;
        if (o->tfdata_ids.n && sid >= 0 &&
            xpv_event_stat(pl, ln, &ln->events[event_of(lr, R[i].node)], sid, &st) &&
            xpv_stat_as_int(&st, &id) && id != INT64_MIN && i64map_get(&o->tfdata_ids, id, &v))
            continue;
        R[nr++] = R[i];
    }
    for (size_t i = 0; i < nr; i++) i64map_put(&level_of, R[i].node, (uint32_t)R[i].level);
    if (nr) qsort(R, nr, sizeof *R, cmp_root);
    for (size_t i = 0; i < nr; i++) {
        if (b->group[R[i].node] >= 0) continue;
        if (ancestor_with_level(b, &level_of, R[i].node, R[i].level)) continue;
        int32_t gid = (*next)++;
        propagate(b, R[i].node, gid, work);
        name_group(b, NULL, R[i].node, gid);
    }
    i64map_free(&level_of);
}

/* TPU cores: when no grouping-line event was grouped from the host, each
 * core's grouping events become groups in order (ids from `next`, the same
 * on every core). */
static void group_tpu_cores(builder *b, vec *work, int32_t next) {
    const xpv_profile *p = b->p;
    int any_tpu = 0;
    for (uint32_t k = 0; k < p->nplanes; k++) {
        const xpv_plane *pl = &p->planes[k];
        if (!is_tensor_core_plane(pl)) continue;
        int gl = xpv_ge_tpu_grouping_line(pl);
        if (gl < 0) continue;
        any_tpu = 1;
        const line_ref *lr = &b->lines[b->g->plane_line0[k] + (uint32_t)gl];
        for (uint32_t j = 0; j < pl->lines[gl].nevents; j++)
            if (b->group[lr->base + j] >= 0) return; /* grouped from the host */
    }
    if (!any_tpu) return;
    /* A later core's root renames a group, so each group is named once,
     * after the roots of all cores, by its last root (name_tpu_groups). */
    uint32_t cap = 0;
    b->tpu_next = next;
    for (uint32_t k = 0; k < p->nplanes; k++) {
        const xpv_plane *pl = &p->planes[k];
        if (!is_tensor_core_plane(pl)) continue;
        int gl = xpv_ge_tpu_grouping_line(pl);
        if (gl < 0) continue;
        const line_ref *lr = &b->lines[b->g->plane_line0[k] + (uint32_t)gl];
        uint32_t n = 0;
        for (uint32_t j = 0; j < pl->lines[gl].nevents; j++) {
            uint32_t node = (uint32_t)(lr->base + j);
            if (b->group[node] >= 0) continue;
            int32_t gid = next + (int32_t)n;
            /* (nothing to spread to: no edge leaves it, nothing nests in it) */
            if (!(b->flags[node] & (NODE_OUT_EDGE | NODE_LAUNCH)) && b->end[node] == node + 1)
                b->group[node] = gid;
            else
                propagate(b, node, gid, work);
            if (n == cap) {
                cap = n + 1 > 2 * cap ? n + 1 : 2 * cap;
                b->namer = xpv_xrealloc(b->namer, cap * sizeof *b->namer);
                b->namer_lr = xpv_xrealloc(b->namer_lr, cap * sizeof *b->namer_lr);
            }
            b->namer[n] = node;
            b->namer_lr[n++] = lr;
            if (n > b->nnamed) b->nnamed = n;
        }
    }
}

/* The names of the TPU cores' groups (a job beside the per-line ids:
 * it writes only the group table). */
static void name_tpu_groups(void *arg) {
    builder *b = arg;
    for (uint32_t i = 0; i < b->nnamed; i++)
        name_group(b, b->namer_lr[i], b->namer[i], b->tpu_next + (int32_t)i);
}

/* Per-event ids: nodes back to event order. */
static void gids_to_event_order(builder *b) {
    const xpv_profile *p = b->p;
    xpv_groups *g = b->g;
    g->gid = b->group; /* node order is event order on most lines */
    b->group = NULL;
    int32_t *tmp = NULL;
    size_t tmp_cap = 0;
    for (uint32_t li = 0; li < b->nlines; li++) {
        const line_ref *lr = &b->lines[li];
        if (!lr->pos) continue;
        uint32_t ne = p->planes[lr->plane].lines[lr->line].nevents;
        if (tmp_cap < ne) {
            tmp_cap = ne;
            tmp = xpv_xrealloc(tmp, tmp_cap * sizeof *tmp);
        }
        int32_t *seg = g->gid + lr->base;
        if (ne) memcpy(tmp, seg, ne * sizeof *tmp);
        for (uint32_t i = 0; i < ne; i++) seg[i] = tmp[lr->pos[i]];
    }
    free(tmp);
}

/* When only TPU planes take part, every line of the other planes keeps
 * -1 for all its events: those lines store no ids at all
 * (XPV_GROUPS_NO_IDS), so the host plane's millions of ids are neither
 * written nor read into memory. */
static void mark_inert_lines(builder *b) {
    const xpv_profile *p = b->p;
    xpv_groups *g = b->g;
    if (!b->inert) return;
    for (uint32_t k = 0; k < p->nplanes; k++) {
        if (is_tpu_plane(&p->planes[k])) continue;
        for (uint32_t l = 0; l < p->planes[k].nlines; l++)
            g->line_off[g->plane_line0[k] + l] = XPV_GROUPS_NO_IDS;
    }
}

/* One job beside the grouping's end: a TPU plane's line ids, or the
 * TPU groups' names. */
typedef struct tpu_gid_job {
    xpv_groups *g;
    const xpv_plane *pl;       /* NULL: the naming job */
    uint32_t k;                /* plane index */
    builder *b;
} tpu_gid_job;

static void tpu_job(void *arg) {
    tpu_gid_job *j = arg;
    if (j->pl) xpv_ge_tpu_line_ids(j->g, j->pl, j->k);
    else name_tpu_groups(j->b);
}

/* Each TPU plane's ids a job (they write disjoint ranges), and the TPU
 * groups' names another. */
static void tpu_line_gids(builder *b) {
    const xpv_profile *p = b->p;
    tpu_gid_job *jobs = xpv_xcalloc(p->nplanes + 1, sizeof *jobs);
    void **args = xpv_xcalloc(p->nplanes + 1, sizeof *args);
    int n = 0;
    if (b->nnamed) {
        jobs[n] = (tpu_gid_job){b->g, NULL, 0, b};
        args[n] = &jobs[n];
        n++;
    }
    for (uint32_t k = 0; k < p->nplanes; k++) {
        if (!is_tpu_plane(&p->planes[k])) continue;
        jobs[n] = (tpu_gid_job){b->g, &p->planes[k], k, b};
        args[n] = &jobs[n];
        n++;
    }
    if (n) xpv_par_many(tpu_job, args, n);
    free(args);
    free(jobs);
}

static void builder_free(builder *b, scan_out *o) {
    for (uint32_t li = 0; li < b->nlines; li++) {
        free(b->lines[li].pos);
        free(b->lines[li].ev);
    }
    free(b->lines);
    free(b->group);
    free(b->flags);
    free(b->parent);
    free(b->end);
    free(b->out_e);
    free(b->in_e);
    free(b->kl_by_launch);
    free(b->kernels);
    free(b->iters.p);
    free(b->steps.p);
    free(b->gtypes.p);
    free(b->queue.p);
    free(b->pars.p);
    free(b->stack);
    free(b->stack_end);
    free(b->namer);
    free(b->namer_lr);
    i64map_free(&b->seen);
    free(o->prod.p);
    free(o->cons.p);
    free(o->roots.p);
    free(o->launches.p);
    free(o->kernels.p);
    free(o->execs.p);
    i64map_free(&o->tfdata_ids);
}

xpv_groups *xpv_group_events(const xpv_profile *p) {
    for (uint32_t k = 0; k < p->nplanes; k++)
        if (xpv_stat_id(&p->planes[k], "group_id") >= 0) return groups_new(p, XPV_GROUPS_FILE);
    if (space_has_loop_ops(p)) return groups_new(p, XPV_GROUPS_LOOP_OPS);
    /* No root can exist (no `_r` stat, no TraceContext or executor event,
     * no TPU grouping line): no group, no per-event ids to compute. */
    if (!space_may_have_roots(p)) return groups_new(p, XPV_GROUPS_NONE);
    xpv_groups *g = groups_new(p, XPV_GROUPS_NONE);
    builder B;
    memset(&B, 0, sizeof B);
    builder *b = &B;
    b->p = p;
    b->g = g;
    b->queue.sz = b->pars.sz = sizeof(uint32_t);
    scan_out o;
    if (layout_nodes(b)) scan_all(b, &o);
    else scan_out_init(&o);
    vec loop_roots = {0, 0, 0, sizeof(root_rec)};
    build_edges(b, &o, &loop_roots);
    /* Groups: TF loop iterations replace the explicit roots when present. */
    vec work = {0, 0, 0, sizeof(uint32_t)};
    int32_t next = 0;
    if (loop_roots.n) {
        const root_rec *R = loop_roots.p;
        for (size_t i = 0; i < loop_roots.n; i++) {
            int32_t gid = next++;
            propagate(b, R[i].node, gid, &work);
            name_group(b, NULL, R[i].node, gid);
        }
    } else if (o.roots.n) {
        group_roots(b, &o, &work, &next);
    }
    if (b->nn) group_tpu_cores(b, &work, next);
    free(work.p);
    free(loop_roots.p);
    if (b->nn) {
        gids_to_event_order(b);
        mark_inert_lines(b);
        tpu_line_gids(b);
    } else {
        g->gid = xpv_xmalloc((g->nevents ? g->nevents : 1) * sizeof *g->gid);
        memset(g->gid, 0xff, (g->nevents ? g->nevents : 1) * sizeof *g->gid);
    }
    if (b->gcap > g->ngroups) /* the spare capacity back */
        g->groups = xpv_xrealloc(g->groups, g->ngroups * sizeof *g->groups);
    g->source = g->ngroups ? XPV_GROUPS_COMPUTED : XPV_GROUPS_NONE;
    builder_free(b, &o);
    return g;
}
