/*
 * op_metrics_tpu.c - XProf's TPU device op database (ConvertTpuDeviceTrace-
 * XPlaneToOpMetricsDb): the op lines of a TensorCore plane keyed by the
 * program_id / symbol_id of their event metadata, nesting self time,
 * flops/bytes from metadata stats, categories, idle and the duty cycle.
 * Part of op_metrics.c's build (see op_metrics_int.h).
 */
#include "op_metrics_int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "par.h"

/* ==== TPU device op metrics ============================================== *
 * XProf ConvertTensorCoreDeviceTraceXPlaneToOpMetricsDb: events of the op
 * lines (`XLA Ops`, `Framework Ops`, `Sparse Core Ops`) keyed by their
 * metadata's (program_id, symbol_id); nesting by an ancestor stack over the
 * device timespan (device_offset_ps / device_duration_ps stats when both
 * are present, else the event's own); self = time - direct children. */

/* One (program_id, symbol_id) of a plane (XProf flat_op_metric_). */
typedef struct tpu_row {
    int64_t pid, sym;
    xpv_str name, category, provenance;   /* slices of the profile */
    xpv_str long_name;          /* the metadata name when name is its display name */
    int64_t occurrences, time_ps, self_time_ps, min_time_ps;
    double flops, model_flops, bytes;
} tpu_row;

/* Per event-metadata facts, read once per plane. */
typedef struct tpu_meta {
    uint8_t seen, keyed;        /* keyed: program_id + non-zero symbol_id */
    uint8_t off_duty;           /* tpu_off_duty(category) */
    uint32_t row;               /* tpu_row index + 1, 0 before first use */
    int64_t pid, sym;
    xpv_str category, provenance;
    double flops, model_flops, bytes;
} tpu_meta;

typedef struct tpu_open {
    uint32_t meta;
    int64_t b, e, children, min_ps, num_occ;
    double ev_flops, ev_model_flops, ev_bytes;
} tpu_open;

static int tpu_is_op_line(xpv_str name) {
    return str_is(name, "XLA Ops") || str_is(name, "Framework Ops") ||
           str_is(name, "Sparse Core Ops");
}

/* XProf IsOffDutyOp: categories whose time is not device activity. */
static int tpu_off_duty(xpv_str cat) {
    static const char *const off[] = {
        "infeed", "outfeed", "host send", "host send-done", "host recv", "host recv-done",
        "megacore fusion",
    };
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++)
        if (str_is(cat, off[i])) return 1;
    return 0;
}

static void tpu_read_meta(const xpv_plane *pl, uint32_t mi, tpu_meta *tm) {
    const xpv_event_meta *m = &pl->event_meta[mi];
    int has_pid = 0, has_sym = 0;
    tm->seen = 1;
    tm->category = tm->provenance = mkstr("", 0);
    for (uint32_t i = 0; i < m->nstats; i++) {
        const xpv_stat *st = &m->stats[i];
        if (st->meta < 0 || (uint32_t)st->meta >= pl->nstat_meta) continue;
        xpv_str n = pl->stat_meta[st->meta].name;
        int is_str = st->kind == XPV_STAT_STR;
        if (str_is(n, "program_id")) has_pid = xpv_stat_as_int(st, &tm->pid);
        else if (str_is(n, "symbol_id")) has_sym = xpv_stat_as_int(st, &tm->sym);
        else if (str_is(n, "hlo_category") && is_str) tm->category = st->v.s;
        else if (str_is(n, "tf_op") && is_str) tm->provenance = st->v.s;
        else if (str_is(n, "flops")) xpv_stat_as_double(st, &tm->flops);
        else if (str_is(n, "model_flops")) xpv_stat_as_double(st, &tm->model_flops);
        else if (str_is(n, "bytes_accessed")) xpv_stat_as_double(st, &tm->bytes);
    }
    tm->keyed = has_pid && has_sym && tm->sym != 0;
    tm->off_duty = (uint8_t)tpu_off_duty(tm->category);
}

typedef struct tpu_acc {
    tpu_row *rows;
    size_t n, cap;
    tpu_meta *meta;
    tpu_open *stack;
    size_t depth, capstack;
} tpu_acc;

/* XProf AddOpMetric(FromXEvent(e)) for a popped event. */
static void tpu_emit(tpu_acc *t, const xpv_plane *pl, const tpu_open *o) {
    tpu_meta *tm = &t->meta[o->meta];
    if (!tm->keyed) return;
    int64_t dur = o->e - o->b;
    int64_t self = dur - o->children;
    if (self < 0) self = 0;
    int64_t occ = o->num_occ > 1 ? o->num_occ : 1;
    if (!tm->row) {
        /* Rows of one plane are few (one per HLO symbol): a linear search
         * on the metadata's first use is enough, later uses are direct. */
        for (size_t i = 0; i < t->n; i++)
            if (t->rows[i].pid == tm->pid && t->rows[i].sym == tm->sym) {
                tm->row = (uint32_t)i + 1;
                break;
            }
    }
    if (!tm->row) {
        if (t->n == t->cap) {
            t->cap = t->cap ? t->cap * 2 : 64;
            t->rows = xpv_xrealloc(t->rows, t->cap * sizeof *t->rows);
        }
        tpu_row *r = &t->rows[t->n++];
        memset(r, 0, sizeof *r);
        const xpv_event_meta *m = &pl->event_meta[o->meta];
        r->pid = tm->pid;
        r->sym = tm->sym;
        r->name = m->display_name.len ? m->display_name : m->name;
        if (m->display_name.len) r->long_name = m->name;
        r->category = tm->category;
        r->provenance = tm->provenance;
        r->flops = tm->flops;
        r->model_flops = tm->model_flops;
        r->bytes = tm->bytes;
        if (str_is(tm->category, "custom-call")) {
            /* Custom calls add their event's own cost stats (XProf
             * SetOpMetricsFromHloEvent); only the first occurrence's stay,
             * as MergeOpMetrics keeps the first op's costs. */
            r->flops += o->ev_flops;
            r->model_flops += o->ev_model_flops;
            r->bytes += o->ev_bytes;
        }
        r->min_time_ps = INT64_MAX;
        tm->row = (uint32_t)t->n;
    }
    tpu_row *r = &t->rows[tm->row - 1];
    r->occurrences += occ;
    r->time_ps += dur;
    r->self_time_ps += self;
    if (o->min_ps < r->min_time_ps) r->min_time_ps = o->min_ps;
}

static void tpu_pop(tpu_acc *t, const xpv_plane *pl) {
    tpu_open o = t->stack[--t->depth];
    tpu_emit(t, pl, &o);
}

typedef struct tspan {
    int64_t b, e;
} tspan;

static int cmp_span(const void *a, const void *b) {
    const tspan *x = a, *y = b;
    if (x->b != y->b) return x->b < y->b ? -1 : 1;
    return (x->e > y->e) - (x->e < y->e);
}

/* XProf ConstructDutyCycleTracker for one core: active = union of the
 * `XLA Ops` events of on-duty categories and of `Sparse Core Ops` events;
 * the tracked span also covers the module lines' events; event timespans
 * (not the device offset stats).  Adds the core's busy / idle time. */
static void tpu_duty_cycle(int64_t *busy_ps, int64_t *idle_ps, const xpv_plane *pl,
                           tpu_meta *meta) {
    tspan *a = NULL;
    size_t n = 0, cap = 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (uint32_t l = 0; l < pl->nlines; l++) {
        const xpv_line *ln = &pl->lines[l];
        int xla = str_is(ln->name, "XLA Ops"), sc = str_is(ln->name, "Sparse Core Ops");
        int mod = str_is(ln->name, "XLA Modules") || str_is(ln->name, "Sparse Core Modules");
        if (!xla && !sc && !mod) continue;
        for (uint32_t k = 0; k < ln->nevents; k++) {
            const xpv_event *ev = &ln->events[k];
            int64_t b = ev->start_ps, e = ev->start_ps + ev->dur_ps;
            if (b < lo) lo = b;
            if (e > hi) hi = e;
            if (mod) continue;
            if (xla && ev->meta < pl->nevent_meta) {
                tpu_meta *tm = &meta[ev->meta];
                if (!tm->seen) tpu_read_meta(pl, ev->meta, tm);
                if (tm->off_duty) continue;
            }
            if (n == cap) {
                cap = cap ? cap * 2 : 256;
                a = xpv_xrealloc(a, cap * sizeof *a);
            }
            a[n].b = b;
            a[n].e = e;
            n++;
        }
    }
    if (hi <= lo) {
        free(a);
        return;
    }
    /* Usually one line, already in start order: the union below does not
     * depend on the order of spans with the same start, so sort only when
     * the starts are out of order. */
    size_t unsorted = 0;
    for (size_t i = 1; i < n && !unsorted; i++) unsorted = a[i].b < a[i - 1].b;
    if (unsorted) qsort(a, n, sizeof *a, cmp_span);
    int64_t busy = 0, cb = 0, ce = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        if (a[i].b > ce) { /* disjoint (or touching): close the run */
            if (ce > cb) busy += ce - cb;
            cb = a[i].b;
            ce = a[i].e;
        } else if (a[i].e > ce) {
            ce = a[i].e;
        }
    }
    if (ce > cb) busy += ce - cb;
    *busy_ps += busy;
    *idle_ps += (hi - lo) > busy ? (hi - lo) - busy : 0;
    free(a);
}

/* One plane read: its rows (before the per-row adjustments) and times. */
struct xpv_om_tpu_res {
    const xpv_plane *pl;
    tpu_row *rows;
    size_t n;
    int64_t first, last, busy_ps, idle_ps;
};

/* Read one TensorCore plane into `res` (nothing shared is written). */
static void tpu_read_plane(xpv_om_tpu_res *res) {
    const xpv_plane *pl = res->pl;
    enum { S_OFF, S_DUR, S_MIN, S_OCC, S_FLOPS, S_MFLOPS, S_BYTES, S_N };
    int32_t ids[S_N] = {
        xpv_stat_id(pl, "device_offset_ps"), xpv_stat_id(pl, "device_duration_ps"),
        xpv_stat_id(pl, "min_duration_ps"), xpv_stat_id(pl, "num_occurrences"),
        xpv_stat_id(pl, "flops"), xpv_stat_id(pl, "model_flops"),
        xpv_stat_id(pl, "bytes_accessed"),
    };
    /* Resolved once per plane, not per event. */
    xpv_stat_set set;
    xpv_stat_set_init(&set, pl, ids, S_N);
    tpu_acc t;
    memset(&t, 0, sizeof t);
    t.meta = xpv_xcalloc(pl->nevent_meta ? pl->nevent_meta : 1, sizeof *t.meta);
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (uint32_t l = 0; l < pl->nlines; l++) {
        const xpv_line *ln = &pl->lines[l];
        int op_line = tpu_is_op_line(ln->name);
        int step_line = str_is(ln->name, "Steps") || str_is(ln->name, "Sparse Core Steps");
        if (!op_line && !step_line) continue;
        t.depth = 0;
        int may = xpv_line_may_have(ln, &set);
        for (uint32_t k = 0; k < ln->nevents; k++) {
            const xpv_event *ev = &ln->events[k];
            xpv_stat sv[S_N];
            uint32_t got = may && ev->wire != XPV_NO_STATS
                               ? xpv_event_stats_in(pl, ln, ev, &set, sv, NULL)
                               : 0;
            int64_t b = ev->start_ps, dur = ev->dur_ps, v;
            if ((got & 3) == 3 && xpv_stat_as_int(&sv[S_OFF], &b) &&
                xpv_stat_as_int(&sv[S_DUR], &dur)) {
                /* File values: clamped as the decoder clamps event times,
                 * so that b + dur cannot overflow. */
                const int64_t lim = INT64_MAX / 4;
                if (b > lim) b = lim;
                if (b < -lim) b = -lim;
                if (dur < 0) dur = 0;
                if (dur > lim) dur = lim;
            } else {
                b = ev->start_ps;
                dur = ev->dur_ps;
            }
            int64_t e = b + dur;
            if (b < first) first = b;
            if (e > last) last = e;
            if (!op_line || ev->meta >= pl->nevent_meta) continue;
            if (!t.meta[ev->meta].seen) tpu_read_meta(pl, ev->meta, &t.meta[ev->meta]);
            /* AncestorStack::Push: close the open events that do not
             * include this one, then count it as a child of the top. */
            while (t.depth && !(t.stack[t.depth - 1].b <= b && e <= t.stack[t.depth - 1].e))
                tpu_pop(&t, pl);
            if (t.depth) t.stack[t.depth - 1].children += dur;
            if (t.depth == t.capstack) {
                t.capstack = t.capstack ? t.capstack * 2 : 32;
                t.stack = xpv_xrealloc(t.stack, t.capstack * sizeof *t.stack);
            }
            tpu_open *o = &t.stack[t.depth++];
            memset(o, 0, sizeof *o);
            o->meta = ev->meta;
            o->b = b;
            o->e = e;
            o->min_ps = dur;
            if ((got >> S_MIN & 1) && xpv_stat_as_int(&sv[S_MIN], &v)) o->min_ps = v;
            if ((got >> S_OCC & 1) && xpv_stat_as_int(&sv[S_OCC], &v)) o->num_occ = v;
            if (got >> S_FLOPS & 1) xpv_stat_as_double(&sv[S_FLOPS], &o->ev_flops);
            if (got >> S_MFLOPS & 1) xpv_stat_as_double(&sv[S_MFLOPS], &o->ev_model_flops);
            if (got >> S_BYTES & 1) xpv_stat_as_double(&sv[S_BYTES], &o->ev_bytes);
        }
        while (t.depth) tpu_pop(&t, pl); /* AncestorStack::Flush */
    }
    res->rows = t.rows;
    res->n = t.n;
    res->first = first;
    res->last = last;
    tpu_duty_cycle(&res->busy_ps, &res->idle_ps, pl, t.meta);
    free(t.meta);
    free(t.stack);
}

/* Planes are taken from a shared counter by each thread. */
typedef struct tpu_pool {
    xpv_om_tpu_res *res;
    size_t n;
    _Atomic size_t next;
} tpu_pool;

static void tpu_read_run(void *arg) {
    tpu_pool *tp = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&tp->next, 1);
        if (i >= tp->n) break;
        tpu_read_plane(&tp->res[i]);
    }
}

xpv_om_tpu_res *xpv_om_tpu_read(const xpv_plane *const *pls, size_t n) {
    xpv_om_tpu_res *res = xpv_xcalloc(n ? n : 1, sizeof *res);
    for (size_t i = 0; i < n; i++) res[i].pl = pls[i];
    tpu_pool tp = {.res = res, .n = n};
    atomic_init(&tp.next, 0);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t threads = cpus < 1 ? 1 : cpus > 8 ? 8 : (size_t)cpus;
    if (threads > n) threads = n;
    if (threads < 2) {
        tpu_read_run(&tp);
        return res;
    }
    void *args[8];
    for (size_t t = 0; t < threads; t++) args[t] = &tp;
    xpv_par_many(tpu_read_run, args, (int)threads);
    return res;
}

void xpv_om_tpu_add(dev_acc *d, xpv_om_tpu_res *all, size_t at) {
    xpv_om_tpu_res *res = &all[at];
    int64_t first = res->first, last = res->last;
    /* Finalize: AdjustFlopsAndBytesAccessed per (program, symbol), then
     * combine into the device db by (program id, name) as XProf's
     * OpMetricsDbCombiner does across cores. */
    int64_t op_time = 0;
    for (size_t i = 0; i < res->n; i++) {
        tpu_row *r = &res->rows[i];
        if (!str_is(r->category, "custom-call")) {
            double occ = (double)r->occurrences;
            r->flops *= occ;
            r->model_flops = r->model_flops > 0 ? r->model_flops * occ : r->flops;
            r->bytes *= occ;
        }
        op_time += r->self_time_ps;
        uint32_t row = xpv_om_optab_row(&d->tab, r->pid, r->name);
        xpv_op_metric *m = &d->tab.rows[row];
        if (!m->category[0] && r->category.len) m->category = xpv_om_arena_str(d->tab.arena, r->category);
        if (!m->provenance[0] && r->provenance.len)
            m->provenance = xpv_om_arena_str(d->tab.arena, r->provenance);
        if (!m->long_name[0] && r->long_name.len)
            m->long_name = xpv_om_arena_str(d->tab.arena, r->long_name);
        m->occurrences += r->occurrences;
        m->time_ps += r->time_ps;
        m->self_time_ps += r->self_time_ps;
        if (r->min_time_ps < m->min_time_ps) m->min_time_ps = r->min_time_ps;
        m->flops += r->flops;
        m->model_flops += r->model_flops;
        m->bytes_accessed += r->bytes;
    }
    /* XProf SetTotalTimePs: the total is never below the op time (op
     * lines overlap: XLA Ops and Framework Ops), so IDLE >= 0. */
    int64_t span = last > first ? last - first : 0;
    d->total_time_ps += span > op_time ? span : op_time;
    d->total_op_time_ps += op_time;
    d->idle_ps += span > op_time ? span - op_time : 0;
    d->tpu_ops += res->n;
    d->tpu_busy_ps += res->busy_ps;
    d->tpu_idle_ps += res->idle_ps;
    free(res->rows);
    res->rows = NULL;
    res->n = 0;
}

void xpv_om_tpu_res_free(xpv_om_tpu_res *res, size_t n) {
    if (!res) return;
    for (size_t i = 0; i < n; i++) free(res[i].rows);
    free(res);
}

