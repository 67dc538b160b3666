/*
 * fuzz_hlo_struct.c - structured libFuzzer target for the HLO tools' inputs
 * (issue 26): the input is one HloProto, and a custom mutator edits it as
 * a module rather than as bytes: instructions and computations added,
 * ids duplicated and chosen to collide, operands and called computations
 * pointed anywhere (themselves included, repeated hundreds of times),
 * opcodes swapped among the ones the tools treat specially (fusion, while,
 * scatter, get-tuple-element, tuple, ...), shapes made wide tuples or huge
 * arrays.  Each input is decoded and read as every HLO tool reads it:
 * lookups by name and id, expressions and shape text, XLA's GPU cost
 * analysis, the graph and neighbourhoods of up to 16 centres, adjacency,
 * and the memory viewer's analysis.  The bounds of analysis/ keep each run
 * short; a hang is a finding.
 *
 * Besides libFuzzer (`bash .ci/fuzz`), test_fuzz_replay runs the mutator
 * from an empty module for a few hundred deterministic steps.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "hlo.h"
#include "hlo.pb-c.h"
#include "hlo_cost.h"
#include "hlo_graph.h"
#include "hlo_memory.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size) __attribute__((weak));

/* ==== Mutator ============================================================ */

typedef struct rng {
    uint64_t s;
} rng;

static uint32_t rnd(rng *r, uint32_t n) {
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return n ? (uint32_t)(r->s % n) : 0;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    memcpy(d, s, n + 1);
    return d;
}

static const char *const opcodes[] = {
    "fusion", "while", "scatter", "gather", "get-tuple-element", "tuple", "parameter",
    "dot", "convolution", "custom-call", "all-reduce", "conditional", "call", "add",
    "dynamic-update-slice", "slice", "reduce", "constant", "copy", "async-start"};
#define NOPCODES (sizeof opcodes / sizeof *opcodes)

/* Every instruction of the module, and every id in use. */
static size_t all_instructions(Xla__HloModuleProto *m, Xla__HloInstructionProto **out,
                               size_t cap) {
    size_t n = 0;
    for (size_t c = 0; c < m->n_computations; c++)
        for (size_t i = 0; m->computations[c] && i < m->computations[c]->n_instructions; i++)
            if (n < cap && m->computations[c]->instructions[i])
                out[n++] = m->computations[c]->instructions[i];
    return n;
}

static int64_t some_id(rng *r, Xla__HloInstructionProto **ins, size_t n) {
    if (!n || rnd(r, 8) == 0) return (int64_t)rnd(r, 64);
    return ins[rnd(r, (uint32_t)n)]->id;
}

static int64_t some_comp_id(rng *r, Xla__HloModuleProto *m) {
    if (!m->n_computations || rnd(r, 8) == 0) return (int64_t)rnd(r, 16);
    Xla__HloComputationProto *c = m->computations[rnd(r, (uint32_t)m->n_computations)];
    return c ? c->id : 0;
}

static Xla__ShapeProto *new_shape(rng *r, int depth) {
    Xla__ShapeProto *s = malloc(sizeof *s);
    xla__shape_proto__init(s);
    if (depth < 2 && rnd(r, 4) == 0) {
        s->element_type = 13; /* tuple */
        size_t n = depth == 0 && rnd(r, 3) == 0 ? 100 + rnd(r, 400) : 1 + rnd(r, 4);
        s->tuple_shapes = malloc(n * sizeof *s->tuple_shapes);
        for (size_t i = 0; i < n; i++) s->tuple_shapes[i] = new_shape(r, depth + 1);
        s->n_tuple_shapes = n;
        return s;
    }
    static const int types[] = {11, 16, 2, 4, 12, 6, 1};
    s->element_type = types[rnd(r, 7)];
    size_t nd = rnd(r, 4);
    s->dimensions = malloc((nd ? nd : 1) * sizeof *s->dimensions);
    for (size_t i = 0; i < nd; i++)
        s->dimensions[i] = rnd(r, 6) == 0 ? (int64_t)1 << (20 + rnd(r, 40)) : 1 + rnd(r, 64);
    s->n_dimensions = nd;
    return s;
}

static void set_ids(int64_t **arr, size_t *n, size_t want, rng *r,
                    int64_t (*pick)(rng *, void *), void *ctx) {
    free(*arr);
    *arr = malloc((want ? want : 1) * sizeof **arr);
    int64_t same = pick(r, ctx);
    for (size_t i = 0; i < want; i++) (*arr)[i] = rnd(r, 2) ? same : pick(r, ctx);
    *n = want;
}

typedef struct pick_ctx {
    Xla__HloInstructionProto **ins;
    size_t n;
    Xla__HloModuleProto *m;
} pick_ctx;

static int64_t pick_ins(rng *r, void *vc) {
    pick_ctx *c = vc;
    return some_id(r, c->ins, c->n);
}

static int64_t pick_comp(rng *r, void *vc) {
    pick_ctx *c = vc;
    return some_comp_id(r, c->m);
}

static void add_instruction(rng *r, Xla__HloModuleProto *m, pick_ctx *pc) {
    if (!m->n_computations) return;
    Xla__HloComputationProto *c = m->computations[rnd(r, (uint32_t)m->n_computations)];
    if (!c) return;
    Xla__HloInstructionProto *ins = malloc(sizeof *ins);
    xla__hlo_instruction_proto__init(ins);
    char name[48];
    snprintf(name, sizeof name, rnd(r, 3) ? "i.%u" : "get-tuple-element.%u", rnd(r, 100000));
    ins->name = dup_str(name);
    ins->opcode = dup_str(opcodes[rnd(r, NOPCODES)]);
    ins->id = rnd(r, 4) == 0 ? some_id(r, pc->ins, pc->n) : (int64_t)rnd(r, 1u << 20);
    ins->shape = new_shape(r, 0);
    set_ids(&ins->operand_ids, &ins->n_operand_ids, rnd(r, 5), r, pick_ins, pc);
    if (rnd(r, 2))
        set_ids(&ins->called_computation_ids, &ins->n_called_computation_ids, 1 + rnd(r, 2), r,
                pick_comp, pc);
    c->instructions = realloc(c->instructions, (c->n_instructions + 1) * sizeof *c->instructions);
    c->instructions[c->n_instructions++] = ins;
}

static void add_computation(rng *r, Xla__HloModuleProto *m) {
    Xla__HloComputationProto *c = malloc(sizeof *c);
    xla__hlo_computation_proto__init(c);
    c->name = dup_str(rnd(r, 2) ? "comp" : "fused_computation");
    c->id = some_comp_id(r, m) + (rnd(r, 2) ? 0 : 1 + rnd(r, 8));
    m->computations = realloc(m->computations, (m->n_computations + 1) * sizeof *m->computations);
    m->computations[m->n_computations++] = c;
}

/* One structural edit of module `m`. */
static void mutate_module(rng *r, Xla__HloModuleProto *m) {
    Xla__HloInstructionProto *ins[4096];
    size_t n = all_instructions(m, ins, 4096);
    pick_ctx pc = {ins, n, m};
    if (!m->n_computations || rnd(r, 10) == 0) {
        add_computation(r, m);
        return;
    }
    if (!n || rnd(r, 4) == 0) {
        for (uint32_t k = 1 + rnd(r, 3); k--;) add_instruction(r, m, &pc);
        return;
    }
    Xla__HloInstructionProto *t = ins[rnd(r, (uint32_t)n)];
    switch (rnd(r, 7)) {
    case 0: /* operands anywhere, sometimes hundreds of one id */
        set_ids(&t->operand_ids, &t->n_operand_ids,
                rnd(r, 4) == 0 ? 100 + rnd(r, 3000) : rnd(r, 6), r, pick_ins, &pc);
        break;
    case 1: /* called computations anywhere, repeated */
        set_ids(&t->called_computation_ids, &t->n_called_computation_ids,
                rnd(r, 4) == 0 ? 20 + rnd(r, 200) : 1 + rnd(r, 3), r, pick_comp, &pc);
        break;
    case 2:
        free(t->opcode);
        t->opcode = dup_str(opcodes[rnd(r, NOPCODES)]);
        break;
    case 3:
        if (t->shape) xla__shape_proto__free_unpacked(t->shape, NULL);
        t->shape = new_shape(r, 0);
        break;
    case 4: /* an id shared with another instruction */
        t->id = some_id(r, ins, n);
        break;
    case 5: {
        Xla__HloComputationProto *c = m->computations[rnd(r, (uint32_t)m->n_computations)];
        if (c) c->root_id = some_id(r, ins, n);
        m->entry_computation_id = some_comp_id(r, m);
        break;
    }
    default:
        t->tuple_index = rnd(r, 8);
        t->parameter_number = rnd(r, 4);
        break;
    }
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
    Xla__HloProto *p = xla__hlo_proto__unpack(NULL, size, data);
    if (!p) return LLVMFuzzerMutate ? LLVMFuzzerMutate(data, size, max_size) : size;
    if (!p->hlo_module) {
        p->hlo_module = malloc(sizeof *p->hlo_module);
        xla__hlo_module_proto__init(p->hlo_module);
        p->hlo_module->name = dup_str("jit_fuzz");
    }
    rng r = {((uint64_t)seed << 1) | 1};
    for (uint32_t k = 1 + rnd(&r, 4); k--;) mutate_module(&r, p->hlo_module);
    size_t len = xla__hlo_proto__get_packed_size(p);
    if (len <= max_size) xla__hlo_proto__pack(p, data);
    else len = LLVMFuzzerMutate ? LLVMFuzzerMutate(data, size, max_size) : size;
    xla__hlo_proto__free_unpacked(p, NULL);
    return len;
}

/* ==== Target ============================================================= */

/* Instructions costed per input (each may take the whole per-instruction
 * budget; test_fuzz_replay lowers it to keep its 200 modules quick). */
static size_t struct_costs_per_input = 16;

static void walk_hoods(const xpv_hlo_program *pr) {
    xpv_hlo_graph *g = xpv_hlo_graph_build(pr);
    for (size_t k = 0; k < 16 && k < g->n; k++) {
        int32_t center = (int32_t)(k * (g->n / 16 + 1) % g->n);
        xpv_hlo_hood h;
        if (xpv_hlo_hood_build(g, center, -1, 3, &center, 1, (int)(k & 1), &h) == 0) {
            for (size_t i = 0; i < g->n; i++)
                if (xpv_hlo_hood_more_users(g, &h, (int32_t)i) < 0) abort();
            xpv_hlo_hood_free(&h);
        }
    }
    xpv_hlo_graph_free(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *copy = malloc(size ? size : 1);
    if (size) memcpy(copy, data, size);
    xpv_hlo_blob blob = {7, "jit_fuzz(7)", copy, size, size + 1};
    const xpv_hlo_blob *lists[1] = {&blob};
    size_t counts[1] = {1};
    xpv_hlo_map *m = xpv_hlo_map_from_lists(lists, counts, 1);
    xpv_err err;
    memset(&err, 0, sizeof err);
    const xpv_hlo_program *pr = xpv_hlo_decode(m, NULL, xpv_hlo_find(m, 7), &err);
    if (!pr && !err.status) abort(); /* a failure says why */
    if (pr && pr->module) {
        const Xla__HloModuleProto *mod = pr->module;
        xpv_buf b;
        xpv_buf_init(&b);
        size_t costed = 0;
        for (size_t c = 0; c < mod->n_computations; c++) {
            const Xla__HloComputationProto *comp = mod->computations[c];
            for (size_t i = 0; comp && i < comp->n_instructions; i++) {
                const Xla__HloInstructionProto *ins = comp->instructions[i];
                if (!ins) continue;
                xpv_hlo_instr in = xpv_hlo_instr_by_id(pr, ins->id);
                if (!in.ins && ins->name) abort(); /* every named id is found (maybe a namesake) */
                if (!in.ins) in = (xpv_hlo_instr){ins, comp};
                xpv_buf_reset(&b);
                xpv_hlo_expression(&b, pr, in);
                if (b.len > XPV_HLO_EXPR_MAX + (1u << 20)) abort();
                if (costed++ < struct_costs_per_input) (void)xpv_hlo_gpu_cost(pr, in);
            }
        }
        xpv_buf_free(&b);
        walk_hoods(pr);
        if (xpv_hlo_has_buffer_assignment(pr->proto)) {
            xpv_hlo_memory *hm = xpv_hlo_memory_compute(pr->proto, 0, 0, &err);
            xpv_hlo_memory_free(hm);
        }
    }
    xpv_hlo_map_free(m);
    free(copy);
    return 0;
}
