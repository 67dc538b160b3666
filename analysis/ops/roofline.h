/*
 * roofline.h - device peaks and the roofline figures of one op record,
 * shared by the roofline_model, hlo_stats (and any tool with a "bound by"
 * column).
 *
 * Follows XProf:
 *   peaks      xprof/convert/xplane_to_op_stats.cc GetPerfEnvFromXPlane:
 *              TPU core planes carry peak_teraflops_per_second and
 *              peak_{hbm,sram_rd,sram_wr,cmem_rd,cmem_wr,vmem_rd,vmem_wr}_bw_
 *              gigabytes_per_second, has_megacore, has_merged_vmem; GPU
 *              planes give the peak FLOP rate and SRAM bandwidths as stats
 *              when the backend wrote them, else they are derived from the
 *              device capabilities (xprof/utils/hardware_type_utils.cc:
 *              FLOP/cycle/SM of the compute capability (Nvidia) or of the
 *              gfx architecture (AMD) x clock x SM count; shared memory
 *              bytes/cycle x clock x SM count); HBM = memory_bandwidth.
 *   record     xprof/convert/op_metrics_to_record.h SetRooflineMetrics and
 *              op_stats_to_roofline_model.cc: rates over the inclusive time,
 *              FLOP rates in GFLOP/s, bandwidths in GiB/s, the bottleneck
 *              resource = the highest utilisation of its peak, roofline
 *              efficiency = max(FLOP utilisation, memory utilisation).
 * Not done: XProf splits bytes by memory space (HBM / CMEM / VMEM, read /
 * write) from XLA's cost analysis of the HLO; without that breakdown every
 * byte counts as HBM (XProf's rule for legacy profiles), so CMEM / VMEM
 * bandwidths are 0 and never the bottleneck.
 */
#ifndef XPV_ROOFLINE_H
#define XPV_ROOFLINE_H

#include <stdint.h>

#include "model.h"
#include "op_metrics.h"

/* Bytes per GiB over bytes per GB (XProf GigaToGibi divides by it). */
#define XPV_GIB_PER_GB (1073741824.0 / 1e9)

/* Merge the peaks of one device plane into `pe`: a field already known is
 * kept (the first plane that has it wins).  `gpu`: a /device:GPU: plane,
 * else a TPU core plane. */
void xpv_perf_env_read(xpv_perf_env *pe, const xpv_plane *pl, int gpu);

/* GPU peaks from device capabilities: FLOP/s in TFLOP/s and shared memory
 * / L1 bandwidth in GB/s, both 0 for an unknown vendor or architecture.
 * `gfx`: the AMD architecture ("gfx942"), or NULL / "" to infer it from the
 * compute capability. */
void xpv_gpu_peaks(int amd, int major, int minor, int cores, double clock_ghz, const char *gfx,
                   double *tflops, double *shm_gbps);

/* XProf GetMemoryPeakBandwidth: peak_bws[i] when the env has it, else the
 * HBM peak (GB/s). */
double xpv_perf_peak_bw(const xpv_perf_env *pe, int i);

/* XProf's category rules (tsl/profiler xla_op_utils.h). */
int xpv_category_may_have_inner_ops(const char *category); /* call, while, ... */
int xpv_category_is_infeed_outfeed(const char *category);

/* The roofline figures of one record (an op summed over its occurrences,
 * or a whole program). */
typedef struct xpv_roofline {
    double flop_rate;               /* GFLOP/s = flops / inclusive time */
    double model_flop_rate;         /* GFLOP/s */
    double memory_bw;               /* GiB/s, all bytes */
    double hbm_bw;                  /* GiB/s (= memory_bw, see above) */
    double operational_intensity;   /* FLOP / byte */
    double hbm_operational_intensity;
    double bottleneck_operational_intensity; /* of the bound_by resource */
    const char *bound_by;           /* "Compute", "HBM", "Shm/L1", "Unknown" */
    double flops_utilization;       /* flop_rate / peak (fraction) */
    double max_mem_utilization;     /* hbm_bw / peak HBM (fraction) */
    double roofline_efficiency;     /* max of the two */
    double optimal_flop_rate;       /* flop_rate / efficiency */
} xpv_roofline;

void xpv_roofline_compute(const xpv_perf_env *pe, int gpu, double flops, double model_flops,
                          double bytes, double time_ps, xpv_roofline *out);

/* XProf RidgePoint: peak GFLOP/s over a peak bandwidth in GiB/s (converted
 * back to GB/s); 0 when the bandwidth is 0. */
double xpv_ridge_point(double peak_gflops, double peak_gib);

#endif /* XPV_ROOFLINE_H */
