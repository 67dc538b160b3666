/*
 * hlo_graph.c - instruction graph and neighbourhoods of an HLO module
 * (hlo_graph.h; XLA hlo_graph_dumper.cc MakeNodeRadiusAroundFilter).
 */
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "checked.h"
#include "collections.h"
#include "hlo_graph.h"

#define MAX_USERS_TO_RENDER 16   /* XLA kMaxUsersToRender */

static int is_op(const Xla__HloInstructionProto *ins, const char *opcode) {
    return ins && ins->opcode && !strcmp(ins->opcode, opcode);
}

int32_t xpv_hlo_graph_by_id(const xpv_hlo_graph *g, int64_t id) {
    size_t j = mix64s((uint64_t)id) & (g->nid_slots - 1);
    while (g->id_slots[j] >= 0) {
        if (g->ins[g->id_slots[j]].ins->id == id) return g->id_slots[j];
        j = (j + 1) & (g->nid_slots - 1);
    }
    return -1;
}

static void index_ids(xpv_hlo_graph *g) {
    size_t ns = 16;
    while (ns < g->n * 2) ns *= 2;
    g->nid_slots = ns;
    g->id_slots = xpv_xmalloc(ns * sizeof *g->id_slots);
    for (size_t j = 0; j < ns; j++) g->id_slots[j] = -1;
    for (size_t i = 0; i < g->n; i++) {
        if (xpv_hlo_graph_by_id(g, g->ins[i].ins->id) >= 0) continue; /* first wins */
        size_t j = mix64s((uint64_t)g->ins[i].ins->id) & (ns - 1);
        while (g->id_slots[j] >= 0) j = (j + 1) & (ns - 1);
        g->id_slots[j] = (int32_t)i;
    }
}

/* Operands as indices (CSR), then users by counting them. */
static void index_edges(xpv_hlo_graph *g) {
    size_t nops = 0;
    for (size_t i = 0; i < g->n; i++) nops += g->ins[i].ins->n_operand_ids;
    g->op_off = xpv_xcalloc(g->n + 1, sizeof *g->op_off);
    g->ops = xpv_xcalloc(nops ? nops : 1, sizeof *g->ops);
    g->use_off = xpv_xcalloc(g->n + 1, sizeof *g->use_off);
    g->uses = xpv_xcalloc(nops ? nops : 1, sizeof *g->uses);
    size_t k = 0;
    for (size_t i = 0; i < g->n; i++) {
        g->op_off[i] = (uint32_t)k;
        const Xla__HloInstructionProto *ins = g->ins[i].ins;
        for (size_t o = 0; o < ins->n_operand_ids; o++) {
            int32_t j = xpv_hlo_graph_by_id(g, ins->operand_ids[o]);
            g->ops[k++] = j;
            if (j >= 0) g->use_off[j + 1]++;
        }
    }
    g->op_off[g->n] = (uint32_t)k;
    for (size_t i = 0; i < g->n; i++) g->use_off[i + 1] += g->use_off[i];
    uint32_t *fill = xpv_xcalloc(g->n + 1, sizeof *fill);
    for (size_t i = 0; i < g->n; i++)
        for (uint32_t o = g->op_off[i]; o < g->op_off[i + 1]; o++) {
            int32_t j = g->ops[o];
            if (j < 0) continue;
            /* a user that takes the same operand twice is listed once:
             * users are added in order, so a repeat is the last one added
             * (was a scan of j's users per operand: quadratic, issue 26) */
            uint32_t s = g->use_off[j];
            if (!fill[j] || g->uses[s + fill[j] - 1] != (int32_t)i)
                g->uses[s + fill[j]++] = (int32_t)i;
        }
    /* close the gaps left by duplicates: users of j are the first fill[j] */
    uint32_t w = 0;
    for (size_t j = 0; j < g->n; j++) {
        uint32_t s = g->use_off[j];
        g->use_off[j] = w;
        for (uint32_t u = 0; u < fill[j]; u++) g->uses[w++] = g->uses[s + u];
    }
    g->use_off[g->n] = w;
    free(fill);
}

typedef struct comp_key {
    int64_t id;
    size_t c;
} comp_key;

static int cmp_comp_key(const void *x, const void *y) {
    const comp_key *a = x, *b = y;
    if (a->id != b->id) return a->id < b->id ? -1 : 1;
    return (a->c > b->c) - (a->c < b->c);
}

static void index_computations(xpv_hlo_graph *g) {
    const Xla__HloModuleProto *mod = g->prog->module;
    g->comp_root = xpv_xmalloc((g->ncomps + 1) * sizeof *g->comp_root);
    g->comp_caller = xpv_xmalloc((g->ncomps + 1) * sizeof *g->comp_caller);
    g->entry = -1;
    for (size_t c = 0; c < g->ncomps; c++) {
        const Xla__HloComputationProto *comp = mod->computations[c];
        g->comp_root[c] = comp ? xpv_hlo_graph_by_id(g, comp->root_id) : -1;
        g->comp_caller[c] = -1;
        if (comp && comp->id == mod->entry_computation_id) g->entry = (int32_t)c;
        if (g->entry < 0 && comp && comp->name && mod->entry_computation_name &&
            !strcmp(comp->name, mod->entry_computation_name))
            g->entry = (int32_t)c;
    }
    if (g->entry < 0 && g->ncomps) g->entry = (int32_t)g->ncomps - 1; /* XLA puts it last */
    /* Every computation with a called id gets its first caller: the ids
     * sorted once, each called id found by binary search (was a scan of
     * the computations per called id: quadratic, issue 26). */
    comp_key *keys = xpv_xmalloc((g->ncomps ? g->ncomps : 1) * sizeof *keys);
    size_t nk = 0;
    for (size_t c = 0; c < g->ncomps; c++)
        if (mod->computations[c]) keys[nk++] = (comp_key){mod->computations[c]->id, c};
    qsort(keys, nk, sizeof *keys, cmp_comp_key);
    for (size_t i = 0; i < g->n; i++) {
        const Xla__HloInstructionProto *ins = g->ins[i].ins;
        for (size_t k = 0; k < ins->n_called_computation_ids; k++) {
            int64_t id = ins->called_computation_ids[k];
            size_t lo = 0, hi = nk;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (keys[mid].id < id) lo = mid + 1;
                else hi = mid;
            }
            for (; lo < nk && keys[lo].id == id; lo++)
                if (g->comp_caller[keys[lo].c] < 0) g->comp_caller[keys[lo].c] = (int32_t)i;
        }
    }
    free(keys);
}

xpv_hlo_graph *xpv_hlo_graph_build(const xpv_hlo_program *p) {
    xpv_hlo_graph *g = xpv_xcalloc(1, sizeof *g);
    g->prog = p;
    const Xla__HloModuleProto *mod = p->module;
    g->ncomps = mod ? mod->n_computations : 0;
    size_t n = 0;
    for (size_t c = 0; c < g->ncomps; c++)
        if (mod->computations[c]) n += mod->computations[c]->n_instructions;
    g->ins = xpv_xcalloc(n ? n : 1, sizeof *g->ins);
    g->comp = xpv_xcalloc(n ? n : 1, sizeof *g->comp);
    for (size_t c = 0; c < g->ncomps; c++) {
        const Xla__HloComputationProto *comp = mod->computations[c];
        for (size_t i = 0; comp && i < comp->n_instructions; i++) {
            if (!comp->instructions[i] || !comp->instructions[i]->name) continue;
            g->comp[g->n] = (int32_t)c;
            g->ins[g->n++] = (xpv_hlo_instr){comp->instructions[i], comp};
        }
    }
    index_ids(g);
    index_edges(g);
    index_computations(g);
    return g;
}

void xpv_hlo_graph_free(xpv_hlo_graph *g) {
    if (!g) return;
    free(g->ins);
    free(g->comp);
    free(g->op_off);
    free(g->ops);
    free(g->use_off);
    free(g->uses);
    free(g->comp_root);
    free(g->comp_caller);
    free(g->id_slots);
    free(g);
}

int32_t xpv_hlo_graph_find(const xpv_hlo_graph *g, const char *name) {
    xpv_hlo_instr in = xpv_hlo_instr_by_name(g->prog, name, strlen(name));
    return in.ins ? xpv_hlo_graph_by_id(g, in.ins->id) : -1;
}

int32_t xpv_hlo_graph_comp(const xpv_hlo_graph *g, const char *name) {
    if (name[0] == '%') name++;
    for (size_t c = 0; c < g->ncomps; c++) {
        const Xla__HloComputationProto *comp = g->prog->module->computations[c];
        if (comp && comp->name && !strcmp(comp->name, name)) return (int32_t)c;
    }
    return -1;
}

/* ==== Neighbourhood ====================================================== */

static int32_t comp_index(const xpv_hlo_graph *g, int64_t id) {
    for (size_t c = 0; c < g->ncomps; c++)
        if (g->prog->module->computations[c] && g->prog->module->computations[c]->id == id)
            return (int32_t)c;
    return -1;
}

/* Whether BFS walks into the computations `ins` calls (fusions are drawn
 * whole when expanded, reducers not at all). */
static int walks_into(const Xla__HloInstructionProto *ins) {
    return is_op(ins, "while") || is_op(ins, "call") || is_op(ins, "conditional") ||
           is_op(ins, "async-start");
}

typedef struct bfs {
    int32_t *queue;
    int32_t *dist;             /* per seed: -1 not reached */
    uint8_t *users_omitted;
} bfs;

/* `all_users`: the seed's users are drawn however many (an explicit
 * "show more" click), not only up to XLA's 16. */
static void visit(const xpv_hlo_graph *g, xpv_hlo_hood *h, bfs *b, int32_t seed, int radius,
                  int all_users) {
    for (size_t i = 0; i < g->n; i++) b->dist[i] = -1;
    size_t head = 0, tail = 0;
    b->queue[tail++] = seed;
    b->dist[seed] = 0;
    while (head < tail) {
        int32_t x = b->queue[head++];
        int d = b->dist[x];
        if (!h->state[x]) h->state[x] = XPV_HOOD_NORMAL;
        if (h->depth[x] < 0 || d < h->depth[x]) h->depth[x] = d;
        if (d == radius) continue;
        const Xla__HloInstructionProto *ins = g->ins[x].ins;
        if (x == seed || !is_op(ins, "tuple"))
            for (uint32_t o = g->op_off[x]; o < g->op_off[x + 1]; o++) {
                int32_t y = g->ops[o];
                if (y >= 0 && b->dist[y] < 0) b->dist[y] = d + 1, b->queue[tail++] = y;
            }
        if (walks_into(ins))
            for (size_t k = 0; k < ins->n_called_computation_ids; k++) {
                int32_t c = comp_index(g, ins->called_computation_ids[k]);
                int32_t r = c >= 0 ? g->comp_root[c] : -1;
                if (r >= 0 && b->dist[r] < 0) b->dist[r] = d + 1, b->queue[tail++] = r;
            }
        if (is_op(ins, "constant")) continue;
        if (g->use_off[x + 1] - g->use_off[x] > MAX_USERS_TO_RENDER && !(all_users && x == seed)) {
            b->users_omitted[x] = 1;
            continue;
        }
        for (uint32_t u = g->use_off[x]; u < g->use_off[x + 1]; u++) {
            int32_t y = g->uses[u];
            if (b->dist[y] < 0) b->dist[y] = d + 1, b->queue[tail++] = y;
        }
    }
}

/* Draw the whole computation c as the cluster of its fusion `by`, nested
 * fusions expanded too unless merge_fusion. */
static void expand_fusion(const xpv_hlo_graph *g, xpv_hlo_hood *h, int32_t fusion,
                          int merge_fusion, int level) {
    const Xla__HloInstructionProto *ins = g->ins[fusion].ins;
    h->expanded[fusion] = 1;
    for (size_t k = 0; k < ins->n_called_computation_ids; k++) {
        int32_t c = comp_index(g, ins->called_computation_ids[k]);
        if (c < 0) continue;
        for (size_t i = 0; i < g->n; i++) {
            if (g->comp[i] != c || h->state[i]) continue;
            h->state[i] = XPV_HOOD_NORMAL;
            h->depth[i] = -1;
            h->cluster[i] = c;
            if (!merge_fusion && level < 16 && is_op(g->ins[i].ins, "fusion"))
                expand_fusion(g, h, (int32_t)i, merge_fusion, level + 1);
        }
    }
}

/* Whether i is drawn or (XLA) always displayed: a constant. */
static int displayed(const xpv_hlo_graph *g, const xpv_hlo_hood *h, int32_t i) {
    return i >= 0 && (h->state[i] || is_op(g->ins[i].ins, "constant"));
}

/* XLA's second pass: operand / user omission marks. */
static void mark_omissions(const xpv_hlo_graph *g, xpv_hlo_hood *h, const uint8_t *users_omitted) {
    for (size_t i = 0; i < g->n; i++) {
        if (!h->state[i] || h->depth[i] < 0) continue;
        size_t nops = 0, shown = 0;
        for (uint32_t o = g->op_off[i]; o < g->op_off[i + 1]; o++) {
            if (g->ops[o] < 0) continue;
            nops++;
            shown += displayed(g, h, g->ops[o]) ? 1 : 0;
        }
        uint8_t s = users_omitted[i] ? XPV_HOOD_SOME_USERS_OMITTED : XPV_HOOD_NORMAL;
        if (shown && shown < nops) s = XPV_HOOD_SOME_OPERANDS_OMITTED;
        else if (nops && !shown) s = XPV_HOOD_ALL_OPERANDS_OMITTED;
        if (s == XPV_HOOD_SOME_USERS_OMITTED && !xpv_hlo_hood_more_users(g, h, (int32_t)i))
            s = XPV_HOOD_NORMAL;
        h->state[i] = s;
    }
}

/* Constants feeding drawn nodes are drawn; clusters of walked-into
 * computations; fusions expanded. */
static void finish(const xpv_hlo_graph *g, xpv_hlo_hood *h, int merge_fusion) {
    for (size_t i = 0; i < g->n; i++) {
        if (!h->state[i] || h->depth[i] < 0) continue;
        for (uint32_t o = g->op_off[i]; o < g->op_off[i + 1]; o++) {
            int32_t y = g->ops[o];
            if (y >= 0 && !h->state[y] && is_op(g->ins[y].ins, "constant")) {
                h->state[y] = XPV_HOOD_NORMAL;
                h->depth[y] = h->depth[i] + 1;
            }
        }
    }
    for (size_t i = 0; i < g->n; i++)
        if (h->state[i] && g->comp[i] != h->top) h->cluster[i] = g->comp[i];
    for (size_t i = 0; i < g->n; i++) {
        if (!h->state[i] || h->depth[i] < 0 || !is_op(g->ins[i].ins, "fusion")) continue;
        int center = h->state[i] == XPV_HOOD_CENTER;
        if (merge_fusion || (!center && (h->state[i] == XPV_HOOD_SOME_OPERANDS_OMITTED ||
                                         h->state[i] == XPV_HOOD_ALL_OPERANDS_OMITTED)))
            continue;
        expand_fusion(g, h, (int32_t)i, merge_fusion, 0);
    }
    h->nshown = 0;
    for (size_t i = 0; i < g->n; i++) h->nshown += h->state[i] ? 1 : 0;
}

int xpv_hlo_hood_build(const xpv_hlo_graph *g, int32_t center, int32_t comp, int radius,
                       const int32_t *expand, size_t nexpand, int merge_fusion,
                       xpv_hlo_hood *h) {
    memset(h, 0, sizeof *h);
    if (!g->n || (center < 0 && comp < 0)) return -1;
    size_t n = g->n;
    h->state = xpv_xcalloc(n, 1);
    h->expanded = xpv_xcalloc(n, 1);
    h->depth = xpv_xmalloc(n * sizeof *h->depth);
    h->cluster = xpv_xmalloc(n * sizeof *h->cluster);
    for (size_t i = 0; i < n; i++) h->depth[i] = -1, h->cluster[i] = -1;
    h->center = center;
    h->top = center >= 0 ? g->comp[center] : comp;
    bfs b = {xpv_xmalloc(n * sizeof(int32_t)), xpv_xmalloc(n * sizeof(int32_t)),
             xpv_xcalloc(n, 1)};
    if (center >= 0) {
        visit(g, h, &b, center, radius, 0);
    } else {
        for (size_t i = 0; i < n; i++)
            if (g->comp[i] == comp) h->state[i] = XPV_HOOD_NORMAL, h->depth[i] = 0;
    }
    for (size_t k = 0; k < nexpand; k++)
        if (expand[k] >= 0 && (size_t)expand[k] < n && h->state[expand[k]] &&
            h->depth[expand[k]] >= 0)
            visit(g, h, &b, expand[k], 1, 1);
    mark_omissions(g, h, b.users_omitted);
    if (center >= 0) h->state[center] = XPV_HOOD_CENTER;
    finish(g, h, merge_fusion);
    free(b.queue);
    free(b.dist);
    free(b.users_omitted);
    return 0;
}

void xpv_hlo_hood_free(xpv_hlo_hood *h) {
    free(h->state);
    free(h->depth);
    free(h->expanded);
    free(h->cluster);
    memset(h, 0, sizeof *h);
}

int32_t xpv_hlo_hood_edge_node(const xpv_hlo_graph *g, const xpv_hlo_hood *h, int32_t i) {
    for (int guard = 0; i >= 0 && h->expanded[i] && guard < 32; guard++) {
        const Xla__HloInstructionProto *ins = g->ins[i].ins;
        int32_t c = ins->n_called_computation_ids
                        ? comp_index(g, ins->called_computation_ids[0]) : -1;
        if (c < 0 || g->comp_root[c] < 0) break;
        i = g->comp_root[c];
    }
    return i;
}

int xpv_hlo_hood_more_operands(const xpv_hlo_graph *g, const xpv_hlo_hood *h, int32_t i) {
    int k = 0;
    for (uint32_t o = g->op_off[i]; o < g->op_off[i + 1]; o++)
        k += g->ops[o] >= 0 && !h->state[g->ops[o]];
    return k;
}

int xpv_hlo_hood_more_users(const xpv_hlo_graph *g, const xpv_hlo_hood *h, int32_t i) {
    int k = 0;
    for (uint32_t u = g->use_off[i]; u < g->use_off[i + 1]; u++) k += !h->state[g->uses[u]];
    return k;
}

/* The fusion whose expanded cluster holds fused parameter i, or -1. */
static int32_t fusion_of_param(const xpv_hlo_graph *g, const xpv_hlo_hood *h, int32_t i) {
    if (!is_op(g->ins[i].ins, "parameter")) return -1;
    int32_t f = g->comp_caller[g->comp[i]];
    return f >= 0 && h->expanded[f] && is_op(g->ins[f].ins, "fusion") ? f : -1;
}

void xpv_hlo_hood_edges(const xpv_hlo_graph *g, const xpv_hlo_hood *h, xpv_hlo_edge_fn fn,
                        void *ctx) {
    for (size_t ii = 0; ii < g->n; ii++) {
        int32_t i = (int32_t)ii;
        if (!h->state[i] || h->expanded[i]) continue;
        const Xla__HloInstructionProto *ins = g->ins[i].ins;
        int32_t f = fusion_of_param(g, h, i);
        if (f >= 0) {
            uint32_t o = g->op_off[f] + (uint32_t)ins->parameter_number;
            if (ins->parameter_number >= 0 && o < g->op_off[f + 1] && g->ops[o] >= 0 &&
                h->state[g->ops[o]])
                fn(ctx, xpv_hlo_hood_edge_node(g, h, g->ops[o]), i,
                   (int)ins->parameter_number, 0);
        } else {
            for (uint32_t o = g->op_off[i]; o < g->op_off[i + 1]; o++)
                if (g->ops[o] >= 0 && h->state[g->ops[o]])
                    fn(ctx, xpv_hlo_hood_edge_node(g, h, g->ops[o]), i, (int)(o - g->op_off[i]),
                       0);
        }
        for (size_t k = 0; k < ins->n_control_predecessor_ids; k++) {
            int32_t p = xpv_hlo_graph_by_id(g, ins->control_predecessor_ids[k]);
            if (p >= 0 && h->state[p]) fn(ctx, xpv_hlo_hood_edge_node(g, h, p), i, 0, 1);
        }
        if (walks_into(ins))
            for (size_t k = 0; k < ins->n_called_computation_ids; k++) {
                int32_t c = comp_index(g, ins->called_computation_ids[k]);
                int32_t r = c >= 0 ? g->comp_root[c] : -1;
                if (r >= 0 && h->state[r]) fn(ctx, xpv_hlo_hood_edge_node(g, h, r), i, (int)k, 2);
            }
    }
}

/* ==== Colours (XLA GetInstructionColor) ================================== */

static int in_list(const char *s, const char *const *list) {
    for (; *list; list++)
        if (!strcmp(s, *list)) return 1;
    return 0;
}

static int64_t elements(const Xla__ShapeProto *s, int depth) {
    if (!s || depth > 32) return 0;
    if (s->element_type == 13) {
        int64_t n = 0;
        for (size_t i = 0; i < s->n_tuple_shapes; i++) n += elements(s->tuple_shapes[i], depth + 1);
        return n;
    }
    int64_t n = 1;
    for (size_t i = 0; i < s->n_dimensions; i++) n = xpv_mul_i64(n, s->dimensions[i], NULL);
    return n;
}

static int effective_scalar(const Xla__ShapeProto *s) {
    return s && s->element_type != 13 && elements(s, 0) == 1;
}

const char *xpv_hlo_color(const xpv_hlo_graph *g, int32_t i) {
    static const char *const yellow[] = {
        "abs", "add", "and", "atan2", "bitcast-convert", "ceil", "clamp", "count-leading-zeros",
        "compare", "complex", "convert", "cosine", "divide", "exponential",
        "exponential-minus-one", "floor", "imag", "iota", "is-finite", "log", "log-plus-one",
        "maximum", "minimum", "multiply", "negate", "not", "popcnt", "or", "xor", "power",
        "real", "remainder", "rng", "rng-get-and-update-state", "rng-bit-generator",
        "round-nearest-afz", "round-nearest-even", "rsqrt", "select", "shift-left",
        "shift-right-arithmetic", "shift-right-logical", "stochastic-convert", "logistic",
        "sign", "sine", "slice", "sort", "sqrt", "cbrt", "subtract", "tanh", "tan", "erf", NULL};
    static const char *const white[] = {"bitcast", "get-tuple-element", "after-all",
                                        "add-dependency", "tuple", "opt-barrier", "constant",
                                        NULL};
    static const char *const moves[] = {"concatenate", "dynamic-slice", "gather", "pad",
                                        "reshape", "dynamic-reshape", "reverse", "transpose",
                                        NULL};
    static const char *const dark_blue[] = {"convolution", "dot", "fft", "triangular-solve",
                                            "cholesky", NULL};
    static const char *const purple[] = {"batch-norm-grad", "batch-norm-inference",
                                         "batch-norm-training", "reduce", "reduce-window",
                                         "scatter", "select-and-scatter", NULL};
    static const char *const gray[] = {"domain", "fusion", "map", "get-dimension-size",
                                       "set-dimension-size", NULL};
    static const char *const brown[] = {
        "all-gather", "all-gather-start", "all-gather-done", "all-reduce", "reduce-scatter",
        "all-reduce-start", "all-reduce-done", "all-to-all", "collective-permute",
        "collective-permute-start", "collective-permute-done", "infeed", "outfeed",
        "partition-id", "recv", "recv-done", "send", "send-done", "replica-id",
        "collective-broadcast", NULL};
    static const char *const dark_green[] = {"call", "conditional", "custom-call", "while", NULL};
    const Xla__HloInstructionProto *ins = g->ins[i].ins;
    const char *op = ins->opcode ? ins->opcode : "";
    int fused = g->comp_caller[g->comp[i]] >= 0 &&
                is_op(g->ins[g->comp_caller[g->comp[i]]].ins, "fusion");
    if (!strcmp(op, "parameter")) return elements(ins->shape, 0) < 4096 ? "orange" : "darkOrange";
    if (in_list(op, yellow)) return effective_scalar(ins->shape) ? "white" : "yellow";
    if (in_list(op, white)) return "white";
    if (!strcmp(op, "broadcast")) {
        int32_t a = g->op_off[i] < g->op_off[i + 1] ? g->ops[g->op_off[i]] : -1;
        return fused && a >= 0 && effective_scalar(g->ins[a].ins->shape) ? "white" : "green";
    }
    if (in_list(op, moves)) return effective_scalar(ins->shape) || fused ? "white" : "green";
    if (!strcmp(op, "dynamic-update-slice"))
        return effective_scalar(ins->shape) ? "white" : "green";
    if (!strcmp(op, "copy") || !strcmp(op, "copy-start") || !strcmp(op, "copy-done"))
        return "green";
    if (in_list(op, dark_blue)) return "darkBlue";
    if (!strcmp(op, "reduce-precision")) return "red";
    if (in_list(op, purple)) return "purple";
    if (in_list(op, gray)) return "gray";
    if (in_list(op, brown)) return "brown";
    if (in_list(op, dark_green)) return "darkGreen";
    return "white";
}
