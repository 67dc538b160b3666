/*
 * test_tool_trace_columns.c - the compact viewport answer (format=columns,
 * tools/trace_viewer.c) carries what the JSON viewport answer does: both
 * are decoded, the columns expanded back into "ph":"X" events as the JSON
 * answer writes them (ts/dur = ps / 1e6, args {group_id, uid}, flows as
 * bind_id/cat/flow_in/flow_out), and compared event for event, with the
 * other events (metadata, async, counter samples) and every other key of
 * the answer; on a synthetic profile with flows, step names, async events
 * and counters, the JAX GPU profile (computed groups), and the real
 * profiles of ../shared, at several windows, resolutions and budgets.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "synth.h"
#include "testutil.h"
#include "tool.h"
#include "tool_xspace.h"
#include "trace_index.h"

#define US 1000000LL

/* The answer of `tool` to the query `kv` (nkv pairs) over the index `d`. */
static json_t *answer(const xpv_tool *tool, const xpv_hostset *hs, const void *d,
                      const char *const *kv, size_t nkv, xpv_buf *raw) {
    const char *keys[8], *vals[8];
    for (size_t i = 0; i < nkv; i++) {
        keys[i] = kv[2 * i];
        vals[i] = kv[2 * i + 1];
    }
    xpv_params q = {nkv, keys, vals, "trace_viewer@"};
    xpv_err err;
    memset(&err, 0, sizeof err);
    xpv_buf_reset(raw);
    assert_int_equal(tool->render(hs, d, &q, raw, &err), 0);
    json_error_t jerr;
    json_t *j = json_loadb(raw->data, raw->len, 0, &jerr);
    if (!j) fail_msg("bad JSON: %s at %d", jerr.text, jerr.position);
    return j;
}

/* Column `key` of `c`, an array of `n` items. */
static json_t *column(json_t *c, const char *key, size_t n) {
    json_t *a = json_object_get(c, key);
    assert_true(json_is_array(a));
    assert_int_equal(json_array_size(a), n);
    return a;
}

/* A start from its whole µs and the ps past them, as lib/timeline.js
 * computes it: the JSON answer's µs to the bit below 2^53 ps, within a
 * unit of the last place past it. */
static double ts_of(int64_t us, int64_t ps) {
    double p = (double)us * 1e6 + (double)ps;
    return fabs(p) < 9007199254740992.0 ? p / 1e6 : (double)us + (double)ps / 1e6;
}

/* Whether two events are equal, their "ts" within a unit of the last
 * place (the start past 2^53 ps); `b`'s ts is set to `a`'s when so. */
static int same_event(json_t *a, json_t *b) {
    double ta = json_real_value(json_object_get(a, "ts"));
    double tb = json_real_value(json_object_get(b, "ts"));
    if (ta != tb && fabs(ta - tb) <= 2.3e-16 * fabs(ta)) json_object_set_new(b, "ts", json_real(ta));
    return json_equal(a, b);
}

/* The complete events of the columns, as the JSON answer writes them. */
static json_t *expand_columns(json_t *c) {
    json_t *rows = json_object_get(c, "rows"), *names = json_object_get(c, "names");
    json_t *flows = json_object_get(c, "flows");
    size_t n = json_array_size(json_object_get(c, "ts_us"));
    json_t *row = column(c, "row", n), *ev = column(c, "ev", n), *tus = column(c, "ts_us", n);
    json_t *tps = column(c, "ts_ps", n), *dur = column(c, "dur", n), *name = column(c, "name", n);
    json_t *grp = column(c, "group", n);
    json_t *out = json_array();
    int64_t us = 0;
    size_t fi = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(rows, (size_t)json_integer_value(json_array_get(row, i)));
        assert_true(json_is_array(r) && json_array_size(r) == 3);
        us += json_integer_value(json_array_get(tus, i));
        json_int_t ps = json_integer_value(json_array_get(tps, i));
        assert_true(ps >= 0 && ps < 1000000);
        json_t *e = json_object();
        json_object_set(e, "pid", json_array_get(r, 1));
        json_object_set(e, "tid", json_array_get(r, 2));
        json_object_set_new(e, "ts", json_real(ts_of(us, ps)));
        json_object_set_new(e, "dur", json_real((double)json_integer_value(json_array_get(dur, i)) / 1e6));
        json_object_set_new(e, "ph", json_string("X"));
        json_t *nm = json_array_get(names, (size_t)json_integer_value(json_array_get(name, i)));
        assert_true(json_is_string(nm));
        json_object_set(e, "name", nm);
        json_t *f = json_array_get(flows, fi);
        if (f && (size_t)json_integer_value(json_array_get(f, 0)) == i) {
            json_int_t dir = json_integer_value(json_array_get(f, 3));
            json_object_set(e, "bind_id", json_array_get(f, 1));
            if (json_string_length(json_array_get(f, 2))) json_object_set(e, "cat", json_array_get(f, 2));
            if (dir & 1) json_object_set_new(e, "flow_in", json_true());
            if (dir & 2) json_object_set_new(e, "flow_out", json_true());
            fi++;
        }
        json_t *args = json_object();
        json_t *g = json_array_get(grp, i);
        if (!json_is_null(g)) json_object_set(args, "group_id", g);
        json_int_t uid = json_integer_value(json_array_get(r, 0)) * ((json_int_t)1 << 32) +
                         json_integer_value(json_array_get(ev, i));
        json_object_set_new(args, "uid", json_integer(uid));
        json_object_set_new(e, "args", args);
        json_array_append_new(out, e);
    }
    assert_int_equal(fi, json_array_size(flows));   /* every flow used, in order */
    return out;
}

/* The events of `evs` split: complete ones into `x`, counter samples (one
 * [pid, name, entry] each, grouped form unrolled) into `c`, the rest into
 * `other`. */
static void split_events(json_t *evs, json_t *x, json_t *c, json_t *other) {
    size_t i, k;
    json_t *e, *en;
    json_array_foreach(evs, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (!strcmp(ph, "X")) {
            json_array_append(x, e);
        } else if (!strcmp(ph, "C")) {
            json_array_foreach(json_object_get(e, "entries"), k, en)
                json_array_append_new(c, json_pack("[OOO]", json_object_get(e, "pid"),
                                                   json_object_get(e, "name"), en));
        } else {
            json_array_append(other, e);
        }
    }
}

/* The JSON and the columns answers of one query carry the same. */
static size_t check_same(const xpv_tool *tool, const xpv_hostset *hs, const void *d,
                         const char *const *kv, size_t nkv) {
    const char *kc[16];
    memcpy(kc, kv, 2 * nkv * sizeof *kv);
    kc[2 * nkv] = "format";
    kc[2 * nkv + 1] = "columns";
    xpv_buf raw;
    xpv_buf_init(&raw);
    json_t *j = answer(tool, hs, d, kv, nkv, &raw);
    json_t *c = answer(tool, hs, d, kc, nkv + 1, &raw);
    json_t *cols = json_object_get(c, "columns");
    assert_non_null(cols);
    assert_null(json_object_get(j, "columns"));
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v) {
        if (!strcmp(key, "traceEvents")) continue;
        if (!json_equal(v, json_object_get(c, key))) fail_msg("key %s differs", key);
    }
    assert_int_equal(json_object_size(c), json_object_size(j) + 1);
    json_t *jx = json_array(), *jc = json_array(), *jo = json_array();
    json_t *cx = json_array(), *cc = json_array(), *co = json_array();
    split_events(json_object_get(j, "traceEvents"), jx, jc, jo);
    split_events(json_object_get(c, "traceEvents"), cx, cc, co);
    assert_int_equal(json_array_size(cx), 0);
    json_t *ex = expand_columns(cols);
    assert_int_equal(json_array_size(ex), json_array_size(jx));
    for (size_t i = 0; i < json_array_size(jx); i++)
        if (!same_event(json_array_get(jx, i), json_array_get(ex, i))) {
            char *a = json_dumps(json_array_get(jx, i), JSON_SORT_KEYS);
            char *b = json_dumps(json_array_get(ex, i), JSON_SORT_KEYS);
            fail_msg("event %zu: JSON %s, columns %s", i, a, b);
        }
    assert_true(json_equal(jc, cc));
    assert_true(json_equal(jo, co));
    size_t n = json_array_size(jx);
    json_t *all[] = {j, c, jx, jc, jo, cx, cc, co, ex};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) json_decref(all[i]);
    xpv_buf_free(&raw);
    return n;
}

/* Several windows, resolutions and budgets over the profiles `ps`, and
 * [w0, w1] ms at every event when w0 is not NULL; returns the complete
 * events compared. */
static size_t check_window(const xpv_profile *const *ps, size_t np, const char *w0,
                           const char *w1) {
    const char *hn[2] = {"hostA", "hostB"};
    xpv_hostset hs = {np, ps, hn};
    const xpv_tool *tool = xpv_tool_find("trace_viewer");
    xpv_err err;
    memset(&err, 0, sizeof err);
    void *d = tool->derived->build(&hs, &err);
    assert_non_null(d);
    const xpv_trace_index *ix = d;
    char a[64], b[64];
    snprintf(a, sizeof a, "%.6f", (double)(ix->min_ps + (ix->max_ps - ix->min_ps) / 3) / 1e9);
    snprintf(b, sizeof b, "%.6f", (double)(ix->min_ps + 2 * (ix->max_ps - ix->min_ps) / 3) / 1e9);
    const char *q[][8] = {
        {"resolution", "1000"},
        {"resolution", "0"},
        {"resolution", "300", "start_time_ms", a, "end_time_ms", b},
        {"resolution", "1000", "max_events", "40"},
        {"resolution", "0", "max_events", "7", "start_time_ms", a},
    };
    const size_t nq[] = {1, 1, 3, 2, 3};
    size_t n = 0;
    for (size_t i = 0; i < sizeof nq / sizeof nq[0]; i++) n += check_same(tool, &hs, d, q[i], nq[i]);
    const char *qw[] = {"resolution", "0", "start_time_ms", w0, "end_time_ms", w1};
    if (w0) n += check_same(tool, &hs, d, qw, 3);
    tool->derived->free(d);
    return n;
}

static void flow_stat(tx_space *s, int pl, tx_event_t *e, uint64_t v) {
    tx_stat_t *st = tx_new_stat(s, pl, &e->n_stats, &e->stats, "flow");
    st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE;
    st->uint64_value = v;
}

static size_t check_profiles(const xpv_profile *const *ps, size_t np) {
    return check_window(ps, np, NULL, NULL);
}

/* Step names, group ids, flows (categories, a generic one, an id past
 * 2^53, correlation ids), an async event, counters, a zero duration, a
 * name to escape, a second host. */
static xpv_profile *profile(void) {
    int h, t;
    tx_space *s = tx_new_line("/host:CPU", 42, "python", &h, &t);
    tx_event_t *e = tx_event(s, h, t, "train", 0, 100 * US);
    tx_ev_str(s, h, e, "step_name", "train \"3\"");
    tx_ev_int(s, h, e, "group_id", 3);
    e = tx_event(s, h, t, "cuLaunchKernel", 2 * US, 3 * US);
    tx_ev_int(s, h, e, "correlation_id", 77);
    flow_stat(s, h, tx_event(s, h, t, "flowy", 40 * US, 1 * US), (5ULL << 2) | 2 | (9ULL << 58));
    flow_stat(s, h, tx_event(s, h, t, "generic", 41 * US, 1 * US), (6ULL << 2) | 1);
    flow_stat(s, h, tx_event(s, h, t, "big id", 42 * US, 1 * US), (((1ULL << 55) + 3) << 2) | 3);
    tx_event(s, h, t, "zero", 50 * US, 0);
    for (int i = 0; i < 30; i++) tx_event(s, h, t, i % 2 ? "tiny" : "t\xc3\xa9", 60 * US + i * 10, 3);
    int g = tx_plane(s, "/device:GPU:0");
    s->space.planes[g]->id = 0;
    int st7 = tx_line(s, g, 7, "Stream #7(Kernel)", 0);
    e = tx_event(s, g, st7, "sgemm", 6 * US, 4 * US);
    tx_ev_int(s, g, e, "correlation_id", 77);
    int c = tx_line(s, g, 0, "_counters_", 0);
    for (int i = 0; i < 5; i++) {
        e = tx_event(s, g, c, i % 2 ? "HBM" : "SRAM", (1 + i) * US, 0);
        tx_ev_int(s, g, e, "value", 1024 * i);
    }
    int tp = tx_plane(s, "/device:TPU:0");
    int al = tx_line(s, tp, 4, "Async XLA Ops", 0);
    e = tx_event(s, tp, al, "copy-start", 1 * US, 5 * US);
    tx_ev_int(s, tp, e, "_a", 1);
    flow_stat(s, tp, e, (7ULL << 2) | 3);
    tx_event(s, tp, al, "plain", 8 * US, 1 * US);
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    return p;
}

static void test_synthetic(void **state) {
    (void)state;
    xpv_profile *a = profile(), *b = profile();
    const xpv_profile *ps[2] = {a, b};
    size_t n1 = check_profiles(ps, 1), n2 = check_profiles(ps, 2);
    print_message("one host: %zu complete events compared, two hosts: %zu\n", n1, n2);
    assert_true(n1 > 20 && n2 > n1);
    xpv_profile_free(a);
    xpv_profile_free(b);
}

/* Starts past 2^53 ps (2.5 hours; the grown TPU profile spans 30):
 * every number of the columns stays exact, the starts within a unit of
 * the last place of the JSON answer's; and a negative start. */
static void test_late_starts(void **state) {
    (void)state;
    int h, t;
    tx_space *s = tx_new_line("/host:CPU", 1, "t", &h, &t);
    int64_t late = 30LL * 3600 * 1000000 * US;          /* 30 h in ps */
    for (int i = 0; i < 40; i++) {
        tx_event(s, h, t, i % 3 ? "a" : "b", late + i * 1234567LL, 1000 + i);
        tx_event(s, h, t, "early", i * 7LL * US + 3, 5);
    }
    tx_event(s, h, t, "negative", -5 * US - 7, 2 * US);
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    const xpv_profile *ps[1] = {p};
    /* the whole trace, and the late events at every ps */
    size_t n = check_window(ps, 1, "108000000", "108000001");
    print_message("%zu complete events compared\n", n);
    assert_true(n > 40);
    xpv_profile_free(p);
}

static void test_jax_groups(void **state) {
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/device/jax_gpu_mlp.xplane.pb", getenv("XPV_SRC"));
    xpv_profile *p = tx_decode_file(path);
    const xpv_profile *ps[1] = {p};
    assert_true(check_profiles(ps, 1) > 0);
    xpv_profile_free(p);
}

static void check_real(const char *path, xpv_profile *p, void *ctx) {
    const xpv_profile *ps[1] = {p};
    size_t n = check_profiles(ps, 1);
    print_message("%s: %zu complete events compared\n", path, n);
    *(size_t *)ctx += n;
}

static void test_real_profiles(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    size_t n = 0;
    assert_true(tx_each_real_profile(1, check_real, &n) >= 3);
    assert_true(n > 0);
}

/* Only `format=columns` (or none) is accepted. */
static void test_bad_format(void **state) {
    (void)state;
    xpv_profile *p = profile();
    const xpv_profile *ps[1] = {p};
    const char *hn[1] = {"h"};
    xpv_hostset hs = {1, ps, hn};
    const xpv_tool *tool = xpv_tool_find("trace_viewer");
    xpv_err err;
    memset(&err, 0, sizeof err);
    void *d = tool->derived->build(&hs, &err);
    const char *keys[1] = {"format"}, *vals[1] = {"dot"};
    xpv_params q = {1, keys, vals, "trace_viewer@"};
    xpv_buf out;
    xpv_buf_init(&out);
    assert_int_equal(tool->render(&hs, d, &q, &out, &err), -1);
    assert_int_equal(err.status, XPV_E_BAD_REQUEST);
    xpv_buf_free(&out);
    tool->derived->free(d);
    xpv_profile_free(p);
}

TU_MAIN(cmocka_unit_test(test_synthetic),
        cmocka_unit_test(test_late_starts),
        cmocka_unit_test(test_jax_groups),
        cmocka_unit_test(test_bad_format),
        cmocka_unit_test(test_real_profiles))
