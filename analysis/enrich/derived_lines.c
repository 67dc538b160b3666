/*
 * derived_lines.c - XProf's derived GPU timeline lines (see derived_lines.h).
 */
#include "derived_lines.h"
#include "derived_lines_int.h"
#include "group_events.h"
#include "hlo.h"
#include "idmap.h"
#include "par.h"
#include "util.h"
#include "collections.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ==== Event metadata table (plane-wide, by name) ======================== */

typedef struct meta_tab {
    xpv_event_meta *m;          /* index 0: the empty entry */
    uint32_t n, cap;
    uint32_t *slot;             /* open addressing: meta index + 1, 0 empty */
    size_t nslot;
    xpv_arena *arena;
} meta_tab;

static void tab_rehash(meta_tab *t, size_t nslot) {
    free(t->slot);
    t->slot = xpv_xcalloc(nslot, sizeof *t->slot);
    t->nslot = nslot;
    for (uint32_t i = 1; i < t->n; i++) {
        size_t s = xpv_hash64(t->m[i].name.ptr, t->m[i].name.len) & (nslot - 1);
        while (t->slot[s]) s = (s + 1) & (nslot - 1);
        t->slot[s] = i + 1;
    }
}

/* Metadata named `name` (created with display name `disp` when new;
 * disp.len == 0: none). */
static uint32_t tab_get(meta_tab *t, xpv_str name, xpv_str disp) {
    if ((size_t)(t->n + 1) * 2 > t->nslot) tab_rehash(t, t->nslot ? t->nslot * 2 : 64);
    size_t s = xpv_hash64(name.ptr, name.len) & (t->nslot - 1);
    while (t->slot[s]) {
        const xpv_event_meta *m = &t->m[t->slot[s] - 1];
        if (m->name.len == name.len && !memcmp(m->name.ptr, name.ptr, name.len))
            return t->slot[s] - 1;
        s = (s + 1) & (t->nslot - 1);
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->m = xpv_xrealloc(t->m, t->cap * sizeof *t->m);
    }
    uint32_t k = t->n++;
    xpv_event_meta *m = &t->m[k];
    memset(m, 0, sizeof *m);
    m->key = m->id = k;
    m->name.ptr = xpv_arena_strndup(t->arena, name.ptr, name.len);
    m->name.len = name.len;
    if (disp.len) {
        m->display_name.ptr = xpv_arena_strndup(t->arena, disp.ptr, disp.len);
        m->display_name.len = disp.len;
    }
    t->slot[s] = k + 1;
    return k;
}

/* ==== Derived line builder (DerivedXLineBuilder) ======================== */

typedef struct lvl {
    int has, has_g, has_s;
    uint32_t ev;
    int64_t g, s;
} lvl;

typedef struct dline {
    xpv_event *ev;
    opt64 *gid;                /* per event: its group id (XProf's group_id
                                * stat on every derived event) */
    gstat *gx;                 /* per event, on lines with graph_stats */
    int graph_stats;
    size_t n, cap;
    lvl *last;
    size_t nlast;
    struct dline *dep[3];
    int ndep;
    int not_gpu;               /* TPU plane: ungrouped events merge only
                                * across a gap under twice the last one's
                                * duration */
    xpv_group_wire *gw;        /* when set, events get their group_id stat
                                * as they are made (no `gid`) */
} dline;

/* AdjustDurationForTraceViewer: stacked open events of levels >= level with
 * equal spans are shrunk by 1 ns more per level, at most to 1 ns for the
 * top of the stack. */
static void adjust(dline *d, size_t level) {
    if (level >= d->nlast || !d->last[level].has) return;
    size_t max = level;
    while (max < d->nlast && d->last[max].has) max++;
    max--;
    if (max <= level) return;
    const xpv_event *top = &d->ev[d->last[max].ev];
    int64_t max_shrink = top->dur_ps / 1000 - 1, shrink = 0;
    int have = 0;
    int64_t ps = 0, pe = 0;
    for (size_t i = level; i <= max; i++) {
        xpv_event *e = &d->ev[d->last[i].ev];
        int64_t s = e->start_ps, end = e->start_ps + e->dur_ps;
        if (shrink < max_shrink && have && ps == s && pe == end) shrink++;
        ps = s;
        pe = end;
        have = 1;
        if (shrink) e->dur_ps = end - 1000 * shrink - s;
    }
}

static void reset(dline *d, size_t level) {
    adjust(d, level);
    for (size_t i = level; i < d->nlast; i++) d->last[i].has = 0;
    if (level == 0)
        for (int k = 0; k < d->ndep; k++) reset(d->dep[k], 0);
}

static void add_level(dline *d, uint32_t meta, int64_t start, int64_t dur, opt64 g, opt64 sr,
                      size_t level) {
    if (level >= d->nlast) {
        d->last = xpv_xrealloc(d->last, (level + 1) * sizeof *d->last);
        memset(d->last + d->nlast, 0, (level + 1 - d->nlast) * sizeof *d->last);
        d->nlast = level + 1;
    }
    lvl *L = &d->last[level];
    if (L->has) {
        xpv_event *e = &d->ev[L->ev];
        /* GPU plane or grouped: no gap condition. */
        if (e->meta == meta && L->has_g == g.has && (!g.has || L->g == g.v) &&
            (!sr.has || !L->has_s || L->s == sr.v) &&
            (!d->not_gpu || g.has || e->start_ps + 3 * e->dur_ps >= start)) {
            int64_t end = e->start_ps + e->dur_ps, nend = start + dur;
            if (start < e->start_ps) e->start_ps = start;
            if (nend > end) end = nend;
            e->dur_ps = end - e->start_ps;
            return;
        }
    }
    reset(d, level);
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 64;
        d->ev = xpv_xrealloc(d->ev, d->cap * sizeof *d->ev);
        if (!d->gw) d->gid = xpv_xrealloc(d->gid, d->cap * sizeof *d->gid);
        if (d->graph_stats) d->gx = xpv_xrealloc(d->gx, d->cap * sizeof *d->gx);
    }
    d->ev[d->n] = (xpv_event){start, dur, meta, XPV_NO_STATS};
    if (d->gw) d->ev[d->n].wire = xpv_dl_group_wire(d->gw, g);
    else d->gid[d->n] = g;
    if (d->graph_stats) d->gx[d->n] = (gstat){0, 0, 0};
    L = &d->last[level];
    *L = (lvl){1, g.has, sr.has, (uint32_t)d->n, g.v, sr.v};
    d->n++;
}

static void add_levels(dline *d, const uint32_t *metas, size_t n, int64_t start, int64_t dur,
                       opt64 g, const opt64 *srs) {
    if (!n) return;
    for (size_t i = 0; i < n; i++) {
        opt64 none = {0, 0};
        add_level(d, metas[i], start, dur, g, srs ? srs[i] : none, i);
    }
    reset(d, n);
}

/* XProf's AddStatToLevelEvent: the open event of `level` (if any) gets
 * the kernel's CUDA-graph stats, replacing earlier values. */
static void set_graph_stats(dline *d, size_t level, uint64_t graph, opt64 corr) {
    if (!d->graph_stats || level >= d->nlast || !d->last[level].has) return;
    gstat *x = &d->gx[d->last[level].ev];
    x->graph = graph;
    if (corr.has) {
        x->has_corr = 1;
        x->corr = corr.v;
    }
}

/* ==== TF op names (tf_op_utils) ========================================= */

enum { CAT_UNKNOWN, CAT_TF, CAT_JAX };

static int is_tf_type(const char *p, size_t n) {
    if (!n || !(p[0] == '_' || (p[0] >= 'A' && p[0] <= 'Z'))) return 0;
    for (size_t i = 1; i < n; i++) {
        char c = p[i];
        if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
            return 0;
    }
    return 1;
}
static int is_tf_name(const char *p, size_t n) {
    if (!n) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.';
        if (i && (c == '_' || c == '-' || c == '/' || c == '>')) ok = 1;
        if (!ok) return 0;
    }
    return 1;
}
/* [a-z_][a-z0-9_]*(\[.*\])? */
static int is_jax_type(const char *p, size_t n) {
    if (!n || !(p[0] == '_' || (p[0] >= 'a' && p[0] <= 'z'))) return 0;
    for (size_t i = 1; i < n; i++) {
        char c = p[i];
        if (c == '[') return p[n - 1] == ']';
        if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return 0;
    }
    return 1;
}

enum { CAT_DATA = 3, CAT_MEMCPY = 4 };

typedef struct tfop {
    int cat;
    xpv_str name, type;
} tfop;

/* An op type from an op name (DeriveOpType): the last `/` part less a
 * numeric `_<n>` suffix. */
static xpv_str derive_op_type(xpv_str name) {
    uint32_t b = 0;
    for (uint32_t i = 0; i < name.len; i++)
        if (name.ptr[i] == '/') b = i + 1;
    xpv_str op = {name.ptr + b, name.len - b};
    uint32_t u = op.len;
    while (u > 0 && op.ptr[u - 1] != '_') u--;
    if (u == 0) return op;
    const char *d = op.ptr + u;
    uint32_t nd = op.len - u, k = 0;
    if (nd && (d[0] == '-' || d[0] == '+')) k = 1;
    if (k == nd) return op;
    for (uint32_t i = k; i < nd; i++)
        if (d[i] < '0' || d[i] > '9') return op;
    return (xpv_str){op.ptr, u - 1};
}

/* XLA's ParseTfOpFullname (xla/tsl/profiler/utils/tf_op_utils.cc). */
static tfop parse_tf_op(xpv_str full) {
    tfop r = {CAT_UNKNOWN, full, {NULL, 0}};
    if (!full.len) return r;
    const char *colon = memchr(full.ptr, ':', full.len);
    if (!colon) {
        static const char *const mc[] = {"MEMCPYHToD", "MEMCPYDToH", "MEMCPYDToD", "MEMCPYHToH"};
        static const char *const mt[] = {"MemcpyHToD", "MemcpyDToH", "MemcpyDToD", "MemcpyHToH"};
        for (int i = 0; i < 4; i++)
            if (xpv_str_has_prefix_nocase(full, mc[i]))
                return (tfop){CAT_MEMCPY, full, {mt[i], (uint32_t)strlen(mt[i])}};
        return r;
    }
    uint32_t nl = (uint32_t)(colon - full.ptr);
    xpv_str name = {full.ptr, nl}, type = {colon + 1, full.len - nl - 1};
    if (nl == 8 && !memcmp(name.ptr, "Iterator", 8)) return (tfop){CAT_DATA, full, {"Dataset", 7}};
    if (is_tf_name(name.ptr, name.len) && is_tf_type(type.ptr, type.len))
        return (tfop){CAT_TF, name, type};
    xpv_str t = type.len ? type : derive_op_type(name);
    if (is_jax_type(t.ptr, t.len)) {
        const char *br = memchr(t.ptr, '[', t.len);
        if (br) t.len = (uint32_t)(br - t.ptr);
        return (tfop){CAT_JAX, name, t};
    }
    if (!type.len) return (tfop){CAT_TF, name, t};
    return r;
}

/* TfOpEventName: what the op's event shows. */
static xpv_str tf_op_event_name(const tfop *op, char *buf, size_t cap) {
    if (op->cat == CAT_UNKNOWN) {
        xpv_str n = op->name;
        while (n.len && (n.ptr[n.len - 1] == ' ' || n.ptr[n.len - 1] == '\t' ||
                         n.ptr[n.len - 1] == '\n' || n.ptr[n.len - 1] == '\r' ||
                         n.ptr[n.len - 1] == '\f' || n.ptr[n.len - 1] == '\v'))
            n.len--;
        return n;
    }
    if (op->cat == CAT_DATA) {
        uint32_t b = 0;
        for (uint32_t i = 0; i + 1 < op->name.len; i++)
            if (op->name.ptr[i] == ':' && op->name.ptr[i + 1] == ':') b = i + 2;
        int w = snprintf(buf, cap, "Iterator::%.*s", (int)(op->name.len - b), op->name.ptr + b);
        return (xpv_str){buf, (uint32_t)(w < 0 ? 0 : (size_t)w >= cap ? cap - 1 : (size_t)w)};
    }
    return op->type;
}

/* ==== Per plane ========================================================= */

typedef struct scope_edge {
    int64_t id, parent;
    uint32_t pos;              /* order in the plane's stats */
} scope_edge;

static int cmp_edge(const void *a, const void *b) {
    const scope_edge *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* One XLA kernel's HLO facts, remembered per (hlo_op text, program). */
#define HLO_MEMO 1024
typedef struct hlo_memo {
    const char *op;            /* the hlo_op text (profile bytes), NULL: empty */
    uint32_t len;
    int64_t prog;
    xpv_str fw;                /* framework op (decoded proto), or empty */
    uint32_t src;              /* Source code metadata in the plane's table, 0: none */
    uint32_t op_meta;          /* fw resolved: its op metadata and name scopes */
    uint32_t nscopes;          /* HLO_MEMO_SCOPES + 1: too many to keep */
    uint32_t scopes[8];
} hlo_memo;
#define HLO_MEMO_SCOPES 8

/* One kernel's XLA Modules and XLA Ops metadata, remembered per (module
 * text, program, hlo_op text): kernels name the same few ops millions of
 * times, through interned stat strings (equal pointers).  A miss only
 * costs the lookup it saves. */
#define NAME_MEMO 1024
#define NAME_MEMO_PARTS 8
typedef struct name_memo {
    const char *mod, *op;      /* the texts (profile bytes) */
    uint32_t mod_len, op_len;
    int64_t prog;
    int has_prog, used;
    uint32_t mod_meta;         /* the XLA Modules event's, when mod_len */
    uint32_t nparts;           /* the XLA Ops levels' (op_len: 1..NAME_MEMO_PARTS) */
    uint32_t parts[NAME_MEMO_PARTS];
} name_memo;

typedef struct ctx {
    meta_tab tab;
    xpv_hlo_map *hlo;          /* the profile's HLO protos, or NULL */
    const xpv_hostset *hs;     /* the profile as a host set, for decoding */
    hlo_memo *memo;            /* HLO_MEMO entries, cleared per plane */
    name_memo *names;          /* NAME_MEMO entries, cleared per plane */
    scope_edge *edges;
    size_t nedges;
    uint32_t *mbuf;
    opt64 *sbuf;
    size_t cap_buf;
} ctx;

static int cmp_edge_id(const void *a, const void *b) {
    const scope_edge *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static const scope_edge *find_edge(const ctx *c, int64_t id) {
    scope_edge key = {id, 0, 0};
    return c->nedges ? bsearch(&key, c->edges, c->nedges, sizeof key, cmp_edge_id) : NULL;
}

static void ensure_buf(ctx *c, size_t n) {
    if (n <= c->cap_buf) return;
    c->cap_buf = n * 2;
    c->mbuf = xpv_xrealloc(c->mbuf, c->cap_buf * sizeof *c->mbuf);
    c->sbuf = xpv_xrealloc(c->sbuf, c->cap_buf * sizeof *c->sbuf);
}

/* The metadata of a framework op's name scopes (c->mbuf[0..*nscopes)) and
 * of its op event (returned), created on first sight. */
static uint32_t resolve_tf_op(ctx *c, xpv_str full, size_t *nscopes) {
    tfop op = parse_tf_op(full);
    size_t n = 0;
    if (op.cat == CAT_TF || op.cat == CAT_JAX) {
        uint32_t b = 0;
        for (uint32_t i = 0; i < op.name.len; i++)
            if (op.name.ptr[i] == '/') {
                ensure_buf(c, n + 1);
                xpv_str part = {op.name.ptr + b, i - b}, none = {NULL, 0};
                c->mbuf[n++] = tab_get(&c->tab, part, none);
                b = i + 1;
            }
    }
    *nscopes = n;
    char buf[512];
    xpv_str disp = tf_op_event_name(&op, buf, sizeof buf);
    return tab_get(&c->tab, full, disp);
}

/* ProcessTfOpEvent with the op's metadata resolved: name scopes (TF and
 * JAX ops only), then the op. */
static void add_tf_op(const uint32_t *scopes, size_t nscopes, uint32_t m, int64_t s, int64_t d,
                      opt64 g, dline *scope, dline *ops) {
    add_levels(scope, scopes, nscopes, s, d, g, NULL);
    opt64 none = {0, 0};
    add_level(ops, m, s, d, g, none, 0);
}

static void process_tf_op(ctx *c, xpv_str full, int64_t s, int64_t d, opt64 g, dline *scope,
                          dline *ops) {
    size_t n;
    uint32_t m = resolve_tf_op(c, full, &n);
    add_tf_op(c->mbuf, n, m, s, d, g, scope, ops);
}

typedef struct sline {
    int compute;
    uint32_t n, li;
} sline;
static int cmp_sline(const void *a, const void *b) {
    const sline *x = a, *y = b;
    if (x->compute != y->compute) return y->compute - x->compute;
    if (x->n != y->n) return x->n > y->n ? -1 : 1;
    return x->li < y->li ? -1 : x->li > y->li;
}

static int str_has(xpv_str s, const char *sub) {
    size_t n = strlen(sub);
    for (size_t i = 0; i + n <= s.len; i++)
        if (!memcmp(s.ptr + i, sub, n)) return 1;
    return 0;
}

enum { S_KERNEL, S_MODULE, S_PROGRAM, S_HLO_OP, S_TF_OP, S_GROUP, S_SCOPE, S_GRAPH_EXEC,
       S_GRAPH, S_CORR, S_N };
static const char *const stat_names[S_N] = {"kernel_details", "hlo_module", "program_id", "hlo_op",
                                           "tf_op", "group_id", "scope_range_id",
                                           "cuda_graph_exec_id", "cuda_graph_id",
                                           "correlation_id"};

static const char *const line_names[5] = {"Framework Name Scope", "Framework Ops", "XLA Modules",
                                          "XLA Ops", "Source code"};

/* The framework op and source line of an XLA kernel: XProf takes both from
 * the metadata of the kernel's HLO instruction (`hlo_op`, its last `::`
 * part, in program `prog`).  Remembered per (hlo_op, program). */
static const hlo_memo *hlo_facts(ctx *c, opt64 prog, xpv_str hlo_op) {
    if (!c->hlo || !prog.has || !hlo_op.len) return NULL;
    uint64_t h = xpv_hash64(hlo_op.ptr, hlo_op.len) ^ ((uint64_t)prog.v * 0x9e3779b97f4a7c15ull);
    hlo_memo *m = &c->memo[(h ^ (h >> 29)) & (HLO_MEMO - 1)];
    if (m->op && m->len == hlo_op.len && m->prog == prog.v &&
        !memcmp(m->op, hlo_op.ptr, hlo_op.len))
        return m;
    *m = (hlo_memo){hlo_op.ptr, hlo_op.len, prog.v, {NULL, 0}, 0, 0, 0, {0}};
    xpv_str name = hlo_op;
    for (uint32_t i = 0; i + 1 < hlo_op.len; i++)
        if (hlo_op.ptr[i] == ':' && hlo_op.ptr[i + 1] == ':')
            name = (xpv_str){hlo_op.ptr + i + 2, hlo_op.len - i - 2};
    const xpv_hlo_program *p = xpv_hlo_find(c->hlo, (uint64_t)prog.v);
    xpv_err err;
    if (p) p = xpv_hlo_decode(c->hlo, c->hs, p, &err);   /* NULL: does not decode */
    xpv_hlo_instr in = {NULL, NULL};
    if (p) in = xpv_hlo_instr_by_name(p, name.ptr, name.len);
    const Xla__OpMetadata *md = in.ins ? in.ins->metadata : NULL;
    if (md && md->op_name && md->op_name[0]) {
        m->fw = (xpv_str){md->op_name, (uint32_t)strlen(md->op_name)};
        size_t n;
        m->op_meta = resolve_tf_op(c, m->fw, &n);
        m->nscopes = n <= HLO_MEMO_SCOPES ? (uint32_t)n : HLO_MEMO_SCOPES + 1;
        if (n <= HLO_MEMO_SCOPES) memcpy(m->scopes, c->mbuf, n * sizeof *m->scopes);
    }
    if (md && md->source_file && md->source_file[0]) {
        char buf[600];
        int w = snprintf(buf, sizeof buf, "%s:%d", md->source_file, (int)md->source_line);
        if (w >= (int)sizeof buf) w = (int)sizeof buf - 1;
        if (w > 0) m->src = tab_get(&c->tab, (xpv_str){buf, (uint32_t)w}, (xpv_str){NULL, 0});
    }
    return m;
}

/* One XLA kernel's facts, as derive_kernel reads them. */
typedef struct kfacts {
    xpv_str module, hlo_op, tf_op;
    opt64 prog, g, sr;
    int64_t s, du;             /* start, duration (>= 0) */
    uint64_t graph;            /* cuda_graph_id (a CUDA graph's inner node), 0: none */
    opt64 corr;                /* correlation_id */
} kfacts;

/* One kernel on its stream's derived lines `d` (XPV_DL_PER_STREAM of
 * them): XLA Modules, XLA Ops (one level per `::` part of hlo_op),
 * Framework Ops / Name Scope and Source code from the HLO instruction
 * (else from tf_op), with scope_range_id chains when they fit. */
/* The XLA Modules metadata of a kernel: "module(program)". */
static uint32_t module_meta(ctx *c, xpv_str module, opt64 prog) {
    if (!prog.has) return tab_get(&c->tab, module, (xpv_str){NULL, 0});
    size_t n = (size_t)module.len + 32;
    char *nm = xpv_xmalloc(n);
    int w = snprintf(nm, n, "%.*s(%lld)", (int)module.len, module.ptr, (long long)prog.v);
    uint32_t m = tab_get(&c->tab, (xpv_str){nm, (uint32_t)w}, (xpv_str){NULL, 0});
    free(nm);
    return m;
}

/* The XLA Ops metadata of a kernel's hlo_op levels ("a::b": two) into
 * c->mbuf (room for one per level); returns their number. */
static size_t hlo_parts(ctx *c, xpv_str module, opt64 prog, xpv_str hlo_op) {
    char pre[64];
    int pl_len = prog.has ? snprintf(pre, sizeof pre, "%lld/", (long long)prog.v) : 0;
    size_t np2 = 0;
    uint32_t b = 0;
    for (uint32_t i = 0; i <= hlo_op.len; i++) {
        int end = i == hlo_op.len;
        if (!end && !(i + 1 < hlo_op.len && hlo_op.ptr[i] == ':' && hlo_op.ptr[i + 1] == ':'))
            continue;
        xpv_str part = {hlo_op.ptr + b, i - b};
        size_t plen = prog.has ? (size_t)pl_len : (size_t)module.len + 1;
        char *key = xpv_xmalloc(plen + part.len + 1);
        if (prog.has)
            memcpy(key, pre, plen);
        else {
            if (module.len) memcpy(key, module.ptr, module.len);
            key[module.len] = '/';
        }
        if (part.len) memcpy(key + plen, part.ptr, part.len);
        c->mbuf[np2++] = tab_get(&c->tab, (xpv_str){key, (uint32_t)(plen + part.len)}, part);
        free(key);
        if (!end) i++;
        b = i + 1;
    }
    return np2;
}

/* A kernel's module and hlo_op metadata from the memo, made and kept on a
 * miss (NULL when they do not fit an entry: the caller makes them). */
static name_memo *kernel_names(ctx *c, xpv_str module, opt64 prog, xpv_str hlo_op) {
    if (!c->names || !(module.len || hlo_op.len)) return NULL;
    uint64_t h = mix64((uint64_t)(uintptr_t)module.ptr ^ ((uint64_t)module.len << 40) ^
                       (uint64_t)prog.v * 0x9e3779b97f4a7c15ull ^
                       mix64((uint64_t)(uintptr_t)hlo_op.ptr ^ hlo_op.len) ^ (uint64_t)prog.has);
    name_memo *m = &c->names[h & (NAME_MEMO - 1)];
    if (m->used && m->mod == module.ptr && m->mod_len == module.len &&
        m->op == hlo_op.ptr && m->op_len == hlo_op.len && m->has_prog == prog.has &&
        (!prog.has || m->prog == prog.v))
        return m;
    size_t np = 0;
    if (hlo_op.len) {
        np = 1;
        for (uint32_t i = 0; i + 1 < hlo_op.len; i++)
            if (hlo_op.ptr[i] == ':' && hlo_op.ptr[i + 1] == ':') np++, i++;
        if (np > NAME_MEMO_PARTS) return NULL;
    }
    name_memo nm = {module.ptr, hlo_op.ptr, module.len, hlo_op.len, prog.v, prog.has, 1, 0, 0, {0}};
    /* made in the order the caller would make them: module, then levels */
    if (module.len) nm.mod_meta = module_meta(c, module, prog);
    if (hlo_op.len) {
        ensure_buf(c, np + 1);
        nm.nparts = (uint32_t)hlo_parts(c, module, prog, hlo_op);
        memcpy(nm.parts, c->mbuf, nm.nparts * sizeof *nm.parts);
    }
    *m = nm;
    return m;
}

static void derive_kernel(ctx *c, dline *d, const kfacts *kf) {
    dline *scope = &d[XPV_DL_NAME_SCOPE], *ops = &d[XPV_DL_TF_OP], *mod = &d[XPV_DL_MODULE],
          *hlo = &d[XPV_DL_HLO_OP], *srcl = &d[XPV_DL_SOURCE];
    xpv_str module = kf->module, hlo_op = kf->hlo_op, tf_op = kf->tf_op;
    opt64 prog = kf->prog, g = kf->g, sr = kf->sr;
    int64_t s = kf->s, du = kf->du;
    /* scope range chain: [own, parent, ..., root] */
    size_t nchain = 0;
    if ((module.len || hlo_op.len) && sr.has) {
        ensure_buf(c, 1);
        c->sbuf[nchain++] = sr;
        const scope_edge *ed;
        int64_t cur = sr.v;
        /* XProf stops at the first parent seen before (a cycle); the
         * kernel's own id is not among them; a bound against hostile
         * chains */
        while ((ed = find_edge(c, cur)) != NULL && nchain < 4096) {
            int seen = 0;
            for (size_t q = 1; q < nchain; q++)
                if (c->sbuf[q].v == ed->parent) seen = 1;
            if (seen) break;
            ensure_buf(c, nchain + 1);
            c->sbuf[nchain++] = (opt64){1, ed->parent};
            cur = ed->parent;
        }
    }
    name_memo *nmm = kernel_names(c, module, prog, hlo_op);
    if (module.len) {
        opt64 root = nchain ? c->sbuf[nchain - 1] : (opt64){0, 0};
        add_level(mod, nmm ? nmm->mod_meta : module_meta(c, module, prog), s, du, g, root, 0);
    }
    if (hlo_op.len) {
        size_t np = 1;
        if (nmm) {
            np = nmm->nparts;
        } else {
            for (uint32_t i = 0; i + 1 < hlo_op.len; i++)
                if (hlo_op.ptr[i] == ':' && hlo_op.ptr[i + 1] == ':') np++, i++;
        }
        ensure_buf(c, np + nchain + 1);
        /* reversed chain [root, ..., own] when it has one id per level */
        opt64 *srs = NULL;
        if (nchain == np) {
            for (size_t q = 0; q < nchain / 2; q++) {
                opt64 t = c->sbuf[q];
                c->sbuf[q] = c->sbuf[nchain - 1 - q];
                c->sbuf[nchain - 1 - q] = t;
            }
            srs = c->sbuf;
        }
        size_t np2 = nmm ? nmm->nparts : hlo_parts(c, module, prog, hlo_op);
        if (nmm) memcpy(c->mbuf, nmm->parts, np2 * sizeof *c->mbuf);
        add_levels(hlo, c->mbuf, np2, s, du, g, srs);
        /* a CUDA graph's inner node: its innermost XLA op carries the
         * graph id and the kernel's correlation id */
        if (kf->graph) set_graph_stats(hlo, np2 - 1, kf->graph, kf->corr);
        const hlo_memo *hf = hlo_facts(c, prog, hlo_op);
        if (hf && hf->fw.len && hf->nscopes <= HLO_MEMO_SCOPES)
            add_tf_op(hf->scopes, hf->nscopes, hf->op_meta, s, du, g, scope, ops);
        else if (hf && hf->fw.len)
            process_tf_op(c, hf->fw, s, du, g, scope, ops);
        else if (tf_op.len)
            process_tf_op(c, tf_op, s, du, g, scope, ops);
        if (hf && hf->src) add_level(srcl, hf->src, s, du, g, (opt64){0, 0}, 0);
    } else if (tf_op.len) {
        process_tf_op(c, tf_op, s, du, g, scope, ops);
    }
}

/* The stats of an annotation line's event: its group id. */
static dstats group_stat(const void *arg, uint32_t i) {
    const opt64 *gid = arg;
    dstats s;
    memset(&s, 0, sizeof s);
    s.g = gid[i];
    return s;
}

/* The stats of a derived line's event: group id and, on XLA Ops, the
 * CUDA-graph stats. */
typedef struct line_arg {
    const opt64 *gid;
    const gstat *gx;           /* NULL: none */
} line_arg;
static dstats line_stat(const void *arg, uint32_t i) {
    const line_arg *a = arg;
    dstats s = group_stat(a->gid, i);
    if (a->gx) s.gx = a->gx[i];
    return s;
}

/* The stats of a Steps event: group id and, for a named group, step_name. */
typedef struct steps_arg {
    const opt64 *gid;
    const xpv_groups *gr;
} steps_arg;
static dstats steps_stat(const void *arg, uint32_t i) {
    const steps_arg *a = arg;
    dstats s = group_stat(a->gid, i);
    int64_t g = s.g.v;
    const char *gname = a->gr && s.g.has && g >= 0 && g < (int64_t)a->gr->ngroups
                            ? a->gr->groups[g].name : NULL;
    if (gname) s.step_name = (xpv_str){gname, (uint32_t)strlen(gname)};
    return s;
}

/* The derived lines of a GPU plane into `out`: Steps first, then per
 * stream (in `sl` order) its lines in id order, XProf's names and ids. */
static void emit_gpu_plane(const ctx *c, xpv_arena *arena, const xpv_plane *pl, const sline *sl,
                           const dline *lines, size_t nall, const dline *steps_line,
                           const xpv_groups *gr, xpv_dl_plane *out) {
    const dline steps = *steps_line;
    memset(out, 0, sizeof *out);
    xpv_plane *sp = &out->synth;
    sp->id = pl->id;
    sp->name = pl->name;
    sp->event_meta = xpv_arena_calloc(arena, c->tab.n, sizeof *sp->event_meta);
    if (c->tab.n) memcpy(sp->event_meta, c->tab.m, c->tab.n * sizeof *sp->event_meta);
    sp->nevent_meta = c->tab.n;
    xpv_dl_synth_stat_meta(arena, sp);
    out->line_display_id = xpv_arena_calloc(arena, pl->nlines ? pl->nlines : 1, sizeof(int64_t));
    uint32_t nl = steps.n ? 1 : 0;
    for (size_t q = 0; q < nall; q++)
        if (lines[q].n) nl++;
    sp->lines = xpv_arena_calloc(arena, nl, sizeof *sp->lines);
    if (steps.n) {
        /* kThreadIdStepInfo, "Steps"; no display id: the trace shows
         * it by its id, above the streams. */
        xpv_line *ln = &sp->lines[sp->nlines++];
        ln->id = ln->display_id = XPV_DL_BASE;
        ln->name = ln->display_name = (xpv_str){"Steps", 5};
        int64_t ts0 = INT64_MAX;
        for (uint32_t li = 0; li < pl->nlines; li++)
            if (pl->lines[li].timestamp_ns < ts0) ts0 = pl->lines[li].timestamp_ns;
        ln->timestamp_ns = ts0 == INT64_MAX ? 0 : ts0;
        ln->events = xpv_arena_alloc(arena, steps.n * sizeof *ln->events);
        memcpy(ln->events, steps.ev, steps.n * sizeof *ln->events);
        ln->nevents = (uint32_t)steps.n;
        /* group_id, and step_name for a named group (the trace shows it
         * as the event's name) */
        steps_arg sa = {steps.gid, gr};
        xpv_dl_attach_stats(arena, ln, steps_stat, &sa);
        sp->nevents += steps.n;
    }
    int64_t pos = 0;
    for (uint32_t k = 0; k < pl->nlines; k++) {
        const xpv_line *src = &pl->lines[sl[k].li];
        out->line_display_id[sl[k].li] = ++pos;
        /* derived lines of this stream in id order: scope, ops, module,
         * hlo, source */
        for (int q = 0; q < 5; q++) {
            const dline *d = &lines[(size_t)k * XPV_DL_PER_STREAM + q];
            ++pos;
            if (!d->n) continue;
            xpv_line *ln = &sp->lines[sp->nlines++];
            ln->id = XPV_DL_DEVICE_MIN + (int64_t)k * XPV_DL_PER_STREAM + q;
            ln->display_id = pos;
            char nm[128];
            int w = snprintf(nm, sizeof nm, "%s - from #%lld", line_names[q], (long long)src->id);
            ln->name.ptr = xpv_arena_strndup(arena, nm, (size_t)w);
            ln->name.len = (uint32_t)w;
            ln->display_name = ln->name;
            ln->timestamp_ns = src->timestamp_ns;
            ln->events = xpv_arena_alloc(arena, d->n * sizeof *ln->events);
            if (d->n) memcpy(ln->events, d->ev, d->n * sizeof *ln->events);
            ln->nevents = (uint32_t)d->n;
            line_arg la = {d->gid, d->gx};
            xpv_dl_attach_stats(arena, ln, line_stat, &la);
            sp->nevents += d->n;
        }
    }
}

/* Derive one plane into `out`; returns 0 when nothing was derived. */
static void gpu_steps(ctx *c, const xpv_plane *pl, const xpv_groups *gr, uint32_t pi, dline *d);

static int derive_plane(ctx *c, xpv_arena *arena, const xpv_plane *pl, const xpv_groups *gr,
                        uint32_t pi, xpv_dl_plane *out) {
    for (uint32_t li = 0; li < pl->nlines; li++)
        if (xpv_dl_is_derived_id(pl->lines[li].id)) return 0;
    int32_t ids[S_N];
    for (int k = 0; k < S_N; k++) ids[k] = xpv_stat_id(pl, stat_names[k]);
    xpv_stat_set set;
    xpv_stat_set_init(&set, pl, ids, S_N);

    memset(&c->tab, 0, sizeof c->tab);
    c->tab.arena = arena;
    xpv_str empty = {NULL, 0};
    c->tab.n = c->tab.cap = 1;
    c->tab.m = xpv_xcalloc(1, sizeof *c->tab.m);
    if (c->hlo) {
        if (!c->memo) c->memo = xpv_xmalloc(HLO_MEMO * sizeof *c->memo);
        memset(c->memo, 0, HLO_MEMO * sizeof *c->memo);
    }
    if (!c->names) c->names = xpv_xmalloc(NAME_MEMO * sizeof *c->names);
    memset(c->names, 0, NAME_MEMO * sizeof *c->names);
    /* Steps first (XProf derives them before the annotation lines). */
    dline steps;
    memset(&steps, 0, sizeof steps);
    gpu_steps(c, pl, gr, pi, &steps);

    sline *sl = xpv_xcalloc(pl->nlines ? pl->nlines : 1, sizeof *sl);
    for (uint32_t li = 0; li < pl->nlines; li++)
        sl[li] = (sline){str_has(pl->lines[li].name, "Compute"), pl->lines[li].nevents, li};
    if (pl->nlines) qsort(sl, pl->nlines, sizeof *sl, cmp_sline);

    size_t nall = (size_t)pl->nlines * XPV_DL_PER_STREAM;
    dline *lines = xpv_xcalloc(nall ? nall : 1, sizeof *lines);
    size_t total = 0;
    for (uint32_t k = 0; k < pl->nlines && (ids[S_KERNEL] >= 0 || ids[S_GRAPH_EXEC] >= 0); k++) {
        const xpv_line *ln = &pl->lines[sl[k].li];
        dline *d = &lines[(size_t)k * XPV_DL_PER_STREAM];
        dline *scope = &d[XPV_DL_NAME_SCOPE], *ops = &d[XPV_DL_TF_OP], *mod = &d[XPV_DL_MODULE],
              *hlo = &d[XPV_DL_HLO_OP], *srcl = &d[XPV_DL_SOURCE];
        scope->dep[scope->ndep++] = ops;
        mod->dep[mod->ndep++] = scope;
        mod->dep[mod->ndep++] = hlo;
        mod->dep[mod->ndep++] = srcl;   /* a new module event ends the source one */
        hlo->graph_stats = 1;
        /* time order: as stored, else sorted (ties by index) */
        uint32_t *o = xpv_line_time_order(ln);
        for (uint32_t j = 0; j < ln->nevents; j++) {
            uint32_t ei = o ? o[j] : j;
            const xpv_event *e = &ln->events[ei];
            xpv_stat st[S_N];
            uint32_t mask = xpv_event_stats_in(pl, ln, e, &set, st, NULL);
            /* kernels, and CUDA graph executions (XProf: IsKernel or
             * IsCudaGraphExecution) */
            if (!(mask & ((1u << S_KERNEL) | (1u << S_GRAPH_EXEC)))) continue;
            xpv_str module = empty, hlo_op = empty, tf_op = empty;
            opt64 prog = {0, 0}, g = {0, 0}, sr = {0, 0};
            if ((mask & (1u << S_MODULE)) && st[S_MODULE].kind == XPV_STAT_STR) module = st[S_MODULE].v.s;
            if ((mask & (1u << S_HLO_OP)) && st[S_HLO_OP].kind == XPV_STAT_STR) hlo_op = st[S_HLO_OP].v.s;
            if ((mask & (1u << S_TF_OP)) && st[S_TF_OP].kind == XPV_STAT_STR) tf_op = st[S_TF_OP].v.s;
            if ((mask & (1u << S_PROGRAM)) && xpv_stat_as_int(&st[S_PROGRAM], &prog.v)) prog.has = 1;
            if ((mask & (1u << S_GROUP)) && xpv_stat_as_int(&st[S_GROUP], &g.v)) g.has = 1;
            int32_t cg = xpv_group_of(gr, pi, sl[k].li, ei); /* computed grouping */
            if (cg >= 0) g = (opt64){1, cg};
            if ((mask & (1u << S_SCOPE)) && xpv_stat_as_int(&st[S_SCOPE], &sr.v)) sr.has = 1;
            kfacts kf = {module, hlo_op, tf_op, prog, g, sr, e->start_ps,
                         e->dur_ps > 0 ? e->dur_ps : 0, 0, {0, 0}};
            int64_t gv;
            if ((mask & (1u << S_GRAPH)) && xpv_stat_as_int(&st[S_GRAPH], &gv)) kf.graph = (uint64_t)gv;
            if ((mask & (1u << S_CORR)) && xpv_stat_as_int(&st[S_CORR], &kf.corr.v)) kf.corr.has = 1;
            derive_kernel(c, d, &kf);
        }
        free(o);
        for (int q = 0; q < 5; q++) total += d[q].n;
    }

    int any = total + steps.n > 0;
    if (any) emit_gpu_plane(c, arena, pl, sl, lines, nall, &steps, gr, out);
    for (size_t q = 0; q < nall; q++) {
        free(lines[q].ev);
        free(lines[q].gid);
        free(lines[q].gx);
        free(lines[q].last);
    }
    free(steps.ev);
    free(steps.gid);
    free(steps.last);
    free(lines);
    free(sl);
    free(c->tab.m);
    free(c->tab.slot);
    memset(&c->tab, 0, sizeof c->tab);
    return any;
}

/* ==== TPU TensorCore planes (DeriveLinesFromStats) ====================== */

enum { T_TF_OP, T_SOURCE, T_GROUP, T_ASYNC, T_N };

typedef struct tstats {
    xpv_str tf_op, source;
    opt64 g, a;
} tstats;

static void tstat_set(tstats *t, int k, const xpv_stat *st) {
    int64_t v;
    switch (k) {
    case T_TF_OP: t->tf_op = st->kind == XPV_STAT_STR ? st->v.s : (xpv_str){NULL, 0}; break;
    case T_SOURCE: t->source = st->kind == XPV_STAT_STR ? st->v.s : (xpv_str){NULL, 0}; break;
    case T_GROUP: t->g = xpv_stat_as_int(st, &v) ? (opt64){1, v} : (opt64){0, 0}; break;
    default: t->a = xpv_stat_as_int(st, &v) ? (opt64){1, v} : (opt64){0, 0}; break;
    }
}

/* Per event metadata: its tf_op's and source's derived metadata. */
typedef struct tcache {
    int op_ready, src_ready;
    uint32_t op, src;
    uint32_t *scopes;
    size_t nscopes;
} tcache;

/* "/device:TPU:<digits>" (XProf's FindMutableTensorCorePlanes). */
static int is_tensor_core(xpv_str n) {
    static const char pre[] = "/device:TPU:";
    uint32_t k = sizeof pre - 1;
    if (!xpv_str_has_prefix(n, pre) || n.len == k) return 0;
    for (uint32_t i = k; i < n.len; i++)
        if (n.ptr[i] < '0' || n.ptr[i] > '9') return 0;
    return 1;
}

static const char *const tpu_line_names[3] = {"Framework Name Scope", "Framework Ops",
                                              "Source code"};
static const int tpu_line_ids[3] = {2, 3, 7}; /* kThreadIdTfNameScope, TfOp, Source */

static int64_t ln_ts(int64_t ts0) { return ts0 == INT64_MAX ? 0 : ts0; }

/* A derived line's events, built in a malloc'd array of `n` (capacity at
 * least n): the array itself becomes the line's, freed with `arena`
 * (no copy; *ev is cleared). */
static xpv_event *adopt_events(xpv_arena *arena, xpv_event **ev, size_t n) {
    xpv_event *e = xpv_xrealloc(*ev, (n ? n : 1) * sizeof *e); /* drop the spare capacity */
    *ev = NULL;
    xpv_arena_adopt(arena, e, (n ? n : 1) * sizeof *e);
    return e;
}

/* The metadata of offload key `key`, made on first use (in the order the
 * rows use them). */
typedef struct key_metas {
    ctx *c;
    const xpv_dl_offload *o;
    uint32_t *kmeta;           /* per key, UINT32_MAX until made */
} key_metas;

static uint32_t key_meta(void *arg, uint32_t key) {
    key_metas *k = arg;
    if (k->kmeta[key] == UINT32_MAX)
        k->kmeta[key] = tab_get(&k->c->tab, k->o->keys[key], (xpv_str){NULL, 0});
    return k->kmeta[key];
}

/* The host offload rows as synthesized lines after the others of `sp`
 * (ids kThreadIdHostOffloadOpStart + k, "Host Offload Ops row <k>"); the
 * rows' arrays become the lines'. */
static void emit_offload_rows(ctx *c, xpv_arena *arena, xpv_plane *sp,
                              xpv_dl_offload *o, int64_t ts) {
    key_metas km = {c, o, xpv_xmalloc((o->nkeys ? o->nkeys : 1) * sizeof *km.kmeta)};
    for (uint32_t k = 0; k < o->nkeys; k++) km.kmeta[k] = UINT32_MAX;
    for (uint32_t k = 0; k < o->nrows; k++) {
        if (!o->nrow[k]) continue;
        xpv_line *ln = &sp->lines[sp->nlines++];
        ln->id = ln->display_id = XPV_DL_BASE + 8 + k;
        char name[48];
        int nl = snprintf(name, sizeof name, "Host Offload Ops row %u", k);
        ln->name = (xpv_str){xpv_arena_strndup(arena, name, (size_t)nl), (uint32_t)nl};
        ln->display_name = ln->name;
        ln->timestamp_ns = ts;
        ln->nevents = (uint32_t)o->nrow[k];
        ln->events = adopt_events(arena, &o->row[k], o->nrow[k]);
        /* (reads the start metadata in wire, the done's in meta) */
        xpv_dl_attach_offload_stats(arena, ln, o, key_meta, &km);
        sp->nevents += o->nrow[k];
    }
    free(km.kmeta);
}

/* The derived lines of a TensorCore plane into `out`, XProf's names and
 * ids (kThreadIdTfNameScope, kThreadIdTfOp, kThreadIdSource, then the
 * host offload rows). */
static void emit_tpu_plane(ctx *c, xpv_arena *arena, const xpv_plane *pl, dline *lines,
                           xpv_dl_offload *off, xpv_dl_plane *out) {
    memset(out, 0, sizeof *out);
    xpv_plane *sp = &out->synth;
    sp->id = pl->id;
    sp->name = pl->name;
    xpv_dl_synth_stat_meta(arena, sp);
    out->line_display_id = xpv_arena_calloc(arena, pl->nlines ? pl->nlines : 1, sizeof(int64_t));
    int64_t ts0 = INT64_MAX;
    for (uint32_t li = 0; li < pl->nlines; li++) {
        out->line_display_id[li] = pl->lines[li].display_id;
        if (pl->lines[li].timestamp_ns < ts0) ts0 = pl->lines[li].timestamp_ns;
    }
    sp->lines = xpv_arena_calloc(arena, 3 + off->nrows, sizeof *sp->lines);
    for (int q = 0; q < 3; q++) {
        dline *d = &lines[q];
        if (!d->n) continue;
        xpv_line *ln = &sp->lines[sp->nlines++];
        ln->id = ln->display_id = XPV_DL_BASE + tpu_line_ids[q];
        ln->name.ptr = tpu_line_names[q];
        ln->name.len = (uint32_t)strlen(tpu_line_names[q]);
        ln->display_name = ln->name;
        ln->timestamp_ns = ln_ts(ts0);
        ln->events = adopt_events(arena, &d->ev, d->n);
        ln->nevents = (uint32_t)d->n;
        xpv_dl_group_wire_adopt(arena, ln, d->gw);
        sp->nevents += d->n;
    }
    emit_offload_rows(c, arena, sp, off, ln_ts(ts0));
    /* the metadata table last: the offload rows add to it */
    sp->event_meta = xpv_arena_calloc(arena, c->tab.n, sizeof *sp->event_meta);
    memcpy(sp->event_meta, c->tab.m, c->tab.n * sizeof *sp->event_meta);
    sp->nevent_meta = c->tab.n;
}

/* The state of a TensorCore plane's walk (derive_tpu_plane). */
typedef struct twalk {
    ctx *c;
    const xpv_plane *pl;
    const xpv_groups *gr;
    uint32_t pi;
    const tstats *mt;          /* per metadata: its stats */
    const uint8_t *mf;         /* per metadata: 1 named, 2 adds nothing without
                                * stats of its own, 4 an offload candidate (fed) */
    const uint8_t *own;        /* per line: its events may hold the stats read */
    tcache *cache;
    xpv_stat_set set;
    xpv_dl_offload *off;
    dline *lines;              /* Framework Name Scope, Ops, Source code */
    /* The tf_op (Framework Name Scope and Ops) and the source last added,
     * when grouped: their metadata and group (UINT32_MAX: none, or not
     * known).  The same again in the same group merges into the open
     * events they left on every level (add_level's merge). */
    uint32_t last_op, last_src;
    int64_t last_op_g, last_src_g;
} twalk;

/* add_level's merge of [start, start + dur) into the open event of
 * `level` (which merges: same metadata and group). */
static inline void extend_level(dline *d, size_t level, int64_t start, int64_t dur) {
    xpv_event *e = &d->ev[d->last[level].ev];
    int64_t end = e->start_ps + e->dur_ps, nend = start + dur;
    if (start < e->start_ps) e->start_ps = start;
    if (nend > end) end = nend;
    e->dur_ps = end - e->start_ps;
}

/* One event of the walk, in the plane's time order: fed to the host
 * offload rows, then its tf_op and source added to the derived lines. */
static inline void tpu_walk_event(twalk *w, const xpv_line *eln, uint32_t li, uint32_t ei) {
    const xpv_event *e = &eln->events[ei];
    const tstats *mt = &w->mt[e->meta];
    uint8_t f = w->mf[e->meta];
    tstats ts;
    if (e->wire == XPV_NO_STATS || !w->own[li]) { /* the metadata's stats only */
        if (f & 4) xpv_dl_offload_feed(w->off, e);
        if (f & 2) return;
        ts = *mt;
    } else {
        ts = *mt;
        xpv_stat st[T_N];
        uint32_t got = xpv_event_stats_in(w->pl, eln, e, &w->set, st, NULL);
        int64_t v; /* a non-zero `_a` of the event itself: not an offload op */
        int own_a = (got & (1u << T_ASYNC)) && xpv_stat_as_int(&st[T_ASYNC], &v) && v;
        for (; got; got &= got - 1) tstat_set(&ts, __builtin_ctz(got), &st[__builtin_ctz(got)]);
        if ((f & 4) && !own_a) xpv_dl_offload_feed(w->off, e);
    }
    if (ts.a.has && ts.a.v) return; /* asynchronous events are left out */
    int32_t cg = xpv_group_of(w->gr, w->pi, li, ei);
    if (cg >= 0) ts.g = (opt64){1, cg};
    int64_t du = e->dur_ps > 0 ? e->dur_ps : 0;
    /* Metadata-level names resolve once per metadata (XProf caches
     * them too); an event's own tf_op / source resolves each time. */
    tcache *tc = &w->cache[e->meta];
    ctx *c = w->c;
    if (ts.tf_op.len) {
        if (ts.tf_op.ptr == mt->tf_op.ptr) {
            if (!tc->op_ready) {
                size_t n;
                tc->op = resolve_tf_op(c, ts.tf_op, &n);
                tc->scopes = n ? xpv_xmalloc(n * sizeof *tc->scopes) : NULL;
                if (n) memcpy(tc->scopes, c->mbuf, n * sizeof *tc->scopes);
                tc->nscopes = n;
                tc->op_ready = 1;
            }
            if (ts.g.has && tc->op == w->last_op && ts.g.v == w->last_op_g) {
                for (size_t i = 0; i < tc->nscopes; i++)
                    extend_level(&w->lines[0], i, e->start_ps, du);
                extend_level(&w->lines[1], 0, e->start_ps, du);
            } else {
                add_tf_op(tc->scopes, tc->nscopes, tc->op, e->start_ps, du, ts.g, &w->lines[0],
                          &w->lines[1]);
                w->last_op = ts.g.has ? tc->op : UINT32_MAX;
                w->last_op_g = ts.g.v;
            }
        } else {
            process_tf_op(c, ts.tf_op, e->start_ps, du, ts.g, &w->lines[0], &w->lines[1]);
            w->last_op = UINT32_MAX;
        }
    }
    if (ts.source.len) {
        uint32_t sm;
        if (ts.source.ptr == mt->source.ptr) {
            if (!tc->src_ready) {
                tc->src = tab_get(&c->tab, ts.source, (xpv_str){NULL, 0});
                tc->src_ready = 1;
            }
            sm = tc->src;
        } else {
            sm = tab_get(&c->tab, ts.source, (xpv_str){NULL, 0});
        }
        if (ts.g.has && sm == w->last_src && ts.g.v == w->last_src_g) {
            extend_level(&w->lines[2], 0, e->start_ps, du);
        } else {
            opt64 none = {0, 0};
            add_level(&w->lines[2], sm, e->start_ps, du, ts.g, none, 0);
            w->last_src = ts.g.has ? sm : UINT32_MAX;
            w->last_src_g = ts.g.v;
        }
    }
}

/* Framework Name Scope, Framework Ops and Source code of one TensorCore
 * plane from the `tf_op` and `source` stats of its events (event stats
 * over their metadata's); `_a` events are left out; group ids from the
 * events' `group_id` or the computed grouping.  Returns 0 when nothing
 * was derived. */
static int derive_tpu_plane(ctx *c, xpv_arena *arena, const xpv_plane *pl, const xpv_groups *gr,
                            uint32_t pi, xpv_dl_plane *out) {
    for (uint32_t li = 0; li < pl->nlines; li++)
        if (xpv_dl_is_derived_id(pl->lines[li].id)) return 0;
    static const char *const names[T_N] = {"tf_op", "source", "group_id", "_a"};
    int32_t ids[T_N];
    for (int k = 0; k < T_N; k++) ids[k] = xpv_stat_id(pl, names[k]);
    xpv_stat_set set;
    xpv_stat_set_init(&set, pl, ids, T_N);
    tstats *mt = xpv_xcalloc(pl->nevent_meta ? pl->nevent_meta : 1, sizeof *mt);
    tcache *cache = xpv_xcalloc(pl->nevent_meta ? pl->nevent_meta : 1, sizeof *cache);
    for (uint32_t m = 0; m < pl->nevent_meta; m++)
        for (uint32_t k = 0; k < pl->event_meta[m].nstats; k++)
            for (int j = 0; j < T_N; j++)
                if (ids[j] >= 0 && pl->event_meta[m].stats[k].meta == ids[j])
                    tstat_set(&mt[m], j, &pl->event_meta[m].stats[k]);
    /* per metadata: whether its events name a tf_op or a source, and
     * whether one without stats of its own adds nothing (asynchronous,
     * or neither name): the walk then reads no more than this byte */
    uint8_t *mf = xpv_xmalloc(pl->nevent_meta ? pl->nevent_meta : 1);
    for (uint32_t m = 0; m < pl->nevent_meta; m++) {
        int named = mt[m].tf_op.len || mt[m].source.len;
        mf[m] = (uint8_t)(named | (!named || (mt[m].a.has && mt[m].a.v) ? 2 : 0));
    }

    memset(&c->tab, 0, sizeof c->tab);
    c->tab.arena = arena;
    c->tab.n = c->tab.cap = 1;
    c->tab.m = xpv_xcalloc(1, sizeof *c->tab.m);
    dline lines[3];
    memset(lines, 0, sizeof lines);
    dline *scope = &lines[0], *ops = &lines[1], *src = &lines[2];
    xpv_group_wire gw[3];
    for (int q = 0; q < 3; q++) {
        lines[q].not_gpu = 1;
        xpv_dl_group_wire_init(&gw[q]);
        lines[q].gw = &gw[q];
    }
    scope->dep[scope->ndep++] = ops;

    /* Only events with a tf_op or a source add to the derived lines (the
     * others change nothing, not even the merge state): a line none of
     * whose events can have either is left out of the time-ordered walk,
     * and a line that cannot hold any of the stats read here takes them
     * from the metadata without reading its events' bytes. */
    xpv_stat_set named;
    xpv_stat_set_init(&named, pl, ids, 2);  /* tf_op, source */
    xpv_plane_walk walk;
    xpv_plane_walk_init(&walk, pl);
    uint8_t *own = xpv_xcalloc(pl->nlines ? pl->nlines : 1, 1);
    /* XProf's HostOffloadEventProcessor, in the same walk there: fed from
     * this walk unless a line it leaves out holds a candidate (only lines
     * whose events name a candidate metadata are checked) */
    xpv_dl_offload off;
    int begun = xpv_dl_offload_begin(pl, arena, &off) != 0, outside = 0;
    uint8_t *skip = xpv_xcalloc(pl->nlines ? pl->nlines : 1, 1);
    for (uint32_t li = 0; li < pl->nlines; li++) {
        const xpv_line *ln = &pl->lines[li];
        if (!ln->nevents) continue;
        own[li] = (uint8_t)xpv_line_may_have(ln, &set);
        int adds = xpv_line_may_have(ln, &named), cand = 0;
        for (uint32_t i = 0; i < ln->nevents && !adds; i++) {
            uint32_t m = ln->events[i].meta;
            adds = mf[m] & 1;
            cand |= begun && off.kind[m];
        }
        if (adds) xpv_plane_walk_add(&walk, li);
        skip[li] = (uint8_t)(adds || !cand);
        outside |= !skip[li];
    }
    int fed = begun && !(outside && xpv_dl_offload_outside(&off, pl, skip));
    free(skip);
    twalk w = {c, pl, gr, pi, mt, mf, own, cache, set, &off, lines, UINT32_MAX, UINT32_MAX, 0, 0};
    if (fed)
        for (uint32_t m = 0; m < pl->nevent_meta; m++) mf[m] |= (uint8_t)(off.kind[m] ? 4 : 0);
    while (walk.n > 1 || (walk.n == 1 && walk.cur[0].ord)) {
        uint32_t li, ei;
        xpv_plane_walk_next(&walk, &li, &ei);
        tpu_walk_event(&w, &pl->lines[li], li, ei);
    }
    if (walk.n) { /* one line in time order left: the rest of its events in turn */
        const xpv_walk_cursor *t = &walk.cur[0];
        for (uint32_t ei = t->pos; ei < t->ln->nevents; ei++) {
            __builtin_prefetch(t->ln->events + ei + 32);
            tpu_walk_event(&w, t->ln, t->li, ei);
        }
    }
    reset(scope, 0);
    xpv_plane_walk_free(&walk);
    free(own);
    free(mt);
    free(mf);
    for (uint32_t m = 0; m < pl->nevent_meta; m++) free(cache[m].scopes);
    free(cache);

    if (off.pairing && !fed) xpv_dl_offload_walk(&off, pl);
    uint32_t nrows = xpv_dl_offload_end(&off);
    size_t total = scope->n + ops->n + src->n;
    for (uint32_t k = 0; k < nrows; k++) total += off.nrow[k];
    if (total) emit_tpu_plane(c, arena, pl, lines, &off, out);
    xpv_dl_offload_free(&off);
    for (int q = 0; q < 3; q++) {
        free(lines[q].ev);
        xpv_dl_group_wire_free(&gw[q]);
        free(lines[q].gx);
        free(lines[q].last);
    }
    free(c->tab.m);
    free(c->tab.slot);
    memset(&c->tab, 0, sizeof c->tab);
    return total > 0;
}

/* The group id of an event: the computed grouping, else the file's
 * `group_id` stat (-1: none). */
static int64_t event_group(const xpv_plane *pl, const xpv_groups *gr, uint32_t pi, uint32_t li,
                           uint32_t ei, int32_t sid) {
    if (gr && gr->gid) return xpv_group_of(gr, pi, li, ei);
    xpv_stat st;
    int64_t v;
    if (sid >= 0 && xpv_event_stat(pl, &pl->lines[li], &pl->lines[li].events[ei], sid, &st) &&
        xpv_stat_as_int(&st, &v))
        return v;
    return -1;
}

/* XProf's DeriveStepEventsFromGroups on a GPU plane: every event with a
 * group id, in the plane's time order, extends the last Steps event of its
 * group or starts one (metadata named by the group id, shown as the
 * group's name: XProf's step_name). */
static void gpu_steps(ctx *c, const xpv_plane *pl, const xpv_groups *gr, uint32_t pi, dline *d) {
    int32_t sid = xpv_stat_id(pl, "group_id");
    if (!(gr && gr->gid) && sid < 0) return;
    xpv_plane_walk walk;
    xpv_plane_walk_init(&walk, pl);
    for (uint32_t li = 0; li < pl->nlines; li++) xpv_plane_walk_add(&walk, li);
    opt64 none = {0, 0};
    const xpv_event *e;
    uint32_t li, ei;
    while ((e = xpv_plane_walk_next(&walk, &li, &ei))) {
        int64_t g = event_group(pl, gr, pi, li, ei, sid);
        if (g < 0) continue;
        char nm[32];
        int w = snprintf(nm, sizeof nm, "%lld", (long long)g);
        /* no display name: the group's name is the event's step_name stat */
        uint32_t m = tab_get(&c->tab, (xpv_str){nm, (uint32_t)w}, (xpv_str){NULL, 0});
        add_level(d, m, e->start_ps, e->dur_ps > 0 ? e->dur_ps : 0, (opt64){1, g}, none, 0);
    }
    xpv_plane_walk_free(&walk);
}

/* One of the two workers deriving planes: a run of the profile's planes,
 * its own scratch (ctx) and arena.  Results are joined in plane order. */
typedef struct dl_worker {
    const xpv_profile *p;
    const xpv_groups *groups;
    ctx c;
    xpv_arena *arena;
    uint32_t from, to;         /* planes [from, to) */
    xpv_dl_plane *planes;
    uint32_t nplanes;
} dl_worker;

static int derivable(const xpv_plane *pl) {
    return xpv_str_has_prefix(pl->name, "/device:GPU:") || is_tensor_core(pl->name);
}

static void dl_worker_run(void *arg) {
    dl_worker *w = arg;
    for (uint32_t pi = w->from; pi < w->to; pi++) {
        const xpv_plane *pl = &w->p->planes[pi];
        xpv_dl_plane tmp;
        if (xpv_str_has_prefix(pl->name, "/device:GPU:")) {
            if (!derive_plane(&w->c, w->arena, pl, w->groups, pi, &tmp)) continue;
        } else if (is_tensor_core(pl->name)) {
            if (!derive_tpu_plane(&w->c, w->arena, pl, w->groups, pi, &tmp)) continue;
        } else {
            continue;
        }
        tmp.plane = pi;
        w->planes = xpv_xrealloc(w->planes, (w->nplanes + 1) * sizeof *w->planes);
        w->planes[w->nplanes++] = tmp;
    }
    free(w->c.mbuf);
    free(w->c.sbuf);
    free(w->c.memo);
    free(w->c.names);
}

/* Below this many device events one thread derives every plane. */
#define DL_PARALLEL_MIN_EVENTS 200000

xpv_derived_lines *xpv_derived_lines_build(const xpv_profile *p, const struct xpv_groups *groups) {
    xpv_derived_lines *d = xpv_xcalloc(1, sizeof *d);
    xpv_arena_init(&d->arena, 1 << 14);
    xpv_arena_init(&d->arena2, 1 << 14);
    if (!p) return d;
    scope_edge *edges = NULL;
    size_t nedges = 0;
    /* scope_range_id tree: stat id -> parent id (plane stats). */
    const xpv_plane *tree = xpv_find_plane(p, "/host:__ScopeRangeCallStack__");
    if (tree && tree->nstats) {
        edges = xpv_xcalloc(tree->nstats, sizeof *edges);
        for (uint32_t i = 0; i < tree->nstats; i++) {
            const xpv_stat *st = &tree->stats[i];
            int64_t v;
            if (!xpv_stat_as_int(st, &v)) continue;
            /* XProf keys the tree by the stat's metadata id as written
             * (the writer defines no metadata for them) */
            if (tree->stat_mids)
                edges[nedges++] = (scope_edge){tree->stat_mids[i], v, i};
            else if (st->meta >= 0 && (uint32_t)st->meta < tree->nstat_meta)
                edges[nedges++] = (scope_edge){tree->stat_meta[st->meta].id, v, i};
        }
        if (nedges) qsort(edges, nedges, sizeof *edges, cmp_edge);
        /* a repeated id keeps its first parent (XProf's map emplace) */
        size_t u = 0;
        for (size_t k = 0; k < nedges; k++)
            if (!u || edges[u - 1].id != edges[k].id) edges[u++] = edges[k];
        nedges = u;
    }
    /* Two workers over halves of the device events (XProf derives planes
     * on a thread pool too); the planes are independent. */
    uint64_t total = 0, acc = 0;
    for (uint32_t pi = 0; pi < p->nplanes; pi++)
        if (derivable(&p->planes[pi])) total += p->planes[pi].nevents;
    uint32_t split = p->nplanes;
    if (total >= DL_PARALLEL_MIN_EVENTS)
        for (split = 0; split < p->nplanes && acc < total / 2; split++)
            if (derivable(&p->planes[split])) acc += p->planes[split].nevents;
    /* The profile's HLO protos, for XLA kernels' framework ops and source
     * lines; decoded (lazily, per program) only while deriving. */
    const xpv_profile *one[1] = {p};
    const char *one_name[1] = {""};
    xpv_hostset hs = {1, one, one_name};
    xpv_hlo_map *hm = xpv_hlo_count_protos(p) ? xpv_hlo_map_build(&hs) : NULL;
    dl_worker w[2];
    memset(w, 0, sizeof w);
    for (int i = 0; i < 2; i++) {
        w[i].p = p;
        w[i].groups = groups;
        w[i].c.edges = edges;
        w[i].c.nedges = nedges;
        w[i].c.hlo = hm;
        w[i].c.hs = &hs;
        w[i].arena = i ? &d->arena2 : &d->arena;
    }
    w[0].from = 0;
    w[0].to = split;
    w[1].from = split;
    w[1].to = p->nplanes;
    xpv_par_run_if(split < p->nplanes, dl_worker_run, &w[1], dl_worker_run, &w[0]);
    d->nplanes = w[0].nplanes + w[1].nplanes;
    d->planes = xpv_xmalloc((d->nplanes ? d->nplanes : 1) * sizeof *d->planes);
    if (w[0].nplanes) memcpy(d->planes, w[0].planes, w[0].nplanes * sizeof *d->planes);
    if (w[1].nplanes)
        memcpy(d->planes + w[0].nplanes, w[1].planes, w[1].nplanes * sizeof *d->planes);
    free(w[0].planes);
    free(w[1].planes);
    free(edges);
    xpv_hlo_map_free(hm);
    xpv_dl_launch_stats(d, p, groups);
    d->bytes = sizeof *d + d->arena.total + d->arena2.total + d->nplanes * sizeof *d->planes;
    return d;
}

void xpv_derived_lines_free(xpv_derived_lines *d) {
    if (!d) return;
    free(d->planes);
    xpv_arena_free(&d->arena);
    xpv_arena_free(&d->arena2);
    free(d);
}

const xpv_dl_plane *xpv_derived_lines_plane(const xpv_derived_lines *d, uint32_t plane) {
    if (!d) return NULL;
    for (uint32_t i = 0; i < d->nplanes; i++)
        if (d->planes[i].plane == plane) return &d->planes[i];
    return NULL;
}
