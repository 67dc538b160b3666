/*
 * derived_lines.c - XProf's derived GPU timeline lines (see derived_lines.h).
 */
#include "derived_lines.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int xpv_dl_is_derived_id(int64_t id) {
    int64_t v = (int64_t)(int32_t)(uint32_t)id;
    if (v != id && id != (int64_t)(uint32_t)v) return 0;  /* not a 32-bit value */
    return v >= XPV_DL_BASE && v < XPV_DL_DEVICE_MIN + 100;
}

/* ==== Event metadata table (plane-wide, by name) ======================== */

typedef struct meta_tab {
    xpv_event_meta *m;          /* index 0: the empty entry */
    uint32_t n, cap;
    uint32_t *slot;             /* open addressing: meta index + 1, 0 empty */
    size_t nslot;
    xpv_arena *arena;
} meta_tab;

static uint64_t hash_str(const char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

static void tab_rehash(meta_tab *t, size_t nslot) {
    free(t->slot);
    t->slot = xpv_xcalloc(nslot, sizeof *t->slot);
    t->nslot = nslot;
    for (uint32_t i = 1; i < t->n; i++) {
        size_t s = hash_str(t->m[i].name.ptr, t->m[i].name.len) & (nslot - 1);
        while (t->slot[s]) s = (s + 1) & (nslot - 1);
        t->slot[s] = i + 1;
    }
}

/* Metadata named `name` (created with display name `disp` when new;
 * disp.len == 0: none). */
static uint32_t tab_get(meta_tab *t, xpv_str name, xpv_str disp) {
    if ((size_t)(t->n + 1) * 2 > t->nslot) tab_rehash(t, t->nslot ? t->nslot * 2 : 64);
    size_t s = hash_str(name.ptr, name.len) & (t->nslot - 1);
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
    size_t n, cap;
    lvl *last;
    size_t nlast;
    struct dline *dep[2];
    int ndep;
} dline;

typedef struct opt64 {
    int has;
    int64_t v;
} opt64;

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
        /* GPU plane: no gap condition. */
        if (e->meta == meta && L->has_g == g.has && (!g.has || L->g == g.v) &&
            (!sr.has || !L->has_s || L->s == sr.v)) {
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
    }
    d->ev[d->n] = (xpv_event){start, dur, meta, XPV_NO_STATS};
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
static int is_jax_type(const char *p, size_t n) {
    if (!n || !(p[0] == '_' || (p[0] >= 'a' && p[0] <= 'z'))) return 0;
    for (size_t i = 1; i < n; i++) {
        char c = p[i];
        if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return 0;
    }
    return 1;
}

typedef struct tfop {
    int cat;
    xpv_str name, type;
} tfop;

static tfop parse_tf_op(xpv_str full) {
    tfop r = {CAT_UNKNOWN, full, {NULL, 0}};
    const char *colon = memchr(full.ptr, ':', full.len);
    if (colon) {
        size_t nl = (size_t)(colon - full.ptr);
        xpv_str name = {full.ptr, (uint32_t)nl}, type = {colon + 1, (uint32_t)(full.len - nl - 1)};
        if (is_tf_type(type.ptr, type.len) && is_tf_name(name.ptr, name.len))
            r = (tfop){CAT_TF, name, type};
        else if (is_jax_type(type.ptr, type.len) && name.len)
            r = (tfop){CAT_JAX, name, type};
        return r;
    }
    const char *slash = NULL;
    for (uint32_t i = full.len; i > 0; i--)
        if (full.ptr[i - 1] == '/') {
            slash = full.ptr + i - 1;
            break;
        }
    if (slash) {
        xpv_str type = {slash + 1, (uint32_t)(full.ptr + full.len - slash - 1)};
        if (is_jax_type(type.ptr, type.len)) r = (tfop){CAT_JAX, full, type};
    }
    return r;
}

/* ==== Per plane ========================================================= */

typedef struct scope_edge {
    int64_t id, parent;
} scope_edge;

static int cmp_edge(const void *a, const void *b) {
    const scope_edge *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

typedef struct ctx {
    meta_tab tab;
    scope_edge *edges;
    size_t nedges;
    uint32_t *mbuf;
    opt64 *sbuf;
    size_t cap_buf;
} ctx;

static const scope_edge *find_edge(const ctx *c, int64_t id) {
    scope_edge key = {id, 0};
    return c->nedges ? bsearch(&key, c->edges, c->nedges, sizeof key, cmp_edge) : NULL;
}

static void ensure_buf(ctx *c, size_t n) {
    if (n <= c->cap_buf) return;
    c->cap_buf = n * 2;
    c->mbuf = xpv_xrealloc(c->mbuf, c->cap_buf * sizeof *c->mbuf);
    c->sbuf = xpv_xrealloc(c->sbuf, c->cap_buf * sizeof *c->sbuf);
}

static void process_tf_op(ctx *c, xpv_str full, int64_t s, int64_t d, opt64 g, dline *scope,
                          dline *ops) {
    tfop op = parse_tf_op(full);
    if (op.cat == CAT_TF || op.cat == CAT_JAX) {
        size_t n = 0;
        uint32_t b = 0;
        for (uint32_t i = 0; i < op.name.len; i++)
            if (op.name.ptr[i] == '/') {
                ensure_buf(c, n + 1);
                xpv_str part = {op.name.ptr + b, i - b}, none = {NULL, 0};
                c->mbuf[n++] = tab_get(&c->tab, part, none);
                b = i + 1;
            }
        add_levels(scope, c->mbuf, n, s, d, g, NULL);
    }
    xpv_str disp = op.cat == CAT_UNKNOWN ? op.name : op.type;
    uint32_t m = tab_get(&c->tab, full, disp);
    opt64 none = {0, 0};
    add_level(ops, m, s, d, g, none, 0);
}

typedef struct ord {
    int64_t start, negdur;
    uint32_t i;
} ord;
static int cmp_ord(const void *a, const void *b) {
    const ord *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->negdur != y->negdur) return x->negdur < y->negdur ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
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

enum { S_KERNEL, S_MODULE, S_PROGRAM, S_HLO_OP, S_TF_OP, S_GROUP, S_SCOPE, S_N };
static const char *const stat_names[S_N] = {"kernel_details", "hlo_module", "program_id", "hlo_op",
                                           "tf_op", "group_id", "scope_range_id"};

static const char *const line_names[4] = {"Framework Name Scope", "Framework Ops", "XLA Modules",
                                          "XLA Ops"};

/* Derive one plane into `out`; returns 0 when nothing was derived. */
static int derive_plane(ctx *c, xpv_arena *arena, const xpv_plane *pl, xpv_dl_plane *out) {
    for (uint32_t li = 0; li < pl->nlines; li++)
        if (xpv_dl_is_derived_id(pl->lines[li].id)) return 0;
    int32_t ids[S_N];
    for (int k = 0; k < S_N; k++) ids[k] = xpv_stat_id(pl, stat_names[k]);
    if (ids[S_KERNEL] < 0) return 0;
    xpv_stat_set set;
    xpv_stat_set_init(&set, pl, ids, S_N);

    memset(&c->tab, 0, sizeof c->tab);
    c->tab.arena = arena;
    xpv_str empty = {NULL, 0};
    c->tab.n = c->tab.cap = 1;
    c->tab.m = xpv_xcalloc(1, sizeof *c->tab.m);

    sline *sl = xpv_xcalloc(pl->nlines ? pl->nlines : 1, sizeof *sl);
    for (uint32_t li = 0; li < pl->nlines; li++)
        sl[li] = (sline){str_has(pl->lines[li].name, "Compute"), pl->lines[li].nevents, li};
    if (pl->nlines) qsort(sl, pl->nlines, sizeof *sl, cmp_sline);

    size_t nall = (size_t)pl->nlines * XPV_DL_PER_STREAM;
    dline *lines = xpv_xcalloc(nall ? nall : 1, sizeof *lines);
    ord *o = NULL;
    size_t cap_o = 0;
    size_t total = 0;
    for (uint32_t k = 0; k < pl->nlines; k++) {
        const xpv_line *ln = &pl->lines[sl[k].li];
        dline *d = &lines[(size_t)k * XPV_DL_PER_STREAM];
        dline *scope = &d[XPV_DL_NAME_SCOPE], *ops = &d[XPV_DL_TF_OP], *mod = &d[XPV_DL_MODULE],
              *hlo = &d[XPV_DL_HLO_OP];
        scope->dep[scope->ndep++] = ops;
        mod->dep[mod->ndep++] = scope;
        mod->dep[mod->ndep++] = hlo;
        if (ln->nevents > cap_o) {
            cap_o = ln->nevents;
            o = xpv_xrealloc(o, cap_o * sizeof *o);
        }
        for (uint32_t i = 0; i < ln->nevents; i++)
            o[i] = (ord){ln->events[i].start_ps, -ln->events[i].dur_ps, i};
        if (ln->nevents) qsort(o, ln->nevents, sizeof *o, cmp_ord);
        for (uint32_t j = 0; j < ln->nevents; j++) {
            const xpv_event *e = &ln->events[o[j].i];
            xpv_stat st[S_N];
            uint32_t mask = xpv_event_stats_in(pl, ln, e, &set, st, NULL);
            if (!(mask & (1u << S_KERNEL))) continue;
            xpv_str module = empty, hlo_op = empty, tf_op = empty;
            opt64 prog = {0, 0}, g = {0, 0}, sr = {0, 0};
            if ((mask & (1u << S_MODULE)) && st[S_MODULE].kind == XPV_STAT_STR) module = st[S_MODULE].v.s;
            if ((mask & (1u << S_HLO_OP)) && st[S_HLO_OP].kind == XPV_STAT_STR) hlo_op = st[S_HLO_OP].v.s;
            if ((mask & (1u << S_TF_OP)) && st[S_TF_OP].kind == XPV_STAT_STR) tf_op = st[S_TF_OP].v.s;
            if ((mask & (1u << S_PROGRAM)) && xpv_stat_as_int(&st[S_PROGRAM], &prog.v)) prog.has = 1;
            if ((mask & (1u << S_GROUP)) && xpv_stat_as_int(&st[S_GROUP], &g.v)) g.has = 1;
            if ((mask & (1u << S_SCOPE)) && xpv_stat_as_int(&st[S_SCOPE], &sr.v)) sr.has = 1;
            int64_t s = e->start_ps, du = e->dur_ps > 0 ? e->dur_ps : 0;
            /* scope range chain: [own, parent, ..., root] */
            size_t nchain = 0;
            if ((module.len || hlo_op.len) && sr.has) {
                ensure_buf(c, 1);
                c->sbuf[nchain++] = sr;
                const scope_edge *ed;
                int64_t cur = sr.v;
                while ((ed = find_edge(c, cur)) != NULL && nchain < 256) {
                    int seen = 0;
                    for (size_t q = 0; q < nchain; q++)
                        if (c->sbuf[q].v == ed->parent) seen = 1;
                    if (seen) break;
                    ensure_buf(c, nchain + 1);
                    c->sbuf[nchain++] = (opt64){1, ed->parent};
                    cur = ed->parent;
                }
            }
            char pre[64];
            if (module.len) {
                char *nm = NULL;
                xpv_str name = module;
                if (prog.has) {
                    size_t n = (size_t)module.len + 32;
                    nm = xpv_xmalloc(n);
                    int w = snprintf(nm, n, "%.*s(%lld)", (int)module.len, module.ptr,
                                     (long long)prog.v);
                    name = (xpv_str){nm, (uint32_t)w};
                }
                opt64 root = nchain ? c->sbuf[nchain - 1] : (opt64){0, 0};
                add_level(mod, tab_get(&c->tab, name, empty), s, du, g, root, 0);
                free(nm);
            }
            if (hlo_op.len) {
                size_t np = 1;
                for (uint32_t i = 0; i + 1 < hlo_op.len; i++)
                    if (hlo_op.ptr[i] == ':' && hlo_op.ptr[i + 1] == ':') np++, i++;
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
                add_levels(hlo, c->mbuf, np2, s, du, g, srs);
            } else if (tf_op.len) {
                process_tf_op(c, tf_op, s, du, g, scope, ops);
            }
        }
        for (int q = 0; q < 4; q++) total += d[q].n;
    }
    free(o);

    int any = total > 0;
    if (any) {
        memset(out, 0, sizeof *out);
        xpv_plane *sp = &out->synth;
        sp->id = pl->id;
        sp->name = pl->name;
        sp->event_meta = xpv_arena_calloc(arena, c->tab.n, sizeof *sp->event_meta);
        if (c->tab.n) memcpy(sp->event_meta, c->tab.m, c->tab.n * sizeof *sp->event_meta);
        sp->nevent_meta = c->tab.n;
        sp->stat_meta = xpv_arena_calloc(arena, 1, sizeof *sp->stat_meta);
        sp->nstat_meta = 1;
        out->line_display_id = xpv_arena_calloc(arena, pl->nlines ? pl->nlines : 1, sizeof(int64_t));
        uint32_t nl = 0;
        for (size_t q = 0; q < nall; q++)
            if (lines[q].n) nl++;
        sp->lines = xpv_arena_calloc(arena, nl, sizeof *sp->lines);
        out->src_line = xpv_arena_calloc(arena, nl, sizeof *out->src_line);
        int64_t pos = 0;
        for (uint32_t k = 0; k < pl->nlines; k++) {
            const xpv_line *src = &pl->lines[sl[k].li];
            out->line_display_id[sl[k].li] = ++pos;
            /* derived lines of this stream in id order: scope, ops, module, hlo */
            for (int q = 0; q < 4; q++) {
                dline *d = &lines[(size_t)k * XPV_DL_PER_STREAM + q];
                ++pos;
                if (!d->n) continue;
                xpv_line *ln = &sp->lines[sp->nlines];
                out->src_line[sp->nlines++] = sl[k].li;
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
                sp->nevents += d->n;
            }
            pos += 1; /* the Source code slot (not derived here) */
        }
    }
    for (size_t q = 0; q < nall; q++) {
        free(lines[q].ev);
        free(lines[q].last);
    }
    free(lines);
    free(sl);
    free(c->tab.m);
    free(c->tab.slot);
    memset(&c->tab, 0, sizeof c->tab);
    return any;
}

xpv_derived_lines *xpv_derived_lines_build(const xpv_profile *p, const struct xpv_groups *groups) {
    (void)groups;
    xpv_derived_lines *d = xpv_xcalloc(1, sizeof *d);
    xpv_arena_init(&d->arena, 1 << 14);
    if (!p) return d;
    ctx c;
    memset(&c, 0, sizeof c);
    /* scope_range_id tree: stat id -> parent id (plane stats). */
    const xpv_plane *tree = xpv_find_plane(p, "/host:__ScopeRangeCallStack__");
    if (tree && tree->nstats) {
        c.edges = xpv_xcalloc(tree->nstats, sizeof *c.edges);
        for (uint32_t i = 0; i < tree->nstats; i++) {
            const xpv_stat *st = &tree->stats[i];
            int64_t v;
            if (st->meta < 0 || (uint32_t)st->meta >= tree->nstat_meta || !xpv_stat_as_int(st, &v))
                continue;
            c.edges[c.nedges++] = (scope_edge){tree->stat_meta[st->meta].id, v};
        }
        if (c.nedges) qsort(c.edges, c.nedges, sizeof *c.edges, cmp_edge);
    }
    for (uint32_t pi = 0; pi < p->nplanes; pi++) {
        const xpv_plane *pl = &p->planes[pi];
        if (!xpv_str_has_prefix(pl->name, "/device:GPU:")) continue;
        xpv_dl_plane tmp;
        if (!derive_plane(&c, &d->arena, pl, &tmp)) continue;
        tmp.plane = pi;
        d->planes = xpv_xrealloc(d->planes, (d->nplanes + 1) * sizeof *d->planes);
        d->planes[d->nplanes++] = tmp;
    }
    free(c.edges);
    free(c.mbuf);
    free(c.sbuf);
    d->bytes = sizeof *d + d->arena.total + d->nplanes * sizeof *d->planes;
    return d;
}

void xpv_derived_lines_free(xpv_derived_lines *d) {
    if (!d) return;
    free(d->planes);
    xpv_arena_free(&d->arena);
    free(d);
}

const xpv_dl_plane *xpv_derived_lines_plane(const xpv_derived_lines *d, uint32_t plane) {
    if (!d) return NULL;
    for (uint32_t i = 0; i < d->nplanes; i++)
        if (d->planes[i].plane == plane) return &d->planes[i];
    return NULL;
}
