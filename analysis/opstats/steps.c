/*
 * steps.c - step grouping, step events and the step-time breakdown
 * (xprof-reference.md §2.2-2.3).  See steps.h for the contract.
 *
 * Speed: a 1 GB profile holds ~15M events, most of them on one host
 * thread, so every per-event step is a few array accesses:
 *   grouping   13 bytes per host event (group, flags, nesting parent and
 *              subtree end); the nesting tree is implicit, a subtree being
 *              a range of the line's events in visit order, so groups
 *              spread by range scans.  Stats are read in one pass per
 *              event (xpv_event_stats_in), allocator events not at all.
 *   events     correlation id -> group through a dense array when ids are
 *              dense; group id -> dense index through an array (computed
 *              groups) or a one-entry cache (file groups).  On GPU
 *              profiles overlapping events of one type, group and line are
 *              merged and zero-length ones dropped: the breakdown only
 *              depends on which types cover each instant (see add_event).
 *   sweep      a group's event keys are a few sorted runs: merged, not
 *              radix-sorted, unless there are many.
 * Memory: the grouping arrays and the step events are temporary; only the
 * steps survive, in the caller's arena.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collections.h"
#include "group_events.h"
#include "op_metrics.h"
#include "steps.h"
#include "enrich.h"

#define DERIVED_STEPS_LINE ((int32_t)0xdeadbeef)

/* ==== Small helpers ====================================================== */

static int str_has_char(xpv_str s, char c) {
    return s.len && memchr(s.ptr, c, s.len) != NULL;
}

/* ==== Classification (§2.3) ============================================== */

int xpv_steps_classify_gpu(xpv_str name, xpv_str shapes) {
    if (xpv_str_has_prefix_nocase(name, "MEMCPYHToD") || xpv_str_has_prefix_nocase(name, "MemcpyH2D"))
        return XPV_EV_HOST_TO_DEVICE;
    if (xpv_str_has_prefix_nocase(name, "MEMCPYDToH") || xpv_str_has_prefix_nocase(name, "MemcpyD2H"))
        return XPV_EV_DEVICE_TO_HOST;
    if (xpv_str_has_prefix_nocase(name, "MEMCPYDToD") || xpv_str_has_prefix_nocase(name, "MemcpyD2D") ||
        xpv_str_has_prefix_nocase(name, "MemcpyP2P"))
        return XPV_EV_DEVICE_TO_DEVICE;
    if (xpv_str_has_prefix_nocase(name, "nccl")) return XPV_EV_DEVICE_COLLECTIVES;
    if (shapes.len == 0)
        return (xpv_str_contains(name, "half") || xpv_str_contains(name, "fp16"))
                   ? XPV_EV_DEVICE_COMPUTE_16
                   : XPV_EV_DEVICE_COMPUTE_32;
    return xpv_str_contains(shapes, "half") ? XPV_EV_DEVICE_COMPUTE_16 : XPV_EV_DEVICE_COMPUTE_32;
}

int xpv_steps_classify_memcpy(xpv_str details) {
    xpv_memcpy_info mi;
    xpv_parse_memcpy_details(details, &mi);
    switch (mi.kind) {
    case XPV_MEMCPY_H2D: return XPV_EV_HOST_TO_DEVICE;
    case XPV_MEMCPY_D2H: return XPV_EV_DEVICE_TO_HOST;
    case XPV_MEMCPY_D2D:
    case XPV_MEMCPY_P2P: return XPV_EV_DEVICE_TO_DEVICE;
    case XPV_MEMCPY_H2H: return XPV_EV_HOST_TO_HOST;
    default: return XPV_EV_UNKNOWN;
    }
}

int xpv_steps_classify_cpu(xpv_str name, int has_device, int has_correlation) {
    xpv_tf_op op = xpv_parse_tf_op(name);
    if (xpv_str_eq(op.type, "InfeedEnqueue") || xpv_str_eq(op.type, "InfeedEnqueueTuple") ||
        xpv_str_eq(op.type, "MemcpyHToD") || xpv_str_has_prefix_nocase(name, "MemcpyH2D"))
        return XPV_EV_HOST_TO_DEVICE;
    if (xpv_str_eq(op.type, "MemcpyHToH")) return XPV_EV_HOST_TO_HOST;
    if (has_device && (has_correlation || xpv_str_has_prefix_nocase(name, "ExecutorState::Process")))
        return XPV_EV_HOST_PREPARE;
    if (xpv_str_has_prefix_nocase(name, "IteratorGetNext")) return XPV_EV_HOST_WAIT_INPUT;
    return XPV_EV_HOST_COMPUTE;
}

static int is_explicit_host_marker(xpv_str name) {
    return (xpv_str_has_prefix(name, "train") || xpv_str_has_prefix(name, "test") ||
            xpv_str_has_prefix(name, "TraceContext")) &&
           !str_has_char(name, '/');
}

static int is_real_cpu_compute(xpv_str name) {
    return !(xpv_str_has_prefix(name, "EagerExecute") ||
             xpv_str_has_prefix(name, "EagerLocalExecute") ||
             xpv_str_has_prefix(name, "EagerKernelExecute") ||
             xpv_str_has_prefix(name, "FunctionRun") || is_explicit_host_marker(name));
}

static int is_gpu_plane(const xpv_plane *pl) {
    return xpv_str_has_prefix(pl->name, "/device:GPU:");
}

/* ==== Grouping (§2.2): group_events.c ================================== */

typedef struct grouping {
    int file_grouped;          /* group ids come from `group_id` stats */
    int loops;
    const xpv_groups *gr;      /* computed grouping */
    uint32_t ngroups;
} grouping;

/* ==== Step events ======================================================== */

/* A step event, or on GPU profiles the union of overlapping step events
 * of one type, group and line (see collect_events). */
typedef struct step_ev {
    int64_t b, e;
    uint32_t gi;               /* dense group index */
    uint8_t type;
} step_ev;

enum { MARK_HOST = 0, MARK_DEVICE = 1 };

typedef struct group_acc {
    int64_t group_id;
    int64_t host_b, host_e;    /* longest host marker (e < b: none) */
    int64_t dev_b, dev_e;      /* longest device marker */
    const char *name;
    uint8_t on_device;         /* has device step events */
    uint32_t span_stamp;       /* plane whose events span_b/e cover */
    uint32_t mark_stamp;       /* plane on which the group has a marker */
    int64_t span_b, span_e;
} group_acc;

typedef struct open_run {
    int64_t b, e;
    uint32_t gi;
    uint8_t used;
} open_run;

typedef struct sctx {
    xpv_arena *a;
    i64map gmap;               /* group id -> dense index (file grouping) */
    int32_t *gdense;           /* group id -> dense index (computed), -1 */
    uint32_t ndense;
    int64_t last_grp;          /* one-entry cache of gmap */
    uint32_t last_gi;
    int have_last;
    vec groups;                /* group_acc */
    vec evs;                   /* step_ev */
    int coalesce;              /* merge overlapping events of a type */
    open_run open[XPV_EV_NTYPES];
    int64_t tmin, tmax;        /* over every event offered */
    uint32_t stamp;            /* current GPU plane */
} sctx;

static int gfind(sctx *c, int64_t group, uint32_t *gi) {
    if (c->gdense) {
        if (group < 0 || group >= (int64_t)c->ndense || c->gdense[group] < 0) return 0;
        *gi = (uint32_t)c->gdense[group];
        return 1;
    }
    if (c->have_last && c->last_grp == group) {
        *gi = c->last_gi;
        return 1;
    }
    if (!i64map_get(&c->gmap, group, gi)) return 0;
    c->have_last = 1;
    c->last_grp = group;
    c->last_gi = *gi;
    return 1;
}

static uint32_t gidx(sctx *c, int64_t group) {
    uint32_t v;
    if (gfind(c, group, &v)) return v;
    v = (uint32_t)c->groups.n;
    group_acc *g = vec_push(&c->groups);
    memset(g, 0, sizeof *g);
    g->group_id = group;
    g->host_b = g->dev_b = 0;
    g->host_e = g->dev_e = -1;
    g->name = NULL;
    if (c->gdense) {
        c->gdense[group] = (int32_t)v; /* computed ids are < ndense */
    } else {
        i64map_put(&c->gmap, group, v);
        c->have_last = 1;
        c->last_grp = group;
        c->last_gi = v;
    }
    return v;
}

static inline group_acc *gacc(sctx *c, uint32_t gi) { return &((group_acc *)c->groups.p)[gi]; }

static void add_marker(sctx *c, uint32_t gi, int kind, int64_t b, int64_t e) {
    group_acc *g = gacc(c, gi);
    int64_t *pb = kind == MARK_DEVICE ? &g->dev_b : &g->host_b;
    int64_t *pe = kind == MARK_DEVICE ? &g->dev_e : &g->host_e;
    if (*pe < *pb || e - b > *pe - *pb) {
        *pb = b;
        *pe = e;
    }
}

static void emit_ev(sctx *c, uint32_t gi, int type, int64_t b, int64_t e) {
    step_ev *s = vec_push(&c->evs);
    s->b = b;
    s->e = e;
    s->gi = gi;
    s->type = (uint8_t)type;
}

/* Offer one step event.  When coalescing (GPU profiles: see
 * xpv_steps_build), an event overlapping the open one of its type and
 * group on this line (by more than a point) is merged into it and
 * zero-length events are dropped: the sweep's per-type times and its
 * device-compute test only depend on which types cover each instant. */
static void add_event(sctx *c, uint32_t gi, int type, int64_t b, int64_t e) {
    if (b < c->tmin) c->tmin = b;
    if (e > c->tmax) c->tmax = e;
    if (b > c->tmax) c->tmax = b;
    if (!c->coalesce) {
        emit_ev(c, gi, type, b, e);
        return;
    }
    if (e <= b) return;
    open_run *o = &c->open[type];
    if (o->used && o->gi == gi && b < o->e && e > o->b) {
        if (b < o->b) o->b = b;
        if (e > o->e) o->e = e;
        return;
    }
    if (o->used) emit_ev(c, o->gi, type, o->b, o->e);
    o->b = b;
    o->e = e;
    o->gi = gi;
    o->used = 1;
}

/* End of a line: emit the open unions. */
static void flush_events(sctx *c) {
    for (int t = 0; t < XPV_EV_NTYPES; t++)
        if (c->open[t].used) {
            emit_ev(c, c->open[t].gi, t, c->open[t].b, c->open[t].e);
            c->open[t].used = 0;
        }
}

/* Last string value of stat `sid` (non-string occurrences ignored), as an
 * iteration over all the event's stats would find it. */
static xpv_str last_str_stat(const xpv_plane *pl, const xpv_line *ln, const xpv_event *ev,
                             int32_t sid) {
    xpv_str r = {"", 0};
    xpv_stat st;
    if (sid < 0 || !xpv_event_stat(pl, ln, ev, sid, &st)) return r;
    if (st.kind == XPV_STAT_STR) return st.v.s;
    xpv_stat_iter it;
    xpv_stat_iter_init(&it, pl, ln, ev);
    while (xpv_stat_next(&it, &st))
        if (st.meta == sid && st.kind == XPV_STAT_STR) r = st.v.s;
    return r;
}

/* Integer value of the last occurrence of stat `sid`; 0 when absent or
 * not a number. */
static int int_stat(const xpv_plane *pl, const xpv_line *ln, const xpv_event *ev, int32_t sid,
                    int64_t *out) {
    xpv_stat st;
    return sid >= 0 && xpv_event_stat(pl, ln, ev, sid, &st) && xpv_stat_as_int(&st, out);
}

/* `shape` strings are mostly refs (one pointer per distinct shape): their
 * "half" test is remembered by pointer. */
#define SHAPE_MEMO 256
typedef struct shape_memo {
    xpv_str s;
    int half;
} shape_memo;

/* One GPU plane: events with a correlation id and a group, and markers
 * (the file's derived Steps line, else the span of each group's events);
 * only groups with both are kept (XProf intersects per plane). */
static void gpu_plane_events(sctx *c, const xpv_profile *p, uint32_t pk, const grouping *g) {
    const xpv_plane *pl = &p->planes[pk];
    int32_t sid_corr = xpv_stat_id(pl, "correlation_id");
    int32_t sid_group = xpv_stat_id(pl, "group_id");
    int32_t sid_shape = xpv_stat_id(pl, "shape");
    int32_t sid_memcpy = xpv_stat_id(pl, "memcpy_details");
    const int32_t gsids[4] = {sid_corr, g->file_grouped ? sid_group : -1, sid_shape, sid_memcpy};
    xpv_stat_set gset;
    xpv_stat_set_init(&gset, pl, gsids, 4);
    xpv_stat gsv[4];
    size_t ev0 = c->evs.n;
    uint32_t stamp = ++c->stamp;
    vec touched = {0, 0, 0, sizeof(uint32_t)}; /* groups with events, first seen first */
    vec file_marks = {0, 0, 0, sizeof(int64_t) * 3};
    int has_steps_line = 0;
    /* Name-only classification per metadata. */
    uint8_t *mcls = xpv_xmalloc(pl->nevent_meta ? pl->nevent_meta : 1);
    shape_memo memo[SHAPE_MEMO];
    memset(memo, 0, sizeof memo);
    shape_memo cmemo[SHAPE_MEMO]; /* memcpy_details -> event type (in .half) */
    memset(cmemo, 0, sizeof cmemo);
    for (uint32_t i = 0; i < pl->nevent_meta; i++)
        mcls[i] = (uint8_t)xpv_steps_classify_gpu(pl->event_meta[i].name, (xpv_str){"", 0});

    for (uint32_t l = 0; l < pl->nlines; l++) {
        const xpv_line *ln = &pl->lines[l];
        if ((int32_t)ln->id == DERIVED_STEPS_LINE) {
            if (!g->file_grouped || sid_group < 0) continue;
            has_steps_line = 1;
            for (uint32_t k = 0; k < ln->nevents; k++) {
                const xpv_event *ev = &ln->events[k];
                int64_t grp;
                if (int_stat(pl, ln, ev, sid_group, &grp)) {
                    int64_t *m = vec_push(&file_marks);
                    m[0] = gidx(c, grp);
                    m[1] = ev->start_ps;
                    m[2] = ev->start_ps + ev->dur_ps;
                }
            }
            continue;
        }
        if (xpv_line_is_derived(ln)) continue;
        if (sid_corr < 0) continue;
        for (uint32_t k = 0; k < ln->nevents; k++) {
            const xpv_event *ev = &ln->events[k];
            if (ev->wire == XPV_NO_STATS) continue;
            int64_t corr = 0, grp = -1;
            uint32_t multi;
            uint32_t got = xpv_event_stats_in(pl, ln, ev, &gset, gsv, &multi);
            if (!(got & 1) || !xpv_stat_as_int(&gsv[0], &corr)) continue;
            if (g->file_grouped) {
                if (!(got & 2) || !xpv_stat_as_int(&gsv[1], &grp)) continue;
            } else {
                grp = xpv_group_of(g->gr, pk, l, k);
            }
            if (grp < 0) continue;
            int type = mcls[ev->meta];
            if ((type == XPV_EV_DEVICE_COMPUTE_16 || type == XPV_EV_DEVICE_COMPUTE_32) &&
                (got & 8) && gsv[3].kind == XPV_STAT_STR) {
                /* A copy whose name does not say its direction ("Memcpy",
                 * "MemcpyOther"): its memcpy_details may (refs repeat). */
                xpv_str det = gsv[3].v.s;
                shape_memo *cm = &cmemo[((uintptr_t)det.ptr >> 3) & (SHAPE_MEMO - 1)];
                if (det.ptr != cm->s.ptr || det.len != cm->s.len) {
                    cm->s = det;
                    cm->half = xpv_steps_classify_memcpy(det);
                }
                if (cm->half != XPV_EV_UNKNOWN) type = cm->half;
            }
            if ((type == XPV_EV_DEVICE_COMPUTE_16 || type == XPV_EV_DEVICE_COMPUTE_32) &&
                sid_shape >= 0) {
                /* compute precision by the tensor shapes (refs repeat) */
                xpv_str shape = {"", 0};
                if (got & 4) {
                    if (gsv[2].kind == XPV_STAT_STR) shape = gsv[2].v.s;
                    else if (multi & 4) shape = last_str_stat(pl, ln, ev, sid_shape);
                }
                if (shape.len) {
                    shape_memo *sm = &memo[((uintptr_t)shape.ptr >> 3) & (SHAPE_MEMO - 1)];
                    if (shape.ptr != sm->s.ptr || shape.len != sm->s.len) {
                        sm->s = shape;
                        sm->half = memmem(shape.ptr, shape.len, "half", 4) != NULL;
                    }
                    type = sm->half ? XPV_EV_DEVICE_COMPUTE_16 : XPV_EV_DEVICE_COMPUTE_32;
                }
            }
            uint32_t gi = gidx(c, grp);
            int64_t b = ev->start_ps, e = ev->start_ps + ev->dur_ps;
            add_event(c, gi, type, b, e);
            group_acc *ga = gacc(c, gi);
            if (ga->span_stamp == stamp) {
                if (b < ga->span_b) ga->span_b = b;
                if (e > ga->span_e) ga->span_e = e;
            } else {
                ga->span_stamp = stamp;
                ga->span_b = b;
                ga->span_e = e;
                *(uint32_t *)vec_push(&touched) = gi;
            }
        }
        flush_events(c);
    }
    free(mcls);

    /* Markers of this plane. */
    if (has_steps_line) {
        for (size_t i = 0; i < file_marks.n; i++) {
            int64_t *m = (int64_t *)file_marks.p + 3 * i;
            group_acc *ga = gacc(c, (uint32_t)m[0]);
            if (ga->span_stamp != stamp) continue; /* marker without events */
            add_marker(c, (uint32_t)m[0], MARK_DEVICE, m[1], m[2]);
            ga->mark_stamp = stamp;
        }
    } else {
        for (size_t i = 0; i < touched.n; i++) {
            uint32_t gi = ((uint32_t *)touched.p)[i];
            group_acc *ga = gacc(c, gi);
            add_marker(c, gi, MARK_DEVICE, ga->span_b, ga->span_e);
            ga->mark_stamp = stamp;
        }
    }
    /* Groups with events and a marker here have device step events. */
    for (size_t i = 0; i < touched.n; i++) {
        group_acc *ga = gacc(c, ((uint32_t *)touched.p)[i]);
        if (ga->mark_stamp == stamp) ga->on_device = 1;
    }
    /* Drop this plane's events whose group has no marker here. */
    step_ev *E = c->evs.p;
    size_t w = ev0;
    for (size_t i = ev0; i < c->evs.n; i++) {
        if (gacc(c, E[i].gi)->mark_stamp != stamp) continue;
        E[w++] = E[i];
    }
    c->evs.n = w;
    free(touched.p);
    free(file_marks.p);
}

/* `/host:CPU`: markers and classified CPU work of grouped events. */
static void host_plane_events(sctx *c, const xpv_profile *p, uint32_t k, const grouping *g,
                              int has_device) {
    const xpv_plane *pl = &p->planes[k];
    int32_t sid_corr = xpv_stat_id(pl, "correlation_id");
    int32_t sid_group = xpv_stat_id(pl, "group_id");
    int32_t sid_step_name = xpv_stat_id(pl, "step_name");
    /* Input-pipeline stages (`_ipl_stage_name`) are input time.  XProf
     * counts the root stage of a nest; nested stages lie inside it, so
     * counting every stage covers the same instants. */
    int32_t sid_stage = xpv_stat_id(pl, "_ipl_stage_name");
    const int32_t hsids[4] = {sid_group, sid_corr, sid_step_name, sid_stage};
    xpv_stat_set hset;
    xpv_stat_set_init(&hset, pl, hsids, 4);
    xpv_stat hsv[4];
    /* Per metadata: 1 explicit marker, 2 real CPU compute, 0 neither. */
    uint8_t *mk = xpv_xmalloc(pl->nevent_meta ? pl->nevent_meta : 1);
    uint8_t *cls[2];
    cls[0] = xpv_xmalloc(pl->nevent_meta ? pl->nevent_meta : 1);
    cls[1] = xpv_xmalloc(pl->nevent_meta ? pl->nevent_meta : 1);
    for (uint32_t i = 0; i < pl->nevent_meta; i++) {
        xpv_str nm = pl->event_meta[i].name;
        mk[i] = is_explicit_host_marker(nm) ? 1 : is_real_cpu_compute(nm) ? 2 : 0;
        cls[0][i] = (uint8_t)xpv_steps_classify_cpu(nm, has_device, 0);
        cls[1][i] = (uint8_t)xpv_steps_classify_cpu(nm, has_device, 1);
    }
    for (uint32_t l = 0; l < pl->nlines; l++) {
        const xpv_line *ln = &pl->lines[l];
        if (xpv_line_is_derived(ln)) continue;
        const int32_t *lgid = g->file_grouped ? NULL : xpv_groups_line(g->gr, k, l);
        if (!g->file_grouped && !lgid) continue;
        for (uint32_t i = 0; i < ln->nevents; i++) {
            const xpv_event *ev = &ln->events[i];
            int64_t grp = -1, corr = 0;
            int has_corr = 0;
            xpv_str step_name = {"", 0};
            int named = 0, stage = -1; /* -1: not read yet */
            if (g->file_grouped) {
                if (ev->wire == XPV_NO_STATS || sid_group < 0) continue;
                uint32_t multi;
                uint32_t got = xpv_event_stats_in(pl, ln, ev, &hset, hsv, &multi);
                if (!(got & 1) || !xpv_stat_as_int(&hsv[0], &grp)) continue;
                has_corr = (got & 2) && xpv_stat_as_int(&hsv[1], &corr);
                if (got & 4) {
                    if (hsv[2].kind == XPV_STAT_STR) step_name = hsv[2].v.s;
                    else if (multi & 4) step_name = last_str_stat(pl, ln, ev, sid_step_name);
                    named = step_name.len > 0;
                }
                stage = (got & 8) != 0;
            } else {
                if (lgid[i] < 0) continue;
                grp = lgid[i];
                named = xpv_groups_step_name(g->gr, k, l, i) != NULL;
                uint8_t m = ev->meta < pl->nevent_meta ? ev->meta : 0;
                if (cls[0][m] != cls[1][m] && ev->wire != XPV_NO_STATS && sid_corr >= 0) {
                    xpv_stat st;
                    has_corr = xpv_event_stat(pl, ln, ev, sid_corr, &st) != 0;
                }
            }
            if (grp < 0) continue;
            uint32_t gi;
            if (has_device) {
                if (!gfind(c, grp, &gi)) continue;
                if (!gacc(c, gi)->on_device) continue;
            } else {
                gi = gidx(c, grp);
            }
            int64_t b = ev->start_ps, e = ev->start_ps + ev->dur_ps;
            uint8_t kind = ev->meta < pl->nevent_meta ? mk[ev->meta] : 2;
            if (kind == 1) {
                add_marker(c, gi, MARK_HOST, b, e);
            } else if (named) {
                add_marker(c, gi, MARK_HOST, b, e);
            } else if (kind == 2) {
                int type = cls[has_corr ? 1 : 0][ev->meta];
                if (type == XPV_EV_HOST_COMPUTE && sid_stage >= 0) {
                    xpv_stat st;
                    if (stage < 0)
                        stage = ev->wire != XPV_NO_STATS &&
                                xpv_event_stat(pl, ln, ev, sid_stage, &st);
                    if (stage) type = XPV_EV_HOST_WAIT_INPUT;
                }
                add_event(c, gi, type, b, e);
            }
            if (named) {
                group_acc *ga = gacc(c, gi);
                if (g->file_grouped)
                    ga->name = xpv_arena_strndup(c->a, step_name.ptr, step_name.len);
                else if ((uint64_t)grp < g->ngroups)
                    ga->name = xpv_arena_strndup(c->a, g->gr->groups[grp].name,
                                                 strlen(g->gr->groups[grp].name));
            }
        }
        flush_events(c);
    }
    free(mk);
    free(cls[0]);
    free(cls[1]);
}

static void sctx_init(sctx *c, xpv_arena *a, const grouping *g, int coalesce) {
    memset(c, 0, sizeof *c);
    c->a = a;
    c->groups.sz = sizeof(group_acc);
    c->evs.sz = sizeof(step_ev);
    c->coalesce = coalesce;
    c->tmin = INT64_MAX;
    c->tmax = INT64_MIN;
    if (!g->file_grouped) {
        c->ndense = g->ngroups;
        c->gdense = xpv_xmalloc((c->ndense ? c->ndense : 1) * sizeof *c->gdense);
        memset(c->gdense, 0xff, (c->ndense ? c->ndense : 1) * sizeof *c->gdense);
    }
}

static void sctx_free(sctx *c) {
    free(c->evs.p);
    free(c->groups.p);
    free(c->gdense);
    i64map_free(&c->gmap);
}

static void collect_events(sctx *c, const xpv_profile *p, const grouping *g, int has_gpu) {
    for (uint32_t k = 0; k < p->nplanes; k++)
        if (is_gpu_plane(&p->planes[k])) gpu_plane_events(c, p, k, g);
    for (uint32_t k = 0; k < p->nplanes; k++)
        if (xpv_str_eq(p->planes[k].name, "/host:CPU")) host_plane_events(c, p, k, g, has_gpu);
}

/* ==== Step database ====================================================== */

static int cmp_step_num(const void *a, const void *b) {
    const xpv_step *x = a, *y = b;
    return (x->step_num > y->step_num) - (x->step_num < y->step_num);
}

static int64_t overlap(int64_t b1, int64_t e1, int64_t b2, int64_t e2) {
    int64_t b = b1 > b2 ? b1 : b2, e = e1 < e2 ? e1 : e2;
    return e > b ? e - b : 0;
}

/* Sort keys ascending.  A group's keys are a few ascending runs (lines are
 * in start order, GPU streams do not overlap), so merging the natural runs
 * is cheaper than radix unless there are many. */
static void sort_keys(uint64_t *a, uint64_t *tmp, size_t n, size_t **bounds, size_t *bcap) {
    if (n < 64) {
        radix_sort_u64(a, tmp, n);
        return;
    }
    size_t nruns = 1;
    for (size_t i = 1; i < n; i++)
        if (a[i] < a[i - 1]) nruns++;
    if (nruns == 1) return;
    if (nruns > n / 16) {
        radix_sort_u64(a, tmp, n);
        return;
    }
    if (*bcap < nruns + 1) {
        *bcap = nruns + 1;
        *bounds = xpv_xrealloc(*bounds, *bcap * sizeof **bounds);
    }
    size_t *bd = *bounds, r = 0;
    bd[r++] = 0;
    for (size_t i = 1; i < n; i++)
        if (a[i] < a[i - 1]) bd[r++] = i;
    bd[nruns] = n;
    uint64_t *src = a, *dst = tmp;
    while (nruns > 1) {
        size_t w = 0;
        for (r = 0; r < nruns; r += 2) {
            size_t lo = bd[r], mid = bd[r + 1];
            if (r + 1 < nruns) {
                size_t hi = bd[r + 2], i = lo, j = mid, o = lo;
                while (i < mid && j < hi) dst[o++] = src[j] < src[i] ? src[j++] : src[i++];
                while (i < mid) dst[o++] = src[i++];
                while (j < hi) dst[o++] = src[j++];
            } else {
                memcpy(dst + lo, src + lo, (mid - lo) * sizeof *src);
            }
            bd[w++] = lo;
        }
        bd[w] = n;
        nruns = w;
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a) memcpy(a, src, n * sizeof *a);
}

/* Keys are (time - tmin) << 6 | code, times clamped to 2^57 ps. */
#define TMAX_REL (UINT64_C(1) << 57)

void xpv_steps_build(const xpv_profile *p, xpv_arena *a, xpv_step_db *out) {
    /* The profile's grouping, made once and kept with it (enrich.h). */
    xpv_steps_build_grouped(p, xpv_profile_groups(p), a, out);
}

void xpv_steps_build_grouped(const xpv_profile *p, const xpv_groups *gr, xpv_arena *a,
                             xpv_step_db *out) {
    memset(out, 0, sizeof *out);
    grouping g;
    memset(&g, 0, sizeof g);
    int has_gpu = 0;
    for (uint32_t k = 0; k < p->nplanes; k++)
        if (is_gpu_plane(&p->planes[k])) has_gpu = 1;
    out->has_device = has_gpu;
    g.gr = gr;
    g.file_grouped = gr->source == XPV_GROUPS_FILE;
    g.loops = gr->source == XPV_GROUPS_LOOP_OPS;
    if (g.file_grouped) {
        out->grouping = XPV_GROUPING_FILE;
    } else if (g.loops) {
        out->grouping = XPV_GROUPING_LOOPS;
        return;
    } else {
        g.ngroups = gr->ngroups;
        out->grouping = g.ngroups ? XPV_GROUPING_COMPUTED : XPV_GROUPING_NONE;
        out->groups = g.ngroups;
        if (!g.ngroups) return;
    }

    /* On a GPU profile a step is well formed when device compute covers
     * some time, and the breakdown only depends on which event types cover
     * each instant: events are coalesced (exact while no time needs the
     * 2^57 ps clamp; else they are collected again one by one).  CPU-only
     * profiles keep every event: their well-formedness test also sees the
     * instants where an event ends and another starts. */
    sctx c;
    sctx_init(&c, a, &g, has_gpu);
    collect_events(&c, p, &g, has_gpu);
    if (c.coalesce && c.evs.n && (uint64_t)c.tmax - (uint64_t)c.tmin > TMAX_REL) {
        sctx_free(&c);
        sctx_init(&c, a, &g, 0);
        collect_events(&c, p, &g, has_gpu);
    }
    if (g.file_grouped) out->groups = c.groups.n;

    /* Bucket events by group (counting sort of their indices). */
    size_t ng = c.groups.n, nev = c.evs.n;
    size_t *gstart = xpv_xcalloc(ng + 1, sizeof *gstart);
    const step_ev *E = c.evs.p;
    int64_t tmin = INT64_MAX;
    for (size_t i = 0; i < nev; i++) {
        gstart[E[i].gi + 1]++;
        if (E[i].b < tmin) tmin = E[i].b;
    }
    for (size_t i = 0; i < ng; i++) gstart[i + 1] += gstart[i];
    size_t *pos = xpv_xmalloc((ng + 1) * sizeof *pos);
    memcpy(pos, gstart, (ng + 1) * sizeof *pos);
    uint32_t *S = xpv_xmalloc((nev ? nev : 1) * sizeof *S);
    for (size_t i = 0; i < nev; i++) S[pos[E[i].gi]++] = (uint32_t)i;
    free(pos);

    xpv_step *steps = xpv_arena_calloc(a, ng ? ng : 1, sizeof *steps);
    size_t nsteps = 0;
    uint64_t *keys = NULL, *tmp = NULL;
    size_t kcap = 0, *bounds = NULL, bcap = 0;
    for (size_t gi = 0; gi < ng; gi++) {
        const group_acc *ga = gacc(&c, (uint32_t)gi);
        size_t n = gstart[gi + 1] - gstart[gi];
        const uint32_t *ev = S + gstart[gi];
        /* Step time from the markers. */
        int64_t sb = 0, se = 0;
        int has_host = ga->host_e >= ga->host_b, has_dev = ga->dev_e >= ga->dev_b;
        if (!has_dev) {
            if (has_host) {
                sb = ga->host_b;
                se = ga->host_e;
            }
        } else if (has_host && ga->host_b <= ga->dev_b && ga->dev_e <= ga->host_e) {
            sb = ga->host_b;
            se = ga->host_e;
        } else {
            sb = ga->dev_b;
            se = ga->dev_e;
        }
        /* Non-overlapping sweep over the group's events. */
        if (kcap < 2 * n) {
            kcap = 2 * n;
            keys = xpv_xrealloc(keys, kcap * sizeof *keys);
            tmp = xpv_xrealloc(tmp, kcap * sizeof *tmp);
        }
        for (size_t i = 0; i < n; i++) {
            const step_ev *x = &E[ev[i]];
            uint64_t rb = (uint64_t)(x->b - tmin), re = (uint64_t)(x->e - tmin);
            if (rb > TMAX_REL) rb = TMAX_REL;
            if (re > TMAX_REL) re = TMAX_REL;
            if (re < rb) re = rb;
            keys[2 * i] = (rb << 6) | (uint64_t)(32 + (31 - x->type));
            keys[2 * i + 1] = (re << 6) | (uint64_t)(31 - x->type);
        }
        sort_keys(keys, tmp, 2 * n, &bounds, &bcap);
        int64_t type_ps[XPV_EV_NTYPES] = {0};
        uint32_t present = 0;
        int32_t counts[32] = {0};
        uint32_t mask = 0;
        int64_t total = 0;
        for (size_t i = 0; i + 1 < 2 * n; i++) {
            uint32_t code = (uint32_t)(keys[i] & 63);
            int type = 31 - (int)(code & 31);
            if (code >= 32) counts[type]++;
            else counts[type]--;
            if (counts[type] > 0) mask |= 1u << type;
            else mask &= ~(1u << type);
            int hi = mask ? 31 - __builtin_clz(mask) : XPV_EV_UNKNOWN;
            int64_t t0 = (int64_t)(keys[i] >> 6) + tmin, t1 = (int64_t)(keys[i + 1] >> 6) + tmin;
            int64_t d = overlap(t0, t1, sb, se);
            type_ps[hi] += d;
            total += d;
            present |= 1u << hi;
            if (hi == XPV_EV_DEVICE_COMPUTE_16) out->compute_16bit_ps += t1 - t0;
            else if (hi == XPV_EV_DEVICE_COMPUTE_32) out->compute_32bit_ps += t1 - t0;
        }
        int64_t dur = se - sb;
        if (total < dur) type_ps[XPV_EV_UNKNOWN] += dur - total;
        int well_formed = has_gpu ? (present & ((1u << XPV_EV_DEVICE_COMPUTE_16) |
                                                (1u << XPV_EV_DEVICE_COMPUTE_32))) != 0
                                  : (present & (1u << XPV_EV_HOST_COMPUTE)) != 0;
        if (!well_formed || dur <= 0) continue;
        xpv_step *st = &steps[nsteps++];
        st->step_num = ga->group_id;
        st->name = ga->name ? ga->name : "";
        st->begin_ps = sb;
        st->dur_ps = dur;
        memcpy(st->type_ps, type_ps, sizeof type_ps);
    }
    free(keys);
    free(tmp);
    free(bounds);
    free(S);
    free(gstart);
    sctx_free(&c);

    qsort(steps, nsteps, sizeof *steps, cmp_step_num);
    out->steps = steps;
    out->n = nsteps;
    out->max_dur_ps = xpv_arena_alloc(a, (nsteps ? nsteps : 1) * sizeof *out->max_dur_ps);
    for (size_t i = 0; i < nsteps; i++) out->max_dur_ps[i] = steps[i].dur_ps;
}

/* ==== Multi-host intersection ============================================ */

static int64_t all_steps_span(const xpv_step_db *db) {
    if (!db->n) return 0;
    int64_t b = db->steps[0].begin_ps, e = b;
    for (size_t i = 0; i < db->n; i++) {
        if (db->steps[i].begin_ps < b) b = db->steps[i].begin_ps;
        int64_t x = db->steps[i].begin_ps + db->steps[i].dur_ps;
        if (x > e) e = x;
    }
    return e - b;
}

/* Offset k = chief index - host index maximizing the summed overlap. */
static long best_offset(const xpv_step_db *chief, const xpv_step_db *sub, int64_t *best_sum) {
    long best_k = 0;
    int64_t best = -1;
    long nc = (long)chief->n, ns = (long)sub->n;
    for (long k = -(ns - 1); k <= nc - 1; k++) {
        int64_t sum = 0;
        for (long i = k > 0 ? k : 0; i < nc && i - k < ns; i++) {
            const xpv_step *x = &chief->steps[i], *y = &sub->steps[i - k];
            sum += overlap(x->begin_ps, x->begin_ps + x->dur_ps, y->begin_ps,
                           y->begin_ps + y->dur_ps);
        }
        if (sum > best) {
            best = sum;
            best_k = k;
        }
    }
    *best_sum = best;
    return best_k;
}

void xpv_steps_intersect(const xpv_step_db *const *dbs, size_t n, xpv_arena *a,
                         xpv_step_db *out) {
    memset(out, 0, sizeof *out);
    if (n == 0) return;
    int any_device = 0;
    for (size_t i = 0; i < n; i++) {
        any_device |= dbs[i]->has_device;
        out->use_incomplete_step |= dbs[i]->use_incomplete_step;
    }
    size_t *use = xpv_xmalloc(n * sizeof *use);
    size_t nu = 0;
    for (size_t i = 0; i < n; i++)
        if (!any_device || dbs[i]->has_device) use[nu++] = i;
    out->has_device = any_device;
    out->grouping = dbs[use[0]]->grouping;
    for (size_t i = 0; i < nu; i++) {
        out->compute_16bit_ps += dbs[use[i]]->compute_16bit_ps;
        out->compute_32bit_ps += dbs[use[i]]->compute_32bit_ps;
        out->groups += dbs[use[i]]->groups;
    }
    /* Chief: the host with the shortest step span. */
    size_t chief = use[0];
    int64_t min_span = INT64_MAX;
    int any_steps = 0;
    for (size_t i = 0; i < nu; i++) {
        int64_t s = all_steps_span(dbs[use[i]]);
        if (dbs[use[i]]->n) any_steps = 1;
        if (s < min_span) {
            min_span = s;
            chief = use[i];
        }
    }
    if (!any_steps) {
        free(use);
        return;
    }
    long *begin_sub = xpv_xmalloc(n * sizeof *begin_sub);
    long max_begin = 0, min_end = (long)dbs[chief]->n;
    int disjoint = 0;
    for (size_t i = 0; i < nu; i++) {
        size_t h = use[i];
        long bc = 0, bs = 0, cnt;
        if (h == chief) {
            cnt = (long)dbs[h]->n;
        } else {
            int64_t ov = 0;
            long k = best_offset(dbs[chief], dbs[h], &ov);
            if (ov <= 0) disjoint = 1; /* no step of this host meets the chief's */
            bc = k > 0 ? k : 0;
            bs = k > 0 ? 0 : -k;
            long rc = (long)dbs[chief]->n - bc, rs = (long)dbs[h]->n - bs;
            cnt = rc < rs ? rc : rs;
            if (cnt < 0) cnt = 0;
        }
        begin_sub[h] = bs - bc; /* host index = chief index + begin_sub */
        if (bc > max_begin) max_begin = bc;
        if (bc + cnt < min_end) min_end = bc + cnt;
    }
    if (disjoint || max_begin >= min_end) {
        /* Nothing in common although some host has steps. */
        out->empty_intersect = 1;
        free(begin_sub);
        free(use);
        return;
    }
    size_t cnt = (size_t)(min_end - max_begin);
    /* Steps left out: in the chief's index space each host covers
     * [-begin_sub, n - begin_sub); a step covered by some host but not by
     * all of them is dropped.  (XProf's StepIntersection counts only the
     * steps cut by its max_steps cap, which its combiner leaves unbounded,
     * so its "N steps dropped" warning never fires; this count is what the
     * warning's text describes: steps lost to profiling many hosts.) */
    long union_b = 0, union_e = 0;
    for (size_t i = 0; i < nu; i++) {
        size_t h = use[i];
        long hb = -begin_sub[h], he = (long)dbs[h]->n - begin_sub[h];
        if (i == 0 || hb < union_b) union_b = hb;
        if (i == 0 || he > union_e) union_e = he;
    }
    if (union_e - union_b > (long)cnt)
        out->num_steps_dropped = (uint32_t)(union_e - union_b - (long)cnt);
    out->steps = xpv_arena_calloc(a, cnt ? cnt : 1, sizeof *out->steps);
    out->max_dur_ps = xpv_arena_calloc(a, cnt ? cnt : 1, sizeof *out->max_dur_ps);
    out->n = cnt;
    size_t first = use[0];
    for (size_t i = 0; i < cnt; i++) {
        long ci = max_begin + (long)i;
        out->steps[i] = dbs[first]->steps[ci + begin_sub[first]];
        int64_t mx = 0;
        for (size_t u = 0; u < nu; u++) {
            size_t h = use[u];
            int64_t d = dbs[h]->steps[ci + begin_sub[h]].dur_ps;
            if (d > mx) mx = d;
        }
        out->max_dur_ps[i] = mx;
    }
    free(begin_sub);
    free(use);
}
