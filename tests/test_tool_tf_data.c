/*
 * test_tool_tf_data.c - tf.data bottleneck analysis: iterator trees from
 * nesting and produce/consume links, per-call self time and blocking,
 * bottleneck and suggestion, pipeline stats, summary messages, multi-host
 * ordering, and every real profile converting.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "testutil.h"
#include "tool.h"
#include "tool_xspace.h"

#define US 1000000LL /* ps per us */

static tx_event_t *iter(tx_space *s, int pl, int ln, const char *name, int64_t t_us,
                        int64_t d_us, int64_t id, int64_t parent) {
    tx_event_t *e = tx_event(s, pl, ln, name, t_us * US, d_us * US);
    tx_ev_int(s, pl, e, "id", id);
    if (parent) tx_ev_int(s, pl, e, "parent_id", parent);
    return e;
}

static void pc(tx_space *s, int pl, int ln, const char *name, int64_t t_us, int64_t d_us,
               int64_t element) {
    tx_event_t *e = tx_event(s, pl, ln, name, t_us * US, d_us * US);
    tx_ev_int(s, pl, e, "element_id", element);
}

/*
 * Host pipeline 1 (Iterator::Prefetch, id 1), call A at [0,100] us:
 *   line 1: Iterator::Prefetch [0,100] > PrefetchConsume(elem 5) [10,90]
 *   line 2: PrefetchProduce(elem 5) [0,95] > Iterator::Prefetch::Map (id 2,
 *           parent 1) [5,85] > Iterator::Prefetch::Map::TFRecord (id 3) [10,30]
 *   line 3: PrefetchProduce(elem 5) [120,195] > Iterator::Prefetch::Shuffle
 *           (id 4, parent 1) [120,190]  (no overlap with the call: not blocking)
 *   Prefetch self 100-80 = 20, Map self 80-20 = 60, TFRecord 20, Shuffle 70.
 *   Bottleneck: Map (largest blocking self time; Shuffle is larger but not
 *   blocking).
 * Call B of the same pipeline: Iterator::Prefetch [200,210] alone.
 * Host pipeline 2: Iterator::Range (id 9) [300,301].
 * Device pipeline: Iterator::Prefetch (id 20) [400,420] with
 *   Iterator::Prefetch::Generator (id 21, parent 20) [402,418].
 */
static xpv_profile *build_profile(int fast_only) {
    int pl, l1;
    tx_space *s = tx_new_line("/host:CPU", 1, "main", &pl, &l1);
    int l2 = tx_line(s, pl, 2, "tf_data_prefetch", 0);
    int l3 = tx_line(s, pl, 3, "tf_data_prefetch2", 0);
    if (!fast_only) {
        iter(s, pl, l1, "Iterator::Prefetch", 0, 100, 1, 0);
        pc(s, pl, l1, "PrefetchConsume", 10, 80, 5);
        iter(s, pl, l1, "Iterator::Prefetch", 200, 10, 1, 0);
        iter(s, pl, l1, "Iterator::Range", 300, 1, 9, 0);
        iter(s, pl, l1, "Iterator::Prefetch", 400, 20, 20, 0);
        iter(s, pl, l1, "Iterator::Prefetch::Generator", 402, 16, 21, 20);
        pc(s, pl, l2, "PrefetchProduce", 0, 95, 5);
        iter(s, pl, l2, "Iterator::Prefetch::Map", 5, 80, 2, 1);
        iter(s, pl, l2, "Iterator::Prefetch::Map::TFRecord", 10, 20, 3, 2);
        pc(s, pl, l3, "PrefetchProduce", 120, 75, 5);
        iter(s, pl, l3, "Iterator::Prefetch::Shuffle", 120, 70, 4, 1);
    } else {
        iter(s, pl, l1, "Iterator::Batch", 0, 30, 7, 0);
        iter(s, pl, l1, "Iterator::Batch::TensorSlice", 1, 20, 8, 7);
    }
    /* Unrelated events. */
    tx_event(s, pl, l1, "train_step", 0, 500 * US);
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    return p;
}

static json_t *run(const xpv_profile *const *ps, const char *const *hn, size_t n) {
    xpv_hostset hs = {n, ps, hn};
    const xpv_tool *t = xpv_tool_find("tf_data_bottleneck_analysis");
    assert_non_null(t);
    assert_true(t->flags & XPV_TOOL_ALL_HOSTS_ONLY);
    xpv_err err = {0};
    xpv_buf out;
    xpv_buf_init(&out);
    assert_int_equal(xpv_tool_render(t, &hs, NULL, NULL, &out, &err), 0);
    json_error_t jerr;
    json_t *j = json_loadb(out.data, out.len, 0, &jerr);
    if (!j) fail_msg("invalid JSON: %s", jerr.text);
    xpv_buf_free(&out);
    assert_int_equal(json_array_size(j), 3);
    return j;
}

static json_t *cell(json_t *tab, size_t row, size_t col) {
    json_t *r = json_array_get(json_object_get(tab, "rows"), row);
    json_t *c = json_array_get(json_object_get(r, "c"), col);
    if (!c) fail_msg("no cell %zu,%zu", row, col);
    return c;
}

static const char *sv(json_t *tab, size_t row, size_t col) {
    return json_string_value(json_object_get(cell(tab, row, col), "v"));
}

static long long nv(json_t *tab, size_t row, size_t col) {
    return json_integer_value(json_object_get(cell(tab, row, col), "v"));
}

static void test_graph(void **state) {
    (void)state;
    xpv_profile *p = build_profile(0);
    const xpv_profile *ps[1] = {p};
    const char *hn[1] = {"worker0"};
    json_t *j = run(ps, hn, 1);
    json_t *g = json_array_get(j, 0);
    /* Host:0 call A (4 iterators), call B (1), Host:1 (1), Device:0 (2). */
    assert_int_equal(json_array_size(json_object_get(g, "rows")), 8);
    static const struct { const char *pipe; long long rank; const char *id, *parent; int type; }
        want[] = {
            {"Host:0", 0, "1", "", 1}, {"Host:0", 0, "2", "1", 2}, {"Host:0", 0, "3", "2", 1},
            {"Host:0", 0, "4", "1", 0}, {"Host:0", 1, "1", "", 2}, {"Host:1", 0, "9", "", 2},
            {"Device:0", 0, "20", "", 1}, {"Device:0", 0, "21", "20", 2},
        };
    for (size_t i = 0; i < 8; i++) {
        assert_string_equal(sv(g, i, 0), "worker0");
        assert_string_equal(sv(g, i, 1), want[i].pipe);
        assert_int_equal(nv(g, i, 2), want[i].rank);
        assert_string_equal(sv(g, i, 3), want[i].id);
        assert_string_equal(sv(g, i, 4), want[i].parent);
        assert_int_equal(nv(g, i, 5), want[i].type);
    }
    /* The Map node: card and numbers. */
    json_t *map = cell(g, 1, 3);
    const char *f = json_string_value(json_object_get(map, "f"));
    assert_non_null(strstr(f, "<b>Map</b>"));
    assert_non_null(strstr(f, "Start Time: 5 us<br/>Total Duration: 80 us<br/>"
                              "Self Duration: 60 us<br/># Calls: 1"));
    json_t *mp = json_object_get(map, "p");
    assert_string_equal(json_string_value(json_object_get(mp, "long_name")),
                        "Iterator::Prefetch::Map");
    assert_string_equal(json_string_value(json_object_get(mp, "self_time_us")), "60.000");
    /* Prefetch self = 100 - 80 (Map overlap) - 0 (Shuffle, no overlap). */
    json_t *pre = json_object_get(cell(g, 0, 3), "p");
    assert_string_equal(json_string_value(json_object_get(pre, "self_time_us")), "20.000");
    json_t *shuf = json_object_get(cell(g, 3, 3), "p");
    assert_string_equal(json_string_value(json_object_get(shuf, "self_time_us")), "70.000");
    json_decref(j);
    xpv_profile_free(p);
}

static void test_summary_and_bottleneck(void **state) {
    (void)state;
    xpv_profile *p = build_profile(0);
    const xpv_profile *ps[1] = {p};
    const char *hn[1] = {"worker0"};
    json_t *j = run(ps, hn, 1);
    json_t *s = json_array_get(j, 1);
    assert_int_equal(json_array_size(json_object_get(s, "rows")), 3);
    assert_string_equal(sv(s, 0, 1), "Host:0");
    assert_int_equal(nv(s, 0, 2), 10);   /* min */
    assert_int_equal(nv(s, 0, 3), 55);   /* mean */
    assert_int_equal(nv(s, 0, 4), 100);  /* max */
    assert_int_equal(nv(s, 0, 5), 2);    /* calls */
    assert_int_equal(nv(s, 0, 6), 1);    /* slow (> 50 us) */
    assert_string_equal(sv(s, 1, 1), "Host:1");
    assert_string_equal(sv(s, 2, 1), "Device:0");

    json_t *b = json_array_get(j, 2);
    /* Device pipelines are excluded; sorted by max latency. */
    assert_int_equal(json_array_size(json_object_get(b, "rows")), 2);
    assert_string_equal(sv(b, 0, 1), "Host:0");
    assert_int_equal(nv(b, 0, 2), 100);
    assert_string_equal(sv(b, 0, 3), "<u>Iterator Type</u>: <b>Map</b><br/><u>Long Name</u>: "
                                     "Iterator::Prefetch::Map<br/><u>Latency</u>: 60 us");
    assert_non_null(strstr(sv(b, 0, 4), "1. Parallelize this transformation"));
    assert_string_equal(sv(b, 1, 1), "Host:1");
    assert_non_null(strstr(sv(b, 1, 3), "<b>Range</b>"));
    assert_non_null(strstr(sv(b, 1, 4), "for suggestions."));
    json_t *bp = json_object_get(b, "p");
    assert_string_equal(json_string_value(json_object_get(bp, "is_input_bound")), "true");
    assert_non_null(strstr(json_string_value(json_object_get(bp, "summary_message")),
                           "has a tf.data input pipeline slower than 50 us"));
    json_decref(j);
    xpv_profile_free(p);
}

static void test_fast_and_empty(void **state) {
    (void)state;
    xpv_profile *p = build_profile(1);
    const xpv_profile *ps[1] = {p};
    const char *hn[1] = {"w"};
    json_t *j = run(ps, hn, 1);
    json_t *b = json_array_get(j, 2);
    json_t *bp = json_object_get(b, "p");
    assert_string_equal(json_string_value(json_object_get(bp, "is_input_bound")), "false");
    assert_non_null(strstr(json_string_value(json_object_get(bp, "summary_message")),
                           "does not have any tf.data input pipeline slower"));
    /* Batch self 10, TensorSlice 20 -> TensorSlice is a slow source. */
    assert_non_null(strstr(sv(b, 0, 3), "<b>TensorSlice</b>"));
    assert_non_null(strstr(sv(b, 0, 4), "Parallelize reading from this dataset source"));
    const xpv_tool *t = xpv_tool_find("tf_data_bottleneck_analysis");
    assert_true(t->available(p));
    json_decref(j);
    xpv_profile_free(p);

    int pl, ln;
    tx_space *s = tx_new_line("/host:CPU", 1, "main", &pl, &ln);
    tx_event(s, pl, ln, "a:B", 0, 10);
    p = tx_decode(s);
    ps[0] = p;
    j = run(ps, hn, 1);
    for (int i = 0; i < 3; i++)
        assert_int_equal(json_array_size(json_object_get(json_array_get(j, i), "rows")), 0);
    bp = json_object_get(json_array_get(j, 2), "p");
    assert_non_null(strstr(json_string_value(json_object_get(bp, "summary_message")),
                           "No tf.data activity captured"));
    assert_false(t->available(p));
    json_decref(j);
    xpv_profile_free(p);
}

/* Two hosts: tables cover both, bottlenecks ordered by latency then host. */
static void test_multi_host(void **state) {
    (void)state;
    xpv_profile *p = build_profile(0);
    xpv_profile *q = build_profile(1);
    const xpv_profile *ps[2] = {p, q};
    const char *hn[2] = {"a", "b"};
    json_t *j = run(ps, hn, 2);
    json_t *b = json_array_get(j, 2);
    assert_int_equal(json_array_size(json_object_get(b, "rows")), 3);
    assert_string_equal(sv(b, 0, 0), "a");
    assert_int_equal(nv(b, 0, 2), 100);
    assert_string_equal(sv(b, 1, 0), "b");
    assert_int_equal(nv(b, 1, 2), 30);
    assert_string_equal(sv(b, 2, 0), "a");
    assert_int_equal(nv(b, 2, 2), 1);
    json_t *s = json_array_get(j, 1);
    assert_int_equal(json_array_size(json_object_get(s, "rows")), 4);
    assert_string_equal(sv(s, 3, 0), "b");
    json_decref(j);
    xpv_profile_free(p);
    xpv_profile_free(q);
}

/* Every graph row belongs to a pipeline of the summary table, and each
 * pipeline's call count matches its graph ranks. */
static void check_real_file(const char *path, xpv_profile *p, void *ctx) {
    (void)path;
    int *with_pipelines = ctx;
    const xpv_profile *ps[1] = {p};
    const char *hn[1] = {"h"};
    json_t *j = run(ps, hn, 1);
    json_t *g = json_array_get(j, 0), *s = json_array_get(j, 1);
    size_t nsum = json_array_size(json_object_get(s, "rows"));
    if (nsum) (*with_pipelines)++;
    for (size_t r = 0; r < json_array_size(json_object_get(g, "rows")); r++) {
        const char *pipe = sv(g, r, 1);
        int found = 0;
        for (size_t k = 0; k < nsum; k++)
            if (!strcmp(sv(s, k, 1), pipe)) {
                found = 1;
                assert_true(nv(g, r, 2) < nv(s, k, 5));
            }
        assert_true(found);
    }
    json_decref(j);
}

static void test_real_files(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    int with_pipelines = 0;
    tx_each_real_profile(1, check_real_file, &with_pipelines);
    print_message("tf_data: %d real profiles with input pipelines\n", with_pipelines);
    assert_true(with_pipelines > 0);
}

TU_MAIN(cmocka_unit_test(test_graph),
        cmocka_unit_test(test_summary_and_bottleneck),
        cmocka_unit_test(test_fast_and_empty),
        cmocka_unit_test(test_multi_host),
        cmocka_unit_test(test_real_files))
