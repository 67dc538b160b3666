/*
 * test_tool_op_profile.c - the Op Profile tool (tools/op_profile.c) on
 * constructed GPU profiles: a fusion op's fused instructions hang below it,
 * and hostile modules whose fusions name computations over and over (or
 * themselves) stay small: each computation is expanded once per op, the
 * answer says when a bound cut the tree (issue 26, item 4: 911 bytes made
 * 6.5 GB of JSON).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "hlo.pb-c.h"
#include "hlo_fixture.h"
#include "opstats.h"
#include "testutil.h"
#include "tool.h"
#include "tool_xspace.h"

#define MS 1000000000LL /* ps */

/* A module of `ncomp` computations built on the heap: computation k (id
 * k + 1) holds `nins` instructions named "<k>.<i>"; instruction 0 of each is
 * a parameter, the rest fusions, each calling `ncalls` computations, the
 * j-th being (k + j) % ncomp + 1 (computation 1 is the entry, whose first
 * fusion "0.1" is the op the kernel runs). */
typedef struct hm {
    Xla__HloModuleProto mod;
    Xla__HloComputationProto *comps, **pcomps;
    Xla__HloInstructionProto *ins, **pins;
    Xla__ShapeProto shape;
    int64_t dim, *calls;
    char *names;
} hm;

static uint8_t *pack_hostile(size_t ncomp, size_t nins, size_t ncalls, size_t *len) {
    hm h;
    memset(&h, 0, sizeof h);
    Xla__ShapeProto sz = XLA__SHAPE_PROTO__INIT;
    h.shape = sz;
    h.shape.element_type = 11;
    h.dim = 8;
    h.shape.dimensions = &h.dim;
    h.shape.n_dimensions = 1;
    h.comps = calloc(ncomp, sizeof *h.comps);
    h.pcomps = calloc(ncomp, sizeof *h.pcomps);
    h.ins = calloc(ncomp * nins, sizeof *h.ins);
    h.pins = calloc(ncomp * nins, sizeof *h.pins);
    h.calls = calloc(ncomp * nins * ncalls, sizeof *h.calls);
    h.names = calloc(ncomp * nins, 48);
    for (size_t k = 0; k < ncomp; k++) {
        for (size_t i = 0; i < nins; i++) {
            size_t x = k * nins + i;
            Xla__HloInstructionProto z = XLA__HLO_INSTRUCTION_PROTO__INIT;
            h.ins[x] = z;
            snprintf(h.names + 48 * x, 48, "%zu.%zu", k, i);
            h.ins[x].name = h.names + 48 * x;
            h.ins[x].opcode = (char *)(i ? "fusion" : "parameter");
            h.ins[x].id = (int64_t)(x + 1);
            h.ins[x].shape = &h.shape;
            if (i) {
                h.ins[x].fusion_kind = (char *)"kLoop";
                for (size_t j = 0; j < ncalls; j++)
                    h.calls[x * ncalls + j] = (int64_t)((k + j) % ncomp + 1);
                h.ins[x].called_computation_ids = &h.calls[x * ncalls];
                h.ins[x].n_called_computation_ids = ncalls;
            }
            h.pins[x] = &h.ins[x];
        }
        Xla__HloComputationProto c = XLA__HLO_COMPUTATION_PROTO__INIT;
        h.comps[k] = c;
        h.comps[k].name = (char *)"comp";
        h.comps[k].id = (int64_t)(k + 1);
        h.comps[k].root_id = (int64_t)(k * nins + nins);
        h.comps[k].instructions = &h.pins[k * nins];
        h.comps[k].n_instructions = nins;
        h.pcomps[k] = &h.comps[k];
    }
    Xla__HloModuleProto m = XLA__HLO_MODULE_PROTO__INIT;
    h.mod = m;
    h.mod.name = (char *)"jit_h";
    h.mod.entry_computation_id = 1;
    h.mod.computations = h.pcomps;
    h.mod.n_computations = ncomp;
    uint8_t *out = hf_pack_module(&h.mod, len);
    free(h.comps);
    free(h.pcomps);
    free(h.ins);
    free(h.pins);
    free(h.calls);
    free(h.names);
    return out;
}

/* One GPU host whose kernel runs HLO op "0.1" of program 5 (the module). */
static xpv_profile *profile_of(const uint8_t *bytes, size_t len) {
    tx_space *s = tx_new();
    int meta = tx_plane(s, "/host:metadata");
    hf_meta_proto(s, meta, "jit_h(5)", bytes, len, 5);
    int pl = tx_plane(s, "/device:GPU:0");
    int ln = tx_line(s, pl, 1, "Stream #1(Kernel)", 0);
    tx_event_t *e = tx_event(s, pl, ln, "kernel", 0, MS);
    tx_ev_ref(s, pl, e, "hlo_op", "0.1");
    tx_ev_int(s, pl, e, "program_id", 5);
    return tx_decode(s);
}

/* The answer's bytes (malloc'ed, NUL-terminated), *len their count. */
static char *render(os_host *f, size_t *len) {
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_err err;
    memset(&err, 0, sizeof err);
    xpv_params q = {0, NULL, NULL, NULL};
    if (xpv_tool_render(xpv_tool_find("op_profile"), &f->hs, f->os, &q, &b, &err) != 0)
        fail_msg("op_profile: %s", err.msg);
    *len = b.len;
    xpv_buf_putc(&b, 0);
    return b.data;
}

/* The node named `name` anywhere below `n`, or NULL. */
static json_t *find_node(json_t *n, const char *name) {
    const char *nm = json_string_value(json_object_get(n, "name"));
    if (nm && !strcmp(nm, name)) return n;
    json_t *kids = json_object_get(n, "children");
    for (size_t i = 0; i < json_array_size(kids); i++) {
        json_t *r = find_node(json_array_get(kids, i), name);
        if (r) return r;
    }
    return NULL;
}

/* Nodes in the tree below n, n included. */
static size_t count_nodes(json_t *n) {
    size_t c = 1;
    json_t *kids = json_object_get(n, "children");
    for (size_t i = 0; i < json_array_size(kids); i++) c += count_nodes(json_array_get(kids, i));
    return c;
}

static json_t *open_and_render(size_t ncomp, size_t nins, size_t ncalls, size_t *len) {
    size_t plen;
    uint8_t *bytes = pack_hostile(ncomp, nins, ncalls, &plen);
    print_message("module of %zu computations x %zu instructions x %zu calls: %zu bytes\n", ncomp,
                  nins, ncalls, plen);
    os_host f;
    os_host_open(&f, profile_of(bytes, plen));
    free(bytes);
    char *s = render(&f, len);
    json_error_t jerr;
    json_t *j = json_loads(s, 0, &jerr);
    if (!j) fail_msg("bad JSON: %s", jerr.text);
    free(s);
    os_host_close(&f);
    return j;
}

/* A fusion calling its own computation 200 times, whose 6 fusions do the
 * same: shown once, the 5 fused instructions below the op (the parameter
 * left out), not expanded again below them, no cut. */
static void test_self_calls(void **state) {
    (void)state;
    size_t len;
    json_t *j = open_and_render(1, 6, 200, &len);
    json_t *root = json_object_get(j, "byProgram");
    json_t *op = find_node(root, "0.1");
    assert_non_null(op);
    json_t *kids = json_object_get(op, "children");
    assert_int_equal(json_array_size(kids), 5);
    for (size_t i = 0; i < json_array_size(kids); i++)
        assert_null(json_object_get(json_array_get(kids, i), "children"));
    assert_null(json_object_get(j, "note"));
    assert_true(len < 64 * 1024);
    json_decref(j);
}

/* 100 computations of 101 instructions, each fusion calling 100 of them:
 * without a visited set 100 x 100 children at each of 5 levels (10^20
 * nodes); with it each op expands each computation once and at most 64 of
 * them, at most 100 instructions below a node, and says it was cut. */
static void test_wide_calls(void **state) {
    (void)state;
    size_t len;
    json_t *j = open_and_render(100, 101, 100, &len);
    json_t *root = json_object_get(j, "byProgram");
    json_t *op = find_node(root, "0.1");
    assert_non_null(op);
    /* the op's own computation first: its 100 fusions */
    assert_int_equal(json_array_size(json_object_get(op, "children")), 100);
    /* each computation once per op: 64 computations x 100 fused nodes,
     * plus the program, category and root nodes */
    size_t nodes = count_nodes(op) - 1;
    print_message("fused nodes below the op: %zu, answer %zu bytes\n", nodes, len);
    assert_true(nodes <= 64 * 100);
    assert_true(nodes >= 100);
    assert_non_null(json_object_get(j, "note"));
    assert_true(len < 16 * 1024 * 1024);
    json_decref(j);
}

TU_MAIN(cmocka_unit_test(test_self_calls), cmocka_unit_test(test_wide_calls))
