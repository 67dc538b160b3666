/*
 * op_profile.c - the HLO Op Profile tool (XProf op_profile,
 * xprof/convert/op_stats_to_op_profile.cc and op_profile_builder.cc).
 *
 * Output: XProf's op_profile.Profile as JSON for the `group_by` asked
 * (program, the default; category; provenance): the tree and its
 * exclude-idle twin (byProgram / byProgramExcludeIdle, ...), deviceType.
 * Tree: root -> program (module name + "(id)", "main" when the program has
 * no HLO proto) -> [provenance path] -> category -> op, plus the fused
 * instructions of a fusion op from its HLO; IDLE hangs off the root.  Ops
 * named "region..." are skipped; an op whose time holds nested ops counts
 * in the root / program self-time totals but gets no leaf (as XProf).
 * Metrics: rawTime (ps), rawFlops (model flops), bf16Flops, occurrences,
 * avgTimePs, flops = utilisation x time fraction, bandwidthUtils and
 * rawBytesAccessedArray [HBM, SRAM read, SRAM write] (only HBM known).
 * Children are sorted by time (fusion children by flops) and cut to 100
 * below the grouping levels; numChildren is set as XProf's two pruning
 * passes leave it (the count after pruning).  XProf's deduplication layer
 * is left out: it only shows when ops carry a deduplicated_name, which
 * none of our inputs do.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "hlo.h"
#include "op_metrics.h"
#include "opstats.h"
#include "tool.h"

#define CHILDREN_PER_NODE 100

typedef struct node node;
struct node {
    const char *name;
    int has_metrics;
    double time_ps, flops, model_flops, bytes;
    int64_t occ;
    int has_xla;
    const char *op, *expression, *provenance, *category;
    uint64_t program_id;
    int is_fusion;
    node **kids;
    size_t nkids, cap;
    int num_children;
    int64_t key;             /* program id of a program node */
};

/* Bounds on the fused instructions a tree shows (issue 26, item 4: a
 * fusion naming one computation many times, whose fusions do the same,
 * expanded into 6.5 GB of JSON from 911 bytes).  Below a fusion only the
 * first CHILDREN_PER_NODE instructions can survive the pruning (they all
 * have rawFlops 0, so the stable sort by flops keeps the proto's order),
 * so no more are made; one op's expansion visits each computation once
 * and at most MAX_FUSED_COMPS of them; a tree makes at most
 * MAX_FUSED_NODES fused nodes and MAX_FUSED_BYTES of expressions, then
 * stops expanding and says so in the answer's "note". */
#define MAX_FUSED_COMPS 64
#define MAX_FUSED_NODES 200000
#define MAX_FUSED_BYTES (64u << 20)

typedef struct builder {
    xpv_arena *a;
    const xpv_hostset *hs;
    const xpv_op_stats *os;
    node *root;
    xpv_err *err;
    const Xla__HloComputationProto *seen[MAX_FUSED_COMPS]; /* this op's */
    size_t nseen;
    size_t fused_nodes, fused_bytes; /* this tree's */
    int cut;                         /* a bound was reached */
} builder;

/* Whether `comp` may be expanded below the current op: once each, within
 * the bounds. */
static int visit_comp(builder *b, const Xla__HloComputationProto *comp) {
    for (size_t i = 0; i < b->nseen; i++)
        if (b->seen[i] == comp) return 0;
    if (b->nseen == MAX_FUSED_COMPS) {
        b->cut = 1;
        return 0;
    }
    b->seen[b->nseen++] = comp;
    return 1;
}

static node *new_node(builder *b, node *parent, const char *name) {
    node *n = xpv_arena_calloc(b->a, 1, sizeof *n);
    n->name = xpv_arena_strndup(b->a, name, strlen(name));
    if (parent) {
        if (parent->nkids == parent->cap) {
            size_t cap = parent->cap ? parent->cap * 2 : 8;
            node **k = xpv_arena_alloc(b->a, cap * sizeof *k);
            if (parent->nkids) memcpy(k, parent->kids, parent->nkids * sizeof *k);
            parent->kids = k;
            parent->cap = cap;
        }
        parent->kids[parent->nkids++] = n;
    }
    return n;
}

static node *child_named(builder *b, node *parent, const char *name) {
    for (size_t i = 0; i < parent->nkids; i++)
        if (!parent->kids[i]->has_xla && !strcmp(parent->kids[i]->name, name))
            return parent->kids[i];
    return new_node(b, parent, name);
}

/* XProf UpdateNodeMetrics: self time; costs of ops without nested ops. */
static void update(node *n, const xpv_op_metric *op) {
    n->has_metrics = 1;
    n->time_ps += (double)op->self_time_ps;
    if (op->time_ps == op->self_time_ps) {
        n->flops += op->flops;
        n->model_flops += op->model_flops;
        n->bytes += op->bytes_accessed;
    }
}

/* XProf CombineOpMetrics. */
static void combine(node *n, const xpv_op_metric *op) {
    n->has_metrics = 1;
    n->time_ps += (double)op->time_ps;
    n->occ += op->occurrences;
    n->flops += op->flops;
    n->model_flops += op->model_flops;
    n->bytes += op->bytes_accessed;
}

static const char *buf_str(builder *b, xpv_buf *x) {
    return xpv_arena_strndup(b->a, x->data ? x->data : "", x->len);
}

static void fused_children(builder *b, node *n, const xpv_hlo_program *prog,
                           const Xla__HloInstructionProto *ins, int depth) {
    if (!ins || !ins->opcode || strcmp(ins->opcode, "fusion") || depth > 4) return;
    for (size_t c = 0; c < ins->n_called_computation_ids; c++) {
        const Xla__HloComputationProto *comp =
            xpv_hlo_computation(prog, ins->called_computation_ids[c]);
        if (!comp || !visit_comp(b, comp)) continue;
        for (size_t i = 0; i < comp->n_instructions && n->nkids < CHILDREN_PER_NODE; i++) {
            const Xla__HloInstructionProto *f = comp->instructions[i];
            if (!f || !f->name || (f->opcode && !strcmp(f->opcode, "parameter"))) continue;
            if (b->fused_nodes >= MAX_FUSED_NODES || b->fused_bytes >= MAX_FUSED_BYTES) {
                b->cut = 1;
                return;
            }
            node *k = new_node(b, n, f->name);
            k->has_metrics = 1; /* rawFlops 0: no per-instruction costs */
            k->has_xla = 1;
            k->op = f->opcode ? f->opcode : "";
            xpv_buf x;
            xpv_buf_init(&x);
            xpv_hlo_expression(&x, prog, (xpv_hlo_instr){f, comp});
            k->expression = buf_str(b, &x);
            b->fused_nodes++;
            b->fused_bytes += x.len + strlen(f->name) + sizeof *k;
            xpv_buf_free(&x);
            k->provenance = f->metadata && f->metadata->op_name ? f->metadata->op_name : "";
            k->category = xpv_hlo_category(f);
            k->program_id = prog->program_id;
            k->is_fusion = !strcmp(k->op, "fusion");
            fused_children(b, k, prog, f, depth + 1);
        }
    }
}

static int add_leaf(builder *b, node *parent, const xpv_op_metric *op) {
    xpv_hlo_op h;
    if (xpv_hlo_resolve(b->os->hlo, b->hs, op, &h, b->err) < 0) return -1;
    node *n = new_node(b, parent, op->name);
    n->has_xla = 1;
    n->program_id = (uint64_t)op->program_id;
    n->op = h.in.ins && h.in.ins->opcode ? h.in.ins->opcode : "";
    xpv_buf x;
    xpv_buf_init(&x);
    if (op->long_name[0]) xpv_buf_puts(&x, op->long_name);
    else if (h.in.ins) xpv_hlo_expression(&x, h.prog, h.in);
    n->expression = buf_str(b, &x);
    xpv_buf_free(&x);
    n->category = op->category;
    if (h.in.ins && (!b->os->ops->has_tpu || !op->category[0]))
        n->category = xpv_hlo_category(h.in.ins);
    n->provenance = op->provenance;
    if (!n->provenance[0] && h.in.ins && h.in.ins->metadata && h.in.ins->metadata->op_name)
        n->provenance = h.in.ins->metadata->op_name;
    n->is_fusion = strstr(n->category, "fusion") != NULL;
    combine(n, op);
    b->nseen = 0;
    if (h.in.ins) fused_children(b, n, h.prog, h.in.ins, 0);
    return 0;
}

static const char *category_of(builder *b, const xpv_op_metric *op) {
    if (b->os->ops->has_tpu && op->category[0]) return op->category;
    xpv_hlo_op h;
    if (xpv_hlo_resolve(b->os->hlo, b->hs, op, &h, b->err) == 0 && h.in.ins)
        return xpv_hlo_category(h.in.ins);
    return op->category[0] ? op->category : "unknown";
}

static node *program_node(builder *b, const xpv_op_metric *op) {
    uint64_t pid = (uint64_t)op->program_id;
    for (size_t i = 0; i < b->root->nkids; i++)
        if (!b->root->kids[i]->has_xla && b->root->kids[i]->key == (int64_t)pid &&
            b->root->kids[i]->category)
            return b->root->kids[i];
    char name[512];
    const xpv_hlo_program *p = xpv_hlo_find(b->os->hlo, pid);
    if (p) p = xpv_hlo_decode(b->os->hlo, b->hs, p, b->err);
    if (p && p->module && p->module->name)
        snprintf(name, sizeof name, "%s(%llu)", p->module->name, (unsigned long long)pid);
    else
        snprintf(name, sizeof name, "main");
    node *n = new_node(b, b->root, name);
    n->key = (int64_t)pid;
    n->category = ""; /* marks a program node */
    return n;
}

enum { BY_PROGRAM, BY_CATEGORY, BY_PROVENANCE };

static int build_tree(builder *b, int group, int exclude_idle) {
    const xpv_op_metrics_db *db = &b->os->ops->device;
    for (size_t i = 0; i < db->n; i++) {
        const xpv_op_metric *op = &db->ops[i];
        if (!strncmp(op->name, "region", 6)) continue;
        if (exclude_idle && op->is_idle) continue;
        update(b->root, op);
        node *prog = NULL;
        if (!op->is_idle && group != BY_CATEGORY) {
            prog = program_node(b, op);
            update(prog, op);
        }
        if (op->time_ps > op->self_time_ps) continue; /* has nested ops */
        if (op->is_idle) {
            if (add_leaf(b, b->root, op) < 0) return -1;
            continue;
        }
        node *parent = prog ? prog : b->root;
        if (group == BY_PROVENANCE && op->provenance[0]) {
            const char *s = op->provenance;
            while (*s) {
                const char *e = strchr(s, '/');
                size_t len = e ? (size_t)(e - s) : strlen(s);
                if (len) {
                    char part[256];
                    snprintf(part, sizeof part, "%.*s", (int)(len < 255 ? len : 255), s);
                    parent = child_named(b, parent, part);
                    update(parent, op);
                }
                s += len + (e ? 1 : 0);
            }
        }
        const char *cat = category_of(b, op);
        node *cn = child_named(b, parent, cat);
        combine(cn, op);
        if (add_leaf(b, cn, op) < 0) return -1;
    }
    return 0;
}

static int cmp_time(const void *x, const void *y) {
    const node *a = *(node *const *)x, *b = *(node *const *)y;
    return (a->time_ps < b->time_ps) - (a->time_ps > b->time_ps);
}
static int cmp_flops(const void *x, const void *y) {
    const node *a = *(node *const *)x, *b = *(node *const *)y;
    return (a->model_flops < b->model_flops) - (a->model_flops > b->model_flops);
}

static void sort_prune(node *n, int k, int level) {
    n->num_children = (int)n->nkids;
    for (size_t i = 0; i < n->nkids; i++) sort_prune(n->kids[i], k, level - 1);
    size_t keep = level > 0 ? n->nkids : (size_t)k;
    if (n->nkids > 1)
        qsort(n->kids, n->nkids, sizeof *n->kids, n->has_xla && n->is_fusion ? cmp_flops : cmp_time);
    if (n->nkids > keep) n->nkids = keep;
}

static double cap1(double v) { return v < 1.0 ? v : 1.0; }
static double safe_div(double a, double b) { return b != 0 ? a / b : 0.0; }

static void write_node(xpv_buf *o, const node *n, const xpv_op_metrics *m, double total_ps) {
    xpv_buf_puts(o, "{\"name\":");
    xpv_buf_json_cstr(o, n->name);
    if (n->has_metrics) {
        double time_ns = n->time_ps / 1000.0;
        double gflops = safe_div(n->flops, time_ns);
        double util = cap1(safe_div(gflops, m->perf.peak_tera_flops_per_second * 1000.0));
        double hbm_gib = safe_div(n->bytes, time_ns) * 1e9 / 1073741824.0;
        double hbm_util = cap1(safe_div(hbm_gib, m->perf.peak_hbm_bw_giga_bytes_per_second *
                                                     1e9 / 1073741824.0));
        xpv_buf_puts(o, ",\"metrics\":{\"flops\":");
        xpv_buf_double(o, util * safe_div(n->time_ps, total_ps));
        xpv_buf_puts(o, ",\"bandwidthUtils\":[");
        xpv_buf_double(o, hbm_util);
        xpv_buf_puts(o, ",0,0],\"rawTime\":");
        xpv_buf_double(o, n->time_ps);
        xpv_buf_puts(o, ",\"rawFlops\":");
        xpv_buf_double(o, n->model_flops);
        xpv_buf_puts(o, ",\"bf16Flops\":");
        xpv_buf_double(o, n->flops);
        xpv_buf_puts(o, ",\"rawBytesAccessedArray\":[");
        xpv_buf_double(o, n->bytes);
        xpv_buf_puts(o, ",0,0],\"occurrences\":");
        xpv_buf_i64(o, n->occ);
        xpv_buf_puts(o, ",\"avgTimePs\":");
        xpv_buf_double(o, safe_div(n->time_ps, (double)n->occ));
        xpv_buf_putc(o, '}');
    }
    if (n->nkids) {
        xpv_buf_puts(o, ",\"children\":[");
        for (size_t i = 0; i < n->nkids; i++) {
            if (i) xpv_buf_putc(o, ',');
            write_node(o, n->kids[i], m, total_ps);
        }
        xpv_buf_putc(o, ']');
    }
    if (n->has_xla) {
        xpv_buf_puts(o, ",\"xla\":{\"op\":");
        xpv_buf_json_cstr(o, n->op);
        xpv_buf_puts(o, ",\"expression\":");
        xpv_buf_json_cstr(o, n->expression);
        xpv_buf_puts(o, ",\"provenance\":");
        xpv_buf_json_cstr(o, n->provenance);
        xpv_buf_puts(o, ",\"category\":");
        xpv_buf_json_cstr(o, n->category);
        xpv_buf_printf(o, ",\"programId\":\"%llu\"}", (unsigned long long)n->program_id);
    }
    if (n->num_children) xpv_buf_printf(o, ",\"numChildren\":%d", n->num_children);
    xpv_buf_putc(o, '}');
}

static int write_tree(xpv_buf *out, builder *b, int group, int exclude_idle) {
    static const char *const root_names[] = {"by_program", "by_category", "by_provenance"};
    b->root = new_node(b, NULL, root_names[group]);
    b->fused_nodes = b->fused_bytes = 0;
    const xpv_op_metrics *m = b->os->ops;
    int has_device = m->has_gpu || m->has_tpu;
    if (has_device && build_tree(b, group, exclude_idle) < 0) return -1;
    const xpv_op_metrics_db *db = &m->device;
    /* XProf TotalTimePs: the db's span, less the idle time when excluded */
    double total = (double)db->total_time_ps;
    if (exclude_idle)
        for (size_t i = 0; i < db->n; i++)
            if (db->ops[i].is_idle) total -= (double)db->ops[i].self_time_ps;
    if (b->root->has_metrics) b->root->time_ps = total;
    int level = group == BY_PROGRAM ? 2 : group == BY_CATEGORY ? 1 : 100;
    sort_prune(b->root, CHILDREN_PER_NODE, level);
    sort_prune(b->root, CHILDREN_PER_NODE, level);
    write_node(out, b->root, m, total);
    return 0;
}

int xpv_op_profile_render(const xpv_hostset *hs, const void *derived, const xpv_params *q,
                          xpv_buf *out, xpv_err *err) {
    const xpv_op_stats *os = derived;
    const char *g = xpv_param(q, "group_by");
    int group = BY_PROGRAM;
    if (g && !strcmp(g, "category")) group = BY_CATEGORY;
    else if (g && !strcmp(g, "provenance")) group = BY_PROVENANCE;
    else if (g && g[0] && strcmp(g, "program"))
        return xpv_err_set(err, XPV_E_BAD_REQUEST, "group_by must be program, category or provenance");
    static const char *const keys[] = {"byProgram", "byCategory", "byProvenance"};
    xpv_arena a;
    xpv_arena_init(&a, 64 * 1024);
    builder b = {.a = &a, .hs = hs, .os = os, .err = err};
    xpv_buf body;
    xpv_buf_init(&body);
    xpv_buf_printf(&body, "{\"%s\":", keys[group]);
    int rc = write_tree(&body, &b, group, 0);
    if (rc == 0) {
        xpv_buf_printf(&body, ",\"%sExcludeIdle\":", keys[group]);
        rc = write_tree(&body, &b, group, 1);
    }
    if (rc == 0) {
        xpv_buf_puts(&body, ",\"deviceType\":");
        xpv_buf_json_cstr(&body, os->hardware_type ? os->hardware_type : "CPU_ONLY");
        if (b.cut)
            xpv_buf_printf(&body, ",\"note\":\"fused instructions cut: a fusion's called "
                           "computations are shown once each, at most %d per op, %d fused "
                           "nodes and %u MiB of expressions per tree\"",
                           MAX_FUSED_COMPS, MAX_FUSED_NODES, MAX_FUSED_BYTES >> 20);
        xpv_buf_putc(&body, '}');
        xpv_buf_add(out, body.data, body.len);
    }
    xpv_buf_free(&body);
    xpv_arena_free(&a);
    return rc;
}
