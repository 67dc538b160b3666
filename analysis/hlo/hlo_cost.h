/*
 * hlo_cost.h - XLA's cost analysis of an HLO instruction as XProf runs it
 * for GPU XLA ops (xprof/utils/xprof_gpu_cost_analysis.cc over XLA's
 * GpuHloCostAnalysis and HloCostAnalysis; xprof/utils/hlo_module_map.cc,
 * hlo_cost_analysis_wrapper.cc, op_utils.cc DeviceOpMetricsDbBuilder).
 *
 * XProf fills a GPU XLA op's flops, model flops and bytes accessed from the
 * program's HLO proto: per occurrence, the instruction's device flops when
 * above 0 (else the kernels' `flops` stat), its flop count as model flops
 * (else the device figure), its bytes accessed when above 0 (else the
 * kernels' `bytes_accessed` stat); each times the occurrences.  The rules
 * of the cost analysis are written out in hlo_cost.c.
 */
#ifndef XPV_HLO_COST_H
#define XPV_HLO_COST_H

#include <stdint.h>

#include "hlo.h"
#include "op_metrics.h"

/* What XProf's PerformanceInfo says of one instruction: XLA's property
 * values read back as int64 and passed through ValidHloCost (-1, "no
 * cost", becomes 0). */
typedef struct xpv_hlo_cost {
    int64_t model_flops;    /* flop_count */
    int64_t device_flops;   /* flop_count - the low-bit-width adjustment */
    int64_t bytes_accessed;
    int64_t work;           /* units of the work budget spent (tests) */
} xpv_hlo_cost;

/* The cost of instruction `in` of decoded program `p` under XProf's GPU
 * cost analysis.  Never fails: unknown instructions cost 0. */
xpv_hlo_cost xpv_hlo_gpu_cost(const xpv_hlo_program *p, xpv_hlo_instr in);

/* An xpv_om_cost_fn (op_metrics.h) over an xpv_hlo_map: fills a GPU XLA
 * op row's flops / model flops / bytes from its program's HLO proto as
 * XProf's DeviceOpMetricsDbBuilder::EnterOp does (rows of programs
 * without a proto, or whose instruction is not there, are left alone). */
void xpv_hlo_gpu_cost_row(void *hlo_map, xpv_op_metric *row);

#endif /* XPV_HLO_COST_H */
