/*
 * op_metrics.c - host / device op metrics databases and GPU kernel stats
 * (XProf OpMetricsDb + KernelStatsDb), see op_metrics.h for the contract.
 *
 * One pass over the host planes (TF-op activity stacks per thread line) and
 * one pass over the GPU planes (device ops + kernel reports at once).  Stat
 * ids are resolved once per plane; each event's stats are walked at most
 * once.  Aggregation uses small open-addressing tables keyed by op name.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_metrics.h"

#define KERNEL_TOP_K 1000

/* ==== Small string helpers ============================================== */

static xpv_str mkstr(const char *p, size_t n) {
    xpv_str s = {p, (uint32_t)n};
    return s;
}

static int str_is(xpv_str a, const char *lit) { return xpv_str_eq(a, lit); }

static int ends_with(xpv_str a, const char *suf) {
    size_t n = strlen(suf);
    return a.len >= n && memcmp(a.ptr + a.len - n, suf, n) == 0;
}

static int contains(xpv_str a, const char *needle) {
    size_t n = strlen(needle);
    if (n == 0) return 1;
    if (a.len < n) return 0;
    return memmem(a.ptr, a.len, needle, n) != NULL;
}

static int prefix_nocase(xpv_str a, const char *pre) {
    size_t n = strlen(pre);
    if (a.len < n) return 0;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)a.ptr[i]) != tolower((unsigned char)pre[i])) return 0;
    return 1;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
#define HASH_SEED 0xcbf29ce484222325ull

/* ==== ParseTfOpFullname (xplane-format.md §8) ============================ */

/* [A-Za-z0-9.][A-Za-z0-9_./>-]* */
static int is_tf_op_name(xpv_str s) {
    if (s.len == 0) return 0;
    unsigned char c = (unsigned char)s.ptr[0];
    if (!(isalnum(c) || c == '.')) return 0;
    for (uint32_t i = 1; i < s.len; i++) {
        c = (unsigned char)s.ptr[i];
        if (!(isalnum(c) || c == '_' || c == '.' || c == '/' || c == '>' || c == '-'))
            return 0;
    }
    return 1;
}

/* [A-Z_][a-zA-Z0-9_]* */
static int is_tf_op_type(xpv_str s) {
    if (s.len == 0) return 0;
    unsigned char c = (unsigned char)s.ptr[0];
    if (!((c >= 'A' && c <= 'Z') || c == '_')) return 0;
    for (uint32_t i = 1; i < s.len; i++) {
        c = (unsigned char)s.ptr[i];
        if (!(isalnum(c) || c == '_')) return 0;
    }
    return 1;
}

/* [a-z_][a-z0-9_]*(\[.*\])? */
static int is_jax_op_type(xpv_str s) {
    if (s.len == 0) return 0;
    unsigned char c = (unsigned char)s.ptr[0];
    if (!((c >= 'a' && c <= 'z') || c == '_')) return 0;
    uint32_t i = 1;
    for (; i < s.len; i++) {
        c = (unsigned char)s.ptr[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) break;
    }
    if (i == s.len) return 1;
    return s.ptr[i] == '[' && s.ptr[s.len - 1] == ']';
}

/* Last '/' component with a trailing "_<digits>" removed. */
static xpv_str derive_op_type(xpv_str name) {
    uint32_t start = 0;
    for (uint32_t i = 0; i < name.len; i++)
        if (name.ptr[i] == '/') start = i + 1;
    xpv_str t = mkstr(name.ptr + start, name.len - start);
    for (uint32_t i = t.len; i > 0; i--) {
        char c = t.ptr[i - 1];
        if (c == '_') {
            t.len = i - 1;
            break;
        }
        if (c < '0' || c > '9') break;
    }
    return t;
}

xpv_tf_op xpv_parse_tf_op(xpv_str full) {
    xpv_tf_op op = {XPV_OP_UNKNOWN, full, {"", 0}};
    const char *colon = full.len ? memchr(full.ptr, ':', full.len) : NULL;
    if (!colon) {
        static const struct { const char *pre, *type; } memcpy_ops[] = {
            {"MEMCPYHToD", "MemcpyHToD"}, {"MEMCPYDToH", "MemcpyDToH"},
            {"MEMCPYDToD", "MemcpyDToD"}, {"MEMCPYHToH", "MemcpyHToH"},
        };
        for (size_t i = 0; i < sizeof memcpy_ops / sizeof memcpy_ops[0]; i++)
            if (prefix_nocase(full, memcpy_ops[i].pre)) {
                op.category = XPV_OP_MEMCPY;
                op.type = xpv_cstr(memcpy_ops[i].type);
                return op;
            }
        return op;
    }
    xpv_str p0 = mkstr(full.ptr, (size_t)(colon - full.ptr));
    xpv_str p1 = mkstr(colon + 1, full.len - p0.len - 1);
    if (str_is(p0, "Iterator")) {
        op.category = XPV_OP_TFDATA;
        op.type = xpv_cstr("Dataset");
        return op;
    }
    if (is_tf_op_name(p0) && is_tf_op_type(p1)) {
        op.category = XPV_OP_TENSORFLOW;
        op.name = p0;
        op.type = p1;
        return op;
    }
    xpv_str type = p1.len ? p1 : derive_op_type(p0);
    if (is_jax_op_type(type)) {
        op.category = XPV_OP_JAX;
        op.name = p0;
        const char *br = memchr(type.ptr, '[', type.len);
        if (br) type.len = (uint32_t)(br - type.ptr);
        op.type = type;
        return op;
    }
    if (p1.len == 0) {
        op.category = XPV_OP_TENSORFLOW;
        op.name = p0;
        op.type = type;
    }
    return op;
}

/* ==== TensorCore heuristics (§2.9) ====================================== */

int xpv_kernel_uses_tensor_core(xpv_str name) {
    static const char *const pats[] = {
        "16816", "c1688", "conv1x1", "conv2d_c1_k1", "dgrad_1x1_stride_2x2",
        "direct_group", "first_layer_wgrad_kernel", "h1688", "h884", "hmma",
        "i16832", "i8816", "s884", "s1688", "xmma_gemm", "xmma_implicit_gemm",
        "xmma_sparse_conv", "xmma_sparse_gemm",
        "xmma_warp_specialized_implicit_gemm",
    };
    for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++)
        if (contains(name, pats[i])) return 1;
    return 0;
}

int xpv_op_is_tensor_core_eligible(xpv_str n) {
    static const char *const suffixes[] = {
        "Conv2D", "Conv2DBackpropFilter", "Conv2DBackpropInput", "Conv3D",
        "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropFilter",
        "DepthwiseConv2dNativeBackpropInput", "/MatMul", "FusedMatMul",
        "/CudnnRNN", "XlaDot", "XlaDotV2",
    };
    static const char *const infixes[] = {
        "BatchMatMul", "CudnnRNNV", "CudnnRNNForward", "CudnnRNNBackprop",
    };
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++)
        if (ends_with(n, suffixes[i])) return 1;
    for (size_t i = 0; i < sizeof infixes / sizeof infixes[0]; i++)
        if (contains(n, infixes[i])) return 1;
    return 0;
}

/* Einsum with exactly two inputs ("ab,bc->ac"). */
static int einsum_tc_eligible(xpv_str eq) {
    if (eq.len == 0) return 0;
    const char *arrow = NULL;
    for (uint32_t i = 0; i + 1 < eq.len; i++)
        if (eq.ptr[i] == '-' && eq.ptr[i + 1] == '>') {
            if (arrow) return 0;
            arrow = eq.ptr + i;
        }
    if (!arrow) return 0;
    int commas = 0;
    for (const char *p = eq.ptr; p < arrow; p++) commas += *p == ',';
    return commas == 1;
}

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

void xpv_parse_kernel_details(xpv_str det, xpv_kernel_report *r) {
    for (int i = 0; i < 3; i++) r->grid[i] = r->block[i] = 1;
    size_t i = 0;
    while (i < det.len) {
        while (i < det.len && isspace((unsigned char)det.ptr[i])) i++;
        size_t s = i;
        while (i < det.len && !isspace((unsigned char)det.ptr[i])) i++;
        const char *tok = det.ptr + s;
        size_t tn = i - s;
        const char *c = tn ? memchr(tok, ':', tn) : NULL;
        if (!c) continue;
        xpv_str key = mkstr(tok, (size_t)(c - tok));
        const char *v = c + 1;
        size_t vn = tn - key.len - 1;
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

/* ==== Op table: name (+ program id) -> row ================================ */

typedef struct optab {
    xpv_op_metric *rows;
    uint64_t *hash;
    int64_t *pid;
    uint32_t *len;              /* strlen(rows[i].name) */
    size_t n, cap;
    uint32_t *slots;            /* row index + 1 */
    size_t nslots;
    xpv_arena *arena;
} optab;

static void optab_init(optab *t, xpv_arena *a) {
    memset(t, 0, sizeof *t);
    t->arena = a;
}

static void optab_free(optab *t) {
    free(t->rows);
    free(t->hash);
    free(t->pid);
    free(t->len);
    free(t->slots);
}

static void optab_rehash(optab *t) {
    size_t ns = t->nslots ? t->nslots * 2 : 64;
    uint32_t *s = xpv_xcalloc(ns, sizeof *s);
    for (size_t i = 0; i < t->n; i++) {
        size_t j = t->hash[i] & (ns - 1);
        while (s[j]) j = (j + 1) & (ns - 1);
        s[j] = (uint32_t)i + 1;
    }
    free(t->slots);
    t->slots = s;
    t->nslots = ns;
}

/* Row for (pid, name), created zeroed with `name` copied when absent. */
static xpv_op_metric *optab_get(optab *t, int64_t pid, xpv_str name, int *created) {
    uint64_t h = hash_bytes(hash_bytes(HASH_SEED, &pid, sizeof pid), name.ptr, name.len);
    if ((t->n + 1) * 2 > t->nslots) optab_rehash(t);
    size_t j = h & (t->nslots - 1);
    while (t->slots[j]) {
        size_t i = t->slots[j] - 1;
        xpv_op_metric *r = &t->rows[i];
        if (t->hash[i] == h && t->pid[i] == pid && t->len[i] == name.len &&
            memcmp(r->name, name.ptr, name.len) == 0) {
            if (created) *created = 0;
            return r;
        }
        j = (j + 1) & (t->nslots - 1);
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->rows = xpv_xrealloc(t->rows, t->cap * sizeof *t->rows);
        t->hash = xpv_xrealloc(t->hash, t->cap * sizeof *t->hash);
        t->pid = xpv_xrealloc(t->pid, t->cap * sizeof *t->pid);
        t->len = xpv_xrealloc(t->len, t->cap * sizeof *t->len);
    }
    size_t i = t->n++;
    xpv_op_metric *r = &t->rows[i];
    memset(r, 0, sizeof *r);
    r->name = xpv_arena_strndup(t->arena, name.ptr ? name.ptr : "", name.len);
    r->category = "";
    r->provenance = "";
    t->hash[i] = h;
    t->pid[i] = pid;
    t->len[i] = name.len;
    t->slots[j] = (uint32_t)i + 1;
    if (created) *created = 1;
    return r;
}

static const char *arena_str(xpv_arena *a, xpv_str s) {
    return xpv_arena_strndup(a, s.ptr ? s.ptr : "", s.len);
}

/* Add one execution of an op (XProf OpMetricsDbBuilder::EnterOp). */
static void optab_enter(optab *t, int64_t pid, xpv_str name, xpv_str category,
                        xpv_str provenance, int is_eager, int64_t occurrences,
                        int64_t time_ps, int64_t children_ps, double flops,
                        double model_flops, double bytes) {
    int created;
    xpv_op_metric *r = optab_get(t, pid, name, &created);
    if (created) r->min_time_ps = time_ps;
    /* The first non-empty category / provenance sticks (XProf). */
    if (!r->category[0] && category.len) r->category = arena_str(t->arena, category);
    if (!r->provenance[0] && provenance.len) r->provenance = arena_str(t->arena, provenance);
    int64_t self = time_ps - children_ps;
    if (self < 0) self = 0;
    r->occurrences += occurrences;
    r->time_ps += time_ps;
    r->self_time_ps += self;
    if (time_ps < r->min_time_ps) r->min_time_ps = time_ps;
    r->flops += flops;
    r->model_flops += model_flops;
    r->bytes_accessed += bytes;
    r->is_eager |= is_eager != 0;
}

static int cmp_metric(const void *a, const void *b) {
    const xpv_op_metric *x = a, *y = b;
    if (x->self_time_ps != y->self_time_ps) return x->self_time_ps > y->self_time_ps ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Move the table's rows (plus an IDLE row) into a sorted db. */
static void optab_finish(optab *t, xpv_op_metrics_db *db, int64_t idle_ps,
                         int64_t total_time_ps, int64_t total_op_time_ps) {
    db->n = t->n + 1;
    db->ops = xpv_arena_calloc(t->arena, db->n, sizeof *db->ops);
    if (t->n) memcpy(db->ops, t->rows, t->n * sizeof *db->ops);
    xpv_op_metric *idle = &db->ops[t->n];
    idle->name = "IDLE";
    idle->category = "IDLE";
    idle->provenance = "";
    idle->time_ps = idle->self_time_ps = idle_ps > 0 ? idle_ps : 0;
    idle->is_idle = 1;
    qsort(db->ops, db->n, sizeof *db->ops, cmp_metric); /* n >= 1 */
    db->total_time_ps = total_time_ps;
    db->total_op_time_ps = total_op_time_ps;
}

/* ==== Host op metrics ==================================================== */

typedef struct host_op {
    xpv_tf_op op;
    int is_eager;
} host_op;

typedef struct activity {
    int64_t ts;
    uint32_t seq;               /* 2*op index + is_end: stable order */
} activity;

static int cmp_activity(const void *a, const void *b) {
    const activity *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

typedef struct host_acc {
    optab tab;
    int64_t total_time_ps, total_op_time_ps, idle_ps;
    /* scratch, reused per line */
    host_op *ops;
    size_t nops, capops;
    activity *acts;
    size_t capacts;
    struct { uint32_t op; int64_t start, children; } *stack;
    size_t capstack;
} host_acc;

static void host_push_op(host_acc *h, xpv_tf_op op, int is_eager, int64_t b, int64_t e) {
    if (h->nops == h->capops) {
        h->capops = h->capops ? h->capops * 2 : 256;
        h->ops = xpv_xrealloc(h->ops, h->capops * sizeof *h->ops);
    }
    if (2 * h->capops > h->capacts) {
        h->capacts = 2 * h->capops;
        h->acts = xpv_xrealloc(h->acts, h->capacts * sizeof *h->acts);
    }
    size_t i = h->nops++;
    h->ops[i].op = op;
    h->ops[i].is_eager = is_eager;
    h->acts[2 * i].ts = b;
    h->acts[2 * i].seq = (uint32_t)(2 * i);
    h->acts[2 * i + 1].ts = e;
    h->acts[2 * i + 1].seq = (uint32_t)(2 * i + 1);
}

/* Match begin/end activities of one line with a stack; self = time minus
 * direct children (XProf ProcessTfActivities). */
static void host_process_line(host_acc *h) {
    size_t na = 2 * h->nops;
    if (na == 0) return;
    qsort(h->acts, na, sizeof *h->acts, cmp_activity);
    size_t depth = 0;
    int64_t line_op_time = 0;
    for (size_t k = 0; k < na; k++) {
        const activity *a = &h->acts[k];
        uint32_t op = a->seq >> 1;
        if (!(a->seq & 1)) {
            if (depth == h->capstack) {
                h->capstack = h->capstack ? h->capstack * 2 : 64;
                h->stack = xpv_xrealloc(h->stack, h->capstack * sizeof *h->stack);
            }
            h->stack[depth].op = op;
            h->stack[depth].start = a->ts;
            h->stack[depth].children = 0;
            depth++;
            continue;
        }
        /* Pop until the matching begin (unmatched entries are dropped). */
        size_t d = depth;
        while (d > 0 && h->stack[d - 1].op != op) d--;
        if (d == 0) {
            depth = 0;
            continue;
        }
        int64_t start = h->stack[d - 1].start, children = h->stack[d - 1].children;
        depth = d - 1;
        int64_t dur = a->ts - start;
        const host_op *ho = &h->ops[op];
        int64_t self = dur - children;
        if (self < 0) self = 0;
        optab_enter(&h->tab, 0, ho->op.name, ho->op.type, mkstr("", 0),
                    ho->is_eager, 1, dur, children, 0, 0, 0);
        line_op_time += self;
        if (depth > 0) h->stack[depth - 1].children += dur;
    }
    int64_t span = h->acts[na - 1].ts - h->acts[0].ts;
    h->total_time_ps += span;
    h->total_op_time_ps += line_op_time;
    h->idle_ps += span > line_op_time ? span - line_op_time : 0;
}

static void host_plane(host_acc *h, const xpv_plane *pl) {
    /* ParseTfOpFullname of every event metadata name, once. */
    xpv_tf_op *meta_ops = xpv_xcalloc(pl->nevent_meta ? pl->nevent_meta : 1, sizeof *meta_ops);
    for (uint32_t i = 0; i < pl->nevent_meta; i++)
        meta_ops[i] = xpv_parse_tf_op(pl->event_meta[i].name);
    int32_t sid_eager = xpv_stat_id(pl, "is_eager");
    int32_t sid_tf_op = xpv_stat_id(pl, "tf_op");

    for (uint32_t l = 0; l < pl->nlines; l++) {
        const xpv_line *ln = &pl->lines[l];
        if (xpv_line_is_derived(ln)) continue;
        h->nops = 0;
        for (uint32_t k = 0; k < ln->nevents; k++) {
            const xpv_event *ev = &ln->events[k];
            const xpv_tf_op *mop = ev->meta < pl->nevent_meta ? &meta_ops[ev->meta] : NULL;
            int by_name = mop && mop->category != XPV_OP_UNKNOWN;
            int64_t is_eager = 0;
            xpv_str tf_op = {NULL, 0};
            int has_tf_op = 0;
            if (ev->wire != XPV_NO_STATS && (sid_eager >= 0 || sid_tf_op >= 0)) {
                xpv_stat_iter it;
                xpv_stat st;
                xpv_stat_iter_init(&it, pl, ln, ev);
                while (xpv_stat_next(&it, &st)) {
                    if (st.meta == sid_eager && sid_eager >= 0) {
                        xpv_stat_as_int(&st, &is_eager);
                    } else if (st.meta == sid_tf_op && sid_tf_op >= 0 &&
                               st.kind == XPV_STAT_STR) {
                        tf_op = st.v.s;
                        has_tf_op = 1;
                    }
                }
            }
            int64_t b = ev->start_ps, e = ev->start_ps + ev->dur_ps;
            if (by_name) host_push_op(h, *mop, is_eager != 0, b, e);
            if (has_tf_op) host_push_op(h, xpv_parse_tf_op(tf_op), 0, b, e);
        }
        host_process_line(h);
    }
    free(meta_ops);
}

/* ==== Device op metrics + kernel reports ================================ */

typedef struct ktab {
    xpv_kernel_report *rows;
    uint64_t *hash;
    size_t n, cap;
    uint32_t *slots;
    size_t nslots;
} ktab;

static uint64_t kernel_hash(const xpv_kernel_report *r, xpv_str name, xpv_str op) {
    uint64_t h = hash_bytes(HASH_SEED, name.ptr, name.len);
    h = hash_bytes(h, op.ptr, op.len);
    h = hash_bytes(h, r->grid, sizeof r->grid);
    h = hash_bytes(h, r->block, sizeof r->block);
    uint32_t v[5] = {r->registers_per_thread, r->static_shmem_bytes, r->dynamic_shmem_bytes,
                     (uint32_t)r->is_kernel_using_tensor_core,
                     (uint32_t)r->is_op_tensor_core_eligible};
    return hash_bytes(h, v, sizeof v);
}

static int kernel_key_eq(const xpv_kernel_report *a, const xpv_kernel_report *b) {
    return a->registers_per_thread == b->registers_per_thread &&
           a->static_shmem_bytes == b->static_shmem_bytes &&
           a->dynamic_shmem_bytes == b->dynamic_shmem_bytes &&
           !memcmp(a->grid, b->grid, sizeof a->grid) &&
           !memcmp(a->block, b->block, sizeof a->block) &&
           a->is_kernel_using_tensor_core == b->is_kernel_using_tensor_core &&
           a->is_op_tensor_core_eligible == b->is_op_tensor_core_eligible &&
           !strcmp(a->name, b->name) && !strcmp(a->op_name, b->op_name);
}

static void ktab_rehash(ktab *t) {
    size_t ns = t->nslots ? t->nslots * 2 : 64;
    uint32_t *s = xpv_xcalloc(ns, sizeof *s);
    for (size_t i = 0; i < t->n; i++) {
        size_t j = t->hash[i] & (ns - 1);
        while (s[j]) j = (j + 1) & (ns - 1);
        s[j] = (uint32_t)i + 1;
    }
    free(t->slots);
    t->slots = s;
    t->nslots = ns;
}

/* Merge one kernel report (names still pointing into the profile) into the
 * table; strings are copied into `a` only for new keys. */
static void ktab_add(ktab *t, xpv_arena *a, const xpv_kernel_report *k, xpv_str name,
                     xpv_str op) {
    uint64_t h = kernel_hash(k, name, op);
    if ((t->n + 1) * 2 > t->nslots) ktab_rehash(t);
    size_t j = h & (t->nslots - 1);
    while (t->slots[j]) {
        size_t i = t->slots[j] - 1;
        xpv_kernel_report *r = &t->rows[i];
        if (t->hash[i] == h && strlen(r->name) == name.len &&
            !memcmp(r->name, name.ptr, name.len) && strlen(r->op_name) == op.len &&
            !memcmp(r->op_name, op.ptr, op.len)) {
            xpv_kernel_report tmp = *k;
            tmp.name = r->name;
            tmp.op_name = r->op_name;
            if (kernel_key_eq(r, &tmp)) {
                r->occurrences += k->occurrences;
                r->total_duration_ns += k->total_duration_ns;
                if (k->min_duration_ns < r->min_duration_ns) r->min_duration_ns = k->min_duration_ns;
                if (k->max_duration_ns > r->max_duration_ns) r->max_duration_ns = k->max_duration_ns;
                return;
            }
        }
        j = (j + 1) & (t->nslots - 1);
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->rows = xpv_xrealloc(t->rows, t->cap * sizeof *t->rows);
        t->hash = xpv_xrealloc(t->hash, t->cap * sizeof *t->hash);
    }
    size_t i = t->n++;
    t->rows[i] = *k;
    t->rows[i].name = arena_str(a, name);
    t->rows[i].op_name = arena_str(a, op);
    t->hash[i] = h;
    t->slots[j] = (uint32_t)i + 1;
}

static int cmp_u32x3(const uint32_t *a, const uint32_t *b) {
    for (int i = 0; i < 3; i++)
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
}

/* Total duration desc; ties broken by the key fields, in key order. */
static int cmp_kernel(const void *pa, const void *pb) {
    const xpv_kernel_report *a = pa, *b = pb;
    if (a->total_duration_ns != b->total_duration_ns)
        return a->total_duration_ns > b->total_duration_ns ? -1 : 1;
    int c = strcmp(a->name, b->name);
    if (c) return c;
    if ((c = cmp_u32x3(a->grid, b->grid))) return c;
    if ((c = cmp_u32x3(a->block, b->block))) return c;
    if (a->registers_per_thread != b->registers_per_thread)
        return a->registers_per_thread < b->registers_per_thread ? -1 : 1;
    if (a->static_shmem_bytes != b->static_shmem_bytes)
        return a->static_shmem_bytes < b->static_shmem_bytes ? -1 : 1;
    if (a->dynamic_shmem_bytes != b->dynamic_shmem_bytes)
        return a->dynamic_shmem_bytes < b->dynamic_shmem_bytes ? -1 : 1;
    if (a->is_kernel_using_tensor_core != b->is_kernel_using_tensor_core)
        return a->is_kernel_using_tensor_core - b->is_kernel_using_tensor_core;
    if (a->is_op_tensor_core_eligible != b->is_op_tensor_core_eligible)
        return a->is_op_tensor_core_eligible - b->is_op_tensor_core_eligible;
    return strcmp(a->op_name, b->op_name);
}

typedef struct dev_acc {
    optab tab;
    ktab kern;
    int64_t total_time_ps, total_op_time_ps, idle_ps;
    uint64_t kernel_events, kernel_total_ns;
    char *scratch;
    size_t capscratch;
} dev_acc;

/* Stat ids a GPU plane needs, resolved once. */
typedef struct dev_ids {
    int32_t tf_op, level0, hlo_op, program_id, group_id, is_eager, name,
        hlo_category, flops, model_flops, bytes, kernel_details, equation, occ;
} dev_ids;

typedef struct dev_ev {
    xpv_str tf_op, hlo_op, name, hlo_category, kernel_details, equation;
    int64_t program_id, group_id, is_eager;
    int has_program_id, has_group_id, has_occ;
    double flops, model_flops, bytes, occ;
} dev_ev;

static void dev_read_stats(const xpv_plane *pl, const xpv_line *ln, const xpv_event *ev,
                           const dev_ids *ids, dev_ev *d) {
    memset(d, 0, sizeof *d);
    if (ev->wire == XPV_NO_STATS) return;
    xpv_stat_iter it;
    xpv_stat st;
    xpv_stat_iter_init(&it, pl, ln, ev);
    while (xpv_stat_next(&it, &st)) {
        int32_t m = st.meta;
        if (m < 0) continue;
        int is_str = st.kind == XPV_STAT_STR;
        if (m == ids->tf_op && is_str) d->tf_op = st.v.s;
        else if (m == ids->level0 && is_str && !d->tf_op.len) d->tf_op = st.v.s;
        else if (m == ids->hlo_op && is_str) d->hlo_op = st.v.s;
        else if (m == ids->name && is_str) d->name = st.v.s;
        else if (m == ids->hlo_category && is_str) d->hlo_category = st.v.s;
        else if (m == ids->kernel_details && is_str) d->kernel_details = st.v.s;
        else if (m == ids->equation && is_str) d->equation = st.v.s;
        else if (m == ids->program_id) d->has_program_id = xpv_stat_as_int(&st, &d->program_id);
        else if (m == ids->group_id) d->has_group_id = xpv_stat_as_int(&st, &d->group_id);
        else if (m == ids->is_eager) xpv_stat_as_int(&st, &d->is_eager);
        else if (m == ids->flops) xpv_stat_as_double(&st, &d->flops);
        else if (m == ids->model_flops) xpv_stat_as_double(&st, &d->model_flops);
        else if (m == ids->bytes) xpv_stat_as_double(&st, &d->bytes);
        else if (m == ids->occ) d->has_occ = xpv_stat_as_double(&st, &d->occ);
    }
}

/* Innermost element of a "::"-separated HLO op stack. */
static xpv_str last_hlo_op(xpv_str s) {
    for (uint32_t i = s.len; i >= 2; i--)
        if (s.ptr[i - 1] == ':' && s.ptr[i - 2] == ':') return mkstr(s.ptr + i, s.len - i);
    return s;
}

/* HLO op name without its ".N" instance suffix ("fusion.12" -> "fusion"),
 * used as the category when the file carries no hlo_category stat. */
static xpv_str hlo_base_name(xpv_str s) {
    for (uint32_t i = s.len; i > 0; i--) {
        char c = s.ptr[i - 1];
        if (c == '.') return i > 1 ? mkstr(s.ptr, i - 1) : s;
        if (c < '0' || c > '9') break;
    }
    return s;
}

/* Consecutive events of one HLO op (same group) merge into one occurrence. */
typedef struct hlo_cur {
    int active;
    xpv_str op, category, provenance;
    int64_t program_id, group_id, dur;
    int is_eager;
    double flops, model_flops, bytes;
} hlo_cur;

static void hlo_flush(dev_acc *d, hlo_cur *c, int64_t *line_op_time) {
    if (!c->active) return;
    optab_enter(&d->tab, c->program_id, c->op, c->category, c->provenance, c->is_eager, 1,
                c->dur, 0, c->flops, c->model_flops, c->bytes);
    *line_op_time += c->dur;
    memset(c, 0, sizeof *c);
}

static void device_plane(dev_acc *d, xpv_arena *a, const xpv_plane *pl) {
    dev_ids ids = {
        xpv_stat_id(pl, "tf_op"), xpv_stat_id(pl, "level 0"), xpv_stat_id(pl, "hlo_op"),
        xpv_stat_id(pl, "program_id"), xpv_stat_id(pl, "group_id"),
        xpv_stat_id(pl, "is_eager"), xpv_stat_id(pl, "name"),
        xpv_stat_id(pl, "hlo_category"), xpv_stat_id(pl, "flops"),
        xpv_stat_id(pl, "model_flops"), xpv_stat_id(pl, "bytes_accessed"),
        xpv_stat_id(pl, "kernel_details"), xpv_stat_id(pl, "equation"),
        xpv_stat_id(pl, "theoretical_occupancy_pct"),
    };
    int64_t first = INT64_MAX, last = INT64_MIN, plane_op_time = 0;
    /* TensorCore use depends on the kernel name only: once per metadata. */
    uint8_t *uses_tc = xpv_xcalloc(pl->nevent_meta ? pl->nevent_meta : 1, 1);
    for (uint32_t l = 0; l < pl->nlines; l++) {
        const xpv_line *ln = &pl->lines[l];
        if (xpv_line_is_derived(ln)) continue;
        hlo_cur cur;
        memset(&cur, 0, sizeof cur);
        for (uint32_t k = 0; k < ln->nevents; k++) {
            const xpv_event *ev = &ln->events[k];
            if (ev->start_ps < first) first = ev->start_ps;
            if (ev->start_ps + ev->dur_ps > last) last = ev->start_ps + ev->dur_ps;
            dev_ev s;
            dev_read_stats(pl, ln, ev, &ids, &s);
            xpv_str ename = pl->event_meta[ev->meta].name;
            xpv_str kernel_op = {"", 0};
            if (s.hlo_op.len) {
                xpv_str op = last_hlo_op(s.hlo_op);
                if (cur.active && (op.len != cur.op.len || memcmp(op.ptr, cur.op.ptr, op.len) ||
                                   s.group_id != cur.group_id ||
                                   s.program_id != cur.program_id))
                    hlo_flush(d, &cur, &plane_op_time);
                if (!cur.active) {
                    cur.active = 1;
                    cur.op = op;
                    cur.category = s.hlo_category.len ? s.hlo_category : hlo_base_name(op);
                    cur.provenance = s.name;
                    cur.program_id = s.program_id;
                    cur.group_id = s.group_id;
                    cur.flops = s.flops;
                    cur.model_flops = s.model_flops;
                    cur.bytes = s.bytes;
                }
                cur.dur += ev->dur_ps;
                cur.is_eager = s.is_eager != 0;
                /* XProf takes the HLO instruction's framework op name from
                 * the module proto; the `name` stat carries the same text. */
                if (s.name.len) kernel_op = s.name;
                else if (s.tf_op.len) kernel_op = xpv_parse_tf_op(s.tf_op).name;
            } else if (s.tf_op.len) {
                hlo_flush(d, &cur, &plane_op_time);
                xpv_tf_op op = xpv_parse_tf_op(s.tf_op);
                size_t need = (size_t)op.name.len + 1 + ename.len;
                if (need > d->capscratch) {
                    d->capscratch = need * 2;
                    d->scratch = xpv_xrealloc(d->scratch, d->capscratch);
                }
                memcpy(d->scratch, op.name.ptr, op.name.len);
                d->scratch[op.name.len] = '/';
                memcpy(d->scratch + op.name.len + 1, ename.ptr, ename.len);
                optab_enter(&d->tab, 0, mkstr(d->scratch, need), op.type, s.tf_op,
                            s.is_eager != 0, 1, ev->dur_ps, 0, s.flops, s.model_flops,
                            s.bytes);
                plane_op_time += ev->dur_ps;
                kernel_op = op.name;
            }
            /* Kernel stats: whole-ns duration > 0 and kernel_details. */
            uint64_t dur_ns = ev->dur_ps > 0 ? (uint64_t)ev->dur_ps / 1000 : 0;
            if (dur_ns == 0 || !s.kernel_details.len) continue;
            xpv_kernel_report kr;
            memset(&kr, 0, sizeof kr);
            xpv_parse_kernel_details(s.kernel_details, &kr);
            if (s.has_occ && kr.occupancy_pct == 0) kr.occupancy_pct = s.occ;
            if (ev->meta < pl->nevent_meta) {
                if (!uses_tc[ev->meta]) uses_tc[ev->meta] = 1 + xpv_kernel_uses_tensor_core(ename);
                kr.is_kernel_using_tensor_core = uses_tc[ev->meta] == 2;
            }
            if (kernel_op.len)
                kr.is_op_tensor_core_eligible = einsum_tc_eligible(s.equation) ||
                                                xpv_op_is_tensor_core_eligible(kernel_op) ||
                                                kr.is_kernel_using_tensor_core;
            kr.occurrences = 1;
            kr.total_duration_ns = kr.min_duration_ns = kr.max_duration_ns = dur_ns;
            ktab_add(&d->kern, a, &kr, ename, kernel_op);
            d->kernel_events++;
            d->kernel_total_ns += dur_ns;
        }
        hlo_flush(d, &cur, &plane_op_time);
    }
    free(uses_tc);
    int64_t span = last > first ? last - first : 0;
    d->total_time_ps += span;
    d->total_op_time_ps += plane_op_time;
    d->idle_ps += span > plane_op_time ? span - plane_op_time : 0;
}

/* ==== TF-level device db ================================================= */

static void build_device_tf(xpv_op_metrics *m) {
    optab t;
    optab_init(&t, &m->arena);
    int64_t idle = 0;
    for (size_t i = 0; i < m->device.n; i++) {
        const xpv_op_metric *d = &m->device.ops[i];
        if (d->is_idle) {
            idle += d->self_time_ps;
            continue;
        }
        xpv_str name, type;
        if (!d->provenance[0]) {
            name = xpv_cstr(d->name);
            type = xpv_cstr("Unknown");
        } else {
            xpv_tf_op op = xpv_parse_tf_op(xpv_cstr(d->provenance));
            name = op.name;
            type = op.type;
            /* JAX provenance ("jit(f)/dot_general[...]") has no ":type";
             * XProf derives the type from the last name component. */
            if (op.category == XPV_OP_UNKNOWN && !strchr(d->provenance, ':')) {
                xpv_str jt = derive_op_type(op.name);
                if (is_jax_op_type(jt)) {
                    const char *br = memchr(jt.ptr, '[', jt.len);
                    if (br) jt.len = (uint32_t)(br - jt.ptr);
                    type = jt;
                }
            }
            if (!type.len) type = xpv_cstr("Unknown");
        }
        int created;
        xpv_op_metric *r = optab_get(&t, 0, name, &created);
        if (created) {
            r->category = arena_str(&m->arena, type);
            r->provenance = d->provenance;
            r->min_time_ps = d->min_time_ps;
        }
        if (d->occurrences > r->occurrences) r->occurrences = d->occurrences;
        r->time_ps += d->time_ps;
        r->self_time_ps += d->self_time_ps;
        if (d->min_time_ps < r->min_time_ps) r->min_time_ps = d->min_time_ps;
        r->flops += d->flops;
        r->model_flops += d->model_flops;
        r->bytes_accessed += d->bytes_accessed;
        r->is_eager |= d->is_eager;
    }
    optab_finish(&t, &m->device_tf, idle, m->device.total_time_ps, m->device.total_op_time_ps);
    optab_free(&t);
}

/* ==== Build ============================================================== */

static void read_perf_env(xpv_op_metrics *m, const xpv_plane *pl) {
    xpv_stat st;
    double v;
    int32_t id;
    if (m->perf.peak_tera_flops_per_second == 0 &&
        (id = xpv_stat_id(pl, "peak_teraflops_per_second")) >= 0 &&
        xpv_plane_stat(pl, id, &st) && xpv_stat_as_double(&st, &v))
        m->perf.peak_tera_flops_per_second = v;
    if (m->perf.peak_hbm_bw_giga_bytes_per_second == 0) {
        if ((id = xpv_stat_id(pl, "peak_hbm_bw_gigabytes_per_second")) >= 0 &&
            xpv_plane_stat(pl, id, &st) && xpv_stat_as_double(&st, &v))
            m->perf.peak_hbm_bw_giga_bytes_per_second = v;
        else if ((id = xpv_stat_id(pl, "memory_bandwidth")) >= 0 &&
                 xpv_plane_stat(pl, id, &st) && xpv_stat_as_double(&st, &v))
            m->perf.peak_hbm_bw_giga_bytes_per_second = v / 1e9;
    }
    if (m->perf.peak_shm_l1_bw_giga_bytes_per_second == 0 &&
        (id = xpv_stat_id(pl, "peak_sram_rd_bw_gigabytes_per_second")) >= 0 &&
        xpv_plane_stat(pl, id, &st) && xpv_stat_as_double(&st, &v))
        m->perf.peak_shm_l1_bw_giga_bytes_per_second = v;
}

xpv_op_metrics *xpv_op_metrics_build(const xpv_hostset *hs, xpv_tool_error *err) {
    if (!hs || hs->n == 0) {
        if (err) {
            err->status = 404;
            snprintf(err->msg, sizeof err->msg, "no host profile to analyse");
        }
        return NULL;
    }
    xpv_op_metrics *m = xpv_xcalloc(1, sizeof *m);
    xpv_arena_init(&m->arena, 64 * 1024);
    host_acc h;
    memset(&h, 0, sizeof h);
    optab_init(&h.tab, &m->arena);
    dev_acc d;
    memset(&d, 0, sizeof d);
    optab_init(&d.tab, &m->arena);
    int has_tpu = 0;

    for (size_t i = 0; i < hs->n; i++) {
        const xpv_profile *p = hs->profiles[i];
        if (!p) continue;
        for (uint32_t k = 0; k < p->nplanes; k++) {
            const xpv_plane *pl = &p->planes[k];
            /* XProf reads the host threads plane "/host:CPU" only. */
            if (xpv_str_eq(pl->name, "/host:CPU")) {
                host_plane(&h, pl);
            } else if (xpv_str_has_prefix(pl->name, "/device:GPU:")) {
                m->has_gpu = 1;
                read_perf_env(m, pl);
                device_plane(&d, &m->arena, pl);
            } else if (xpv_str_has_prefix(pl->name, "/device:TPU:")) {
                has_tpu = 1;
            }
        }
    }
    optab_finish(&h.tab, &m->host, h.idle_ps, h.total_time_ps, h.total_op_time_ps);
    optab_finish(&d.tab, &m->device, d.idle_ps, d.total_time_ps, d.total_op_time_ps);
    m->has_device_ops = d.tab.n > 0;
    build_device_tf(m);

    if (d.kern.n) qsort(d.kern.rows, d.kern.n, sizeof *d.kern.rows, cmp_kernel);
    m->nkernels = d.kern.n < KERNEL_TOP_K ? d.kern.n : KERNEL_TOP_K;
    m->kernels = xpv_arena_calloc(&m->arena, m->nkernels ? m->nkernels : 1, sizeof *m->kernels);
    if (m->nkernels) memcpy(m->kernels, d.kern.rows, m->nkernels * sizeof *m->kernels);
    m->kernel_events = d.kernel_events;
    m->kernel_total_ns = d.kernel_total_ns;
    snprintf(m->device_type, sizeof m->device_type, "%s",
             m->has_gpu ? "GPU" : has_tpu ? "TPU" : "CPU");

    optab_free(&h.tab);
    free(h.ops);
    free(h.acts);
    free(h.stack);
    optab_free(&d.tab);
    free(d.kern.rows);
    free(d.kern.hash);
    free(d.kern.slots);
    free(d.scratch);
    return m;
}

void xpv_op_metrics_free(xpv_op_metrics *m) {
    if (!m) return;
    xpv_arena_free(&m->arena);
    free(m);
}

size_t xpv_op_metrics_size(const xpv_op_metrics *m) {
    return m ? sizeof *m + m->arena.total : 0;
}

double xpv_op_metrics_idle_ratio(const xpv_op_metrics_db *db) {
    if (db->total_time_ps <= 0) return 1.0;
    return 1.0 - (double)db->total_op_time_ps / (double)db->total_time_ps;
}

static void *derived_build(const xpv_hostset *hs, xpv_tool_error *err) {
    return xpv_op_metrics_build(hs, err);
}
static void derived_free(void *d) { xpv_op_metrics_free(d); }
static size_t derived_size(const void *d) { return xpv_op_metrics_size(d); }

const xpv_derived_kind xpv_derived_op_metrics = {
    "op_metrics", derived_build, derived_free, derived_size,
};
