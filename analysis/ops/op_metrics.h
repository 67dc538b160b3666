/*
 * op_metrics.h - XProf's op metrics databases and GPU kernel stats.
 *
 * Built once per (run, host set) from const profiles (xpv_op_metrics_build)
 * and cached by the server as the derived kind "op_metrics"; the op_stats
 * intermediate and the framework_op_stats / kernel_stats / overview tools
 * read it.  Algorithms follow xprof-reference.md §2.4 and §2.9:
 *
 *   host       host op db: TF ops (`name:Type` events or a `tf_op` stat),
 *              tf.data iterators (type "Dataset"), JAX ops, memcpy ops and
 *              input-pipeline stages on every non-derived line of the
 *              `/host:*` planes.  Self time = time - direct children.  One
 *              IDLE row per db (line span - sum of self times, summed over
 *              lines).
 *   device     device op db: every non-derived line of `/device:GPU:*`
 *              planes.  TF kernels (tf_op stat) -> "<tf op>/<kernel>";
 *              XLA kernels (hlo_op stat) -> innermost HLO op name, with
 *              consecutive events of the same HLO op merged into one
 *              occurrence.  Plus one IDLE row (plane span - sum of self).
 *              TPU cores (`/device:TPU:N`, XProf
 *              ConvertTensorCoreDeviceTraceXPlaneToOpMetricsDb): events of
 *              the `XLA Ops` / `Framework Ops` / `Sparse Core Ops` lines,
 *              keyed by their metadata's program_id + symbol_id (missing
 *              either, or symbol_id 0: dropped); time from the
 *              device_offset_ps / device_duration_ps stats when present;
 *              self = time - direct children (ancestor stack); name = the
 *              metadata's display name, category `hlo_category`,
 *              provenance `tf_op`, flops / bytes from metadata stats times
 *              occurrences (not custom-calls).  Span per core = last op
 *              (or `Steps` event) end - first start; rows of all cores
 *              combined by (program id, name).  Not done: SparseCore
 *              planes (offloaded children); the duty cycle unions cores
 *              per core, not per chip (XProf reads the chip from the
 *              core_details plane stat).
 *   device_tf  TF-level device db: device ops grouped by the framework op
 *              they came from (provenance); IDLE kept.
 *   kernels    kernel reports (§2.9), sorted by total duration, top 1000.
 *
 * Steps: unlike XProf's TPU path, device ops are NOT filtered to steps;
 * every captured event counts (documented simplification; XProf's GPU path
 * does the same).  All times are picoseconds unless named _ns.
 * Multi-host: dbs are summed op by op (XProf's CombineOpMetricsDb); kernel
 * reports are merged by key, then re-sorted and cut to 1000.
 */
#ifndef XPV_OP_METRICS_H
#define XPV_OP_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "analysis.h"

/* One row of an op metrics db.  Strings are NUL-terminated, owned by the
 * xpv_op_metrics arena. */
typedef struct xpv_op_metric {
    const char *name;        /* op name ("IDLE" for the idle row) */
    const char *category;    /* op type ("IDLE", "MatMul", "Dataset", ...) */
    const char *provenance;  /* device ops: the full framework op
                              * ("scope/op:Type"), or "" */
    const char *long_name;   /* TPU ops: the HLO text (the event metadata's
                              * name when it has a display name), or "" */
    int64_t program_id;      /* device XLA ops: the program (HLO module) id
                              * (an unsigned value kept in 64 bits), or 0 */
    int64_t occurrences;     /* 0 for IDLE */
    int64_t time_ps;         /* inclusive time, summed over occurrences */
    int64_t self_time_ps;    /* time minus direct children */
    int64_t min_time_ps;     /* shortest occurrence (0 for IDLE) */
    double flops;            /* TPU: metadata `flops` stats; GPU XLA ops:
                              * XLA's cost analysis of the instruction
                              * (hlo_cost.h, via op_stats), else the
                              * kernels' `flops` stats; else 0 */
    double model_flops;
    double bytes_accessed;   /* the same sources, `bytes_accessed` */
    int is_eager;            /* 1 when any occurrence was eager */
    int is_idle;
} xpv_op_metric;

typedef struct xpv_op_metrics_db {
    xpv_op_metric *ops;      /* sorted: self time desc, then name asc */
    size_t n;
    int64_t total_time_ps;   /* span of the captured activity (with idle) */
    int64_t total_op_time_ps;/* sum of self times of the non-idle ops */
} xpv_op_metrics_db;

/* One row of the kernel stats db (XProf KernelReport). */
typedef struct xpv_kernel_report {
    const char *name;        /* kernel (event metadata) name */
    const char *op_name;     /* framework op name, or "" */
    uint32_t registers_per_thread;
    uint32_t static_shmem_bytes;
    uint32_t dynamic_shmem_bytes;
    uint32_t block[3];
    uint32_t grid[3];
    double occupancy_pct;    /* theoretical occupancy, 0 when unknown */
    int is_kernel_using_tensor_core;
    int is_op_tensor_core_eligible;
    uint64_t occurrences;
    uint64_t total_duration_ns;
    uint64_t min_duration_ns;
    uint64_t max_duration_ns;
} xpv_kernel_report;

/* Peak bandwidths of XProf's PerfEnv.peak_bws_giga_bytes_per_second, in
 * its order (MemBwType). */
enum xpv_mem_bw {
    XPV_BW_HBM = 0,
    XPV_BW_SRAM_RD,          /* GPU: shared memory / L1 */
    XPV_BW_SRAM_WR,
    XPV_BW_CMEM_RD,          /* TPU only, below */
    XPV_BW_CMEM_WR,
    XPV_BW_VMEM_RD,
    XPV_BW_VMEM_WR,
    XPV_BW_N
};

/* Device peak figures (XProf PerfEnv, GetPerfEnvFromXPlane) used for the
 * roofline columns: TPU from the core plane's stats, GPU from the plane
 * stats when present, else from the device capabilities (roofline.h). */
typedef struct xpv_perf_env {
    double peak_tera_flops_per_second;   /* 0 when unknown */
    double peak_hbm_bw_giga_bytes_per_second;    /* = peak_bws[XPV_BW_HBM] */
    double peak_shm_l1_bw_giga_bytes_per_second; /* GPU: = peak_bws[SRAM_RD] */
    double peak_bws[XPV_BW_N];           /* GB/s, 0 when unknown */
    int nbws;                            /* entries XProf's env has: 7 TPU,
                                          * 3 GPU, 0 no device plane */
    int has_cmem, has_merged_vmem, has_megacore;  /* TPU */
} xpv_perf_env;

typedef struct xpv_op_metrics {
    xpv_op_metrics_db host;
    xpv_op_metrics_db device;
    xpv_op_metrics_db device_tf;
    xpv_kernel_report *kernels;   /* top 1000 by total duration */
    size_t nkernels;
    /* Before the top-1000 cut: every kernel event counted (tests check
     * these against the file). */
    uint64_t kernel_events;
    uint64_t kernel_total_ns;
    int has_gpu;                  /* some plane is `/device:GPU:*` */
    int has_tpu;                  /* some plane is a `/device:TPU:N` core */
    /* TPU duty cycle (XProf DutyCycleTracker, per core, summed): busy =
     * union of on-duty op events (IsOffDutyOp categories excluded), idle =
     * the span of op and module events minus busy. */
    int64_t tpu_busy_ps, tpu_idle_ps;
    int has_device_ops;           /* device db has a non-idle op */
    /* GPU planes with kernel details whose `occupancy_kind` says
     * "achieved" / anything else (kernel stats' occupancy column). */
    int occupancy_achieved, occupancy_theoretical;
    char device_type[64];         /* "GPU", "CPU", "TPU" or a GPU model */
    xpv_perf_env perf;
    xpv_arena arena;              /* every string and array above */
} xpv_op_metrics;

/* Whether the profile looks like training (XProf's ModelTracker over op
 * names): a TF name scope "gradients"/"gradient_tape" or a JAX scope
 * "transpose(" in some framework op of the host or device db.  The
 * overview's is_training and TF stats' task_type both read it. */
int xpv_op_metrics_is_training(const xpv_op_metrics *m);

/* Build every db for the hosts of `hs` (n >= 1).  Never fails on odd
 * data (unknown events are skipped); returns NULL only when `hs` is empty,
 * filling err.  The result owns no reference to the profiles. */
xpv_op_metrics *xpv_op_metrics_build(const xpv_hostset *hs,
                                     xpv_err *err);
void xpv_op_metrics_free(xpv_op_metrics *m);
/* Bytes held by `m` (for the cache budget). */
size_t xpv_op_metrics_size(const xpv_op_metrics *m);

/* The same in two steps, so that a run's hosts can be analysed one at a
 * time: a part per host profile (owns its memory, no pointer into the
 * profile), then the parts combined in host order (NULL parts skipped).
 * xpv_op_metrics_build() is exactly combine(part(host) for each host): the
 * combined tables hold the rows one pass over every host would make, in
 * the same order; flops and bytes are summed per host first (as XProf's
 * CombineOpMetricsDb does), which is exact for integer counts. */
typedef struct xpv_om_part xpv_om_part;
xpv_om_part *xpv_op_metrics_part_build(const xpv_profile *p);
void xpv_op_metrics_part_free(xpv_om_part *pt);
size_t xpv_op_metrics_part_size(const xpv_om_part *pt);
/* The result owns no reference to the parts. */
xpv_op_metrics *xpv_op_metrics_combine(const xpv_om_part *const *parts, size_t n);
/* The same, with `cost(ctx, row)` called on every GPU device op row once
 * the hosts are combined and before the TF-level db is derived from them
 * (op_stats fills XLA ops' flops and bytes from the HLO protos there:
 * hlo_cost.h).  Not called on TPU rows (their costs come from the file). */
typedef void (*xpv_om_cost_fn)(void *ctx, xpv_op_metric *row);
xpv_op_metrics *xpv_op_metrics_combine_costed(const xpv_om_part *const *parts, size_t n,
                                              xpv_om_cost_fn cost, void *ctx);

/* ==== Helpers shared with other converters ============================== */

/* XProf's ParseTfOpFullname (xplane-format.md §8). */
enum xpv_op_category {
    XPV_OP_UNKNOWN = 0,
    XPV_OP_TENSORFLOW,
    XPV_OP_JAX,
    XPV_OP_TFDATA,
    XPV_OP_MEMCPY,
    XPV_OP_PYTORCH,          /* a PyTorch cpu_op (from a Chrome trace) */
};
typedef struct xpv_tf_op {
    int category;            /* enum xpv_op_category */
    xpv_str name;            /* op name (slice of the input) */
    xpv_str type;            /* op type (slice of the input, or a literal) */
} xpv_tf_op;
xpv_tf_op xpv_parse_tf_op(xpv_str fullname);

/* 1 when the kernel name marks a TensorCore kernel (§2.9 list). */
int xpv_kernel_uses_tensor_core(xpv_str kernel_name);
/* 1 when the framework op is TensorCore-eligible by name (§2.9). */
int xpv_op_is_tensor_core_eligible(xpv_str op_name);

/* Parse a kernel_details string (new `static_shared:`/`dynamic_shared:`
 * or old `shm:` format) into `r` (registers, shmem, grid, block, occ).
 * Unknown tokens are ignored; grid/block default to 1,1,1. */
void xpv_parse_kernel_details(xpv_str details, xpv_kernel_report *r);

/* A GPU copy's `memcpy_details` stat.  Formats seen in captures:
 *   XLA CUPTI   "kind_src:pinned kind_dst:device size:4096 dest:0 async:1"
 *   TF 2.x      "size:4096 dest:0 async:1"
 *   ROCm        "kind:Unknown size:0 dest:512 async:1"
 *   XProf's own parser reads "num_bytes:<n>" (newline-separated pairs).
 * Direction comes from `kind_src`/`kind_dst` memory kinds (pageable and
 * pinned are host memory; device, device_static and array are device
 * memory) or from a `kind:` value naming it (HtoD, DtoH, DtoD, PtoP, HtoH
 * and their 2/To spellings). */
enum xpv_memcpy_kind {
    XPV_MEMCPY_UNKNOWN = 0,
    XPV_MEMCPY_H2D,
    XPV_MEMCPY_D2H,
    XPV_MEMCPY_D2D,
    XPV_MEMCPY_P2P,
    XPV_MEMCPY_H2H,
};
typedef struct xpv_memcpy_info {
    int kind;                /* enum xpv_memcpy_kind */
    int64_t bytes;           /* `size:` or `num_bytes:`; -1 when absent */
    int64_t dest;            /* destination device; -1 when absent */
    int async;               /* 0/1; -1 when absent */
} xpv_memcpy_info;

/* Parse `details` into `out`.  Unknown tokens are ignored.  Returns 1 when
 * some field was recognised, else 0 (out then holds the "absent" values). */
int xpv_parse_memcpy_details(xpv_str details, xpv_memcpy_info *out);

/* Fraction of idle time in a db: 1 - total_op_time / total_time
 * (XProf IdleTimeRatio; 1.0 when total_time is 0). */
double xpv_op_metrics_idle_ratio(const xpv_op_metrics_db *db);

#endif /* XPV_OP_METRICS_H */
