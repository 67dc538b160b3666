/*
 * datatable_json.h - render an op_stats tool (overview_page,
 * input_pipeline_analyzer, framework_op_stats, kernel_stats) to parsed JSON
 * and read its DataTables, shared by their test_tool_*.c.
 * Header-only (static functions), like steps_fixture.h.
 *
 * dt_render_hs / dt_render_one return a new jansson reference (the caller
 * json_decref's it) and fail the test when the build, render or parse
 * fails.  Cell and p getters return borrowed values and fail the test on a
 * missing value or wrong type.
 */
#ifndef XPV_DATATABLE_JSON_H
#define XPV_DATATABLE_JSON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <zlib.h>

#include "steps_fixture.h"
#include "testutil.h"

/* The JSON of the gzip (or plain) file at `path`, a new reference; NULL
 * when the file cannot be opened.  A file that is there but not JSON fails
 * the test. */
__attribute__((unused)) static json_t *dt_load_gz_json(const char *path) {
    gzFile f = gzopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    int n;
    while ((n = gzread(f, buf + len, (unsigned)(cap - len))) > 0) {
        len += (size_t)n;
        if (len == cap) buf = realloc(buf, cap *= 2);
    }
    gzclose(f);
    json_error_t jerr;
    json_t *j = json_loadb(buf, len, 0, &jerr);
    if (!j) fail_msg("%s: not JSON: %s", path, jerr.text);
    free(buf);
    return j;
}

__attribute__((unused)) static json_t *dt_render_hs(const xpv_tool *t, const xpv_hostset *hs) {
    xpv_err err;
    memset(&err, 0, sizeof err);
    void *d = t->derived->build(hs, &err);
    assert_non_null(d);
    xpv_buf b;
    xpv_buf_init(&b);
    assert_int_equal(xpv_tool_render(t, hs, d, NULL, &b, &err), 0);
    json_error_t jerr;
    json_t *j = json_loadb(b.data, b.len, 0, &jerr);
    if (!j) print_message("bad JSON: %s\n", jerr.text);
    assert_non_null(j);
    xpv_buf_free(&b);
    t->derived->free(d);
    return j;
}

__attribute__((unused)) static json_t *dt_render_one(const xpv_tool *t, xpv_profile *p) {
    sf_hosts h;
    sf_hosts_init(&h, &p, 1);
    return dt_render_hs(t, &h.hs);
}

__attribute__((unused)) static const char *dt_pstr(json_t *table, const char *key) {
    json_t *v = json_object_get(json_object_get(table, "p"), key);
    assert_true(json_is_string(v));
    return json_string_value(v);
}

__attribute__((unused)) static double dt_cell_num(json_t *table, size_t row, size_t col) {
    json_t *c = json_array_get(json_object_get(json_array_get(json_object_get(table, "rows"), row), "c"), col);
    json_t *v = json_object_get(c, "v");
    assert_true(json_is_number(v));
    return json_number_value(v);
}

__attribute__((unused)) static const char *dt_cell_str(json_t *table, size_t row, size_t col) {
    json_t *c = json_array_get(json_object_get(json_array_get(json_object_get(table, "rows"), row), "c"), col);
    json_t *v = json_object_get(c, "v");
    assert_true(json_is_string(v));
    return json_string_value(v);
}

__attribute__((unused)) static size_t dt_nrows(json_t *table) { return json_array_size(json_object_get(table, "rows")); }

/* "a,b,c" of the column ids. */
__attribute__((unused)) static void dt_col_ids(json_t *table, char *out, size_t n) {
    out[0] = 0;
    json_t *cols = json_object_get(table, "cols");
    for (size_t i = 0; i < json_array_size(cols); i++) {
        const char *id = json_string_value(json_object_get(json_array_get(cols, i), "id"));
        if (i) strncat(out, ",", n - strlen(out) - 1);
        strncat(out, id ? id : "?", n - strlen(out) - 1);
    }
}

/* The index of the column `id` of `table`, or -1. */
__attribute__((unused)) static int dt_col_index(json_t *table, const char *id) {
    json_t *cols = json_object_get(table, "cols");
    for (size_t i = 0; i < json_array_size(cols); i++) {
        const char *c = json_string_value(json_object_get(json_array_get(cols, i), "id"));
        if (c && !strcmp(c, id)) return (int)i;
    }
    return -1;
}

/* The value of column `id` in row `row` of `table` (borrowed; NULL for an
 * empty cell); fails the test when there is no such column. */
__attribute__((unused)) static json_t *dt_cell_by_id(json_t *table, size_t row, const char *id) {
    int c = dt_col_index(table, id);
    if (c < 0) fail_msg("no column %s", id);
    json_t *r = json_array_get(json_object_get(table, "rows"), row);
    return json_object_get(json_array_get(json_object_get(r, "c"), (size_t)c), "v");
}

__attribute__((unused)) static int dt_near(double a, double b) { return a - b < 1e-9 && b - a < 1e-9; }

/* XProf's golden answer `name` (integration_tests_golden/data_<name>.json.gz
 * under ../shared's reference outputs), a new reference; NULL, after
 * saying so, when ../shared or the file is absent. */
__attribute__((unused)) static json_t *dt_xprof_golden(const char *name) {
    if (!tu_shared_dir()) {
        print_message("SKIP: ../shared absent; golden check skipped\n");
        return NULL;
    }
    char path[4096];
    snprintf(path, sizeof path,
             "%s/testdata/real/reference_outputs/openxla-xprof/integration_tests_golden/"
             "data_%s.json.gz",
             tu_shared_dir(), name);
    json_t *g = dt_load_gz_json(path);
    if (!g) print_message("SKIP: %s not present\n", path);
    return g;
}

/* Table `t` of `j` has the column ids of table `t` of `g`. */
__attribute__((unused)) static void dt_assert_same_col_ids(json_t *j, json_t *g, size_t t) {
    char a[1024], b[1024];
    dt_col_ids(json_array_get(j, t), a, sizeof a);
    dt_col_ids(json_array_get(g, t), b, sizeof b);
    assert_string_equal(a, b);
}

/* Every p key of table `t` of `g` is a p key of table `t` of `j`. */
__attribute__((unused)) static void dt_assert_has_p_keys(json_t *j, json_t *g, size_t t) {
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(json_array_get(g, t), "p"), key, v) {
        (void)v;
        assert_non_null(json_object_get(json_object_get(json_array_get(j, t), "p"), key));
    }
}

/* Each of the `n` `keys` is a p key of table `t` of both `j` and `g`. */
__attribute__((unused)) static void dt_assert_both_have_p(json_t *j, json_t *g, size_t t,
                                                          const char *const *keys, size_t n) {
    for (size_t i = 0; i < n; i++) {
        assert_non_null(json_object_get(json_object_get(json_array_get(g, t), "p"), keys[i]));
        assert_non_null(json_object_get(json_object_get(json_array_get(j, t), "p"), keys[i]));
    }
}

#endif
