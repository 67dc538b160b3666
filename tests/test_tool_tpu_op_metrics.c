/*
 * test_tool_tpu_op_metrics.c - the TPU device op db (XProf
 * ConvertTensorCoreDeviceTraceXPlaneToOpMetricsDb) on XSpaces built in the
 * test, and on the real JAX-on-TPU capture of ../shared checked against a
 * count made here straight from the file, through framework_op_stats and
 * the overview page.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "datatable_json.h"
#include "op_metrics.h"
#include "opstats.h"
#include "testutil.h"
#include "op_metrics_fixture.h"
#include "tool_xspace.h"

#define PID 7

/* An HLO op's metadata: program PID, symbol `sym` (< 0: no symbol_id). */
static void hlo(tx_space *s, int pl, const char *name, int64_t sym, const char *cat,
                const char *tf_op) {
    tx_meta_int(s, pl, name, "program_id", PID);
    if (sym >= 0) tx_meta_int(s, pl, name, "symbol_id", sym);
    if (cat) tx_meta_str(s, pl, name, "hlo_category", cat);
    if (tf_op) tx_meta_str(s, pl, name, "tf_op", tf_op);
}

/* One core: fusion.1 [0,10) with children copy.2 [2,6) and add.3 [6,8);
 * fusion.1 again [12,15).  Then a dropped root [20,30) holding a keyed
 * child [21,22), events without symbol_id / with symbol_id 0 / without
 * program_id, and lines that are not op lines. */
static xpv_profile *tpu_profile(void) {
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/device:TPU:0");
    /* As XProf's GetOrCreateTpuXPlane writes it: the device type names a
     * TPU, so the overview computes its TPU fields. */
    tx_plane_str(s, pl, "device_type_string", "TPU v4");
    hlo(s, pl, "fusion.1", 1, "loop fusion", "jit(f)/jit(main)/dot_general:");
    hlo(s, pl, "copy.2", 2, "copy", NULL);
    hlo(s, pl, "add.3", 3, "non-fusion elementwise", "jit(f)/jit(main)/add:");
    hlo(s, pl, "nosym", -1, "copy", NULL);
    hlo(s, pl, "root", 0, "while", NULL);
    hlo(s, pl, "inner.4", 4, "copy", NULL);
    tx_meta_int(s, pl, "nopid", "symbol_id", 9);
    int ln = tx_line(s, pl, 3, "XLA Ops", 0);
    tx_event(s, pl, ln, "fusion.1", 0, 10 * MS);
    tx_event(s, pl, ln, "copy.2", 2 * MS, 4 * MS);
    tx_event(s, pl, ln, "add.3", 6 * MS, 2 * MS);
    tx_event(s, pl, ln, "fusion.1", 12 * MS, 3 * MS);
    tx_event(s, pl, ln, "root", 20 * MS, 10 * MS);
    tx_event(s, pl, ln, "inner.4", 21 * MS, 1 * MS);
    tx_event(s, pl, ln, "nosym", 23 * MS, 1 * MS);
    tx_event(s, pl, ln, "nopid", 25 * MS, 1 * MS);
    /* Not op lines: never counted, never extend the span. */
    int al = tx_line(s, pl, 4, "Async XLA Ops", 0);
    tx_event(s, pl, al, "copy.2", 0, 100 * MS);
    int tl = tx_line(s, pl, 6, "XLA TraceMe", 0);
    tx_event(s, pl, tl, "add.3", 40 * MS, 1 * MS);
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    return p;
}

static void test_nesting_self_time_and_idle(void **state) {
    (void)state;
    xpv_profile *p = tpu_profile();
    xpv_op_metrics *m = om_build1(p);
    const xpv_op_metrics_db *d = &m->device;
    assert_true(m->has_tpu);
    assert_string_equal(m->device_type, "TPU");
    /* fusion.1, copy.2, add.3, inner.4, IDLE */
    assert_int_equal(d->n, 5);
    const xpv_op_metric *f = om_find_op(d, "fusion.1");
    assert_non_null(f);
    assert_int_equal(f->occurrences, 2);
    assert_int_equal(f->time_ps, 13 * MS);
    assert_int_equal(f->self_time_ps, (10 - 4 - 2 + 3) * MS);
    assert_int_equal(f->min_time_ps, 3 * MS);
    assert_string_equal(f->category, "loop fusion");
    assert_string_equal(f->provenance, "jit(f)/jit(main)/dot_general:");
    assert_int_equal(om_find_op(d, "copy.2")->self_time_ps, 4 * MS);
    assert_int_equal(om_find_op(d, "add.3")->self_time_ps, 2 * MS);
    /* The dropped root still nests its child: the child keeps its time. */
    assert_int_equal(om_find_op(d, "inner.4")->self_time_ps, 1 * MS);
    assert_null(om_find_op(d, "root"));
    assert_null(om_find_op(d, "nosym"));
    assert_null(om_find_op(d, "nopid"));
    /* Span: first op start 0 .. last op end 30 (dropped events count). */
    assert_int_equal(d->total_time_ps, 30 * MS);
    assert_int_equal(d->total_op_time_ps, (7 + 4 + 2 + 1) * MS);
    const xpv_op_metric *idle = om_find_op(d, "IDLE");
    assert_non_null(idle);
    assert_true(idle->is_idle);
    assert_int_equal(idle->self_time_ps, 16 * MS);
    /* TF level: dot_general is a JAX op of type dot_general. */
    const xpv_op_metric *t = om_find_op(&m->device_tf, "jit(f)/jit(main)/dot_general");
    assert_non_null(t);
    assert_string_equal(t->category, "dot_general");
    assert_int_equal(t->occurrences, 2);
    assert_string_equal(om_find_op(&m->device_tf, "jit(f)/jit(main)/add")->category, "add");
    assert_string_equal(om_find_op(&m->device_tf, "copy.2")->category, "Unknown");
    assert_int_equal(m->tpu_busy_ps, 23 * MS);
    assert_int_equal(m->tpu_idle_ps, 7 * MS);
    xpv_op_metrics_free(m);
    xpv_profile_free(p);
}

/* XLA Ops and Framework Ops are both op lines (IsOpLineName): their op
 * time adds up past the span; XProf's total is then the op time
 * (SetTotalTimePs) and IDLE 0. */
static void test_op_lines_overlap_total(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/device:TPU:0");
    hlo(s, pl, "fusion.1", 1, "loop fusion", NULL);
    hlo(s, pl, "dot", 2, "convolution", NULL);
    tx_event(s, pl, tx_line(s, pl, 3, "XLA Ops", 0), "fusion.1", 0, 10 * MS);
    tx_event(s, pl, tx_line(s, pl, 5, "Framework Ops", 0), "dot", 0, 10 * MS);
    xpv_profile *p = tx_decode(s);
    xpv_op_metrics *m = om_build1(p);
    const xpv_op_metrics_db *d = &m->device;
    assert_int_equal(d->total_op_time_ps, 20 * MS);
    assert_int_equal(d->total_time_ps, 20 * MS);
    assert_int_equal(om_find_op(d, "IDLE")->self_time_ps, 0);
    xpv_op_metrics_free(m);
    xpv_profile_free(p);
}

/* flops / bytes are per occurrence in the metadata: multiplied by the
 * occurrences (model_flops = flops when absent); custom-calls are not. */
static void test_flops_times_occurrences(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/device:TPU:0");
    hlo(s, pl, "conv", 1, "convolution", "jit(f)/conv_general_dilated:");
    tx_meta_int(s, pl, "conv", "flops", 100);
    tx_meta_int(s, pl, "conv", "bytes_accessed", 1000);
    hlo(s, pl, "mm", 2, "convolution", NULL);
    tx_meta_int(s, pl, "mm", "flops", 10);
    tx_meta_int(s, pl, "mm", "model_flops", 8);
    hlo(s, pl, "cc", 3, "custom-call", NULL);
    tx_meta_int(s, pl, "cc", "flops", 50);
    tx_meta_int(s, pl, "cc", "bytes_accessed", 70);
    int ln = tx_line(s, pl, 3, "XLA Ops", 0);
    for (int i = 0; i < 3; i++) tx_event(s, pl, ln, "conv", i * 10 * MS, 2 * MS);
    for (int i = 0; i < 2; i++) tx_event(s, pl, ln, "mm", (40 + i * 10) * MS, 2 * MS);
    for (int i = 0; i < 4; i++) tx_event(s, pl, ln, "cc", (70 + i * 10) * MS, 1 * MS);
    /* Framework Ops is an op line too (its own nesting). */
    hlo(s, pl, "fw", 5, "tf op", NULL);
    int fl = tx_line(s, pl, 5, "Framework Ops", 0);
    tx_event(s, pl, fl, "fw", 0, 5 * MS);
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    xpv_op_metrics *m = om_build1(p);
    const xpv_op_metric *c = om_find_op(&m->device, "conv");
    assert_int_equal(c->occurrences, 3);
    assert_true(dt_near(c->flops, 300));
    assert_true(dt_near(c->model_flops, 300));
    assert_true(dt_near(c->bytes_accessed, 3000));
    const xpv_op_metric *mm = om_find_op(&m->device, "mm");
    assert_true(dt_near(mm->flops, 20));
    assert_true(dt_near(mm->model_flops, 16));
    const xpv_op_metric *cc = om_find_op(&m->device, "cc");
    assert_int_equal(cc->occurrences, 4);
    assert_true(dt_near(cc->flops, 50));
    assert_true(dt_near(cc->bytes_accessed, 70));
    assert_int_equal(om_find_op(&m->device, "fw")->self_time_ps, 5 * MS);
    assert_int_equal(m->device.total_time_ps, 101 * MS);
    xpv_op_metrics_free(m);
    xpv_profile_free(p);
}

/* The device timespan stats replace the event's own times; display names
 * name the op; cores are combined by (program id, name). */
static void test_device_timespan_display_name_two_cores(void **state) {
    (void)state;
    tx_space *s = tx_new();
    for (int core = 0; core < 2; core++) {
        char name[32];
        snprintf(name, sizeof name, "/device:TPU:%d", core);
        int pl = tx_plane(s, name);
        const char *ev = "%fusion.9 = f32[8]{0} fusion(...)";
        hlo(s, pl, ev, 1, "loop fusion", NULL);
        tx_meta_display(s, pl, ev, "fusion.9");
        int ln = tx_line(s, pl, 3, "XLA Ops", 0);
        tx_event_t *e = tx_event(s, pl, ln, ev, 0, 10 * MS);
        tx_ev_int(s, pl, e, "device_offset_ps", 1 * MS);
        tx_ev_int(s, pl, e, "device_duration_ps", 4 * MS);
        e = tx_event(s, pl, ln, ev, 20 * MS, 2 * MS);
        tx_ev_int(s, pl, e, "num_occurrences", 3);
        /* A Steps line extends the span. */
        int sl = tx_line(s, pl, 1, "Steps", 0);
        tx_event(s, pl, sl, "0", 0, 40 * MS);
    }
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    xpv_op_metrics *m = om_build1(p);
    assert_int_equal(m->device.n, 2);
    const xpv_op_metric *f = om_find_op(&m->device, "fusion.9");
    assert_non_null(f);
    assert_int_equal(f->occurrences, 2 * (1 + 3));
    assert_int_equal(f->self_time_ps, 2 * (4 + 2) * MS);
    assert_int_equal(m->device.total_time_ps, 2 * 40 * MS);
    assert_int_equal(om_find_op(&m->device, "IDLE")->self_time_ps, 2 * 34 * MS);
    xpv_op_metrics_free(m);
    xpv_profile_free(p);
}

/* Duty cycle (XProf DutyCycleTracker): off-duty categories are not busy;
 * module events widen the span; overlapping ops count once. */
static void test_duty_cycle_off_duty(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/device:TPU:0");
    hlo(s, pl, "infeed.1", 1, "infeed", NULL);
    hlo(s, pl, "fusion.2", 2, "loop fusion", NULL);
    hlo(s, pl, "send.3", 3, "host send-done", NULL);
    int ml = tx_line(s, pl, 2, "XLA Modules", 0);
    tx_event(s, pl, ml, "jit_f(1)", 0, 20 * MS);
    int ln = tx_line(s, pl, 3, "XLA Ops", 0);
    tx_event(s, pl, ln, "infeed.1", 0, 10 * MS);
    tx_event(s, pl, ln, "fusion.2", 10 * MS, 2 * MS);
    tx_event(s, pl, ln, "fusion.2", 11 * MS, 3 * MS); /* overlaps: union 10..14 */
    tx_event(s, pl, ln, "send.3", 15 * MS, 1 * MS);
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    xpv_op_metrics *m = om_build1(p);
    assert_int_equal(m->tpu_busy_ps, 4 * MS);
    assert_int_equal(m->tpu_idle_ps, 16 * MS);
    /* The op db itself still counts the off-duty op (span 0..16). */
    assert_int_equal(om_find_op(&m->device, "infeed.1")->self_time_ps, 10 * MS);
    assert_int_equal(m->device.total_time_ps, 16 * MS);
    xpv_op_metrics_free(m);
    xpv_profile_free(p);
}

/* Extreme device timespan stats are clamped (no overflow); negative
 * durations count as 0. */
static void test_extreme_device_stats(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/device:TPU:0");
    hlo(s, pl, "a", 1, "copy", NULL);
    int ln = tx_line(s, pl, 3, "XLA Ops", 0);
    tx_event_t *e = tx_event(s, pl, ln, "a", 0, 1 * MS);
    tx_ev_int(s, pl, e, "device_offset_ps", INT64_MAX);
    tx_ev_int(s, pl, e, "device_duration_ps", INT64_MAX);
    e = tx_event(s, pl, ln, "a", 0, 1 * MS);
    tx_ev_int(s, pl, e, "device_offset_ps", INT64_MIN);
    tx_ev_int(s, pl, e, "device_duration_ps", -5);
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    xpv_op_metrics *m = om_build1(p);
    const xpv_op_metric *a = om_find_op(&m->device, "a");
    assert_int_equal(a->occurrences, 2);
    assert_int_equal(a->time_ps, INT64_MAX / 4);
    assert_true(m->device.total_time_ps > 0);
    xpv_op_metrics_free(m);
    xpv_profile_free(p);
}

/* XProf's ExtractTpuMxuUtilizationFromXSpace: the host plane's
 * matrix_unit_utilization_percent stat is the overview's MXU use. */
static void test_mxu_utilization_from_host_plane(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/host:CPU");
    tx_stat_t *st = tx_new_stat(s, pl, &s->space.planes[pl]->n_stats,
                                &s->space.planes[pl]->stats, "matrix_unit_utilization_percent");
    st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_DOUBLE_VALUE;
    st->double_value = 20.0;
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    json_t *j = dt_render_one(xpv_tool_find("overview_page"), p);
    assert_string_equal(dt_pstr(json_array_get(j, 0), "mxu_utilization_percent"), "20.0%");
    json_decref(j);
    xpv_profile_free(p);
}

/* framework_op_stats and the overview on the constructed core. */
static void test_tools_show_tpu_rows(void **state) {
    (void)state;
    xpv_profile *p = tpu_profile();
    json_t *j = dt_render_one(xpv_tool_find("framework_op_stats"), p);
    json_t *t = json_array_get(j, 1); /* without idle */
    size_t ndev = 0;
    double self_us = 0;
    for (size_t r = 0; r < dt_nrows(t); r++) {
        if (strcmp(dt_cell_str(t, r, 1), "Device")) continue;
        ndev++;
        self_us += dt_cell_num(t, r, 7);
        if (!strcmp(dt_cell_str(t, r, 3), "jit(f)/jit(main)/dot_general")) {
            assert_string_equal(dt_cell_str(t, r, 2), "dot_general");
            assert_true(dt_near(dt_cell_num(t, r, 4), 2));
        }
    }
    /* dot_general, add, copy.2, inner.4 */
    assert_int_equal(ndev, 4);
    assert_true(dt_near(self_us, 14000));
    json_decref(j);
    xpv_profile_free(p);

    p = tpu_profile();
    j = dt_render_one(xpv_tool_find("overview_page"), p);
    json_t *a = json_array_get(j, 0);
    assert_string_equal(dt_pstr(a, "device_idle_time_percent"), "53.3%");
    /* Duty cycle: the union of every XLA Ops event (dropped ones too:
     * [0,10) [12,15) [20,30)) over the span 0..30. */
    assert_string_equal(dt_pstr(a, "device_duty_cycle_percent"), "76.7%");
    assert_true(dt_nrows(a) == 4);
    assert_string_equal(dt_cell_str(a, 0, 3), "jit(f)/jit(main)/dot_general");
    /* XProf's device type: the TensorCore plane's device_type_string. */
    assert_string_equal(dt_pstr(json_array_get(j, 2), "device_type"), "TPU v4");
    /* No step marker: XProf's diagnostic and an unknown bottleneck. */
    assert_string_equal(dt_pstr(json_array_get(j, 3), "bottleneck"), "unknown");
    json_t *diag = json_array_get(j, 6);
    int seen = 0;
    for (size_t r = 0; r < dt_nrows(diag); r++)
        seen |= !strncmp(dt_cell_str(diag, r, 1), "No step marker observed", 23);
    assert_true(seen);
    json_decref(j);
    xpv_profile_free(p);
}

/* ==== The real JAX-on-TPU capture ======================================== */

typedef struct indep {
    int64_t occ, self_ps, self_plain_ps, total_ps;
    size_t nops;                 /* distinct (program, symbol) per core */
    /* TF level: per group (provenance name or op name) the max of its ops'
     * occurrences, XProf's DeviceTfOpMetricsDbBuilder rule. */
    char *gname[512];
    int64_t gocc[512];
    size_t ng;
    char *oname[512];            /* (program, name) ops, cores combined */
    int64_t opid[512], oocc[512];
    char *ogroup[512];
    size_t no;
} indep;

static int meta_int(const xpv_plane *pl, const xpv_event_meta *m, const char *name, int64_t *v) {
    for (uint32_t i = 0; i < m->nstats; i++)
        if (m->stats[i].meta >= 0 && xpv_str_eq(pl->stat_meta[m->stats[i].meta].name, name))
            return xpv_stat_as_int(&m->stats[i], v);
    return 0;
}

static xpv_str meta_str(const xpv_plane *pl, const xpv_event_meta *m, const char *name) {
    xpv_str none = {"", 0};
    for (uint32_t i = 0; i < m->nstats; i++)
        if (m->stats[i].meta >= 0 && xpv_str_eq(pl->stat_meta[m->stats[i].meta].name, name) &&
            m->stats[i].kind == XPV_STAT_STR)
            return m->stats[i].v.s;
    return none;
}

/* Count straight from the decoded planes: events of the op lines whose
 * metadata carries program_id and a non-zero symbol_id; self time =
 * duration minus the durations of the events directly inside it on the
 * same line (found by scanning forward, not with the converter's stack);
 * the duration is the device_duration_ps stat when the event has both
 * device stats (XProf GetDeviceEventTimespan), and self_plain_ps also
 * keeps the event's own duration for comparison. */
static void count_file(const xpv_profile *p, indep *c) {
    memset(c, 0, sizeof *c);
    for (uint32_t k = 0; k < p->nplanes; k++) {
        const xpv_plane *pl = &p->planes[k];
        if (!xpv_str_has_prefix(pl->name, "/device:TPU:")) continue;
        int32_t s_off = xpv_stat_id(pl, "device_offset_ps");
        int32_t s_dur = xpv_stat_id(pl, "device_duration_ps");
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        int64_t seen_sym[1024];
        size_t nseen = 0;
        for (uint32_t l = 0; l < pl->nlines; l++) {
            const xpv_line *ln = &pl->lines[l];
            int op_line = xpv_str_eq(ln->name, "XLA Ops") ||
                          xpv_str_eq(ln->name, "Framework Ops") ||
                          xpv_str_eq(ln->name, "Sparse Core Ops");
            if (!op_line && !xpv_str_eq(ln->name, "Steps")) continue;
            uint32_t n = ln->nevents;
            int64_t *b = calloc(n + 1, sizeof *b), *e = calloc(n + 1, sizeof *e);
            int64_t *pe = calloc(n + 1, sizeof *pe); /* plain end */
            for (uint32_t i = 0; i < n; i++) {
                const xpv_event *ev = &ln->events[i];
                xpv_stat so, sd;
                int64_t off, dur;
                if (xpv_event_stat(pl, ln, ev, s_off, &so) &&
                    xpv_event_stat(pl, ln, ev, s_dur, &sd) && xpv_stat_as_int(&so, &off) &&
                    xpv_stat_as_int(&sd, &dur)) {
                    b[i] = off;
                    e[i] = off + dur;
                } else {
                    b[i] = ev->start_ps;
                    e[i] = ev->start_ps + ev->dur_ps;
                }
                pe[i] = ev->start_ps + ev->dur_ps;
                if (b[i] < lo) lo = b[i];
                if (e[i] > hi) hi = e[i];
            }
            for (uint32_t i = 0; op_line && i < n; i++) {
                const xpv_event *ev = &ln->events[i];
                const xpv_event_meta *m = &pl->event_meta[ev->meta];
                int64_t pid, sym;
                if (!meta_int(pl, m, "program_id", &pid) || !meta_int(pl, m, "symbol_id", &sym) ||
                    sym == 0)
                    continue;
                /* Direct children: the run of events right after it in
                 * line order that lie inside [b, e), less those inside an
                 * earlier child (grandchildren).  (Device offsets are not
                 * sorted on this line: an event may lie before its
                 * predecessor, which is then no parent of it.) */
                int64_t kids = 0, kids_plain = 0, cov_end = INT64_MIN;
                for (uint32_t j = i + 1; j < n; j++) {
                    if (b[j] < b[i] || e[j] > e[i]) break;
                    if (e[j] <= cov_end) continue; /* grandchild */
                    kids += e[j] - b[j];
                    kids_plain += ln->events[j].dur_ps;
                    cov_end = e[j];
                }
                c->occ++;
                c->self_ps += (e[i] - b[i]) - kids;
                c->self_plain_ps += ev->dur_ps - kids_plain;
                (void)pe;
                int dup = 0;
                for (size_t s = 0; s < nseen; s++) dup |= seen_sym[s] == sym;
                if (!dup && nseen < 1024) seen_sym[nseen++] = sym;
                /* TF-level grouping. */
                xpv_str disp = m->display_name.len ? m->display_name : m->name;
                xpv_str prov = meta_str(pl, m, "tf_op");
                char name[256], group[256];
                snprintf(name, sizeof name, "%.*s", (int)disp.len, disp.ptr);
                if (prov.len) {
                    /* "jit(f)/jit(main)/add:" -> "jit(f)/jit(main)/add" */
                    const char *colon = memchr(prov.ptr, ':', prov.len);
                    int gl = colon ? (int)(colon - prov.ptr) : (int)prov.len;
                    snprintf(group, sizeof group, "%.*s", gl, prov.ptr);
                } else {
                    snprintf(group, sizeof group, "%s", name);
                }
                size_t o = 0;
                while (o < c->no && !(c->opid[o] == pid && !strcmp(c->oname[o], name))) o++;
                if (o == c->no) {
                    assert_true(c->no < 512);
                    c->oname[o] = strdup(name);
                    c->ogroup[o] = strdup(group);
                    c->opid[o] = pid;
                    c->no++;
                }
                c->oocc[o]++;
            }
            free(b);
            free(e);
            free(pe);
        }
        c->nops += nseen;
        if (hi > lo) c->total_ps += hi - lo;
    }
    for (size_t o = 0; o < c->no; o++) {
        size_t g = 0;
        while (g < c->ng && strcmp(c->gname[g], c->ogroup[o])) g++;
        if (g == c->ng) {
            c->gname[g] = c->ogroup[o];
            c->ng++;
        }
        if (c->oocc[o] > c->gocc[g]) c->gocc[g] = c->oocc[o];
    }
}

static void indep_free(indep *c) {
    for (size_t o = 0; o < c->no; o++) {
        free(c->oname[o]);
        free(c->ogroup[o]);
    }
}

static void test_real_tpu_file(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    char path[4096];
    tx_real_tpu_path(path, sizeof path);
    if (access(path, R_OK) != 0) {
        print_message("SKIP: %s not present\n", path);
        skip();
    }
    xpv_profile *p = tx_decode_file(path);
    indep c;
    count_file(p, &c);
    int64_t tf_occ = 0;
    for (size_t g = 0; g < c.ng; g++) tf_occ += c.gocc[g];
    print_message("independent: %zu ops, %lld occurrences, self %.6f ms (event durations: "
                  "%.6f ms), span %.6f ms, idle %.4f%%; TF level %zu ops, %lld occurrences\n",
                  c.no, (long long)c.occ, (double)c.self_ps / MS, (double)c.self_plain_ps / MS,
                  (double)c.total_ps / MS, 100.0 * (1.0 - (double)c.self_ps / (double)c.total_ps),
                  c.ng, (long long)tf_occ);
    assert_true(c.occ > 0);

    /* The op db. */
    xpv_op_metrics *m = om_build1(p);
    int64_t occ = 0, self = 0;
    size_t nrows = 0;
    for (size_t i = 0; i < m->device.n; i++) {
        if (m->device.ops[i].is_idle) continue;
        nrows++;
        occ += m->device.ops[i].occurrences;
        self += m->device.ops[i].self_time_ps;
    }
    assert_int_equal(nrows, c.no);
    assert_int_equal(occ, c.occ);
    assert_int_equal(self, c.self_ps);
    assert_int_equal(m->device.total_op_time_ps, c.self_ps);
    assert_int_equal(m->device.total_time_ps, c.total_ps);
    assert_string_equal(m->device_type, "TPU");
    xpv_op_metrics_free(m);

    /* framework_op_stats: device rows (without idle) sum to the self time
     * and hold XProf's TF-level occurrences (max over a TF op's HLO ops). */
    json_t *j = dt_render_one(xpv_tool_find("framework_op_stats"), p);
    json_t *t = json_array_get(j, 1);
    double self_us = 0, tocc = 0;
    size_t ndev = 0;
    for (size_t r = 0; r < dt_nrows(t); r++) {
        if (strcmp(dt_cell_str(t, r, 1), "Device")) continue;
        ndev++;
        tocc += dt_cell_num(t, r, 4);
        self_us += dt_cell_num(t, r, 7);
    }
    assert_int_equal(ndev, c.ng);
    assert_true(dt_near(tocc, (double)tf_occ));
    double want_us = (double)c.self_ps / 1e6;
    assert_true(self_us > want_us * (1 - 1e-9) && self_us < want_us * (1 + 1e-9));
    json_decref(j);

    /* Overview: idle %, the top ops, the device type, the step diagnostic. */
    j = dt_render_one(xpv_tool_find("overview_page"), p);
    json_t *a = json_array_get(j, 0);
    char want[64];
    snprintf(want, sizeof want, "%.1f%%",
             100.0 * (1.0 - (double)c.self_ps / (double)c.total_ps));
    assert_string_equal(dt_pstr(a, "device_idle_time_percent"), want);
    size_t ntop = c.ng < 10 ? c.ng : 10;
    assert_int_equal(dt_nrows(a), ntop);
    double frac = 0;
    for (size_t r = 0; r < ntop; r++) frac += dt_cell_num(a, r, 0);
    assert_true(frac > 0 && frac <= 1.0 + 1e-9);
    /* XProf's device type: the first TensorCore plane's device_type_string
     * (the file's TPU planes say "TPU v6 Lite": a v6e, MANIFEST.md). */
    assert_string_equal(dt_pstr(json_array_get(j, 2), "device_type"), "TPU v6 Lite");
    assert_string_equal(dt_pstr(json_array_get(j, 3), "bottleneck"), "unknown");
    print_message("overview: idle %s, duty cycle %s, top op %s (%.4f)\n",
                  dt_pstr(a, "device_idle_time_percent"), dt_pstr(a, "device_duty_cycle_percent"),
                  dt_cell_str(a, 0, 3), dt_cell_num(a, 0, 0));
    json_decref(j);
    indep_free(&c);
    xpv_profile_free(p);
}

TU_MAIN(cmocka_unit_test(test_nesting_self_time_and_idle),
        cmocka_unit_test(test_op_lines_overlap_total),
        cmocka_unit_test(test_flops_times_occurrences),
        cmocka_unit_test(test_device_timespan_display_name_two_cores),
        cmocka_unit_test(test_duty_cycle_off_duty),
        cmocka_unit_test(test_extreme_device_stats),
        cmocka_unit_test(test_mxu_utilization_from_host_plane),
        cmocka_unit_test(test_tools_show_tpu_rows),
        cmocka_unit_test(test_real_tpu_file))
