/*
 * roofline.c - device peaks and per-record roofline figures.  See
 * roofline.h for the XProf sources followed.
 */
#include <stdio.h>
#include <string.h>

#include "roofline.h"

static double safe_div(double a, double b) { return b != 0 ? a / b : 0.0; }

/* ==== Peaks ============================================================== */

/* FLOP per cycle per SM of the fastest of the fp32 / fp16 vector and
 * matrix units (XProf GetFlopMaxThroughputPerSM over its per-capability
 * tables), by compute capability major*1000 + minor*10. */
static const struct {
    int cc;
    double flops_per_cycle;
} NVIDIA_SM[] = {
    {2000, 64},   {3000, 384},  {5000, 256},  {6000, 256},  {6010, 256},  {7000, 1024},
    {7050, 1024}, {8000, 2048}, {8060, 1024}, {8090, 1024}, {9000, 4096}, {10000, 8192},
};

/* AMD per compute unit per cycle: FLOP (fastest fp32/fp16 unit) and LDS
 * bytes. */
static const struct {
    const char *gfx;
    double flops_per_cycle, lds_bytes_per_cycle;
} AMD_CU[] = {
    {"gfx908", 1024, 128},
    {"gfx90a", 2048, 128},
    {"gfx942", 2048, 128},
    {"gfx950", 4096, 256},
};

/* XProf's back-off: the highest known capability not above `cc`, or the
 * oldest one when `cc` is older than all. */
static double nvidia_flops_per_cycle(int major, int minor) {
    /* int64: a file's capability can be any int (fuzz: 399835136 * 10). */
    int64_t cc = (int64_t)major * 1000 + (int64_t)minor * 10;
    size_t n = sizeof NVIDIA_SM / sizeof NVIDIA_SM[0], best = 0;
    for (size_t i = 0; i < n; i++)
        if (NVIDIA_SM[i].cc <= cc) best = i;
    return NVIDIA_SM[best].flops_per_cycle;
}

/* The gfx architecture: the device name up to ':' ("gfx942:sramecc+"),
 * else the one compute capability that names it (XProf
 * ResolveAmdGfxVersion). */
static void amd_gfx(int major, int minor, const char *gfx, char *out, size_t n) {
    if (gfx && gfx[0]) {
        snprintf(out, n, "%.*s", (int)strcspn(gfx, ":"), gfx);
        return;
    }
    snprintf(out, n, "%s", major == 9 && minor == 4   ? "gfx942"
                           : major == 9 && minor == 5 ? "gfx950"
                                                      : "");
}

void xpv_gpu_peaks(int amd, int major, int minor, int cores, double clock_ghz, const char *gfx,
                   double *tflops, double *shm_gbps) {
    double flops = 0, shm = 0;
    if (amd) {
        char name[32];
        amd_gfx(major, minor, gfx, name, sizeof name);
        for (size_t i = 0; i < sizeof AMD_CU / sizeof AMD_CU[0]; i++)
            if (!strcmp(AMD_CU[i].gfx, name)) {
                flops = AMD_CU[i].flops_per_cycle;
                shm = AMD_CU[i].lds_bytes_per_cycle;
            }
    } else if (major > 0) {
        flops = nvidia_flops_per_cycle(major, minor);
        shm = major <= 2 ? 32 * 4 / 2 : 32 * 8;
    }
    /* per cycle x GHz = G per second per SM; x SMs; GFLOP/s -> TFLOP/s */
    *tflops = cores * flops * clock_ghz / 1000.0;
    *shm_gbps = cores * shm * clock_ghz;
}

static int plane_double(const xpv_plane *pl, const char *name, double *v) {
    xpv_stat st;
    int32_t id = xpv_stat_id(pl, name);
    return id >= 0 && xpv_plane_stat(pl, id, &st) && xpv_stat_as_double(&st, v);
}

static int plane_int(const xpv_plane *pl, const char *name, int64_t *v) {
    xpv_stat st;
    int32_t id = xpv_stat_id(pl, name);
    return id >= 0 && xpv_plane_stat(pl, id, &st) && xpv_stat_as_int(&st, v);
}

static xpv_str plane_str(const xpv_plane *pl, const char *name) {
    xpv_stat st;
    xpv_str none = {"", 0};
    int32_t id = xpv_stat_id(pl, name);
    if (id >= 0 && xpv_plane_stat(pl, id, &st) && st.kind == XPV_STAT_STR) return st.v.s;
    return none;
}

static void set_if_unset(double *dst, double v) {
    if (*dst == 0 && v > 0) *dst = v;
}

static void read_gpu_caps(xpv_perf_env *pe, const xpv_plane *pl) {
    int64_t major = 0, minor = 0, cores = 0, clock_khz = 0;
    plane_int(pl, "compute_cap_major", &major);
    plane_int(pl, "compute_cap_minor", &minor);
    plane_int(pl, "core_count", &cores);
    plane_int(pl, "clock_rate", &clock_khz);
    xpv_str vendor = plane_str(pl, "device_vendor");
    int amd = xpv_str_has_prefix(vendor, "AMD");
    int nvidia = xpv_str_has_prefix(vendor, "Nvidia") || xpv_str_has_prefix(vendor, "NVIDIA");
    if (!amd && !nvidia) return; /* XProf: unsupported vendor, peaks 0 */
    xpv_str dn = plane_str(pl, "gpu_device_name");
    char gfx[32] = "";
    if (amd && dn.len > 3 && !memcmp(dn.ptr, "gfx", 3))
        snprintf(gfx, sizeof gfx, "%.*s", (int)(dn.len < 31 ? dn.len : 31), dn.ptr);
    double tflops, shm;
    xpv_gpu_peaks(amd, (int)major, (int)minor, (int)cores, (double)clock_khz / 1e6, gfx, &tflops,
                  &shm);
    set_if_unset(&pe->peak_tera_flops_per_second, tflops);
    set_if_unset(&pe->peak_bws[XPV_BW_SRAM_RD], shm);
    set_if_unset(&pe->peak_bws[XPV_BW_SRAM_WR], shm);
}

void xpv_perf_env_read(xpv_perf_env *pe, const xpv_plane *pl, int gpu) {
    static const char *const bw_stats[XPV_BW_N] = {
        "peak_hbm_bw_gigabytes_per_second",     "peak_sram_rd_bw_gigabytes_per_second",
        "peak_sram_wr_bw_gigabytes_per_second", "peak_cmem_rd_bw_gigabytes_per_second",
        "peak_cmem_wr_bw_gigabytes_per_second", "peak_vmem_rd_bw_gigabytes_per_second",
        "peak_vmem_wr_bw_gigabytes_per_second",
    };
    double v;
    int64_t iv;
    if (pe->peak_tera_flops_per_second == 0 && plane_double(pl, "peak_teraflops_per_second", &v))
        pe->peak_tera_flops_per_second = v;
    int nb = gpu ? XPV_BW_SRAM_WR + 1 : XPV_BW_N;
    for (int i = 0; i < nb; i++)
        if (pe->peak_bws[i] == 0 && plane_double(pl, bw_stats[i], &v)) pe->peak_bws[i] = v;
    /* GPU HBM: the memory_bandwidth capability (bytes/s); also read on
     * other planes when the GB/s stat is absent. */
    if (pe->peak_bws[XPV_BW_HBM] == 0 && plane_double(pl, "memory_bandwidth", &v))
        pe->peak_bws[XPV_BW_HBM] = v / 1e9;
    if (gpu) read_gpu_caps(pe, pl);
    if (!gpu) {
        if (plane_int(pl, "has_megacore", &iv) && iv) pe->has_megacore = 1;
        if (plane_int(pl, "has_merged_vmem", &iv) && iv) pe->has_merged_vmem = 1;
        pe->has_cmem = pe->peak_bws[XPV_BW_CMEM_RD] > 0 || pe->peak_bws[XPV_BW_CMEM_WR] > 0;
    }
    if (pe->nbws < nb) pe->nbws = nb;
    pe->peak_hbm_bw_giga_bytes_per_second = pe->peak_bws[XPV_BW_HBM];
    pe->peak_shm_l1_bw_giga_bytes_per_second = gpu ? pe->peak_bws[XPV_BW_SRAM_RD] : 0;
}

double xpv_perf_peak_bw(const xpv_perf_env *pe, int i) {
    return i < pe->nbws ? pe->peak_bws[i] : pe->peak_bws[XPV_BW_HBM];
}

/* ==== Categories ========================================================= */

int xpv_category_may_have_inner_ops(const char *c) {
    return !strcmp(c, "call") || !strcmp(c, "conditional") || !strcmp(c, "while") ||
           !strcmp(c, "megacore fusion");
}

int xpv_category_is_infeed_outfeed(const char *c) {
    return strstr(c, "infeed") != NULL || strstr(c, "outfeed") != NULL;
}

/* ==== One record ========================================================= */

void xpv_roofline_compute(const xpv_perf_env *pe, int gpu, double flops, double model_flops,
                          double bytes, double time_ps, xpv_roofline *r) {
    double time_ns = time_ps / 1000.0;
    memset(r, 0, sizeof *r);
    r->flop_rate = safe_div(flops, time_ns);
    r->model_flop_rate = safe_div(model_flops, time_ns);
    r->memory_bw = safe_div(bytes, time_ns) / XPV_GIB_PER_GB;
    r->hbm_bw = r->memory_bw;
    r->operational_intensity = safe_div(flops, bytes);
    r->hbm_operational_intensity = r->operational_intensity;
    /* bound_by: the resource whose peak is the most used. */
    const char *res = "Unknown";
    double best = 0, best_oi = 0;
    double fu = safe_div(r->flop_rate, pe->peak_tera_flops_per_second * 1000.0);
    if (best < fu) {
        res = "Compute";
        best = fu;
        best_oi = r->operational_intensity;
    }
    double hu = safe_div(r->hbm_bw, xpv_perf_peak_bw(pe, XPV_BW_HBM) / XPV_GIB_PER_GB);
    if (best < hu) {
        res = "HBM";
        best = hu;
        best_oi = r->hbm_operational_intensity;
    }
    if (gpu) {
        double shm = xpv_perf_peak_bw(pe, XPV_BW_SRAM_WR);
        double su = safe_div(r->hbm_bw, shm / XPV_GIB_PER_GB);
        if (shm > 0 && best < su) {
            res = "Shm/L1";
            best = su;
            best_oi = r->hbm_operational_intensity;
        }
    }
    r->bound_by = res;
    r->bottleneck_operational_intensity = best_oi;
    /* Efficiency (op_stats_to_roofline_model.cc): CMEM / VMEM bytes are 0
     * here, so the memory utilisation is the HBM one. */
    r->flops_utilization = fu;
    r->max_mem_utilization = hu;
    r->roofline_efficiency = fu > hu ? fu : hu;
    r->optimal_flop_rate = safe_div(r->flop_rate, r->roofline_efficiency);
}

double xpv_ridge_point(double peak_gflops, double peak_gib) {
    return safe_div(peak_gflops, peak_gib * XPV_GIB_PER_GB);
}
