/*
 * test_analysis_hlo_memory.c - the memory viewer (analysis/hlo/hlo_memory.c,
 * tools/memory_viewer.c) on HLO protos built here with known answers
 * (buffer reuse with padding and small buffers, a while loop whose result
 * aliases its operand through SHARE_WITH, a multi-output fusion, a second
 * memory space, inconsistent traces), the tool's module selection and
 * errors (a proto that does not decode, a program without a buffer
 * assignment), golden JSON (tests/golden/memory_viewer/; XPV_UPDATE_GOLDEN=1
 * rewrites them), and every JAX profile of ../shared and tests/data/device:
 * for every program, the tool answers and its peak equals the largest heap
 * of the trace as counted here from the proto, independently.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "hlo.h"
#include "hlo_fixture.h"
#include "hlo_memory.h"
#include "opstats.h"
#include "testutil.h"
#include "tool.h"
#include "tool_xspace.h"

#define MIB (1024.0 * 1024.0)

/* ==== A module builder ==================================================== */

#define MAXN 32

typedef struct mb {
    Xla__HloInstructionProto ins[MAXN], *pins[MAXN];
    Xla__ShapeProto shape[MAXN], sub[MAXN][2], *psub[MAXN][2];
    Xla__LayoutProto layout[MAXN], sublayout[MAXN][2];
    int64_t dims[MAXN][1], subdims[MAXN][2][1], m2m[1];
    Xla__OpMetadata md[MAXN];
    size_t nins;
    Xla__HloComputationProto comp, *pcomp;
    Xla__HloModuleProto mod;
    Xla__LogicalBufferProto lb[MAXN], *plb[MAXN];
    Xla__LogicalBufferProto__Location at[MAXN];
    int64_t shape_index[MAXN][1];
    size_t nlb;
    Xla__BufferAllocationProto al[8], *pal[8];
    Xla__BufferAllocationProto__Assigned as[MAXN], *pas[8][MAXN];
    size_t nal, nas;
    Xla__HeapSimulatorTrace tr[4], *ptr[4];
    Xla__HeapSimulatorTrace__Event ev[4][MAXN], *pev[4][MAXN];
    size_t ntr;
    Xla__BufferAssignmentProto ba;
    Xla__HloProto proto;
} mb;

static void vec_shape(Xla__ShapeProto *s, Xla__LayoutProto *l, int64_t *dim, int type,
                      int64_t n) {
    Xla__ShapeProto s0 = XLA__SHAPE_PROTO__INIT;
    Xla__LayoutProto l0 = XLA__LAYOUT_PROTO__INIT;
    static int64_t zero[1] = {0};
    *s = s0;
    *l = l0;
    s->element_type = type;
    dim[0] = n;
    s->dimensions = dim;
    s->n_dimensions = 1;
    l->minor_to_major = zero;
    l->n_minor_to_major = 1;
    s->layout = l;
}

/* An instruction with a vector shape f32[n] (type 11) and metadata. */
static Xla__HloInstructionProto *ins(mb *b, const char *name, const char *opcode, int64_t n) {
    size_t i = b->nins++;
    Xla__HloInstructionProto i0 = XLA__HLO_INSTRUCTION_PROTO__INIT;
    Xla__OpMetadata m0 = XLA__OP_METADATA__INIT;
    b->ins[i] = i0;
    b->ins[i].name = (char *)name;
    b->ins[i].opcode = (char *)opcode;
    b->ins[i].id = (int64_t)i + 100;
    vec_shape(&b->shape[i], &b->layout[i], b->dims[i], 11, n);
    b->ins[i].shape = &b->shape[i];
    b->md[i] = m0;
    b->md[i].op_name = (char *)"jit(f)/op";
    b->ins[i].metadata = &b->md[i];
    b->pins[i] = &b->ins[i];
    return &b->ins[i];
}

/* Turn instruction `i`'s shape into a tuple of f32[n0], f32[n1]. */
static void tuple_shape(mb *b, Xla__HloInstructionProto *in, int64_t n0, int64_t n1) {
    size_t i = (size_t)(in - b->ins);
    int64_t n[2] = {n0, n1};
    for (int k = 0; k < 2; k++) {
        vec_shape(&b->sub[i][k], &b->sublayout[i][k], b->subdims[i][k], 11, n[k]);
        b->psub[i][k] = &b->sub[i][k];
    }
    Xla__ShapeProto s0 = XLA__SHAPE_PROTO__INIT;
    b->shape[i] = s0;
    b->shape[i].element_type = 13;
    b->shape[i].tuple_shapes = b->psub[i];
    b->shape[i].n_tuple_shapes = 2;
}

/* Logical buffer `id` defined by `in` (shape index -1: none). */
static void lbuf(mb *b, int64_t id, const Xla__HloInstructionProto *in, int64_t size,
                 int64_t color, int shape_index) {
    size_t i = b->nlb++;
    Xla__LogicalBufferProto l0 = XLA__LOGICAL_BUFFER_PROTO__INIT;
    Xla__LogicalBufferProto__Location a0 = XLA__LOGICAL_BUFFER_PROTO__LOCATION__INIT;
    b->lb[i] = l0;
    b->at[i] = a0;
    b->lb[i].id = id;
    b->lb[i].size = size;
    b->lb[i].color = color;
    b->at[i].instruction_id = in->id;
    b->at[i].instruction_name = in->name;
    if (shape_index >= 0) {
        b->shape_index[i][0] = shape_index;
        b->at[i].shape_index = b->shape_index[i];
        b->at[i].n_shape_index = 1;
    }
    b->lb[i].defined_at = &b->at[i];
    b->plb[i] = &b->lb[i];
}

enum { PARAM = 1, LIVE_OUT = 2, CONSTANT = 4, TUPLE = 8 };

static Xla__BufferAllocationProto *alloc(mb *b, int64_t size, int64_t color, unsigned flags) {
    size_t i = b->nal++;
    Xla__BufferAllocationProto a0 = XLA__BUFFER_ALLOCATION_PROTO__INIT;
    b->al[i] = a0;
    b->al[i].index = (int64_t)i;
    b->al[i].size = size;
    b->al[i].color = color;
    b->al[i].is_entry_computation_parameter = !!(flags & PARAM);
    b->al[i].maybe_live_out = !!(flags & LIVE_OUT);
    b->al[i].is_constant = !!(flags & CONSTANT);
    b->al[i].is_tuple = !!(flags & TUPLE);
    b->al[i].assigned = b->pas[i];
    b->pal[i] = &b->al[i];
    return &b->al[i];
}

static void assign(mb *b, Xla__BufferAllocationProto *a, int64_t lb, int64_t offset,
                   int64_t size) {
    Xla__BufferAllocationProto__Assigned s0 = XLA__BUFFER_ALLOCATION_PROTO__ASSIGNED__INIT;
    Xla__BufferAllocationProto__Assigned *s = &b->as[b->nas++];
    *s = s0;
    s->logical_buffer_id = lb;
    s->offset = offset;
    s->size = size;
    a->assigned[a->n_assigned++] = s;
}

enum { A = 0, F = 1, S = 2 };   /* ALLOC FREE SHARE_WITH */

/* A trace from "A 1 F 1 S 3 1 ..." style triples: kind, buffer, canonical. */
static void trace(mb *b, const int64_t (*evs)[3], size_t n) {
    size_t t = b->ntr++;
    Xla__HeapSimulatorTrace t0 = XLA__HEAP_SIMULATOR_TRACE__INIT;
    b->tr[t] = t0;
    for (size_t i = 0; i < n; i++) {
        Xla__HeapSimulatorTrace__Event e0 = XLA__HEAP_SIMULATOR_TRACE__EVENT__INIT;
        b->ev[t][i] = e0;
        b->ev[t][i].kind = (Xla__HeapSimulatorTrace__Event__Kind)evs[i][0];
        b->ev[t][i].buffer_id = evs[i][1];
        b->ev[t][i].share_with_canonical_id = evs[i][2];
        b->ev[t][i].instruction_name = (char *)"op";
        b->pev[t][i] = &b->ev[t][i];
    }
    b->tr[t].events = b->pev[t];
    b->tr[t].n_events = n;
    b->ptr[t] = &b->tr[t];
}

static Xla__HloProto *finish(mb *b, const char *name) {
    Xla__HloComputationProto c0 = XLA__HLO_COMPUTATION_PROTO__INIT;
    Xla__HloModuleProto m0 = XLA__HLO_MODULE_PROTO__INIT;
    Xla__BufferAssignmentProto ba0 = XLA__BUFFER_ASSIGNMENT_PROTO__INIT;
    Xla__HloProto p0 = XLA__HLO_PROTO__INIT;
    b->comp = c0;
    b->comp.name = (char *)"main.1";
    b->comp.id = 1;
    b->comp.instructions = b->pins;
    b->comp.n_instructions = b->nins;
    b->pcomp = &b->comp;
    b->mod = m0;
    b->mod.name = (char *)name;
    b->mod.entry_computation_name = (char *)"main.1";
    b->mod.computations = &b->pcomp;
    b->mod.n_computations = 1;
    b->ba = ba0;
    b->ba.logical_buffers = b->plb;
    b->ba.n_logical_buffers = b->nlb;
    b->ba.buffer_allocations = b->pal;
    b->ba.n_buffer_allocations = b->nal;
    b->ba.heap_simulator_traces = b->ptr;
    b->ba.n_heap_simulator_traces = b->ntr;
    b->proto = p0;
    b->proto.hlo_module = &b->mod;
    b->proto.buffer_assignment = &b->ba;
    return &b->proto;
}

/* ==== Buffer reuse ======================================================== */

/* p0 (parameter, 32 KiB) and out (live out, 32 KiB) are indefinite; the
 * temporary allocation holds a (64 KiB), b (131072 bytes padded, 128000
 * unpadded), c (64 KiB, reusing a's offset) and s (400 bytes, small). */
static Xla__HloProto *reuse_module(mb *b) {
    memset(b, 0, sizeof *b);
    Xla__HloInstructionProto *p0 = ins(b, "p0", "parameter", 8192);
    Xla__HloInstructionProto *a = ins(b, "a", "exponential", 16384);
    Xla__HloInstructionProto *bb = ins(b, "b", "multiply", 32000);
    Xla__HloInstructionProto *c = ins(b, "c", "add", 16384);
    Xla__HloInstructionProto *out = ins(b, "out", "negate", 8192);
    Xla__HloInstructionProto *s = ins(b, "s", "reduce", 100);
    bb->metadata->op_name = (char *)"jit(f)/mul";
    bb->metadata->source_file = (char *)"model.py";
    bb->metadata->source_line = 7;
    lbuf(b, 0, p0, 32768, 0, -1);
    lbuf(b, 1, a, 65536, 0, -1);
    lbuf(b, 2, bb, 131072, 0, -1);
    lbuf(b, 3, c, 65536, 0, -1);
    lbuf(b, 4, out, 32768, 0, -1);
    lbuf(b, 5, s, 400, 0, -1);
    Xla__BufferAllocationProto *ap = alloc(b, 32768, 0, PARAM);
    assign(b, ap, 0, 0, 32768);
    Xla__BufferAllocationProto *tmp = alloc(b, 197008, 0, 0);
    assign(b, tmp, 1, 0, 65536);
    assign(b, tmp, 2, 65536, 131072);
    assign(b, tmp, 3, 0, 65536);
    assign(b, tmp, 5, 196608, 400);
    Xla__BufferAllocationProto *ao = alloc(b, 32768, 0, LIVE_OUT);
    assign(b, ao, 4, 0, 32768);
    static const int64_t evs[][3] = {{A, 1, 0}, {A, 5, 0}, {A, 2, 0}, {F, 1, 0},
                                     {F, 5, 0}, {A, 3, 0}, {F, 2, 0}, {F, 3, 0}};
    trace(b, evs, 8);
    return finish(b, "jit_reuse");
}

static void test_reuse(void **state) {
    (void)state;
    mb *b = malloc(sizeof *b);
    Xla__HloProto *p = reuse_module(b);
    xpv_err err;
    xpv_err_clear(&err);
    xpv_hlo_memory *m = xpv_hlo_memory_compute(p, 0, XPV_HLO_SMALL_BUFFER_SIZE, &err);
    assert_non_null(m);
    assert_true(m->has_trace);
    /* the heap before each event, then at the end */
    static const int64_t heap[] = {0, 65536, 65936, 197008, 131472, 131072, 196608, 65536, 0};
    assert_int_equal(m->ntimeline, 9);
    for (size_t i = 0; i < 9; i++) assert_int_equal(m->heap[i], heap[i]);
    assert_int_equal(m->peak, 197008);
    assert_int_equal(m->peak_unpadded, 65536 + 400 + 128000);
    assert_int_equal(m->unpadded_heap[3], 65536 + 400 + 128000);
    assert_int_equal(m->peak_position, 2);   /* the event that made the peak */
    assert_int_equal(m->indefinite_bytes, 65536);
    /* peak heap: p0, out (indefinite), a, b; s is summed as small */
    assert_int_equal(m->nobjects, 5);
    static const int64_t ids[] = {0, 4, 1, 2, -1};
    static const int64_t sizes[] = {32768, 32768, 65536, 131072, 400};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(m->objects[i].logical_buffer_id, ids[i]);
        assert_int_equal(m->objects[i].size, sizes[i]);
        assert_int_equal(m->objects[i].color, (int)i);
    }
    assert_string_equal(m->objects[0].group_name, "Parameter");
    assert_string_equal(m->objects[1].group_name, "Output");
    assert_string_equal(m->objects[2].group_name, "Temporary");
    assert_string_equal(m->objects[3].label, "b: f32[32000]{0} # jit(f)/mul");
    assert_string_equal(m->objects[3].shape, "f32[32000]{0}");
    assert_string_equal(m->objects[3].op_code, "multiply");
    assert_string_equal(m->objects[3].source_file, "model.py");
    assert_int_equal(m->objects[3].unpadded_size, 128000);
    assert_string_equal(m->objects[4].label, "small (<16384 bytes)");
    static const int32_t by_size[] = {3, 2, 0, 1, 4}, to_by_size[] = {2, 3, 1, 0, 4};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(m->by_size[i], by_size[i]);
        assert_int_equal(m->to_by_size[i], to_by_size[i]);
    }
    /* spans: a [0,3], b [2,6], c [5,7], s [1,4] */
    assert_int_equal(m->nspans, 4);
    static const int32_t span[][3] = {{1, 0, 3}, {2, 2, 6}, {3, 5, 7}, {5, 1, 4}};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(m->spans[i].id, span[i][0]);
        assert_int_equal(m->spans[i].start, span[i][1]);
        assert_int_equal(m->spans[i].limit, span[i][2]);
    }
    assert_int_equal(m->entry_parameters_bytes, 32768);
    assert_int_equal(m->maybe_live_out_bytes, 32768);
    assert_int_equal(m->total_allocation_bytes, 32768 + 197008 + 32768);
    assert_int_equal(m->indefinite_allocation_bytes, 65536);
    assert_int_equal(m->non_reusable_bytes, 0);
    assert_int_equal(m->nindefinite, 2);
    assert_int_equal(m->indefinite[0].id, 0);
    assert_true(m->indefinite[0].entry_parameter && m->indefinite[0].reusable);
    assert_string_equal(m->indefinite[1].common_shape, "f32[8192]{0}");
    assert_string_equal(m->module_name, "jit_reuse");
    xpv_hlo_memory_free(m);
    /* a memory space the program does not use: nothing, no trace */
    m = xpv_hlo_memory_compute(p, 3, XPV_HLO_SMALL_BUFFER_SIZE, &err);
    assert_non_null(m);
    assert_false(m->has_trace);
    assert_int_equal(m->ntimeline, 1);
    assert_int_equal(m->peak, 0);
    assert_int_equal(m->nobjects, 0);
    xpv_hlo_memory_free(m);
    free(b);
}

/* ==== While loop: the result aliases its operand ========================= */

/* init (64 KiB) is the while's operand; while.1's buffer SHARE_WITHs it, so
 * init's memory stays until while.1 is freed, after init's own FREE.  The
 * body's temporary (32 KiB) makes the peak.  Then `x` (20000 bytes) is freed
 * and `y` shares with it afterwards: allocated again. */
static Xla__HloProto *while_module(mb *b) {
    memset(b, 0, sizeof *b);
    Xla__HloInstructionProto *init = ins(b, "init", "copy", 16384);
    Xla__HloInstructionProto *w = ins(b, "while.1", "while", 16384);
    Xla__HloInstructionProto *body = ins(b, "body.add", "add", 8192);
    Xla__HloInstructionProto *after = ins(b, "after", "negate", 4096);
    Xla__HloInstructionProto *x = ins(b, "x", "copy", 5000);
    Xla__HloInstructionProto *y = ins(b, "y", "bitcast", 5000);
    lbuf(b, 10, init, 65536, 0, -1);
    lbuf(b, 11, w, 65536, 0, -1);
    lbuf(b, 12, body, 32768, 0, -1);
    lbuf(b, 14, after, 16384, 0, -1);
    lbuf(b, 15, x, 20000, 0, -1);
    lbuf(b, 16, y, 20000, 0, -1);
    Xla__BufferAllocationProto *t = alloc(b, 98304, 0, 0);
    assign(b, t, 10, 0, 65536);
    assign(b, t, 11, 0, 65536);
    assign(b, t, 12, 65536, 32768);
    assign(b, t, 14, 65536, 16384);
    assign(b, t, 15, 0, 20000);
    assign(b, t, 16, 0, 20000);
    static const int64_t evs[][3] = {{A, 10, 0}, {S, 11, 10}, {A, 12, 0}, {F, 12, 0},
                                     {F, 10, 0}, {A, 14, 0},  {F, 11, 0}, {F, 14, 0},
                                     {A, 15, 0}, {F, 15, 0},  {S, 16, 15}, {F, 16, 0}};
    trace(b, evs, 12);
    return finish(b, "jit_loop");
}

static void test_while_loop(void **state) {
    (void)state;
    mb *b = malloc(sizeof *b);
    Xla__HloProto *p = while_module(b);
    xpv_err err;
    xpv_err_clear(&err);
    xpv_hlo_memory *m = xpv_hlo_memory_compute(p, 0, XPV_HLO_SMALL_BUFFER_SIZE, &err);
    assert_non_null(m);
    static const int64_t heap[] = {0,     65536, 65536, 98304, 65536, 65536, 81920,
                                   16384, 0,     20000, 0,     20000, 0};
    assert_int_equal(m->ntimeline, 13);
    for (size_t i = 0; i < 13; i++) assert_int_equal(m->heap[i], heap[i]);
    assert_int_equal(m->peak, 98304);
    assert_int_equal(m->peak_position, 2);
    /* alive at the peak: init (standing for the loop's buffer too), body.add */
    assert_int_equal(m->nobjects, 2);
    assert_int_equal(m->objects[0].logical_buffer_id, 10);
    assert_int_equal(m->objects[1].logical_buffer_id, 12);
    /* init lives until while.1 is freed; while.1 and y get no span of
     * their own; y's revival of x extends x's span to y's FREE */
    static const int32_t span[][3] = {{10, 0, 6}, {12, 2, 3}, {14, 5, 7}, {15, 8, 11}};
    assert_int_equal(m->nspans, 4);
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(m->spans[i].id, span[i][0]);
        assert_int_equal(m->spans[i].start, span[i][1]);
        assert_int_equal(m->spans[i].limit, span[i][2]);
    }
    xpv_hlo_memory_free(m);
    free(b);
}

/* ==== Multi-output fusion and a second memory space ====================== */

static Xla__HloProto *fusion_module(mb *b) {
    memset(b, 0, sizeof *b);
    Xla__HloInstructionProto *f = ins(b, "fusion.2", "fusion", 0);
    tuple_shape(b, f, 8192, 4096);
    f->fusion_kind = (char *)"kLoop";
    f->metadata->op_name = (char *)"jit(f)/fused";
    Xla__HloInstructionProto *g = ins(b, "gte.3", "get-tuple-element", 8192);
    Xla__HloInstructionProto *v = ins(b, "vmem.4", "copy", 16384);
    lbuf(b, 20, f, 16, 0, -1);    /* the tuple's index table */
    lbuf(b, 21, f, 32768, 0, 0);
    lbuf(b, 22, f, 16384, 0, 1);
    lbuf(b, 23, g, 32768, 0, -1);
    lbuf(b, 30, v, 65536, 1, -1); /* memory space 1 */
    Xla__BufferAllocationProto *t = alloc(b, 49168, 0, 0);
    assign(b, t, 20, 0, 16);
    assign(b, t, 21, 16, 32768);
    assign(b, t, 22, 32784, 16384);
    assign(b, t, 23, 16, 32768);
    Xla__BufferAllocationProto *t1 = alloc(b, 65536, 1, 0);
    assign(b, t1, 30, 0, 65536);
    static const int64_t ev0[][3] = {{A, 20, 0}, {A, 21, 0}, {A, 22, 0}, {F, 20, 0},
                                     {F, 22, 0}, {S, 23, 21}, {F, 21, 0}, {F, 23, 0}};
    trace(b, ev0, 8);
    static const int64_t ev1[][3] = {{A, 30, 0}, {F, 30, 0}};
    trace(b, ev1, 2);
    return finish(b, "jit_fused");
}

static void test_fusion_and_spaces(void **state) {
    (void)state;
    mb *b = malloc(sizeof *b);
    Xla__HloProto *p = fusion_module(b);
    int64_t spaces[4];
    assert_int_equal(xpv_hlo_memory_spaces(p, spaces, 4), 2);
    assert_int_equal(spaces[0], 0);
    assert_int_equal(spaces[1], 1);
    assert_int_equal(xpv_hlo_heap_trace_events(p), 10);
    xpv_err err;
    xpv_err_clear(&err);
    xpv_hlo_memory *m = xpv_hlo_memory_compute(p, 0, 1, &err);
    assert_non_null(m);
    assert_int_equal(m->trace_index, 0);
    assert_int_equal(m->peak, 16 + 32768 + 16384);
    assert_int_equal(m->peak_unpadded, 16 + 32768 + 16384);   /* tuple: 2 pointers */
    assert_int_equal(m->nobjects, 3);
    assert_string_equal(m->objects[0].instruction_name, "fusion.2");
    assert_string_equal(m->objects[0].shape, "(f32[8192]{0}, f32[4096]{0})");
    assert_string_equal(m->objects[1].instruction_name, "fusion.2{0}");
    assert_string_equal(m->objects[1].shape, "f32[8192]{0}");
    assert_string_equal(m->objects[2].instruction_name, "fusion.2{1}");
    assert_string_equal(m->objects[2].label, "fusion.2: f32[4096]{0} # jit(f)/fused");
    assert_string_equal(m->objects[2].op_code, "fusion");
    xpv_hlo_memory_free(m);
    /* memory space 1 has its own trace */
    m = xpv_hlo_memory_compute(p, 1, XPV_HLO_SMALL_BUFFER_SIZE, &err);
    assert_non_null(m);
    assert_int_equal(m->trace_index, 1);
    assert_int_equal(m->peak, 65536);
    assert_int_equal(m->total_allocation_bytes, 65536);
    assert_int_equal(m->nobjects, 1);
    assert_string_equal(m->objects[0].instruction_name, "vmem.4");
    xpv_hlo_memory_free(m);
    free(b);
}

static void test_shape_text(void **state) {
    (void)state;
    Xla__ShapeProto s = XLA__SHAPE_PROTO__INIT;
    Xla__LayoutProto l = XLA__LAYOUT_PROTO__INIT;
    Xla__TileProto t0 = XLA__TILE_PROTO__INIT, t1 = XLA__TILE_PROTO__INIT, *tiles[2] = {&t0, &t1};
    int64_t dims[2] = {128, 8}, m2m[2] = {1, 0}, td0[2] = {8, 128}, td1[2] = {2, 1};
    s.element_type = 16;   /* bf16 */
    s.dimensions = dims;
    s.n_dimensions = 2;
    l.minor_to_major = m2m;
    l.n_minor_to_major = 2;
    t0.dimensions = td0;
    t0.n_dimensions = 2;
    t1.dimensions = td1;
    t1.n_dimensions = 2;
    l.tiles = tiles;
    l.n_tiles = 2;
    l.memory_space = 5;
    s.layout = &l;
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_hlo_shape_layout_text(&b, &s);
    xpv_buf_putc(&b, 0);
    assert_string_equal(b.data, "bf16[128,8]{1,0:T(8,128)(2,1)S(5)}");
    assert_int_equal(xpv_hlo_shape_unpadded_bytes(&s), 128 * 8 * 2);
    /* a scalar prints no "{}" */
    Xla__ShapeProto sc = XLA__SHAPE_PROTO__INIT;
    Xla__LayoutProto l0 = XLA__LAYOUT_PROTO__INIT;
    sc.element_type = 4;
    sc.layout = &l0;
    xpv_buf_reset(&b);
    xpv_hlo_shape_layout_text(&b, &sc);
    xpv_buf_putc(&b, 0);
    assert_string_equal(b.data, "s32[]");
    assert_int_equal(xpv_hlo_shape_unpadded_bytes(&sc), 4);
    xpv_buf_free(&b);
}

/* ==== A large trace ======================================================= */

/* N buffers of 32 KiB allocated one after the other, then freed: the peak
 * holds all of them (a new peak at every ALLOC: the live set is found by a
 * second pass, not copied N times). */
static void test_large_trace(void **state) {
    (void)state;
    enum { N = 40000 };
    Xla__HloInstructionProto *ins = calloc(N, sizeof *ins), **pins = calloc(N, sizeof *pins);
    Xla__ShapeProto *sh = calloc(N, sizeof *sh);
    int64_t *dims = calloc(N, sizeof *dims);
    Xla__LogicalBufferProto *lb = calloc(N, sizeof *lb), **plb = calloc(N, sizeof *plb);
    Xla__LogicalBufferProto__Location *at = calloc(N, sizeof *at);
    Xla__BufferAllocationProto__Assigned *as = calloc(N, sizeof *as), **pas = calloc(N, sizeof *pas);
    Xla__HeapSimulatorTrace__Event *ev = calloc(2 * N, sizeof *ev), **pev = calloc(2 * N, sizeof *pev);
    for (size_t i = 0; i < N; i++) {
        Xla__HloInstructionProto i0 = XLA__HLO_INSTRUCTION_PROTO__INIT;
        Xla__ShapeProto s0 = XLA__SHAPE_PROTO__INIT;
        Xla__LogicalBufferProto l0 = XLA__LOGICAL_BUFFER_PROTO__INIT;
        Xla__LogicalBufferProto__Location a0 = XLA__LOGICAL_BUFFER_PROTO__LOCATION__INIT;
        Xla__BufferAllocationProto__Assigned g0 = XLA__BUFFER_ALLOCATION_PROTO__ASSIGNED__INIT;
        Xla__HeapSimulatorTrace__Event e0 = XLA__HEAP_SIMULATOR_TRACE__EVENT__INIT;
        sh[i] = s0, sh[i].element_type = 11, dims[i] = 8192;
        sh[i].dimensions = &dims[i], sh[i].n_dimensions = 1;
        ins[i] = i0, ins[i].name = (char *)"t", ins[i].opcode = (char *)"copy";
        ins[i].id = (int64_t)i, ins[i].shape = &sh[i], pins[i] = &ins[i];
        at[i] = a0, at[i].instruction_id = (int64_t)i;
        lb[i] = l0, lb[i].id = (int64_t)i, lb[i].size = 32768, lb[i].defined_at = &at[i];
        plb[i] = &lb[i];
        as[i] = g0, as[i].logical_buffer_id = (int64_t)i, pas[i] = &as[i];
        ev[i] = e0, ev[i].buffer_id = (int64_t)i, pev[i] = &ev[i];
        ev[N + i] = e0, ev[N + i].kind = XLA__HEAP_SIMULATOR_TRACE__EVENT__KIND__FREE;
        ev[N + i].buffer_id = (int64_t)i, pev[N + i] = &ev[N + i];
    }
    Xla__HloComputationProto c = XLA__HLO_COMPUTATION_PROTO__INIT, *pc = &c;
    c.instructions = pins, c.n_instructions = N;
    Xla__HloModuleProto mod = XLA__HLO_MODULE_PROTO__INIT;
    mod.computations = &pc, mod.n_computations = 1;
    Xla__BufferAllocationProto al = XLA__BUFFER_ALLOCATION_PROTO__INIT, *pal = &al;
    al.size = (int64_t)N * 32768, al.assigned = pas, al.n_assigned = N;
    Xla__HeapSimulatorTrace tr = XLA__HEAP_SIMULATOR_TRACE__INIT, *ptr = &tr;
    tr.events = pev, tr.n_events = 2 * N;
    Xla__BufferAssignmentProto ba = XLA__BUFFER_ASSIGNMENT_PROTO__INIT;
    ba.logical_buffers = plb, ba.n_logical_buffers = N;
    ba.buffer_allocations = &pal, ba.n_buffer_allocations = 1;
    ba.heap_simulator_traces = &ptr, ba.n_heap_simulator_traces = 1;
    Xla__HloProto p = XLA__HLO_PROTO__INIT;
    p.hlo_module = &mod, p.buffer_assignment = &ba;
    xpv_err err;
    xpv_err_clear(&err);
    xpv_hlo_memory *m = xpv_hlo_memory_compute(&p, 0, XPV_HLO_SMALL_BUFFER_SIZE, &err);
    assert_non_null(m);
    assert_int_equal(m->peak, (int64_t)N * 32768);
    assert_int_equal(m->peak_position, N - 1);
    assert_int_equal(m->nobjects, N);
    assert_int_equal(m->objects[N - 1].logical_buffer_id, N - 1);
    assert_int_equal(m->nspans, N);
    assert_int_equal(m->spans[0].limit, N);
    xpv_hlo_memory_free(m);
    free(ins), free(pins), free(sh), free(dims), free(lb), free(plb), free(at);
    free(as), free(pas), free(ev), free(pev);
}

/* ==== Inconsistent traces ================================================= */

static void test_bad_traces(void **state) {
    (void)state;
    mb *b = malloc(sizeof *b);
    Xla__HloProto *p = reuse_module(b);
    /* buffer 1 freed twice */
    b->ev[0][4].kind = XLA__HEAP_SIMULATOR_TRACE__EVENT__KIND__FREE;
    b->ev[0][4].buffer_id = 1;
    xpv_err err;
    xpv_err_clear(&err);
    assert_null(xpv_hlo_memory_compute(p, 0, XPV_HLO_SMALL_BUFFER_SIZE, &err));
    assert_int_equal(err.status, 422);
    assert_non_null(strstr(err.msg, "freed more than once"));
    /* events of two allocations in one trace */
    p = reuse_module(b);
    b->ev[0][1].buffer_id = 0;   /* p0's allocation */
    xpv_err_clear(&err);
    assert_null(xpv_hlo_memory_compute(p, 0, XPV_HLO_SMALL_BUFFER_SIZE, &err));
    assert_non_null(strstr(err.msg, "more than one buffer allocation"));
    /* a SHARE_WITH loop does not hang */
    p = while_module(b);
    b->ev[0][0].kind = XLA__HEAP_SIMULATOR_TRACE__EVENT__KIND__SHARE_WITH;
    b->ev[0][0].share_with_canonical_id = 11;
    xpv_err_clear(&err);
    xpv_hlo_memory *m = xpv_hlo_memory_compute(p, 0, XPV_HLO_SMALL_BUFFER_SIZE, &err);
    xpv_hlo_memory_free(m);   /* either outcome, as long as it returns */
    free(b);
}

/* ==== The tool: modules, errors, golden JSON ============================== */

static void add_proto(tx_space *s, int pl, const char *ev, Xla__HloProto *p, int64_t pid) {
    size_t len = xla__hlo_proto__get_packed_size(p);
    uint8_t *bytes = malloc(len ? len : 1);
    xla__hlo_proto__pack(p, bytes);
    hf_meta_proto(s, pl, ev, bytes, len, pid);
    free(bytes);
}

/* The tool's answer (status 0) or its error (status filled). */
static char *render(os_host *r, const char *module, const char *space, xpv_err *err) {
    const char *keys[2], *vals[2];
    size_t n = 0;
    if (module) keys[n] = "module_name", vals[n++] = module;
    if (space) keys[n] = "memory_space", vals[n++] = space;
    xpv_params q = {n, keys, vals, NULL};
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_err_clear(err);
    if (xpv_tool_find("memory_viewer")->render(&r->hs, r->os, &q, &b, err) != 0) {
        xpv_buf_free(&b);
        return NULL;
    }
    xpv_buf_putc(&b, 0);
    return b.data;
}

static void test_tool_modules_and_errors(void **state) {
    (void)state;
    mb *b = malloc(sizeof *b);
    tx_space *s = tx_new();
    int pl = tx_plane(s, "/host:metadata");
    add_proto(s, pl, "jit_reuse(7)", reuse_module(b), 7);
    add_proto(s, pl, "jit_fused(9)", fusion_module(b), 9);
    Xla__HloProto *nob = while_module(b);
    nob->buffer_assignment = NULL;
    add_proto(s, pl, "jit_nobuf(11)", nob, 11);
    static const uint8_t junk[] = {0x0a, 0x05, 0x1a, 0x03, 0xff, 0xff, 0xff};
    hf_meta_proto(s, pl, "jit_bad(13)", junk, sizeof junk, 13);
    free(b);
    os_host r;
    os_host_open(&r, tx_decode(s));
    assert_true(xpv_tool_find("memory_viewer")->available(r.p));
    xpv_err err;
    /* the module selector: no device time here, so by name */
    const xpv_hlo_program **order = xpv_hlo_programs_by_device_time(r.os->hlo, NULL);
    assert_string_equal(order[0]->meta_name, "jit_bad(13)");
    assert_string_equal(order[3]->meta_name, "jit_reuse(7)");
    free(order);
    /* with device time, the busiest program first */
    xpv_op_metric ops[2];
    memset(ops, 0, sizeof ops);
    ops[0].program_id = 9, ops[0].self_time_ps = 100;
    ops[1].program_id = 7, ops[1].self_time_ps = 300;
    xpv_op_metrics_db db;
    memset(&db, 0, sizeof db);
    db.ops = ops;
    db.n = 2;
    order = xpv_hlo_programs_by_device_time(r.os->hlo, &db);
    assert_string_equal(order[0]->meta_name, "jit_reuse(7)");
    assert_string_equal(order[1]->meta_name, "jit_fused(9)");
    free(order);
    /* errors name the program; the others keep working */
    assert_null(render(&r, "jit_bad(13)", NULL, &err));
    assert_int_equal(err.status, 422);
    assert_non_null(strstr(err.msg, "jit_bad(13)"));
    assert_null(render(&r, "jit_nobuf(11)", NULL, &err));
    assert_int_equal(err.status, 404);
    assert_non_null(strstr(err.msg, "jit_nobuf(11): this program has no buffer assignment"));
    assert_null(render(&r, "jit_nope(1)", NULL, &err));
    assert_int_equal(err.status, 404);
    char *j = render(&r, "jit_reuse(7)", NULL, &err);
    assert_non_null(j);
    tu_check_golden("memory_viewer", "reuse.json", j, 0);
    json_error_t jerr;
    json_t *d = json_loads(j, 0, &jerr);
    assert_non_null(d);
    assert_true(fabs(json_real_value(json_object_get(d, "peakHeapMib")) -
                     (197008 + 65536) / MIB) < 1e-12);
    assert_int_equal(json_array_size(json_object_get(d, "maxHeapBySize")), 5);
    json_decref(d);
    free(j);
    j = render(&r, "jit_fused(9)", "1", &err);
    assert_non_null(j);
    tu_check_golden("memory_viewer", "fused_space1.json", j, 0);
    free(j);
    /* no device time: the default is the first by name, jit_bad(13), and
     * its error says so */
    assert_null(render(&r, NULL, NULL, &err));
    assert_non_null(strstr(err.msg, "jit_bad(13)"));
    os_host_close(&r);
}

/* ==== Real profiles ======================================================= */

/* Independent count: replay the trace with groups of shared buffers (a
 * group holds its first buffer's size while any member is alive) and
 * return the largest total. */
static int64_t independent_peak(const Xla__BufferAssignmentProto *ba,
                                const Xla__HeapSimulatorTrace *tr) {
    size_t n = ba->n_logical_buffers;
    int64_t *ids = calloc(n + 1, sizeof *ids), *size = calloc(n + 1, sizeof *size);
    int64_t *group = calloc(n + 1, sizeof *group), *alive = calloc(n + 1, sizeof *alive);
    for (size_t i = 0; i < n; i++) {
        ids[i] = ba->logical_buffers[i]->id;
        size[i] = ba->logical_buffers[i]->size;
        group[i] = (int64_t)i;
    }
#define FIND(id, out)                                          \
    do {                                                       \
        out = -1;                                              \
        for (size_t k_ = 0; k_ < n; k_++)                      \
            if (ids[k_] == (id)) out = (int64_t)k_;            \
    } while (0)
    int64_t total = 0, peak = 0;
    for (size_t e = 0; e < tr->n_events; e++) {
        const Xla__HeapSimulatorTrace__Event *ev = tr->events[e];
        int64_t i;
        FIND(ev->buffer_id, i);
        if (i < 0) continue;
        if (ev->kind == XLA__HEAP_SIMULATOR_TRACE__EVENT__KIND__SHARE_WITH) {
            int64_t c;
            FIND(ev->share_with_canonical_id, c);
            while (group[c] != c) c = group[c];
            group[i] = c;
        }
        int64_t g = i;
        while (group[g] != g) g = group[g];
        if (ev->kind == XLA__HEAP_SIMULATOR_TRACE__EVENT__KIND__FREE) {
            if (--alive[g] == 0) total -= size[g];
        } else if (alive[g]++ == 0) {
            total += size[g];
        }
        if (total > peak) peak = total;
    }
#undef FIND
    free(ids), free(size), free(group), free(alive);
    return peak;
}

static int64_t buffer_color(const Xla__BufferAssignmentProto *ba, int64_t id) {
    for (size_t i = 0; i < ba->n_logical_buffers; i++)
        if (ba->logical_buffers[i]->id == id) return ba->logical_buffers[i]->color;
    return -1;
}

static size_t nprograms, nwith_trace;

static void check_real(const char *path) {
    if (access(path, R_OK) != 0) {
        print_message("SKIP: %s not present\n", path);
        return;
    }
    os_host r;
    os_host_open(&r, tx_decode_file(path));
    const xpv_hlo_map *m = r.os->hlo;
    assert_true(m->n > 0);
    for (size_t i = 0; i < m->n; i++) {
        xpv_err err;
        char *j = render(&r, m->progs[i].meta_name, NULL, &err);
        if (!j) fail_msg("%s %s: %s", path, m->progs[i].meta_name, err.msg);
        json_error_t jerr;
        json_t *d = json_loads(j, 0, &jerr);
        assert_non_null(d);
        const Xla__BufferAssignmentProto *ba = m->progs[i].proto->buffer_assignment;
        int64_t want = 0;
        for (size_t t = 0; t < ba->n_heap_simulator_traces; t++) {
            const Xla__HeapSimulatorTrace *tr = ba->heap_simulator_traces[t];
            if (!tr->n_events || buffer_color(ba, tr->events[0]->buffer_id) != 0) continue;
            int64_t pk = independent_peak(ba, tr);
            if (pk > want) want = pk;
            nwith_trace++;
        }
        double peak = json_number_value(json_object_get(d, "peakHeapMib"));
        double indef = json_number_value(json_object_get(d, "indefiniteBufferAllocationMib"));
        if (fabs((peak - indef) * MIB - (double)want) > 0.5)
            fail_msg("%s %s: peak %.0f bytes (without indefinite), trace says %lld", path,
                     m->progs[i].meta_name, (peak - indef) * MIB, (long long)want);
        /* the peak is on the chart */
        json_t *hs = json_object_get(d, "heapSizes");
        double mx = 0;
        for (size_t k = 0; k < json_array_size(hs); k++)
            if (json_number_value(json_array_get(hs, k)) > mx)
                mx = json_number_value(json_array_get(hs, k));
        assert_true(fabs(mx - peak) < 1e-9);
        if (peak > 0) assert_true(json_array_size(json_object_get(d, "maxHeap")) > 0);
        json_decref(d);
        free(j);
        nprograms++;
    }
    /* the default module answers too */
    xpv_err err;
    char *j = render(&r, NULL, NULL, &err);
    if (!j) fail_msg("%s default module: %s", path, err.msg);
    free(j);
    os_host_close(&r);
}

static void test_real_profiles(void **state) {
    (void)state;
    nprograms = nwith_trace = 0;
    const char *src = getenv("XPV_SRC");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/device/jax_gpu_mlp.xplane.pb", src ? src : ".");
    check_real(path);
    snprintf(path, sizeof path, "%s/tests/data/device/jax_gpu_mlp_nocmdbuf.xplane.pb",
             src ? src : ".");
    check_real(path);
    if (!tu_shared_dir()) {
        print_message("SKIP: ../shared/testdata not present; only tests/data/device checked\n");
    } else {
        check_real(tx_real_tpu_path(path, sizeof path));
        char **files = tu_real_files("AMD-AGI-TraceLens/plugins/profile", ".xplane.pb");
        for (char **f = files; f && *f; f++) check_real(*f);
        tu_free_list(files);
    }
    print_message("%zu programs, %zu heap simulator traces of memory space 0 checked\n",
                  nprograms, nwith_trace);
    assert_true(nprograms > 0);
}

/* The answer on the H100 MLP capture we own: the default module is
 * jit_train_step (the most device time), answered as when it is named, and
 * equal to tests/golden/memory_viewer/jax.json (which tests/golden.sh also
 * checks through `xpview export`). */
static void test_golden_h100(void **state) {
    (void)state;
    const char *src = getenv("XPV_SRC");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/device/jax_gpu_mlp.xplane.pb", src ? src : ".");
    os_host r;
    os_host_open(&r, tx_decode_file(path));
    const char *name = NULL;
    for (size_t i = 0; i < r.os->hlo->n; i++)
        if (!strncmp(r.os->hlo->progs[i].meta_name, "jit_train_step(", 15))
            name = r.os->hlo->progs[i].meta_name;
    assert_non_null(name);
    xpv_err err;
    char *byname = render(&r, name, NULL, &err);
    char *dflt = render(&r, NULL, NULL, &err);
    assert_non_null(byname);
    assert_non_null(dflt);
    assert_string_equal(dflt, byname);
    tu_check_golden("memory_viewer", "jax.json", dflt, 0);
    free(byname);
    free(dflt);
    os_host_close(&r);
}

TU_MAIN(cmocka_unit_test(test_reuse),
        cmocka_unit_test(test_while_loop),
        cmocka_unit_test(test_fusion_and_spaces),
        cmocka_unit_test(test_shape_text),
        cmocka_unit_test(test_large_trace),
        cmocka_unit_test(test_bad_traces),
        cmocka_unit_test(test_tool_modules_and_errors),
        cmocka_unit_test(test_real_profiles),
        cmocka_unit_test(test_golden_h100))
