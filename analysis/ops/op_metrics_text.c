/*
 * op_metrics_text.c - what op metrics read from strings (op_metrics.h):
 * GPU kernel_details and memcpy_details stats, and XProf's ModelTracker
 * (training or inference, from the ops' names).  Split from op_metrics.c.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_metrics.h"
#include "op_metrics_int.h"

/* ==== kernel_details ==================================================== */

/* Parse a decimal uint32; 0 on error or overflow (the value is unusable). */
static int parse_u32(const char *p, size_t n, uint32_t *out) {
    if (n == 0 || n > 10) return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return 0;
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    if (v > UINT32_MAX) return 0;
    *out = (uint32_t)v;
    return 1;
}

static void parse_dims(const char *p, size_t n, uint32_t d[3]) {
    uint32_t tmp[3] = {1, 1, 1};
    size_t k = 0, start = 0;
    for (size_t i = 0; i <= n && k < 3; i++) {
        if (i == n || p[i] == ',') {
            if (!parse_u32(p + start, i - start, &tmp[k])) return;
            k++;
            start = i + 1;
        }
    }
    memcpy(d, tmp, sizeof tmp);
}

/* The next "key:value" token of a space-separated details string from
 * `*i` on (tokens without ':' are skipped); 0 at the end. */
static int next_detail(xpv_str det, size_t *i, xpv_str *key, xpv_str *val) {
    while (*i < det.len) {
        while (*i < det.len && isspace((unsigned char)det.ptr[*i])) (*i)++;
        size_t s = *i;
        while (*i < det.len && !isspace((unsigned char)det.ptr[*i])) (*i)++;
        const char *tok = det.ptr + s;
        size_t tn = *i - s;
        const char *c = tn ? memchr(tok, ':', tn) : NULL;
        if (!c) continue;
        *key = mkstr(tok, (size_t)(c - tok));
        *val = mkstr(c + 1, tn - key->len - 1);
        return 1;
    }
    return 0;
}

void xpv_parse_kernel_details(xpv_str det, xpv_kernel_report *r) {
    for (int i = 0; i < 3; i++) r->grid[i] = r->block[i] = 1;
    size_t i = 0;
    xpv_str key, val;
    while (next_detail(det, &i, &key, &val)) {
        const char *v = val.ptr;
        size_t vn = val.len;
        uint32_t u;
        if (str_is(key, "regs")) {
            if (parse_u32(v, vn, &u)) r->registers_per_thread = u;
        } else if (str_is(key, "static_shared")) {
            if (parse_u32(v, vn, &u)) r->static_shmem_bytes = u;
        } else if (str_is(key, "dynamic_shared")) {
            if (parse_u32(v, vn, &u)) r->dynamic_shmem_bytes = u;
        } else if (str_is(key, "grid")) {
            parse_dims(v, vn, r->grid);
        } else if (str_is(key, "block")) {
            parse_dims(v, vn, r->block);
        } else if (str_is(key, "occ_pct")) {
            char tmp[64];
            size_t m = vn < sizeof tmp - 1 ? vn : sizeof tmp - 1;
            memcpy(tmp, v, m);
            tmp[m] = 0;
            char *end;
            double d = strtod(tmp, &end);
            if (end != tmp) r->occupancy_pct = d;
        }
    }
}

/* Memory kind of a `kind_src`/`kind_dst` value: 1 host, 2 device, 0 other
 * (unknown, managed: either side). */
static int memory_kind_side(xpv_str v) {
    if (str_is(v, "pageable") || str_is(v, "pinned")) return 1;
    if (str_is(v, "device") || str_is(v, "device_static") || str_is(v, "array")) return 2;
    return 0;
}

static int contains_nocase(xpv_str s, const char *needle) {
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= s.len; i++) {
        size_t j = 0;
        while (j < n && tolower((unsigned char)s.ptr[i + j]) == needle[j]) j++;
        if (j == n) return 1;
    }
    return 0;
}

/* Direction named by a `kind:` value ("HtoD", "MemcpyD2H", ...). */
static int memcpy_kind_by_name(xpv_str v) {
    static const struct { const char *a, *b, *c; int kind; } names[] = {
        {"htod", "h2d", "hosttodevice", XPV_MEMCPY_H2D},
        {"dtoh", "d2h", "devicetohost", XPV_MEMCPY_D2H},
        {"dtod", "d2d", "devicetodevice", XPV_MEMCPY_D2D},
        {"ptop", "p2p", "peertopeer", XPV_MEMCPY_P2P},
        {"htoh", "h2h", "hosttohost", XPV_MEMCPY_H2H},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (contains_nocase(v, names[i].a) || contains_nocase(v, names[i].b) ||
            contains_nocase(v, names[i].c))
            return names[i].kind;
    return XPV_MEMCPY_UNKNOWN;
}

static int parse_i64_tok(const char *p, size_t n, int64_t *out) {
    if (n == 0 || n > 19) return 0;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return 0;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return 1;
}

int xpv_parse_memcpy_details(xpv_str det, xpv_memcpy_info *out) {
    out->kind = XPV_MEMCPY_UNKNOWN;
    out->bytes = -1;
    out->dest = -1;
    out->async = -1;
    int src = -1, dst = -1, any = 0;
    size_t i = 0;
    xpv_str key, val;
    while (next_detail(det, &i, &key, &val)) {
        int64_t v;
        int num = parse_i64_tok(val.ptr, val.len, &v);
        if (str_is(key, "size") || str_is(key, "num_bytes")) {
            if (num) out->bytes = v;
            any |= num;
        } else if (str_is(key, "dest")) {
            if (num) out->dest = v;
            any |= num;
        } else if (str_is(key, "async")) {
            if (num) out->async = v != 0;
            any |= num;
        } else if (str_is(key, "kind_src")) {
            src = memory_kind_side(val);
            any = 1;
        } else if (str_is(key, "kind_dst")) {
            dst = memory_kind_side(val);
            any = 1;
        } else if (str_is(key, "kind")) {
            out->kind = memcpy_kind_by_name(val);
            any = 1;
        }
    }
    if (src > 0 && dst > 0)
        out->kind = src == 1 ? (dst == 1 ? XPV_MEMCPY_H2H : XPV_MEMCPY_H2D)
                             : (dst == 1 ? XPV_MEMCPY_D2H : XPV_MEMCPY_D2D);
    return any;
}

/* ==== Training or inference (XProf's ModelTracker) ====================== */

static int jax_type(xpv_str t) {
    /* [a-z_][a-z0-9_]*, optionally followed by [..] (already cut) */
    if (!t.len) return 0;
    char c = t.ptr[0];
    if (!((c >= 'a' && c <= 'z') || c == '_')) return 0;
    for (uint32_t i = 1; i < t.len; i++) {
        c = t.ptr[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return 0;
    }
    return 1;
}

static int tf_type(xpv_str t) {
    if (!t.len) return 0;
    char c = t.ptr[0];
    if (!((c >= 'A' && c <= 'Z') || c == '_')) return 0;
    for (uint32_t i = 1; i < t.len; i++) {
        c = t.ptr[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return 0;
    }
    return 1;
}

static int op_is_gradient(const char *name, const char *type) {
    /* PyTorch (not XProf's rule, which knows TF and JAX only): backward
     * ops ("aten::convolution_backward", "autograd::engine::...") or an
     * optimizer step mean training. */
    if (strstr(name, "::") || !strncmp(name, "Optimizer.step", 14)) {
        return strstr(name, "backward") != NULL || strstr(name, "Backward") != NULL ||
               !strncmp(name, "autograd::", 10) || !strncmp(name, "Optimizer.step", 14);
    }
    xpv_str t = xpv_cstr(type);
    size_t n = strlen(name);
    if (tf_type(t)) {
        /* Name scopes = every '/' component but the last. */
        const char *p = name, *end = name + n;
        while (p < end) {
            const char *slash = memchr(p, '/', (size_t)(end - p));
            if (!slash) break;
            size_t len = (size_t)(slash - p);
            if (len >= 8 && !memcmp(p, "gradient", 8)) {
                if ((len == 13 && !memcmp(p + 8, "_tape", 5)) || (len > 8 && p[8] == 's'))
                    return 1;
            }
            p = slash + 1;
        }
    } else if (jax_type(t) || t.len == 0) {
        const char *p = name, *end = name + n;
        while (p < end) {
            const char *slash = memchr(p, '/', (size_t)(end - p));
            size_t len = slash ? (size_t)(slash - p) : (size_t)(end - p);
            if (len >= 10 && !memcmp(p, "transpose(", 10)) return 1;
            if (!slash) break;
            p = slash + 1;
        }
    }
    return 0;
}

int xpv_op_metrics_is_training(const xpv_op_metrics *m) {
    const xpv_op_metrics_db *dbs[2] = {&m->device_tf, &m->host};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < dbs[k]->n; i++)
            if (!dbs[k]->ops[i].is_idle &&
                op_is_gradient(dbs[k]->ops[i].name, dbs[k]->ops[i].category))
                return 1;
    return 0;
}
