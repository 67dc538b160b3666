/*
 * hlo_cost.c - XLA's GPU cost analysis of one HLO instruction, as XProf
 * runs it (hlo_cost.h).
 *
 * The rules, by the source that decides each (xla/service/
 * hlo_cost_analysis.cc "base", xla/service/gpu/model/
 * gpu_hlo_cost_analysis.cc "GPU", xprof/utils/xprof_gpu_cost_analysis.cc
 * "XProf"):
 *   - Properties are floats (XLA's Properties), read back as int64.
 *   - Shape size: 0 without a layout (base GetShapeSize); else
 *     ShapeUtil::ByteSizeOf with 8-byte pointers (a tuple is its pointer
 *     table, a token 0, sub-byte types one byte unless the layout packs
 *     them).
 *   - Default bytes accessed: output + every operand (base Preprocess);
 *     parameter, constant, get-tuple-element, bitcast (and a transpose that
 *     is one), after-all, add-dependency: 0; tuple: its pointer table;
 *     slice: 2 x output; dynamic-slice / gather: 2 x output + indices;
 *     dynamic-update-slice: 2 x update + indices; scatter: 3 x updates +
 *     indices; custom-call: -1 (unknown) except cuDNN convolutions, whose
 *     output counts only its first tuple element.
 *   - Flops: dot 2 x output elements x contracted size (base GetDotFlops);
 *     convolution and cuDNN convolution custom-calls base
 *     GetConvolutionFlops (valid window positions per spatial dimension);
 *     cuBLAS gemm custom-calls a dot with the backend config's
 *     dot_dimension_numbers (GPU HandleCustomCall); elementwise ops (unary,
 *     binary, compare, select, clamp, convert, reduce-precision) the
 *     elements times XLA's per-op clock cycles of the default sm_86 profile
 *     (3 when it has no entry: GPU FlopsPerElement, XProf passes no device
 *     description); reduce / reduce-window / map / scatter the reducer's
 *     flops times the applications; concatenate 6 per element (400 when an
 *     operand's concatenated dimension is not a multiple of 32); sort
 *     n ceil(log2 n); all-reduce the reducer root's elementwise cost; while,
 *     call, conditional and async-start their computations'; other
 *     custom-calls -1.
 *   - Fusion (base HandleFusion with GPU FusionCalculateUtilizations and
 *     FusionParameterReadBytes): flops = sum over the fused instructions
 *     of utilization x flops, utilizations propagated from the root (1.0)
 *     through elementwise users and each operand's utilization factor
 *     (slice: its share of the input), rounded up to whole elements;
 *     bytes = outputs (a dynamic-update-slice root writes its update) +
 *     constants of more than one element + each parameter's size x
 *     min(utilization, 1).  A custom fusion holding a gather or scatter
 *     costs that instruction.
 *   - XProf device flops: model flops minus half (8-bit inputs) or three
 *     quarters (4-bit) when the widest operand type is that narrow
 *     (DefaultPostprocess; cuBLASLt gemms by their first operand).
 * Not modelled: FFT, triangular solve, Cholesky, RNG (transcendental
 * only), per-memory-space breakdowns, instructions unreachable from the
 * entry computation (XLA gives them no properties).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>

#include "arena.h"
#include "checked.h"
#include "hlo_cost.h"

/* Deeper nesting of computations than this costs 0 (cycles, hostile
 * protos). */
#define MAX_DEPTH 24

enum {
    T_PRED = 1, T_S8, T_S16, T_S32, T_S64, T_U8, T_U16, T_U32, T_U64, T_F16, T_F32,
    T_F64, T_TUPLE, T_OPAQUE, T_C64, T_BF16, T_TOKEN, T_C128, T_F8E5M2, T_F8E4M3FN,
    T_S4, T_U4, T_F8E4M3B11FNUZ, T_F8E5M2FNUZ, T_F8E4M3FNUZ, T_S2, T_U2, T_F8E4M3,
    T_F8E3M4, T_F4E2M1FN, T_F8E8M0FNU, T_S1, T_U1,
};

/* primitive_util::BitWidth (0: not an array type). */
static int bit_width(int t) {
    switch (t) {
    case T_PRED: case T_S8: case T_U8: case T_F8E5M2: case T_F8E4M3FN:
    case T_F8E4M3B11FNUZ: case T_F8E5M2FNUZ: case T_F8E4M3FNUZ: case T_F8E4M3:
    case T_F8E3M4: case T_F8E8M0FNU:
        return t == T_PRED ? 1 : 8;
    case T_S16: case T_U16: case T_F16: case T_BF16: return 16;
    case T_S32: case T_U32: case T_F32: return 32;
    case T_S64: case T_U64: case T_F64: case T_C64: return 64;
    case T_C128: return 128;
    case T_S4: case T_U4: case T_F4E2M1FN: return 4;
    case T_S2: case T_U2: return 2;
    case T_S1: case T_U1: return 1;
    default: return 0;
    }
}

/* Products of hostile dimensions saturate instead of overflowing. */
#define MUL(a, b) xpv_mul_i64((a), (b), NULL)

/* A float property read back as int64 (XLA's cast; out of range
 * saturates). */
static int64_t to_i64(float f) {
    if (f != f) return 0;
    if (f >= 9.2e18f) return INT64_MAX;
    if (f <= -9.2e18f) return INT64_MIN;
    return (int64_t)f;
}

static int is_tuple(const Xla__ShapeProto *s) { return s && s->element_type == T_TUPLE; }

static int is_array(const Xla__ShapeProto *s) {
    return s && s->element_type != T_TUPLE && s->element_type != T_TOKEN &&
           s->element_type != T_OPAQUE && s->element_type != 0;
}

/* ShapeUtil::ElementsIn of an array shape (1 for a scalar). */
static int64_t elements_in(const Xla__ShapeProto *s) {
    if (!s) return 0;
    int64_t n = 1;
    for (size_t i = 0; i < s->n_dimensions; i++) n = MUL(n, s->dimensions[i]);
    return n;
}

static int64_t elements_recursive(const Xla__ShapeProto *s, int depth) {
    if (!s || depth > MAX_DEPTH) return 0;
    if (is_array(s)) return elements_in(s);
    int64_t n = 0;
    for (size_t i = 0; is_tuple(s) && i < s->n_tuple_shapes; i++)
        n = xpv_add_i64(n, elements_recursive(s->tuple_shapes[i], depth + 1), NULL);
    return n;
}

static int has_layout(const Xla__ShapeProto *s, int depth) {
    if (!s || depth > MAX_DEPTH) return 0;
    if (is_tuple(s)) {
        for (size_t i = 0; i < s->n_tuple_shapes; i++)
            if (!has_layout(s->tuple_shapes[i], depth + 1)) return 0;
        return 1;
    }
    return is_array(s) ? s->layout != NULL : 1;
}

/* ShapeUtil::ByteSizeOf(shape, pointer size 8). */
static int64_t byte_size(const Xla__ShapeProto *s) {
    if (!s) return 0;
    if (is_tuple(s)) return 8 * (int64_t)s->n_tuple_shapes;
    if (s->element_type == T_OPAQUE) return 8;
    if (!is_array(s)) return 0;
    int64_t n = elements_in(s);
    if (s->layout && s->layout->element_size_in_bits > 0)
        return MUL(n, s->layout->element_size_in_bits) / 8 +
               (MUL(n, s->layout->element_size_in_bits) % 8 != 0);
    int bits = bit_width(s->element_type);
    return MUL(n, bits < 8 ? 1 : bits / 8);
}

/* HloCostAnalysis::GetShapeSize. */
static int64_t shape_size(const Xla__ShapeProto *s) { return has_layout(s, 0) ? byte_size(s) : 0; }

/* ==== GPU elementwise flops (XLA's sm_86 op profile) ===================== */

typedef struct op_cycles {
    const char *opcode;
    int type;
    int cycles;
} op_cycles;

/* XLA hlo_op_profiles_data.h, the "sm_86" entries: clock cycles of one
 * element of an elementwise op by opcode and element type. */
static const op_cycles SM86[] = {
    {"divide", T_S8, 370}, {"power", T_S8, 392}, {"divide", T_S16, 367}, {"power", T_S16, 396},
    {"divide", T_S32, 306}, {"divide", T_S64, 918}, {"power", T_S64, 601},
    {"divide", T_U8, 306}, {"power", T_U8, 388}, {"divide", T_U16, 302}, {"power", T_U16, 399},
    {"divide", T_U32, 115}, {"divide", T_U64, 838}, {"power", T_U64, 604},
    {"cbrt", T_F16, 925}, {"cosine", T_F16, 691}, {"exponential", T_F16, 108},
    {"exponential-minus-one", T_F16, 396}, {"log", T_F16, 266}, {"log-plus-one", T_F16, 284},
    {"logistic", T_F16, 226}, {"rsqrt", T_F16, 97}, {"sqrt", T_F16, 97}, {"tanh", T_F16, 212},
    {"atan2", T_F16, 482}, {"power", T_F16, 975},
    {"cbrt", T_F32, 867}, {"cosine", T_F32, 662}, {"exponential", T_F32, 86},
    {"exponential-minus-one", T_F32, 381}, {"log", T_F32, 244}, {"log-plus-one", T_F32, 262},
    {"logistic", T_F32, 176}, {"rsqrt", T_F32, 75}, {"sine", T_F32, 662}, {"sqrt", T_F32, 75},
    {"tanh", T_F32, 190}, {"atan2", T_F32, 486}, {"power", T_F32, 925},
    {"cbrt", T_F64, 6339}, {"cosine", T_F64, 1717}, {"exponential", T_F64, 1652},
    {"exponential-minus-one", T_F64, 1900}, {"log", T_F64, 608}, {"log-plus-one", T_F64, 2073},
    {"logistic", T_F64, 2412}, {"rsqrt", T_F64, 698}, {"sine", T_F64, 1789},
    {"sqrt", T_F64, 986}, {"tanh", T_F64, 1609}, {"add", T_F64, 97}, {"atan2", T_F64, 3747},
    {"divide", T_F64, 2016}, {"multiply", T_F64, 97}, {"power", T_F64, 5511},
    {"subtract", T_F64, 97},
    {"exponential", T_C64, 1360}, {"exponential-minus-one", T_C64, 1400}, {"log", T_C64, 950},
    {"log-plus-one", T_C64, 842}, {"rsqrt", T_C64, 2383}, {"sqrt", T_C64, 3193},
    {"atan2", T_C64, 5353}, {"divide", T_C64, 687}, {"power", T_C64, 3351},
    {"cosine", T_C128, 6613}, {"exponential", T_C128, 4028},
    {"exponential-minus-one", T_C128, 4161}, {"log", T_C128, 7599},
    {"log-plus-one", T_C128, 6962}, {"rsqrt", T_C128, 11318}, {"sine", T_C128, 5878},
    {"sqrt", T_C128, 15606}, {"tanh", T_C128, 9939}, {"add", T_C128, 97},
    {"atan2", T_C128, 39027}, {"divide", T_C128, 7941}, {"multiply", T_C128, 270},
    {"power", T_C128, 18205}, {"subtract", T_C128, 97},
};

static int64_t flops_per_element(const char *opcode, int type) {
    for (size_t i = 0; i < sizeof SM86 / sizeof SM86[0]; i++)
        if (SM86[i].type == type && !strcmp(SM86[i].opcode, opcode)) return SM86[i].cycles;
    return 3; /* kDefaultFlopsPerElement */
}

/* GetFlopsForElementwiseOp: per-element cycles x ElementsInRecursive. */
static float elementwise_flops(const char *opcode, const Xla__ShapeProto *s) {
    int type = s ? s->element_type : 0;
    return (float)MUL(flops_per_element(opcode, type), elements_recursive(s, 0));
}

static int in_list(const char *s, const char *const *list) {
    for (; *list; list++)
        if (!strcmp(s, *list)) return 1;
    return 0;
}

/* Opcodes XLA's visitor sends to HandleElementwiseUnary / Binary or to
 * handlers that call HandleElementwiseOp (compare, select, clamp, convert,
 * reduce-precision). */
static const char *const ELEMENTWISE_COST[] = {
    "abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "compare", "complex", "convert",
    "cosine", "count-leading-zeros", "divide", "erf", "exponential", "exponential-minus-one",
    "floor", "imag", "is-finite", "log", "log-plus-one", "logistic", "maximum", "minimum",
    "multiply", "negate", "not", "or", "popcnt", "power", "real", "reduce-precision",
    "remainder", "round-nearest-afz", "round-nearest-even", "rsqrt", "select", "shift-left",
    "shift-right-arithmetic", "shift-right-logical", "sign", "sine", "sqrt", "subtract", "tan",
    "tanh", "xor", NULL,
};

/* HloInstruction::IsElementwise for the fusion utilization walk: the ops
 * above plus copy, map and bitcast-convert. */
static int is_elementwise(const Xla__HloInstructionProto *ins) {
    static const char *const more[] = {"copy", "map", "bitcast-convert", "stochastic-convert",
                                       NULL};
    return in_list(ins->opcode, ELEMENTWISE_COST) || in_list(ins->opcode, more);
}

/* ==== Properties ========================================================= */

typedef struct props {
    float flops, bytes, out_bytes, adj;
    float *util;               /* operand utilizations (NULL: all 1) */
    size_t nutil;
} props;

/* Work allowed for one instruction's cost (instructions visited plus
 * operand lookups in fused computations): a hostile proto (whiles
 * nesting the same body, huge fusions) costs 0 past it instead of
 * running for ever. */
#define WORK_BUDGET 250000

typedef struct cost_ctx {
    const xpv_hlo_program *p;
    int64_t *work;              /* left of WORK_BUDGET */
} cost_ctx;

static int spend(const cost_ctx *c, int64_t n) {
    *c->work -= n;
    return *c->work >= 0;
}

static void cost_of(const cost_ctx *c, const Xla__HloInstructionProto *ins, props *out,
                    int depth);

static const Xla__HloInstructionProto *operand(const cost_ctx *c,
                                               const Xla__HloInstructionProto *ins, size_t i) {
    if (i >= ins->n_operand_ids) return NULL;
    return xpv_hlo_instr_by_id(c->p, ins->operand_ids[i]).ins;
}

static const Xla__ShapeProto *operand_shape(const cost_ctx *c,
                                            const Xla__HloInstructionProto *ins, size_t i) {
    const Xla__HloInstructionProto *o = operand(c, ins, i);
    return o ? o->shape : NULL;
}

static const Xla__HloComputationProto *called(const cost_ctx *c,
                                              const Xla__HloInstructionProto *ins, size_t i) {
    return i < ins->n_called_computation_ids
               ? xpv_hlo_computation(c->p, ins->called_computation_ids[i])
               : NULL;
}

static void set_util(props *o, size_t i, float u) {
    if (i < o->nutil) o->util[i] = u;
}

static float get_util(const props *o, size_t i) {
    return o->util && i < o->nutil ? o->util[i] : 1.0f;
}

/* Summed flops (and bytes) of every instruction of `comp`
 * (ProcessSubcomputation's properties). */
static void comp_sum(const cost_ctx *c, const Xla__HloComputationProto *comp, int depth,
                     float *flops, float *bytes) {
    *flops = 0;
    *bytes = 0;
    if (!comp || depth > MAX_DEPTH) return;
    for (size_t i = 0; i < comp->n_instructions && *c->work >= 0; i++) {
        if (!comp->instructions[i]) continue;
        props p;
        cost_of(c, comp->instructions[i], &p, depth + 1);
        free(p.util);
        *flops += p.flops;
        *bytes += p.bytes;
    }
}

static float sub_flops(const cost_ctx *c, const Xla__HloComputationProto *comp, int depth) {
    float f, b;
    comp_sum(c, comp, depth, &f, &b);
    return f;
}

/* base GetDotFlops. */
static int64_t dot_flops(const Xla__ShapeProto *lhs, const Xla__ShapeProto *out,
                         const int64_t *contracting, size_t n) {
    int64_t width = 1;
    for (size_t i = 0; lhs && i < n; i++)
        if (contracting[i] >= 0 && (size_t)contracting[i] < lhs->n_dimensions)
            width = MUL(width, lhs->dimensions[contracting[i]]);
    return MUL(MUL(2, elements_in(out)), width);
}

static int64_t dim_of(const Xla__ShapeProto *s, int64_t d) {
    return s && d >= 0 && (size_t)d < s->n_dimensions ? s->dimensions[d] : 1;
}

static int big(int64_t x) { return x > ((int64_t)1 << 30) || x < -((int64_t)1 << 30); }

/* Valid (kernel, output) position pairs of one spatial dimension. */
static int64_t valid_positions(const Xla__WindowDimension *w, int64_t in, int64_t k,
                               int64_t out) {
    int64_t stride = w->stride, wd = w->window_dilation, bd = w->base_dilation;
    int64_t lo = w->padding_low, hi = w->padding_high;
    if (big(stride) || big(wd) || big(bd) || big(lo) || big(hi) || big(in) || big(k) || big(out))
        return 0; /* hostile sizes: no flops */
    if (in == out && k == out && in == bd && wd == 1 && (in - 1 > 1 ? in - 1 : 1) == stride &&
        lo == 0 && hi == 0)
        return in;
    if (in == 1 && k == out && wd == 1 && bd == 1 && stride == 1 && hi == out - 1 &&
        lo == out - 1)
        return out;
    int64_t n = 0;
    for (int64_t ki = 0; ki < k; ki++) {
        if (stride == 1 && bd == 1) {
            int64_t base = lo - ki * wd;
            int64_t a = in + base < out ? in + base : out;
            int64_t b = base > 0 ? base : 0;
            n += a - b > 0 ? a - b : 0;
            continue;
        }
        for (int64_t oi = 0; oi < out; oi++) {
            int64_t u = oi * stride - lo + ki * wd;
            int64_t li = bd > 1 ? u / bd : u;
            if (u != li * bd) continue;
            if (li < 0 || li >= in) continue;
            n++;
        }
    }
    return n;
}

/* base GetConvolutionFlops. */
static int64_t conv_flops(const Xla__HloInstructionProto *ins, const Xla__ShapeProto *lhs,
                          const Xla__ShapeProto *rhs, const Xla__ShapeProto *out) {
    const Xla__ConvolutionDimensionNumbers *d = ins->convolution_dimension_numbers;
    Xla__ConvolutionDimensionNumbers none = XLA__CONVOLUTION_DIMENSION_NUMBERS__INIT;
    if (!d) d = &none;
    int64_t in_feat = dim_of(lhs, d->input_feature_dimension);
    int64_t out_feat = dim_of(out, d->output_feature_dimension);
    int64_t batch = dim_of(lhs, d->input_batch_dimension);
    int64_t product = 1;
    const Xla__Window *w = ins->window;
    size_t nd = w ? w->n_dimensions : 0;
    for (size_t s = 0; s < nd; s++) {
        const Xla__WindowDimension *wd = w->dimensions[s];
        if (!wd) continue;
        int64_t k = s < d->n_kernel_spatial_dimensions ? dim_of(rhs, d->kernel_spatial_dimensions[s]) : 1;
        int64_t o = s < d->n_output_spatial_dimensions ? dim_of(out, d->output_spatial_dimensions[s]) : 1;
        int64_t i = s < d->n_input_spatial_dimensions ? dim_of(lhs, d->input_spatial_dimensions[s]) : 1;
        if (k < 0 || o < 0 || MUL(k, o) > 100000000) return 0; /* hostile sizes */
        product = MUL(product, valid_positions(wd, i, k, o));
    }
    int64_t fg = ins->feature_group_count > 0 ? ins->feature_group_count : 1;
    int64_t bg = ins->batch_group_count > 0 ? ins->batch_group_count : 1;
    return MUL(MUL(MUL(in_feat / fg, out_feat), MUL(batch / bg, product)), 2);
}

/* The lhs contracting dimensions of a cuBLAS gemm's backend config
 * (JSON: gemm_backend_config.dot_dimension_numbers), into dims[<= 16]. */
static size_t gemm_contracting(const Xla__HloInstructionProto *ins, int64_t *dims) {
    const char *s = (const char *)ins->backend_config.data;
    size_t len = ins->backend_config.len, n = 0;
    if (!s || !len) return 0;
    static const char key[] = "\"lhs_contracting_dimensions\"";
    const char *end = s + len, *k = NULL;
    for (const char *q = s; q + sizeof key - 1 <= end; q++)
        if (!memcmp(q, key, sizeof key - 1)) {
            k = q + sizeof key - 1;
            break;
        }
    if (!k) return 0;
    while (k < end && *k != '[') k++;
    for (k++; k < end && *k != ']' && n < 16; k++) {
        if (*k >= '0' && *k <= '9') {
            int64_t v = 0;
            while (k < end && *k >= '0' && *k <= '9' && v < ((int64_t)1 << 40)) v = v * 10 + (*k++ - '0');
            dims[n++] = v;
            k--;
        }
    }
    return n;
}

static int is_cublas_gemm(const char *t) {
    return !strcmp(t, "__cublas$gemm") || !strcmp(t, "__cublas$lt$matmul") ||
           !strcmp(t, "__cublas$lt$matmul$f8");
}

static int is_dnn_conv(const char *t) {
    static const char *const targets[] = {
        "__cudnn$convForward", "__cudnn$convBackwardInput", "__cudnn$convBackwardFilter",
        "__cudnn$convBiasActivationForward", "__cudnn$convForwardGraph", NULL,
    };
    return in_list(t, targets);
}

/* GPU HandleCustomCall plus XProf's cuBLASLt adjustment. */
static void custom_call_cost(const cost_ctx *c, const Xla__HloInstructionProto *ins,
                             props *o) {
    const char *t = ins->custom_call_target ? ins->custom_call_target : "";
    const Xla__ShapeProto *s = ins->shape;
    const Xla__ShapeProto *first = is_tuple(s) && s->n_tuple_shapes ? s->tuple_shapes[0] : s;
    if (is_cublas_gemm(t)) {
        int64_t dims[16];
        size_t n = gemm_contracting(ins, dims);
        o->flops = (float)dot_flops(operand_shape(c, ins, 0), first, dims, n);
        if (strcmp(t, "__cublas$gemm")) { /* cuBLASLt: by operand 0's width */
            const Xla__ShapeProto *a = operand_shape(c, ins, 0);
            int bw = a ? bit_width(a->element_type) : 0;
            unsigned f = bw == 8 ? 2 : bw == 4 ? 4 : 1;
            o->adj = o->flops - o->flops / (float)f;
        }
        return;
    }
    if (is_dnn_conv(t)) {
        o->flops = (float)conv_flops(ins, operand_shape(c, ins, 0), operand_shape(c, ins, 1), first);
        if (is_tuple(s)) {
            float out = (float)byte_size(first);
            o->bytes -= o->out_bytes;
            o->bytes += out;
            o->out_bytes = out;
        }
        return;
    }
    o->flops = -1;
    o->bytes = -1;
    o->out_bytes = -1;
}

/* ShapeUtil::TransposeIsBitcast: output dimension d is input dimension
 * dims[d]; a bitcast when the layouts list the same physical order. */
static int transpose_is_bitcast(const Xla__ShapeProto *in, const Xla__ShapeProto *out,
                                const Xla__HloInstructionProto *ins) {
    if (!in || !out || !in->layout || !out->layout || in->element_type != out->element_type)
        return 0;
    size_t n = out->layout->n_minor_to_major;
    if (n != in->layout->n_minor_to_major || n != ins->n_dimensions) return 0;
    for (size_t i = 0; i < n; i++) {
        int64_t od = out->layout->minor_to_major[i];
        if (od < 0 || (size_t)od >= n || ins->dimensions[od] != in->layout->minor_to_major[i])
            return 0;
    }
    return 1;
}

static void no_bytes(props *o) {
    o->bytes = 0;
    o->out_bytes = 0;
}

/* Reductions of a reduce-window (base HandleReduceWindow): window - 1 per
 * output element, or one reduction and a broadcast back when the window
 * spans one padded dimension whole. */
static int64_t reduce_window_count(const Xla__HloInstructionProto *ins) {
    const Xla__Window *w = ins->window;
    const Xla__ShapeProto *s = ins->shape;
    int64_t win = 1;
    size_t nred = 0, npad = 0;
    const Xla__WindowDimension *red = NULL;
    size_t red_at = 0;
    for (size_t i = 0; w && i < w->n_dimensions; i++) {
        const Xla__WindowDimension *d = w->dimensions[i];
        if (!d) continue;
        win = MUL(win, d->size);
        nred += d->size != 1;
        npad += d->padding_low != 0 || d->padding_high != 0;
        if (!red && d->size != 1 && d->padding_low != 0 && d->padding_high != 0 &&
            d->padding_low == d->padding_high && d->size == 2 * d->padding_low + 1) {
            red = d;
            red_at = i;
        }
    }
    const Xla__ShapeProto *out = is_tuple(s) && s->n_tuple_shapes ? s->tuple_shapes[0] : s;
    int64_t out_n = elements_in(out);
    if (nred == 1 && npad == 1 && is_array(s) && red && red->padding_low == dim_of(s, (int64_t)red_at) - 1) {
        int64_t span = dim_of(s, (int64_t)red_at);
        return span > 0 ? out_n / span + (span - 1) : 0;
    }
    return MUL(win - 1, out_n);
}

/* GPU HandleConcatenate. */
static int64_t concat_flops(const cost_ctx *c, const Xla__HloInstructionProto *ins) {
    int64_t n = elements_recursive(ins->shape, 0);
    int64_t dim = ins->n_dimensions ? ins->dimensions[0] : 0;
    if (dim == 0) return MUL(6, n);
    for (size_t i = 0; i < ins->n_operand_ids; i++) {
        int64_t size = dim_of(operand_shape(c, ins, i), dim);
        if (size % 32) return MUL(400, n);
    }
    return MUL(6, n);
}

/* GPU HandleAllReduce: bytes = array outputs + operands, flops = the
 * reducer root's elementwise cost over the output. */
static void all_reduce_cost(const cost_ctx *c, const Xla__HloInstructionProto *ins, props *o) {
    const Xla__ShapeProto *s = ins->shape;
    float out = 0;
    if (is_tuple(s)) {
        for (size_t i = 0; i < s->n_tuple_shapes; i++)
            if (is_array(s->tuple_shapes[i])) out += (float)shape_size(s->tuple_shapes[i]);
    } else if (is_array(s)) {
        out = (float)shape_size(s);
    }
    float bytes = out;
    for (size_t i = 0; i < ins->n_operand_ids; i++) bytes += (float)shape_size(operand_shape(c, ins, i));
    o->out_bytes = out;
    o->bytes = bytes;
    const Xla__HloComputationProto *f = called(c, ins, 0);
    const char *root_op = "";
    for (size_t i = 0; f && i < f->n_instructions; i++)
        if (f->instructions[i] && f->instructions[i]->id == f->root_id && f->instructions[i]->opcode)
            root_op = f->instructions[i]->opcode;
    o->flops = elementwise_flops(root_op, s);
}

/* while (body + condition), call, async-start (the callee), conditional
 * (each property's maximum over the branches). */
static void control_cost(const cost_ctx *c, const Xla__HloInstructionProto *ins, props *o,
                         int depth) {
    float f, b;
    if (!strcmp(ins->opcode, "while")) {
        float f2, b2;
        comp_sum(c, called(c, ins, 1), depth, &f, &b);   /* body */
        comp_sum(c, called(c, ins, 0), depth, &f2, &b2); /* condition */
        o->flops = f + f2;
        o->bytes = b + b2;
    } else if (!strcmp(ins->opcode, "conditional")) {
        o->flops = o->bytes = 0;
        for (size_t i = 0; i < ins->n_called_computation_ids; i++) {
            comp_sum(c, called(c, ins, i), depth, &f, &b);
            if (i == 0 || f > o->flops) o->flops = f;
            if (i == 0 || b > o->bytes) o->bytes = b;
        }
    } else {
        comp_sum(c, called(c, ins, 0), depth, &f, &b);
        o->flops = f;
        o->bytes = b;
    }
}

/* slice, dynamic-slice, dynamic-update-slice, gather, scatter; the rest
 * keep Preprocess's bytes and cost no flops. */
static void slicing_cost(const cost_ctx *c, const Xla__HloInstructionProto *ins, props *o,
                         int depth) {
    const char *op = ins->opcode;
    const Xla__ShapeProto *s = ins->shape;
    float out = (float)shape_size(s);
    int64_t in0 = elements_in(operand_shape(c, ins, 0));
    if (!strcmp(op, "slice") || !strcmp(op, "dynamic-slice") || !strcmp(op, "gather")) {
        o->bytes = out * 2;
        if (strcmp(op, "slice")) o->bytes += (float)shape_size(operand_shape(c, ins, 1));
        o->out_bytes = out;
        set_util(o, 0, in0 ? (float)(1.0 * (double)elements_in(s) / (double)in0) : 0.0f);
    } else if (!strcmp(op, "dynamic-update-slice")) {
        float upd = (float)shape_size(operand_shape(c, ins, 1));
        int64_t un = elements_in(operand_shape(c, ins, 1)), on = elements_in(s);
        o->bytes = upd * 2 + (float)shape_size(operand_shape(c, ins, 2));
        o->out_bytes = upd;
        set_util(o, 0, on ? (float)(((double)on - (double)un) / (double)on) : 0.0f);
    } else if (!strcmp(op, "scatter")) {
        /* operands: n inputs, the indices, n updates (a scatter with no
         * operands has none of them: n_operand_ids - 1 would wrap) */
        size_t n = ins->n_operand_ids ? (ins->n_operand_ids - 1) / 2 : 0;
        float upd = 0;
        for (size_t i = 0; i < n; i++) upd += (float)shape_size(operand_shape(c, ins, n + 1 + i));
        o->bytes = upd * 3 + (float)shape_size(operand_shape(c, ins, n));
        o->out_bytes = upd;
        o->flops = sub_flops(c, called(c, ins, 0), depth) *
                   (float)elements_in(operand_shape(c, ins, n + 1));
    }
}

/* ==== Fusions ============================================================ */

/* Position of instruction `id` in `comp`, or -1. */
static ptrdiff_t pos_of(const Xla__HloComputationProto *comp, int64_t id) {
    for (size_t i = 0; i < comp->n_instructions; i++)
        if (comp->instructions[i] && comp->instructions[i]->id == id) return (ptrdiff_t)i;
    return -1;
}

/* Positions of a computation's instructions by id, sorted (id, position):
 * pos_of's answer (the first position) in log n per lookup. */
typedef struct id_pos {
    int64_t id;
    size_t pos;
} id_pos;

static int cmp_id_pos(const void *x, const void *y) {
    const id_pos *a = x, *b = y;
    if (a->id != b->id) return a->id < b->id ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

static ptrdiff_t pos_find(const id_pos *ix, size_t n, int64_t id) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ix[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && ix[lo].id == id ? (ptrdiff_t)ix[lo].pos : -1;
}

/* GPU FusionCalculateUtilizations: from the root (utilization 1), users
 * before operands (the proto lists operands first); an elementwise user
 * (or tuple / get-tuple-element) passes its roots on, any other makes its
 * operand a root with the user's utilization times the operand factor,
 * rounded up to whole elements.  Fills util[] and returns the fusion's
 * flops (sum of utilization x flops). */
static float fusion_utilizations(const cost_ctx *c, const Xla__HloComputationProto *comp,
                                 const props *p, const ptrdiff_t *opos, const size_t *ofirst,
                                 ptrdiff_t root, float *util) {
    size_t n = comp->n_instructions, words = (n + 63) / 64;
    uint64_t *roots = xpv_xcalloc(n ? n * words : 1, sizeof *roots);
    float *root_util = xpv_xcalloc(n ? n : 1, sizeof *root_util);
    float flops = 0;
    if (root >= 0) {
        root_util[root] = 1.0f;
        roots[(size_t)root * words + (size_t)root / 64] |= 1ull << (root % 64);
    }
    for (size_t k = n; k-- > 0;) {
        const Xla__HloInstructionProto *ins = comp->instructions[k];
        float u = 0;
        for (size_t r = 0; r < n; r++)
            if (roots[k * words + r / 64] >> (r % 64) & 1) u += root_util[r];
        util[k] = u;
        if (!ins || !ins->opcode) continue;
        flops += u * p[k].flops;
        int pass = is_elementwise(ins) || !strcmp(ins->opcode, "tuple") ||
                   !strcmp(ins->opcode, "get-tuple-element");
        for (size_t i = 0; i < ins->n_operand_ids; i++) {
            ptrdiff_t q = opos[ofirst[k] + i];
            if (q < 0) continue;
            if (pass) {
                for (size_t w = 0; w < words; w++) roots[(size_t)q * words + w] |= roots[k * words + w];
                continue;
            }
            roots[(size_t)q * words + (size_t)q / 64] |= 1ull << (q % 64);
            float cu = u * get_util(&p[k], i);
            int64_t el = elements_recursive(comp->instructions[q]->shape, 0);
            cu = el == 0 ? 0.0f : (float)(ceil((double)(cu * (float)el)) / (double)el);
            root_util[q] += cu;
        }
    }
    (void)c;
    free(roots);
    free(root_util);
    return flops;
}

/* A dynamic-update-slice output writes its update only, and the buffer it
 * updates in place is not read (its operand 0 utilization becomes 0). */
static float dus_output(const Xla__HloComputationProto *comp, ptrdiff_t at, props *p) {
    const Xla__HloInstructionProto *d = comp->instructions[at];
    set_util(&p[at], 0, 0.0f);
    ptrdiff_t u = pos_of(comp, d->operand_ids[1]);
    return u >= 0 ? (float)shape_size(comp->instructions[u]->shape) : 0;
}

static int is_dus(const Xla__HloInstructionProto *i) {
    return i && i->opcode && !strcmp(i->opcode, "dynamic-update-slice") && i->n_operand_ids > 1;
}

/* Bytes a fusion writes (base FusionProcessOutputBytesAccessed). */
static float fusion_output_bytes(const Xla__HloInstructionProto *fusion,
                                 const Xla__HloComputationProto *comp, ptrdiff_t root, props *p) {
    const Xla__HloInstructionProto *r = root >= 0 ? comp->instructions[root] : NULL;
    const Xla__ShapeProto *s = fusion->shape;
    if (!is_tuple(s)) {
        if (!is_array(s)) return 0;
        if (is_dus(r)) return dus_output(comp, root, p);
        return (float)shape_size(s);
    }
    float b = 0;
    int root_tuple = r && r->opcode && !strcmp(r->opcode, "tuple");
    for (size_t i = 0; i < s->n_tuple_shapes; i++) {
        const Xla__ShapeProto *sub = s->tuple_shapes[i];
        if (!is_array(sub)) {
            /* deeper tuples: their arrays, the root not examined */
            for (size_t j = 0; is_tuple(sub) && j < sub->n_tuple_shapes; j++)
                if (is_array(sub->tuple_shapes[j])) b += (float)shape_size(sub->tuple_shapes[j]);
            continue;
        }
        ptrdiff_t q = root_tuple && i < r->n_operand_ids ? pos_of(comp, r->operand_ids[i]) : -1;
        if (q >= 0 && is_dus(comp->instructions[q])) {
            b += dus_output(comp, q, p);
        } else {
            b += (float)shape_size(sub);
        }
    }
    return b;
}

/* Bytes read of a fused parameter (GPU FusionParameterReadBytes): its
 * size x min(utilization, 1); a tuple parameter by its get-tuple-element
 * users of each leaf (one level). */
static float param_read_bytes(const Xla__HloComputationProto *comp, size_t k, const float *util) {
    const Xla__HloInstructionProto *par = comp->instructions[k];
    if (!is_tuple(par->shape)) {
        float u = util[k] < 1.0f ? util[k] : 1.0f;
        return (float)shape_size(par->shape) * u;
    }
    float b = 0;
    for (size_t leaf = 0; leaf < par->shape->n_tuple_shapes; leaf++) {
        size_t at = k;
        for (size_t j = 0; j < comp->n_instructions; j++) {
            const Xla__HloInstructionProto *g = comp->instructions[j];
            if (g && g->opcode && !strcmp(g->opcode, "get-tuple-element") && g->n_operand_ids &&
                g->operand_ids[0] == par->id && g->tuple_index == (int64_t)leaf) {
                at = j;
                break;
            }
        }
        float u = util[at] < 1.0f ? util[at] : 1.0f;
        b += (float)shape_size(comp->instructions[at]->shape) * u;
    }
    return b;
}

/* base HandleFusion with the GPU overrides. */
static void fusion_cost(const cost_ctx *c, const Xla__HloInstructionProto *ins, props *o,
                        int depth) {
    const Xla__HloComputationProto *comp = called(c, ins, 0);
    if (!comp || depth >= MAX_DEPTH) return;
    size_t n = comp->n_instructions;
    if (ins->fusion_kind && !strcmp(ins->fusion_kind, "kCustom")) {
        for (size_t k = 0; k < n; k++) {
            const Xla__HloInstructionProto *f = comp->instructions[k];
            if (f && f->opcode && (!strcmp(f->opcode, "gather") || !strcmp(f->opcode, "scatter"))) {
                slicing_cost(c, f, o, depth);
                return;
            }
        }
    }
    /* Operand lookups (a scan of the n instructions each) and the
     * utilization sets (n x n bits, passed on per operand) are quadratic:
     * both are charged before they start. */
    if (n > 16384) return;
    int64_t nops = 0;
    for (size_t k = 0; k < n; k++)
        nops += comp->instructions[k] ? (int64_t)comp->instructions[k]->n_operand_ids : 0;
    if (!spend(c, (int64_t)n * (int64_t)n / 8 + nops * ((int64_t)n / 64 + 16) + 1)) return;
    props *p = xpv_xcalloc(n ? n : 1, sizeof *p);
    size_t *ofirst = xpv_xcalloc(n + 1, sizeof *ofirst);
    for (size_t k = 0; k < n; k++)
        ofirst[k + 1] = ofirst[k] + (comp->instructions[k] ? comp->instructions[k]->n_operand_ids : 0);
    ptrdiff_t *opos = xpv_xmalloc((ofirst[n] ? ofirst[n] : 1) * sizeof *opos);
    id_pos *ix = xpv_xmalloc((n ? n : 1) * sizeof *ix);
    size_t nix = 0;
    for (size_t k = 0; k < n; k++)
        if (comp->instructions[k]) ix[nix++] = (id_pos){comp->instructions[k]->id, k};
    qsort(ix, nix, sizeof *ix, cmp_id_pos);
    for (size_t k = 0; k < n; k++) {
        const Xla__HloInstructionProto *f = comp->instructions[k];
        for (size_t i = 0; f && i < f->n_operand_ids; i++)
            opos[ofirst[k] + i] = pos_find(ix, nix, f->operand_ids[i]);
        cost_of(c, f, &p[k], depth + 1);
    }
    free(ix);
    ptrdiff_t root = pos_of(comp, comp->root_id);
    if (root < 0 && n) root = (ptrdiff_t)n - 1;
    float *util = xpv_xcalloc(n ? n : 1, sizeof *util);
    o->out_bytes = fusion_output_bytes(ins, comp, root, p);
    o->flops = fusion_utilizations(c, comp, p, opos, ofirst, root, util);
    float bytes = o->out_bytes;
    for (size_t k = 0; k < n; k++) { /* constants of more than one element */
        const Xla__HloInstructionProto *f = comp->instructions[k];
        if (f && f->opcode && !strcmp(f->opcode, "constant") && elements_in(f->shape) > 1)
            bytes += (float)shape_size(f->shape) * (util[k] < 1.0f ? util[k] : 1.0f);
    }
    for (size_t k = 0; k < n; k++) {
        const Xla__HloInstructionProto *f = comp->instructions[k];
        if (!f || !f->opcode || strcmp(f->opcode, "parameter")) continue;
        bytes += param_read_bytes(comp, k, util);
        set_util(o, (size_t)f->parameter_number, util[k]);
    }
    o->bytes = bytes;
    for (size_t k = 0; k < n; k++) free(p[k].util);
    free(p);
    free(ofirst);
    free(opos);
    free(util);
}

/* Flops and bytes of the ops other than fusions and custom calls. */
static void op_cost(const cost_ctx *c, const Xla__HloInstructionProto *ins, props *o, int depth) {
    const char *op = ins->opcode;
    const Xla__ShapeProto *s = ins->shape;
    if (in_list(op, ELEMENTWISE_COST)) {
        o->flops = elementwise_flops(op, s);
    } else if (!strcmp(op, "dot")) {
        const Xla__DotDimensionNumbers *d = ins->dot_dimension_numbers;
        o->flops = (float)dot_flops(operand_shape(c, ins, 0), s,
                                    d ? d->lhs_contracting_dimensions : NULL,
                                    d ? d->n_lhs_contracting_dimensions : 0);
    } else if (!strcmp(op, "convolution")) {
        o->flops = (float)conv_flops(ins, operand_shape(c, ins, 0), operand_shape(c, ins, 1), s);
    } else if (!strcmp(op, "reduce")) {
        const Xla__ShapeProto *out = is_tuple(s) && s->n_tuple_shapes ? s->tuple_shapes[0] : s;
        float count = (float)((double)elements_in(operand_shape(c, ins, 0)) - (double)elements_in(out));
        o->flops = sub_flops(c, called(c, ins, 0), depth) * count;
    } else if (!strcmp(op, "reduce-window")) {
        o->flops = sub_flops(c, called(c, ins, 0), depth) * (float)reduce_window_count(ins);
    } else if (!strcmp(op, "map")) {
        o->flops = sub_flops(c, called(c, ins, 0), depth) * (float)elements_in(s);
    } else if (!strcmp(op, "concatenate")) {
        o->flops = (float)concat_flops(c, ins);
    } else if (!strcmp(op, "sort")) {
        int64_t n = elements_in(operand_shape(c, ins, 0));
        int64_t lg = 0;
        while (lg < 63 && ((int64_t)1 << lg) < n) lg++;
        o->flops = (float)MUL(n, lg);
    } else if (!strcmp(op, "all-reduce") || !strcmp(op, "all-reduce-start")) {
        all_reduce_cost(c, ins, o);
    } else if (!strcmp(op, "while") || !strcmp(op, "call") || !strcmp(op, "conditional") ||
               !strcmp(op, "async-start")) {
        control_cost(c, ins, o, depth);
    } else if (!strcmp(op, "parameter") || !strcmp(op, "constant") ||
               !strcmp(op, "get-tuple-element") || !strcmp(op, "bitcast") ||
               !strcmp(op, "after-all") || !strcmp(op, "add-dependency") ||
               !strcmp(op, "domain") ||
               (!strcmp(op, "transpose") && transpose_is_bitcast(operand_shape(c, ins, 0), s, ins))) {
        no_bytes(o);
    } else if (!strcmp(op, "tuple")) {
        o->bytes = o->out_bytes = (float)shape_size(s);
    } else {
        slicing_cost(c, ins, o, depth);
    }
}

/* One instruction's properties (Preprocess, the handler, Postprocess). */
static void cost_of(const cost_ctx *c, const Xla__HloInstructionProto *ins, props *o,
                    int depth) {
    memset(o, 0, sizeof *o);
    /* An instruction costs one unit and one per operand (each is looked up
     * and its shape sized): whiles of 10,000-operand instructions made the
     * per-instruction budget last 116 s (issue 26, item 7). */
    if (!ins || !ins->opcode || depth > MAX_DEPTH || !spend(c, 1 + (int64_t)ins->n_operand_ids))
        return;
    /* Preprocess: output + operands, utilization 1. */
    float bytes = (float)shape_size(ins->shape);
    o->out_bytes = bytes;
    for (size_t i = 0; i < ins->n_operand_ids; i++) bytes += (float)shape_size(operand_shape(c, ins, i));
    o->bytes = bytes;
    o->nutil = ins->n_operand_ids;
    o->util = o->nutil ? xpv_xmalloc(o->nutil * sizeof *o->util) : NULL;
    for (size_t i = 0; i < o->nutil; i++) o->util[i] = 1.0f;
    if (!strcmp(ins->opcode, "fusion")) fusion_cost(c, ins, o, depth);
    else if (!strcmp(ins->opcode, "custom-call")) custom_call_cost(c, ins, o);
    else op_cost(c, ins, o, depth);
    if (!strcmp(ins->opcode, "custom-call")) return;
    /* XProf DefaultPostprocess: device flops of narrow inputs. */
    int maxbw = 0, any = 0;
    for (size_t i = 0; i < ins->n_operand_ids; i++) {
        const Xla__ShapeProto *s = operand_shape(c, ins, i);
        int t = s ? s->element_type : 0;
        if (t == 0 || t == T_TUPLE || t == T_OPAQUE || t == T_TOKEN) continue;
        int bw = bit_width(t);
        if (!any || bw > maxbw) maxbw = bw;
        any = 1;
    }
    unsigned f = 1;
    if (any && o->flops != 0) f = maxbw == 8 ? 2 : maxbw == 4 ? 4 : 1;
    o->adj = o->flops - o->flops / (float)f;
}

xpv_hlo_cost xpv_hlo_gpu_cost(const xpv_hlo_program *p, xpv_hlo_instr in) {
    xpv_hlo_cost r = {0, 0, 0, 0};
    if (!p || !in.ins) return r;
    /* The program's budget first: one instruction may spend at most
     * WORK_BUDGET of what is left of it (a program can be costed from
     * several threads: the units are taken atomically). */
    int64_t *left = (int64_t *)&p->cost_units_left;
    int64_t avail = __atomic_load_n(left, __ATOMIC_RELAXED);
    if (avail <= 0) return r;
    int64_t work = avail < WORK_BUDGET ? avail : WORK_BUDGET, start = work;
    cost_ctx c = {p, &work};
    props o;
    cost_of(&c, in.ins, &o, 0);
    r.work = start - work;
    __atomic_sub_fetch(left, r.work, __ATOMIC_RELAXED);
    free(o.util);
    int64_t flops = to_i64(o.flops), adj = to_i64(o.adj), bytes = to_i64(o.bytes);
    /* XProf ValidHloCost: -1 (no cost) reads as 0. */
    r.model_flops = flops == -1 ? 0 : flops;
    int64_t dev = xpv_add_i64(flops, adj == INT64_MIN ? INT64_MAX : -adj, NULL);
    r.device_flops = dev == -1 ? 0 : dev;
    r.bytes_accessed = bytes == -1 ? 0 : bytes;
    return r;
}

void xpv_hlo_gpu_cost_row(void *hlo_map, xpv_op_metric *row) {
    xpv_hlo_map *m = hlo_map;
    if (!m || !row || row->is_idle || row->occurrences <= 0) return;
    const xpv_hlo_program *prog = xpv_hlo_find(m, (uint64_t)row->program_id);
    if (!prog || !prog->bytes) return;
    xpv_err err;
    memset(&err, 0, sizeof err);
    prog = xpv_hlo_decode(m, NULL, prog, &err);
    if (!prog) return;
    xpv_hlo_instr in = xpv_hlo_instr_by_name(prog, row->name, strlen(row->name));
    if (!in.ins) return;
    xpv_hlo_cost k = xpv_hlo_gpu_cost(prog, in);
    double occ = (double)row->occurrences;
    /* DeviceOpMetricsDbBuilder::EnterOp: the instruction's figures when
     * above 0, else what the kernels' stats summed to. */
    if (k.device_flops > 0) row->flops = (double)k.device_flops * occ;
    if (k.model_flops > 0) row->model_flops = (double)k.model_flops * occ;
    else if (row->model_flops == 0) row->model_flops = row->flops;
    if (k.bytes_accessed > 0) row->bytes_accessed = (double)k.bytes_accessed * occ;
}
