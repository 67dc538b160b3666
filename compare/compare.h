/*
 * compare.h - differences between two profiles in one tool (issue 15).
 *
 * A compare kind says, for one XProf tool, how its result becomes rows with
 * a stable key: the kind's label columns plus the row name (framework op
 * stats: host/device + type + operation; kernel stats: kernel name + op
 * name; ...), one compared value (v[0]: a time in µs, or bytes for the
 * memory profile) and a few more numeric columns.  Both sides are
 * extracted from the tool's own results (the typed analysis results where
 * the tool has them, the tool's rendered JSON otherwise), aligned by key
 * (rows with the same key on one side are summed), and written as rows
 * with base value, new value, absolute and relative change and an
 * added/removed mark, sorted by absolute change; plus a summary total per
 * side (the tool's total time: total self time without IDLE for the op and
 * kernel tables, the average step time for the overview).
 *
 * Adding a tool is one entry in the kind table (compare.c): a DataTable
 * tool needs no code at all (the generic extractor reads its columns by
 * id, see XPV_CMP_DATATABLE).
 */
#ifndef XPV_COMPARE_H
#define XPV_COMPARE_H

#include <stddef.h>

#include "arena.h"
#include "buf.h"
#include "err.h"
#include "tool.h"

#define XPV_CMP_MAXL 3      /* label (key) columns per kind */
#define XPV_CMP_MAXV 4      /* numeric columns per kind */

/* One row of one side.  Strings live in the side's arena. */
typedef struct xpv_cmp_row {
    const char *name;                 /* display name, last part of the key */
    const char *labels[XPV_CMP_MAXL]; /* the kind's label columns */
    double v[XPV_CMP_MAXV];           /* the kind's value columns; v[0] compared */
    const char *unit;                 /* NULL: the kind's unit; else e.g. "%" */
} xpv_cmp_row;

/* The rows of one side, as an extractor fills them. */
typedef struct xpv_cmp_side {
    xpv_cmp_row *rows;
    size_t n, cap;
    double total;                     /* the summary total (kind's unit) */
    double *steps;                    /* per-step time in ms (overview), or NULL */
    size_t nsteps;
    xpv_arena arena;
} xpv_cmp_side;

void xpv_cmp_side_init(xpv_cmp_side *s);
void xpv_cmp_side_free(xpv_cmp_side *s);
/* A new zeroed row named `name` (copied); labels are set with
 * xpv_cmp_side_str. */
xpv_cmp_row *xpv_cmp_side_add(xpv_cmp_side *s, const char *name);
const char *xpv_cmp_side_str(xpv_cmp_side *s, const char *str);

typedef struct xpv_compare_kind xpv_compare_kind;

/* Fill `out` from the tool's result for the hosts of `hs`; `derived` is
 * the tool's derived data (tool->derived built for `hs`) or NULL. */
typedef int (*xpv_cmp_extract_fn)(const xpv_compare_kind *k, const xpv_hostset *hs,
                                  const void *derived, xpv_cmp_side *out, xpv_err *err);

struct xpv_compare_kind {
    const char *tool;                 /* XProf tool name */
    const char *unit;                 /* unit of v[0] and the total: "us" or "bytes" */
    const char *total_what;           /* what the summary total is */
    const char *labels[XPV_CMP_MAXL]; /* label column ids (NULL-padded) */
    const char *values[XPV_CMP_MAXV]; /* value column ids; values[0] compared */
    xpv_cmp_extract_fn extract;
    /* For the generic DataTable extractor (xpv_cmp_extract_datatable):
     * which table of the tool's JSON (-1: the output is one table), the
     * name column id, and a factor applied to every value. */
    int table;
    const char *name_col;
    double scale;
};

/* Reads a DataTable tool's rendered JSON by the kind's column ids. */
int xpv_cmp_extract_datatable(const xpv_compare_kind *k, const xpv_hostset *hs,
                              const void *derived, xpv_cmp_side *out, xpv_err *err);

/* The kinds, NULL-terminated; by tool name (or the tool's alias), or NULL. */
const xpv_compare_kind *const *xpv_compare_kinds(void);
const xpv_compare_kind *xpv_compare_find(const char *tool);

enum { XPV_CMP_COMMON = 0, XPV_CMP_ADDED = 1, XPV_CMP_REMOVED = 2 };

/* One aligned row. */
typedef struct xpv_cmp_pair {
    const xpv_cmp_row *base, *cur;    /* NULL where the row is absent */
    double base_v, new_v;             /* v[0] of each side (0 when absent) */
    double delta;                     /* new_v - base_v */
    double delta_pct;                 /* 100 * delta / base_v; NaN when base_v == 0
                                       * and new_v != 0 */
    int status;                       /* XPV_CMP_COMMON / ADDED / REMOVED */
    int other_unit;                   /* 1: the row's unit is not the kind's
                                       * (sorted after the others) */
} xpv_cmp_pair;

typedef struct xpv_compare {
    const xpv_compare_kind *kind;
    xpv_cmp_side base, cur;
    xpv_cmp_pair *pairs;              /* sorted by |delta| desc, then key */
    size_t n;
    double base_total, new_total;
    double delta_pct;                 /* NaN when base_total == 0 != new_total */
    size_t added, removed, common;
} xpv_compare;

/* Extract both sides and align them.  NULL with `err` on failure. */
xpv_compare *xpv_compare_build(const xpv_compare_kind *k, const xpv_hostset *base_hs,
                               const void *base_derived, const xpv_hostset *new_hs,
                               const void *new_derived, xpv_err *err);
/* Align two sides already extracted; takes ownership of both. */
xpv_compare *xpv_compare_sides(const xpv_compare_kind *k, xpv_cmp_side *base,
                               xpv_cmp_side *cur);
void xpv_compare_free(xpv_compare *c);

/* The pair of `c` with this name (and labels, when given), or NULL. */
const xpv_cmp_pair *xpv_compare_lookup(const xpv_compare *c, const char *name,
                                       const char *const *labels);

/* Output, limited to the first `top` rows (0 = all):
 *   JSON {"summary":{...},"rows":[{name, <labels>, base_us, new_us, delta_us,
 *         delta_pct, status, base_<col>, new_<col>...}], "steps":{...}}
 *   CSV  one line per row, header first
 *   text a readable table for a terminal */
void xpv_compare_write_json(const xpv_compare *c, size_t top, xpv_buf *b);
void xpv_compare_write_csv(const xpv_compare *c, size_t top, xpv_buf *b);
void xpv_compare_write_text(const xpv_compare *c, size_t top, const char *base_label,
                            const char *new_label, xpv_buf *b);

/* Whether the new total is slower than the base by more than `pct`
 * percent (a base of 0 with a new total above 0 counts as slower). */
int xpv_compare_slower(const xpv_compare *c, double pct);

#endif
