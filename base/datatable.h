/*
 * datatable.h - XProf's tables (Google Charts DataTables): columns, rows of
 * typed cells and table properties, built in memory once and written either
 * as the DataTable JSON XProf answers or as CSV (data_csv), so no table is
 * ever parsed back from our own JSON.
 *
 * A tool's answer is an xpv_dt_doc: one table, or a JSON array of tables
 * (with the odd non-table element, e.g. the overview's "{}").  Build:
 *
 *   xpv_dt_doc d;  xpv_dt_doc_init(&d, 1);
 *   xpv_dt *t = xpv_dt_doc_table(&d, 0);
 *   xpv_dt_add_cols(t, cols, n);  xpv_dt_prop(t, "key", "value");
 *   xpv_dt_row(t);  xpv_dt_str(t, "name");  xpv_dt_num(t, 1.5);
 *   xpv_dt_doc_write_json(&d, out);   (or xpv_dt_doc_write_csv)
 *   xpv_dt_doc_release(&d);
 *
 * Strings are copied (into the doc's arena): callers may pass temporaries.
 * Tables and cells returned by the doc belong to it and die with
 * xpv_dt_doc_release.
 *
 * JSON bytes: cells are {"v":V} (plus "f" and "p" when set), rows
 * {"c":[...]}, columns {"id","label",["p":{"role"}],"type"}; the table's
 * "p" (string values) is written when it has properties (or always with
 * XPV_DT_PROPS_ALWAYS), before "rows" unless XPV_DT_PROPS_LAST.  CSV: the header is each column's label (its
 * id when the label is empty), then one line per row of the cells' values
 * ("v"), RFC 4180 quoting, CRLF line ends; numbers as JSON would give them
 * back (integers as written, others with 15 significant digits).
 */
#ifndef XPV_DATATABLE_H
#define XPV_DATATABLE_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "buf.h"
#include "collections.h"
#include "err.h"

/* One column: id, label, type ("string" / "number" / "boolean"), and an
 * optional role written as p {"role": role}. */
typedef struct xpv_dt_col {
    const char *id, *label, *type, *role;
} xpv_dt_col;

enum {
    XPV_DT_PROPS_LAST = 1 << 0,   /* "p" after "rows" (XProf's stats tables) */
    XPV_DT_ROLE_LAST = 1 << 1,    /* column "p" after "type" (gviz order) */
    XPV_DT_PROPS_ALWAYS = 1 << 2, /* "p" written even when empty */
};

typedef enum xpv_dt_kind {
    XPV_DT_NULL,
    XPV_DT_STR,
    XPV_DT_NUM,       /* double, written as xpv_buf_double does */
    XPV_DT_INT,       /* int64, written exactly */
    XPV_DT_NUMTEXT,   /* a number already formatted (e.g. fixed decimals) */
    XPV_DT_BOOL,
} xpv_dt_kind;

typedef struct xpv_dt_cell {
    xpv_dt_kind kind;
    union {
        double d;
        int64_t i;
        int b;
        const char *s;    /* XPV_DT_STR, XPV_DT_NUMTEXT */
    } v;
    size_t len;           /* bytes of v.s (XPV_DT_STR may hold NULs) */
    const char *f;        /* formatted value ("f"), or NULL */
    uint32_t p0, np;      /* the cell's properties: t->cprops[p0, p0 + np) */
} xpv_dt_cell;

typedef struct xpv_dt_kv {
    const char *key, *val;
} xpv_dt_kv;

typedef struct xpv_dt {
    xpv_arena *arena;     /* the doc's */
    unsigned flags;
    vec cols;             /* xpv_dt_col */
    vec props;            /* xpv_dt_kv: the table's "p" */
    vec cells;            /* xpv_dt_cell, row after row */
    vec rows;             /* size_t: index of each row's first cell */
    vec cprops;           /* xpv_dt_kv: cells' "p" */
} xpv_dt;

typedef struct xpv_dt_item {
    xpv_dt *table;        /* or NULL: */
    const char *raw;      /* a literal JSON element that is not a table */
} xpv_dt_item;

typedef struct xpv_dt_doc {
    xpv_arena arena;
    int array;            /* a JSON array of items, else its only table */
    vec items;            /* xpv_dt_item */
} xpv_dt_doc;

/* An empty doc: an array of items (`array`) or one table. */
void xpv_dt_doc_init(xpv_dt_doc *d, int array);
void xpv_dt_doc_release(xpv_dt_doc *d);
/* A new empty table appended to the doc (owned by the doc). */
xpv_dt *xpv_dt_doc_table(xpv_dt_doc *d, unsigned flags);
/* A literal JSON element appended to an array doc (copied). */
void xpv_dt_doc_raw(xpv_dt_doc *d, const char *json);
/* The doc's `index`-th table (raw elements not counted), or NULL. */
const xpv_dt *xpv_dt_doc_get(const xpv_dt_doc *d, size_t index);

void xpv_dt_write_json(const xpv_dt *t, xpv_buf *out);
void xpv_dt_write_csv(const xpv_dt *t, xpv_buf *out);
void xpv_dt_doc_write_json(const xpv_dt_doc *d, xpv_buf *out);
/* Table `index` of the doc as CSV.  Returns 0, or -1 with a 400 in `err`
 * when the doc has no such table. */
int xpv_dt_doc_write_csv(const xpv_dt_doc *d, size_t index, xpv_buf *out, xpv_err *err);

/* ---- building ---- */
void xpv_dt_add_col(xpv_dt *t, const char *id, const char *label, const char *type,
                    const char *role);
void xpv_dt_add_cols(xpv_dt *t, const xpv_dt_col *cols, size_t n);
/* A table property (string value; NULL is written as ""). */
void xpv_dt_prop(xpv_dt *t, const char *key, const char *val);
void xpv_dt_propf(xpv_dt *t, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Start a row; the cells below append to it. */
void xpv_dt_row(xpv_dt *t);
void xpv_dt_str(xpv_dt *t, const char *s);       /* NULL is written as "" */
void xpv_dt_strn(xpv_dt *t, const char *s, size_t n);
void xpv_dt_num(xpv_dt *t, double v);
void xpv_dt_int(xpv_dt *t, int64_t v);
void xpv_dt_num_text(xpv_dt *t, const char *text);   /* a JSON number literal */
void xpv_dt_bool(xpv_dt *t, int v);
void xpv_dt_null(xpv_dt *t);
/* The last cell's formatted value "f", and one more of its properties. */
void xpv_dt_cell_f(xpv_dt *t, const char *f, size_t n);
void xpv_dt_cell_prop(xpv_dt *t, const char *key, const char *val, size_t n);

/* ---- reading ---- */
static inline size_t xpv_dt_nrows(const xpv_dt *t) { return t->rows.n; }
/* Cell `col` of row `row`, or NULL when the row is shorter. */
const xpv_dt_cell *xpv_dt_cell_at(const xpv_dt *t, size_t row, size_t col);

#endif
