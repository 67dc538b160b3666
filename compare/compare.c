/*
 * compare.c - aligning two sides by key, sorting, and the JSON / CSV /
 * text outputs (compare.h).  The per-tool extractors and the kind table
 * are in kinds.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"

/* ==== Sides ============================================================= */

void xpv_cmp_side_init(xpv_cmp_side *s) {
    memset(s, 0, sizeof *s);
    xpv_arena_init(&s->arena, 64 * 1024);
}

void xpv_cmp_side_free(xpv_cmp_side *s) {
    free(s->rows);
    free(s->steps);
    xpv_arena_free(&s->arena);
    memset(s, 0, sizeof *s);
}

const char *xpv_cmp_side_str(xpv_cmp_side *s, const char *str) {
    if (!str) str = "";
    return xpv_arena_strndup(&s->arena, str, strlen(str));
}

xpv_cmp_row *xpv_cmp_side_add(xpv_cmp_side *s, const char *name) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->rows = xpv_xrealloc(s->rows, s->cap * sizeof *s->rows);
    }
    xpv_cmp_row *r = &s->rows[s->n++];
    memset(r, 0, sizeof *r);
    r->name = xpv_cmp_side_str(s, name);
    for (int i = 0; i < XPV_CMP_MAXL; i++) r->labels[i] = "";
    return r;
}

/* ==== Alignment ========================================================= */

static int nlabels(const xpv_compare_kind *k) {
    int n = 0;
    while (n < XPV_CMP_MAXL && k->labels[n]) n++;
    return n;
}

static int nvalues(const xpv_compare_kind *k) {
    int n = 0;
    while (n < XPV_CMP_MAXV && k->values[n]) n++;
    return n;
}

static const char *row_unit(const xpv_compare_kind *k, const xpv_cmp_row *r) {
    return r->unit ? r->unit : k->unit;
}

/* Key order: labels, then name, then unit. */
static int cmp_key(const xpv_cmp_row *a, const xpv_cmp_row *b) {
    for (int i = 0; i < XPV_CMP_MAXL; i++) {
        int c = strcmp(a->labels[i], b->labels[i]);
        if (c) return c;
    }
    int c = strcmp(a->name, b->name);
    if (c) return c;
    return strcmp(a->unit ? a->unit : "", b->unit ? b->unit : "");
}

static int cmp_rows(const void *x, const void *y) {
    return cmp_key(x, y);
}

/* Sort a side by key and sum rows with equal keys. */
static void coalesce(xpv_cmp_side *s) {
    if (!s->n) return;
    if (s->n) qsort(s->rows, s->n, sizeof *s->rows, cmp_rows);
    size_t k = 0;
    for (size_t i = 1; i < s->n; i++) {
        if (!cmp_key(&s->rows[k], &s->rows[i])) {
            for (int j = 0; j < XPV_CMP_MAXV; j++) s->rows[k].v[j] += s->rows[i].v[j];
        } else {
            s->rows[++k] = s->rows[i];
        }
    }
    s->n = k + 1;
}

static double pct_change(double base, double cur) {
    if (base != 0) return 100.0 * (cur - base) / fabs(base);
    return cur == 0 ? 0.0 : NAN;
}

static int cmp_pairs(const void *x, const void *y) {
    const xpv_cmp_pair *a = x, *b = y;
    const xpv_cmp_row *ra = a->cur ? a->cur : a->base, *rb = b->cur ? b->cur : b->base;
    /* Rows in the kind's unit first (the overview's percentages after its
     * times), then by absolute change, then by key. */
    if (a->other_unit != b->other_unit) return a->other_unit - b->other_unit;
    double da = fabs(a->delta), db = fabs(b->delta);
    if (da != db) return da > db ? -1 : 1;
    double ma = fabs(a->base_v) > fabs(a->new_v) ? fabs(a->base_v) : fabs(a->new_v);
    double mb = fabs(b->base_v) > fabs(b->new_v) ? fabs(b->base_v) : fabs(b->new_v);
    if (ma != mb) return ma > mb ? -1 : 1;
    return cmp_key(ra, rb);
}

xpv_compare *xpv_compare_sides(const xpv_compare_kind *k, xpv_cmp_side *base,
                               xpv_cmp_side *cur) {
    xpv_compare *c = xpv_xcalloc(1, sizeof *c);
    c->kind = k;
    c->base = *base;
    c->cur = *cur;
    memset(base, 0, sizeof *base);
    memset(cur, 0, sizeof *cur);
    coalesce(&c->base);
    coalesce(&c->cur);
    c->pairs = xpv_xcalloc(c->base.n + c->cur.n + 1, sizeof *c->pairs);
    size_t i = 0, j = 0;
    while (i < c->base.n || j < c->cur.n) {
        xpv_cmp_pair *p = &c->pairs[c->n++];
        int o = i == c->base.n ? 1 : j == c->cur.n ? -1
                                   : cmp_key(&c->base.rows[i], &c->cur.rows[j]);
        if (o < 0) {
            p->base = &c->base.rows[i++];
            p->status = XPV_CMP_REMOVED;
            c->removed++;
        } else if (o > 0) {
            p->cur = &c->cur.rows[j++];
            p->status = XPV_CMP_ADDED;
            c->added++;
        } else {
            p->base = &c->base.rows[i++];
            p->cur = &c->cur.rows[j++];
            p->status = XPV_CMP_COMMON;
            c->common++;
        }
        p->base_v = p->base ? p->base->v[0] : 0;
        p->new_v = p->cur ? p->cur->v[0] : 0;
        p->delta = p->new_v - p->base_v;
        p->delta_pct = pct_change(p->base_v, p->new_v);
        const xpv_cmp_row *r = p->cur ? p->cur : p->base;
        p->other_unit = strcmp(row_unit(k, r), k->unit) != 0;
    }
    qsort(c->pairs, c->n, sizeof *c->pairs, cmp_pairs);
    c->base_total = c->base.total;
    c->new_total = c->cur.total;
    c->delta_pct = pct_change(c->base_total, c->new_total);
    return c;
}

xpv_compare *xpv_compare_build(const xpv_compare_kind *k, const xpv_hostset *base_hs,
                               const void *base_derived, const xpv_hostset *new_hs,
                               const void *new_derived, xpv_err *err) {
    xpv_cmp_side b, n;
    xpv_cmp_side_init(&b);
    xpv_cmp_side_init(&n);
    if (k->extract(k, base_hs, base_derived, &b, err) != 0 ||
        k->extract(k, new_hs, new_derived, &n, err) != 0) {
        xpv_cmp_side_free(&b);
        xpv_cmp_side_free(&n);
        return NULL;
    }
    return xpv_compare_sides(k, &b, &n);
}

void xpv_compare_free(xpv_compare *c) {
    if (!c) return;
    xpv_cmp_side_free(&c->base);
    xpv_cmp_side_free(&c->cur);
    free(c->pairs);
    free(c);
}

const xpv_cmp_pair *xpv_compare_lookup(const xpv_compare *c, const char *name,
                                       const char *const *labels) {
    int nl = nlabels(c->kind);
    for (size_t i = 0; i < c->n; i++) {
        const xpv_cmp_row *r = c->pairs[i].cur ? c->pairs[i].cur : c->pairs[i].base;
        if (strcmp(r->name, name)) continue;
        int ok = 1;
        for (int j = 0; labels && j < nl && ok; j++)
            if (labels[j] && strcmp(labels[j], r->labels[j])) ok = 0;
        if (ok) return &c->pairs[i];
    }
    return NULL;
}

int xpv_compare_slower(const xpv_compare *c, double pct) {
    if (isnan(c->delta_pct)) return c->new_total > c->base_total;
    return c->delta_pct > pct;
}

/* ==== Output ============================================================ */

static const char *status_name(int s) {
    return s == XPV_CMP_ADDED ? "added" : s == XPV_CMP_REMOVED ? "removed" : "common";
}

static void json_num(xpv_buf *b, double v) {
    if (isnan(v) || isinf(v)) xpv_buf_puts(b, "null");
    else xpv_buf_double(b, v);
}

/* Values are rounded to the nanosecond / byte fraction that matters, so
 * equal profiles give exactly 0 and outputs are stable. */
static double tidy(double v) {
    return round(v * 1e6) / 1e6;
}

static void json_steps(xpv_buf *b, const xpv_cmp_side *s) {
    xpv_buf_putc(b, '[');
    for (size_t i = 0; i < s->nsteps; i++) {
        if (i) xpv_buf_putc(b, ',');
        json_num(b, tidy(s->steps[i]));
    }
    xpv_buf_putc(b, ']');
}

void xpv_compare_write_json(const xpv_compare *c, size_t top, xpv_buf *b) {
    const xpv_compare_kind *k = c->kind;
    int nl = nlabels(k), nv = nvalues(k);
    size_t n = top && top < c->n ? top : c->n;
    xpv_buf_puts(b, "{\"summary\":{\"tool\":");
    xpv_buf_json_cstr(b, k->tool);
    xpv_buf_puts(b, ",\"unit\":");
    xpv_buf_json_cstr(b, k->unit);
    xpv_buf_puts(b, ",\"total\":");
    xpv_buf_json_cstr(b, k->total_what);
    xpv_buf_puts(b, ",\"base_total_us\":");
    json_num(b, tidy(c->base_total));
    xpv_buf_puts(b, ",\"new_total_us\":");
    json_num(b, tidy(c->new_total));
    xpv_buf_puts(b, ",\"delta_us\":");
    json_num(b, tidy(c->new_total - c->base_total));
    xpv_buf_puts(b, ",\"delta_pct\":");
    json_num(b, tidy(c->delta_pct));
    xpv_buf_printf(b, ",\"rows_added\":%zu,\"rows_removed\":%zu,\"rows_common\":%zu,"
                   "\"rows\":%zu},\"columns\":{\"labels\":[",
                   c->added, c->removed, c->common, c->n);
    for (int j = 0; j < nl; j++) {
        if (j) xpv_buf_putc(b, ',');
        xpv_buf_json_cstr(b, k->labels[j]);
    }
    xpv_buf_puts(b, "],\"values\":[");
    for (int j = 0; j < nv; j++) {
        if (j) xpv_buf_putc(b, ',');
        xpv_buf_json_cstr(b, k->values[j]);
    }
    xpv_buf_puts(b, "]},\"rows\":[");
    for (size_t i = 0; i < n; i++) {
        const xpv_cmp_pair *p = &c->pairs[i];
        const xpv_cmp_row *r = p->cur ? p->cur : p->base;
        if (i) xpv_buf_putc(b, ',');
        xpv_buf_puts(b, "{\"name\":");
        xpv_buf_json_cstr(b, r->name);
        for (int j = 0; j < nl; j++) {
            xpv_buf_putc(b, ',');
            xpv_buf_json_cstr(b, k->labels[j]);
            xpv_buf_putc(b, ':');
            xpv_buf_json_cstr(b, r->labels[j]);
        }
        xpv_buf_puts(b, ",\"base_us\":");
        json_num(b, tidy(p->base_v));
        xpv_buf_puts(b, ",\"new_us\":");
        json_num(b, tidy(p->new_v));
        xpv_buf_puts(b, ",\"delta_us\":");
        json_num(b, tidy(p->delta));
        xpv_buf_puts(b, ",\"delta_pct\":");
        json_num(b, tidy(p->delta_pct));
        xpv_buf_puts(b, ",\"status\":");
        xpv_buf_json_cstr(b, status_name(p->status));
        if (r->unit) {
            xpv_buf_puts(b, ",\"unit\":");
            xpv_buf_json_cstr(b, r->unit);
        }
        for (int j = 1; j < nv; j++) {
            xpv_buf_printf(b, ",\"base_%s\":", k->values[j]);
            json_num(b, p->base ? tidy(p->base->v[j]) : 0);
            xpv_buf_printf(b, ",\"new_%s\":", k->values[j]);
            json_num(b, p->cur ? tidy(p->cur->v[j]) : 0);
        }
        xpv_buf_putc(b, '}');
    }
    xpv_buf_putc(b, ']');
    if (c->base.steps || c->cur.steps) {
        xpv_buf_puts(b, ",\"steps\":{\"base\":");
        json_steps(b, &c->base);
        xpv_buf_puts(b, ",\"new\":");
        json_steps(b, &c->cur);
        xpv_buf_putc(b, '}');
    }
    xpv_buf_putc(b, '}');
}

static void csv_str(xpv_buf *b, const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        xpv_buf_puts(b, s);
        return;
    }
    xpv_buf_putc(b, '"');
    for (; *s; s++) {
        if (*s == '"') xpv_buf_putc(b, '"');
        xpv_buf_putc(b, *s);
    }
    xpv_buf_putc(b, '"');
}

static void csv_num(xpv_buf *b, double v) {
    if (!isnan(v) && !isinf(v)) xpv_buf_double(b, tidy(v));
}

void xpv_compare_write_csv(const xpv_compare *c, size_t top, xpv_buf *b) {
    const xpv_compare_kind *k = c->kind;
    int nl = nlabels(k), nv = nvalues(k);
    size_t n = top && top < c->n ? top : c->n;
    xpv_buf_puts(b, "name");
    for (int j = 0; j < nl; j++) xpv_buf_printf(b, ",%s", k->labels[j]);
    xpv_buf_puts(b, ",base_us,new_us,delta_us,delta_pct,status,unit");
    for (int j = 1; j < nv; j++) xpv_buf_printf(b, ",base_%s,new_%s", k->values[j], k->values[j]);
    xpv_buf_puts(b, "\r\n");
    for (size_t i = 0; i < n; i++) {
        const xpv_cmp_pair *p = &c->pairs[i];
        const xpv_cmp_row *r = p->cur ? p->cur : p->base;
        csv_str(b, r->name);
        for (int j = 0; j < nl; j++) {
            xpv_buf_putc(b, ',');
            csv_str(b, r->labels[j]);
        }
        xpv_buf_putc(b, ',');
        csv_num(b, p->base_v);
        xpv_buf_putc(b, ',');
        csv_num(b, p->new_v);
        xpv_buf_putc(b, ',');
        csv_num(b, p->delta);
        xpv_buf_putc(b, ',');
        csv_num(b, p->delta_pct);
        xpv_buf_printf(b, ",%s,%s", status_name(p->status), row_unit(k, r));
        for (int j = 1; j < nv; j++) {
            xpv_buf_putc(b, ',');
            csv_num(b, p->base ? p->base->v[j] : 0);
            xpv_buf_putc(b, ',');
            csv_num(b, p->cur ? p->cur->v[j] : 0);
        }
        xpv_buf_puts(b, "\r\n");
    }
}

static void fmt_val(char *out, size_t n, double v) {
    if (isnan(v)) snprintf(out, n, "-");
    else if (fabs(v) >= 1e7) snprintf(out, n, "%.0f", v);
    else snprintf(out, n, "%.3f", v);
}

static void fmt_pct(char *out, size_t n, double v, int status) {
    if (status == XPV_CMP_ADDED) snprintf(out, n, "added");
    else if (status == XPV_CMP_REMOVED) snprintf(out, n, "removed");
    else if (isnan(v)) snprintf(out, n, "-");
    else snprintf(out, n, "%+.1f%%", v);
}

void xpv_compare_write_text(const xpv_compare *c, size_t top, const char *base_label,
                            const char *new_label, xpv_buf *b) {
    const xpv_compare_kind *k = c->kind;
    int nl = nlabels(k);
    size_t n = top && top < c->n ? top : c->n;
    char v1[48], v2[48], v3[48], v4[48];
    xpv_buf_printf(b, "%s: %s\n", k->tool, k->total_what);
    xpv_buf_printf(b, "  base %s\n  new  %s\n", base_label ? base_label : "base",
                   new_label ? new_label : "new");
    fmt_val(v1, sizeof v1, c->base_total);
    fmt_val(v2, sizeof v2, c->new_total);
    fmt_val(v3, sizeof v3, c->new_total - c->base_total);
    fmt_pct(v4, sizeof v4, c->delta_pct, XPV_CMP_COMMON);
    xpv_buf_printf(b, "total (%s): base %s  new %s  change %s (%s)\n", k->unit, v1, v2, v3, v4);
    xpv_buf_printf(b, "rows: %zu common, %zu added, %zu removed\n\n", c->common, c->added,
                   c->removed);
    xpv_buf_printf(b, "%14s %14s %14s %9s  %s\n", "base", "new", "change", "change%",
                   "name");
    for (size_t i = 0; i < n; i++) {
        const xpv_cmp_pair *p = &c->pairs[i];
        const xpv_cmp_row *r = p->cur ? p->cur : p->base;
        fmt_val(v1, sizeof v1, p->base_v);
        fmt_val(v2, sizeof v2, p->new_v);
        fmt_val(v3, sizeof v3, p->delta);
        fmt_pct(v4, sizeof v4, p->delta_pct, p->status);
        xpv_buf_printf(b, "%14s %14s %14s %9s  ", v1, v2, v3, v4);
        for (int j = 0; j < nl; j++)
            if (r->labels[j][0]) xpv_buf_printf(b, "[%s] ", r->labels[j]);
        xpv_buf_printf(b, "%s", r->name);
        if (r->unit) xpv_buf_printf(b, " (%s)", r->unit);
        xpv_buf_putc(b, '\n');
    }
    if (n < c->n) xpv_buf_printf(b, "... %zu more rows (--top)\n", c->n - n);
}
