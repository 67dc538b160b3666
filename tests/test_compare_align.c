/*
 * test_compare_align.c - the compare layer: alignment by key (sums of equal
 * keys, added / removed rows, change and relative change, order by
 * absolute change), the outputs, a profile against itself in every kind
 * (all deltas 0), more steps = more time, the generic DataTable extractor
 * agreeing with the typed one, and two different real JAX runs (rows added
 * and removed).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "loader.h"
#include "opstats.h"
#include "synth.h"
#include "testutil.h"
#include "xplane.h"

static xpv_profile *synth_profile(int steps) {
    xpv_synth_opts o;
    memset(&o, 0, sizeof o);
    o.steps = steps;
    o.size_bytes = 300 * 1024;
    xpv_synth_defaults(&o);
    return tu_synth_profile(&o, 0);
}

static void free_profile(xpv_profile *p) { xpv_profile_free(p); }

/* Compare two profiles in `tool`, building the OpStats as the server. */
static xpv_compare *compare(const char *tool, const xpv_profile *base, const xpv_profile *cur) {
    const xpv_compare_kind *k = xpv_compare_find(tool);
    assert_non_null(k);
    const char *names[1] = {"h"};
    const xpv_profile *pb[1] = {base}, *pn[1] = {cur};
    xpv_hostset hb = {1, pb, names}, hn = {1, pn, names};
    const xpv_tool *t = xpv_tool_find(tool);
    void *db = NULL, *dn = NULL;
    xpv_err err;
    xpv_err_clear(&err);
    if (t->derived) {
        db = t->derived->build(&hb, &err);
        dn = t->derived->build(&hn, &err);
        assert_non_null(db);
        assert_non_null(dn);
    }
    xpv_compare *c = xpv_compare_build(k, &hb, db, &hn, dn, &err);
    assert_non_null(c);
    if (t->derived) {
        t->derived->free(db);
        t->derived->free(dn);
    }
    return c;
}

static const xpv_compare_kind test_kind = {
    "test", "us", "sum", {"dev", "type"}, {"self", "count"}, NULL, 0, NULL, 0,
};

static void add(xpv_cmp_side *s, const char *dev, const char *type, const char *name,
                double v, double count) {
    xpv_cmp_row *r = xpv_cmp_side_add(s, name);
    r->labels[0] = xpv_cmp_side_str(s, dev);
    r->labels[1] = xpv_cmp_side_str(s, type);
    r->v[0] = v;
    r->v[1] = count;
    s->total += v;
}

static void test_align(void **state) {
    (void)state;
    xpv_cmp_side b, n;
    xpv_cmp_side_init(&b);
    xpv_cmp_side_init(&n);
    add(&b, "Device", "MatMul", "mm", 100, 1);
    add(&b, "Device", "MatMul", "mm", 50, 1);     /* same key: summed */
    add(&b, "Host", "MatMul", "mm", 10, 1);       /* other label: other row */
    add(&b, "Device", "Conv", "gone", 30, 2);
    add(&n, "Device", "MatMul", "mm", 300, 4);
    add(&n, "Host", "MatMul", "mm", 10, 1);
    add(&n, "Device", "Relu", "new", 5, 1);
    xpv_compare *c = xpv_compare_sides(&test_kind, &b, &n);
    assert_int_equal(c->n, 4);
    assert_int_equal(c->added, 1);
    assert_int_equal(c->removed, 1);
    assert_int_equal(c->common, 2);
    /* Order: |delta| 150, 30, 5, 0. */
    assert_string_equal(c->pairs[0].cur->name, "mm");
    assert_string_equal(c->pairs[0].cur->labels[0], "Device");
    assert_true(c->pairs[0].base_v == 150 && c->pairs[0].new_v == 300);
    assert_true(c->pairs[0].delta == 150 && c->pairs[0].delta_pct == 100);
    assert_true(c->pairs[0].base->v[1] == 2 && c->pairs[0].cur->v[1] == 4);
    assert_int_equal(c->pairs[1].status, XPV_CMP_REMOVED);
    assert_null(c->pairs[1].cur);
    assert_true(c->pairs[1].delta == -30 && c->pairs[1].delta_pct == -100);
    assert_int_equal(c->pairs[2].status, XPV_CMP_ADDED);
    assert_true(isnan(c->pairs[2].delta_pct));
    assert_true(c->pairs[3].delta == 0 && c->pairs[3].delta_pct == 0);
    assert_true(c->base_total == 190 && c->new_total == 315);
    const char *labels[2] = {"Host", NULL};
    const xpv_cmp_pair *p = xpv_compare_lookup(c, "mm", labels);
    assert_non_null(p);
    assert_true(p->base_v == 10);
    assert_true(xpv_compare_slower(c, 5));
    assert_false(xpv_compare_slower(c, 70));

    /* JSON: the summary, rows in order, added/removed, null pct. */
    xpv_buf out;
    xpv_buf_init(&out);
    xpv_compare_write_json(c, 0, &out);
    json_error_t je;
    json_t *j = json_loadb(out.data, out.len, 0, &je);
    assert_non_null(j);
    json_t *s = json_object_get(j, "summary");
    assert_true(json_number_value(json_object_get(s, "base_total_us")) == 190);
    assert_true(json_number_value(json_object_get(s, "new_total_us")) == 315);
    assert_int_equal(json_integer_value(json_object_get(s, "rows_added")), 1);
    json_t *rows = json_object_get(j, "rows");
    assert_int_equal(json_array_size(rows), 4);
    json_t *r0 = json_array_get(rows, 0);
    assert_string_equal(json_string_value(json_object_get(r0, "dev")), "Device");
    assert_true(json_number_value(json_object_get(r0, "base_count")) == 2);
    assert_true(json_number_value(json_object_get(r0, "delta_pct")) == 100);
    assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 1), "status")),
                        "removed");
    assert_true(json_is_null(json_object_get(json_array_get(rows, 2), "delta_pct")));
    json_decref(j);
    /* --top */
    xpv_buf_reset(&out);
    xpv_compare_write_json(c, 1, &out);
    j = json_loadb(out.data, out.len, 0, &je);
    assert_int_equal(json_array_size(json_object_get(j, "rows")), 1);
    json_decref(j);
    /* CSV: header + 4 lines; text names the rows. */
    xpv_buf_reset(&out);
    xpv_compare_write_csv(c, 0, &out);
    xpv_buf_putc(&out, '\0');
    assert_non_null(strstr(out.data, "name,dev,type,base_us,new_us,delta_us,delta_pct,status"));
    assert_non_null(strstr(out.data, "gone,Device,Conv,30,0,-30,-100,removed,us,2,0\r\n"));
    assert_non_null(strstr(out.data, "new,Device,Relu,0,5,5,,added"));
    xpv_buf_reset(&out);
    xpv_compare_write_text(c, 0, "a", "b", &out);
    xpv_buf_putc(&out, '\0');
    assert_non_null(strstr(out.data, "removed"));
    assert_non_null(strstr(out.data, "[Device] [MatMul] mm"));
    xpv_buf_free(&out);
    xpv_compare_free(c);
}

/* Empty sides and a zero base total. */
static void test_empty(void **state) {
    (void)state;
    xpv_cmp_side b, n;
    xpv_cmp_side_init(&b);
    xpv_cmp_side_init(&n);
    xpv_compare *c = xpv_compare_sides(&test_kind, &b, &n);
    assert_int_equal(c->n, 0);
    assert_true(c->delta_pct == 0);
    assert_false(xpv_compare_slower(c, 0));
    xpv_compare_free(c);
    xpv_cmp_side_init(&b);
    xpv_cmp_side_init(&n);
    add(&n, "d", "t", "x", 1, 1);
    c = xpv_compare_sides(&test_kind, &b, &n);
    assert_true(isnan(c->delta_pct));
    assert_true(xpv_compare_slower(c, 1000));
    xpv_compare_free(c);
}

/* A profile against itself: every delta 0 in every kind. */
static void test_self(void **state) {
    (void)state;
    xpv_profile *p = synth_profile(4);
    size_t kinds = 0;
    for (const xpv_compare_kind *const *k = xpv_compare_kinds(); *k; k++, kinds++) {
        xpv_compare *c = compare((*k)->tool, p, p);
        assert_true(c->n > 0);
        assert_int_equal(c->added, 0);
        assert_int_equal(c->removed, 0);
        assert_true(c->delta_pct == 0);
        assert_true(c->base_total > 0);
        for (size_t i = 0; i < c->n; i++) {
            assert_true(c->pairs[i].delta == 0);
            assert_true(c->pairs[i].delta_pct == 0);
        }
        xpv_compare_free(c);
    }
    assert_true(kinds >= 4);
    assert_non_null(xpv_compare_find("tensorflow_stats"));   /* by alias */
    assert_null(xpv_compare_find("trace_viewer"));
    free_profile(p);
}

/* Twice the steps (same file size): the op and kernel totals grow, the overview's
 * step series has both runs' steps. */
static void test_more_steps(void **state) {
    (void)state;
    xpv_profile *a = synth_profile(4), *b = synth_profile(8);
    const char *tools[] = {"framework_op_stats", "kernel_stats"};
    for (size_t i = 0; i < 2; i++) {
        xpv_compare *c = compare(tools[i], a, b);
        print_message("%s: base %.1f us, new %.1f us, %+.1f%%\n", tools[i], c->base_total,
                      c->new_total, c->delta_pct);
        assert_true(c->delta_pct > 5);
        assert_true(xpv_compare_slower(c, 5));
        xpv_compare_free(c);
    }
    xpv_compare *c = compare("overview_page", a, b);
    assert_int_equal(c->base.nsteps, 4);
    assert_int_equal(c->cur.nsteps, 8);
    const xpv_cmp_pair *st = xpv_compare_lookup(c, "Step time", NULL);
    assert_non_null(st);
    assert_true(st->base_v > 0);
    assert_true(st->base->v[3] == 4 && st->cur->v[3] == 8);
    xpv_compare_free(c);
    free_profile(a);
    free_profile(b);
}

/* The generic DataTable extractor reads kernel_stats' table as the typed
 * extractor reads the kernel reports. */
static void test_datatable(void **state) {
    (void)state;
    static const xpv_compare_kind generic = {
        "kernel_stats", "us", "total", {"op_name"}, {"total_duration_us", "occurrences"},
        xpv_cmp_extract_datatable, -1, "kernel_name", 1,
    };
    xpv_profile *a = synth_profile(4), *b = synth_profile(8);
    xpv_compare *typed = compare("kernel_stats", a, b);
    const char *names[1] = {"h"};
    const xpv_profile *pa[1] = {a}, *pb[1] = {b};
    xpv_hostset ha = {1, pa, names}, hb = {1, pb, names};
    xpv_err err;
    xpv_err_clear(&err);
    void *da = xpv_derived_op_stats.build(&ha, &err), *db = xpv_derived_op_stats.build(&hb, &err);
    xpv_compare *g = xpv_compare_build(&generic, &ha, da, &hb, db, &err);
    assert_non_null(g);
    assert_int_equal(g->n, typed->n);
    assert_true(fabs(g->base_total - typed->base_total) < 1e-3 * typed->base_total);
    assert_true(fabs(g->new_total - typed->new_total) < 1e-3 * typed->new_total);
    assert_true(fabs(g->delta_pct - typed->delta_pct) < 0.01);
    xpv_compare_free(g);
    xpv_compare_free(typed);
    xpv_derived_op_stats.free(da);
    xpv_derived_op_stats.free(db);
    free_profile(a);
    free_profile(b);
}

/* Two different real JAX runs: some ops only in one of them. */
static void test_real_pair(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    char pa[1024], pb[1024];
    snprintf(pa, sizeof pa, "%s/testdata/real/AMD-AGI-TraceLens/plugins/profile/jax08_gemm/"
             "tw003.xplane.pb", tu_shared_dir());
    snprintf(pb, sizeof pb, "%s/testdata/real/AMD-AGI-TraceLens/plugins/profile/"
             "jax08_attention/tw003.xplane.pb", tu_shared_dir());
    xpv_err err;
    xpv_profile *a = xpv_load_profile(pa, NULL, NULL, &err);
    xpv_profile *b = xpv_load_profile(pb, NULL, NULL, &err);
    if (!a || !b) {
        print_message("SKIP: %s\n", err.msg);
        if (a) xpv_profile_free(a);
        if (b) xpv_profile_free(b);
        skip();
    }
    const char *tools[] = {"framework_op_stats", "kernel_stats"};
    for (size_t i = 0; i < 2; i++) {
        xpv_compare *c = compare(tools[i], a, b);
        print_message("%s: %zu common, %zu added, %zu removed, %+.1f%%\n", tools[i],
                      c->common, c->added, c->removed, c->delta_pct);
        assert_true(c->added > 0);
        assert_true(c->removed > 0);
        xpv_compare_free(c);
        c = compare(tools[i], a, a);
        assert_int_equal(c->added + c->removed, 0);
        assert_true(c->delta_pct == 0);
        xpv_compare_free(c);
    }
    xpv_profile_free(a);
    xpv_profile_free(b);
}

TU_MAIN(cmocka_unit_test(test_align),     cmocka_unit_test(test_empty),
        cmocka_unit_test(test_self),      cmocka_unit_test(test_more_steps),
        cmocka_unit_test(test_datatable), cmocka_unit_test(test_real_pair))
