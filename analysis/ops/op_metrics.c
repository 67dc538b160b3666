/*
 * op_metrics.c - host / device op metrics databases and GPU kernel stats
 * (XProf OpMetricsDb + KernelStatsDb), see op_metrics.h for the contract.
 *
 * One pass over the host planes (TF-op activity stacks per thread line) and
 * one pass over the GPU planes (device ops + kernel reports at once).  Stat
 * ids are resolved once per plane; each event's stats are walked at most
 * once (host events: only the two stats read, by raw key).  Aggregation
 * uses open-addressing tables keyed by op name; the per-event path avoids
 * them: a metadata's row is resolved once per plane, and ref-stat strings
 * (tf_op, kernel_details, hlo_op) go through pointer-keyed memos, so an
 * event costs no hashing, parsing or allocation once its strings were seen.
 * Host lines written in start order (what capture does) are matched with a
 * heap of pending ends instead of sorting every begin/end activity.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_metrics.h"
#include "op_metrics_int.h"
#include "roofline.h"
#include "checked.h"
#include "collections.h"

#define KERNEL_TOP_K 1000

/* ==== Small string helpers ============================================== */



static int ends_with(xpv_str a, const char *suf) {
    size_t n = strlen(suf);
    return a.len >= n && memcmp(a.ptr + a.len - n, suf, n) == 0;
}

/* Word-at-a-time multiplicative hash (names are tens of bytes: a byte loop
 * showed up in profiles). */
/* ==== Pointer-keyed memo ================================================ *
 * Most strings the hot loops look up (tf_op, kernel_details, hlo_op) are
 * ref stats: every event carrying the same text points at the same bytes of
 * the file buffer.  A memo keyed on (pointer, length, small ints) then
 * answers "which row / parse result" without hashing or comparing text.
 * Equal pointers imply equal text, so a hit is always right; a miss (inline
 * strings, first sight) takes the slow path and is remembered.  The memo is
 * bounded: when full it is cleared. */

#define MEMO_MAX 32768          /* entries at most (2x slots) */




static void memo_free(memo *m) {
    free(m->keys);
    free(m->vals);
    free(m->used);
    memset(m, 0, sizeof *m);
}

/* Forget every entry (keeps the slots). */
static void memo_clear(memo *m) {
    if (m->n) memset(m->used, 0, m->nslots);
    m->n = 0;
}

static inline uint64_t memo_hash(const memo_key *k) {
    uint64_t h = k->w[0] * 0x9e3779b97f4a7c15ull;
    h ^= k->w[1] * 0xc2b2ae3d27d4eb4full;
    h ^= k->w[2] * 0x165667b19e3779f9ull;
    h ^= k->w[3] * 0x85ebca77c2b2ae63ull;
    h ^= k->w[4] * 0x27d4eb2f165667c5ull;
    h ^= k->w[5] * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 29);
}

/* Value stored for `k`, or NULL. */
static inline const memo_val *memo_find(const memo *m, const memo_key *k) {
    if (!m->n) return NULL;
    size_t j = memo_hash(k) & (m->nslots - 1);
    while (m->used[j]) {
        if (!memcmp(&m->keys[j], k, sizeof *k)) return &m->vals[j];
        j = (j + 1) & (m->nslots - 1);
    }
    return NULL;
}

static void memo_insert(memo *m, const memo_key *k, const memo_val *v) {
    size_t j = memo_hash(k) & (m->nslots - 1);
    while (m->used[j]) {
        if (!memcmp(&m->keys[j], k, sizeof *k)) break;
        j = (j + 1) & (m->nslots - 1);
    }
    if (!m->used[j]) m->n++;
    m->used[j] = 1;
    m->keys[j] = *k;
    m->vals[j] = *v;
}

/* Remember k -> v.  Grows to 2*MEMO_MAX slots, then starts over empty. */
static void memo_put(memo *m, const memo_key *k, const memo_val *v) {
    if ((m->n + 1) * 2 > m->nslots) {
        if (m->nslots >= 2 * MEMO_MAX) {
            memset(m->used, 0, m->nslots);
            m->n = 0;
        } else {
            memo old = *m;
            m->nslots = old.nslots ? old.nslots * 2 : 64;
            m->n = 0;
            m->keys = xpv_xcalloc(m->nslots, sizeof *m->keys);
            m->vals = xpv_xcalloc(m->nslots, sizeof *m->vals);
            m->used = xpv_xcalloc(m->nslots, 1);
            for (size_t i = 0; i < old.nslots; i++)
                if (old.used[i]) memo_insert(m, &old.keys[i], &old.vals[i]);
            memo_free(&old);
        }
    }
    memo_insert(m, k, v);
}

static inline memo_key memo_key6(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e,
                                 uint64_t f) {
    memo_key k = {{a, b, c, d, e, f}};
    return k;
}

static inline uint64_t ptr_u64(const char *p) { return (uint64_t)(uintptr_t)p; }

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
            if (xpv_str_has_prefix_nocase(full, memcpy_ops[i].pre)) {
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
        if (xpv_str_contains(name, pats[i])) return 1;
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
        if (xpv_str_contains(n, infixes[i])) return 1;
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

/* ==== Op table: name (+ program id) -> row ================================ */


/* Add one execution of an op to row `row` (XProf
 * OpMetricsDbBuilder::EnterOp). */
static inline void optab_add(optab *t, uint32_t row, xpv_str category, xpv_str provenance,
                             int is_eager, int64_t occurrences, int64_t time_ps,
                             int64_t children_ps, double flops, double model_flops,
                             double bytes) {
    xpv_op_metric *r = &t->rows[row];
    /* The first non-empty category / provenance sticks (XProf). */
    if (!r->category[0] && category.len) r->category = xpv_om_arena_str(t->arena, category);
    if (!r->provenance[0] && provenance.len) r->provenance = xpv_om_arena_str(t->arena, provenance);
    int64_t self = xpv_sub_i64(time_ps, children_ps, NULL);
    if (self < 0) self = 0;
    r->occurrences = xpv_add_i64(r->occurrences, occurrences, NULL);
    r->time_ps = xpv_add_i64(r->time_ps, time_ps, NULL);
    r->self_time_ps = xpv_add_i64(r->self_time_ps, self, NULL);
    /* a merged entry of several kernels: its time per occurrence */
    int64_t per = occurrences > 1 ? time_ps / occurrences : time_ps;
    if (per < r->min_time_ps) r->min_time_ps = per;
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
    /* Rows are made when an op begins; one that never completed (its begin
     * was popped unmatched) has no occurrence and is left out, as XProf
     * never entered it. */
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++) n += t->rows[i].occurrences > 0;
    db->n = n + 1;
    db->ops = xpv_arena_calloc(t->arena, db->n, sizeof *db->ops);
    n = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->rows[i].occurrences > 0) db->ops[n++] = t->rows[i];
    xpv_op_metric *idle = &db->ops[n];
    idle->name = "IDLE";
    idle->category = "IDLE";
    idle->provenance = "";
    idle->long_name = "";
    idle->time_ps = idle->self_time_ps = idle_ps > 0 ? idle_ps : 0;
    idle->is_idle = 1;
    qsort(db->ops, db->n, sizeof *db->ops, cmp_metric); /* n >= 1 */
    db->total_time_ps = total_time_ps;
    db->total_op_time_ps = total_op_time_ps;
}

/* ==== Host op metrics ==================================================== */

typedef struct host_op {
    int64_t b, e;               /* begin / end, ps */
    uint32_t row;               /* optab row of the op name */
    int is_eager;
    xpv_str type;               /* op type (the row's category) */
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

typedef struct stack_ent {
    uint32_t op;
    int64_t start, children;
} stack_ent;

typedef struct host_acc {
    optab tab;
    int64_t total_time_ps, total_op_time_ps, idle_ps;
    /* scratch, reused per line */
    host_op *ops;
    size_t nops, capops;
    int sorted;                 /* begins of this line are non-decreasing */
    activity *acts;             /* fallback sort */
    size_t capacts;
    activity *heap;             /* pending ends (ts, 2*op+1), a min-heap */
    size_t capheap;
    stack_ent *stack;
    size_t depth, capstack;
    int64_t line_op_time;
    memo tfop;                  /* tf_op stat (ptr, len) -> row + type */
} host_acc;

static void host_push_op(host_acc *h, uint32_t row, xpv_str type, int is_eager, int64_t b,
                         int64_t e) {
    if (h->nops == h->capops) {
        h->capops = h->capops ? h->capops * 2 : 256;
        h->ops = xpv_xrealloc(h->ops, h->capops * sizeof *h->ops);
    }
    if (h->nops && b < h->ops[h->nops - 1].b) h->sorted = 0;
    host_op *o = &h->ops[h->nops++];
    o->b = b;
    o->e = e;
    o->row = row;
    o->is_eager = is_eager;
    o->type = type;
}

/* XProf ProcessTfActivities, one activity at a time.  Begin: push. */
static inline void host_begin(host_acc *h, uint32_t op, int64_t ts) {
    if (h->depth == h->capstack) {
        h->capstack = h->capstack ? h->capstack * 2 : 64;
        h->stack = xpv_xrealloc(h->stack, h->capstack * sizeof *h->stack);
    }
    stack_ent *s = &h->stack[h->depth++];
    s->op = op;
    s->start = ts;
    s->children = 0;
}

/* End: pop until the matching begin (entries above it are dropped; an end
 * without a begin empties the stack); self = time minus direct children. */
static inline void host_end(host_acc *h, uint32_t op, int64_t ts) {
    size_t d = h->depth;
    while (d > 0 && h->stack[d - 1].op != op) d--;
    if (d == 0) {
        h->depth = 0;
        return;
    }
    int64_t start = h->stack[d - 1].start, children = h->stack[d - 1].children;
    h->depth = d - 1;
    int64_t dur = xpv_sub_i64(ts, start, NULL);
    const host_op *ho = &h->ops[op];
    int64_t self = xpv_sub_i64(dur, children, NULL);
    if (self < 0) self = 0;
    optab_add(&h->tab, ho->row, ho->type, mkstr("", 0), ho->is_eager, 1, dur, children, 0, 0,
              0);
    h->line_op_time = xpv_add_i64(h->line_op_time, self, NULL);
    if (h->depth > 0)
        h->stack[h->depth - 1].children = xpv_add_i64(h->stack[h->depth - 1].children, dur, NULL);
}

static inline int act_less(const activity *x, const activity *y) {
    return x->ts < y->ts || (x->ts == y->ts && x->seq < y->seq);
}

static void heap_push(host_acc *h, size_t *n, activity a) {
    if (*n == h->capheap) {
        h->capheap = h->capheap ? h->capheap * 2 : 64;
        h->heap = xpv_xrealloc(h->heap, h->capheap * sizeof *h->heap);
    }
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!act_less(&a, &h->heap[p])) break;
        h->heap[i] = h->heap[p];
        i = p;
    }
    h->heap[i] = a;
}

static activity heap_pop(host_acc *h, size_t *n) {
    activity top = h->heap[0], last = h->heap[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && act_less(&h->heap[c + 1], &h->heap[c])) c++;
        if (!act_less(&h->heap[c], &last)) break;
        h->heap[i] = h->heap[c];
        i = c;
    }
    if (*n) h->heap[i] = last;
    return top;
}

/* Match begin/end activities of one line, in (time, push order) order:
 * XProf's stable sort by timestamp.  Lines whose events come sorted by
 * start (what capture writes) merge the begins with a heap of pending ends
 * (O(n log depth)); other lines sort all activities. */
static void host_process_line(host_acc *h) {
    size_t n = h->nops;
    if (n == 0) return;
    h->depth = 0;
    h->line_op_time = 0;
    int64_t first, last;
    if (h->sorted) {
        size_t nh = 0;
        first = h->ops[0].b;
        last = INT64_MIN;
        for (size_t i = 0; i < n; i++) {
            /* Ends at or before this begin come first (end i' < begin i
             * when ts ties, since i' < i). */
            while (nh && h->heap[0].ts <= h->ops[i].b) {
                activity a = heap_pop(h, &nh);
                host_end(h, a.seq >> 1, a.ts);
            }
            host_begin(h, (uint32_t)i, h->ops[i].b);
            activity e = {h->ops[i].e, (uint32_t)(2 * i + 1)};
            heap_push(h, &nh, e);
        }
        while (nh) {
            activity a = heap_pop(h, &nh);
            host_end(h, a.seq >> 1, a.ts);
            last = a.ts;
        }
        if (last == INT64_MIN) last = first;
    } else {
        size_t na = 2 * n;
        if (na > h->capacts) {
            h->capacts = na;
            h->acts = xpv_xrealloc(h->acts, h->capacts * sizeof *h->acts);
        }
        for (size_t i = 0; i < n; i++) {
            h->acts[2 * i].ts = h->ops[i].b;
            h->acts[2 * i].seq = (uint32_t)(2 * i);
            h->acts[2 * i + 1].ts = h->ops[i].e;
            h->acts[2 * i + 1].seq = (uint32_t)(2 * i + 1);
        }
        qsort(h->acts, na, sizeof *h->acts, cmp_activity);
        for (size_t k = 0; k < na; k++) {
            const activity *a = &h->acts[k];
            if (a->seq & 1) host_end(h, a->seq >> 1, a->ts);
            else host_begin(h, a->seq >> 1, a->ts);
        }
        first = h->acts[0].ts;
        last = h->acts[na - 1].ts;
    }
    /* XProf SetTotalTimePs: total = max(span, op time) per line, whose
     * difference is the line's IDLE (AddIdleOp before combining). */
    int64_t span = xpv_sub_i64(last, first, NULL);
    if (span < h->line_op_time) span = h->line_op_time;
    h->total_time_ps = xpv_add_i64(h->total_time_ps, span, NULL);
    h->total_op_time_ps = xpv_add_i64(h->total_op_time_ps, h->line_op_time, NULL);
    h->idle_ps = xpv_add_i64(h->idle_ps, span > h->line_op_time ? span - h->line_op_time : 0, NULL);
}

/* Stat ids a host plane needs, resolved once. */
typedef struct host_ids {
    int32_t eager, tf_op, cat, stage, stage_cat;
} host_ids;

/* ParseTfOpFullname of event metadata `mi`'s name, once per metadata (many
 * metadata have no event on these lines).  PyTorch traces (converted by
 * chrome_trace.c) mark operators with the stat cat="cpu_op" ("Operator" in
 * 2021 Kineto): such an event is an op whose type is its name
 * (aten::conv2d).  XPlane profiles have no "cat" stat, so this costs them
 * nothing. */
static const xpv_tf_op *meta_op(const xpv_plane *pl, const xpv_line *ln, const xpv_event *ev,
                                const host_ids *ids, xpv_tf_op *meta_ops, uint8_t *meta_seen) {
    uint32_t mi = ev->meta;
    if (mi >= pl->nevent_meta) return NULL;
    if (!meta_seen[mi]) {
        meta_ops[mi] = xpv_parse_tf_op(pl->event_meta[mi].name);
        meta_seen[mi] = 1;
        xpv_stat cs;
        if (ids->cat >= 0 && meta_ops[mi].category == XPV_OP_UNKNOWN &&
            xpv_event_stat(pl, ln, ev, ids->cat, &cs) && cs.kind == XPV_STAT_STR &&
            (xpv_str_eq(cs.v.s, "cpu_op") || xpv_str_eq(cs.v.s, "Operator")) &&
            pl->event_meta[mi].name.len) {
            meta_ops[mi].category = XPV_OP_PYTORCH;
            meta_ops[mi].name = pl->event_meta[mi].name;
            meta_ops[mi].type = pl->event_meta[mi].name;
        }
    }
    return &meta_ops[mi];
}

/* An op of the plane's op map: its row and type (the row's category). */
typedef struct host_ent {
    uint32_t row;
    xpv_str type;
} host_ent;

/* XProf CollectTfOpsFromHostThreadsXPlane for a plane with input-pipeline
 * stages: a map over every line (derived ones too) from an id to its op,
 * the first event of an id deciding.  An event with a stage id is an op
 * only with a stage category too: keyed by the stage id, named by the
 * event, typed by the category (ParseTfOpFullname with kInputPipeline; an
 * empty category parses the name), its row keyed (stage id, name).  Other
 * events are keyed by metadata id when their name parses to an op; both
 * kinds of id share the map, as in XProf.  Returns the entries (malloc'd)
 * and fills `map` (id -> entry index + 1). */
static host_ent *collect_stage_ops(host_acc *h, const xpv_plane *pl, const host_ids *ids,
                                   xpv_tf_op *meta_ops, uint8_t *meta_seen, i64map *map) {
    host_ent *ents = NULL;
    size_t n = 0, cap = 0;
    for (uint32_t l = 0; l < pl->nlines; l++) {
        const xpv_line *ln = &pl->lines[l];
        for (uint32_t k = 0; k < ln->nevents; k++) {
            const xpv_event *ev = &ln->events[k];
            if (ev->meta >= pl->nevent_meta || !pl->event_meta[ev->meta].name.len) continue;
            xpv_str name = pl->event_meta[ev->meta].name;
            xpv_stat st;
            int64_t key, pid = 0;
            xpv_tf_op op;
            if (ev->wire != XPV_NO_STATS && xpv_event_stat(pl, ln, ev, ids->stage, &st)) {
                xpv_stat cs;
                if (ids->stage_cat < 0 || !xpv_event_stat(pl, ln, ev, ids->stage_cat, &cs))
                    continue;
                key = 0;
                xpv_stat_as_int(&st, &key);
                pid = key;
                xpv_str cat = cs.kind == XPV_STAT_STR ? cs.v.s : xpv_cstr("");
                if (cat.len) op = (xpv_tf_op){XPV_OP_UNKNOWN, name, cat};
                else op = xpv_parse_tf_op(name);
            } else {
                const xpv_tf_op *mo = meta_op(pl, ln, ev, ids, meta_ops, meta_seen);
                if (!mo || mo->category == XPV_OP_UNKNOWN) continue;
                op = *mo;
                key = pl->event_meta[ev->meta].key;
            }
            uint32_t *slot = i64map_slot(map, key);
            if (*slot) continue; /* the first event of an id decides */
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                ents = xpv_xrealloc(ents, cap * sizeof *ents);
            }
            ents[n].row = xpv_om_optab_row(&h->tab, pid, op.name);
            ents[n].type = op.type;
            *slot = (uint32_t)++n; /* entry index + 1 */
        }
    }
    return ents;
}

static void host_plane(host_acc *h, const xpv_plane *pl) {
    uint32_t nm = pl->nevent_meta;
    xpv_tf_op *meta_ops = xpv_xcalloc(nm ? nm : 1, sizeof *meta_ops);
    uint32_t *meta_row = xpv_xcalloc(nm ? nm : 1, sizeof *meta_row); /* row + 1 */
    uint8_t *meta_seen = xpv_xcalloc(nm ? nm : 1, 1);
    memo_clear(&h->tfop); /* keys are pointers into this plane's strings */
    host_ids ids = {xpv_stat_id(pl, "is_eager"), xpv_stat_id(pl, "tf_op"), xpv_stat_id(pl, "cat"),
                    xpv_stat_id(pl, "input_pipeline_stage_id"),
                    xpv_stat_id(pl, "input_pipeline_stage_category")};
    /* Planes without stage stats (every profile before tf.data wrote
     * them) key ops by metadata alone: one parse per metadata, no map. */
    i64map stage_map = {0};
    host_ent *ents = ids.stage >= 0
                         ? collect_stage_ops(h, pl, &ids, meta_ops, meta_seen, &stage_map)
                         : NULL;
    /* The per-event stats in one pass over an event's stats (decoding
     * only the matches), resolved once per plane. */
    const int32_t hids[3] = {ids.eager, ids.tf_op, ids.stage};
    xpv_stat_set hset;
    xpv_stat_set_init(&hset, pl, hids, 3);

    for (uint32_t l = 0; l < pl->nlines; l++) {
        const xpv_line *ln = &pl->lines[l];
        if (xpv_line_is_derived(ln)) continue;
        h->nops = 0;
        h->sorted = 1;
        int may = xpv_line_may_have(ln, &hset);
        for (uint32_t k = 0; k < ln->nevents; k++) {
            const xpv_event *ev = &ln->events[k];
            uint32_t mi = ev->meta;
            int64_t is_eager = 0;
            xpv_str tf_op = {NULL, 0};
            int has_tf_op = 0, has_stage = 0;
            int64_t stage = 0;
            if (may && ev->wire != XPV_NO_STATS) {
                /* The last occurrence of each, as xpv_event_stat finds. */
                xpv_stat st[3];
                uint32_t got = xpv_event_stats_in(pl, ln, ev, &hset, st, NULL);
                if (got & 1) xpv_stat_as_int(&st[0], &is_eager);
                if ((got & 2) && st[1].kind == XPV_STAT_STR && st[1].v.s.len) {
                    tf_op = st[1].v.s;
                    has_tf_op = 1 + st[1].is_ref;
                }
                if (got & 4) {
                    has_stage = 1;
                    xpv_stat_as_int(&st[2], &stage);
                }
            }
            int64_t b = ev->start_ps, e = xpv_add_i64(ev->start_ps, ev->dur_ps, NULL);
            if (ents) {
                /* XProf CollectTfActivities: the stage id stands for the
                 * metadata id when the event has one. */
                uint32_t v;
                int64_t key = has_stage ? stage : mi < nm ? pl->event_meta[mi].key : INT64_MIN;
                if (i64map_get(&stage_map, key, &v))
                    host_push_op(h, ents[v - 1].row, ents[v - 1].type, is_eager != 0, b, e);
            } else {
                const xpv_tf_op *mo = meta_op(pl, ln, ev, &ids, meta_ops, meta_seen);
                if (mo && mo->category != XPV_OP_UNKNOWN) {
                    if (!meta_row[mi]) meta_row[mi] = xpv_om_optab_row(&h->tab, 0, mo->name) + 1;
                    host_push_op(h, meta_row[mi] - 1, mo->type, is_eager != 0, b, e);
                }
            }
            if (has_tf_op) {
                /* Only ref stats repeat their pointer: inline strings skip
                 * the memo.  XProf skips an empty tf_op. */
                memo_key key = memo_key6(ptr_u64(tf_op.ptr), tf_op.len, 0, 0, 0, 0);
                const memo_val *v = has_tf_op == 2 ? memo_find(&h->tfop, &key) : NULL;
                memo_val nv;
                if (!v) {
                    xpv_tf_op op = xpv_parse_tf_op(tf_op);
                    nv.row = xpv_om_optab_row(&h->tab, 0, op.name);
                    nv.a = op.type;
                    nv.b = op.name;
                    if (has_tf_op == 2) memo_put(&h->tfop, &key, &nv);
                    v = &nv;
                }
                host_push_op(h, v->row, v->a, 0, b, e);
            }
        }
        host_process_line(h);
    }
    free(ents);
    i64map_free(&stage_map);
    free(meta_ops);
    free(meta_row);
    free(meta_seen);
}

/* ==== Device op metrics + kernel reports ================================ */


static uint64_t kernel_hash(const xpv_kernel_report *r, xpv_str name, xpv_str op) {
    uint64_t h = xpv_om_hash_bytes(XPV_OM_HASH_SEED, name.ptr, name.len);
    h = xpv_om_hash_bytes(h, op.ptr, op.len);
    h = xpv_om_hash_bytes(h, r->grid, sizeof r->grid);
    h = xpv_om_hash_bytes(h, r->block, sizeof r->block);
    uint32_t v[5] = {r->registers_per_thread, r->static_shmem_bytes, r->dynamic_shmem_bytes,
                     (uint32_t)r->is_kernel_using_tensor_core,
                     (uint32_t)r->is_op_tensor_core_eligible};
    return xpv_om_hash_bytes(h, v, sizeof v);
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

/* 1 when the NUL-terminated `c` holds exactly the bytes of `s` (an empty
 * slice may have a NULL pointer). */
static int cstr_is(const char *c, xpv_str s) {
    return strlen(c) == s.len && (s.len == 0 || !memcmp(c, s.ptr, s.len));
}

/* Fold `k` (one or more occurrences) into row `i`. */
static inline void ktab_bump(ktab *t, size_t i, const xpv_kernel_report *k) {
    xpv_kernel_report *r = &t->rows[i];
    r->occurrences = xpv_add_u64(r->occurrences, k->occurrences, NULL);
    r->total_duration_ns = xpv_add_u64(r->total_duration_ns, k->total_duration_ns, NULL);
    if (k->min_duration_ns < r->min_duration_ns) r->min_duration_ns = k->min_duration_ns;
    if (k->max_duration_ns > r->max_duration_ns) r->max_duration_ns = k->max_duration_ns;
}

/* Merge one kernel report (names still pointing into the profile) into the
 * table; strings are copied into `a` only for new keys.  Returns the row. */
static uint32_t ktab_add(ktab *t, xpv_arena *a, const xpv_kernel_report *k, xpv_str name,
                         xpv_str op) {
    uint64_t h = kernel_hash(k, name, op);
    if ((t->n + 1) * 2 > t->nslots) xpv_om_slots_rehash(&t->slots, &t->nslots, t->hash, t->n);
    size_t j = h & (t->nslots - 1);
    while (t->slots[j]) {
        size_t i = t->slots[j] - 1;
        xpv_kernel_report *r = &t->rows[i];
        if (t->hash[i] == h && cstr_is(r->name, name) && cstr_is(r->op_name, op)) {
            xpv_kernel_report tmp = *k;
            tmp.name = r->name;
            tmp.op_name = r->op_name;
            if (kernel_key_eq(r, &tmp)) {
                ktab_bump(t, i, k);
                return (uint32_t)i;
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
    t->rows[i].name = xpv_om_arena_str(a, name);
    t->rows[i].op_name = xpv_om_arena_str(a, op);
    t->hash[i] = h;
    t->slots[j] = (uint32_t)i + 1;
    return (uint32_t)i;
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


/* Stat ids a GPU plane needs, resolved once. */
typedef struct dev_ids {
    int32_t tf_op, level0, hlo_op, program_id, group_id, is_eager, name,
        hlo_category, flops, model_flops, bytes, kernel_details, equation, occ,
        memcpy_details;
} dev_ids;

typedef struct dev_ev {
    xpv_str tf_op, hlo_op, name, hlo_category, kernel_details, equation, memcpy_details;
    int64_t program_id, group_id, is_eager;
    int has_program_id, has_group_id, has_occ;
    unsigned inline_strs;       /* DS_* bits: string stats that were not refs */
    double flops, model_flops, bytes, occ;
} dev_ev;

/* dev_ev.inline_strs bits: an inline string has a pointer of its own per
 * event, so memos keyed on it would only miss. */
enum { DS_TF_OP = 1, DS_HLO_OP = 2, DS_NAME = 4, DS_DETAILS = 8, DS_EQUATION = 16 };

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
        unsigned inl = is_str && !st.is_ref;
        if (m == ids->tf_op && is_str) {
            d->tf_op = st.v.s;
            d->inline_strs |= inl * DS_TF_OP;
        } else if (m == ids->level0 && is_str && !d->tf_op.len) {
            d->tf_op = st.v.s;
            d->inline_strs |= inl * DS_TF_OP;
        } else if (m == ids->hlo_op && is_str) {
            d->hlo_op = st.v.s;
            d->inline_strs |= inl * DS_HLO_OP;
        } else if (m == ids->name && is_str) {
            d->name = st.v.s;
            d->inline_strs |= inl * DS_NAME;
        } else if (m == ids->hlo_category && is_str) {
            d->hlo_category = st.v.s;
        } else if (m == ids->kernel_details && is_str) {
            d->kernel_details = st.v.s;
            d->inline_strs |= inl * DS_DETAILS;
        } else if (m == ids->equation && is_str) {
            d->equation = st.v.s;
            d->inline_strs |= inl * DS_EQUATION;
        }
        else if (m == ids->program_id) d->has_program_id = xpv_stat_as_int(&st, &d->program_id);
        else if (m == ids->group_id) d->has_group_id = xpv_stat_as_int(&st, &d->group_id);
        else if (m == ids->is_eager) xpv_stat_as_int(&st, &d->is_eager);
        else if (m == ids->flops) xpv_stat_as_double(&st, &d->flops);
        else if (m == ids->model_flops) xpv_stat_as_double(&st, &d->model_flops);
        else if (m == ids->bytes) xpv_stat_as_double(&st, &d->bytes);
        else if (m == ids->memcpy_details && is_str) d->memcpy_details = st.v.s;
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

/* Consecutive kernels of one HLO op (same group and program) merge into
 * one entry, as XProf's HLOTracker does, but each kernel is an occurrence
 * and the op's per-occurrence flops and bytes count once per kernel
 * (DeviceOpMetricsDbBuilder::EnterOp scales them by the occurrences): the
 * three back-to-back kernels of a cuBLAS custom-call are 3 occurrences of
 * 611 us, not one of 1,833 us at a third of the rate (issue 29). */
typedef struct hlo_cur {
    int active;
    int64_t kernels;            /* events merged */
    int memo_ok;                /* op is a slice of a ref stat */
    xpv_str op, category, provenance;
    int64_t program_id, group_id, dur;
    int is_eager;
    double flops, model_flops, bytes;
} hlo_cur;

/* 1 when `row` runs for the first time on this plane (recorded): XProf's
 * EnterOpMetadata takes is_eager only then; planes' dbs are OR-combined. */
static int first_on_plane(dev_acc *d, uint32_t row) {
    if (row >= d->caprow) {
        size_t cap = d->caprow ? d->caprow : 64;
        while (cap <= row) cap *= 2;
        d->row_plane = xpv_xrealloc(d->row_plane, cap * sizeof *d->row_plane);
        memset(d->row_plane + d->caprow, 0, (cap - d->caprow) * sizeof *d->row_plane);
        d->caprow = cap;
    }
    if (d->row_plane[row] == d->plane_no) return 0;
    d->row_plane[row] = d->plane_no;
    return 1;
}

static void hlo_flush(dev_acc *d, hlo_cur *c, int64_t *line_op_time) {
    if (!c->active) return;
    memo_key key = memo_key6(ptr_u64(c->op.ptr), c->op.len, (uint64_t)c->program_id, 0, 0, 0);
    const memo_val *v = c->memo_ok ? memo_find(&d->hlo, &key) : NULL;
    uint32_t row;
    if (v) {
        row = v->row;
    } else {
        memo_val nv = {xpv_om_optab_row(&d->tab, c->program_id, c->op), {"", 0}, {"", 0}};
        if (c->memo_ok) memo_put(&d->hlo, &key, &nv);
        row = nv.row;
    }
    double k = (double)c->kernels;
    optab_add(&d->tab, row, c->category, c->provenance, first_on_plane(d, row) && c->is_eager,
              c->kernels, c->dur, 0, c->flops * k, c->model_flops * k, c->bytes * k);
    *line_op_time = xpv_add_i64(*line_op_time, c->dur, NULL);
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
        xpv_stat_id(pl, "theoretical_occupancy_pct"), xpv_stat_id(pl, "memcpy_details"),
    };
    /* Memo keys hold this plane's metadata indices and string pointers. */
    memo_clear(&d->tfop);
    memo_clear(&d->hlo);
    memo_clear(&d->kern_memo);
    d->plane_no++;
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
            int64_t ev_end = xpv_add_i64(ev->start_ps, ev->dur_ps, NULL);
            if (ev_end > last) last = ev_end;
            dev_ev s;
            dev_read_stats(pl, ln, ev, &ids, &s);
            if (s.bytes <= 0 && s.memcpy_details.len) {
                /* A copy moves its `size` bytes: the bandwidth columns of
                 * its op need them when no bytes_accessed stat says so. */
                xpv_memcpy_info mi;
                if (xpv_parse_memcpy_details(s.memcpy_details, &mi) && mi.bytes > 0)
                    s.bytes = (double)mi.bytes;
            }
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
                    cur.memo_ok = !(s.inline_strs & DS_HLO_OP);
                    cur.op = op;
                    cur.category = s.hlo_category.len ? s.hlo_category : hlo_base_name(op);
                    cur.provenance = s.name;
                    cur.program_id = s.program_id;
                    cur.group_id = s.group_id;
                    cur.flops = s.flops;
                    cur.model_flops = s.model_flops;
                    cur.bytes = s.bytes;
                }
                cur.dur = xpv_add_i64(cur.dur, ev->dur_ps, NULL);
                cur.kernels++;
                cur.is_eager = s.is_eager != 0;
                /* XProf takes the HLO instruction's framework op name from
                 * the module proto; the `name` stat carries the same text. */
                if (s.name.len) kernel_op = s.name;
                else if (s.tf_op.len) kernel_op = xpv_parse_tf_op(s.tf_op).name;
            } else if (s.tf_op.len) {
                hlo_flush(d, &cur, &plane_op_time);
                /* Row of "<tf op name>/<kernel name>", memoised per
                 * (kernel metadata, tf_op bytes). */
                memo_key key = memo_key6(ev->meta, ptr_u64(s.tf_op.ptr), s.tf_op.len, 0, 0, 0);
                int tf_memo = !(s.inline_strs & DS_TF_OP);
                const memo_val *v = tf_memo ? memo_find(&d->tfop, &key) : NULL;
                memo_val nv;
                if (!v) {
                    xpv_tf_op op = xpv_parse_tf_op(s.tf_op);
                    size_t need = (size_t)op.name.len + 1 + ename.len;
                    if (need > d->capscratch) {
                        d->capscratch = need * 2;
                        d->scratch = xpv_xrealloc(d->scratch, d->capscratch);
                    }
                    if (op.name.len) memcpy(d->scratch, op.name.ptr, op.name.len);
                    d->scratch[op.name.len] = '/';
                    if (ename.len) memcpy(d->scratch + op.name.len + 1, ename.ptr, ename.len);
                    nv.row = xpv_om_optab_row(&d->tab, 0, mkstr(d->scratch, need));
                    nv.a = op.type;
                    nv.b = op.name;
                    if (tf_memo) memo_put(&d->tfop, &key, &nv);
                    v = &nv;
                }
                optab_add(&d->tab, v->row, v->a, s.tf_op,
                          first_on_plane(d, v->row) && s.is_eager != 0, 1, ev->dur_ps, 0,
                          s.flops, s.model_flops, s.bytes);
                plane_op_time = xpv_add_i64(plane_op_time, ev->dur_ps, NULL);
                kernel_op = v->b;
            }
            /* Kernel stats: whole-ns duration > 0 and kernel_details. */
            uint64_t dur_ns = ev->dur_ps > 0 ? (uint64_t)ev->dur_ps / 1000 : 0;
            if (dur_ns == 0 || !s.kernel_details.len) continue;
            xpv_kernel_report kr;
            memset(&kr, 0, sizeof kr);
            kr.occurrences = 1;
            kr.total_duration_ns = kr.min_duration_ns = kr.max_duration_ns = dur_ns;
            d->kernel_events++;
            d->kernel_total_ns = xpv_add_u64(d->kernel_total_ns, dur_ns, NULL);
            /* Every field of the kernel key is a function of these: a memo
             * hit skips parsing kernel_details and hashing the names. */
            uint64_t occ_bits = 0;
            if (s.has_occ) memcpy(&occ_bits, &s.occ, sizeof occ_bits);
            memo_key key = memo_key6(
                (uint64_t)ev->meta << 32 | s.kernel_details.len,
                ptr_u64(s.kernel_details.ptr),
                (uint64_t)kernel_op.len << 32 | s.equation.len, ptr_u64(kernel_op.ptr),
                ptr_u64(s.equation.ptr), s.has_occ ? occ_bits : 0);
            int k_memo = !s.inline_strs;
            const memo_val *v = k_memo ? memo_find(&d->kern_memo, &key) : NULL;
            if (v && (v->a.len != 0) == (s.has_occ != 0)) {
                ktab_bump(&d->kern, v->row, &kr);
                continue;
            }
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
            /* a.len records has_occ (occ 0.0 vs no occ stat share a key) */
            memo_val nv = {ktab_add(&d->kern, a, &kr, ename, kernel_op),
                           {"", s.has_occ ? 1u : 0u}, {"", 0}};
            if (k_memo) memo_put(&d->kern_memo, &key, &nv);
        }
        hlo_flush(d, &cur, &plane_op_time);
    }
    free(uses_tc);
    /* XProf SetTotalTimePs per plane: the streams' op time can exceed the
     * plane's span (overlapping streams); the total is then the op time
     * and IDLE 0. */
    int64_t span = last > first ? xpv_sub_i64(last, first, NULL) : 0;
    d->total_time_ps = xpv_add_i64(d->total_time_ps, span > plane_op_time ? span : plane_op_time,
                                   NULL);
    d->total_op_time_ps = xpv_add_i64(d->total_op_time_ps, plane_op_time, NULL);
    d->idle_ps = xpv_add_i64(d->idle_ps, span > plane_op_time ? span - plane_op_time : 0, NULL);
}

/* ==== TF-level device db ================================================= */

/* XProf CreateTfMetricsDbFromDeviceOpMetricsDb walks the device db in its
 * own order, the order ops first appeared (hosts, planes, events: `dev`'s
 * row order here; a row never completed has no occurrence and is not in
 * the db); the TF op's is_eager is the last device op's
 * (UpdateTfOpMetricsWithDeviceOpMetrics sets it, it does not OR). */
static void build_device_tf(xpv_op_metrics *m, const optab *dev) {
    optab t;
    xpv_om_optab_init(&t, &m->arena);
    int64_t idle = 0;
    for (size_t i = 0; i < m->device.n; i++)
        if (m->device.ops[i].is_idle)
            idle = xpv_add_i64(idle, m->device.ops[i].self_time_ps, NULL);
    for (size_t i = 0; i < dev->n; i++) {
        const xpv_op_metric *d = &dev->rows[i];
        if (d->occurrences <= 0) continue;
        xpv_str name, type;
        if (!d->provenance[0]) {
            name = xpv_cstr(d->name);
            type = xpv_cstr("Unknown");
        } else if (strstr(d->provenance, "::")) {
            /* A PyTorch (or other C++-qualified) op, "aten::addmm": not a
             * TF "name:Type"; the op is its own type, as on the host. */
            name = type = xpv_cstr(d->provenance);
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
        uint32_t row = xpv_om_optab_row(&t, 0, name); /* may move t.rows */
        xpv_op_metric *r = &t.rows[row];
        if (r->min_time_ps == INT64_MAX) { /* created */
            r->category = xpv_om_arena_str(&m->arena, type);
            r->provenance = d->provenance;
            r->min_time_ps = d->min_time_ps;
        }
        if (d->occurrences > r->occurrences) r->occurrences = d->occurrences;
        r->time_ps = xpv_add_i64(r->time_ps, d->time_ps, NULL);
        r->self_time_ps = xpv_add_i64(r->self_time_ps, d->self_time_ps, NULL);
        if (d->min_time_ps < r->min_time_ps) r->min_time_ps = d->min_time_ps;
        r->flops += d->flops;
        r->model_flops += d->model_flops;
        r->bytes_accessed += d->bytes_accessed;
        r->is_eager = d->is_eager;
    }
    optab_finish(&t, &m->device_tf, idle, m->device.total_time_ps, m->device.total_op_time_ps);
    xpv_om_optab_free(&t);
}

/* ==== Build: one part per host, then the parts combined ================== */

/* What one host contributes: its tables before they are finished (rows in
 * the order they were made, ops that never completed included), so that
 * combining the hosts' parts in host order builds the very tables one pass
 * over every host would (same rows in the same order, same sums). */
struct xpv_om_part {
    optab host_tab, dev_tab;
    ktab kern;
    int64_t h_total_ps, h_op_ps, h_idle_ps;
    int64_t d_total_ps, d_op_ps, d_idle_ps;
    uint64_t kernel_events, kernel_total_ns;
    int64_t tpu_busy_ps, tpu_idle_ps;
    int has_gpu, has_tpu;
    xpv_perf_env perf;
    int perf_last;              /* kind of the last plane read: -1 none,
                                 * 0 TPU, 1 GPU */
    int occ_achieved, occ_theoretical;
    xpv_arena arena;            /* the tables' strings */
};

/* Kernel stats' occupancy column: which GPU planes with kernel details
 * say their occupancy is achieved, which theoretical. */
static void read_occupancy(xpv_om_part *pt, const xpv_plane *pl) {
    if (xpv_stat_id(pl, "kernel_details") < 0) return;
    xpv_stat st;
    if (xpv_plane_stat(pl, xpv_stat_id(pl, "occupancy_kind"), &st) && st.kind == XPV_STAT_STR &&
        xpv_str_eq(st.v.s, "achieved"))
        pt->occ_achieved = 1;
    else
        pt->occ_theoretical = 1;
}

/* TensorCore planes; SparseCore planes feed XProf's TPU db only as
 * children of offloading ops (not done here). */
/* TensorCore planes; SparseCore planes feed XProf's TPU db only as
 * children of offloading ops (not done here). */
static int is_tensor_core(const xpv_plane *pl) {
    return xpv_str_has_prefix(pl->name, "/device:TPU:") &&
           !xpv_str_contains(pl->name, "SparseCore");
}

xpv_om_part *xpv_op_metrics_part_build(const xpv_profile *p) {
    xpv_om_part *pt = xpv_xcalloc(1, sizeof *pt);
    xpv_arena_init(&pt->arena, 64 * 1024);
    pt->perf_last = -1;
    host_acc h;
    memset(&h, 0, sizeof h);
    xpv_om_optab_init(&h.tab, &pt->arena);
    dev_acc d;
    memset(&d, 0, sizeof d);
    xpv_om_optab_init(&d.tab, &pt->arena);
    /* TensorCore planes are read first, on several threads (each plane on
     * its own), and added to the device db in plane order below. */
    const xpv_plane **tpls = xpv_xcalloc(p && p->nplanes ? p->nplanes : 1, sizeof *tpls);
    size_t ntpu = 0, itpu = 0;
    for (uint32_t k = 0; p && k < p->nplanes; k++)
        if (is_tensor_core(&p->planes[k])) tpls[ntpu++] = &p->planes[k];
    xpv_om_tpu_res *tres = xpv_om_tpu_read(tpls, ntpu);
    free(tpls);
    for (uint32_t k = 0; p && k < p->nplanes; k++) {
        const xpv_plane *pl = &p->planes[k];
        /* XProf reads the host threads plane "/host:CPU" only. */
        if (xpv_str_eq(pl->name, "/host:CPU")) {
            host_plane(&h, pl);
        } else if (xpv_str_has_prefix(pl->name, "/device:GPU:")) {
            pt->has_gpu = 1;
            xpv_perf_env_read(&pt->perf, pl, 1);
            pt->perf_last = 1;
            read_occupancy(pt, pl);
            device_plane(&d, &pt->arena, pl);
        } else if (is_tensor_core(pl)) {
            pt->has_tpu = 1;
            xpv_perf_env_read(&pt->perf, pl, 0);
            pt->perf_last = 0;
            xpv_om_tpu_add(&d, tres, itpu++);
        }
    }
    xpv_om_tpu_res_free(tres, ntpu);
    pt->host_tab = h.tab;
    pt->h_total_ps = h.total_time_ps;
    pt->h_op_ps = h.total_op_time_ps;
    pt->h_idle_ps = h.idle_ps;
    pt->dev_tab = d.tab;
    pt->kern = d.kern;
    pt->d_total_ps = d.total_time_ps;
    pt->d_op_ps = d.total_op_time_ps;
    pt->d_idle_ps = d.idle_ps;
    pt->kernel_events = d.kernel_events;
    pt->kernel_total_ns = d.kernel_total_ns;
    pt->tpu_busy_ps = d.tpu_busy_ps;
    pt->tpu_idle_ps = d.tpu_idle_ps;
    free(h.ops);
    free(h.acts);
    free(h.stack);
    free(h.heap);
    memo_free(&h.tfop);
    memo_free(&d.tfop);
    memo_free(&d.hlo);
    memo_free(&d.kern_memo);
    free(d.scratch);
    free(d.row_plane);
    return pt;
}

void xpv_op_metrics_part_free(xpv_om_part *pt) {
    if (!pt) return;
    xpv_om_optab_free(&pt->host_tab);
    xpv_om_optab_free(&pt->dev_tab);
    free(pt->kern.rows);
    free(pt->kern.hash);
    free(pt->kern.slots);
    xpv_arena_free(&pt->arena);
    free(pt);
}

size_t xpv_op_metrics_part_size(const xpv_om_part *pt) {
    if (!pt) return 0;
    size_t rows = pt->host_tab.cap + pt->dev_tab.cap;
    return sizeof *pt + pt->arena.total +
           rows * (sizeof(xpv_op_metric) + 2 * sizeof(uint64_t) + sizeof(uint32_t)) +
           (pt->host_tab.nslots + pt->dev_tab.nslots + pt->kern.nslots) * sizeof(uint32_t) +
           pt->kern.cap * (sizeof(xpv_kernel_report) + sizeof(uint64_t));
}

/* Fold the rows of `from` into `into` in their order, as optab_add folds
 * occurrences: first non-empty strings stick, counts and times add. */
static void optab_merge(optab *into, const optab *from) {
    for (size_t i = 0; i < from->n; i++) {
        const xpv_op_metric *s = &from->rows[i];
        uint32_t row = xpv_om_optab_row(into, from->pid[i], mkstr(s->name, from->len[i]));
        xpv_op_metric *r = &into->rows[row];
        if (!r->category[0] && s->category[0])
            r->category = xpv_om_arena_str(into->arena, xpv_cstr(s->category));
        if (!r->provenance[0] && s->provenance[0])
            r->provenance = xpv_om_arena_str(into->arena, xpv_cstr(s->provenance));
        if (!r->long_name[0] && s->long_name[0])
            r->long_name = xpv_om_arena_str(into->arena, xpv_cstr(s->long_name));
        r->occurrences = xpv_add_i64(r->occurrences, s->occurrences, NULL);
        r->time_ps = xpv_add_i64(r->time_ps, s->time_ps, NULL);
        r->self_time_ps = xpv_add_i64(r->self_time_ps, s->self_time_ps, NULL);
        if (s->min_time_ps < r->min_time_ps) r->min_time_ps = s->min_time_ps;
        r->flops += s->flops;
        r->model_flops += s->model_flops;
        r->bytes_accessed += s->bytes_accessed;
        r->is_eager |= s->is_eager;
    }
}

/* xpv_perf_env_read() keeps the first non-zero value of each peak over the
 * planes it reads; over hosts read one after the other that is the first
 * host's non-zero value.  The shared-memory figure follows the kind of the
 * last plane read. */
static void perf_merge(xpv_perf_env *into, int *last, const xpv_om_part *pt) {
    const xpv_perf_env *f = &pt->perf;
    if (pt->perf_last < 0) return;
    if (into->peak_tera_flops_per_second == 0)
        into->peak_tera_flops_per_second = f->peak_tera_flops_per_second;
    for (int i = 0; i < XPV_BW_N; i++)
        if (into->peak_bws[i] == 0) into->peak_bws[i] = f->peak_bws[i];
    into->has_megacore |= f->has_megacore;
    into->has_merged_vmem |= f->has_merged_vmem;
    into->has_cmem = into->peak_bws[XPV_BW_CMEM_RD] > 0 || into->peak_bws[XPV_BW_CMEM_WR] > 0;
    if (into->nbws < f->nbws) into->nbws = f->nbws;
    *last = pt->perf_last;
    into->peak_hbm_bw_giga_bytes_per_second = into->peak_bws[XPV_BW_HBM];
    into->peak_shm_l1_bw_giga_bytes_per_second = *last ? into->peak_bws[XPV_BW_SRAM_RD] : 0;
}

xpv_op_metrics *xpv_op_metrics_combine(const xpv_om_part *const *parts, size_t n) {
    return xpv_op_metrics_combine_costed(parts, n, NULL, NULL);
}

xpv_op_metrics *xpv_op_metrics_combine_costed(const xpv_om_part *const *parts, size_t n,
                                              xpv_om_cost_fn cost, void *ctx) {
    xpv_op_metrics *m = xpv_xcalloc(1, sizeof *m);
    xpv_arena_init(&m->arena, 64 * 1024);
    optab ht, dt;
    xpv_om_optab_init(&ht, &m->arena);
    xpv_om_optab_init(&dt, &m->arena);
    ktab kern;
    memset(&kern, 0, sizeof kern);
    int64_t h_total = 0, h_op = 0, h_idle = 0, d_total = 0, d_op = 0, d_idle = 0;
    int has_tpu = 0, perf_last = -1;
    for (size_t i = 0; i < n; i++) {
        const xpv_om_part *pt = parts[i];
        if (!pt) continue;
        optab_merge(&ht, &pt->host_tab);
        optab_merge(&dt, &pt->dev_tab);
        for (size_t k = 0; k < pt->kern.n; k++) {
            const xpv_kernel_report *r = &pt->kern.rows[k];
            ktab_add(&kern, &m->arena, r, xpv_cstr(r->name), xpv_cstr(r->op_name));
        }
        h_total = xpv_add_i64(h_total, pt->h_total_ps, NULL);
        h_op = xpv_add_i64(h_op, pt->h_op_ps, NULL);
        h_idle = xpv_add_i64(h_idle, pt->h_idle_ps, NULL);
        d_total += pt->d_total_ps;
        d_op += pt->d_op_ps;
        d_idle += pt->d_idle_ps;
        m->kernel_events += pt->kernel_events;
        m->kernel_total_ns += pt->kernel_total_ns;
        m->tpu_busy_ps += pt->tpu_busy_ps;
        m->tpu_idle_ps += pt->tpu_idle_ps;
        m->has_gpu |= pt->has_gpu;
        has_tpu |= pt->has_tpu;
        m->occupancy_achieved |= pt->occ_achieved;
        m->occupancy_theoretical |= pt->occ_theoretical;
        perf_merge(&m->perf, &perf_last, pt);
    }
    for (size_t i = 0; cost && !has_tpu && i < dt.n; i++)
        if (dt.pid[i]) cost(ctx, &dt.rows[i]);
    optab_finish(&ht, &m->host, h_idle, h_total, h_op);
    optab_finish(&dt, &m->device, d_idle, d_total, d_op);
    m->has_device_ops = dt.n > 0;
    m->has_tpu = has_tpu;
    build_device_tf(m, &dt);

    if (kern.n) qsort(kern.rows, kern.n, sizeof *kern.rows, cmp_kernel);
    m->nkernels = kern.n < KERNEL_TOP_K ? kern.n : KERNEL_TOP_K;
    m->kernels = xpv_arena_calloc(&m->arena, m->nkernels ? m->nkernels : 1, sizeof *m->kernels);
    if (m->nkernels) memcpy(m->kernels, kern.rows, m->nkernels * sizeof *m->kernels);
    snprintf(m->device_type, sizeof m->device_type, "%s",
             m->has_gpu ? "GPU" : has_tpu ? "TPU" : "CPU");
    xpv_om_optab_free(&ht);
    xpv_om_optab_free(&dt);
    free(kern.rows);
    free(kern.hash);
    free(kern.slots);
    return m;
}

xpv_op_metrics *xpv_op_metrics_build(const xpv_hostset *hs, xpv_err *err) {
    if (!hs || hs->n == 0) {
        if (err) {
            err->status = XPV_E_NOT_FOUND;
            snprintf(err->msg, sizeof err->msg, "no host profile to analyse");
        }
        return NULL;
    }
    xpv_om_part **parts = xpv_xcalloc(hs->n, sizeof *parts);
    for (size_t i = 0; i < hs->n; i++)
        if (hs->profiles[i]) parts[i] = xpv_op_metrics_part_build(hs->profiles[i]);
    xpv_op_metrics *m = xpv_op_metrics_combine((const xpv_om_part *const *)parts, hs->n);
    for (size_t i = 0; i < hs->n; i++) xpv_op_metrics_part_free(parts[i]);
    free(parts);
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
