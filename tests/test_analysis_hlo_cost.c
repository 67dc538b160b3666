/*
 * test_analysis_hlo_cost.c - XLA's GPU cost analysis as XProf runs it
 * (analysis/hlo/hlo_cost.c) on constructed HLO, each answer counted by hand
 * from the rule (the counts are in the comments), and the op stats of a
 * constructed GPU profile whose XLA kernels get their flops from it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo.h"
#include "hlo.pb-c.h"
#include "hlo_cost.h"
#include "hlo_fixture.h"
#include "opstats.h"
#include "testutil.h"
#include "tool_xspace.h"

enum { F32 = 11, S8 = 2, S32 = 4, BF16 = 16, F64 = 12, U8 = 6, TUPLE = 13 };
#define NI 48

/* A module built instruction by instruction: computations are contiguous
 * runs of instructions, ids are positions + 1. */
typedef struct mb {
    Xla__HloInstructionProto ins[NI];
    Xla__HloInstructionProto *pins[NI];
    Xla__ShapeProto sh[NI], sub[NI][2];
    Xla__ShapeProto *psub[NI][2];
    Xla__LayoutProto lay[NI], sublay[NI][2];
    int64_t dims[NI][4], subdims[NI][2][4], m2m[NI][4], subm2m[NI][2][4];
    int64_t ops[NI][3], calls[NI][1];
    Xla__HloComputationProto comp[8];
    Xla__HloComputationProto *pcomp[8];
    int n, ncomp, comp_start;
    Xla__HloModuleProto mod;
    xpv_hlo_map *map;
    uint8_t *bytes;
    const xpv_hlo_program *prog;
} mb;

/* An array shape with XLA's default layout (minor_to_major n-1..0). */
static void array_shape(Xla__ShapeProto *s, Xla__LayoutProto *l, int64_t *dims, int64_t *m2m,
                        int type, const int64_t *d, size_t nd) {
    Xla__ShapeProto si = XLA__SHAPE_PROTO__INIT;
    Xla__LayoutProto li = XLA__LAYOUT_PROTO__INIT;
    *s = si;
    *l = li;
    s->element_type = type;
    for (size_t i = 0; i < nd; i++) {
        dims[i] = d[i];
        m2m[i] = (int64_t)(nd - 1 - i);
    }
    s->dimensions = dims;
    s->n_dimensions = nd;
    l->minor_to_major = m2m;
    l->n_minor_to_major = nd;
    s->layout = l;
}

static void begin_comp(mb *b) { b->comp_start = b->n; }

static int64_t end_comp(mb *b, int64_t root) {
    Xla__HloComputationProto c = XLA__HLO_COMPUTATION_PROTO__INIT;
    int k = b->ncomp++;
    b->comp[k] = c;
    b->comp[k].name = (char *)"comp";
    b->comp[k].id = k + 1;
    b->comp[k].root_id = root ? root : b->n;
    b->comp[k].instructions = &b->pins[b->comp_start];
    b->comp[k].n_instructions = (size_t)(b->n - b->comp_start);
    b->pcomp[k] = &b->comp[k];
    return k + 1;
}

/* Instruction `name` = opcode(operand ids...) of an array type; id returned. */
static int64_t add(mb *b, const char *name, const char *opcode, int type, const int64_t *d,
                   size_t nd, const int64_t *ops, size_t nops) {
    int i = b->n++;
    Xla__HloInstructionProto ii = XLA__HLO_INSTRUCTION_PROTO__INIT;
    b->ins[i] = ii;
    b->ins[i].name = (char *)name;
    b->ins[i].opcode = (char *)opcode;
    b->ins[i].id = i + 1;
    array_shape(&b->sh[i], &b->lay[i], b->dims[i], b->m2m[i], type, d, nd);
    b->ins[i].shape = &b->sh[i];
    for (size_t k = 0; k < nops; k++) b->ops[i][k] = ops[k];
    b->ins[i].operand_ids = b->ops[i];
    b->ins[i].n_operand_ids = nops;
    b->pins[i] = &b->ins[i];
    return i + 1;
}

static Xla__HloInstructionProto *I(mb *b, int64_t id) { return &b->ins[id - 1]; }

static void set_call(mb *b, int64_t id, int64_t comp) {
    b->calls[id - 1][0] = comp;
    I(b, id)->called_computation_ids = b->calls[id - 1];
    I(b, id)->n_called_computation_ids = 1;
}

/* Make instruction `id`'s shape the tuple (first, second). */
static void tuple_shape(mb *b, int64_t id, int t0, const int64_t *d0, size_t n0, int t1,
                        const int64_t *d1, size_t n1) {
    int i = (int)id - 1;
    array_shape(&b->sub[i][0], &b->sublay[i][0], b->subdims[i][0], b->subm2m[i][0], t0, d0, n0);
    array_shape(&b->sub[i][1], &b->sublay[i][1], b->subdims[i][1], b->subm2m[i][1], t1, d1, n1);
    b->psub[i][0] = &b->sub[i][0];
    b->psub[i][1] = &b->sub[i][1];
    Xla__ShapeProto t = XLA__SHAPE_PROTO__INIT;
    b->sh[i] = t;
    b->sh[i].element_type = TUPLE;
    b->sh[i].tuple_shapes = b->psub[i];
    b->sh[i].n_tuple_shapes = 2;
}

/* Pack the module (entry = the last computation), index and decode it. */
static void finish(mb *b) {
    Xla__HloModuleProto m = XLA__HLO_MODULE_PROTO__INIT;
    b->mod = m;
    b->mod.name = (char *)"jit_t";
    b->mod.computations = b->pcomp;
    b->mod.n_computations = (size_t)b->ncomp;
    b->mod.entry_computation_id = b->ncomp;
    size_t len;
    b->bytes = hf_pack_module(&b->mod, &len);
    xpv_hlo_blob blob = {5, "jit_t(5)", b->bytes, len, len};
    const xpv_hlo_blob *lists[1] = {&blob};
    size_t counts[1] = {1};
    b->map = xpv_hlo_map_from_lists(lists, counts, 1);
    xpv_err err;
    memset(&err, 0, sizeof err);
    b->prog = xpv_hlo_decode(b->map, NULL, xpv_hlo_find(b->map, 5), &err);
    assert_non_null(b->prog);
}

static void done(mb *b) {
    xpv_hlo_map_free(b->map);
    free(b->bytes);
    free(b);
}

static xpv_hlo_cost cost(mb *b, const char *name) {
    xpv_hlo_instr in = xpv_hlo_instr_by_name(b->prog, name, strlen(name));
    assert_non_null(in.ins);
    return xpv_hlo_gpu_cost(b->prog, in);
}

static void check(mb *b, const char *name, int64_t model, int64_t device, int64_t bytes) {
    xpv_hlo_cost k = cost(b, name);
    if (k.model_flops != model || k.device_flops != device || k.bytes_accessed != bytes)
        fail_msg("%s: flops %lld device %lld bytes %lld, want %lld %lld %lld", name,
                 (long long)k.model_flops, (long long)k.device_flops,
                 (long long)k.bytes_accessed, (long long)model, (long long)device,
                 (long long)bytes);
}

static void set_dot(mb *b, int64_t id, Xla__DotDimensionNumbers *d, int64_t *lc, int64_t *rc) {
    Xla__DotDimensionNumbers di = XLA__DOT_DIMENSION_NUMBERS__INIT;
    *d = di;
    d->lhs_contracting_dimensions = lc;
    d->n_lhs_contracting_dimensions = 1;
    d->rhs_contracting_dimensions = rc;
    d->n_rhs_contracting_dimensions = 1;
    I(b, id)->dot_dimension_numbers = d;
}

/* dot [m,k] x [k,n] = 2 m k n; bytes = the three arrays; 8-bit inputs
 * halve the device flops (XProf DefaultPostprocess). */
static void test_dot(void **state) {
    (void)state;
    mb *b = calloc(1, sizeof *b);
    Xla__DotDimensionNumbers d1, d2;
    int64_t lc[1] = {1}, rc[1] = {0};
    begin_comp(b);
    int64_t a = add(b, "a", "parameter", F32, (int64_t[]){32, 64}, 2, NULL, 0);
    int64_t w = add(b, "w", "parameter", F32, (int64_t[]){64, 16}, 2, NULL, 0);
    int64_t dot = add(b, "dot.1", "dot", F32, (int64_t[]){32, 16}, 2, (int64_t[]){a, w}, 2);
    set_dot(b, dot, &d1, lc, rc);
    int64_t qa = add(b, "qa", "parameter", S8, (int64_t[]){32, 64}, 2, NULL, 0);
    int64_t qw = add(b, "qw", "parameter", S8, (int64_t[]){64, 16}, 2, NULL, 0);
    int64_t q = add(b, "dot.2", "dot", S32, (int64_t[]){32, 16}, 2, (int64_t[]){qa, qw}, 2);
    set_dot(b, q, &d2, lc, rc);
    end_comp(b, q);
    finish(b);
    /* 2*32*64*16 = 65536; (2048 + 1024 + 512) * 4 = 14336 */
    check(b, "dot.1", 65536, 65536, 14336);
    /* s8: device 65536/2; bytes 2048 + 1024 + 512*4 = 5120 */
    check(b, "dot.2", 65536, 32768, 5120);
    /* a parameter costs nothing */
    check(b, "a", 0, 0, 0);
    done(b);
}

/* Elementwise: elements x XLA's sm_86 cycles (3 without an entry). */
static void test_elementwise(void **state) {
    (void)state;
    mb *b = calloc(1, sizeof *b);
    begin_comp(b);
    int64_t x = add(b, "x", "parameter", F32, (int64_t[]){8, 16}, 2, NULL, 0);
    add(b, "add.1", "add", F32, (int64_t[]){8, 16}, 2, (int64_t[]){x, x}, 2);
    add(b, "exp.1", "exponential", F32, (int64_t[]){8, 16}, 2, (int64_t[]){x}, 1);
    int64_t y = add(b, "y", "parameter", F64, (int64_t[]){10}, 1, NULL, 0);
    add(b, "div.1", "divide", F64, (int64_t[]){10}, 1, (int64_t[]){y, y}, 2);
    add(b, "copy.1", "copy", F32, (int64_t[]){8, 16}, 2, (int64_t[]){x}, 1);
    end_comp(b, 0);
    finish(b);
    /* 128 * 3 = 384; bytes 3 arrays of 512 */
    check(b, "add.1", 384, 384, 1536);
    /* 128 * 86 = 11008 */
    check(b, "exp.1", 11008, 11008, 1024);
    /* 10 * 2016 = 20160; bytes 3 * 80 */
    check(b, "div.1", 20160, 20160, 240);
    /* copy: no flops, reads and writes */
    check(b, "copy.1", 0, 0, 1024);
    done(b);
}

/* reduce f32[64,32] -> f32[64] by add: (2048 - 64) applications of a
 * 3-flop scalar add; bytes input + init + output. */
static void test_reduce(void **state) {
    (void)state;
    mb *b = calloc(1, sizeof *b);
    begin_comp(b);
    int64_t p = add(b, "lhs", "parameter", F32, NULL, 0, NULL, 0);
    int64_t q = add(b, "rhs", "parameter", F32, NULL, 0, NULL, 0);
    I(b, q)->parameter_number = 1;
    add(b, "sum", "add", F32, NULL, 0, (int64_t[]){p, q}, 2);
    int64_t reducer = end_comp(b, 0);
    begin_comp(b);
    int64_t in = add(b, "in", "parameter", F32, (int64_t[]){64, 32}, 2, NULL, 0);
    int64_t init = add(b, "zero", "constant", F32, NULL, 0, NULL, 0);
    int64_t r = add(b, "reduce.1", "reduce", F32, (int64_t[]){64}, 1, (int64_t[]){in, init}, 2);
    set_call(b, r, reducer);
    end_comp(b, r);
    finish(b);
    /* 3 * 1984 = 5952; 8192 + 4 + 256 = 8452 */
    check(b, "reduce.1", 5952, 5952, 8452);
    done(b);
}

/* Fusions: flops summed by utilization, bytes = outputs + parameters x
 * min(utilization, 1); a slice reads its share, a dynamic-update-slice
 * root writes its update and does not read the buffer it updates. */
static void test_fusion(void **state) {
    (void)state;
    mb *b = calloc(1, sizeof *b);
    int64_t v[1] = {1024};
    begin_comp(b); /* 1: p0 * p1 + p2 */
    int64_t p0 = add(b, "f1.p0", "parameter", F32, v, 1, NULL, 0);
    int64_t p1 = add(b, "f1.p1", "parameter", F32, v, 1, NULL, 0);
    int64_t p2 = add(b, "f1.p2", "parameter", F32, v, 1, NULL, 0);
    I(b, p1)->parameter_number = 1;
    I(b, p2)->parameter_number = 2;
    int64_t m = add(b, "f1.mul", "multiply", F32, v, 1, (int64_t[]){p0, p1}, 2);
    int64_t fa = add(b, "f1.add", "add", F32, v, 1, (int64_t[]){m, p2}, 2);
    int64_t c1 = end_comp(b, fa);
    begin_comp(b); /* 2: negate(slice(p0[100]) -> [10]) */
    int64_t s0 = add(b, "f2.p0", "parameter", F32, (int64_t[]){100}, 1, NULL, 0);
    int64_t sl = add(b, "f2.slice", "slice", F32, (int64_t[]){10}, 1, (int64_t[]){s0}, 1);
    int64_t ng = add(b, "f2.neg", "negate", F32, (int64_t[]){10}, 1, (int64_t[]){sl}, 1);
    int64_t c2 = end_comp(b, ng);
    begin_comp(b); /* 3: dynamic-update-slice(p0[100], p1[10], p2) */
    int64_t d0 = add(b, "f3.p0", "parameter", F32, (int64_t[]){100}, 1, NULL, 0);
    int64_t d1 = add(b, "f3.p1", "parameter", F32, (int64_t[]){10}, 1, NULL, 0);
    int64_t d2 = add(b, "f3.p2", "parameter", S32, NULL, 0, NULL, 0);
    I(b, d1)->parameter_number = 1;
    I(b, d2)->parameter_number = 2;
    int64_t dus = add(b, "f3.dus", "dynamic-update-slice", F32, (int64_t[]){100}, 1,
                      (int64_t[]){d0, d1, d2}, 3);
    int64_t c3 = end_comp(b, dus);
    begin_comp(b); /* entry */
    int64_t x = add(b, "x", "parameter", F32, v, 1, NULL, 0);
    int64_t big = add(b, "big", "parameter", F32, (int64_t[]){100}, 1, NULL, 0);
    int64_t upd = add(b, "upd", "parameter", F32, (int64_t[]){10}, 1, NULL, 0);
    int64_t at = add(b, "at", "parameter", S32, NULL, 0, NULL, 0);
    int64_t f1 = add(b, "fusion.1", "fusion", F32, v, 1, (int64_t[]){x, x, x}, 3);
    int64_t f2 = add(b, "fusion.2", "fusion", F32, (int64_t[]){10}, 1, (int64_t[]){big}, 1);
    int64_t f3 = add(b, "fusion.3", "fusion", F32, (int64_t[]){100}, 1,
                     (int64_t[]){big, upd, at}, 3);
    set_call(b, f1, c1);
    set_call(b, f2, c2);
    set_call(b, f3, c3);
    I(b, f1)->fusion_kind = I(b, f2)->fusion_kind = I(b, f3)->fusion_kind = (char *)"kLoop";
    end_comp(b, f3);
    finish(b);
    /* multiply + add: 2 * 3 * 1024 = 6144; out 4096 + 3 params of 4096 */
    check(b, "fusion.1", 6144, 6144, 16384);
    /* negate of 10: 30; out 40 + 400 * (10/100) = 40 */
    check(b, "fusion.2", 30, 30, 80);
    /* out = the update, 40; params 400 * 0 + 40 + 4 */
    check(b, "fusion.3", 0, 0, 84);
    done(b);
}

static void conv_dnums(Xla__ConvolutionDimensionNumbers *d, int64_t *sp) {
    Xla__ConvolutionDimensionNumbers di = XLA__CONVOLUTION_DIMENSION_NUMBERS__INIT;
    *d = di; /* b f 0 1 for input, kernel (o i 0 1) and output */
    d->input_batch_dimension = 0;
    d->input_feature_dimension = 1;
    d->kernel_output_feature_dimension = 0;
    d->kernel_input_feature_dimension = 1;
    d->output_batch_dimension = 0;
    d->output_feature_dimension = 1;
    d->input_spatial_dimensions = d->kernel_spatial_dimensions = d->output_spatial_dimensions = sp;
    d->n_input_spatial_dimensions = d->n_kernel_spatial_dimensions = 2;
    d->n_output_spatial_dimensions = 2;
}

static void conv_window(Xla__Window *w, Xla__WindowDimension *wd, Xla__WindowDimension **pwd,
                        int64_t stride, int64_t pad) {
    Xla__Window wi = XLA__WINDOW__INIT;
    *w = wi;
    for (int i = 0; i < 2; i++) {
        Xla__WindowDimension di = XLA__WINDOW_DIMENSION__INIT;
        wd[i] = di;
        wd[i].size = 3;
        wd[i].stride = stride;
        wd[i].padding_low = wd[i].padding_high = pad;
        wd[i].window_dilation = wd[i].base_dilation = 1;
        pwd[i] = &wd[i];
    }
    w->dimensions = pwd;
    w->n_dimensions = 2;
}

/* Convolutions count the (output, kernel) position pairs that land on
 * the input.  5x5 input, 3x3 kernel, stride 1, no padding: each 3x3
 * output reads 9 inputs = 81 pairs, 162 flops.  Stride 2, padding 1 (3x3
 * output): per dimension kernel tap 0 hits outputs 1,2 (inputs 1,3),
 * tap 1 all 3 (0,2,4), tap 2 outputs 0,1 (1,3) = 7; 49 pairs, 98 flops.
 * The cuDNN custom-call counts the same, its output without the scratch. */
static void test_convolution(void **state) {
    (void)state;
    mb *b = calloc(1, sizeof *b);
    Xla__ConvolutionDimensionNumbers dn;
    int64_t sp[2] = {2, 3};
    Xla__Window w1, w2;
    Xla__WindowDimension wd1[2], wd2[2], *pw1[2], *pw2[2];
    conv_dnums(&dn, sp);
    conv_window(&w1, wd1, pw1, 1, 0);
    conv_window(&w2, wd2, pw2, 2, 1);
    begin_comp(b);
    int64_t in = add(b, "in", "parameter", F32, (int64_t[]){1, 1, 5, 5}, 4, NULL, 0);
    int64_t k = add(b, "k", "parameter", F32, (int64_t[]){1, 1, 3, 3}, 4, NULL, 0);
    int64_t c1 = add(b, "conv.1", "convolution", F32, (int64_t[]){1, 1, 3, 3}, 4,
                     (int64_t[]){in, k}, 2);
    int64_t c2 = add(b, "conv.2", "convolution", F32, (int64_t[]){1, 1, 3, 3}, 4,
                     (int64_t[]){in, k}, 2);
    int64_t c3 = add(b, "cudnn-conv.3", "custom-call", F32, NULL, 0, (int64_t[]){in, k}, 2);
    tuple_shape(b, c3, F32, (int64_t[]){1, 1, 3, 3}, 4, U8, (int64_t[]){64}, 1);
    I(b, c3)->custom_call_target = (char *)"__cudnn$convForward";
    I(b, c1)->convolution_dimension_numbers = I(b, c2)->convolution_dimension_numbers = &dn;
    I(b, c3)->convolution_dimension_numbers = &dn;
    I(b, c1)->window = I(b, c3)->window = &w1;
    I(b, c2)->window = &w2;
    end_comp(b, c3);
    finish(b);
    /* bytes (25 + 9 + 9) * 4 = 172 */
    check(b, "conv.1", 162, 162, 172);
    check(b, "conv.2", 98, 98, 172);
    check(b, "cudnn-conv.3", 162, 162, 172);
    done(b);
}

/* cuBLAS gemm custom-calls: a dot by the backend config's contracting
 * dimensions; bytes as Preprocess counts them (operands + the output
 * tuple's 2 pointers).  An unknown custom-call has no cost (-1 -> 0). */
static void test_custom_calls(void **state) {
    (void)state;
    mb *b = calloc(1, sizeof *b);
    static const char cfg[] =
        "{\"operation_queue_id\":\"0\",\"gemm_backend_config\":{\"alpha_real\":1,"
        "\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":[\"1\"],"
        "\"rhs_contracting_dimensions\":[\"0\"],\"lhs_batch_dimensions\":[],"
        "\"rhs_batch_dimensions\":[]}}}";
    begin_comp(b);
    int64_t a = add(b, "a", "parameter", BF16, (int64_t[]){128, 256}, 2, NULL, 0);
    int64_t w = add(b, "w", "parameter", BF16, (int64_t[]){256, 64}, 2, NULL, 0);
    int64_t g = add(b, "custom-call.1", "custom-call", BF16, NULL, 0, (int64_t[]){a, w}, 2);
    tuple_shape(b, g, BF16, (int64_t[]){128, 64}, 2, S8, (int64_t[]){1024}, 1);
    I(b, g)->custom_call_target = (char *)"__cublas$gemm";
    I(b, g)->backend_config.data = (uint8_t *)cfg;
    I(b, g)->backend_config.len = sizeof cfg - 1;
    int64_t u = add(b, "custom-call.2", "custom-call", F32, (int64_t[]){4}, 1, (int64_t[]){a}, 1);
    I(b, u)->custom_call_target = (char *)"my_kernel";
    end_comp(b, u);
    finish(b);
    /* 2*128*256*64 = 4194304; 16 + 65536 + 32768 = 98320 */
    check(b, "custom-call.1", 4194304, 4194304, 98320);
    check(b, "custom-call.2", 0, 0, 0);
    done(b);
}

/* A transpose that only relabels the layout is a bitcast: no bytes. */
static void test_transpose(void **state) {
    (void)state;
    mb *b = calloc(1, sizeof *b);
    begin_comp(b);
    int64_t x = add(b, "x", "parameter", F32, (int64_t[]){4, 8}, 2, NULL, 0);
    int64_t t1 = add(b, "transpose.1", "transpose", F32, (int64_t[]){8, 4}, 2, (int64_t[]){x}, 1);
    int64_t t2 = add(b, "transpose.2", "transpose", F32, (int64_t[]){8, 4}, 2, (int64_t[]){x}, 1);
    static int64_t perm[2] = {1, 0}, m2m01[2] = {0, 1};
    I(b, t1)->dimensions = I(b, t2)->dimensions = perm;
    I(b, t1)->n_dimensions = I(b, t2)->n_dimensions = 2;
    b->lay[t1 - 1].minor_to_major = m2m01; /* f32[8,4]{0,1}: x's bytes */
    end_comp(b, t2);
    finish(b);
    check(b, "transpose.1", 0, 0, 0);
    check(b, "transpose.2", 0, 0, 256);
    done(b);
}

/* ---- op stats: GPU XLA kernels get the instruction's cost -------------- */

#define MS 1000000000LL

/* Two occurrences of dot.1 (split by a kernel of another op) and one of
 * an unknown custom-call whose kernel carries a `flops` stat. */
static void test_op_stats(void **state) {
    (void)state;
    mb *b = calloc(1, sizeof *b);
    Xla__DotDimensionNumbers d;
    int64_t lc[1] = {1}, rc[1] = {0};
    begin_comp(b);
    int64_t a = add(b, "a", "parameter", F32, (int64_t[]){32, 64}, 2, NULL, 0);
    int64_t w = add(b, "w", "parameter", F32, (int64_t[]){64, 16}, 2, NULL, 0);
    int64_t dot = add(b, "dot.1", "dot", F32, (int64_t[]){32, 16}, 2, (int64_t[]){a, w}, 2);
    set_dot(b, dot, &d, lc, rc);
    int64_t cc = add(b, "custom-call.2", "custom-call", F32, (int64_t[]){4}, 1, (int64_t[]){a}, 1);
    I(b, cc)->custom_call_target = (char *)"my_kernel";
    end_comp(b, cc);
    finish(b);
    size_t len;
    uint8_t *bytes = hf_pack_module(&b->mod, &len);
    tx_space *s = tx_new();
    int meta = tx_plane(s, "/host:metadata");
    hf_meta_proto(s, meta, "jit_t(5)", bytes, len, 5);
    free(bytes);
    int pl = tx_plane(s, "/device:GPU:0");
    int ln = tx_line(s, pl, 1, "Stream #1(Kernel)", 0);
    static const char *const ops[] = {"dot.1", "custom-call.2", "dot.1"};
    for (int i = 0; i < 3; i++) {
        tx_event_t *e = tx_event(s, pl, ln, "kernel", i * MS, MS);
        tx_ev_ref(s, pl, e, "hlo_op", ops[i]);
        tx_ev_int(s, pl, e, "program_id", 5);
        if (i == 1) tx_ev_int(s, pl, e, "flops", 1000);
    }
    os_host h;
    os_host_open(&h, tx_decode(s));
    const xpv_op_metrics_db *db = &h.os->ops->device;
    const xpv_op_metric *dr = NULL, *cr = NULL;
    for (size_t i = 0; i < db->n; i++) {
        if (!strcmp(db->ops[i].name, "dot.1")) dr = &db->ops[i];
        if (!strcmp(db->ops[i].name, "custom-call.2")) cr = &db->ops[i];
    }
    assert_non_null(dr);
    assert_non_null(cr);
    assert_int_equal(dr->occurrences, 2);
    /* per occurrence 65536 flops and 14336 bytes */
    assert_true(dr->flops == 2 * 65536.0);
    assert_true(dr->model_flops == 2 * 65536.0);
    assert_true(dr->bytes_accessed == 2 * 14336.0);
    /* no cost from the HLO: the kernel's own stat, model = device */
    assert_true(cr->flops == 1000.0);
    assert_true(cr->model_flops == 1000.0);
    os_host_close(&h);
    done(b);
}

/* ---- real AMD JAX profiles: cuBLAS gemms counted from their text ------- */

/* The next "type[d0,d1,...]" at or after *p: element bytes, dims. */
static int next_array(const char **p, int *elem_bytes, int64_t *dims, int *nd) {
    const char *b = strchr(*p, '[');
    if (!b) return 0;
    const char *t = b;
    while (t > *p && t[-1] != ' ' && t[-1] != '(' && t[-1] != ',') t--;
    *elem_bytes = !strncmp(t, "bf16", 4) || !strncmp(t, "f16", 3) ? 2 : !strncmp(t, "f32", 3) ? 4 : 1;
    *nd = 0;
    for (const char *q = b + 1; *q && *q != ']' && *nd < 8; q++) {
        dims[(*nd)++] = strtoll(q, (char **)&q, 10);
        if (*q == ']') break;
    }
    *p = strchr(b, ']') ? strchr(b, ']') + 1 : b + 1;
    return 1;
}

/* Every `__cublas$gemm` op of the AMD JAX runs: flops = 2 x output
 * elements x the contracted size (the lhs's last dimension, which is the
 * rhs's second last), bytes = lhs + rhs + the output tuple's two 8-byte
 * pointers, each times the occurrences, read from the instruction's HLO
 * text, not from the cost analysis. */
static void test_real_amd_gemms(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    char **files = tu_real_files("AMD-AGI-TraceLens/plugins/profile", ".xplane.pb");
    size_t checked = 0;
    for (char **f = files; f && *f; f++) {
        os_host h;
        os_host_open(&h, tx_decode_file(*f));
        const xpv_op_metrics_db *db = &h.os->ops->device;
        for (size_t i = 0; i < db->n; i++) {
            const xpv_op_metric *op = &db->ops[i];
            xpv_hlo_op ho;
            xpv_err err;
            memset(&err, 0, sizeof err);
            if (op->is_idle || xpv_hlo_resolve(h.os->hlo, &h.hs, op, &ho, &err) < 0 || !ho.in.ins)
                continue;
            xpv_buf t;
            xpv_buf_init(&t);
            xpv_hlo_expression(&t, ho.prog, ho.in);
            xpv_buf_putc(&t, 0);
            const char *text = t.data, *p = strstr(text, " = (");
            const char *call = strstr(text, "custom-call(");
            if (p && call && strstr(text, "__cublas$gemm")) {
                int eb, nd, lb, ln, rb, rn;
                int64_t od[8], ld[8], rd[8];
                assert_true(next_array(&p, &eb, od, &nd));
                p = call;
                assert_true(next_array(&p, &lb, ld, &ln));
                assert_true(next_array(&p, &rb, rd, &rn));
                assert_int_equal(ld[ln - 1], rd[rn - 2]);
                double out = 1, lhs = lb, rhs = rb;
                for (int k = 0; k < nd; k++) out *= (double)od[k];
                for (int k = 0; k < ln; k++) lhs *= (double)ld[k];
                for (int k = 0; k < rn; k++) rhs *= (double)rd[k];
                double occ = (double)op->occurrences;
                if (op->flops != 2 * out * (double)ld[ln - 1] * occ ||
                    op->bytes_accessed != (lhs + rhs + 16) * occ)
                    fail_msg("%s in %s: flops %.0f bytes %.0f", text, *f, op->flops,
                             op->bytes_accessed);
                checked++;
            }
            xpv_buf_free(&t);
        }
        os_host_close(&h);
    }
    tu_free_list(files);
    print_message("%zu cuBLAS gemm ops checked\n", checked);
    assert_int_equal(checked, 9); /* 5 in jax08_gemm, 4 in jax08_attention */
}

/* A scatter without operands (hostile: n_operand_ids - 1 wrapped and the
 * update loop ran 2^63 times) costs nothing and returns; a well-formed
 * one with 1 input, indices and 1 update of 4x8 f32 moves 3 x 128 bytes
 * of updates plus its 16-byte indices. */
static void test_scatter_operands(void **state) {
    (void)state;
    mb *b = calloc(1, sizeof *b);
    begin_comp(b);
    add(b, "scatter.0", "scatter", F32, (int64_t[]){16, 8}, 2, NULL, 0);
    int64_t in = add(b, "in", "parameter", F32, (int64_t[]){16, 8}, 2, NULL, 0);
    int64_t ix = add(b, "ix", "parameter", S32, (int64_t[]){4}, 1, NULL, 0);
    int64_t up = add(b, "up", "parameter", F32, (int64_t[]){4, 8}, 2, NULL, 0);
    int64_t sc = add(b, "scatter.1", "scatter", F32, (int64_t[]){16, 8}, 2,
                     (int64_t[]){in, ix, up}, 3);
    end_comp(b, sc);
    finish(b);
    check(b, "scatter.0", 0, 0, 0);
    check(b, "scatter.1", 0, 0, 128 * 3 + 16);
    done(b);
}

/* The work budget counts operands (issue 26, item 7: whiles over
 * 10,000-operand instructions ran for minutes on a budget of
 * instructions): a while whose body and condition hold a tuple of 10,000
 * operands spends at least 2 x 10,001 units; a chain of 7 whiles each
 * nesting the next stops at the budget (250,000 units, one instruction's
 * charge over at most). */
static void test_budget_counts_operands(void **state) {
    (void)state;
    enum { WIDE = 10000 };
    mb *b = calloc(1, sizeof *b);
    int64_t *many = malloc(WIDE * sizeof *many);
    begin_comp(b); /* computation 1: p -> t = tuple(p x 10,000) */
    int64_t p = add(b, "p", "parameter", F32, (int64_t[]){4}, 1, NULL, 0);
    for (int i = 0; i < WIDE; i++) many[i] = p;
    int64_t t = add(b, "t", "tuple", F32, (int64_t[]){4}, 1, NULL, 0);
    I(b, t)->operand_ids = many;
    I(b, t)->n_operand_ids = WIDE;
    end_comp(b, t);
    /* computations 2..8: x -> w = while(x), body and condition the one
     * before (computation 2's: computation 1) */
    int64_t calls[7][2];
    char names[7][8];
    for (int k = 0; k < 7; k++) {
        begin_comp(b);
        int64_t x = add(b, "x", "parameter", F32, (int64_t[]){4}, 1, NULL, 0);
        snprintf(names[k], sizeof names[k], "w%d", k);
        int64_t w = add(b, names[k], "while", F32, (int64_t[]){4}, 1, (int64_t[]){x}, 1);
        calls[k][0] = calls[k][1] = k + 1;
        I(b, w)->called_computation_ids = calls[k];
        I(b, w)->n_called_computation_ids = 2;
        end_comp(b, w);
    }
    finish(b);
    xpv_hlo_cost k0 = cost(b, "w0");
    print_message("w0: %lld units, w6: %lld units\n", (long long)k0.work,
                  (long long)cost(b, "w6").work);
    assert_true(k0.work >= 2 * (WIDE + 1));
    assert_true(k0.work < 3 * (WIDE + 1));
    xpv_hlo_cost k7 = cost(b, "w6"); /* 2^6 copies of w0's work */
    assert_true(k7.work >= 250000);
    assert_true(k7.work <= 250000 + WIDE + 1);
    done(b);
    free(many);
}

TU_MAIN(cmocka_unit_test(test_budget_counts_operands), cmocka_unit_test(test_scatter_operands), cmocka_unit_test(test_dot), cmocka_unit_test(test_elementwise),
        cmocka_unit_test(test_reduce), cmocka_unit_test(test_fusion),
        cmocka_unit_test(test_convolution), cmocka_unit_test(test_custom_calls),
        cmocka_unit_test(test_transpose), cmocka_unit_test(test_op_stats),
        cmocka_unit_test(test_real_amd_gemms))
