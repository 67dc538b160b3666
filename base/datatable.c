/*
 * datatable.c - DataTables built in memory, written as JSON or CSV
 * (datatable.h).
 */
#include "datatable.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ==== Doc ================================================================ */

void xpv_dt_doc_init(xpv_dt_doc *d, int array) {
    memset(d, 0, sizeof *d);
    xpv_arena_init(&d->arena, 0);
    d->array = array;
    d->items.sz = sizeof(xpv_dt_item);
}

void xpv_dt_doc_release(xpv_dt_doc *d) {
    for (size_t i = 0; i < d->items.n; i++) {
        xpv_dt *t = ((xpv_dt_item *)d->items.p)[i].table;
        if (!t) continue;
        free(t->cols.p);
        free(t->props.p);
        free(t->cells.p);
        free(t->rows.p);
        free(t->cprops.p);
    }
    free(d->items.p);
    xpv_arena_free(&d->arena);
    memset(d, 0, sizeof *d);
}

xpv_dt *xpv_dt_doc_table(xpv_dt_doc *d, unsigned flags) {
    xpv_dt *t = xpv_arena_calloc(&d->arena, 1, sizeof *t);
    t->arena = &d->arena;
    t->flags = flags;
    t->cols.sz = sizeof(xpv_dt_col);
    t->props.sz = sizeof(xpv_dt_kv);
    t->cells.sz = sizeof(xpv_dt_cell);
    t->rows.sz = sizeof(size_t);
    t->cprops.sz = sizeof(xpv_dt_kv);
    xpv_dt_item *it = vec_push(&d->items);
    it->table = t;
    it->raw = NULL;
    return t;
}

void xpv_dt_doc_raw(xpv_dt_doc *d, const char *json) {
    xpv_dt_item *it = vec_push(&d->items);
    it->table = NULL;
    it->raw = xpv_arena_strndup(&d->arena, json, strlen(json));
}

const xpv_dt *xpv_dt_doc_get(const xpv_dt_doc *d, size_t index) {
    for (size_t i = 0; i < d->items.n; i++) {
        const xpv_dt *t = ((const xpv_dt_item *)d->items.p)[i].table;
        if (t && index-- == 0) return t;
    }
    return NULL;
}

/* ==== Building =========================================================== */

static const char *dup(xpv_dt *t, const char *s, size_t n) {
    return xpv_arena_strndup(t->arena, s ? s : "", s ? n : 0);
}
static const char *dupc(xpv_dt *t, const char *s) { return dup(t, s, s ? strlen(s) : 0); }

void xpv_dt_add_col(xpv_dt *t, const char *id, const char *label, const char *type,
                    const char *role) {
    xpv_dt_col *c = vec_push(&t->cols);
    c->id = dupc(t, id);
    c->label = dupc(t, label);
    c->type = dupc(t, type);
    c->role = role ? dupc(t, role) : NULL;
}

void xpv_dt_add_cols(xpv_dt *t, const xpv_dt_col *cols, size_t n) {
    for (size_t i = 0; i < n; i++)
        xpv_dt_add_col(t, cols[i].id, cols[i].label, cols[i].type, cols[i].role);
}

void xpv_dt_prop(xpv_dt *t, const char *key, const char *val) {
    xpv_dt_kv *kv = vec_push(&t->props);
    kv->key = dupc(t, key);
    kv->val = dupc(t, val);
}

void xpv_dt_propf(xpv_dt *t, const char *key, const char *fmt, ...) {
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    xpv_dt_prop(t, key, tmp);
}

void xpv_dt_row(xpv_dt *t) { *(size_t *)vec_push(&t->rows) = t->cells.n; }

static xpv_dt_cell *cell(xpv_dt *t, xpv_dt_kind kind) {
    xpv_dt_cell *c = vec_push(&t->cells);
    memset(c, 0, sizeof *c);
    c->kind = kind;
    return c;
}

void xpv_dt_strn(xpv_dt *t, const char *s, size_t n) {
    xpv_dt_cell *c = cell(t, XPV_DT_STR);
    c->v.s = dup(t, s, s ? n : 0);
    c->len = s ? n : 0;
}
void xpv_dt_str(xpv_dt *t, const char *s) { xpv_dt_strn(t, s, s ? strlen(s) : 0); }
void xpv_dt_num(xpv_dt *t, double v) { cell(t, XPV_DT_NUM)->v.d = v; }
void xpv_dt_int(xpv_dt *t, int64_t v) { cell(t, XPV_DT_INT)->v.i = v; }
void xpv_dt_num_text(xpv_dt *t, const char *text) { cell(t, XPV_DT_NUMTEXT)->v.s = dupc(t, text); }
void xpv_dt_bool(xpv_dt *t, int v) { cell(t, XPV_DT_BOOL)->v.b = v != 0; }
void xpv_dt_null(xpv_dt *t) { (void)cell(t, XPV_DT_NULL); }

static xpv_dt_cell *last_cell(xpv_dt *t) {
    return t->cells.n ? (xpv_dt_cell *)t->cells.p + t->cells.n - 1 : NULL;
}

void xpv_dt_cell_f(xpv_dt *t, const char *f, size_t n) {
    xpv_dt_cell *c = last_cell(t);
    if (c) c->f = dup(t, f, n);
}

void xpv_dt_cell_prop(xpv_dt *t, const char *key, const char *val, size_t n) {
    xpv_dt_cell *c = last_cell(t);
    if (!c) return;
    /* A cell's properties are consecutive: it takes them as they come. */
    if (!c->np) c->p0 = (uint32_t)t->cprops.n;
    xpv_dt_kv *kv = vec_push(&t->cprops);
    kv->key = dupc(t, key);
    kv->val = dup(t, val, n);
    c->np++;
}

const xpv_dt_cell *xpv_dt_cell_at(const xpv_dt *t, size_t row, size_t col) {
    if (row >= t->rows.n) return NULL;
    size_t first = ((const size_t *)t->rows.p)[row];
    size_t end = row + 1 < t->rows.n ? ((const size_t *)t->rows.p)[row + 1] : t->cells.n;
    return first + col < end ? (const xpv_dt_cell *)t->cells.p + first + col : NULL;
}

/* ==== JSON =============================================================== */

static void json_kvs(xpv_buf *b, const xpv_dt_kv *kv, size_t n) {
    xpv_buf_putc(b, '{');
    for (size_t i = 0; i < n; i++) {
        if (i) xpv_buf_putc(b, ',');
        xpv_buf_json_cstr(b, kv[i].key);
        xpv_buf_putc(b, ':');
        xpv_buf_json_cstr(b, kv[i].val);
    }
    xpv_buf_putc(b, '}');
}

static void json_cols(xpv_buf *b, const xpv_dt *t) {
    const xpv_dt_col *c = t->cols.p;
    int role_last = (t->flags & XPV_DT_ROLE_LAST) != 0;
    xpv_buf_puts(b, "\"cols\":[");
    for (size_t i = 0; i < t->cols.n; i++) {
        if (i) xpv_buf_putc(b, ',');
        xpv_buf_puts(b, "{\"id\":");
        xpv_buf_json_cstr(b, c[i].id);
        xpv_buf_puts(b, ",\"label\":");
        xpv_buf_json_cstr(b, c[i].label);
        if (role_last) {
            xpv_buf_puts(b, ",\"type\":");
            xpv_buf_json_cstr(b, c[i].type);
        }
        if (c[i].role) {
            xpv_buf_puts(b, ",\"p\":{\"role\":");
            xpv_buf_json_cstr(b, c[i].role);
            xpv_buf_putc(b, '}');
        }
        if (!role_last) {
            xpv_buf_puts(b, ",\"type\":");
            xpv_buf_json_cstr(b, c[i].type);
        }
        xpv_buf_putc(b, '}');
    }
    xpv_buf_putc(b, ']');
}

static void json_value(xpv_buf *b, const xpv_dt_cell *c) {
    switch (c->kind) {
    case XPV_DT_STR: xpv_buf_json_str(b, c->v.s, c->len); break;
    case XPV_DT_NUM: xpv_buf_double(b, c->v.d); break;
    case XPV_DT_INT: xpv_buf_i64(b, c->v.i); break;
    case XPV_DT_NUMTEXT: xpv_buf_puts(b, c->v.s); break;
    case XPV_DT_BOOL: xpv_buf_puts(b, c->v.b ? "true" : "false"); break;
    default: xpv_buf_puts(b, "null");
    }
}

static void json_rows(xpv_buf *b, const xpv_dt *t) {
    const xpv_dt_cell *cells = t->cells.p;
    const size_t *rows = t->rows.p;
    xpv_buf_puts(b, "\"rows\":[");
    for (size_t r = 0; r < t->rows.n; r++) {
        size_t end = r + 1 < t->rows.n ? rows[r + 1] : t->cells.n;
        xpv_buf_puts(b, r ? ",{\"c\":[" : "{\"c\":[");
        for (size_t i = rows[r]; i < end; i++) {
            const xpv_dt_cell *c = &cells[i];
            xpv_buf_puts(b, i > rows[r] ? ",{\"v\":" : "{\"v\":");
            json_value(b, c);
            if (c->f) {
                xpv_buf_puts(b, ",\"f\":");
                xpv_buf_json_cstr(b, c->f);
            }
            if (c->np) {
                xpv_buf_puts(b, ",\"p\":");
                json_kvs(b, (const xpv_dt_kv *)t->cprops.p + c->p0, c->np);
            }
            xpv_buf_putc(b, '}');
        }
        xpv_buf_puts(b, "]}");
    }
    xpv_buf_putc(b, ']');
}

void xpv_dt_write_json(const xpv_dt *t, xpv_buf *out) {
    int props_last = (t->flags & XPV_DT_PROPS_LAST) != 0;
    int props = t->props.n || (t->flags & XPV_DT_PROPS_ALWAYS);
    xpv_buf_putc(out, '{');
    json_cols(out, t);
    if (props && !props_last) {
        xpv_buf_puts(out, ",\"p\":");
        json_kvs(out, t->props.p, t->props.n);
    }
    xpv_buf_putc(out, ',');
    json_rows(out, t);
    if (props && props_last) {
        xpv_buf_puts(out, ",\"p\":");
        json_kvs(out, t->props.p, t->props.n);
    }
    xpv_buf_putc(out, '}');
}

void xpv_dt_doc_write_json(const xpv_dt_doc *d, xpv_buf *out) {
    const xpv_dt_item *it = d->items.p;
    if (d->array) xpv_buf_putc(out, '[');
    for (size_t i = 0; i < d->items.n; i++) {
        if (i) xpv_buf_putc(out, ',');
        if (it[i].table) xpv_dt_write_json(it[i].table, out);
        else xpv_buf_puts(out, it[i].raw);
    }
    if (d->array) xpv_buf_putc(out, ']');
}

/* ==== CSV ================================================================ */

/* One field: the string a JSON reader gets back (invalid UTF-8 bytes as
 * U+FFFD), quoted when it holds a comma, quote or line break.  Cells
 * starting with = + - @ are left as they are: values are data from the
 * profile, and quoting would change numbers like -1. */
static void csv_field(xpv_buf *b, const char *s) {
    size_t n = strlen(s);
    if (!strpbrk(s, ",\"\n\r")) {
        xpv_buf_utf8_clean(b, s, n);
        return;
    }
    xpv_buf_putc(b, '"');
    for (const char *q = s;;) {
        const char *e = strchr(q, '"');
        xpv_buf_utf8_clean(b, q, e ? (size_t)(e - q) : strlen(q));
        if (!e) break;
        xpv_buf_puts(b, "\"\"");
        q = e + 1;
    }
    xpv_buf_putc(b, '"');
}

/* A number literal as a JSON reader gives it back: integers as they are,
 * the others with 15 significant digits. */
static void csv_number_text(xpv_buf *b, const char *text) {
    const char *p = text + (*text == '-');
    if (*p && strspn(p, "0123456789") == strlen(p)) {
        xpv_buf_i64(b, (int64_t)strtoll(text, NULL, 10));
        return;
    }
    xpv_buf_printf(b, "%.15g", strtod(text, NULL));
}

static void csv_value(xpv_buf *b, const xpv_dt_cell *c) {
    switch (c->kind) {
    case XPV_DT_STR: csv_field(b, c->v.s); break;
    case XPV_DT_INT: xpv_buf_i64(b, c->v.i); break;
    case XPV_DT_NUMTEXT: csv_number_text(b, c->v.s); break;
    case XPV_DT_BOOL: xpv_buf_puts(b, c->v.b ? "true" : "false"); break;
    case XPV_DT_NUM: {
        /* What the JSON holds: xpv_buf_double's text (NaN and the
         * infinities are strings there). */
        xpv_buf tmp;
        xpv_buf_init(&tmp);
        xpv_buf_double(&tmp, c->v.d);
        xpv_buf_putc(&tmp, '\0');
        if (tmp.data[0] == '"') {
            tmp.data[tmp.len - 2] = '\0';
            xpv_buf_puts(b, tmp.data + 1);
        } else {
            csv_number_text(b, tmp.data);
        }
        xpv_buf_free(&tmp);
        break;
    }
    default: break;
    }
}

void xpv_dt_write_csv(const xpv_dt *t, xpv_buf *out) {
    const xpv_dt_col *c = t->cols.p;
    size_t ncols = t->cols.n;
    for (size_t i = 0; i < ncols; i++) {
        if (i) xpv_buf_putc(out, ',');
        csv_field(out, c[i].label[0] ? c[i].label : c[i].id);
    }
    xpv_buf_puts(out, "\r\n");
    for (size_t r = 0; r < t->rows.n; r++) {
        for (size_t k = 0; k < ncols; k++) {
            if (k) xpv_buf_putc(out, ',');
            const xpv_dt_cell *cell = xpv_dt_cell_at(t, r, k);
            if (cell) csv_value(out, cell);
        }
        xpv_buf_puts(out, "\r\n");
    }
}

int xpv_dt_doc_write_csv(const xpv_dt_doc *d, size_t index, xpv_buf *out, xpv_err *err) {
    if (!d->array && index != 0)
        return xpv_err_set(err, XPV_E_BAD_REQUEST, "the tool's output has only one table");
    const xpv_dt *t = xpv_dt_doc_get(d, index);
    if (!t) return xpv_err_set(err, XPV_E_BAD_REQUEST, "no table %zu in the tool's output", index);
    xpv_dt_write_csv(t, out);
    return 0;
}
