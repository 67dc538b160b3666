/*
 * test_base_datatable.c - base/datatable.c: the exact DataTable JSON bytes,
 * and CSV written straight from the table equal to the CSV a JSON reader
 * (jansson, in this test) derives from that JSON, cell kind by cell kind.
 */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "datatable.h"
#include "testutil.h"

static char *json_of(const xpv_dt_doc *d) {
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_dt_doc_write_json(d, &b);
    xpv_buf_putc(&b, '\0');
    return xpv_buf_steal(&b, NULL);
}

static void test_json_bytes(void **state) {
    (void)state;
    xpv_dt_doc d;
    xpv_dt_doc_init(&d, 1);
    xpv_dt *t = xpv_dt_doc_table(&d, 0);
    static const xpv_dt_col cols[] = {
        {"a", "A", "string", NULL}, {"tip", "", "string", "tooltip"}, {"n", "N", "number", NULL}};
    xpv_dt_add_cols(t, cols, 3);
    xpv_dt_prop(t, "k", "v<1>");
    xpv_dt_propf(t, "pct", "%.1f%%", 12.34);
    xpv_dt_row(t);
    xpv_dt_str(t, "x\"y");
    xpv_dt_strn(t, "abc", 2);
    xpv_dt_num(t, 0.1);
    xpv_dt_row(t);
    xpv_dt_null(t);
    xpv_dt_bool(t, 7);
    xpv_dt_int(t, -12);
    xpv_dt_cell_f(t, "twelve", 6);
    xpv_dt_cell_prop(t, "unit", "us", 2);
    xpv_dt_cell_prop(t, "w", "1.500", 5);
    xpv_dt_doc_raw(&d, "{}");
    xpv_dt *u = xpv_dt_doc_table(&d, XPV_DT_PROPS_LAST | XPV_DT_ROLE_LAST);
    xpv_dt_add_col(u, "tooltip", "", "string", "tooltip");
    xpv_dt_prop(u, "p", NULL);
    xpv_dt_row(u);
    xpv_dt_num_text(u, "1.250");
    char *j = json_of(&d);
    assert_string_equal(
        j, "[{\"cols\":[{\"id\":\"a\",\"label\":\"A\",\"type\":\"string\"},"
           "{\"id\":\"tip\",\"label\":\"\",\"p\":{\"role\":\"tooltip\"},\"type\":\"string\"},"
           "{\"id\":\"n\",\"label\":\"N\",\"type\":\"number\"}],"
           "\"p\":{\"k\":\"v\\u003c1\\u003e\",\"pct\":\"12.3%\"},"
           "\"rows\":[{\"c\":[{\"v\":\"x\\\"y\"},{\"v\":\"ab\"},{\"v\":0.1}]},"
           "{\"c\":[{\"v\":null},{\"v\":true},{\"v\":-12,\"f\":\"twelve\","
           "\"p\":{\"unit\":\"us\",\"w\":\"1.500\"}}]}]},{},"
           "{\"cols\":[{\"id\":\"tooltip\",\"label\":\"\",\"type\":\"string\","
           "\"p\":{\"role\":\"tooltip\"}}],\"rows\":[{\"c\":[{\"v\":1.250}]}],\"p\":{\"p\":\"\"}}]");
    free(j);
    assert_ptr_equal(xpv_dt_doc_get(&d, 1), u);
    assert_null(xpv_dt_doc_get(&d, 2));
    assert_int_equal(xpv_dt_nrows(t), 2);
    assert_int_equal(xpv_dt_cell_at(t, 1, 2)->v.i, -12);
    assert_null(xpv_dt_cell_at(t, 1, 3));
    assert_null(xpv_dt_cell_at(t, 2, 0));
    xpv_dt_doc_release(&d);

    /* One bare table. */
    xpv_dt_doc_init(&d, 0);
    xpv_dt_add_col(xpv_dt_doc_table(&d, 0), "x", "X", "number", NULL);
    j = json_of(&d);
    assert_string_equal(j, "{\"cols\":[{\"id\":\"x\",\"label\":\"X\",\"type\":\"number\"}],"
                           "\"rows\":[]}");
    free(j);
    xpv_dt_doc_release(&d);
}

/* ---- CSV oracle: the table's JSON read back with jansson ---- */

static void ref_field(xpv_buf *b, const char *s, size_t n) {
    int quote = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r') quote = 1;
    if (quote) xpv_buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        if (quote && s[i] == '"') xpv_buf_putc(b, '"');
        xpv_buf_putc(b, s[i]);
    }
    if (quote) xpv_buf_putc(b, '"');
}

static void ref_value(xpv_buf *b, json_t *v) {
    if (json_is_string(v)) ref_field(b, json_string_value(v), json_string_length(v));
    else if (json_is_integer(v)) xpv_buf_printf(b, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v)) xpv_buf_printf(b, "%.15g", json_real_value(v));
    else if (json_is_true(v)) xpv_buf_puts(b, "true");
    else if (json_is_false(v)) xpv_buf_puts(b, "false");
}

static char *ref_csv(const char *json) {
    json_error_t je;
    json_t *t = json_loads(json, 0, &je);
    if (!t) fail_msg("not JSON: %s", je.text);
    xpv_buf b;
    xpv_buf_init(&b);
    json_t *cols = json_object_get(t, "cols"), *rows = json_object_get(t, "rows"), *c, *row;
    size_t i;
    json_array_foreach(cols, i, c) {
        if (i) xpv_buf_putc(&b, ',');
        json_t *l = json_object_get(c, "label");
        ref_value(&b, json_string_length(l) ? l : json_object_get(c, "id"));
    }
    xpv_buf_puts(&b, "\r\n");
    json_array_foreach(rows, i, row) {
        for (size_t k = 0; k < json_array_size(cols); k++) {
            if (k) xpv_buf_putc(&b, ',');
            json_t *cell = json_array_get(json_object_get(row, "c"), k);
            if (cell) ref_value(&b, json_object_get(cell, "v"));
        }
        xpv_buf_puts(&b, "\r\n");
    }
    json_decref(t);
    xpv_buf_putc(&b, '\0');
    return xpv_buf_steal(&b, NULL);
}

static void test_csv_matches_json(void **state) {
    (void)state;
    static const double nums[] = {0,    -0.0, 1,     -7,     0.1,      1.0 / 3, 1e15,
                                  -1e15, 1e300, 5e-324, 123456789012345678.0, NAN,
                                  INFINITY, -INFINITY, 2.5e-7, 99999999999999.9};
    static const char *const strs[] = {"plain", "a,b", "say \"hi\"", "two\nlines", "cr\r",
                                       "bad \xff utf8 \xc3", "\xe2\x80\xa8 sep", "-1", "",
                                       "<&>", "tab\tx", "\xf0\x9f\x98\x80 ok"};
    static const char *const texts[] = {"12.345", "0.000", "-3.5", "42", "1000000.123456"};
    xpv_dt_doc d;
    xpv_dt_doc_init(&d, 0);
    xpv_dt *t = xpv_dt_doc_table(&d, 0);
    xpv_dt_add_col(t, "s", "Label, quoted", "string", NULL);
    xpv_dt_add_col(t, "n", "", "number", NULL);
    xpv_dt_add_col(t, "x", "Mixed", "number", NULL);
    size_t n = sizeof nums / sizeof nums[0];
    for (size_t i = 0; i < n; i++) {
        xpv_dt_row(t);
        xpv_dt_str(t, strs[i % (sizeof strs / sizeof strs[0])]);
        xpv_dt_num(t, nums[i]);
        switch (i % 5) {
        case 0: xpv_dt_int(t, (int64_t)i * -1000003); break;
        case 1: xpv_dt_num_text(t, texts[i % 5]); break;
        case 2: xpv_dt_bool(t, (int)(i & 1)); break;
        case 3: xpv_dt_null(t); break;
        default: break;   /* a short row */
        }
    }
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        xpv_dt_row(t);
        xpv_dt_str(t, strs[(i + 3) % (sizeof strs / sizeof strs[0])]);
        xpv_dt_num_text(t, texts[i]);
        xpv_dt_num(t, (double)i / 7);
        xpv_dt_str(t, "extra cell past the columns");
    }
    char *j = json_of(&d);
    char *want = ref_csv(j);
    xpv_buf got;
    xpv_buf_init(&got);
    assert_int_equal(xpv_dt_doc_write_csv(&d, 0, &got, NULL), 0);
    xpv_buf_putc(&got, '\0');
    assert_string_equal(got.data, want);
    /* Spot checks of the oracle itself. */
    assert_non_null(strstr(want, "\"Label, quoted\",n,Mixed\r\n"));
    assert_non_null(strstr(want, "\"say \"\"hi\"\"\""));
    assert_non_null(strstr(want, "bad \xef\xbf\xbd utf8 \xef\xbf\xbd"));
    assert_non_null(strstr(want, ",NaN,"));
    assert_non_null(strstr(want, ",0.333333333333333,"));
    xpv_buf_free(&got);
    free(want);
    free(j);
    xpv_dt_doc_release(&d);
}

static void test_csv_table_index(void **state) {
    (void)state;
    xpv_dt_doc d;
    xpv_dt_doc_init(&d, 1);
    xpv_dt_add_col(xpv_dt_doc_table(&d, 0), "a", "A", "string", NULL);
    xpv_dt_doc_raw(&d, "{}");
    xpv_dt_add_col(xpv_dt_doc_table(&d, 0), "b", "B", "string", NULL);
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_err err;
    xpv_err_clear(&err);
    assert_int_equal(xpv_dt_doc_write_csv(&d, 1, &b, &err), 0);   /* {} is no table */
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.data, "B\r\n", 3);
    assert_int_equal(xpv_dt_doc_write_csv(&d, 2, &b, &err), -1);
    assert_int_equal(err.status, 400);
    assert_string_equal(err.msg, "no table 2 in the tool's output");
    xpv_dt_doc_release(&d);
    xpv_dt_doc_init(&d, 0);
    (void)xpv_dt_doc_table(&d, 0);
    assert_int_equal(xpv_dt_doc_write_csv(&d, 1, &b, &err), -1);
    assert_string_equal(err.msg, "the tool's output has only one table");
    xpv_dt_doc_release(&d);
    xpv_buf_free(&b);
}

TU_MAIN(cmocka_unit_test(test_json_bytes),
        cmocka_unit_test(test_csv_matches_json),
        cmocka_unit_test(test_csv_table_index))
