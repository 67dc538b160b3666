/*
 * test_tool_trace_viewer.c - the trace viewer's JSON: Chrome trace-event
 * shape (what Perfetto / chrome://tracing need), XProf's pid/tid mapping,
 * names and args, dropped internal events and stats, flows, counters,
 * exact timestamps, streaming responses, event details, search, and the
 * event count on real profiles from ../shared (skipped when absent), and
 * the full trace streamed in small chunks = the one-shot render.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "synth.h"
#include "testutil.h"
#include "tool.h"
#include "tool_xspace.h"
#include "derived_count.h"
#include "derived_count_hlo.h"
#include "trace_index.h"

#define NS 1000LL
#define US 1000000LL

static void set_display_name(tx_space *s, int pl, const char *name, const char *display) {
    tx_plane_t *p = s->space.planes[pl];
    for (size_t i = 0; i < p->n_event_metadata; i++)
        if (!strcmp(p->event_metadata[i]->value->name, name))
            p->event_metadata[i]->value->display_name = tx_strdup(s, display);
}

/* A small TF-GPU-like profile with every feature the converter handles. */
static xpv_profile *profile(void) {
    int h, t;
    tx_space *s = tx_new_line("/host:CPU", 42, "python", &h, &t);
    tx_event_t *e = tx_event(s, h, t, "train", 0, 100 * US);
    tx_ev_int(s, h, e, "_r", 1);                 /* internal: dropped */
    tx_ev_int(s, h, e, "step_num", 3);
    tx_ev_str(s, h, e, "step_name", "train 3");  /* replaces the name */
    tx_ev_int(s, h, e, "group_id", 3);
    e = tx_event(s, h, t, "dense/MatMul:MatMul", 1234567, 10 * US);  /* ts 1.234567 us */
    tx_ev_ref(s, h, e, "tf_op", "dense/MatMul:MatMul");
    tx_ev_int(s, h, e, "flops", 99);             /* internal: dropped */
    tx_ev_int(s, h, e, "big", (int64_t)1 << 60);  /* > 2^53: quoted */
    e = tx_event(s, h, t, "cuLaunchKernel", 2 * US, 3 * US);
    tx_ev_int(s, h, e, "correlation_id", 77);
    tx_event(s, h, t, "MemoryAllocation", 20 * US, 1 * US);           /* dropped */
    tx_event(s, h, t, "PrefetchConsume", 30 * US, 1 * US);            /* dropped */
    e = tx_event(s, h, t, "flowy", 40 * US, 1 * US);
    /* flow: id 5, direction out (2), category 9 (gpu_launch) */
    {
        tx_stat_t *st = tx_new_stat(s, h, &e->n_stats, &e->stats, "flow");
        st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE;
        st->uint64_value = (5ULL << 2) | 2 | (9ULL << 58);
    }
    tx_event(s, h, t, "zero", 50 * US, 0);        /* dur becomes 1 ps */
    int t2 = tx_line(s, h, 43, "empty", 0);       /* no events: skipped */
    (void)t2;
    int t3 = tx_line(s, h, 44, "counters_hidden", 0);
    tx_event(s, h, t3, "x", 0, 10);
    int g = tx_plane(s, "/device:GPU:0");
    s->space.planes[g]->id = 0;
    int st7 = tx_line(s, g, 7, "Stream #7(Kernel)", 0);
    e = tx_event(s, h == 0 ? g : g, st7, "sgemm_kernel_with_a_long_name", 6 * US, 4 * US);
    tx_ev_int(s, g, e, "correlation_id", 77);
    tx_ev_ref(s, g, e, "kernel_details", "regs:32 grid:1,1,1 block:64,1,1");
    set_display_name(s, g, "sgemm_kernel_with_a_long_name", "sgemm");
    int c = tx_line(s, g, 0, "_counters_", 0);
    e = tx_event(s, g, c, "HBM", 1 * US, 0);
    tx_ev_int(s, g, e, "value", 1024);
    e = tx_event(s, g, c, "HBM", 9 * US, 0);
    tx_ev_int(s, g, e, "value", 2048);
    int te = tx_plane(s, "Task Environment");     /* not shown */
    tx_plane_int(s, te, "profile_start_time", 1);
    int m = tx_plane(s, "/host:metadata");        /* not shown */
    int ml = tx_line(s, m, 1, "meta", 0);
    tx_event(s, m, ml, "nope", 0, 1);
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    return p;
}

typedef struct out {
    xpv_buf buf;
    json_t *j;
} out;

static int run_tool(const xpv_profile *const *ps, size_t n, const char *const *kv, size_t nkv,
                    out *o, xpv_err *err) {
    const char *hn[2] = {"hostA", "hostB"};
    xpv_hostset hs = {n, ps, hn};
    const xpv_tool *t = xpv_tool_find("trace_viewer@");
    assert_ptr_equal(t, xpv_tool_find("trace_viewer"));
    assert_string_equal(t->name, "trace_viewer");
    const char *keys[16], *vals[16];
    for (size_t i = 0; i < nkv; i++) {
        keys[i] = kv[2 * i];
        vals[i] = kv[2 * i + 1];
    }
    xpv_params q = {nkv, keys, vals, NULL};
    q.tag = xpv_param(&q, "tag");   /* as the server's request parser */
    void *d = t->derived->build(&hs, err);
    assert_non_null(d);
    assert_true(t->derived->size(d) > 0);
    xpv_buf_init(&o->buf);
    memset(err, 0, sizeof *err);
    int rc = t->render(&hs, d, &q, &o->buf, err);
    t->derived->free(d);
    o->j = NULL;
    if (rc == 0) {
        json_error_t jerr;
        o->j = json_loadb(o->buf.data, o->buf.len, 0, &jerr);
        if (!o->j) print_message("bad JSON: %s at %d\n", jerr.text, jerr.position);
        assert_non_null(o->j);
    }
    return rc;
}

static void out_free(out *o) {
    json_decref(o->j);
    xpv_buf_free(&o->buf);
}

static json_t *events(const out *o) {
    json_t *a = json_object_get(o->j, "traceEvents");
    assert_true(json_is_array(a));
    return a;
}

/* The full trace of one profile into `o`; its traceEvents. */
static json_t *full_trace(const xpv_profile *p, out *o) {
    const xpv_profile *ps[1] = {p};
    xpv_err err;
    const char *kv[] = {"tag", "trace_viewer"};
    assert_int_equal(run_tool(ps, 1, kv, 1, o, &err), 0);
    return events(o);
}

/* Checks every event has the fields Perfetto / catapult need for its ph. */
static void check_shape(json_t *evs, size_t *nx, size_t *nc, size_t *nm) {
    size_t i;
    json_t *e;
    *nx = *nc = *nm = 0;
    json_array_foreach(evs, i, e) {
        assert_true(json_is_object(e));
        const char *ph = json_string_value(json_object_get(e, "ph"));
        assert_non_null(ph);
        assert_true(json_is_integer(json_object_get(e, "pid")));
        assert_true(json_is_string(json_object_get(e, "name")));
        if (!strcmp(ph, "X")) {
            (*nx)++;
            assert_true(json_is_integer(json_object_get(e, "tid")));
            assert_true(json_is_number(json_object_get(e, "ts")));
            assert_true(json_is_number(json_object_get(e, "dur")));
            assert_true(json_number_value(json_object_get(e, "dur")) > 0);
            assert_true(json_is_object(json_object_get(e, "args")));
            json_t *bid = json_object_get(e, "bind_id");
            if (bid) {
                json_t *cat = json_object_get(e, "cat"); /* none: generic */
                assert_true(!cat || (json_is_string(cat) && json_string_length(cat) > 0));
                assert_true(json_is_true(json_object_get(e, "flow_in")) ||
                            json_is_true(json_object_get(e, "flow_out")));
            }
        } else if (!strcmp(ph, "C") && json_object_get(e, "entries")) {
            /* the streaming answer: XProf's grouped form, one event per
             * run of samples of one counter, [ts, value...] each */
            json_t *en = json_object_get(e, "entries"), *x;
            size_t j;
            assert_true(json_is_array(en) && json_array_size(en) > 0);
            assert_true(json_is_string(json_object_get(e, "event_stats")));
            assert_null(json_object_get(e, "ts"));
            json_array_foreach(en, j, x) {
                assert_true(json_is_array(x) && json_array_size(x) >= 2);
                for (size_t k = 0; k < json_array_size(x); k++)
                    assert_true(json_is_number(json_array_get(x, k)));
                (*nc)++;
            }
        } else if (!strcmp(ph, "C")) {
            (*nc)++;
            assert_true(json_is_number(json_object_get(e, "ts")));
            json_t *args = json_object_get(e, "args");
            assert_true(json_is_object(args) && json_object_size(args) > 0);
            const char *k;
            json_t *v;
            json_object_foreach(args, k, v) assert_true(json_is_number(v));
        } else if (!strcmp(ph, "b") || !strcmp(ph, "e")) {
            /* async (XProf's AddAsyncEvent): no tid, no dur; an id and a
             * category to pair "b" with "e" */
            assert_null(json_object_get(e, "tid"));
            assert_null(json_object_get(e, "dur"));
            assert_true(json_is_number(json_object_get(e, "ts")));
            assert_true(json_is_integer(json_object_get(e, "id")));
            assert_true(json_is_string(json_object_get(e, "cat")));
        } else {
            assert_string_equal(ph, "M");
            (*nm)++;
            assert_true(json_is_object(json_object_get(e, "args")));
        }
    }
}

static size_t count_ph(json_t *evs, const char *ph) {
    size_t i, n = 0;
    json_t *e;
    json_array_foreach(evs, i, e) n += !strcmp(json_string_value(json_object_get(e, "ph")), ph);
    return n;
}

static json_t *find_event(json_t *evs, const char *ph, const char *name) {
    size_t i;
    json_t *e;
    json_array_foreach(evs, i, e) {
        if (!strcmp(json_string_value(json_object_get(e, "ph")), ph) &&
            !strcmp(json_string_value(json_object_get(e, "name")), name))
            return e;
    }
    return NULL;
}

static void test_full_trace(void **state) {
    (void)state;
    xpv_profile *p = profile();
    const xpv_profile *ps[1] = {p};
    const char *kv[] = {"tag", "trace_viewer"};
    out o;
    xpv_err err;
    assert_int_equal(run_tool(ps, 1, kv, 1, &o, &err), 0);
    assert_string_equal(json_string_value(json_object_get(o.j, "displayTimeUnit")), "ns");
    assert_true(json_is_true(json_object_get(json_object_get(o.j, "metadata"), "highres-ticks")));
    json_t *evs = events(&o);
    size_t nx, nc, nm;
    check_shape(evs, &nx, &nc, &nm);
    /* 7 host events - 2 internal = 5 (+0 from counters_hidden) + 1 kernel */
    assert_int_equal(nx, 6);
    assert_int_equal(nc, 2);
    /* process_name+sort for 701 and 1; thread_name+sort for 42 and 7 */
    assert_int_equal(nm, 8);
    json_t *pn = find_event(evs, "M", "process_name");
    assert_int_equal(json_integer_value(json_object_get(pn, "pid")), 1);   /* ascending pid */
    assert_string_equal(json_string_value(json_object_get(json_object_get(pn, "args"), "name")),
                        "/device:GPU:0");

    /* Step name replaces the name; internal stats dropped; group_id kept. */
    json_t *step = find_event(evs, "X", "train 3");
    assert_non_null(step);
    json_t *args = json_object_get(step, "args");
    assert_null(json_object_get(args, "_r"));
    assert_int_equal(json_integer_value(json_object_get(args, "step_num")), 3);
    assert_int_equal(json_integer_value(json_object_get(args, "group_id")), 3);
    assert_int_equal(json_integer_value(json_object_get(step, "pid")), 701);
    assert_int_equal(json_integer_value(json_object_get(step, "tid")), 42);

    json_t *mm = find_event(evs, "X", "dense/MatMul:MatMul");
    args = json_object_get(mm, "args");
    assert_null(json_object_get(args, "flops"));
    assert_string_equal(json_string_value(json_object_get(args, "tf_op")), "dense/MatMul:MatMul");
    assert_string_equal(json_string_value(json_object_get(args, "big")), "1152921504606846976");
    /* exact timestamps in the text */
    assert_non_null(strstr(o.buf.data, "\"ts\":1.234567,\"dur\":10.000,"));
    assert_non_null(strstr(o.buf.data, "\"name\":\"zero\""));
    assert_non_null(strstr(o.buf.data, "\"ts\":50.000,\"dur\":0.000001,"));

    /* Display name shown, full name in long_name. */
    json_t *k = find_event(evs, "X", "sgemm");
    assert_non_null(k);
    assert_string_equal(json_string_value(json_object_get(json_object_get(k, "args"), "long_name")),
                        "sgemm_kernel_with_a_long_name");
    assert_int_equal(json_integer_value(json_object_get(k, "pid")), 1);
    assert_int_equal(json_integer_value(json_object_get(k, "tid")), 7);

    /* Flows: launch -> kernel by correlation id; `flow` stat decoded. */
    json_t *l = find_event(evs, "X", "cuLaunchKernel");
    assert_true(json_is_true(json_object_get(l, "flow_out")));
    assert_true(json_is_true(json_object_get(k, "flow_in")));
    assert_true(json_equal(json_object_get(l, "bind_id"), json_object_get(k, "bind_id")));
    json_t *fl = find_event(evs, "X", "flowy");
    assert_int_equal(json_integer_value(json_object_get(fl, "bind_id")), 5);
    assert_string_equal(json_string_value(json_object_get(fl, "cat")), "gpu_launch");
    assert_true(json_is_true(json_object_get(fl, "flow_out")));
    assert_null(json_object_get(json_object_get(fl, "args"), "flow"));

    /* Counters */
    json_t *c = find_event(evs, "C", "HBM");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(c, "args"), "value")), 1024);

    /* Internal events are gone. */
    assert_null(find_event(evs, "X", "MemoryAllocation"));
    assert_null(find_event(evs, "X", "PrefetchConsume"));
    assert_null(find_event(evs, "X", "nope"));
    assert_null(find_event(evs, "X", "x"));
    out_free(&o);
    xpv_profile_free(p);
}

static void test_multi_host(void **state) {
    (void)state;
    xpv_profile *a = profile(), *b = profile();
    const xpv_profile *ps[2] = {a, b};
    const char *kv[] = {"tag", "trace_viewer"};
    out o;
    xpv_err err;
    assert_int_equal(run_tool(ps, 2, kv, 1, &o, &err), 0);
    json_t *evs = events(&o);
    size_t nx, nc, nm;
    check_shape(evs, &nx, &nc, &nm);
    assert_int_equal(nx, 12);
    /* pids remapped: host index 1 -> +1000, 2 -> +2000 */
    int seen[4] = {0, 0, 0, 0};
    size_t i;
    json_t *e;
    json_array_foreach(evs, i, e) {
        json_int_t pid = json_integer_value(json_object_get(e, "pid"));
        seen[0] |= pid == 1001;
        seen[1] |= pid == 1701;
        seen[2] |= pid == 2001;
        seen[3] |= pid == 2701;
    }
    assert_true(seen[0] && seen[1] && seen[2] && seen[3]);
    assert_non_null(strstr(o.buf.data, "\"hostB /host:CPU\""));
    out_free(&o);
    xpv_profile_free(a);
    xpv_profile_free(b);
}

static void test_streaming_details_search(void **state) {
    (void)state;
    xpv_profile *p = profile();
    const xpv_profile *ps[1] = {p};
    out o;
    xpv_err err;
    /* whole trace, finest resolution: 0 (once "every event", unbounded) is
     * clamped to 65536 pixels, so the level of detail applies, and these
     * events are all longer than a 65536th of the trace */
    const char *kv[] = {"tag", "trace_viewer@", "resolution", "0"};
    assert_int_equal(run_tool(ps, 1, kv, 2, &o, &err), 0);
    json_t *span = json_object_get(o.j, "fullTimespan");
    assert_true(json_is_array(span) && json_array_size(span) == 2);
    assert_true(json_number_value(json_array_get(span, 0)) == 0.0);
    assert_true(json_number_value(json_array_get(span, 1)) == 0.1);  /* 100 us */
    assert_true(json_is_true(json_object_get(o.j, "filteredByVisibility")));
    /* XProf's tail: the two HBM counter samples, no cap message */
    assert_int_equal(json_integer_value(json_object_get(o.j, "totalCounterEvents")), 2);
    /* ... as XProf groups them: one "C" event, both samples in entries */
    assert_int_equal(count_ph(events(&o), "C"), 1);
    json_t *hbm = find_event(events(&o), "C", "HBM");
    assert_string_equal(json_string_value(json_object_get(hbm, "event_stats")), "value");
    json_t *want = json_loads("[[1.000000,1024],[9.000000,2048]]", JSON_DECODE_ANY, NULL);
    if (!json_equal(json_object_get(hbm, "entries"), want)) {
        char *got = json_dumps(json_object_get(hbm, "entries"), 0);
        fail_msg("HBM entries %s", got);
    }
    json_decref(want);
    assert_string_equal(json_string_value(json_object_get(o.j, "showCounterMessage")), "");
    assert_int_equal(json_integer_value(json_object_get(o.j, "resolutionPs")),
                     (100000000 + 32768) / 65536);
    json_t *evs = events(&o);
    size_t nx, nc, nm;
    check_shape(evs, &nx, &nc, &nm);
    assert_int_equal(nx, 6);
    assert_int_equal(json_integer_value(json_object_get(o.j, "returnedEventsSize")), nx + nc);
    /* streaming events carry only uid (+group_id) */
    json_t *k = find_event(evs, "X", "sgemm");
    json_t *args = json_object_get(k, "args");
    assert_null(json_object_get(args, "long_name"));
    json_t *uid = json_object_get(args, "uid");
    assert_true(json_is_integer(uid));
    json_t *step = find_event(evs, "X", "train 3");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(step, "args"), "group_id")), 3);
    /* process names carry the host in streaming mode */
    assert_non_null(strstr(o.buf.data, "\"hostA /device:GPU:0\""));
    char uidbuf[32];
    snprintf(uidbuf, sizeof uidbuf, "%lld", (long long)json_integer_value(uid));
    out_free(&o);

    /* details of one event: all args */
    const char *kd[] = {"tag", "trace_viewer@", "unique_id", uidbuf};
    assert_int_equal(run_tool(ps, 1, kd, 2, &o, &err), 0);
    evs = events(&o);
    assert_int_equal(json_array_size(evs), 1);
    args = json_object_get(json_array_get(evs, 0), "args");
    assert_string_equal(json_string_value(json_object_get(args, "long_name")),
                        "sgemm_kernel_with_a_long_name");
    assert_string_equal(json_string_value(json_object_get(args, "kernel_details")),
                        "regs:32 grid:1,1,1 block:64,1,1");
    out_free(&o);

    /* unknown uid -> 404; bad params -> 400 */
    const char *kbad[] = {"tag", "trace_viewer@", "unique_id", "999999999999"};
    assert_int_equal(run_tool(ps, 1, kbad, 2, &o, &err), -1);
    assert_int_equal(err.status, 404);
    out_free(&o);
    const char *kbad2[] = {"tag", "trace_viewer@", "start_time_ms", "abc"};
    assert_int_equal(run_tool(ps, 1, kbad2, 2, &o, &err), -1);
    assert_int_equal(err.status, 400);
    out_free(&o);
    const char *kbad3[] = {"tag", "trace_viewer@", "resolution", "-5"};
    assert_int_equal(run_tool(ps, 1, kbad3, 2, &o, &err), -1);
    assert_int_equal(err.status, 400);
    out_free(&o);
    /* strict numbers: no hex, no overflow past 2^64, no exponent, no
     * spaces or signs; the parameter is named in the message */
    static const char *const strict_bad[][2] = {
        {"resolution", "18446744073709551616"}, {"resolution", "0x10"},
        {"resolution", "+5"}, {"resolution", " 5"}, {"start_time_ms", "1e3"},
        {"end_time_ms", "0x1p3"}, {"start_time_ms", "inf"}, {"end_time_ms", "1."},
        {"unique_id", "0x1"},
    };
    for (size_t i = 0; i < sizeof strict_bad / sizeof strict_bad[0]; i++) {
        const char *kb[] = {"tag", "trace_viewer@", strict_bad[i][0], strict_bad[i][1]};
        assert_int_equal(run_tool(ps, 1, kb, 2, &o, &err), -1);
        assert_int_equal(err.status, 400);
        assert_non_null(strstr(err.msg, strict_bad[i][0]));
        out_free(&o);
    }
    /* a huge resolution is clamped like 0, never unbounded */
    const char *khuge[] = {"tag", "trace_viewer@", "resolution", "18446744073709551615"};
    assert_int_equal(run_tool(ps, 1, khuge, 2, &o, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(o.j, "resolutionPs")),
                     (100000000 + 32768) / 65536);
    out_free(&o);

    /* a window: [5 us, 9 us] keeps the step (overlaps), the kernel, and
     * the counter sample before the window (1 us) plus the one at 9 us */
    const char *kw[] = {"tag", "trace_viewer@", "start_time_ms", "0.005", "end_time_ms", "0.009",
                        "resolution", "1000"};
    assert_int_equal(run_tool(ps, 1, kw, 4, &o, &err), 0);
    evs = events(&o);
    check_shape(evs, &nx, &nc, &nm);
    assert_non_null(find_event(evs, "X", "sgemm"));
    assert_non_null(find_event(evs, "X", "train 3"));
    assert_non_null(find_event(evs, "X", "dense/MatMul:MatMul"));
    assert_null(find_event(evs, "X", "cuLaunchKernel"));   /* ends at 5 us */
    assert_null(find_event(evs, "X", "flowy"));
    assert_int_equal(nc, 2);
    out_free(&o);

    /* search: case-insensitive prefix, time order, total */
    const char *ks[] = {"tag", "trace_viewer@", "search_prefix", "SG"};
    assert_int_equal(run_tool(ps, 1, ks, 2, &o, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(o.j, "totalMatches")), 1);
    evs = events(&o);
    assert_int_equal(json_array_size(evs), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(evs, 0), "name")), "sgemm");
    out_free(&o);
    const char *ks2[] = {"tag", "trace_viewer@", "search_prefix", "", "search_limit", "2"};
    assert_int_equal(run_tool(ps, 1, ks2, 3, &o, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(o.j, "totalMatches")), 0);
    out_free(&o);
    const char *ks3[] = {"tag", "trace_viewer@", "search_prefix", "t", "search_start_ms", "0.00001"};
    assert_int_equal(run_tool(ps, 1, ks3, 3, &o, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(o.j, "totalMatches")), 0); /* train at 0 */
    out_free(&o);
    /* search matches the shown name: "train" is shown as its step_name
     * "train 3", which "TRAIN 3" and "train " find */
    const char *ks4[] = {"tag", "trace_viewer@", "search_prefix", "TRAIN 3"};
    assert_int_equal(run_tool(ps, 1, ks4, 2, &o, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(o.j, "totalMatches")), 1);
    evs = events(&o);
    assert_string_equal(json_string_value(json_object_get(json_array_get(evs, 0), "name")), "train 3");
    out_free(&o);
    const char *ks5[] = {"tag", "trace_viewer@", "search_prefix", "train "};
    assert_int_equal(run_tool(ps, 1, ks5, 2, &o, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(o.j, "totalMatches")), 1);
    out_free(&o);
    xpv_profile_free(p);
}

/* The mode follows the tag the server parsed (xpv_params.tag): "@" (with
 * any '^' after it) is the windowed, streaming viewer, the plain name the
 * full trace, whatever pairs the query holds. */
static void test_mode_from_tag(void **state) {
    (void)state;
    xpv_profile *p = profile();
    const xpv_profile *ps[1] = {p};
    const char *hn[1] = {"hostA"};
    xpv_hostset hs = {1, ps, hn};
    const xpv_tool *t = xpv_tool_find("trace_viewer");
    xpv_err err;
    memset(&err, 0, sizeof err);
    void *d = t->derived->build(&hs, &err);
    assert_non_null(d);
    static const struct {
        const char *tag;
        int windowed;
    } cases[] = {{"trace_viewer@", 1}, {"trace_viewer@^", 1}, {"trace_viewer", 0},
                 {"trace_viewer^", 0}, {NULL, 0}};
    /* A stale "tag" pair is not looked at: the typed field decides. */
    const char *keys[1] = {"tag"}, *vals[1] = {"trace_viewer"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        xpv_params q = {1, keys, vals, cases[i].tag};
        assert_int_equal(t->stream->wants(&q), !cases[i].windowed);
        xpv_buf body;
        xpv_buf_init(&body);
        assert_int_equal(t->render(&hs, d, &q, &body, &err), 0);
        xpv_buf_putc(&body, '\0');
        assert_int_equal(strstr(body.data, "\"fullTimespan\"") != NULL, cases[i].windowed);
        xpv_buf_free(&body);
    }
    t->derived->free(d);
    xpv_profile_free(p);
}

/* A step renamed by its step_name stat is found by the shown name only:
 * metadata "Iteration" with step_name "sample_step 12" is not found by
 * "Iter"; an unrenamed "Iteration" event on the same line still is. */
static void test_search_step_name(void **state) {
    (void)state;
    int h, t;
    tx_space *s = tx_new_line("/host:CPU", 1, "main", &h, &t);
    tx_event_t *e = tx_event(s, h, t, "Iteration", 0, 10 * US);
    tx_ev_str(s, h, e, "step_name", "sample_step 12");
    e = tx_event(s, h, t, "Iteration", 20 * US, 10 * US);
    tx_ev_str(s, h, e, "step_name", "");           /* empty: name kept */
    e = tx_event(s, h, t, "Iteration", 40 * US, 10 * US);
    tx_ev_int(s, h, e, "step_num", 13);            /* no step_name */
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    const xpv_profile *ps[1] = {p};
    out o;
    xpv_err err;
    const char *k1[] = {"tag", "trace_viewer@", "search_prefix", "sample_st"};
    assert_int_equal(run_tool(ps, 1, k1, 2, &o, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(o.j, "totalMatches")), 1);
    json_t *evs = events(&o);
    assert_int_equal(json_array_size(evs), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(evs, 0), "name")),
                        "sample_step 12");
    out_free(&o);
    const char *k2[] = {"tag", "trace_viewer@", "search_prefix", "iter"};
    assert_int_equal(run_tool(ps, 1, k2, 2, &o, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(o.j, "totalMatches")), 2);
    evs = events(&o);
    assert_int_equal(json_array_size(evs), 2);
    for (size_t i = 0; i < 2; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(evs, i), "name")),
                            "Iteration");
    out_free(&o);
    xpv_profile_free(p);
}

/* search=TEXT: a case-insensitive substring of the shown name or of any
 * string arg (event stat, ref_value, metadata stat), not only a prefix. */
static void test_search_substring(void **state) {
    (void)state;
    int h, t;
    tx_space *s = tx_new_line("/host:CPU", 1, "main", &h, &t);
    tx_event(s, h, t, "void tensorflow::functor::FillPhiloxRandom<GPU>", 0, 10 * US);
    tx_event_t *e = tx_event(s, h, t, "MatMul", 20 * US, 10 * US);
    tx_ev_str(s, h, e, "long_name", "model/dense/philox_seed:MatMul");
    e = tx_event(s, h, t, "Conv2D", 40 * US, 10 * US);
    tx_ev_ref(s, h, e, "tf_op", "rng/PHILOX/op");
    tx_event(s, h, t, "Relu", 60 * US, 10 * US);
    tx_meta_str(s, h, "Relu", "kernel_details", "uses philox4x32");
    tx_event(s, h, t, "Unrelated", 80 * US, 10 * US);
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    const xpv_profile *ps[1] = {p};
    out o;
    xpv_err err;
    const char *k1[] = {"tag", "trace_viewer@", "search", "philox"};
    assert_int_equal(run_tool(ps, 1, k1, 2, &o, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(o.j, "totalMatches")), 4);
    json_t *evs = events(&o);
    assert_int_equal(json_array_size(evs), 4);
    static const char *const want[] = {"void tensorflow::functor::FillPhiloxRandom<GPU>",
                                       "MatMul", "Conv2D", "Relu"};
    for (size_t i = 0; i < 4; i++)   /* in time order */
        assert_string_equal(json_string_value(json_object_get(json_array_get(evs, i), "name")),
                            want[i]);
    out_free(&o);
    /* the prefix search still means a prefix */
    const char *k2[] = {"tag", "trace_viewer@", "search_prefix", "philox"};
    assert_int_equal(run_tool(ps, 1, k2, 2, &o, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(o.j, "totalMatches")), 0);
    out_free(&o);
    const char *k3[] = {"tag", "trace_viewer@", "search", ""};
    assert_int_equal(run_tool(ps, 1, k3, 2, &o, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(o.j, "totalMatches")), 0);
    out_free(&o);
    xpv_profile_free(p);
}

/* A JAX capture (no group ids in the file): the computed groups show as
 * `group_id` args, each train root under its group name "train N" (full
 * trace, streaming, details, search), its 15 kernels with its group. */
static void test_jax_computed_groups(void **state) {
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/device/jax_gpu_mlp.xplane.pb", getenv("XPV_SRC"));
    xpv_profile *p = tx_decode_file(path);
    const xpv_profile *ps[1] = {p};
    out o;
    xpv_err err;
    const char *k0[] = {"tag", "trace_viewer"};
    assert_int_equal(run_tool(ps, 1, k0, 1, &o, &err), 0);
    json_t *evs = events(&o);
    size_t i;
    json_t *e;
    int trains = 0, steps = 0, kernels[5] = {0}, graph_ops = 0;
    json_array_foreach(evs, i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        json_t *args = json_object_get(e, "args");
        json_t *gid = json_object_get(args, "group_id");
        int steps_row = json_integer_value(json_object_get(e, "tid")) == (json_int_t)(int32_t)0xdeadbeefu;
        if (name && steps_row && !strcmp(json_string_value(json_object_get(e, "ph")), "X")) {
            /* the GPU's derived Steps row: one event per group, shown by
             * its step_name; args group_id and step_name, no long_name */
            char want[32];
            snprintf(want, sizeof want, "train %d", steps);
            assert_string_equal(name, want);
            assert_int_equal(json_integer_value(gid), steps);
            assert_string_equal(json_string_value(json_object_get(args, "step_name")), want);
            assert_null(json_object_get(args, "long_name"));
            steps++;
            continue;
        }
        if (name && !strncmp(name, "train", 5)) {
            char want[32];
            snprintf(want, sizeof want, "train %d", trains);
            assert_string_equal(name, want);
            assert_int_equal(json_integer_value(gid), trains);
            assert_string_equal(json_string_value(json_object_get(args, "step_name")), want);
            trains++;
        }
        /* XLA Ops of the command buffer (CUDA graph 2): graph id and the
         * correlation id of its last kernel as args, no flow */
        if (json_integer_value(json_object_get(e, "pid")) == 1 &&
            json_object_get(args, "cuda_graph_id") && !json_object_get(args, "kernel_details")) {
            assert_int_equal(json_integer_value(json_object_get(args, "cuda_graph_id")), 2);
            assert_true(json_is_integer(json_object_get(args, "correlation_id")));
            assert_null(json_object_get(e, "bind_id"));
            graph_ops++;
        }
        /* the kernels */
        if (json_integer_value(json_object_get(e, "pid")) == 1 &&
            !strcmp(json_string_value(json_object_get(e, "ph")), "X") &&
            json_object_get(args, "correlation_id") && json_object_get(args, "kernel_details")) {
            assert_true(json_is_integer(gid));
            json_int_t g = json_integer_value(gid);
            assert_true(g >= 0 && g < 5);
            kernels[g]++;
        }
    }
    assert_int_equal(trains, 5);
    assert_int_equal(steps, 5);
    assert_int_equal(graph_ops, 5);   /* one command buffer per step */
    for (int g = 0; g < 5; g++) assert_int_equal(kernels[g], 15);
    out_free(&o);

    const char *k1[] = {"tag", "trace_viewer@", "resolution", "0"};
    assert_int_equal(run_tool(ps, 1, k1, 2, &o, &err), 0);
    evs = events(&o);
    trains = 0;
    json_array_foreach(evs, i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        if (!name || strncmp(name, "train", 5)) continue;
        /* (the host roots and the derived Steps events alike) */
        json_t *args = json_object_get(e, "args");
        assert_int_equal(json_integer_value(json_object_get(args, "group_id")), name[6] - '0');
        trains++;
    }
    assert_int_equal(trains, 10);   /* 5 host roots, 5 GPU Steps events */
    out_free(&o);

    const char *k2[] = {"tag", "trace_viewer@", "search_prefix", "train 3"};
    assert_int_equal(run_tool(ps, 1, k2, 2, &o, &err), 0);
    /* the host's root, and the GPU's derived Steps event of group 3 */
    assert_int_equal(json_integer_value(json_object_get(o.j, "totalMatches")), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(events(&o), 0), "name")),
                        "train 3");
    out_free(&o);
    xpv_profile_free(p);
}

static void test_empty_profile(void **state) {
    (void)state;
    tx_space *s = tx_new();
    tx_plane(s, "Task Environment");
    xpv_profile *p = tx_decode(s);
    const xpv_profile *ps[1] = {p};
    out o;
    xpv_err err;
    const char *kv[] = {"tag", "trace_viewer"};
    assert_int_equal(run_tool(ps, 1, kv, 1, &o, &err), 0);
    assert_int_equal(json_array_size(events(&o)), 0);
    out_free(&o);
    const char *ks[] = {"tag", "trace_viewer@"};
    assert_int_equal(run_tool(ps, 1, ks, 1, &o, &err), 0);
    assert_int_equal(json_array_size(events(&o)), 0);
    out_free(&o);
    xpv_profile_free(p);
}

/* ---- async events (XProf's AddAsyncEvent) ------------------------------ */

static void async_ev(tx_space *s, int pl, int ln, const char *name, int64_t off, int64_t dur,
                     uint64_t flow, int with_a) {
    tx_event_t *e = tx_event(s, pl, ln, name, off, dur);
    if (with_a) tx_ev_int(s, pl, e, "_a", 1);
    tx_ev_int(s, pl, e, "group_id", 4);
    tx_ev_str(s, pl, e, "extra", "x");
    if (flow) {
        tx_stat_t *st = tx_new_stat(s, pl, &e->n_stats, &e->stats, "flow");
        st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE;
        st->uint64_value = flow;
    }
}

/* Flow categories of complete events (trace_events_to_json.h WriteEvent):
 * the context type's name from GetContextTypeString ("PjRt", "tf_exec",
 * "gpu_launch"), none for generic, legacy and types past the last known
 * one (GetSafeContextType makes them generic). */
static void test_flow_categories(void **state) {
    (void)state;
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/host:CPU");
    int ln = tx_line(s, pl, 1, "t", 0);
    static const struct { const char *name; uint64_t cat; const char *want; } c[] = {
        {"generic", 0, NULL}, {"legacy", 1, NULL}, {"tf_exec", 2, "tf_exec"},
        {"batch", 4, "batch_sched"}, {"pjrt", 5, "PjRt"}, {"gpu", 9, "gpu_launch"},
        {"pathways", 13, "pathways_exec"}, {"unknown", 63, NULL},
    };
    size_t nc = sizeof c / sizeof c[0];
    for (size_t i = 0; i < nc; i++)
        async_ev(s, pl, ln, c[i].name, (int64_t)(2 * i) * US, US, ((20 + i) << 2) | 2 | (c[i].cat << 58), 0);
    xpv_profile *p = tx_decode(s);
    out o;
    json_t *evs = full_trace(p, &o);
    for (size_t i = 0; i < nc; i++) {
        json_t *e = find_event(evs, "X", c[i].name);
        assert_non_null(e);
        assert_int_equal(json_integer_value(json_object_get(e, "bind_id")), (json_int_t)(20 + i));
        json_t *cat = json_object_get(e, "cat");
        if (!c[i].want) assert_null(cat);
        else assert_string_equal(json_string_value(cat), c[i].want);
    }
    out_free(&o);
    xpv_profile_free(p);
}

/* On a TPU's `Async XLA Ops` line: `_a` with a flow in+out (id 7,
 * generic) gives "b" at its start and "e" at its end (args group_id only);
 * out (id 8, category 5 PjRt) a "b"; in (id 9) an "e" at its start;
 * `_a` without a flow, and a flow without `_a`, stay complete events.  No
 * tid, no dur; `_a` and `flow` are not args.  The streaming window writes
 * the same shapes with a uid; details answer a complete event. */
static void test_async_events(void **state) {
    (void)state;
    int pl, ln;
    tx_space *s = tx_new_line("/device:TPU:0", 4, "Async XLA Ops", &pl, &ln);
    async_ev(s, pl, ln, "copy-start", 1 * US, 5 * US, (7ULL << 2) | 3, 1);
    async_ev(s, pl, ln, "send", 2 * US, 1 * US, (8ULL << 2) | 2 | (5ULL << 58), 1);
    async_ev(s, pl, ln, "recv", 3 * US, 1 * US, (9ULL << 2) | 1, 1);
    async_ev(s, pl, ln, "plain_a", 4 * US, 1 * US, 0, 1);
    async_ev(s, pl, ln, "plain_flow", 7 * US, 1 * US, (10ULL << 2) | 3, 0);
    xpv_profile *p = tx_decode(s);
    const xpv_profile *ps[1] = {p};
    out o;
    xpv_err err;
    const char *kv[] = {"tag", "trace_viewer"};
    assert_int_equal(run_tool(ps, 1, kv, 1, &o, &err), 0);
    json_t *evs = events(&o);
    size_t nx, nc, nm;
    check_shape(evs, &nx, &nc, &nm);
    assert_int_equal(nx, 2);
    assert_int_equal(count_ph(evs, "b"), 2);
    assert_int_equal(count_ph(evs, "e"), 2);
    json_t *b = find_event(evs, "b", "copy-start"), *e = find_event(evs, "e", "copy-start");
    assert_non_null(b);
    assert_non_null(e);
    assert_int_equal(json_integer_value(json_object_get(b, "id")), 7);
    assert_int_equal(json_integer_value(json_object_get(e, "id")), 7);
    assert_string_equal(json_string_value(json_object_get(b, "cat")), "");
    assert_true(json_number_value(json_object_get(b, "ts")) == 1.0);
    assert_true(json_number_value(json_object_get(e, "ts")) == 6.0);
    json_t *ba = json_object_get(b, "args");
    assert_int_equal(json_integer_value(json_object_get(ba, "group_id")), 4);
    assert_string_equal(json_string_value(json_object_get(ba, "extra")), "x");
    assert_null(json_object_get(ba, "_a"));
    assert_null(json_object_get(ba, "flow"));
    json_t *ea = json_object_get(e, "args");
    assert_int_equal(json_object_size(ea), 1);
    assert_int_equal(json_integer_value(json_object_get(ea, "group_id")), 4);
    json_t *sb = find_event(evs, "b", "send");
    assert_string_equal(json_string_value(json_object_get(sb, "cat")), "PjRt");
    assert_null(find_event(evs, "e", "send"));
    json_t *re = find_event(evs, "e", "recv");
    assert_true(json_number_value(json_object_get(re, "ts")) == 3.0);
    assert_null(find_event(evs, "b", "recv"));
    assert_non_null(find_event(evs, "X", "plain_a"));
    json_t *pf = find_event(evs, "X", "plain_flow");
    assert_non_null(pf);
    assert_true(json_is_true(json_object_get(pf, "flow_in")));
    assert_null(json_object_get(pf, "cat")); /* a generic flow: no category */
    out_free(&o);

    const char *ks[] = {"tag", "trace_viewer@", "resolution", "0"};
    assert_int_equal(run_tool(ps, 1, ks, 2, &o, &err), 0);
    evs = events(&o);
    check_shape(evs, &nx, &nc, &nm);
    assert_int_equal(count_ph(evs, "b"), 2);
    assert_int_equal(count_ph(evs, "e"), 2);
    b = find_event(evs, "b", "copy-start");
    json_t *uid = json_object_get(json_object_get(b, "args"), "uid");
    assert_true(json_is_integer(uid));
    char ubuf[32];
    snprintf(ubuf, sizeof ubuf, "%lld", (long long)json_integer_value(uid));
    out_free(&o);
    const char *kd[] = {"tag", "trace_viewer@", "unique_id", ubuf};
    assert_int_equal(run_tool(ps, 1, kd, 2, &o, &err), 0);
    evs = events(&o);
    assert_non_null(find_event(evs, "X", "copy-start"));
    out_free(&o);
    xpv_profile_free(p);
}

/* ---- real profiles ----------------------------------------------------- */

/* Events of the planes/lines the trace viewer shows, minus internal ones,
 * counted directly from the model: complete events, counter samples, and
 * XProf's async events (an integer `_a` and a `flow` stat with direction
 * bits: "b" for out or in+out, "e" for in or in+out). */
static void expected_counts(const xpv_profile *p, size_t *nx, size_t *nsamples, size_t *nb,
                            size_t *ne) {
    int gpu = 0;
    *nx = *nsamples = *nb = *ne = 0;
    for (uint32_t i = 0; i < p->nplanes; i++) gpu |= xpv_str_has_prefix(p->planes[i].name, "/device:GPU:");
    for (uint32_t i = 0; i < p->nplanes; i++) {
        const xpv_plane *pl = &p->planes[i];
        if (!xpv_str_has_prefix(pl->name, "/host:CPU") &&
            !xpv_str_has_prefix(pl->name, gpu ? "/device:GPU:" : "/device:TPU:") &&
            !xpv_str_has_prefix(pl->name, "/device:CUSTOM:"))
            continue;
        for (uint32_t l = 0; l < pl->nlines; l++) {
            const xpv_line *ln = &pl->lines[l];
            if (xpv_str_has_prefix(ln->name, "counters_")) continue;
            int32_t sa = xpv_stat_id(pl, "_a"), sf = xpv_stat_id(pl, "flow");
            for (uint32_t k = 0; k < ln->nevents; k++) {
                const xpv_event *e = &ln->events[k];
                if (xpv_trace_is_internal(pl->event_meta[e->meta].name)) continue;
                xpv_stat a, fl;
                if (!xpv_str_eq(ln->name, "_counters_") && sa >= 0 && sf >= 0 &&
                    xpv_event_stat(pl, ln, e, sa, &a) &&
                    (a.kind == XPV_STAT_INT || a.kind == XPV_STAT_UINT) &&
                    xpv_event_stat(pl, ln, e, sf, &fl) &&
                    (fl.kind == XPV_STAT_INT || fl.kind == XPV_STAT_UINT) && (fl.v.u & 3)) {
                    if (fl.v.u & 2) (*nb)++;
                    if (fl.v.u & 1) (*ne)++;
                    continue;
                }
                if (xpv_str_eq(ln->name, "_counters_")) (*nsamples)++;
                else (*nx)++;
            }
        }
    }
}

/* bind_ids (as JSON text) of the events with flow_in / flow_out true. */
static size_t flow_ids(json_t *evs, const char *dir, char ***ids) {
    size_t n = 0, i;
    json_t *e;
    *ids = NULL;
    json_array_foreach(evs, i, e) {
        if (!json_is_true(json_object_get(e, dir))) continue;
        *ids = realloc(*ids, (n + 1) * sizeof **ids);
        (*ids)[n++] = json_dumps(json_object_get(e, "bind_id"), JSON_ENCODE_ANY);
    }
    return n;
}

static int has_id(char **ids, size_t n, const char *id) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(ids[i], id)) return 1;
    return 0;
}

static void free_ids(char **ids, size_t n) {
    for (size_t i = 0; i < n; i++) free(ids[i]);
    free(ids);
}

/* Flows in streaming responses: whenever a launching end (flow_out) is
 * visible and the other end lies in the window (it is in the resolution-0
 * response of that window), the other end is in the response too. */
static void check_flow_ends(const xpv_profile *const *ps, const char *s0, const char *s1,
                            size_t *launches) {
    static const char *const res[] = {"100", "590", "2000"};
    out o0, o;
    xpv_err err;
    const char *k0[] = {"tag", "trace_viewer@", "resolution", "0", "start_time_ms", s0,
                        "end_time_ms", s1};
    assert_int_equal(run_tool(ps, 1, k0, 4, &o0, &err), 0);
    char **all_in;
    size_t nall = flow_ids(events(&o0), "flow_in", &all_in);
    for (size_t r = 0; r < sizeof res / sizeof res[0]; r++) {
        const char *k[] = {"tag", "trace_viewer@", "resolution", res[r], "start_time_ms", s0,
                           "end_time_ms", s1};
        assert_int_equal(run_tool(ps, 1, k, 4, &o, &err), 0);
        char **outs, **ins;
        size_t no = flow_ids(events(&o), "flow_out", &outs);
        size_t ni = flow_ids(events(&o), "flow_in", &ins);
        for (size_t i = 0; i < no; i++) {
            if (!has_id(all_in, nall, outs[i])) continue;
            if (!has_id(ins, ni, outs[i]))
                print_message("resolution %s [%s, %s] ms: flow %s has no other end\n", res[r], s0, s1,
                              outs[i]);
            assert_true(has_id(ins, ni, outs[i]));
            (*launches)++;
        }
        free_ids(outs, no);
        free_ids(ins, ni);
        out_free(&o);
    }
    free_ids(all_in, nall);
    out_free(&o0);
}

static void check_real_profile(const char *path, xpv_profile *p, void *ctx) {
    (void)ctx;
    size_t want_x, want_c, want_b, want_e;
    expected_counts(p, &want_x, &want_c, &want_b, &want_e);
    size_t dmod, dops;
    dc_count(p, &dmod, &dops);
    want_x += dmod + dops; /* derived GPU rows (one XLA Ops level in these files) */
    size_t tops, tscopes, tsrc;
    dc_count_tpu(p, &tops, &tscopes, &tsrc);
    want_x += tops + tscopes + tsrc; /* derived TPU rows */
    want_x += dc_count_tpu_offload(p); /* TPU host offload rows */
    size_t hops, hsrc;
    dch_count(p, &hops, &hsrc);
    want_x += hops + hsrc; /* GPU Framework Ops and Source code from the HLO */
    const xpv_profile *ps[1] = {p};
    out o;
    xpv_err err;
    const char *kv[] = {"tag", "trace_viewer"};
    assert_int_equal(run_tool(ps, 1, kv, 1, &o, &err), 0);
    size_t nx, nc, nm;
    check_shape(events(&o), &nx, &nc, &nm);
    size_t nb = count_ph(events(&o), "b"), ne = count_ph(events(&o), "e");
    print_message("%s: %zu complete events (expected %zu), %zu counter samples of %zu, "
                  "async %zu b / %zu e (expected %zu / %zu), %zu bytes\n",
                  path, nx, want_x, nc, want_c, nb, ne, want_b, want_e, o.buf.len);
    assert_int_equal(nx, want_x);
    assert_int_equal(nb, want_b);
    assert_int_equal(ne, want_e);
    assert_true(nc <= want_c);
    assert_true(want_x > 0);
    out_free(&o);
    /* A streaming response at 1000 px stays small and well-formed. */
    const char *ks[] = {"tag", "trace_viewer@", "resolution", "1000"};
    assert_int_equal(run_tool(ps, 1, ks, 2, &o, &err), 0);
    check_shape(events(&o), &nx, &nc, &nm);
    assert_true(nx <= want_x);
    /* Flows keep both ends: the whole trace and its middle third. */
    json_t *span = json_object_get(o.j, "fullTimespan");
    double t0 = json_number_value(json_array_get(span, 0));
    double t1 = json_number_value(json_array_get(span, 1));
    char a0[64], a1[64], m0[64], m1[64];
    snprintf(a0, sizeof a0, "%.9f", t0);
    snprintf(a1, sizeof a1, "%.9f", t1);
    snprintf(m0, sizeof m0, "%.9f", t0 + (t1 - t0) / 3);
    snprintf(m1, sizeof m1, "%.9f", t0 + 2 * (t1 - t0) / 3);
    out_free(&o);
    size_t launches = 0;
    check_flow_ends(ps, a0, a1, &launches);
    check_flow_ends(ps, m0, m1, &launches);
    print_message("%s: %zu visible launches checked for their other end\n", path, launches);
}

static void test_real_profiles(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    int checked = tx_each_real_profile(1, check_real_profile, NULL);
    assert_true(checked >= 3);
}

/* ---- the full trace as a stream (xpv_tool_stream) ---------------------- */

/* The stream of the full trace, pulled `max` bytes at a time, writes the
 * very bytes of the one-shot render; every call but the last adds at least
 * `max` bytes, and once done further calls add nothing. */
static void check_stream_same(const xpv_profile *const *ps, size_t n, const size_t *maxes,
                              size_t nmax) {
    const char *hn[2] = {"hostA", "hostB"};
    xpv_hostset hs = {n, ps, hn};
    const xpv_tool *t = xpv_tool_find("trace_viewer");
    const char *keys[1] = {"tag"}, *vals[1] = {"trace_viewer"};
    xpv_params q = {1, keys, vals, "trace_viewer"};
    xpv_err err;
    memset(&err, 0, sizeof err);
    assert_non_null(t->stream);
    assert_true(t->stream->wants(&q));
    void *d = t->derived->build(&hs, &err);
    assert_non_null(d);
    xpv_buf whole, parts;
    xpv_buf_init(&whole);
    xpv_buf_init(&parts);
    assert_int_equal(t->render(&hs, d, &q, &whole, &err), 0);
    for (size_t m = 0; m < nmax; m++) {
        void *st = t->stream->open(&hs, d, &q, &err);
        assert_non_null(st);
        xpv_buf_reset(&parts);
        size_t calls = 0;
        for (;;) {
            size_t before = parts.len;
            int more = t->stream->next(st, &parts, maxes[m]);
            calls++;
            if (!more) break;
            assert_true(parts.len - before >= maxes[m]);
        }
        size_t end = parts.len;
        assert_int_equal(t->stream->next(st, &parts, maxes[m]), 0);
        assert_int_equal(parts.len, end);
        t->stream->free(st);
        if (parts.len != whole.len || memcmp(parts.data, whole.data, whole.len) != 0)
            fail_msg("chunks of %zu: %zu bytes in %zu calls, one-shot %zu bytes", maxes[m],
                     parts.len, calls, whole.len);
        if (maxes[m] == 1) assert_true(calls > 2);
    }
    xpv_buf_free(&whole);
    xpv_buf_free(&parts);
    t->derived->free(d);
}

static void check_real_stream(const char *path, xpv_profile *p, void *ctx) {
    (void)path;
    (void)ctx;
    static const size_t real_maxes[] = {1, 4096, 1 << 20};
    const xpv_profile *ps[1] = {p};
    check_stream_same(ps, 1, real_maxes, 3);
}

static void test_stream_chunks(void **state) {
    (void)state;
    static const size_t maxes[] = {1, 7, 300, 1 << 20, 0};
    xpv_profile *a = profile(), *b = profile();
    const xpv_profile *one[1] = {a}, *two[2] = {a, b};
    check_stream_same(one, 1, maxes, 5);
    check_stream_same(two, 2, maxes, 5);
    xpv_profile_free(a);
    xpv_profile_free(b);

    /* A synthetic profile (what `xpview synth` writes). */
    xpv_synth_opts o;
    memset(&o, 0, sizeof o);
    o.size_bytes = 300000;
    o.steps = 3;
    xpv_synth_defaults(&o);
    xpv_profile *s = tu_synth_profile(&o, 0);
    const xpv_profile *syn[1] = {s};
    check_stream_same(syn, 1, maxes, 5);
    xpv_profile_free(s);

    /* Real xplanes, when ../shared is there. */
    if (!tu_shared_dir()) {
        print_message("SKIP: ../shared/testdata not present; real-file stream checks skipped\n");
        return;
    }
    int checked = tx_each_real_profile(1, check_real_stream, NULL);
    print_message("%d real files streamed in chunks\n", checked);
    assert_true(checked >= 3);
}

/* Issue 10: a line with no name field (NULL name) is an empty string, and
 * lines in descending id order are ordered by one sort: 10x the lines take
 * ~10x the ordering work (the index's step counter, never a timing). */
static uint64_t desc_lines_work(uint32_t nlines, int check_names) {
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/host:CPU");
    for (uint32_t i = 0; i < nlines; i++) {
        int l = tx_line(s, pl, (int64_t)(nlines - i), "t", 0);
        s->space.planes[pl]->lines[l]->name = NULL;   /* no name field */
        tx_event(s, pl, l, "e", 1000 * (int64_t)i, 10);
    }
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    const xpv_profile *ps[1] = {p};
    const char *hn[1] = {"h"};
    xpv_hostset hs = {1, ps, hn};
    xpv_trace_index *ix = xpv_trace_index_build(&hs);
    assert_non_null(ix);
    assert_int_equal(ix->nrows, nlines);
    for (uint32_t i = 0; i < ix->nrows; i++) {
        assert_int_equal(ix->rows[i].tid, (int64_t)i + 1);  /* ascending */
        if (check_names) assert_string_equal(ix->rows[i].name, "");
    }
    uint64_t w = ix->build_work;
    xpv_trace_index_free(ix);
    xpv_profile_free(p);
    return w;
}

static void test_desc_lines_no_name(void **state) {
    (void)state;
    uint64_t w1 = desc_lines_work(5000, 1), w2 = desc_lines_work(50000, 0);
    print_message("work: 5k lines %llu, 50k lines %llu\n", (unsigned long long)w1,
                  (unsigned long long)w2);
    assert_true(w2 >= 9 * w1);
    assert_true(w2 <= 14 * w1);
}

TU_MAIN(cmocka_unit_test(test_desc_lines_no_name),
        cmocka_unit_test(test_stream_chunks),
        cmocka_unit_test(test_full_trace),
        cmocka_unit_test(test_multi_host),
        cmocka_unit_test(test_streaming_details_search),
        cmocka_unit_test(test_mode_from_tag),
        cmocka_unit_test(test_search_step_name),
        cmocka_unit_test(test_search_substring),
        cmocka_unit_test(test_empty_profile),
        cmocka_unit_test(test_jax_computed_groups),
        cmocka_unit_test(test_async_events),
        cmocka_unit_test(test_flow_categories),
        cmocka_unit_test(test_real_profiles))
