/*
 * test_tool_graph_viewer.c - the Graph Viewer tool (tools/graph_viewer.c,
 * analysis/hlo/hlo_graph.c).
 *
 * A constructed module (a chain, a fan-in, a fusion with its fused
 * computation, a while loop with body and condition) with known
 * neighbourhoods for graph_width 0, 1 and 2: drawn nodes, their cut-off
 * marks, fusion clusters, edges (into fused parameters, out of fused
 * roots, subcomputation roots to the while), merge_fusion, DOT and the
 * module list; golden JSON / DOT in tests/golden/graph_viewer/
 * (XPV_UPDATE_GOLDEN=1 rewrites them).  On every JAX profile of
 * ../shared/testdata/real and tests/data/device the default request answers
 * the most expensive op of the module with the most device time (found
 * here from the op database and the proto), and the answer holds that op
 * and every operand of it (read straight from the proto).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "hlo.h"
#include "hlo.pb-c.h"
#include "hlo_fixture.h"
#include "opstats.h"
#include "testutil.h"
#include "tool.h"
#include "tool_xspace.h"

/* ==== A constructed module =============================================== */

#define NI 160

typedef struct mb {
    Xla__HloInstructionProto ins[NI];
    Xla__HloInstructionProto *pins[NI];
    Xla__ShapeProto shape[NI];
    int64_t dims[NI][1];
    int64_t ops[NI][3];
    int64_t called[NI][2];
    Xla__HloComputationProto comp[4];
    Xla__HloComputationProto *pcomp[4];
    Xla__HloModuleProto mod;
    int n;
} mb;

/* Instruction `name` (id) with operand ids; shape f32[8]. */
static Xla__HloInstructionProto *add(mb *b, const char *name, const char *opcode, int64_t id,
                                     int64_t o0, int64_t o1, int64_t o2) {
    int i = b->n++;
    Xla__HloInstructionProto z = XLA__HLO_INSTRUCTION_PROTO__INIT;
    Xla__ShapeProto sz = XLA__SHAPE_PROTO__INIT;
    b->shape[i] = sz;
    b->shape[i].element_type = 11;
    b->dims[i][0] = 8;
    b->shape[i].dimensions = b->dims[i];
    b->shape[i].n_dimensions = 1;
    b->ins[i] = z;
    b->ins[i].name = (char *)name;
    b->ins[i].opcode = (char *)opcode;
    b->ins[i].id = id;
    b->ins[i].shape = &b->shape[i];
    int64_t o[3] = {o0, o1, o2};
    for (int k = 0; k < 3 && o[k]; k++) b->ops[i][b->ins[i].n_operand_ids++] = o[k];
    b->ins[i].operand_ids = b->ops[i];
    b->pins[i] = &b->ins[i];
    return &b->ins[i];
}

static void calls(mb *b, Xla__HloInstructionProto *in, int64_t c0, int64_t c1) {
    int i = (int)(in - b->ins);
    b->called[i][0] = c0;
    b->called[i][1] = c1;
    in->called_computation_ids = b->called[i];
    in->n_called_computation_ids = c1 ? 2 : 1;
}

static void comp(mb *b, int k, const char *name, int64_t id, int64_t root, int first, int last) {
    Xla__HloComputationProto z = XLA__HLO_COMPUTATION_PROTO__INIT;
    b->comp[k] = z;
    b->comp[k].name = (char *)name;
    b->comp[k].id = id;
    b->comp[k].root_id = root;
    b->comp[k].instructions = &b->pins[first];
    b->comp[k].n_instructions = (size_t)(last - first);
    b->pcomp[k] = &b->comp[k];
}

/* fused_computation (20): fp0, fp1 -> fm = multiply (root)
 * body (30): bp -> bg = gte -> bn = negate -> bt = tuple (root)
 * cond (40): cp -> cg = gte; cc = constant; cmp = compare(cg, cc) (root)
 * main (10): p0, p1 -> a = add(p0, p1) -> neg = negate(a) -> e = exp(neg);
 *   c = concatenate(a, neg, e) (fan-in); fusion.1 = fusion(c, p1);
 *   t = tuple(fusion.1); w = while(t); r = gte(w) (root) */
static uint8_t *pack_module(size_t *len) {
    mb *b = calloc(1, sizeof *b);
    add(b, "fp0", "parameter", 21, 0, 0, 0);
    add(b, "fp1", "parameter", 22, 0, 0, 0)->parameter_number = 1;
    add(b, "fm", "multiply", 23, 21, 22, 0);
    int f_end = b->n;
    add(b, "bp", "parameter", 31, 0, 0, 0);
    add(b, "bg", "get-tuple-element", 32, 31, 0, 0);
    add(b, "bn", "negate", 33, 32, 0, 0);
    add(b, "bt", "tuple", 34, 33, 0, 0);
    int b_end = b->n;
    add(b, "cp", "parameter", 41, 0, 0, 0);
    add(b, "cg", "get-tuple-element", 42, 41, 0, 0);
    add(b, "cc", "constant", 43, 0, 0, 0);
    add(b, "cmp", "compare", 44, 42, 43, 0)->comparison_direction = (char *)"LT";
    int c_end = b->n;
    add(b, "p0", "parameter", 1, 0, 0, 0);
    add(b, "p1", "parameter", 2, 0, 0, 0)->parameter_number = 1;
    add(b, "a", "add", 3, 1, 2, 0);
    add(b, "neg", "negate", 4, 3, 0, 0);
    add(b, "e", "exponential", 5, 4, 0, 0);
    add(b, "c", "concatenate", 6, 3, 4, 5);
    Xla__HloInstructionProto *f = add(b, "fusion.1", "fusion", 7, 6, 2, 0);
    f->fusion_kind = (char *)"kLoop";
    calls(b, f, 20, 0);
    add(b, "t", "tuple", 8, 7, 0, 0);
    calls(b, add(b, "w", "while", 9, 8, 0, 0), 30, 40);
    add(b, "r", "get-tuple-element", 10, 9, 0, 0);
    comp(b, 0, "fused_computation", 20, 23, 0, f_end);
    b->comp[0].is_fusion_computation = 1;
    comp(b, 1, "body", 30, 34, f_end, b_end);
    comp(b, 2, "cond", 40, 44, b_end, c_end);
    comp(b, 3, "main", 10, 10, c_end, b->n);
    Xla__HloModuleProto m = XLA__HLO_MODULE_PROTO__INIT;
    b->mod = m;
    b->mod.name = (char *)"jit_g";
    b->mod.entry_computation_name = (char *)"main";
    b->mod.entry_computation_id = 10;
    b->mod.computations = b->pcomp;
    b->mod.n_computations = 4;
    uint8_t *out = hf_pack_module(&b->mod, len);
    free(b);
    return out;
}

/* b's instructions as the one computation "main" (10, root `root`) of
 * module `name`, packed; b is freed. */
static uint8_t *pack_main_only(mb *b, const char *name, int64_t root, size_t *len) {
    comp(b, 0, "main", 10, root, 0, b->n);
    Xla__HloModuleProto m = XLA__HLO_MODULE_PROTO__INIT;
    b->mod = m;
    b->mod.name = (char *)name;
    b->mod.entry_computation_id = 10;
    b->mod.computations = b->pcomp;
    b->mod.n_computations = 1;
    uint8_t *out = hf_pack_module(&b->mod, len);
    free(b);
    return out;
}

/* main (10): p0 with 21 users: n0..n19 (negate) and get-tuple-element.7,
 * whose user is u; n19 is the root. */
static uint8_t *pack_wide_module(size_t *len) {
    mb *b = calloc(1, sizeof *b);
    static char names[20][8];
    add(b, "p0", "parameter", 1, 0, 0, 0);
    for (int i = 0; i < 20; i++) {
        snprintf(names[i], sizeof names[i], "n%d", i);
        add(b, names[i], "negate", 100 + i, 1, 0, 0);
    }
    add(b, "get-tuple-element.7", "get-tuple-element", 200, 1, 0, 0);
    add(b, "u", "negate", 201, 200, 0, 0);
    return pack_main_only(b, "jit_wide", 119, len);
}

/* main (10): p0 -> 60 layers of two get-tuple-elements, each reading both
 * of the layer before -> u = negate(both of the last layer): 2^60 paths
 * from u to p0 (issue 26, item 2). */
static uint8_t *pack_gte_layers(size_t *len) {
    mb *b = calloc(1, sizeof *b);
    static char names[120][32];
    add(b, "p0", "parameter", 1, 0, 0, 0);
    int64_t prev0 = 1, prev1 = 1;
    for (int l = 0; l < 60; l++) {
        int64_t id = 100 + 2 * l;
        /* the name tells XProf's walk a get-tuple-element */
        snprintf(names[2 * l], sizeof names[0], "get-tuple-element.%da", l);
        snprintf(names[2 * l + 1], sizeof names[0], "get-tuple-element.%db", l);
        add(b, names[2 * l], "get-tuple-element", id, prev0, prev1, 0);
        add(b, names[2 * l + 1], "get-tuple-element", id + 1, prev0, prev1, 0);
        prev0 = id, prev1 = id + 1;
    }
    add(b, "u", "negate", 500, prev0, prev1, 0);
    return pack_main_only(b, "jit_layers", 500, len);
}

static xpv_profile *constructed_profile(uint8_t *(*pack)(size_t *), const char *meta,
                                        int64_t pid) {
    size_t len;
    uint8_t *bytes = pack(&len);
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/host:metadata");
    hf_meta_proto(s, pl, meta, bytes, len, pid);
    free(bytes);
    return tx_decode(s);
}

/* Render with up to 6 key/value pairs ("k", "v", ..., NULL); the body is
 * returned (malloc'ed), or NULL with *status set. */
static char *render_raw(os_host *f, int *status, const char *const *kv) {
    const char *keys[6], *vals[6];
    size_t n = 0;
    for (; kv[2 * n] && n < 6; n++) keys[n] = kv[2 * n], vals[n] = kv[2 * n + 1];
    xpv_params q = {n, keys, vals, NULL};
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_err err;
    memset(&err, 0, sizeof err);
    *status = 200;
    if (xpv_tool_find("graph_viewer")->render(&f->hs, f->os, &q, &b, &err) != 0) {
        *status = err.status;
        xpv_buf_free(&b);
        return NULL;
    }
    xpv_buf_putc(&b, 0);
    return b.data;
}

static json_t *render_json(os_host *f, const char *const *kv) {
    int status;
    char *s = render_raw(f, &status, kv);
    if (!s) fail_msg("graph_viewer answered %d", status);
    json_error_t jerr;
    json_t *j = json_loads(s, 0, &jerr);
    if (!j) fail_msg("bad JSON: %s", jerr.text);
    free(s);
    return j;
}

static json_t *node_named(json_t *g, const char *name) {
    json_t *nodes = json_object_get(g, "nodes");
    for (size_t i = 0; i < json_array_size(nodes); i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(nodes, i), "name")), name))
            return json_array_get(nodes, i);
    return NULL;
}

/* Names of the drawn nodes, sorted, joined by spaces. */
static char *node_names(json_t *g) {
    json_t *nodes = json_object_get(g, "nodes");
    size_t n = json_array_size(nodes);
    const char **v = calloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = json_string_value(json_object_get(json_array_get(nodes, i), "name"));
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
            const char *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    static char out[2048];
    out[0] = 0;
    for (size_t i = 0; i < n; i++) {
        if (i) strcat(out, " ");
        strncat(out, v[i], sizeof out - strlen(out) - 2);
    }
    free(v);
    return out;
}

static const char *id_name(json_t *g, json_int_t id) {
    json_t *nodes = json_object_get(g, "nodes");
    for (size_t i = 0; i < json_array_size(nodes); i++)
        if (json_integer_value(json_object_get(json_array_get(nodes, i), "id")) == id)
            return json_string_value(json_object_get(json_array_get(nodes, i), "name"));
    return "?";
}

/* Edges as "from>to" (kinds other than data suffixed ":kind"), sorted. */
static char *edge_list(json_t *g) {
    json_t *edges = json_object_get(g, "edges");
    size_t n = json_array_size(edges);
    char **v = calloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(edges, i);
        const char *kind = json_string_value(json_object_get(e, "kind"));
        v[i] = malloc(128);
        snprintf(v[i], 128, "%s>%s%s%s", id_name(g, json_integer_value(json_object_get(e, "from"))),
                 id_name(g, json_integer_value(json_object_get(e, "to"))),
                 strcmp(kind, "data") ? ":" : "", strcmp(kind, "data") ? kind : "");
    }
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
            char *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    static char out[2048];
    out[0] = 0;
    for (size_t i = 0; i < n; i++) {
        if (i) strcat(out, " ");
        strncat(out, v[i], sizeof out - strlen(out) - 2);
        free(v[i]);
    }
    free(v);
    return out;
}

static json_int_t int_of(json_t *g, const char *node, const char *key) {
    json_t *nd = node_named(g, node);
    if (!nd) fail_msg("node %s not drawn", node);
    return json_integer_value(json_object_get(nd, key));
}

static const char *str_of(json_t *g, const char *node, const char *key) {
    json_t *nd = node_named(g, node);
    if (!nd) fail_msg("node %s not drawn", node);
    return json_string_value(json_object_get(nd, key));
}

/* The golden file tests/golden/graph_viewer/<name>: compared (JSON by
 * value), or written when XPV_UPDATE_GOLDEN=1. */
static void check_golden(const char *name, const char *body) {
    tu_check_golden("graph_viewer", name, body, strstr(name, ".json") != NULL);
}

static void test_constructed_neighbourhoods(void **state) {
    (void)state;
    os_host f;
    os_host_open(&f, constructed_profile(pack_module, "jit_g(5)", 5));
    /* width 1 around e: its operand and user; cut-off marks */
    json_t *g = render_json(&f, (const char *[]){"node_name", "e", "graph_width", "1", NULL});
    assert_string_equal(json_string_value(json_object_get(g, "module")), "jit_g(5)");
    assert_string_equal(json_string_value(json_object_get(g, "center")), "e");
    assert_string_equal(json_string_value(json_object_get(g, "computation")), "main");
    assert_string_equal(node_names(g), "c e neg");
    assert_string_equal(edge_list(g), "e>c neg>c neg>e");
    assert_string_equal(str_of(g, "e", "state"), "center");
    assert_string_equal(str_of(g, "c", "state"), "someOperandsOmitted");
    assert_int_equal(int_of(g, "c", "moreOperands"), 1);   /* a */
    assert_int_equal(int_of(g, "c", "moreUsers"), 1);      /* fusion.1 */
    assert_string_equal(str_of(g, "neg", "state"), "allOperandsOmitted");
    assert_int_equal(int_of(g, "neg", "moreUsers"), 0);
    assert_int_equal(int_of(g, "neg", "distance"), 1);
    assert_string_equal(str_of(g, "e", "color"), "yellow");
    assert_string_equal(str_of(g, "e", "shape"), "f32[8]");
    json_decref(g);
    /* width 2: a and fusion.1 join; the fusion has a cut operand (p1), so
     * it stays a single node */
    g = render_json(&f, (const char *[]){"node_name", "e", "graph_width", "2", NULL});
    assert_string_equal(node_names(g), "a c e fusion.1 neg");
    assert_string_equal(edge_list(g), "a>c a>neg c>fusion.1 e>c neg>c neg>e");
    assert_string_equal(str_of(g, "fusion.1", "state"), "someOperandsOmitted");
    assert_false(json_is_true(json_object_get(node_named(g, "fusion.1"), "expanded")));
    assert_int_equal(json_array_size(json_object_get(g, "clusters")), 0);
    json_decref(g);
    /* width 0: the centre alone */
    g = render_json(&f, (const char *[]){"node_name", "e", "graph_width", "0", NULL});
    assert_string_equal(node_names(g), "e");
    json_decref(g);
    /* width 1 around the fusion: expanded, edges into its parameters and
     * out of its root */
    g = render_json(&f, (const char *[]){"node_name", "fusion.1", "graph_width", "1", NULL});
    assert_string_equal(node_names(g), "c fm fp0 fp1 fusion.1 p1 t");
    assert_string_equal(edge_list(g), "c>fp0 fm>t fp0>fm fp1>fm p1>fp1");
    assert_true(json_is_true(json_object_get(node_named(g, "fusion.1"), "expanded")));
    json_t *cl = json_array_get(json_object_get(g, "clusters"), 0);
    assert_string_equal(json_string_value(json_object_get(cl, "name")), "fused_computation");
    assert_string_equal(json_string_value(json_object_get(cl, "kind")), "fusion");
    assert_int_equal(int_of(g, "fm", "cluster"), json_integer_value(json_object_get(cl, "id")));
    assert_true(json_is_null(json_object_get(node_named(g, "c"), "cluster")));
    assert_int_equal(int_of(g, "fp1", "parameter"), 1);
    json_decref(g);
    /* merge_fusion: the fusion is one node */
    g = render_json(&f, (const char *[]){"node_name", "fusion.1", "graph_width", "1",
                                         "merge_fusion", "1", NULL});
    assert_string_equal(node_names(g), "c fusion.1 p1 t");
    assert_string_equal(edge_list(g), "c>fusion.1 fusion.1>t p1>fusion.1");
    json_decref(g);
    /* the while: its operand, user and the roots of body and condition */
    g = render_json(&f, (const char *[]){"node_name", "w", "graph_width", "1", NULL});
    assert_string_equal(node_names(g), "bt cc cmp r t w");   /* cc: constants come with their user */
    assert_string_equal(edge_list(g), "bt>w:call cc>cmp cmp>w:call t>w w>r");
    assert_string_equal(str_of(g, "w", "color"), "darkGreen");
    assert_int_equal(json_array_size(json_object_get(g, "clusters")), 2);
    json_decref(g);
    /* width 2: into the condition (cg); not into the operands of the
     * tuples t and bt (XLA: only the centre's tuple is opened) */
    g = render_json(&f, (const char *[]){"node_name", "w", "graph_width", "2", NULL});
    assert_string_equal(node_names(g), "bt cc cg cmp r t w");
    json_decref(g);
    g = render_json(&f, (const char *[]){"node_name", "t", "graph_width", "1", NULL});
    assert_string_equal(node_names(g), "fusion.1 t w");
    json_decref(g);
    /* expand: the radius-1 neighbourhood of a drawn node is added */
    g = render_json(&f, (const char *[]){"node_name", "e", "graph_width", "1", "expand", "c",
                                         NULL});
    assert_string_equal(node_names(g), "a c e fusion.1 neg");
    assert_int_equal(int_of(g, "c", "moreOperands"), 0);
    json_decref(g);
    /* a computation name draws it whole */
    g = render_json(&f, (const char *[]){"node_name", "body", NULL});
    assert_string_equal(node_names(g), "bg bn bp bt");
    json_decref(g);
    /* default: no device ops, so the entry computation's root */
    g = render_json(&f, (const char *[]){NULL});
    assert_string_equal(json_string_value(json_object_get(g, "center")), "r");
    assert_string_equal(json_string_value(json_object_get(g, "chosenBy")), "entry_root");
    json_decref(g);
    /* errors */
    int status;
    char *s0;
    assert_null(render_raw(&f, &status, (const char *[]){"node_name", "nope", NULL}));
    assert_int_equal(status, 404);
    assert_null(render_raw(&f, &status, (const char *[]){"module_name", "jit_x(1)", NULL}));
    assert_int_equal(status, 404);
    /* an unknown module with a node name: the module holding the node */
    g = render_json(&f, (const char *[]){"module_name", "jit_x(1)", "node_name", "neg", NULL});
    assert_string_equal(json_string_value(json_object_get(g, "module")), "jit_g(5)");
    json_decref(g);
    /* program_id alone */
    g = render_json(&f, (const char *[]){"program_id", "5", "node_name", "neg", NULL});
    assert_string_equal(json_string_value(json_object_get(g, "center")), "neg");
    json_decref(g);
    assert_null(render_raw(&f, &status, (const char *[]){"graph_width", "-1", NULL}));
    assert_int_equal(status, 400);
    assert_null(render_raw(&f, &status, (const char *[]){"format", "url", NULL}));
    assert_int_equal(status, 400);
    /* XProf's adjacent_nodes (get-tuple-elements are told by name) */
    s0 = render_raw(&f, &status, (const char *[]){"type", "adjacent_nodes", "node_name", "w", NULL});
    assert_string_equal(s0, "{\"operand_names\":[\"t\"],\"consumer_names\":[\"r\"]}");
    free(s0);
    s0 = render_raw(&f, &status, (const char *[]){"type", "adjacent_nodes", "node_name", "c", NULL});
    assert_string_equal(s0, "{\"operand_names\":[\"a\",\"neg\",\"e\"],\"consumer_names\":[\"fusion.1\"]}");
    free(s0);
    s0 = render_raw(&f, &status, (const char *[]){"type", "adjacent_nodes", "node_name", "bp", NULL});
    assert_string_equal(s0, "{\"operand_names\":[],\"consumer_names\":[\"bg\"]}");
    free(s0);
    /* module list, goldens */
    char *s = render_raw(&f, &status, (const char *[]){"type", "module_list", NULL});
    assert_string_equal(s, "jit_g(5)");
    assert_string_equal(xpv_tool_find("graph_viewer")->content_type(
                            &(xpv_params){1, (const char *[]){"type"},
                                          (const char *[]){"module_list"}, NULL}),
                        "text/plain; charset=utf-8");
    free(s);
    s = render_raw(&f, &status, (const char *[]){"node_name", "fusion.1", "graph_width", "1",
                                                 "module_name", "jit_g(5)", NULL});
    check_golden("constructed_fusion_w1.json", s);
    free(s);
    s = render_raw(&f, &status, (const char *[]){"node_name", "w", "graph_width", "2",
                                                 "format", "dot", NULL});
    assert_non_null(strstr(s, "digraph G {"));
    assert_non_null(strstr(s, "subgraph cluster_"));
    check_golden("constructed_while_w2.dot", s);
    free(s);
    os_host_close(&f);
}

/* XLA draws the users of a node with more than 16 of them only when asked
 * (a "+N" click expands them all); XProf's adjacent_nodes. */
static void test_many_users(void **state) {
    (void)state;
    os_host f;
    os_host_open(&f, constructed_profile(pack_wide_module, "jit_wide(6)", 6));
    json_t *g = render_json(&f, (const char *[]){"node_name", "p0", "graph_width", "2", NULL});
    assert_string_equal(node_names(g), "p0");
    assert_string_equal(str_of(g, "p0", "state"), "center");
    assert_int_equal(int_of(g, "p0", "moreUsers"), 21);
    assert_int_equal(int_of(g, "p0", "userCount"), 21);
    json_decref(g);
    g = render_json(&f, (const char *[]){"node_name", "n3", "graph_width", "1", NULL});
    assert_string_equal(node_names(g), "n3 p0");
    /* at the edge of the radius: XLA marks nothing, 20 users are cut */
    assert_string_equal(str_of(g, "p0", "state"), "normal");
    assert_int_equal(int_of(g, "p0", "moreUsers"), 20);
    json_decref(g);
    g = render_json(&f, (const char *[]){"node_name", "n3", "graph_width", "1", "expand", "p0",
                                         NULL});
    assert_int_equal(json_array_size(json_object_get(g, "nodes")), 22);
    assert_int_equal(int_of(g, "p0", "moreUsers"), 0);
    assert_string_equal(str_of(g, "p0", "state"), "normal");
    json_decref(g);
    /* adjacent_nodes looks through the get-tuple-element to its user u */
    int status;
    char *s0 = render_raw(&f, &status, (const char *[]){"type", "adjacent_nodes",
                                                        "node_name", "p0", NULL});
    assert_non_null(strstr(s0, "\"n19\",\"u\"]}"));
    assert_null(strstr(s0, "get-tuple-element"));
    free(s0);
    os_host_close(&f);
}

/* adjacent_nodes visits each get-tuple-element once: through 60 layers of
 * two (2^60 paths, which the walk used to follow one by one) u's operand is
 * p0, named once, and p0's consumer is u. */
static void test_adjacent_layers(void **state) {
    (void)state;
    os_host f;
    os_host_open(&f, constructed_profile(pack_gte_layers, "jit_layers(7)", 7));
    int status;
    char *s0 = render_raw(&f, &status, (const char *[]){"type", "adjacent_nodes",
                                                        "node_name", "u", NULL});
    assert_non_null(s0);
    assert_string_equal(s0, "{\"operand_names\":[\"p0\"],\"consumer_names\":[]}");
    free(s0);
    s0 = render_raw(&f, &status, (const char *[]){"type", "adjacent_nodes", "node_name", "p0",
                                                  NULL});
    assert_non_null(s0);
    assert_string_equal(s0, "{\"operand_names\":[],\"consumer_names\":[\"u\"]}");
    free(s0);
    os_host_close(&f);
}

/* ==== The node limit (max_nodes) ======================================== */

#define TUPLE_N 3000

/* main (10): p0; neg.i = negate(p0) for i < TUPLE_N; out = tuple(neg.*),
 * the root: opened by default (no device ops), out's TUPLE_N operands are
 * all in its neighbourhood (issue 26 item 11: a page drawing 20,000 such
 * nodes froze). */
static uint8_t *pack_tuple_module(size_t *len) {
    static Xla__HloInstructionProto ins[TUPLE_N + 2];
    static Xla__HloInstructionProto *pins[TUPLE_N + 2];
    static Xla__ShapeProto shape;
    static int64_t dims[1] = {8}, one[1] = {1}, ids[TUPLE_N];
    static char names[TUPLE_N][16];
    Xla__ShapeProto sz = XLA__SHAPE_PROTO__INIT;
    shape = sz;
    shape.element_type = 11;
    shape.dimensions = dims;
    shape.n_dimensions = 1;
    for (int i = 0; i < TUPLE_N + 2; i++) {
        Xla__HloInstructionProto z = XLA__HLO_INSTRUCTION_PROTO__INIT;
        ins[i] = z;
        ins[i].shape = &shape;
        ins[i].id = i + 1;
        pins[i] = &ins[i];
        if (i == 0) {
            ins[i].name = (char *)"p0";
            ins[i].opcode = (char *)"parameter";
        } else if (i <= TUPLE_N) {
            snprintf(names[i - 1], sizeof names[0], "neg.%d", i - 1);
            ins[i].name = names[i - 1];
            ins[i].opcode = (char *)"negate";
            ins[i].operand_ids = one;
            ins[i].n_operand_ids = 1;
            ids[i - 1] = i + 1;
        } else {
            ins[i].name = (char *)"out";
            ins[i].opcode = (char *)"tuple";
            ins[i].operand_ids = ids;
            ins[i].n_operand_ids = TUPLE_N;
        }
    }
    Xla__HloComputationProto cz = XLA__HLO_COMPUTATION_PROTO__INIT, *pc[1];
    Xla__HloComputationProto c = cz;
    c.name = (char *)"main";
    c.id = 10;
    c.root_id = TUPLE_N + 2;
    c.instructions = pins;
    c.n_instructions = TUPLE_N + 2;
    pc[0] = &c;
    Xla__HloModuleProto m = XLA__HLO_MODULE_PROTO__INIT;
    m.name = (char *)"jit_tuple";
    m.entry_computation_id = 10;
    m.computations = pc;
    m.n_computations = 1;
    return hf_pack_module(&m, len);
}

static int has_id(json_t *arr, const char *key, json_int_t id) {
    for (size_t i = 0; i < json_array_size(arr); i++)
        if (json_integer_value(json_object_get(json_array_get(arr, i), key)) == id) return 1;
    return 0;
}

/* What a limited answer must hold to be drawn: every edge between answered
 * nodes, every node's box listed, every box's instruction (and an expanded
 * fusion's root) answered, boxes nested in listed boxes.  Returns the
 * number of nodes. */
static size_t check_drawable(json_t *g) {
    json_t *nodes = json_object_get(g, "nodes"), *edges = json_object_get(g, "edges");
    json_t *clusters = json_object_get(g, "clusters");
    for (size_t i = 0; i < json_array_size(edges); i++) {
        json_t *e = json_array_get(edges, i);
        assert_true(has_id(nodes, "id", json_integer_value(json_object_get(e, "from"))));
        assert_true(has_id(nodes, "id", json_integer_value(json_object_get(e, "to"))));
    }
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        json_t *c = json_object_get(json_array_get(nodes, i), "cluster");
        if (json_is_integer(c)) assert_true(has_id(clusters, "id", json_integer_value(c)));
    }
    for (size_t i = 0; i < json_array_size(clusters); i++) {
        json_t *c = json_array_get(clusters, i), *parent = json_object_get(c, "parent");
        json_int_t instr = json_integer_value(json_object_get(c, "instr"));
        assert_true(has_id(nodes, "id", instr));
        if (json_is_integer(parent)) assert_true(has_id(clusters, "id", json_integer_value(parent)));
        for (size_t k = 0; k < json_array_size(nodes); k++) {
            json_t *nd = json_array_get(nodes, k);
            if (json_integer_value(json_object_get(nd, "id")) == instr &&
                json_is_true(json_object_get(nd, "expanded")))
                assert_true(has_id(nodes, "id", json_integer_value(json_object_get(c, "root"))));
        }
    }
    return json_array_size(nodes);
}

/* The largest distance among the answered nodes of `cut` is at most the
 * smallest among the nodes of `full` it leaves out: the nearest are kept. */
static void check_nearest(json_t *full, json_t *cut) {
    json_t *fn = json_object_get(full, "nodes"), *cn = json_object_get(cut, "nodes");
    json_int_t kept_max = -1, out_min = 1 << 30;
    for (size_t i = 0; i < json_array_size(fn); i++) {
        json_t *nd = json_array_get(fn, i), *d = json_object_get(nd, "distance");
        if (!json_is_integer(d)) continue;
        if (has_id(cn, "id", json_integer_value(json_object_get(nd, "id")))) {
            if (json_integer_value(d) > kept_max) kept_max = json_integer_value(d);
        } else if (json_integer_value(d) < out_min) {
            out_min = json_integer_value(d);
        }
    }
    assert_true(kept_max <= out_min);
}

static void test_node_limit(void **state) {
    (void)state;
    os_host f;
    os_host_open(&f, constructed_profile(pack_tuple_module, "jit_tuple(8)", 8));
    /* the default: 2000 nodes, the centre and its operands (p0, 2 steps
     * away, left out), with what was left out */
    json_t *g = render_json(&f, (const char *[]){NULL});
    assert_string_equal(json_string_value(json_object_get(g, "center")), "out");
    assert_int_equal(check_drawable(g), 2000);
    assert_int_equal(json_integer_value(json_object_get(g, "maxNodes")), 2000);
    assert_int_equal(json_integer_value(json_object_get(g, "totalNodes")), TUPLE_N + 2);
    assert_int_equal(json_integer_value(json_object_get(g, "omittedNodes")), TUPLE_N + 2 - 2000);
    assert_null(node_named(g, "p0"));
    assert_non_null(node_named(g, "neg.0"));
    assert_non_null(node_named(g, "neg.1998"));
    assert_null(node_named(g, "neg.1999"));
    assert_int_equal(json_array_size(json_object_get(g, "edges")), 1999);
    /* the cut-off operands show on the centre's "+N" and on each negate's */
    assert_int_equal(int_of(g, "out", "moreOperands"), TUPLE_N - 1999);
    assert_int_equal(int_of(g, "neg.0", "moreOperands"), 1);
    json_decref(g);
    /* a larger limit: all of it, and no limit fields */
    g = render_json(&f, (const char *[]){"max_nodes", "8000", NULL});
    assert_int_equal(check_drawable(g), TUPLE_N + 2);
    assert_null(json_object_get(g, "omittedNodes"));
    assert_null(json_object_get(g, "maxNodes"));
    assert_int_equal(json_array_size(json_object_get(g, "edges")), 2 * TUPLE_N);
    json_decref(g);
    /* the DOT text answers the same graph, with a comment */
    int status;
    char *s = render_raw(&f, &status, (const char *[]){"max_nodes", "10", "format", "dot", NULL});
    assert_non_null(s);
    assert_non_null(strstr(s, "// 10 of 3002 instructions (max_nodes): 2992 left out\n"));
    int arrows = 0;
    for (const char *p = s; (p = strstr(p, " -> ")); p++) arrows++;
    assert_int_equal(arrows, 9);
    free(s);
    static const char *const bad[] = {"0", "-1", "x", "1000001", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_null(render_raw(&f, &status, (const char *[]){"max_nodes", bad[i], NULL}));
        assert_int_equal(status, 400);
    }
    os_host_close(&f);
    /* the constructed module (a fusion, a while with body and condition):
     * every limit answers a drawable graph of the nearest nodes, at most
     * the limit (more only for what the centre itself needs: a fusion
     * centre comes with its fused root) */
    os_host_open(&f, constructed_profile(pack_module, "jit_g(5)", 5));
    static const char *const centres[] = {"fusion.1", "w", "c", "bn", "a"};
    for (size_t k = 0; k < sizeof centres / sizeof centres[0]; k++) {
        json_t *full = render_json(&f, (const char *[]){"node_name", centres[k], "graph_width", "3",
                                                        "expand", "t", NULL});
        size_t total = check_drawable(full);
        for (int max = 1; max <= (int)total + 1; max++) {
            char mx[16];
            snprintf(mx, sizeof mx, "%d", max);
            json_t *cut = render_json(&f, (const char *[]){"node_name", centres[k], "graph_width",
                                                           "3", "expand", "t", "max_nodes", mx,
                                                           NULL});
            size_t n = check_drawable(cut);
            assert_non_null(node_named(cut, centres[k]));
            assert_true(n <= (size_t)max || (max < 3 && n <= 2));
            check_nearest(full, cut);
            if ((size_t)max >= total) {
                assert_int_equal(n, total);
                assert_null(json_object_get(cut, "omittedNodes"));
            } else {
                assert_int_equal(json_integer_value(json_object_get(cut, "omittedNodes")), total - n);
                assert_int_equal(json_integer_value(json_object_get(cut, "totalNodes")), total);
            }
            json_decref(cut);
        }
        json_decref(full);
    }
    os_host_close(&f);
}

/* ==== Real profiles ====================================================== */

/* Straight from the proto: the instruction named `name` in `mod`. */
static const Xla__HloInstructionProto *proto_find(const Xla__HloModuleProto *mod,
                                                  const char *name, size_t len) {
    for (size_t c = 0; c < mod->n_computations; c++)
        for (size_t i = 0; i < mod->computations[c]->n_instructions; i++) {
            const Xla__HloInstructionProto *in = mod->computations[c]->instructions[i];
            if (in->name && strlen(in->name) == len && !memcmp(in->name, name, len)) return in;
        }
    return NULL;
}

static const Xla__HloInstructionProto *proto_by_id(const Xla__HloModuleProto *mod, int64_t id) {
    for (size_t c = 0; c < mod->n_computations; c++)
        for (size_t i = 0; i < mod->computations[c]->n_instructions; i++)
            if (mod->computations[c]->instructions[i]->id == id)
                return mod->computations[c]->instructions[i];
    return NULL;
}

/* The module with the most device self time, and its costliest op that is
 * one of its instructions (else its entry root), found here independently:
 * self times summed per program id over the op database, the proto decoded
 * again with protobuf-c and searched by name. */
static void expected_default(os_host *f, uint64_t *pid, Xla__HloProto **proto,
                             const Xla__HloInstructionProto **want) {
    const xpv_op_metrics_db *db = &f->os->ops->device;
    double best = -1;
    *pid = 0;
    for (size_t k = 0; k < f->os->hlo->n; k++) {
        uint64_t id = f->os->hlo->progs[k].program_id;
        double t = 0;
        for (size_t j = 0; j < db->n; j++)
            if (!db->ops[j].is_idle && (uint64_t)db->ops[j].program_id == id)
                t += (double)db->ops[j].self_time_ps;
        if (t > best) best = t, *pid = id;   /* ties: none in these files */
    }
    const xpv_hlo_program *p = xpv_hlo_find(f->os->hlo, *pid);
    *proto = xla__hlo_proto__unpack(NULL, p->nbytes, p->bytes);
    assert_non_null(*proto);
    const Xla__HloModuleProto *mod = (*proto)->hlo_module;
    *want = NULL;
    int64_t top = -1;
    for (size_t j = 0; j < db->n; j++) {
        const xpv_op_metric *op = &db->ops[j];
        if (op->is_idle || (uint64_t)op->program_id != *pid) continue;
        xpv_str nm = xpv_hlo_op_name(op);
        const Xla__HloInstructionProto *in = proto_find(mod, nm.ptr, nm.len);
        if (in && op->self_time_ps > top) top = op->self_time_ps, *want = in;
    }
    if (!*want)
        for (size_t c = 0; c < mod->n_computations; c++)
            if (mod->computations[c]->id == mod->entry_computation_id)
                *want = proto_by_id(mod, mod->computations[c]->root_id);
    assert_non_null(*want);
}

static void check_default(const char *path) {
    os_host f;
    os_host_open(&f, tx_decode_file(path));
    uint64_t pid;
    Xla__HloProto *proto;
    const Xla__HloInstructionProto *want;
    expected_default(&f, &pid, &proto, &want);
    json_t *g = render_json(&f, (const char *[]){NULL});
    char pids[32];
    snprintf(pids, sizeof pids, "%llu", (unsigned long long)pid);
    assert_string_equal(json_string_value(json_object_get(g, "programId")), pids);
    assert_string_equal(json_string_value(json_object_get(g, "center")), want->name);
    json_t *c = node_named(g, want->name);
    assert_non_null(c);
    assert_true(json_is_true(json_object_get(c, "center")));
    /* every operand drawn, each with an edge into the op (or, for an
     * expanded fusion, into its fused parameter) */
    json_int_t cid = json_integer_value(json_object_get(c, "id"));
    for (size_t k = 0; k < want->n_operand_ids; k++) {
        const Xla__HloInstructionProto *o = proto_by_id(proto->hlo_module, want->operand_ids[k]);
        assert_non_null(o);
        json_t *on = node_named(g, o->name);
        if (!on) fail_msg("%s: operand %s of %s not drawn", path, o->name, want->name);
        json_int_t oid = json_integer_value(json_object_get(on, "id"));
        int found = 0;
        json_t *edges = json_object_get(g, "edges");
        for (size_t e = 0; e < json_array_size(edges); e++) {
            json_t *ed = json_array_get(edges, e);
            json_int_t to = json_integer_value(json_object_get(ed, "to"));
            const char *tn = id_name(g, to);
            json_t *tnode = node_named(g, tn);
            int into = to == cid || (json_is_true(json_object_get(c, "expanded")) &&
                                     !strcmp(str_of(g, tn, "opcode"), "parameter") &&
                                     json_integer_value(json_object_get(tnode, "parameter")) ==
                                         (json_int_t)k &&
                                     !json_is_null(json_object_get(tnode, "cluster")));
            if (into && (json_integer_value(json_object_get(ed, "from")) == oid ||
                         json_is_true(json_object_get(on, "expanded"))))
                found = 1;
        }
        if (!found) fail_msg("%s: no edge from operand %s into %s", path, o->name, want->name);
    }
    print_message("%s: %s / %s (%s), %zu nodes, %zu edges, %zu operands\n",
                  strrchr(path, '/') + 1, json_string_value(json_object_get(g, "module")),
                  want->name, json_string_value(json_object_get(g, "chosenBy")),
                  json_array_size(json_object_get(g, "nodes")),
                  json_array_size(json_object_get(g, "edges")), want->n_operand_ids);
    json_decref(g);
    xla__hlo_proto__free_unpacked(proto, NULL);
    os_host_close(&f);
}

static void check_real_default(const char *path, xpv_profile *p, void *ctx) {
    size_t *n = ctx;
    if (!xpv_hlo_count_protos(p)) return;   /* not a JAX / XLA profile */
    check_default(path);
    (*n)++;
}

static void test_real_defaults(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    size_t n = 0;
    tx_each_real_profile(1, check_real_default, &n);
    assert_true(n >= 5);   /* the TPU file and the four AMD ones */
}

static void test_device_defaults(void **state) {
    (void)state;
    const char *src = getenv("XPV_SRC");
    char path[4096];
    const char *names[] = {"jax_gpu_mlp.xplane.pb", "jax_gpu_mlp_nocmdbuf.xplane.pb"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/tests/data/device/%s", src ? src : ".", names[i]);
        check_default(path);
    }
    /* golden: the default graph of the H100 profile without command buffers */
    os_host f;
    os_host_open(&f, tx_decode_file(path));
    int status;
    char *s = render_raw(&f, &status, (const char *[]){NULL});
    assert_non_null(s);
    check_golden("jax_gpu_mlp_nocmdbuf_default.json", s);
    free(s);
    os_host_close(&f);
}

TU_MAIN(cmocka_unit_test(test_constructed_neighbourhoods),
        cmocka_unit_test(test_many_users),
        cmocka_unit_test(test_adjacent_layers),
        cmocka_unit_test(test_node_limit),
        cmocka_unit_test(test_real_defaults),
        cmocka_unit_test(test_device_defaults))
