/*
 * derived_count.h - an independent count of XProf's derived GPU events
 * (XLA Modules and XLA Ops level 0) straight from the kernels of a
 * profile, for tests: a module event per maximal run of consecutive
 * kernels (file order) with the same `hlo_module(program_id)`, group_id
 * and root of their scope_range_id chain; an XLA Ops level-0 event per maximal run with the same
 * program_id and first `::` part of hlo_op that does not cross a new
 * module event.  Planes holding derived lines count 0.
 */
#ifndef XPV_DERIVED_COUNT_H
#define XPV_DERIVED_COUNT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group_events.h"
#include "model.h"

/* The root of scope range id `id` in the `/host:__ScopeRangeCallStack__`
 * tree (plane stats: stat metadata id -> parent id), by linear scans;
 * `id` itself when it has no parent.  Cycles stop after 64 steps. */
static inline long long dc_scope_root(const xpv_profile *p, long long id) {
    const xpv_plane *t = xpv_find_plane(p, "/host:__ScopeRangeCallStack__");
    if (!t || !t->stat_mids) return id;
    for (int step = 0; step < 64; step++) {
        int found = 0;
        for (uint32_t i = 0; i < t->nstats && !found; i++) {
            int64_t v;
            if (t->stat_mids[i] == id && xpv_stat_as_int(&t->stats[i], &v)) {
                id = v;
                found = 1;
            }
        }
        if (!found) break;
    }
    return id;
}

/* A GPU plane as the capture wrote it: none of its lines is a derived one
 * (ids 0xdeadbeef .. +389), so the counts below are what derivation adds. */
static inline int dc_raw_gpu_plane(const xpv_plane *pl) {
    if (!xpv_str_has_prefix(pl->name, "/device:GPU:")) return 0;
    for (uint32_t l = 0; l < pl->nlines; l++) {
        int32_t id = (int32_t)(uint32_t)pl->lines[l].id;
        if (id >= (int32_t)0xdeadbeefu && id < (int32_t)0xdeadbeefu + 390) return 0;
    }
    return 1;
}

static inline void dc_count(const xpv_profile *p, size_t *modules, size_t *ops0) {
    *modules = *ops0 = 0;
    for (uint32_t i = 0; i < p->nplanes; i++) {
        const xpv_plane *pl = &p->planes[i];
        if (!dc_raw_gpu_plane(pl)) continue;
        int32_t sk = xpv_stat_id(pl, "kernel_details"), sm = xpv_stat_id(pl, "hlo_module"),
                sp = xpv_stat_id(pl, "program_id"), so = xpv_stat_id(pl, "hlo_op"),
                sg = xpv_stat_id(pl, "group_id"), sr = xpv_stat_id(pl, "scope_range_id");
        for (uint32_t l = 0; l < pl->nlines; l++) {
            const xpv_line *ln = &pl->lines[l];
            char pm[512] = "", po[512] = "";
            for (uint32_t k = 0; k < ln->nevents; k++) {
                const xpv_event *e = &ln->events[k];
                xpv_stat st;
                if (sk < 0 || !xpv_event_stat(pl, ln, e, sk, &st)) continue;
                long long pid = -1, g = -1;
                int64_t v;
                if (sp >= 0 && xpv_event_stat(pl, ln, e, sp, &st) && xpv_stat_as_int(&st, &v)) pid = v;
                if (sg >= 0 && xpv_event_stat(pl, ln, e, sg, &st) && xpv_stat_as_int(&st, &v)) g = v;
                /* a module run also ends where the root of the kernel's
                 * scope range chain changes (one root per execution) */
                long long root = -1;
                if (sr >= 0 && xpv_event_stat(pl, ln, e, sr, &st) && xpv_stat_as_int(&st, &v))
                    root = dc_scope_root(p, v);
                char km[512], ko[512];
                int new_module = 0;
                if (sm >= 0 && xpv_event_stat(pl, ln, e, sm, &st) && st.kind == XPV_STAT_STR &&
                    st.v.s.len) {
                    snprintf(km, sizeof km, "%.*s(%lld)|%lld|%lld", (int)st.v.s.len, st.v.s.ptr, pid,
                             g, root);
                    if (strcmp(km, pm)) {
                        (*modules)++;
                        new_module = 1;
                        strcpy(pm, km);
                    }
                }
                if (so >= 0 && xpv_event_stat(pl, ln, e, so, &st) && st.kind == XPV_STAT_STR &&
                    st.v.s.len) {
                    uint32_t n = st.v.s.len;
                    for (uint32_t c = 0; c + 1 < st.v.s.len; c++)
                        if (st.v.s.ptr[c] == ':' && st.v.s.ptr[c + 1] == ':') {
                            n = c;
                            break;
                        }
                    snprintf(ko, sizeof ko, "%lld/%.*s|%lld", pid, (int)n, st.v.s.ptr, g);
                    if (new_module || strcmp(ko, po)) (*ops0)++;
                    strcpy(po, ko);
                }
            }
        }
    }
}

/* The same for XProf's TPU rows (DeriveLinesFromStats), counted another
 * way: on each TensorCore plane ("/device:TPU:<n>") without derived lines,
 * every event with a `tf_op` or `source` stat (its own over its
 * metadata's; `_a` events left out), in (start, longer first, line) order,
 * keyed by the grouping event it starts in (the `XLA Modules` event: each
 * is its own group in files without host steps).  Framework Ops: a new
 * event when tf_op or key changes; Framework Name Scope: per `/` level of
 * a JAX/TF op name, a new event when that level's scope, a shallower one
 * or the key changes; Source code: when source or key changes. */
typedef struct dc_rec {
    int64_t start, dur;
    uint32_t line;
    int64_t key;
    xpv_str op, src;
} dc_rec;

static inline int dc_cmp_rec(const void *a, const void *b) {
    const dc_rec *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->dur != y->dur) return x->dur > y->dur ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

static inline int dc_str_same(xpv_str a, xpv_str b) {
    return a.len == b.len && (!a.len || !memcmp(a.ptr, b.ptr, a.len));
}

/* The name part of a JAX/TF op ("a/b/op:type" -> "a/b/op"), or empty when
 * the op has no name scopes to show. */
static inline xpv_str dc_scope_name(xpv_str op) {
    const char *c = memchr(op.ptr, ':', op.len);
    if (!c) return (xpv_str){NULL, 0};
    return (xpv_str){op.ptr, (uint32_t)(c - op.ptr)};
}

static inline void dc_count_tpu(const xpv_profile *p, size_t *ops, size_t *scopes, size_t *srcs) {
    *ops = *scopes = *srcs = 0;
    for (uint32_t i = 0; i < p->nplanes; i++) {
        const xpv_plane *pl = &p->planes[i];
        xpv_str n = pl->name;
        if (!xpv_str_has_prefix(n, "/device:TPU:") || n.len == 12) continue;
        int core = 1;
        for (uint32_t c = 12; c < n.len; c++)
            if (n.ptr[c] < '0' || n.ptr[c] > '9') core = 0;
        if (!core) continue;
        int32_t so = xpv_stat_id(pl, "tf_op"), ss = xpv_stat_id(pl, "source"),
                sa = xpv_stat_id(pl, "_a");
        const xpv_line *gl = NULL;
        for (uint32_t l = 0; l < pl->nlines; l++)
            if (xpv_str_eq(pl->lines[l].name, "XLA Modules")) gl = &pl->lines[l];
        size_t nr = 0, cap = 0;
        dc_rec *r = NULL;
        for (uint32_t l = 0; l < pl->nlines; l++) {
            const xpv_line *ln = &pl->lines[l];
            for (uint32_t k = 0; k < ln->nevents; k++) {
                const xpv_event *e = &ln->events[k];
                xpv_stat st;
                int64_t v;
                if (sa >= 0 && xpv_event_or_meta_stat(pl, ln, e, sa, &st) && xpv_stat_as_int(&st, &v) && v)
                    continue;
                dc_rec rec = {e->start_ps, e->dur_ps, l, -1, {NULL, 0}, {NULL, 0}};
                if (so >= 0 && xpv_event_or_meta_stat(pl, ln, e, so, &st) && st.kind == XPV_STAT_STR)
                    rec.op = st.v.s;
                if (ss >= 0 && xpv_event_or_meta_stat(pl, ln, e, ss, &st) && st.kind == XPV_STAT_STR)
                    rec.src = st.v.s;
                if (!rec.op.len && !rec.src.len) continue;
                for (uint32_t g = 0; gl && g < gl->nevents; g++)
                    if (gl->events[g].start_ps <= e->start_ps &&
                        e->start_ps < gl->events[g].start_ps + gl->events[g].dur_ps)
                        rec.key = g;
                if (nr == cap) {
                    cap = cap ? 2 * cap : 64;
                    r = realloc(r, cap * sizeof *r);
                }
                r[nr++] = rec;
            }
        }
        if (nr) qsort(r, nr, sizeof *r, dc_cmp_rec);
        const dc_rec *po = NULL, *ps = NULL;
        for (size_t k = 0; k < nr; k++) {
            const dc_rec *x = &r[k];
            if (x->op.len) {
                xpv_str a = dc_scope_name(x->op);
                xpv_str b = po ? dc_scope_name(po->op) : (xpv_str){NULL, 0};
                int same = po && po->key == x->key; /* all shallower levels equal so far */
                uint32_t ia = 0, ib = 0;
                for (;;) {
                    const char *ea = memchr(a.ptr + ia, '/', a.len - ia);
                    if (!a.len || !ea) break; /* the last part is the op, not a scope */
                    uint32_t la = (uint32_t)(ea - (a.ptr + ia));
                    const char *eb = b.len && ib < b.len ? memchr(b.ptr + ib, '/', b.len - ib) : NULL;
                    uint32_t lb = eb ? (uint32_t)(eb - (b.ptr + ib)) : 0;
                    if (!(same && eb && la == lb && !memcmp(a.ptr + ia, b.ptr + ib, la))) {
                        same = 0;
                        (*scopes)++;
                    }
                    ia += la + 1;
                    ib += lb + 1;
                }
                if (!(po && po->key == x->key && dc_str_same(po->op, x->op) && same)) (*ops)++;
                po = x;
            }
            if (x->src.len) {
                if (!(ps && ps->key == x->key && dc_str_same(ps->src, x->src))) (*srcs)++;
                ps = x;
            }
        }
        free(r);
    }
}

/* XProf's Launch Stats rows (DeriveEventsFromHostTrace), counted from the
 * host plane: every event of `/host:CPU` whose name does not start with
 * "cu" and that has `device_id` (below the number of GPU planes) and
 * `correlation_id` stats and a group in `g` (the profile's grouping) is a
 * launch; *events gets the number of distinct (device_id, group) pairs,
 * *launches the number of launches. */
static inline void dc_launch_count(const xpv_profile *p, const xpv_groups *g, size_t *events,
                                   size_t *launches) {
    *events = *launches = 0;
    int64_t ndev = 0;
    for (uint32_t i = 0; i < p->nplanes; i++)
        if (xpv_str_has_prefix(p->planes[i].name, "/device:GPU:")) ndev++;
    long long (*seen)[2] = NULL;
    size_t nseen = 0;
    for (uint32_t i = 0; i < p->nplanes; i++) {
        const xpv_plane *pl = &p->planes[i];
        if (!xpv_str_eq(pl->name, "/host:CPU")) continue;
        int32_t sd = xpv_stat_id(pl, "device_id"), sc = xpv_stat_id(pl, "correlation_id");
        for (uint32_t l = 0; l < pl->nlines; l++)
            for (uint32_t k = 0; k < pl->lines[l].nevents; k++) {
                const xpv_line *ln = &pl->lines[l];
                const xpv_event *e = &ln->events[k];
                xpv_str nm = pl->event_meta[e->meta].name;
                if (nm.len >= 2 && nm.ptr[0] == 'c' && nm.ptr[1] == 'u') continue;
                xpv_stat st;
                int64_t dev;
                if (sd < 0 || !xpv_event_stat(pl, ln, e, sd, &st) || !xpv_stat_as_int(&st, &dev) ||
                    dev < 0 || dev >= ndev)
                    continue;
                if (sc < 0 || !xpv_event_stat(pl, ln, e, sc, &st)) continue;
                int32_t gid = xpv_group_of(g, i, l, k);
                if (gid < 0) continue;
                (*launches)++;
                size_t q = 0;
                while (q < nseen && !(seen[q][0] == dev && seen[q][1] == gid)) q++;
                if (q == nseen) {
                    seen = realloc(seen, (nseen + 1) * sizeof *seen);
                    seen[nseen][0] = dev;
                    seen[nseen][1] = gid;
                    nseen++;
                }
            }
    }
    *events = nseen;
    free(seen);
}

/* Host offload events of the TensorCore planes (XProf's
 * HostOffloadEventProcessor), counted as pairs: events whose HLO text
 * (metadata name) holds S(5) and whose shown name has copy- /
 * dynamic-slice- / dynamic-update-slice- -start or -done, no `_a`, in time
 * order; per instruction (the shown name without -start / -done) a done
 * pairs with a waiting start.  Does not place them on rows. */
typedef struct dc_off {
    int64_t start, dur;
    int done;
    char key[96];
} dc_off;

static inline int dc_off_cmp(const void *a, const void *b) {
    const dc_off *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->dur > y->dur ? -1 : x->dur < y->dur;
}

static inline size_t dc_count_tpu_offload(const xpv_profile *p) {
    static const char *const ops[] = {"copy", "dynamic-slice", "dynamic-update-slice"};
    size_t pairs = 0;
    for (uint32_t i = 0; i < p->nplanes; i++) {
        const xpv_plane *pl = &p->planes[i];
        if (!xpv_str_has_prefix(pl->name, "/device:TPU:") || pl->name.len == 12) continue;
        int32_t sa = xpv_stat_id(pl, "_a");
        size_t n = 0, cap = 0;
        dc_off *v = NULL;
        for (uint32_t l = 0; l < pl->nlines; l++) {
            const xpv_line *ln = &pl->lines[l];
            for (uint32_t k = 0; k < ln->nevents; k++) {
                const xpv_event *e = &ln->events[k];
                const xpv_event_meta *m = &pl->event_meta[e->meta];
                char name[96], text[4096];
                xpv_str d = m->display_name.len ? m->display_name : m->name;
                if (d.len >= sizeof name || m->name.len >= sizeof text) continue;
                memcpy(name, d.ptr, d.len);
                name[d.len] = 0;
                memcpy(text, m->name.ptr, m->name.len);
                text[m->name.len] = 0;
                if (!strstr(text, "S(5)")) continue;
                dc_off o = {e->start_ps, e->dur_ps, 0, ""};
                int hit = 0;
                for (int q = 0; q < 3 && !hit; q++) {
                    char st[40], dn[40];
                    snprintf(st, sizeof st, "%s-start", ops[q]);
                    snprintf(dn, sizeof dn, "%s-done", ops[q]);
                    const char *at = strstr(name, st);
                    const char *ad = strstr(name, dn);
                    if (!at && !ad) continue;
                    hit = 1;
                    o.done = !at;
                    const char *cut = at ? at : ad;
                    size_t skip = strlen(at ? st : dn);
                    snprintf(o.key, sizeof o.key, "%.*s%s%s", (int)(cut - name), name, ops[q],
                             cut + skip);
                }
                xpv_stat st;
                int64_t a;
                if (!hit || (sa >= 0 && xpv_event_or_meta_stat(pl, ln, e, sa, &st) &&
                             xpv_stat_as_int(&st, &a) && a))
                    continue;
                if (n == cap) {
                    cap = cap ? 2 * cap : 64;
                    v = realloc(v, cap * sizeof *v);
                }
                v[n++] = o;
            }
        }
        if (n) qsort(v, n, sizeof *v, dc_off_cmp);
        for (size_t a = 0; a < n; a++) {
            if (!v[a].done) continue;
            for (size_t b = 0; b < a; b++) /* the oldest waiting start */
                if (!v[b].done && v[b].key[0] && !strcmp(v[b].key, v[a].key)) {
                    v[b].key[0] = 0;
                    pairs++;
                    break;
                }
        }
        free(v);
    }
    return pairs;
}

#endif
