/*
 * test_tool_kernel_stats.c - GPU kernel stats DataTable: grouping, ns
 * arithmetic, availability, and a real TF GPU profile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "datatable_json.h"
#include "testutil.h"
#include "op_metrics.h"
#include "tool.h"
#include "tool_xspace.h"

#define US 1000000LL /* ps per us */

static xpv_profile *profile(void) {
    tx_space *s = tx_new();
    tx_plane(s, "/host:CPU");
    int g = tx_plane(s, "/device:GPU:0");
    int l = tx_line(s, g, 3, "Stream #3(Kernel)", 0);
    /* Three launches of one kernel: 1 us, 2.0015 us, 3 us -> whole ns. */
    int64_t durs[3] = {1 * US, 2 * US + 1500, 3 * US};
    for (int i = 0; i < 3; i++) {
        tx_event_t *e = tx_event(s, g, l, "sgemm_kernel", (int64_t)i * 10 * US, durs[i]);
        tx_ev_ref(s, g, e, "kernel_details",
                  "regs:40 static_shared:256 dynamic_shared:512 grid:4,2,1 block:64,1,1 "
                  "occ_pct:37.5");
        tx_ev_ref(s, g, e, "tf_op", "net/dense/MatMul:MatMul");
    }
    /* Same name, different grid: a second row. */
    tx_event_t *e = tx_event(s, g, l, "sgemm_kernel", 50 * US, 10 * US);
    tx_ev_ref(s, g, e, "kernel_details", "regs:40 grid:8,1,1 block:64,1,1");
    tx_ev_ref(s, g, e, "tf_op", "net/dense/MatMul:MatMul");
    /* A non-kernel (no kernel_details) and a zero-length kernel. */
    tx_event(s, g, l, "MemcpyD2H", 70 * US, 5 * US);
    e = tx_event(s, g, l, "empty_kernel", 80 * US, 999);
    tx_ev_ref(s, g, e, "kernel_details", "regs:1 grid:1,1,1 block:1,1,1");
    xpv_profile *p = tx_decode(s);
    assert_non_null(p);
    return p;
}

static json_t *render(const xpv_profile *const *ps, size_t n) {
    const char *hn[2] = {"a", "b"};
    xpv_hostset hs = {n, ps, hn};
    const xpv_tool *t = xpv_tool_find("kernel_stats");
    assert_non_null(t);
    assert_string_equal(t->name, "kernel_stats");
    return dt_render_hs(t, &hs);
}

static json_t *v(json_t *tab, size_t row, size_t col) {
    json_t *r = json_array_get(json_object_get(tab, "rows"), row);
    return json_object_get(json_array_get(json_object_get(r, "c"), col), "v");
}

static void test_table(void **state) {
    (void)state;
    xpv_profile *p = profile();
    const xpv_profile *ps[1] = {p};
    json_t *j = render(ps, 1);
    static const char *const ids[] = {
        "rank", "kernel_name", "registers_per_thread", "shmem_bytes", "block_dim",
        "grid_dim", "occupancy_pct", "is_op_tensor_core_eligible",
        "is_kernel_using_tensor_core", "op_name", "occurrences", "total_duration_us",
        "avg_duration_us", "min_duration_us", "max_duration_us",
    };
    json_t *cols = json_object_get(j, "cols");
    assert_int_equal(json_array_size(cols), 15);
    for (size_t i = 0; i < 15; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(cols, i), "id")),
                            ids[i]);
    assert_null(json_object_get(j, "p"));
    json_t *rows = json_object_get(j, "rows");
    assert_int_equal(json_array_size(rows), 2);
    /* Row 1: the 10 us launch (grid 8,1,1); row 2: the grouped three. */
    assert_string_equal(json_string_value(v(j, 0, 5)), "8,1,1");
    assert_true(json_real_value(v(j, 0, 11)) == 10.0 || json_integer_value(v(j, 0, 11)) == 10);
    assert_int_equal(json_number_value(v(j, 1, 0)), 2);
    assert_string_equal(json_string_value(v(j, 1, 1)), "sgemm_kernel");
    assert_int_equal(json_number_value(v(j, 1, 2)), 40);
    assert_int_equal(json_number_value(v(j, 1, 3)), 768);
    assert_string_equal(json_string_value(v(j, 1, 4)), "64,1,1");
    assert_string_equal(json_string_value(v(j, 1, 5)), "4,2,1");
    assert_true(json_number_value(v(j, 1, 6)) == 37.5);
    assert_true(json_is_true(v(j, 1, 7)));  /* /MatMul is eligible */
    assert_true(json_is_false(v(j, 1, 8))); /* sgemm is not a TC kernel */
    assert_string_equal(json_string_value(v(j, 1, 9)), "net/dense/MatMul");
    assert_int_equal(json_number_value(v(j, 1, 10)), 3);
    /* 1000 + 2001 + 3000 ns = 6.001 us; avg 6001/3 = 2000 ns (integer). */
    assert_true(json_number_value(v(j, 1, 11)) == 6.001);
    assert_true(json_number_value(v(j, 1, 12)) == 2.0);
    assert_true(json_number_value(v(j, 1, 13)) == 1.0);
    assert_true(json_number_value(v(j, 1, 14)) == 3.0);
    json_decref(j);

    /* Two hosts: merged by key. */
    const xpv_profile *two[2] = {p, p};
    j = render(two, 2);
    assert_int_equal(json_array_size(json_object_get(j, "rows")), 2);
    assert_int_equal(json_number_value(v(j, 1, 10)), 6);
    json_decref(j);
    xpv_profile_free(p);
}

static void test_availability(void **state) {
    (void)state;
    const xpv_tool *t = xpv_tool_find("kernel_stats");
    assert_non_null(t);
    assert_string_equal(t->name, "kernel_stats");
    assert_non_null(t->available);
    xpv_profile *p = profile();
    assert_true(t->available(p));
    xpv_profile_free(p);
    tx_space *s = tx_new();
    tx_plane(s, "/host:CPU");
    p = tx_decode(s);
    assert_non_null(p);
    assert_false(t->available(p));
    /* Rendering a CPU-only profile still gives a valid empty table. */
    const xpv_profile *ps[1] = {p};
    json_t *j = render(ps, 1);
    assert_int_equal(json_array_size(json_object_get(j, "rows")), 0);
    assert_int_equal(json_array_size(json_object_get(j, "cols")), 15);
    json_decref(j);
    xpv_profile_free(p);
}

/* ==== Real files: kernels counted from the file, not by the code under test */

/* One group of kernel events: same name, kernel_details text and the
 * stats an op name and its TensorCore eligibility come from.  XProf's
 * grouping key is a function of these, so these groups split XProf's
 * groups, never merge two of them. */
typedef struct kgroup {
    uint64_t h;
    uint64_t occ, total_ns;
} kgroup;

static uint64_t fnv(uint64_t h, const char *p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
    return (h ^ 0xff) * 1099511628211ULL;
}

static int cmp_total_desc(const void *a, const void *b) {
    const kgroup *x = a, *y = b;
    return (x->total_ns < y->total_ns) - (x->total_ns > y->total_ns);
}

/* Kernel events as §2.9 defines them, read straight from the planes:
 * `/device:GPU:N` planes, lines outside the derived id range
 * [0xdeadbeef, 0xdeadbeef+289] (compared as int32), events with a non-empty
 * kernel_details stat (own or metadata's) and a whole-ns duration > 0. */
typedef struct kcount {
    uint64_t events, total_ns, top_ns; /* top_ns: the 1000 largest groups */
    size_t groups;
} kcount;

static void count_kernels(const xpv_profile *p, kcount *out) {
    memset(out, 0, sizeof *out);
    size_t cap = 1 << 16, n = 0;
    kgroup *g = calloc(cap, sizeof *g);
    for (uint32_t k = 0; k < p->nplanes; k++) {
        const xpv_plane *pl = &p->planes[k];
        if (!xpv_str_has_prefix(pl->name, "/device:GPU:")) continue;
        int32_t kd = xpv_stat_id(pl, "kernel_details");
        /* what an op name can come from: `tf_op` (`level 0` in TF 2.x GPU
         * captures), or for XLA kernels the HLO op, module, program and the
         * framework op `name`; `equation` decides TensorCore eligibility */
        static const char *const ann_names[] = {"tf_op", "level 0", "hlo_op", "hlo_module",
                                                "program_id", "name", "equation"};
        enum { NANN = sizeof ann_names / sizeof ann_names[0] };
        int32_t ann[NANN];
        for (int a = 0; a < NANN; a++) ann[a] = xpv_stat_id(pl, ann_names[a]);
        if (kd < 0) continue;
        for (uint32_t l = 0; l < pl->nlines; l++) {
            const xpv_line *ln = &pl->lines[l];
            int64_t rel = (int64_t)(int32_t)ln->id - (int64_t)(int32_t)0xdeadbeef;
            if (rel >= 0 && rel <= 289) continue;
            for (uint32_t e = 0; e < ln->nevents; e++) {
                const xpv_event *ev = &ln->events[e];
                xpv_stat st;
                if (!xpv_event_or_meta_stat(pl, ln, ev, kd, &st) || st.kind != XPV_STAT_STR ||
                    st.v.s.len == 0)
                    continue;
                uint64_t ns = ev->dur_ps > 0 ? (uint64_t)ev->dur_ps / 1000 : 0;
                if (ns == 0) continue;
                out->events++;
                out->total_ns += ns;
                xpv_str name = pl->event_meta[ev->meta].name;
                uint64_t h = fnv(1469598103934665603ULL, name.ptr, name.len);
                h = fnv(h, st.v.s.ptr, st.v.s.len);
                for (int a = 0; a < NANN; a++) {
                    int64_t iv;
                    if (ann[a] < 0 || !xpv_event_or_meta_stat(pl, ln, ev, ann[a], &st)) continue;
                    if (st.kind == XPV_STAT_STR) h = fnv(h, st.v.s.ptr, st.v.s.len);
                    else if (xpv_stat_as_int(&st, &iv)) h = fnv(h, (const char *)&iv, sizeof iv);
                    h = fnv(h, (const char *)&a, sizeof a);
                }
                size_t i = h & (cap - 1);
                while (g[i].occ && g[i].h != h) i = (i + 1) & (cap - 1);
                if (!g[i].occ) {
                    g[i].h = h;
                    assert_true(++n < cap / 2);
                }
                g[i].occ++;
                g[i].total_ns += ns;
            }
        }
    }
    qsort(g, cap, sizeof *g, cmp_total_desc);
    for (size_t i = 0; i < n && i < 1000; i++) out->top_ns += g[i].total_ns;
    out->groups = n;
    free(g);
}

/* Every real xplane: the table's occurrences and total time add up to the
 * kernel events counted from the file.  When the table is cut at 1000 rows
 * its total lies between the 1000 largest of our (finer) groups and the
 * total of all kernels. */
static void check_file(const char *path) {
    xpv_decode_error derr;
    xpv_profile *p = tx_try_decode_file(path, &derr);
    if (!p) return; /* the deliberately corrupt file */
    const xpv_profile *ps[1] = {p};
    json_t *j = render(ps, 1);
    size_t n = json_array_size(json_object_get(j, "rows"));
    kcount kc;
    count_kernels(p, &kc);
    uint64_t occ = 0;
    double total_us = 0, prev = 1e300;
    for (size_t i = 0; i < n; i++) {
        occ += (uint64_t)json_number_value(v(j, i, 10));
        double t = json_number_value(v(j, i, 11));
        assert_true(t <= prev);
        prev = t;
        total_us += t;
        assert_true(json_number_value(v(j, i, 13)) <= json_number_value(v(j, i, 14)));
    }
    print_message("%s: %zu kernel rows; file: %llu kernel events, %zu groups\n", path, n,
                  (unsigned long long)kc.events, kc.groups);
    assert_true(n <= 1000);
    assert_true(n <= kc.groups);
    double total_ns = total_us * 1000;
    if (n < 1000) { /* not cut: the table holds every kernel */
        assert_int_equal(occ, kc.events);
        assert_true(total_ns > (double)kc.total_ns - 1 && total_ns < (double)kc.total_ns + 1);
    } else {
        assert_true(occ <= kc.events);
        assert_true(total_ns > (double)kc.top_ns - 1 && total_ns < (double)kc.total_ns + 1);
    }
    json_decref(j);
    xpv_profile_free(p);
}

static void test_real_files(void **state) {
    (void)state;
    tu_each_real_file(".xplane.pb", check_file);
}

TU_MAIN(cmocka_unit_test(test_table),
        cmocka_unit_test(test_availability),
        cmocka_unit_test(test_real_files))
