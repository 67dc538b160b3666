/*
 * synth.c - synthetic TensorFlow-2.x-on-GPU XSpaces (demo, tests, benches).
 *
 * The bytes are written with a small hand-rolled protobuf encoder straight
 * into one output buffer: events are encoded into a scratch area and
 * appended, lines and planes reserve 5 bytes for their length and are
 * closed by writing the canonical varint and sliding the body down.  No
 * message tree is ever built, so a 1 GB profile needs about 1 GB of RAM.
 *
 * WHAT A GENERATED HOST CONTAINS (also in docs/synth.md).  Notation: µs
 * unless noted; h = host index, s = step (0..S-1), G = GPUs, R = blocks per
 * step (xpv_synth_blocks(): derived from size_bytes; 88 for the defaults),
 * g = GPU ordinal.  Every line has timestamp_ns = 1000000, so an event at
 * "t" starts at 1000000 ns + t.  The per-step timeline is a pure formula of
 * (h, s, R): the seed only changes ids (step ids, iterator ids, _p/_c).
 *
 *   Kernels (duration = base + h):   F0 120  F1 30  F2 20  F3 80  (forward)
 *                                    B0 90   B1a 100 B1b 10 B2 10 (backward)
 *                                    NCCL 150
 *   Kc = R * (460 + 8h + 16)   (8 kernels per block, each followed by 2 gap)
 *   H  = 4000 (MemcpyH2D of the 96 MiB input batch), N = 150 + h
 *   W_s = 12000 if s == 0 or (s + h) % 4 == 2 ("slow" steps), else 300
 *   D_s = 64 + W_s + H + Kc + N       (step duration)
 *   T_0 = 100, T_{s+1} = T_s + D_s + 50   (step start)
 *
 * Per step s (times relative to T_s), on /host:CPU:
 *   python3           train [0, D_s) {_r=1, step_num=s}
 *                       FunctionRun [2, D_s-2) {id, _pt=1, _p}
 *   tf_data_iterator_get_next
 *                     IteratorGetNextOp::DoCompute [6, 6+W_s) {id, iter_num=0}
 *                       Iterator::Prefetch [7, 5+W_s) {id, buffer_limit}
 *                         PrefetchConsume [3+W_s, 4+W_s) {element_id=s}
 *   tf_data_private_threadpool   (element s, produced just in time)
 *                     PrefetchProduce [e-P, e), e = W_s+1, P = W_s-20 on
 *                       slow steps else 1000; inside Iterator::Prefetch::
 *                       BatchV2 and 4 x (...::Map > ...::Map::TFRecord)
 *   tf_Compute (one per GPU g; ops of GPU g>0 are prefixed "replica_g/")
 *                     ExecutorState::Process [4, D_s-4) {id, iter_num=0,
 *                       _ct=1, _c}
 *                       input_batch/_1:_Recv [10+W_s, +20): alloc input
 *                         96 MiB, cuMemcpyHtoDAsync
 *                       7R block ops, op i at 40+W_s+12i, 10 long:
 *                         forward b=0..R-1: Conv2D BiasAdd Relu MatMul
 *                         backward b=R-1..0: MatMul_1 (MatMul),
 *                         Conv2DBackpropFilter (2 kernels),
 *                         ResourceApplyGradientDescent
 *                       SGD/NcclAllReduce:NcclAllReduce (op 7R)
 *                       Identity/_3:_Send (op 7R+1): cuMemcpyDtoHAsync,
 *                         frees the input batch
 *   Host Threads/<tid>  (CUPTI, one per GPU) cuEventRecord at
 *                     40+W_s+12(7R+2), cuEventSynchronize until the D2H ends
 * and on /device:GPU:g:
 *   Stream #(8+20g)(MemcpyH2D)   MemcpyH2D [30+W_s, +H)
 *   Stream #(7+20g)(Kernel)      the 8R kernels back to back from
 *                                dev0 = 32+W_s+H, 2 µs apart
 *   Stream #(11+20g)(Kernel)     NCCL all-reduce [dev0+Kc, +N)
 *   Stream #(9+20g)(MemcpyD2H)   MemcpyD2H [dev0+Kc+N+2, +10)
 * So device compute per step = R*(460+8h) + N, input (H2D) = H, output =
 * 10, idle-on-device = the rest.  Memory (allocator GPU_<g>_bfc, limit
 * 15 GiB): 64 MiB of weights at t=50; per step +96 MiB input, per block
 * +8,+8,+8,+2 MiB (forward op outputs), B0 +2 MiB, B1 frees the block's
 * four outputs, B2 frees B0's 2 MiB, _Send frees the input.  The heap peaks
 * at 160 + 26R + 2 MiB at the first backward op (block sizes are shifted
 * down when 26R MiB would exceed 8 GiB, see mem_shift).
 * Correlation ids: 1000 + (s*G + g)*(8R+5) + k, k = 0 H2D, 1..8R kernels in
 * issue order, 8R+1 NCCL, 8R+2 D2H, 8R+3/8R+4 the CUPTI event calls.
 */
#include "synth.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "wire_write.h"

/* ==== Event writer ====================================================== */

/* One event is assembled in `ev` (its body) and then appended to the line
 * as field 4 with its exact length. */
struct writer {
    xpv_buf *out;
    xpv_buf ev;
};

static void ev_begin(struct writer *w, uint32_t meta, int64_t off_ps, int64_t dur_ps) {
    xpv_buf *e = &w->ev;
    e->len = 0;
    wire_put_uint(e, 1, meta);
    wire_put_uint(e, 2, (uint64_t)off_ps);      /* oneof: always written */
    if (dur_ps) wire_put_uint(e, 3, (uint64_t)dur_ps);
}

/* XStat { 1: metadata_id, <field>: value } as event field 4. */
static void st_varint(struct writer *w, uint32_t mid, unsigned field, uint64_t v) {
    xpv_buf *e = &w->ev;
    wire_put_tag(e, 4, WT_LEN);
    wire_put_varint(e, 1 + wire_varint_size(mid) + 1 + wire_varint_size(v));
    wire_put_uint(e, 1, mid);
    wire_put_uint(e, field, v);
}

static void st_i64(struct writer *w, uint32_t mid, int64_t v) {
    st_varint(w, mid, 4, (uint64_t)v);
}
static void st_u64(struct writer *w, uint32_t mid, uint64_t v) { st_varint(w, mid, 3, v); }
static void st_ref(struct writer *w, uint32_t mid, uint64_t ref) { st_varint(w, mid, 7, ref); }

static void st_dbl(struct writer *w, uint32_t mid, double d) {
    xpv_buf *e = &w->ev;
    uint64_t u;
    uint8_t le[8];
    memcpy(&u, &d, sizeof u);
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(u >> (8 * i));
    wire_put_tag(e, 4, WT_LEN);
    wire_put_varint(e, 1 + wire_varint_size(mid) + 1 + 8);
    wire_put_uint(e, 1, mid);
    wire_put_tag(e, 2, WT_I64);
    xpv_buf_add(e, le, 8);
}

static void st_str(struct writer *w, uint32_t mid, const char *s) {
    xpv_buf *e = &w->ev;
    size_t n = strlen(s);
    wire_put_tag(e, 4, WT_LEN);
    wire_put_varint(e, 1 + wire_varint_size(mid) + 1 + wire_varint_size(n) + n);
    wire_put_uint(e, 1, mid);
    wire_put_bytes(e, 5, s, n);
}

static void ev_end(struct writer *w) {
    wire_put_bytes(w->out, 4, w->ev.data, w->ev.len);
}

/* An event without stats. */
static void ev_plain(struct writer *w, uint32_t meta, int64_t off_ps, int64_t dur_ps) {
    ev_begin(w, meta, off_ps, dur_ps);
    ev_end(w);
}

/* XLine header: returns the frame to close with line_close(). */
static size_t line_open(struct writer *w, int64_t id, const char *name, int64_t ts_ns) {
    size_t pos = wire_frame_open(w->out, 3);
    if (id) wire_put_uint(w->out, 1, (uint64_t)id);
    wire_put_str(w->out, 2, name);
    wire_put_uint(w->out, 3, (uint64_t)ts_ns);
    return pos;
}

static void line_close(struct writer *w, size_t pos, const char *display_name) {
    if (display_name && *display_name) wire_put_str(w->out, 11, display_name);
    wire_frame_close(w->out, pos);
}

/* Plane-level metadata: map entries {1: key, 2: value}. */
static void put_event_meta(xpv_buf *b, int64_t id, const char *name, const char *display) {
    size_t entry = wire_frame_open(b, 4);
    wire_put_uint(b, 1, (uint64_t)id);
    size_t val = wire_frame_open(b, 2);
    wire_put_uint(b, 1, (uint64_t)id);
    wire_put_str(b, 2, name);
    if (display && *display) wire_put_str(b, 4, display);
    wire_frame_close(b, val);
    wire_frame_close(b, entry);
}

static void put_stat_meta(xpv_buf *b, int64_t id, const char *name) {
    size_t entry = wire_frame_open(b, 5);
    wire_put_uint(b, 1, (uint64_t)id);
    size_t val = wire_frame_open(b, 2);
    wire_put_uint(b, 1, (uint64_t)id);
    wire_put_str(b, 2, name);
    wire_frame_close(b, val);
    wire_frame_close(b, entry);
}

/* Plane stats (XPlane field 6). */
static void plane_stat_varint(xpv_buf *b, uint32_t mid, unsigned field, uint64_t v) {
    wire_put_tag(b, 6, WT_LEN);
    wire_put_varint(b, 1 + wire_varint_size(mid) + 1 + wire_varint_size(v));
    wire_put_uint(b, 1, mid);
    wire_put_uint(b, field, v);
}

static void plane_stat_str(xpv_buf *b, uint32_t mid, const char *s) {
    size_t n = strlen(s);
    wire_put_tag(b, 6, WT_LEN);
    wire_put_varint(b, 1 + wire_varint_size(mid) + 1 + wire_varint_size(n) + n);
    wire_put_uint(b, 1, mid);
    wire_put_bytes(b, 5, s, n);
}

/* ==== The workload ====================================================== */

#define US 1000000LL        /* ps per µs */
#define MiB (1024LL * 1024)
#define LINE_TS_NS 1000000LL
#define PROFILE_EPOCH_NS 1735689600000000000ULL /* 2025-01-01T00:00:00Z */
#define MEM_LIMIT (15LL * 1024 * MiB)
#define NAME_BLOCKS 256     /* distinct block names: block b is named b % 256 */

/* Sizing model (bytes, fitted on generated files): a fixed part, a part
 * per step per GPU, a part per block per step per GPU, and the metadata of
 * each distinct block name (per GPU). */
#define SIZE_FIXED 5500
#define SIZE_STEP 1225
#define SIZE_BLOCK 2150
#define SIZE_NAME 1000
/* Lines and planes are framed with at most 5-byte lengths (32 GiB); stay
 * well below. */
#define SIZE_MAX_HOST (24ULL << 30)

enum kernel_id {
    K_CONV, K_BIAS, K_RELU, K_H884, K_SGEMM, K_WGRAD, K_SHUFFLE, K_APPLY, K_NCCL,
    K_COUNT
};

static const struct kernel_tmpl {
    const char *name;
    int64_t dur_us;
    const char *details;
} kernels[K_COUNT] = {
    {"volta_fp16_s884cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1", 120,
     "regs:168 static_shared:0 dynamic_shared:49152 grid:196,1,1 block:256,1,1 occ_pct:12.5"},
    {"void tensorflow::BiasNHWCKernel<Eigen::half>(int, Eigen::half const*, "
     "Eigen::half const*, Eigen::half*, int)", 30,
     "regs:16 static_shared:0 dynamic_shared:0 grid:4096,1,1 block:1024,1,1 occ_pct:100"},
    {"void Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<Eigen::TensorAssignOp<"
     "Eigen::TensorMap<Eigen::Tensor<Eigen::half, 1, 1, long>, 16, Eigen::MakePointer>, "
     "Eigen::TensorCwiseUnaryOp<Eigen::internal::scalar_max_op<Eigen::half const, "
     "Eigen::half const>, Eigen::TensorMap<Eigen::Tensor<Eigen::half const, 1, 1, long>, 16, "
     "Eigen::MakePointer> const> const> const, Eigen::GpuDevice>, long>(Eigen::TensorEvaluator<"
     "Eigen::TensorAssignOp<Eigen::TensorMap<Eigen::Tensor<Eigen::half, 1, 1, long>, 16, "
     "Eigen::MakePointer>, Eigen::TensorCwiseUnaryOp<Eigen::internal::scalar_max_op<"
     "Eigen::half const, Eigen::half const>, Eigen::TensorMap<Eigen::Tensor<Eigen::half const, "
     "1, 1, long>, 16, Eigen::MakePointer> const> const> const, Eigen::GpuDevice>, long)", 20,
     "regs:32 static_shared:0 dynamic_shared:0 grid:160,1,1 block:1024,1,1 occ_pct:100"},
    {"volta_h884gemm_128x128_ldg8_nn", 80,
     "regs:232 static_shared:0 dynamic_shared:36864 grid:8,64,1 block:256,1,1 occ_pct:12.5"},
    {"volta_sgemm_128x64_nt", 90,
     "regs:122 static_shared:0 dynamic_shared:0 grid:16,32,1 block:256,1,1 occ_pct:25"},
    {"void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int, int, "
     "int, float const*, int, float*, float const*, kernel_grad_params, unsigned long long, "
     "int, float, int, int, int, int)", 100,
     "regs:64 static_shared:18432 dynamic_shared:0 grid:4,7,64 block:128,1,1 occ_pct:37.5"},
    {"void tensorflow::functor::ShuffleInTensor3Simple<float, 2, 1, 0, false>(int, float "
     "const*, tensorflow::functor::Dimension<3>, float*)", 10,
     "regs:20 static_shared:0 dynamic_shared:0 grid:144,1,1 block:1024,1,1 occ_pct:100"},
    {"void Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<Eigen::TensorAssignOp<"
     "Eigen::TensorMap<Eigen::Tensor<float, 1, 1, long>, 16, Eigen::MakePointer>, "
     "Eigen::TensorCwiseBinaryOp<Eigen::internal::scalar_difference_op<float const, float "
     "const>, Eigen::TensorMap<Eigen::Tensor<float, 1, 1, long>, 16, Eigen::MakePointer> "
     "const, Eigen::TensorCwiseBinaryOp<Eigen::internal::scalar_product_op<float const, "
     "float const>, Eigen::TensorMap<Eigen::Tensor<float const, 1, 1, long>, 16, "
     "Eigen::MakePointer> const, Eigen::TensorMap<Eigen::Tensor<float const, 1, 1, long>, "
     "16, Eigen::MakePointer> const> const> const> const, Eigen::GpuDevice>, long>(...)", 10,
     "regs:24 static_shared:0 dynamic_shared:0 grid:72,1,1 block:1024,1,1 occ_pct:100"},
    {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 150,
     "regs:96 static_shared:4224 dynamic_shared:0 grid:2,1,1 block:512,1,1 occ_pct:6.25"},
};

/* The 7 host ops of a block, in issue order (forward ops F0-F3 run for
 * blocks 0..R-1, then backward ops B0-B2 for blocks R-1..0). */
enum op_id { OP_F0, OP_F1, OP_F2, OP_F3, OP_B0, OP_B1, OP_B2, OP_BLOCK_COUNT };

static const struct op_tmpl {
    const char *fmt;      /* printf(replica prefix, block name index) */
    const char *shape;    /* kernel "shape" stat */
    int nkernels;
    enum kernel_id k0;
} ops[OP_BLOCK_COUNT] = {
    {"%smodel/block_%d/conv2d/Conv2D:Conv2D", "(half[64,32,32,64];half[3,3,64,64])", 1, K_CONV},
    {"%smodel/block_%d/conv2d/BiasAdd:BiasAdd", "(half[64,32,32,64];half[64])", 1, K_BIAS},
    {"%smodel/block_%d/conv2d/Relu:Relu", "(half[64,32,32,64])", 1, K_RELU},
    {"%smodel/block_%d/dense/MatMul:MatMul", "(half[64,4096];half[4096,16384])", 1, K_H884},
    {"%sgradient_tape/model/block_%d/dense/MatMul/MatMul_1:MatMul",
     "(float[64,16384];float[64,4096])", 1, K_SGEMM},
    {"%sgradient_tape/model/block_%d/conv2d/Conv2D/Conv2DBackpropFilter:Conv2DBackpropFilter",
     "(float[64,32,32,64];int32[4];float[64,32,32,64])", 2, K_WGRAD},
    {"%sSGD/SGD/update_%d/ResourceApplyGradientDescent:ResourceApplyGradientDescent",
     "(float[3,3,64,64];float[];float[3,3,64,64])", 1, K_APPLY},
};

/* Per-GPU ops outside the blocks. */
enum fixed_op { FX_RECV, FX_NCCL, FX_SEND, FX_COUNT };
static const char *const fixed_ops[FX_COUNT] = {
    "%sinput_batch/_1:_Recv", "%sSGD/NcclAllReduce:NcclAllReduce", "%sIdentity/_3:_Send"};
static const char *const nccl_shape = "(float[1048576])";

/* ---- /host:CPU metadata ---- */

enum host_event {
    HE_TRAIN = 1, HE_FUNCTION_RUN, HE_EXECUTOR, HE_GET_NEXT, HE_PREFETCH, HE_CONSUME,
    HE_PRODUCE, HE_BATCH, HE_MAP, HE_TFRECORD, HE_ALLOC, HE_DEALLOC, HE_LAUNCH, HE_H2D,
    HE_D2H, HE_EVENT_RECORD, HE_EVENT_SYNC,
    HE_OPS /* first TF op id: per GPU FX_COUNT fixed ops, then 7 * nb block ops */
};

static const struct {
    const char *name, *display;
} host_events[HE_OPS] = {
    [HE_TRAIN] = {"train", NULL},
    [HE_FUNCTION_RUN] = {"FunctionRun", NULL},
    [HE_EXECUTOR] = {"ExecutorState::Process", NULL},
    [HE_GET_NEXT] = {"IteratorGetNextOp::DoCompute", NULL},
    [HE_PREFETCH] = {"Iterator::Prefetch", NULL},
    [HE_CONSUME] = {"PrefetchConsume", NULL},
    [HE_PRODUCE] = {"PrefetchProduce", NULL},
    [HE_BATCH] = {"Iterator::Prefetch::BatchV2", "Iterator::BatchV2"},
    [HE_MAP] = {"Iterator::Prefetch::BatchV2::Map", "Iterator::Map"},
    [HE_TFRECORD] = {"Iterator::Prefetch::BatchV2::Map::TFRecord", "Iterator::TFRecord"},
    [HE_ALLOC] = {"MemoryAllocation", NULL},
    [HE_DEALLOC] = {"MemoryDeallocation", NULL},
    [HE_LAUNCH] = {"cuLaunchKernel", NULL},
    [HE_H2D] = {"cuMemcpyHtoDAsync", NULL},
    [HE_D2H] = {"cuMemcpyDtoHAsync", NULL},
    [HE_EVENT_RECORD] = {"cuEventRecord", NULL},
    [HE_EVENT_SYNC] = {"cuEventSynchronize", NULL},
};

enum host_stat {
    HS_R = 1, HS_STEP_NUM, HS_PT, HS_P, HS_CT, HS_C, HS_ID, HS_ITER_NUM, HS_PARENT_ID,
    HS_ELEMENT_ID, HS_BUFFER_LIMIT, HS_CORRELATION_ID, HS_DEVICE_ID, HS_ALLOCATOR_NAME,
    HS_BYTES_RESERVED, HS_BYTES_ALLOCATED, HS_BYTES_AVAILABLE, HS_FRAGMENTATION,
    HS_PEAK_BYTES_IN_USE, HS_REQUESTED_BYTES, HS_ALLOCATION_BYTES, HS_ADDR, HS_TF_OP,
    HS_REGION_TYPE, HS_DATA_TYPE, HS_SHAPE, HS_COUNT
};

static const char *const host_stats[HS_COUNT] = {
    [HS_R] = "_r", [HS_STEP_NUM] = "step_num", [HS_PT] = "_pt", [HS_P] = "_p",
    [HS_CT] = "_ct", [HS_C] = "_c", [HS_ID] = "id", [HS_ITER_NUM] = "iter_num",
    [HS_PARENT_ID] = "parent_id", [HS_ELEMENT_ID] = "element_id",
    [HS_BUFFER_LIMIT] = "buffer_limit", [HS_CORRELATION_ID] = "correlation_id",
    [HS_DEVICE_ID] = "device_id", [HS_ALLOCATOR_NAME] = "allocator_name",
    [HS_BYTES_RESERVED] = "bytes_reserved", [HS_BYTES_ALLOCATED] = "bytes_allocated",
    [HS_BYTES_AVAILABLE] = "bytes_available", [HS_FRAGMENTATION] = "fragmentation",
    [HS_PEAK_BYTES_IN_USE] = "peak_bytes_in_use", [HS_REQUESTED_BYTES] = "requested_bytes",
    [HS_ALLOCATION_BYTES] = "allocation_bytes", [HS_ADDR] = "addr", [HS_TF_OP] = "tf_op",
    [HS_REGION_TYPE] = "region_type", [HS_DATA_TYPE] = "data_type", [HS_SHAPE] = "shape",
};

/* ---- /device:GPU:N metadata ---- */

enum gpu_event { GE_KERNEL0 = 1, GE_H2D = GE_KERNEL0 + K_COUNT, GE_D2H };

enum gpu_stat {
    GS_CORRELATION_ID = 1, GS_KERNEL_DETAILS, GS_TF_OP, GS_SHAPE, GS_CONTEXT_ID,
    GS_MEMCPY_DETAILS, GS_CLOCK_RATE, GS_CORE_COUNT, GS_MEMORY_BANDWIDTH, GS_MEMORY_SIZE,
    GS_CC_MAJOR, GS_CC_MINOR, GS_DEVICE_VENDOR, GS_DEVICE_NAME,
    GS_REFS /* ref strings: kernel details, shapes, memcpy details, tf ops */
};

static const char *const gpu_stats[GS_REFS] = {
    [GS_CORRELATION_ID] = "correlation_id", [GS_KERNEL_DETAILS] = "kernel_details",
    [GS_TF_OP] = "tf_op", [GS_SHAPE] = "shape", [GS_CONTEXT_ID] = "context_id",
    [GS_MEMCPY_DETAILS] = "memcpy_details", [GS_CLOCK_RATE] = "clock_rate",
    [GS_CORE_COUNT] = "core_count", [GS_MEMORY_BANDWIDTH] = "memory_bandwidth",
    [GS_MEMORY_SIZE] = "memory_size", [GS_CC_MAJOR] = "compute_cap_major",
    [GS_CC_MINOR] = "compute_cap_minor", [GS_DEVICE_VENDOR] = "device_vendor",
    [GS_DEVICE_NAME] = "gpu_device_name",
};

/* Ref ids on a GPU plane. */
#define REF_KDETAILS(k) (GS_REFS + (k))
#define REF_SHAPE(o) (GS_REFS + K_COUNT + (o))  /* o: op_id, or OP_BLOCK_COUNT = NCCL */
#define REF_MEMCPY_H2D (GS_REFS + K_COUNT + OP_BLOCK_COUNT + 1)
#define REF_MEMCPY_D2H (REF_MEMCPY_H2D + 1)
#define REF_FIXED_OP(f) (REF_MEMCPY_D2H + 1 + (f))
#define REF_BLOCK_OP(nb, o) (REF_FIXED_OP(FX_COUNT) + (nb) * OP_BLOCK_COUNT + (o))

/* ==== Layout: the timeline as a formula ================================= */

struct layout {
    int S, G, R, NB, h;
    int mem_shift;            /* block allocation sizes are >> mem_shift */
    uint64_t seed;
    int64_t kdur[K_COUNT];    /* ps, includes the per-host +h µs */
    int64_t H, N, Kc;         /* ps */
    int64_t *T, *W;           /* per step: start, input wait (ps) */
    int64_t end;              /* ps: T_S, the end of the profile's steps */
};

static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* A seeded id for (host, kind, index); never 0. */
static uint64_t synth_id(const struct layout *L, uint64_t kind, uint64_t index) {
    uint64_t hk = (uint64_t)L->h * 0x100000001b3ULL ^ mix64(kind << 40 ^ index);
    uint64_t v = mix64(L->seed ^ mix64(hk));
    return v ? v : 1;
}

static int64_t step_duration(const struct layout *L, int s) {
    return 64 * US + L->W[s] + L->H + L->Kc + L->N;
}

static int is_slow_step(int h, int s) { return s == 0 || (s + h) % 4 == 2; }

uint64_t xpv_synth_estimate(const xpv_synth_opts *opts) {
    xpv_synth_opts o = *opts;
    xpv_synth_defaults(&o);
    uint64_t r = (uint64_t)xpv_synth_blocks(&o);
    uint64_t sg = (uint64_t)o.steps * (uint64_t)o.gpus;
    uint64_t names = (uint64_t)o.gpus * (r < NAME_BLOCKS ? r : NAME_BLOCKS) * SIZE_NAME;
    return SIZE_FIXED + sg * (SIZE_STEP + r * SIZE_BLOCK) + names;
}

int xpv_synth_blocks(const xpv_synth_opts *opts) {
    xpv_synth_opts o = *opts;
    xpv_synth_defaults(&o);
    uint64_t sg = (uint64_t)o.steps * (uint64_t)o.gpus;
    uint64_t fixed = SIZE_FIXED + sg * SIZE_STEP;
    if (o.size_bytes <= fixed) return 1;
    uint64_t avail = o.size_bytes - fixed;
    uint64_t r = avail / (sg * SIZE_BLOCK + (uint64_t)o.gpus * SIZE_NAME);
    if (r > NAME_BLOCKS) {
        uint64_t names = (uint64_t)o.gpus * NAME_BLOCKS * SIZE_NAME;
        r = avail > names ? (avail - names) / (sg * SIZE_BLOCK) : NAME_BLOCKS;
    }
    if (r < 1) r = 1;
    if (r > 100000000) r = 100000000;
    return (int)r;
}

static void layout_init(struct layout *L, const xpv_synth_opts *o, int h) {
    memset(L, 0, sizeof *L);
    L->S = o->steps;
    L->G = o->gpus;
    L->R = xpv_synth_blocks(o);
    L->NB = L->R < NAME_BLOCKS ? L->R : NAME_BLOCKS;
    L->h = h;
    L->seed = o->seed;
    while (L->mem_shift < 13 && ((26 * MiB * (int64_t)L->R) >> L->mem_shift) > 8 * 1024 * MiB)
        L->mem_shift++;
    int64_t ksum = 0;
    for (int k = 0; k < K_COUNT; k++) {
        L->kdur[k] = (kernels[k].dur_us + h) * US;
        if (k != K_NCCL) ksum += L->kdur[k] + 2 * US;
    }
    L->H = 4000 * US;
    L->N = L->kdur[K_NCCL];
    L->Kc = ksum * L->R;
    L->T = xpv_xmalloc(sizeof(int64_t) * (size_t)(L->S + 1));
    L->W = xpv_xmalloc(sizeof(int64_t) * (size_t)L->S);
    int64_t t = 100 * US;
    for (int s = 0; s < L->S; s++) {
        L->T[s] = t;
        L->W[s] = (is_slow_step(h, s) ? 12000 : 300) * US;
        t += step_duration(L, s) + 50 * US;
    }
    L->T[L->S] = t;
    L->end = t;
}

static void layout_release(struct layout *L) {
    free(L->T);
    free(L->W);
}

static uint64_t correlation_id(const struct layout *L, int s, int g, int k) {
    return 1000 + ((uint64_t)s * (uint64_t)L->G + (uint64_t)g) * (8 * (uint64_t)L->R + 5) +
           (uint64_t)k;
}

static void replica_prefix(int g, char *buf, size_t n) {
    if (g == 0) buf[0] = 0;
    else snprintf(buf, n, "replica_%d/", g);
}

/* "prefix/name:Type" for a block op or fixed op. */
static void op_name(int g, int nb, int op, int fixed, char *buf, size_t n) {
    char pre[32];
    replica_prefix(g, pre, sizeof pre);
    if (fixed) snprintf(buf, n, fixed_ops[op], pre);
    else snprintf(buf, n, ops[op].fmt, pre, nb);
}

static uint32_t host_fixed_op_meta(const struct layout *L, int g, int f) {
    (void)L;
    return (uint32_t)(HE_OPS + g * FX_COUNT + f);
}

static uint32_t host_block_op_meta(const struct layout *L, int g, int nb, int op) {
    return (uint32_t)(HE_OPS + L->G * FX_COUNT + (g * L->NB + nb) * OP_BLOCK_COUNT + op);
}

/* ==== /host:CPU lines ===================================================== */

static void host_python(struct writer *w, const struct layout *L) {
    size_t ln = line_open(w, 4100, "python3", LINE_TS_NS);
    for (int s = 0; s < L->S; s++) {
        int64_t T = L->T[s], D = step_duration(L, s);
        ev_begin(w, HE_TRAIN, T, D);
        st_i64(w, HS_R, 1);
        st_i64(w, HS_STEP_NUM, s);
        ev_end(w);
        ev_begin(w, HE_FUNCTION_RUN, T + 2 * US, D - 4 * US);
        st_i64(w, HS_ID, (int64_t)synth_id(L, 1, (uint64_t)s));
        st_i64(w, HS_PT, 1);
        st_u64(w, HS_P, synth_id(L, 2, (uint64_t)s));
        ev_end(w);
    }
    line_close(w, ln, NULL);
}

static void host_get_next(struct writer *w, const struct layout *L) {
    size_t ln = line_open(w, 4215, "tf_data_iterator_get_next/4215", LINE_TS_NS);
    for (int s = 0; s < L->S; s++) {
        int64_t T = L->T[s], W = L->W[s];
        ev_begin(w, HE_GET_NEXT, T + 6 * US, W);
        st_i64(w, HS_ID, (int64_t)synth_id(L, 1, (uint64_t)s));
        st_i64(w, HS_ITER_NUM, 0);
        ev_end(w);
        ev_begin(w, HE_PREFETCH, T + 7 * US, W - 2 * US);
        st_i64(w, HS_ID, (int64_t)synth_id(L, 10, 0));
        st_i64(w, HS_BUFFER_LIMIT, 2);
        ev_end(w);
        ev_begin(w, HE_CONSUME, T + 3 * US + W, 1 * US);
        st_i64(w, HS_ELEMENT_ID, s);
        ev_end(w);
    }
    line_close(w, ln, NULL);
}

static void host_produce(struct writer *w, const struct layout *L) {
    size_t ln = line_open(w, 4216, "tf_data_private_threadpool/4216", LINE_TS_NS);
    int64_t prefetch = (int64_t)synth_id(L, 10, 0), batch = (int64_t)synth_id(L, 10, 1);
    int64_t map = (int64_t)synth_id(L, 10, 2), rec = (int64_t)synth_id(L, 10, 3);
    for (int s = 0; s < L->S; s++) {
        int64_t W = L->W[s];
        int64_t pe = L->T[s] + W + 1 * US;
        int64_t P = is_slow_step(L->h, s) ? W - 20 * US : 1000 * US;
        int64_t ps = pe - P;
        ev_begin(w, HE_PRODUCE, ps, P);
        st_i64(w, HS_ELEMENT_ID, s);
        ev_end(w);
        ev_begin(w, HE_BATCH, ps + 2 * US, P - 4 * US);
        st_i64(w, HS_ID, batch);
        st_i64(w, HS_PARENT_ID, prefetch);
        ev_end(w);
        int64_t q = (P - 8 * US) / 4;
        for (int i = 0; i < 4; i++) {
            int64_t ms = ps + 4 * US + i * q;
            ev_begin(w, HE_MAP, ms, q - 2 * US);
            st_i64(w, HS_ID, map);
            st_i64(w, HS_PARENT_ID, batch);
            ev_end(w);
            ev_begin(w, HE_TFRECORD, ms + 1 * US, q / 2);
            st_i64(w, HS_ID, rec);
            st_i64(w, HS_PARENT_ID, map);
            ev_end(w);
        }
    }
    line_close(w, ln, NULL);
}

/* The BFC allocator state of one GPU, advanced in time order. */
struct allocator {
    char name[32];
    int64_t heap, peak;
    uint64_t base;
};

struct mem_event {
    int64_t off;
    int64_t bytes;
    uint64_t addr;
    const char *tf_op;       /* NULL for deallocations */
    const char *region;
    int dtype;               /* TF DataType: 1 float, 19 half */
    const char *shape;
};

static void mem_emit(struct writer *w, struct allocator *a, const struct mem_event *m,
                     int alloc) {
    a->heap += alloc ? m->bytes : -m->bytes;
    if (a->heap > a->peak) a->peak = a->heap;
    ev_begin(w, alloc ? HE_ALLOC : HE_DEALLOC, m->off, 0);
    st_str(w, HS_ALLOCATOR_NAME, a->name);
    st_i64(w, HS_BYTES_RESERVED, 0);
    st_i64(w, HS_BYTES_ALLOCATED, a->heap);
    st_i64(w, HS_BYTES_AVAILABLE, MEM_LIMIT - a->heap);
    if (alloc) st_i64(w, HS_FRAGMENTATION, 0);
    else st_dbl(w, HS_FRAGMENTATION, 0.0125);
    st_i64(w, HS_PEAK_BYTES_IN_USE, a->peak);
    st_i64(w, HS_REQUESTED_BYTES, m->bytes);
    st_i64(w, HS_ALLOCATION_BYTES, m->bytes);
    st_u64(w, HS_ADDR, m->addr);
    if (alloc) {
        st_str(w, HS_TF_OP, m->tf_op);
        st_str(w, HS_REGION_TYPE, m->region);
        st_i64(w, HS_DATA_TYPE, m->dtype);
        st_str(w, HS_SHAPE, m->shape);
    }
    ev_end(w);
}

/* Size, dtype and shape of the output a block op allocates (F0-F3, B0). */
static int64_t block_alloc_bytes(const struct layout *L, int op) {
    static const int64_t mib[] = {8, 8, 8, 2, 2};
    return (mib[op] * MiB) >> L->mem_shift;
}

static void block_alloc_shape(const struct layout *L, int op, char *buf, size_t n) {
    static const char *const shapes[] = {"[64,32,32,64]", "[64,32,32,64]", "[64,32,32,64]",
                                         "[64,16384]", "[512,1024]"};
    if (L->mem_shift == 0) snprintf(buf, n, "%s", shapes[op]);
    else snprintf(buf, n, "[%" PRId64 "]", block_alloc_bytes(L, op) / (op == OP_B0 ? 4 : 2));
}

static uint64_t block_addr(const struct layout *L, const struct allocator *a, int b, int op) {
    uint64_t stride = (uint64_t)((8 * MiB) >> L->mem_shift);
    return a->base + (uint64_t)(160 * MiB) + ((uint64_t)b * 5 + (uint64_t)op) * stride;
}

/* Strip ":Type" from an op name (memory events carry the op name only). */
static void op_name_only(const char *full, char *buf, size_t n) {
    const char *c = strrchr(full, ':');
    size_t len = c ? (size_t)(c - full) : strlen(full);
    if (len >= n) len = n - 1;
    memcpy(buf, full, len);
    buf[len] = 0;
}

static void launch(struct writer *w, uint32_t meta, int64_t off, int64_t dur, uint64_t corr,
                   int g) {
    ev_begin(w, meta, off, dur);
    st_u64(w, HS_CORRELATION_ID, corr);
    st_u64(w, HS_DEVICE_ID, (uint64_t)g);
    ev_end(w);
}

/* Names an executor line needs, formatted once (the hot loop only copies
 * bytes): "op name" without ":Type" for memory events, and shapes. */
struct exec_names {
    char (*block)[160];       /* [nb * OP_BLOCK_COUNT + op] */
    char fixed[FX_COUNT][96];
    char shape[OP_B0 + 1][48];
};

static void exec_names_init(struct exec_names *n, const struct layout *L, int g) {
    char full[256];
    n->block = xpv_xmalloc(sizeof *n->block * (size_t)L->NB * OP_BLOCK_COUNT);
    for (int nb = 0; nb < L->NB; nb++)
        for (int op = 0; op < OP_BLOCK_COUNT; op++) {
            op_name(g, nb, op, 0, full, sizeof full);
            op_name_only(full, n->block[nb * OP_BLOCK_COUNT + op], sizeof n->block[0]);
        }
    for (int f = 0; f < FX_COUNT; f++) {
        op_name(g, 0, f, 1, full, sizeof full);
        op_name_only(full, n->fixed[f], sizeof n->fixed[f]);
    }
    for (int op = 0; op <= OP_B0; op++) block_alloc_shape(L, op, n->shape[op], sizeof n->shape[op]);
}

static void host_executor(struct writer *w, const struct layout *L, int g) {
    char name[64];
    int tid = 4180 + g;
    snprintf(name, sizeof name, "tf_Compute/%d", tid);
    size_t ln = line_open(w, tid, name, LINE_TS_NS);
    struct exec_names nm;
    exec_names_init(&nm, L, g);
    struct allocator a;
    snprintf(a.name, sizeof a.name, "GPU_%d_bfc", g);
    a.heap = a.peak = 0;
    a.base = 0x7f2a00000000ULL + (uint64_t)g * 0x10000000000ULL;

    struct mem_event weights = {50 * US, 64 * MiB, a.base, "model/weights", "persist", 1,
                                "[16777216]"};
    mem_emit(w, &a, &weights, 1);

    int R = L->R;
    for (int s = 0; s < L->S; s++) {
        int64_t T = L->T[s], W = L->W[s], D = step_duration(L, s);
        ev_begin(w, HE_EXECUTOR, T + 4 * US, D - 8 * US);
        st_i64(w, HS_ID, (int64_t)synth_id(L, 1, (uint64_t)s));
        st_i64(w, HS_ITER_NUM, 0);
        st_i64(w, HS_CT, 1);
        st_u64(w, HS_C, synth_id(L, 2, (uint64_t)s));
        ev_end(w);

        /* Input batch: _Recv allocates it and copies it to the GPU. */
        int64_t t = T + 10 * US + W;
        ev_plain(w, host_fixed_op_meta(L, g, FX_RECV), t, 20 * US);
        struct mem_event input = {t + US / 2, 96 * MiB, a.base + (uint64_t)(64 * MiB),
                                  nm.fixed[FX_RECV], "output", 19, "[64,512,512,3]"};
        mem_emit(w, &a, &input, 1);
        launch(w, HE_H2D, t + 2 * US, 15 * US, correlation_id(L, s, g, 0), g);

        /* Block ops: forward 0..R-1 then backward R-1..0. */
        int i = 0, kj = 1;
        for (int pass = 0; pass < 2; pass++) {
            for (int bi = 0; bi < R; bi++) {
                int b = pass == 0 ? bi : R - 1 - bi;
                int nb = b % L->NB;
                for (int op = pass == 0 ? OP_F0 : OP_B0; op <= (pass == 0 ? OP_F3 : OP_B2);
                     op++, i++) {
                    int64_t ot = T + 40 * US + W + (int64_t)i * 12 * US;
                    ev_plain(w, host_block_op_meta(L, g, nb, op), ot, 10 * US);
                    if (op <= OP_F3 || op == OP_B0) {
                        struct mem_event m = {ot + US / 2, block_alloc_bytes(L, op),
                                              block_addr(L, &a, b, op),
                                              nm.block[nb * OP_BLOCK_COUNT + op], "output",
                                              op == OP_B0 ? 1 : 19, nm.shape[op]};
                        mem_emit(w, &a, &m, 1);
                    }
                    if (ops[op].nkernels == 2) {
                        launch(w, HE_LAUNCH, ot + 1 * US, 3 * US, correlation_id(L, s, g, kj++), g);
                        launch(w, HE_LAUNCH, ot + 5 * US, 3 * US, correlation_id(L, s, g, kj++), g);
                    } else {
                        launch(w, HE_LAUNCH, ot + 2 * US, 5 * US, correlation_id(L, s, g, kj++), g);
                    }
                    if (op == OP_B1) {
                        for (int f = OP_F0; f <= OP_F3; f++) {
                            struct mem_event m = {ot + 8 * US + US / 2 + f * (US / 10),
                                                  block_alloc_bytes(L, f),
                                                  block_addr(L, &a, b, f), NULL, NULL, 0, NULL};
                            mem_emit(w, &a, &m, 0);
                        }
                    } else if (op == OP_B2) {
                        struct mem_event m = {ot + 8 * US + US / 2, block_alloc_bytes(L, OP_B0),
                                              block_addr(L, &a, b, OP_B0), NULL, NULL, 0, NULL};
                        mem_emit(w, &a, &m, 0);
                    }
                }
            }
        }
        /* All-reduce, then fetch the loss and free the input batch. */
        int64_t ot = T + 40 * US + W + (int64_t)i * 12 * US;
        ev_plain(w, host_fixed_op_meta(L, g, FX_NCCL), ot, 10 * US);
        launch(w, HE_LAUNCH, ot + 2 * US, 5 * US, correlation_id(L, s, g, 8 * R + 1), g);
        ot += 12 * US;
        ev_plain(w, host_fixed_op_meta(L, g, FX_SEND), ot, 10 * US);
        launch(w, HE_D2H, ot + 2 * US, 5 * US, correlation_id(L, s, g, 8 * R + 2), g);
        struct mem_event free_input = {ot + 8 * US + US / 2, 96 * MiB,
                                       a.base + (uint64_t)(64 * MiB), NULL, NULL, 0, NULL};
        mem_emit(w, &a, &free_input, 0);
    }
    free(nm.block);
    line_close(w, ln, NULL);
}

static void host_cupti(struct writer *w, const struct layout *L, int g) {
    char name[64];
    int tid = 4300 + g;
    snprintf(name, sizeof name, "Host Threads/%d", tid);
    size_t ln = line_open(w, tid, name, LINE_TS_NS);
    int R = L->R;
    for (int s = 0; s < L->S; s++) {
        int64_t T = L->T[s], W = L->W[s];
        int64_t q = T + 40 * US + W + (int64_t)(7 * R + 2) * 12 * US;
        int64_t sync_end = T + 46 * US + W + L->H + L->Kc + L->N;
        launch(w, HE_EVENT_RECORD, q, 3 * US, correlation_id(L, s, g, 8 * R + 3), g);
        launch(w, HE_EVENT_SYNC, q + 5 * US, sync_end - q - 5 * US,
               correlation_id(L, s, g, 8 * R + 4), g);
    }
    line_close(w, ln, name);
}

static void host_plane(struct writer *w, const struct layout *L) {
    xpv_buf *out = w->out;
    char full[256];
    size_t pl = wire_frame_open(out, 1);
    wire_put_str(out, 2, "/host:CPU");

    host_python(w, L);
    for (int g = 0; g < L->G; g++) host_executor(w, L, g);
    host_get_next(w, L);
    host_produce(w, L);
    for (int g = 0; g < L->G; g++) host_cupti(w, L, g);

    for (int e = 1; e < HE_OPS; e++)
        put_event_meta(out, e, host_events[e].name, host_events[e].display);
    for (int g = 0; g < L->G; g++) {
        for (int f = 0; f < FX_COUNT; f++) {
            op_name(g, 0, f, 1, full, sizeof full);
            put_event_meta(out, host_fixed_op_meta(L, g, f), full, strrchr(full, ':') + 1);
        }
        for (int nb = 0; nb < L->NB; nb++)
            for (int op = 0; op < OP_BLOCK_COUNT; op++) {
                op_name(g, nb, op, 0, full, sizeof full);
                put_event_meta(out, host_block_op_meta(L, g, nb, op), full,
                               strrchr(full, ':') + 1);
            }
    }
    for (int st = 1; st < HS_COUNT; st++) put_stat_meta(out, st, host_stats[st]);
    wire_frame_close(out, pl);
}

/* ==== /device:GPU:N ======================================================= */

static void kernel_event(struct writer *w, const struct layout *L, int k, int64_t off,
                         uint64_t corr, uint64_t tf_op_ref, uint64_t shape_ref,
                         const char *ctx) {
    ev_begin(w, (uint32_t)(GE_KERNEL0 + k), off, L->kdur[k]);
    st_u64(w, GS_CORRELATION_ID, corr);
    st_ref(w, GS_KERNEL_DETAILS, REF_KDETAILS(k));
    st_ref(w, GS_TF_OP, tf_op_ref);
    st_ref(w, GS_SHAPE, shape_ref);
    st_str(w, GS_CONTEXT_ID, ctx);
    ev_end(w);
}

static void memcpy_event(struct writer *w, uint32_t meta, int64_t off, int64_t dur,
                         uint64_t corr, uint64_t details_ref, uint64_t tf_op_ref,
                         const char *ctx) {
    ev_begin(w, meta, off, dur);
    st_u64(w, GS_CORRELATION_ID, corr);
    st_ref(w, GS_MEMCPY_DETAILS, details_ref);
    st_ref(w, GS_TF_OP, tf_op_ref);
    st_str(w, GS_CONTEXT_ID, ctx);
    ev_end(w);
}

static int64_t dev0(const struct layout *L, int s) {
    return L->T[s] + 32 * US + L->W[s] + L->H;
}

static void gpu_plane(struct writer *w, const struct layout *L, int g) {
    xpv_buf *out = w->out;
    char name[64], ctx[16], full[256];
    int R = L->R;
    snprintf(ctx, sizeof ctx, "$$%d", g + 1);
    size_t pl = wire_frame_open(out, 1);
    if (g) wire_put_uint(out, 1, (uint64_t)g);
    snprintf(name, sizeof name, "/device:GPU:%d", g);
    wire_put_str(out, 2, name);

    /* Compute stream: the 8R block kernels of every step. */
    snprintf(name, sizeof name, "Stream #%d(Kernel)", 7 + 20 * g);
    size_t ln = line_open(w, 7 + 20 * g, name, LINE_TS_NS);
    for (int s = 0; s < L->S; s++) {
        int64_t t = dev0(L, s);
        int kj = 1;
        for (int pass = 0; pass < 2; pass++)
            for (int bi = 0; bi < R; bi++) {
                int b = pass == 0 ? bi : R - 1 - bi;
                int nb = b % L->NB;
                for (int op = pass == 0 ? OP_F0 : OP_B0; op <= (pass == 0 ? OP_F3 : OP_B2); op++)
                    for (int kk = 0; kk < ops[op].nkernels; kk++) {
                        int k = ops[op].k0 + kk;
                        kernel_event(w, L, k, t, correlation_id(L, s, g, kj++),
                                     REF_BLOCK_OP(nb, op), REF_SHAPE(op), ctx);
                        t += L->kdur[k] + 2 * US;
                    }
            }
    }
    line_close(w, ln, NULL);

    snprintf(name, sizeof name, "Stream #%d(MemcpyH2D)", 8 + 20 * g);
    ln = line_open(w, 8 + 20 * g, name, LINE_TS_NS);
    for (int s = 0; s < L->S; s++)
        memcpy_event(w, GE_H2D, L->T[s] + 30 * US + L->W[s], L->H, correlation_id(L, s, g, 0),
                     REF_MEMCPY_H2D, REF_FIXED_OP(FX_RECV), ctx);
    line_close(w, ln, NULL);

    snprintf(name, sizeof name, "Stream #%d(MemcpyD2H)", 9 + 20 * g);
    ln = line_open(w, 9 + 20 * g, name, LINE_TS_NS);
    for (int s = 0; s < L->S; s++)
        memcpy_event(w, GE_D2H, dev0(L, s) + L->Kc + L->N + 2 * US, 10 * US,
                     correlation_id(L, s, g, 8 * R + 2), REF_MEMCPY_D2H, REF_FIXED_OP(FX_SEND),
                     ctx);
    line_close(w, ln, NULL);

    snprintf(name, sizeof name, "Stream #%d(Kernel)", 11 + 20 * g);
    ln = line_open(w, 11 + 20 * g, name, LINE_TS_NS);
    for (int s = 0; s < L->S; s++)
        kernel_event(w, L, K_NCCL, dev0(L, s) + L->Kc, correlation_id(L, s, g, 8 * R + 1),
                     REF_FIXED_OP(FX_NCCL), REF_SHAPE(OP_BLOCK_COUNT), ctx);
    line_close(w, ln, NULL);

    /* Metadata: kernels, copies, stat names, then the ref strings. */
    for (int k = 0; k < K_COUNT; k++) put_event_meta(out, GE_KERNEL0 + k, kernels[k].name, NULL);
    put_event_meta(out, GE_H2D, "MemcpyH2D", NULL);
    put_event_meta(out, GE_D2H, "MemcpyD2H", NULL);
    for (int st = 1; st < GS_REFS; st++) put_stat_meta(out, st, gpu_stats[st]);
    for (int k = 0; k < K_COUNT; k++) put_stat_meta(out, REF_KDETAILS(k), kernels[k].details);
    for (int op = 0; op < OP_BLOCK_COUNT; op++) put_stat_meta(out, REF_SHAPE(op), ops[op].shape);
    put_stat_meta(out, REF_SHAPE(OP_BLOCK_COUNT), nccl_shape);
    snprintf(full, sizeof full, "kind_src:pinned kind_dst:device size:%lld dest:%d async:1",
             96 * MiB, g);
    put_stat_meta(out, REF_MEMCPY_H2D, full);
    snprintf(full, sizeof full, "kind_src:device kind_dst:pageable size:4 dest:%d async:1", g);
    put_stat_meta(out, REF_MEMCPY_D2H, full);
    for (int f = 0; f < FX_COUNT; f++) {
        op_name(g, 0, f, 1, full, sizeof full);
        put_stat_meta(out, REF_FIXED_OP(f), full);
    }
    for (int nb = 0; nb < L->NB; nb++)
        for (int op = 0; op < OP_BLOCK_COUNT; op++) {
            op_name(g, nb, op, 0, full, sizeof full);
            put_stat_meta(out, REF_BLOCK_OP(nb, op), full);
        }

    /* Device capabilities of a V100-SXM2-16GB, int and uint as TF writes them. */
    plane_stat_varint(out, GS_CLOCK_RATE, 4, 1530000);
    plane_stat_varint(out, GS_CORE_COUNT, 4, 80);
    plane_stat_varint(out, GS_MEMORY_BANDWIDTH, 3, 898048000000ULL);
    plane_stat_varint(out, GS_MEMORY_SIZE, 3, 16945512448ULL);
    plane_stat_varint(out, GS_CC_MAJOR, 4, 7);
    plane_stat_varint(out, GS_CC_MINOR, 4, 0);
    plane_stat_str(out, GS_DEVICE_VENDOR, "Nvidia");
    plane_stat_str(out, GS_DEVICE_NAME, "Tesla V100-SXM2-16GB");
    wire_frame_close(out, pl);
}

static void task_env_plane(xpv_buf *out, const struct layout *L) {
    uint64_t start = PROFILE_EPOCH_NS + (uint64_t)L->h * 1000000ULL;
    uint64_t stop = start + (uint64_t)LINE_TS_NS + (uint64_t)(L->end / 1000) + 1000000ULL;
    size_t pl = wire_frame_open(out, 1);
    wire_put_str(out, 2, "Task Environment");
    put_stat_meta(out, 1, "profile_start_time");
    put_stat_meta(out, 2, "profile_stop_time");
    plane_stat_varint(out, 1, 3, start);
    plane_stat_varint(out, 2, 3, stop);
    wire_frame_close(out, pl);
}

/* ==== Public API ========================================================== */

void xpv_synth_defaults(xpv_synth_opts *o) {
    if (!o->size_bytes) o->size_bytes = 2000000;
    if (o->hosts <= 0) o->hosts = 1;
    if (o->steps <= 0) o->steps = 10;
    if (o->gpus <= 0) o->gpus = 1;
    if (!o->seed) o->seed = 1;
}

void xpv_synth_hostname(const xpv_synth_opts *o, int host_index, char *buf, size_t n) {
    xpv_synth_opts d = *o;
    xpv_synth_defaults(&d);
    if (d.hosts == 1) snprintf(buf, n, "localhost");
    else snprintf(buf, n, "worker%d", host_index);
}

int xpv_synth_host(const xpv_synth_opts *opts, int host_index, xpv_buf *out) {
    xpv_synth_opts o = *opts;
    xpv_synth_defaults(&o);
    if (host_index < 0 || host_index >= o.hosts || o.gpus > 1024) return -1;
    if (xpv_synth_estimate(&o) > SIZE_MAX_HOST) return -1;
    struct layout L;
    layout_init(&L, &o, host_index);
    struct writer w = {out, {NULL, 0, 0}};
    xpv_buf_reserve(&w.ev, 1024);
    /* Reserve the expected size up front (untouched pages cost nothing) so
     * a large profile is not copied by repeated doubling. */
    uint64_t est = xpv_synth_estimate(&o);
    xpv_buf_reserve(out, (size_t)(est + est / 8 + 65536));

    host_plane(&w, &L);
    for (int g = 0; g < o.gpus; g++) gpu_plane(&w, &L, g);
    task_env_plane(out, &L);
    char host[64];
    xpv_synth_hostname(&o, host_index, host, sizeof host);
    wire_put_str(out, 4, host);

    xpv_buf_free(&w.ev);
    layout_release(&L);
    return 0;
}

/* mkdir -p for `path` (which must be writable). */
static int mkdirs(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        int rc = mkdir(path, 0755);
        *p = '/';
        if (rc != 0 && errno != EEXIST) return -1;
    }
    if (mkdir(path, 0755) != 0 && errno != EEXIST) return -1;
    return 0;
}

static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t k = write(fd, p, n > (1u << 30) ? (1u << 30) : n);
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

int xpv_synth_logdir(const xpv_synth_opts *opts, const char *out_dir, const char *run,
                     char *err, size_t errlen) {
    xpv_synth_opts o = *opts;
    xpv_synth_defaults(&o);
    char runbuf[64], dir[4096], path[4200], tmp[4300], host[64];
    int ret = -1;
    xpv_buf b;
    xpv_buf_init(&b);

    if (!run) {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        strftime(runbuf, sizeof runbuf, "%Y_%m_%d_%H_%M_%S", &tm);
        run = runbuf;
    }
    if (!*run || strstr(run, "..")) {
        snprintf(err, errlen, "invalid run name '%s'", run);
        return -1;
    }
    if ((size_t)snprintf(dir, sizeof dir, "%s/plugins/profile/%s", out_dir, run) >= sizeof dir) {
        snprintf(err, errlen, "output path too long");
        return -1;
    }
    if (mkdirs(dir) != 0) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    for (int h = 0; h < o.hosts; h++) {
        b.len = 0;
        if (xpv_synth_host(&o, h, &b) != 0) {
            snprintf(err, errlen, "cannot generate host %d: ~%llu bytes is over the %llu limit",
                     h, (unsigned long long)xpv_synth_estimate(&o),
                     (unsigned long long)SIZE_MAX_HOST);
            goto cleanup;
        }
        xpv_synth_hostname(&o, h, host, sizeof host);
        snprintf(path, sizeof path, "%s/%s.xplane.pb", dir, host);
        snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) {
            snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
            goto cleanup;
        }
        int wrc = write_all(fd, b.data, b.len);
        if (close(fd) != 0) wrc = -1;
        if (wrc != 0) {
            snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
            unlink(tmp);
            goto cleanup;
        }
        if (rename(tmp, path) != 0) {
            snprintf(err, errlen, "cannot rename %s: %s", tmp, strerror(errno));
            unlink(tmp);
            goto cleanup;
        }
    }
    ret = 0;
cleanup:
    xpv_buf_free(&b);
    return ret;
}
