/*
 * csv.c - data_csv: one table of a DataTable JSON answer as CSV.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "arena.h"
#include "assets.h"
#include "discovery.h"
#include "legacy_serve.h"
#include "loader.h"
#include "version.h"

/* ==== DataTable -> CSV ================================================= */

static void csv_field(xpv_buf *b, const char *s, size_t n) {
    int quote = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r') quote = 1;
    /* Cells starting with = + - @ are left as they are: values are data
     * from the profile, and quoting would change numbers like -1. */
    if (!quote) {
        xpv_buf_add(b, s, n);
        return;
    }
    xpv_buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"') xpv_buf_putc(b, '"');
        xpv_buf_putc(b, s[i]);
    }
    xpv_buf_putc(b, '"');
}

static void csv_value(xpv_buf *b, json_t *v) {
    char tmp[64];
    switch (json_typeof(v)) {
    case JSON_STRING:
        csv_field(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        xpv_buf_i64(b, (int64_t)json_integer_value(v));
        break;
    case JSON_REAL:
        snprintf(tmp, sizeof tmp, "%.15g", json_real_value(v));
        xpv_buf_puts(b, tmp);
        break;
    case JSON_TRUE:
        xpv_buf_puts(b, "true");
        break;
    case JSON_FALSE:
        xpv_buf_puts(b, "false");
        break;
    case JSON_NULL:
        break;
    default: {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (s) {
            csv_field(b, s, strlen(s));
            free(s);
        }
    }
    }
}

int xpv_datatable_to_csv(const char *json, size_t len, size_t index,
                         xpv_buf *out, xpv_err *err) {
    json_error_t je;
    json_t *root = json_loadb(json, len, 0, &je);
    if (!root) return xpv_err_set(err, XPV_E_BAD_REQUEST, "the tool's output is not JSON");
    json_t *t = root;
    if (json_is_array(root)) {
        size_t ntables = 0;
        json_t *el;
        size_t i;
        t = NULL;
        json_array_foreach(root, i, el) {
            if (json_is_object(el) && json_is_array(json_object_get(el, "cols"))) {
                if (ntables == index) {
                    t = el;
                    break;
                }
                ntables++;
            }
        }
        if (!t) {
            json_decref(root);
            return xpv_err_set(err, XPV_E_BAD_REQUEST, "no table %zu in the tool's output", index);
        }
    } else if (index != 0) {
        json_decref(root);
        return xpv_err_set(err, XPV_E_BAD_REQUEST, "the tool's output has only one table");
    }
    json_t *cols = json_object_get(t, "cols"), *rows = json_object_get(t, "rows");
    if (!json_is_array(cols) || !(json_is_array(rows) || !rows)) {
        json_decref(root);
        return xpv_err_set(err, XPV_E_BAD_REQUEST, "the tool's output is not a DataTable");
    }
    size_t i, ncols = json_array_size(cols);
    json_t *c;
    json_array_foreach(cols, i, c) {
        if (i) xpv_buf_putc(out, ',');
        json_t *label = json_object_get(c, "label");
        if (!json_is_string(label) || !json_string_length(label))
            label = json_object_get(c, "id");
        if (json_is_string(label)) csv_value(out, label);
    }
    xpv_buf_puts(out, "\r\n");
    json_t *row;
    json_array_foreach(rows, i, row) {
        json_t *cells = json_object_get(row, "c");
        for (size_t k = 0; k < ncols; k++) {
            if (k) xpv_buf_putc(out, ',');
            json_t *cell = json_array_get(cells, k);
            if (json_is_object(cell)) {
                json_t *v = json_object_get(cell, "v");
                if (v) csv_value(out, v);
            } else if (cell) {
                csv_value(out, cell);
            }
        }
        xpv_buf_puts(out, "\r\n");
    }
    json_decref(root);
    return 0;
}
