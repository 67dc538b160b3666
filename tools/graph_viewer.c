/*
 * graph_viewer.c - the Graph Viewer tool (XProf graph_viewer,
 * xprof/convert/graph_viewer_processor.cc and hlo_proto_to_graph_view.cc;
 * the graph itself follows XLA's hlo_graph_dumper, see analysis/hlo/hlo_graph.h).
 *
 * Query (XProf's names): module_name ("jit_f(123)": the module name and its
 * program id, as XProf's module list spells it), program_id, node_name (an
 * instruction, or a computation drawn whole), graph_width (default 3),
 * merge_fusion (draw fusions as single nodes), show_metadata (accepted;
 * the JSON always carries the metadata), type (graph, the default,
 * module_list or adjacent_nodes), format (json, ours and the default, or dot: XLA-style DOT
 * text; XProf's url / html need Graphviz and are refused).  Ours: expand
 * (comma-separated instruction names whose radius-1 neighbourhoods are
 * added: the viewer's "+N" clicks) and max_nodes (default 2000, 1 to
 * 1,000,000): at most that many instructions are answered, the nearest to
 * the centre (by distance from it or from an expanded node; a node inside
 * an expanded fusion counts at its fusion's distance; ties in instruction
 * order), each with what it needs to be drawn (the fusion or caller whose
 * box holds it, an expanded fusion's root); the centre always.  When the
 * limit leaves nodes out the JSON says so: "maxNodes", "totalNodes" (the
 * neighbourhood) and "omittedNodes" (the three are absent otherwise), and
 * the DOT text has a comment.  A page drawing a neighbourhood of 100,000
 * nodes froze (issue 26); the viewer's "Show more" asks for a larger limit.
 *
 * Defaults: without module_name (and program_id) the module holding
 * node_name, else the module with the most device time (self time of its
 * device ops), else the first by name; without node_name the module's most
 * expensive op (largest self time among its device ops that name one of its
 * instructions), else its entry computation's root.
 *
 * type=module_list answers the module names joined by commas, sorted by
 * name (as XProf's page sorts the /module_list answer); the JSON graph
 * carries the same list with each module's device time.  type=adjacent_nodes
 * answers XProf's {"operand_names", "consumer_names"} of node_name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo.h"
#include "hlo_graph.h"
#include "op_metrics.h"
#include "opstats.h"
#include "tool.h"
#include "util.h"

#define DEFAULT_WIDTH 3
#define MAX_WIDTH 32
#define MAX_EXPAND 256
#define DEFAULT_MAX_NODES 2000
#define MAX_MAX_NODES 1000000

/* ==== Modules ============================================================ */

typedef struct module {
    const xpv_hlo_program *prog;
    char name[320];            /* "jit_f(123)" */
    double time_ps;            /* device self time of its ops */
} module;

/* XProf's name: module name + "(program id)"; the metadata's name already
 * has that form in every profile we know, else the proto is decoded. */
static int module_name(xpv_hlo_map *m, const xpv_hostset *hs, const xpv_hlo_program *p,
                       char *out, size_t cap) {
    char suffix[32];
    snprintf(suffix, sizeof suffix, "(%llu)", (unsigned long long)p->program_id);
    size_t n = strlen(p->meta_name), k = strlen(suffix);
    if (n > k && !strcmp(p->meta_name + n - k, suffix)) {
        snprintf(out, cap, "%s", p->meta_name);
        return 0;
    }
    xpv_err err;
    memset(&err, 0, sizeof err);
    const xpv_hlo_program *d = xpv_hlo_decode(m, hs, p, &err);
    if (!d || !d->module->name) return -1;
    snprintf(out, cap, "%s%s", d->module->name, suffix);
    return 0;
}

static int cmp_module(const void *a, const void *b) {
    return strcmp(((const module *)a)->name, ((const module *)b)->name);
}

/* The run's modules, sorted by name; *n set. */
static module *list_modules(const xpv_hostset *hs, const xpv_op_stats *os, size_t *n) {
    xpv_hlo_map *m = os->hlo;
    module *mods = xpv_xcalloc(m->n ? m->n : 1, sizeof *mods);
    size_t k = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (module_name(m, hs, &m->progs[i], mods[k].name, sizeof mods[k].name) < 0) continue;
        mods[k].prog = &m->progs[i];
        const xpv_op_metrics_db *db = &os->ops->device;
        for (size_t j = 0; (os->ops->has_gpu || os->ops->has_tpu) && j < db->n; j++)
            if (!db->ops[j].is_idle &&
                (uint64_t)db->ops[j].program_id == m->progs[i].program_id)
                mods[k].time_ps += (double)db->ops[j].self_time_ps;
        k++;
    }
    qsort(mods, k, sizeof *mods, cmp_module);
    *n = k;
    return mods;
}

/* ==== Choosing module and node ========================================== */

typedef struct choice {
    const module *mod;
    const xpv_hlo_program *prog;   /* decoded */
    xpv_hlo_graph *g;
    int32_t center;                /* -1: the computation `comp` */
    int32_t comp;
    const char *chosen_by;         /* node_name, most_expensive, entry_root */
} choice;

static const module *find_module(const module *mods, size_t n, const char *name,
                                 const char *pid) {
    for (size_t i = 0; name && *name && i < n; i++)
        if (!strcmp(mods[i].name, name)) return &mods[i];
    /* the module name alone, when one module has it */
    for (size_t i = 0; name && *name && i < n; i++) {
        const char *paren = strrchr(mods[i].name, '(');
        if (paren && strlen(name) == (size_t)(paren - mods[i].name) &&
            !strncmp(mods[i].name, name, strlen(name)))
            return &mods[i];
    }
    /* the program id itself, then (XProf) the first module whose name
     * contains it */
    uint64_t v;
    for (size_t i = 0; pid && xpv_parse_u64_strict(pid, UINT64_MAX, &v) && i < n; i++)
        if (mods[i].prog->program_id == v) return &mods[i];
    for (size_t i = 0; pid && *pid && i < n; i++)
        if (strstr(mods[i].name, pid)) return &mods[i];
    return NULL;
}

static const xpv_hlo_program *decode(const xpv_hostset *hs, const xpv_op_stats *os,
                                     const module *m, xpv_err *err) {
    return xpv_hlo_decode(os->hlo, hs, m->prog, err);
}

static const module *default_module(const xpv_hostset *hs, const xpv_op_stats *os,
                                    const module *mods, size_t n, const char *node,
                                    xpv_err *err) {
    /* modules by device time, most first, then by name (hlo.c, the order
     * of the module selectors) */
    const xpv_op_metrics_db *db = os->ops->has_gpu || os->ops->has_tpu ? &os->ops->device : NULL;
    const xpv_hlo_program **order = xpv_hlo_programs_by_device_time(os->hlo, db);
    const module **by_time = xpv_xcalloc(n ? n : 1, sizeof *by_time);
    size_t k = 0;
    for (size_t i = 0; order && i < os->hlo->n; i++)
        for (size_t j = 0; j < n; j++)
            if (mods[j].prog == order[i]) by_time[k++] = &mods[j];
    free(order);
    n = k;
    const module *best = n ? by_time[0] : NULL;
    if (node && *node) {
        best = NULL;
        for (size_t i = 0; i < n && !best; i++) {
            const xpv_hlo_program *p = decode(hs, os, by_time[i], err);
            if (!p) break;
            xpv_hlo_instr in = xpv_hlo_instr_by_name(p, node, strlen(node));
            if (in.ins) best = by_time[i];
            for (size_t c = 0; !best && c < p->module->n_computations; c++) {
                const char *cn = p->module->computations[c]->name;
                if (cn && !strcmp(cn, node[0] == '%' ? node + 1 : node)) best = by_time[i];
            }
        }
        if (!best && !err->status)
            xpv_err_set(err, XPV_E_NOT_FOUND, "no module of this profile has an instruction or "
                        "computation named %.200s", node);
    }
    free(by_time);
    return best;
}

/* The module's most expensive op that names one of its instructions. */
static int32_t most_expensive(const xpv_op_stats *os, const choice *c) {
    const xpv_op_metrics_db *db = &os->ops->device;   /* sorted by self time */
    for (size_t j = 0; (os->ops->has_gpu || os->ops->has_tpu) && j < db->n; j++) {
        const xpv_op_metric *op = &db->ops[j];
        if (op->is_idle || (uint64_t)op->program_id != c->prog->program_id) continue;
        xpv_str nm = xpv_hlo_op_name(op);
        xpv_hlo_instr in = xpv_hlo_instr_by_name(c->prog, nm.ptr, nm.len);
        if (in.ins) return xpv_hlo_graph_by_id(c->g, in.ins->id);
    }
    return -1;
}

static int choose(const xpv_hostset *hs, const xpv_op_stats *os, const module *mods,
                  size_t n, const xpv_params *q, choice *c, xpv_err *err) {
    memset(c, 0, sizeof *c);
    const char *mn = xpv_param(q, "module_name"), *pid = xpv_param(q, "program_id");
    const char *node = xpv_param(q, "node_name");
    if (!n) return xpv_err_set(err, XPV_E_NOT_FOUND, "this profile has no HLO modules");
    if ((mn && *mn) || (pid && *pid)) {
        c->mod = find_module(mods, n, mn, pid);
        /* XProf: an unknown module, but a node name: the module holding it */
        if (!c->mod && node && *node) c->mod = default_module(hs, os, mods, n, node, err);
        if (!c->mod && !err->status)
            return xpv_err_set(err, XPV_E_NOT_FOUND, "no HLO module named %.200s in this profile (see "
                               "type=module_list)", mn && *mn ? mn : pid);
        if (!c->mod) return -1;
    } else {
        c->mod = default_module(hs, os, mods, n, node, err);
        if (!c->mod) return -1;
    }
    c->prog = decode(hs, os, c->mod, err);
    if (!c->prog) return -1;
    c->g = xpv_hlo_graph_build(c->prog);
    c->comp = -1;
    if (node && *node) {
        c->center = xpv_hlo_graph_find(c->g, node);
        if (c->center < 0) c->comp = xpv_hlo_graph_comp(c->g, node);
        if (c->center < 0 && c->comp < 0)
            return xpv_err_set(err, XPV_E_NOT_FOUND, "module %.200s has no instruction or computation "
                               "named %.200s", c->mod->name, node);
        c->chosen_by = "node_name";
        return 0;
    }
    c->center = most_expensive(os, c);
    c->chosen_by = "most_expensive";
    if (c->center < 0 && c->g->entry >= 0) {
        c->center = c->g->comp_root[c->g->entry];
        c->chosen_by = "entry_root";
    }
    if (c->center < 0) return xpv_err_set(err, XPV_E_NOT_FOUND, "module %.200s has no instructions",
                                          c->mod->name);
    return 0;
}

/* ==== JSON =============================================================== */

static const char *state_name(int s) {
    static const char *const names[] = {"hidden", "normal", "someOperandsOmitted",
                                        "allOperandsOmitted", "someUsersOmitted", "center"};
    return names[s];
}

static const char *comp_name(const xpv_hlo_graph *g, int32_t c) {
    const Xla__HloComputationProto *cp = c >= 0 ? g->prog->module->computations[c] : NULL;
    return cp && cp->name ? cp->name : "";
}

/* Per instruction: device self time and occurrences of its op, if any. */
static void op_times(const xpv_op_stats *os, const choice *c, double *t, int64_t *occ) {
    const xpv_op_metrics_db *db = &os->ops->device;
    for (size_t j = 0; (os->ops->has_gpu || os->ops->has_tpu) && j < db->n; j++) {
        const xpv_op_metric *op = &db->ops[j];
        if (op->is_idle || (uint64_t)op->program_id != c->prog->program_id) continue;
        xpv_str nm = xpv_hlo_op_name(op);
        xpv_hlo_instr in = xpv_hlo_instr_by_name(c->prog, nm.ptr, nm.len);
        int32_t i = in.ins ? xpv_hlo_graph_by_id(c->g, in.ins->id) : -1;
        if (i >= 0) t[i] += (double)op->self_time_ps, occ[i] += op->occurrences;
    }
}

static void id_list(xpv_buf *b, const int32_t *v, uint32_t from, uint32_t to, uint32_t max) {
    xpv_buf_putc(b, '[');
    uint32_t k = 0;
    for (uint32_t i = from; i < to && k < max; i++) {
        if (v[i] < 0) continue;
        if (k++) xpv_buf_putc(b, ',');
        xpv_buf_i64(b, v[i]);
    }
    xpv_buf_putc(b, ']');
}

static void write_node(xpv_buf *b, const choice *c, const xpv_hlo_hood *h, int32_t i,
                       const double *t, const int64_t *occ) {
    const xpv_hlo_graph *g = c->g;
    const Xla__HloInstructionProto *ins = g->ins[i].ins;
    xpv_buf x;
    xpv_buf_init(&x);
    xpv_buf_printf(b, "{\"id\":%d,\"name\":", (int)i);
    xpv_buf_json_cstr(b, ins->name);
    xpv_buf_puts(b, ",\"opcode\":");
    xpv_buf_json_cstr(b, ins->opcode ? ins->opcode : "");
    xpv_hlo_shape_text(&x, ins->shape);
    xpv_buf_puts(b, ",\"shape\":");
    xpv_buf_json_str(b, x.data ? x.data : "", x.len);
    xpv_buf_puts(b, ",\"category\":");
    xpv_buf_json_cstr(b, xpv_hlo_category(ins));
    xpv_buf_puts(b, ",\"color\":");
    xpv_buf_json_cstr(b, xpv_hlo_color(g, i));
    xpv_buf_reset(&x);
    xpv_hlo_expression(&x, g->prog, g->ins[i]);
    xpv_buf_puts(b, ",\"expression\":");
    xpv_buf_json_str(b, x.data ? x.data : "", x.len);
    const Xla__OpMetadata *md = ins->metadata;
    xpv_buf_puts(b, ",\"opName\":");
    xpv_buf_json_cstr(b, md && md->op_name ? md->op_name : "");
    xpv_buf_puts(b, ",\"opType\":");
    xpv_buf_json_cstr(b, md && md->op_type ? md->op_type : "");
    xpv_buf_reset(&x);
    if (md && md->source_file && md->source_file[0])
        xpv_buf_printf(&x, "%s:%d", md->source_file, (int)md->source_line);
    xpv_buf_puts(b, ",\"source\":");
    xpv_buf_json_str(b, x.data ? x.data : "", x.len);
    xpv_buf_puts(b, ",\"computation\":");
    xpv_buf_json_cstr(b, comp_name(g, g->comp[i]));
    if (h->cluster[i] >= 0) xpv_buf_printf(b, ",\"cluster\":%d", (int)h->cluster[i]);
    else xpv_buf_puts(b, ",\"cluster\":null");
    xpv_buf_printf(b, ",\"state\":\"%s\",\"center\":%s", state_name(h->state[i]),
                   i == c->center ? "true" : "false");
    if (h->depth[i] >= 0) xpv_buf_printf(b, ",\"distance\":%d", (int)h->depth[i]);
    else xpv_buf_puts(b, ",\"distance\":null");
    xpv_buf_printf(b, ",\"moreOperands\":%d,\"moreUsers\":%d,\"expanded\":%s",
                   xpv_hlo_hood_more_operands(g, h, i), xpv_hlo_hood_more_users(g, h, i),
                   h->expanded[i] ? "true" : "false");
    if (ins->opcode && !strcmp(ins->opcode, "parameter"))
        xpv_buf_printf(b, ",\"parameter\":%lld", (long long)ins->parameter_number);
    xpv_buf_puts(b, ",\"operands\":");
    id_list(b, g->ops, g->op_off[i], g->op_off[i + 1], 1u << 30);
    xpv_buf_printf(b, ",\"userCount\":%u,\"users\":", g->use_off[i + 1] - g->use_off[i]);
    id_list(b, g->uses, g->use_off[i], g->use_off[i + 1], 100);
    xpv_buf_puts(b, ",\"selfTimePs\":");
    xpv_buf_double(b, t[i]);
    xpv_buf_printf(b, ",\"occurrences\":%lld}", (long long)occ[i]);
    xpv_buf_free(&x);
}

static void write_clusters(xpv_buf *b, const choice *c, const xpv_hlo_hood *h) {
    const xpv_hlo_graph *g = c->g;
    uint8_t *seen = xpv_xcalloc(g->ncomps + 1, 1);
    int first = 1;
    xpv_buf_puts(b, ",\"clusters\":[");
    for (size_t i = 0; i < g->n; i++) {
        int32_t cl = h->state[i] ? h->cluster[i] : -1;
        if (cl < 0 || seen[cl]) continue;
        seen[cl] = 1;
        int32_t caller = g->comp_caller[cl];
        if (!first) xpv_buf_putc(b, ',');
        first = 0;
        xpv_buf_printf(b, "{\"id\":%d,\"name\":", (int)cl);
        xpv_buf_json_cstr(b, comp_name(g, cl));
        xpv_buf_puts(b, ",\"kind\":");
        xpv_buf_json_cstr(b, caller >= 0 && g->ins[caller].ins->opcode
                                 ? g->ins[caller].ins->opcode : "");
        xpv_buf_printf(b, ",\"instr\":%d,\"root\":%d", (int)caller, (int)g->comp_root[cl]);
        int32_t parent = caller >= 0 ? h->cluster[caller] : -1;
        if (parent >= 0) xpv_buf_printf(b, ",\"parent\":%d}", (int)parent);
        else xpv_buf_puts(b, ",\"parent\":null}");
    }
    xpv_buf_putc(b, ']');
    free(seen);
}

typedef struct edge_ctx {
    xpv_buf *b;
    int n;
    const xpv_hlo_hood *h;     /* edges between answered nodes only */
} edge_ctx;

static void json_edge(void *vctx, int32_t from, int32_t to, int operand, int kind) {
    static const char *const kinds[] = {"data", "control", "call"};
    edge_ctx *e = vctx;
    if (!e->h->state[from] || !e->h->state[to]) return;
    if (e->n++) xpv_buf_putc(e->b, ',');
    xpv_buf_printf(e->b, "{\"from\":%d,\"to\":%d,\"operand\":%d,\"kind\":\"%s\"}", (int)from,
                   (int)to, operand, kinds[kind]);
}

static void write_modules(xpv_buf *b, const module *mods, size_t n) {
    xpv_buf_puts(b, ",\"modules\":[");
    for (size_t i = 0; i < n; i++) {
        if (i) xpv_buf_putc(b, ',');
        xpv_buf_puts(b, "{\"name\":");
        xpv_buf_json_cstr(b, mods[i].name);
        xpv_buf_printf(b, ",\"programId\":\"%llu\",\"timePs\":",
                       (unsigned long long)mods[i].prog->program_id);
        xpv_buf_double(b, mods[i].time_ps);
        xpv_buf_putc(b, '}');
    }
    xpv_buf_putc(b, ']');
}

/* ==== The node limit (max_nodes) ======================================== */

/* Rank of drawn node i: its distance (capped at 62); inside an expanded
 * fusion or a called computation drawn as a box without one, that of the
 * instruction the box belongs to. */
static int cap_rank(const xpv_hlo_graph *g, const xpv_hlo_hood *h, int32_t i) {
    for (int guard = 0; i >= 0 && guard < 64; guard++) {
        if (h->depth[i] >= 0) return h->depth[i] < 62 ? h->depth[i] : 62;
        i = h->cluster[i] >= 0 ? g->comp_caller[h->cluster[i]] : -1;
    }
    return 63;
}

/* Marks drawn node i in keep with what it needs to be drawn: the
 * instruction whose box holds it and, for an expanded fusion, the node its
 * edges attach to (its fused root), each with their own needs.  Returns
 * how many it newly marked, listed in list[0..). */
static size_t cap_take(const xpv_hlo_graph *g, const xpv_hlo_hood *h, uint8_t *keep, int32_t i,
                       int32_t *list) {
    if (i < 0 || !h->state[i] || keep[i]) return 0;
    size_t n = 0, head = 0;
    keep[i] = 1;
    list[n++] = i;
    while (head < n) {
        int32_t x = list[head++];
        int32_t need[2] = {h->cluster[x] >= 0 ? g->comp_caller[h->cluster[x]] : -1,
                           h->expanded[x] ? xpv_hlo_hood_edge_node(g, h, x) : -1};
        for (int k = 0; k < 2; k++) {
            int32_t y = need[k];
            if (y >= 0 && h->state[y] && !keep[y]) keep[y] = 1, list[n++] = y;
        }
    }
    return n;
}

/* Keeps at most `max` drawn nodes (more only for the centre's own needs),
 * the nearest first (see the header); the others are taken out of the
 * neighbourhood (state 0), so the JSON, the DOT, the edges and the "+N"
 * counts all see the same graph.  Sets *total to the nodes drawn before;
 * returns how many were left out.  Linear in the instructions. */
static size_t cap_nodes(const xpv_hlo_graph *g, xpv_hlo_hood *h, int32_t center, size_t max,
                        size_t *total) {
    size_t start[65] = {0}, tot = 0;
    for (size_t i = 0; i < g->n; i++)
        if (h->state[i]) start[cap_rank(g, h, (int32_t)i) + 1]++, tot++;
    *total = tot;
    if (tot <= max) return 0;
    for (int r = 0; r < 64; r++) start[r + 1] += start[r];
    int32_t *order = xpv_xmalloc(tot * sizeof *order);
    int32_t *list = xpv_xmalloc(g->n * sizeof *list);
    uint8_t *keep = xpv_xcalloc(g->n, 1);
    for (size_t i = 0; i < g->n; i++)
        if (h->state[i]) order[start[cap_rank(g, h, (int32_t)i)]++] = (int32_t)i;
    size_t kept = cap_take(g, h, keep, center, list);
    for (size_t k = 0; k < tot; k++) {
        size_t add = cap_take(g, h, keep, order[k], list);
        if (kept + add > max) {
            for (size_t j = 0; j < add; j++) keep[list[j]] = 0;
            break;
        }
        kept += add;
    }
    for (size_t i = 0; i < g->n; i++)
        if (!keep[i]) h->state[i] = 0;
    h->nshown = kept;
    free(order);
    free(list);
    free(keep);
    return tot - kept;
}

static void write_json(xpv_buf *b, const xpv_op_stats *os, const choice *c,
                       const xpv_hlo_hood *h, int width, int merge, const module *mods,
                       size_t nmods, size_t max_nodes, size_t total, size_t omitted) {
    const xpv_hlo_graph *g = c->g;
    xpv_buf_puts(b, "{\"module\":");
    xpv_buf_json_cstr(b, c->mod->name);
    xpv_buf_printf(b, ",\"programId\":\"%llu\",\"computation\":",
                   (unsigned long long)c->prog->program_id);
    xpv_buf_json_cstr(b, comp_name(g, h->top));
    xpv_buf_puts(b, ",\"center\":");
    xpv_buf_json_cstr(b, c->center >= 0 ? g->ins[c->center].ins->name : "");
    xpv_buf_puts(b, ",\"chosenBy\":");
    xpv_buf_json_cstr(b, c->chosen_by);
    xpv_buf_printf(b, ",\"graphWidth\":%d,\"mergeFusion\":%s", width, merge ? "true" : "false");
    if (omitted)
        xpv_buf_printf(b, ",\"maxNodes\":%zu,\"totalNodes\":%zu,\"omittedNodes\":%zu", max_nodes,
                       total, omitted);
    xpv_buf_puts(b, ",\"nodes\":[");
    double *t = xpv_xcalloc(g->n, sizeof *t);
    int64_t *occ = xpv_xcalloc(g->n, sizeof *occ);
    op_times(os, c, t, occ);
    int k = 0;
    for (size_t i = 0; i < g->n; i++) {
        if (!h->state[i]) continue;
        if (k++) xpv_buf_putc(b, ',');
        write_node(b, c, h, (int32_t)i, t, occ);
    }
    free(t);
    free(occ);
    xpv_buf_putc(b, ']');
    write_clusters(b, c, h);
    xpv_buf_puts(b, ",\"edges\":[");
    edge_ctx e = {b, 0, h};
    xpv_hlo_hood_edges(g, h, json_edge, &e);
    xpv_buf_putc(b, ']');
    write_modules(b, mods, nmods);
    xpv_buf_putc(b, '}');
}

/* ==== DOT (XLA HloDotDumper's style) ===================================== */

typedef struct scheme {
    const char *name, *style, *fill, *stroke, *font;
} scheme;

static const scheme schemes[] = {
    {"blue", "filled", "#bbdefb", "#8aacc8", "black"},
    {"brown", "filled", "#bcaaa4", "#8c7b75", "black"},
    {"darkBlue", "filled", "#1565c0", "#003c8f", "white"},
    {"darkGreen", "filled", "#2e7d32", "#005005", "white"},
    {"darkOrange", "filled", "#ffb74d", "#c88719", "black"},
    {"darkRed", "filled", "#b71c1c", "#7f0000", "white"},
    {"gray", "filled", "#cfd8dc", "#9ea7aa", "black"},
    {"green", "filled", "#c8e6c9", "#97b498", "black"},
    {"orange", "filled", "#ffe0b2", "#cbae82", "black"},
    {"purple", "filled", "#e1bee7", "#af8eb5", "black"},
    {"red", "filled", "#ffcdd2", "#cb9ca1", "black"},
    {"white", "filled", "white", "black", "black"},
    {"yellow", "filled", "#fff9c4", "#cbc693", "black"},
    {"dashed", "filled,dashed", "white", "#757575", "#757575"},
};

static const scheme *scheme_of(const char *name) {
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
        if (!strcmp(schemes[i].name, name)) return &schemes[i];
    return &schemes[11];
}

/* Text for an HTML-like DOT label: <, >, & and quotes escaped. */
static void dot_text(xpv_buf *b, const char *s) {
    for (; s && *s; s++) {
        if (*s == '<') xpv_buf_puts(b, "&lt;");
        else if (*s == '>') xpv_buf_puts(b, "&gt;");
        else if (*s == '&') xpv_buf_puts(b, "&amp;");
        else if (*s == '"') xpv_buf_puts(b, "&quot;");
        else xpv_buf_putc(b, *s);
    }
}

static void dot_node(xpv_buf *b, const choice *c, const xpv_hlo_hood *h, int32_t i) {
    const Xla__HloInstructionProto *ins = c->g->ins[i].ins;
    const char *op = ins->opcode ? ins->opcode : "";
    int st = h->state[i];
    const scheme *s = scheme_of(xpv_hlo_color(c->g, i));
    if (st == XPV_HOOD_SOME_OPERANDS_OMITTED || st == XPV_HOOD_ALL_OPERANDS_OMITTED ||
        st == XPV_HOOD_SOME_USERS_OMITTED)
        s = scheme_of("dashed");
    if (st == XPV_HOOD_CENTER) s = scheme_of("darkRed");
    xpv_buf_printf(b, "n%d [label=<", (int)i);
    if (!strcmp(op, "parameter")) {
        xpv_buf_printf(b, "<b>Parameter %lld</b>", (long long)ins->parameter_number);
    } else if (!strncmp(ins->name, op, strlen(op))) {
        xpv_buf_puts(b, "<b>");
        dot_text(b, ins->name);
        xpv_buf_puts(b, "</b>");
    } else {
        xpv_buf_puts(b, "<b>");
        dot_text(b, op);
        if (!strcmp(op, "fusion") && ins->fusion_kind) {
            xpv_buf_putc(b, ':');
            dot_text(b, ins->fusion_kind);
        }
        xpv_buf_puts(b, "</b><br/>");
        dot_text(b, ins->name);
    }
    xpv_buf t;
    xpv_buf_init(&t);
    xpv_hlo_shape_text(&t, ins->shape);
    xpv_buf_putc(&t, 0);
    xpv_buf_puts(b, "<br/>");
    dot_text(b, t.data);
    xpv_buf_free(&t);
    xpv_buf_printf(b, ">, shape=%s, tooltip=\"",
                   st == XPV_HOOD_CENTER ? "diamond" : !strcmp(op, "while") ? "ellipse" : "rect");
    if (ins->metadata && ins->metadata->op_name) dot_text(b, ins->metadata->op_name);
    xpv_buf_printf(b, "\", style=\"%s\", fontcolor=\"%s\", color=\"%s\", fillcolor=\"%s\"];\n",
                   s->style, s->font, s->stroke, s->fill);
}

/* Nodes of cluster `cl` (-1: the top computation), nested clusters first. */
static void dot_cluster(xpv_buf *b, const choice *c, const xpv_hlo_hood *h, int32_t cl,
                        int level) {
    const xpv_hlo_graph *g = c->g;
    for (size_t i = 0; i < g->n; i++) {
        if (!h->state[i] || h->cluster[i] != cl) continue;
        if (h->expanded[i] || level > 32) continue;
        dot_node(b, c, h, (int32_t)i);
    }
    uint8_t *done = xpv_xcalloc(g->ncomps + 1, 1);
    for (size_t i = 0; i < g->n; i++) {
        int32_t sub = h->state[i] ? h->cluster[i] : -1;
        if (sub < 0 || sub == cl || done[sub]) continue;
        int32_t caller = g->comp_caller[sub];
        if (caller < 0 || h->cluster[caller] != cl) continue;
        done[sub] = 1;
        const Xla__HloInstructionProto *ci = g->ins[caller].ins;
        int fusion = ci->opcode && !strcmp(ci->opcode, "fusion");
        int hl = caller == c->center;
        xpv_buf_printf(b, "subgraph cluster_%d {\n", (int)sub);
        if (fusion)
            xpv_buf_printf(b, "style=\"rounded,filled,bold\"; fillcolor=\"%s\"; color=\"%s;\"\n"
                           "label = <Fused expression for <b>", hl ? "#ffcdd2" : "#f5f5f5",
                           hl ? "#b71c1c" : "#c2c2c2");
        else
            xpv_buf_puts(b, "style=rounded; color=black;\nlabel = <Subcomputation for <b>");
        dot_text(b, ci->name);
        xpv_buf_puts(b, "</b><br/>");
        dot_text(b, fusion ? xpv_hlo_category(ci) : comp_name(g, sub));
        xpv_buf_puts(b, ">;\nlabelloc = t;\ntooltip = \" \";\n");
        dot_cluster(b, c, h, sub, level + 1);
        xpv_buf_printf(b, "}  // cluster_%d\n\n", (int)sub);
    }
    free(done);
}

static void dot_edge(void *vctx, int32_t from, int32_t to, int operand, int kind) {
    (void)operand;
    edge_ctx *e = vctx;
    if (!e->h->state[from] || !e->h->state[to]) return;
    xpv_buf_printf(e->b, "n%d -> n%d%s;\n", (int)from, (int)to,
                   kind == 1 ? " [style=\"dotted\"]" : kind == 2 ? " [style=\"dashed\"]" : "");
    e->n++;
}

static void write_dot(xpv_buf *b, const choice *c, const xpv_hlo_hood *h, size_t total,
                      size_t omitted) {
    xpv_buf_puts(b, "digraph G {\n");
    if (omitted)
        xpv_buf_printf(b, "// %zu of %zu instructions (max_nodes): %zu left out\n", total - omitted,
                       total, omitted);
    xpv_buf_puts(b, "rankdir = TB;\ncompound = true;\nlabel = <<b>");
    dot_text(b, c->mod->name);
    xpv_buf_puts(b, "</b><br/>Computation ");
    dot_text(b, comp_name(c->g, h->top));
    xpv_buf_puts(b, ">;\nlabelloc = t;\ntooltip = \" \";\n\n");
    dot_cluster(b, c, h, -1, 0);
    edge_ctx e = {b, 0, h};
    xpv_hlo_hood_edges(c->g, h, dot_edge, &e);
    xpv_buf_puts(b, "}\n");
}

/* ==== Render ============================================================= */

static int parse_flag(const char *v) {
    return v && (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "True"));
}

/* `expand`: comma-separated instruction names -> indices (unknown skipped). */
static size_t parse_expand(const xpv_hlo_graph *g, const char *s, int32_t *out) {
    size_t n = 0;
    char name[512];
    while (s && *s && n < MAX_EXPAND) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len && len < sizeof name) {
            memcpy(name, s, len);
            name[len] = 0;
            int32_t i = xpv_hlo_graph_find(g, name);
            if (i >= 0) out[n++] = i;
        }
        s += len + (e ? 1 : 0);
    }
    return n;
}

static int render_graph(const xpv_hostset *hs, const xpv_op_stats *os, const module *mods,
                        size_t nmods, const xpv_params *q, int dot, xpv_buf *out,
                        xpv_err *err) {
    const char *w = xpv_param(q, "graph_width");
    uint64_t width = DEFAULT_WIDTH;
    if (w && *w && !xpv_parse_u64_strict(w, MAX_WIDTH, &width))
        return xpv_err_set(err, XPV_E_BAD_REQUEST, "graph_width must be an integer from 0 to %d",
                           MAX_WIDTH);
    int merge = parse_flag(xpv_param(q, "merge_fusion"));
    const char *mn = xpv_param(q, "max_nodes");
    uint64_t max_nodes = DEFAULT_MAX_NODES;
    if (mn && *mn && (!xpv_parse_u64_strict(mn, MAX_MAX_NODES, &max_nodes) || !max_nodes))
        return xpv_err_set(err, XPV_E_BAD_REQUEST, "max_nodes must be an integer from 1 to %d",
                           MAX_MAX_NODES);
    choice c;
    if (choose(hs, os, mods, nmods, q, &c, err) < 0) {
        xpv_hlo_graph_free(c.g);
        return -1;
    }
    int32_t expand[MAX_EXPAND];
    size_t nexpand = parse_expand(c.g, xpv_param(q, "expand"), expand);
    xpv_hlo_hood h;
    int rc = 0;
    if (xpv_hlo_hood_build(c.g, c.center, c.comp, (int)width, expand, nexpand, merge, &h) < 0) {
        rc = xpv_err_set(err, XPV_E_NOT_FOUND, "nothing to draw in module %.200s", c.mod->name);
    } else {
        size_t total, omitted = cap_nodes(c.g, &h, c.center, (size_t)max_nodes, &total);
        if (dot) write_dot(out, &c, &h, total, omitted);
        else write_json(out, os, &c, &h, (int)width, merge, mods, nmods, (size_t)max_nodes, total,
                        omitted);
    }
    xpv_hlo_hood_free(&h);
    xpv_hlo_graph_free(c.g);
    return rc;
}

/* XProf GetAdjacentNodes: the operand and user names of node_name, seen
 * through get-tuple-elements (a get-tuple-element is replaced by its own
 * operands / users), as {"operand_names": [...], "consumer_names": [...]}. */
/* The operands (users == 0) or users of node i, looking through
 * get-tuple-elements to what they read or feed.  Each node is visited and
 * named at most once (`seen`, one byte per instruction): a chain of layers
 * of get-tuple-elements fanning out would otherwise be walked once per
 * path, 2^depth times (issue 26: 60 layers of 2 in 8 KB pinned a worker).
 * The work is bounded by the edges of the graph. */
static void adjacent(xpv_buf *b, const xpv_hlo_graph *g, int32_t i, int users, int depth,
                     uint8_t *seen, int *n) {
    uint32_t from = users ? g->use_off[i] : g->op_off[i];
    uint32_t to = users ? g->use_off[i + 1] : g->op_off[i + 1];
    for (uint32_t k = from; k < to; k++) {
        int32_t j = users ? g->uses[k] : g->ops[k];
        if (j < 0 || seen[j]) continue;
        seen[j] = 1;
        const char *name = g->ins[j].ins->name;
        if (!strncmp(name, "get-tuple-element", 17) && depth < 64) {
            adjacent(b, g, j, users, depth + 1, seen, n);
            continue;
        }
        if ((*n)++) xpv_buf_putc(b, ',');
        xpv_buf_json_cstr(b, name);
    }
}

static int render_adjacent(const xpv_hostset *hs, const xpv_op_stats *os, const module *mods,
                           size_t nmods, const xpv_params *q, xpv_buf *out, xpv_err *err) {
    const char *node = xpv_param(q, "node_name");
    if (!node || !*node) return xpv_err_set(err, XPV_E_BAD_REQUEST, "type=adjacent_nodes needs node_name");
    choice c;
    int rc = choose(hs, os, mods, nmods, q, &c, err);
    if (rc == 0 && c.center < 0)
        rc = xpv_err_set(err, XPV_E_BAD_REQUEST, "adjacent_nodes: %.200s is a computation", node);
    if (rc == 0) {
        int n = 0;
        uint8_t *seen = xpv_xcalloc(c.g->n ? c.g->n : 1, 1);
        seen[c.center] = 1;
        xpv_buf_puts(out, "{\"operand_names\":[");
        adjacent(out, c.g, c.center, 0, 0, seen, &n);
        n = 0;
        memset(seen, 0, c.g->n ? c.g->n : 1);
        seen[c.center] = 1;
        xpv_buf_puts(out, "],\"consumer_names\":[");
        adjacent(out, c.g, c.center, 1, 0, seen, &n);
        xpv_buf_puts(out, "]}");
        free(seen);
    }
    xpv_hlo_graph_free(c.g);
    return rc;
}

int xpv_graph_viewer_render(const xpv_hostset *hs, const void *derived, const xpv_params *q,
                            xpv_buf *out, xpv_err *err) {
    const xpv_op_stats *os = derived;
    const char *type = xpv_param(q, "type"), *format = xpv_param(q, "format");
    int dot = 0;
    if (format && *format && strcmp(format, "json")) {
        if (strcmp(format, "dot"))
            return xpv_err_set(err, XPV_E_BAD_REQUEST, "format=%.40s needs Graphviz, which xpview does not "
                               "use: ask for format=json (the default, drawn by this page) "
                               "or format=dot", format);
        dot = 1;
    }
    size_t nmods;
    module *mods = list_modules(hs, os, &nmods);
    int rc = 0;
    if (type && !strcmp(type, "module_list")) {
        for (size_t i = 0; i < nmods; i++) {
            if (i) xpv_buf_putc(out, ',');
            xpv_buf_puts(out, mods[i].name);
        }
    } else if (type && !strcmp(type, "adjacent_nodes")) {
        rc = render_adjacent(hs, os, mods, nmods, q, out, err);
    } else if (type && *type && strcmp(type, "graph")) {
        rc = xpv_err_set(err, XPV_E_BAD_REQUEST, "unknown graph viewer type %.40s: graph, module_list or "
                         "adjacent_nodes", type);
    } else {
        rc = render_graph(hs, os, mods, nmods, q, dot, out, err);
    }
    free(mods);
    return rc;
}

const char *xpv_graph_viewer_content_type(const xpv_params *q) {
    const char *type = xpv_param(q, "type"), *format = xpv_param(q, "format");
    if ((type && !strcmp(type, "module_list")) || (format && !strcmp(format, "dot")))
        return "text/plain; charset=utf-8";
    return NULL;
}

/* XProf lists graph_viewer when the profile carries an HLO proto. */
int xpv_graph_viewer_available(const xpv_profile *p) { return xpv_hlo_count_protos(p) > 0; }
