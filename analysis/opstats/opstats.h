/*
 * opstats.h - XProf's OpStats: the intermediate shared by the overview
 * page and the input pipeline analyzer (xprof-reference.md §2.0).
 *
 * Built once per (run, host set) by the server's cache as the derived kind
 * "op_stats": the combined step database (steps.h, intersected over
 * hosts), the op metrics databases (op_metrics.h), the run environment and
 * the capture diagnostics (XSpace errors / warnings).  The generic input
 * pipeline analysis (§2.6) is computed from it by xpv_ipa_compute() and
 * written by the xpv_ipa_write_* functions, which both tools use, so the
 * overview's step table is byte for byte the analyzer's.
 */
#ifndef XPV_OPSTATS_H
#define XPV_OPSTATS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "datatable.h"
#include "hlo.h"
#include "op_metrics.h"
#include "steps.h"
#include "analysis.h"

/* XProf's HardwareType, in its enum order (CombineRunEnvironment keeps
 * the highest). */
enum xpv_hw { XPV_HW_UNKNOWN = 0, XPV_HW_CPU_ONLY = 1, XPV_HW_GPU = 2, XPV_HW_TPU = 3 };

/* XProf ParseHardwareType: what a device type string names ("GPU" in it,
 * exactly "CPU", "TPU" in it, else unknown). */
int xpv_parse_hardware_type(const char *device_type);
/* XProf HardwareType_Name: "UNKNOWN_HARDWARE", "CPU_ONLY", "GPU", "TPU". */
const char *xpv_hardware_type_name(int hw);

/* XProf GpuModelName of a GPU plane's device capabilities, into out[n]
 * ("" for a vendor other than "Nvidia" / "AMD"). */
void xpv_gpu_model_name(const xpv_plane *pl, char *out, size_t n);

typedef struct xpv_op_stats {
    xpv_step_db steps;           /* combined over the hosts */
    xpv_op_metrics *ops;         /* never NULL after a successful build */
    /* The HLO protos of the hosts, indexed (decoded lazily by the tools
     * that read them; never NULL after a successful build). */
    xpv_hlo_map *hlo;
    /* Run environment (XProf RunEnvironment). */
    int host_count;
    int task_count;
    int device_core_count;       /* GPU (or TPU) planes over all hosts */
    /* XProf's device type: a GPU model name ("Nvidia GPU (Volta)", "AMD
     * GPU - gfx942", "GPU" for an unknown vendor), a TPU plane's
     * device_type_string ("TPU v6 Lite", "" without it) or "CPU". */
    char device_type[64];
    int hw;                      /* enum xpv_hw: the highest over hosts */
    const char *hardware_type;   /* hw's name: "GPU", "TPU" or "CPU_ONLY" */
    /* XProf's performance counter result, from the `/host:CPU` plane
     * stats matrix_unit_utilization_percent and hbm_utilization_percent
     * (double values): one host's own; over several hosts the MXU figure
     * is the mean over every host (0 where absent: CombineAllOpStats) and
     * HBM is 0 (CombineOpStats does not combine it). */
    double mxu_utilization_percent, hbm_utilization_percent;
    /* XSpace errors / warnings of every host (each host's distinct texts,
     * hosts appended in order), NUL-terminated. */
    const char **errors;
    size_t nerrors;
    const char **warnings;
    size_t nwarnings;
    /* Each host's own steps (host order; NULL for a host without a
     * profile), as the pod viewer shows them. */
    const xpv_step_db **host_steps;
    struct xpv_host_stats **own_parts;  /* xpv_op_stats_build's, or NULL */
    size_t nown;
    xpv_arena arena;
} xpv_op_stats;

/* Build for the hosts of `hs` (n >= 1).  NULL (err filled) only when `hs`
 * is empty.  The result owns its memory. */
xpv_op_stats *xpv_op_stats_build(const xpv_hostset *hs, xpv_err *err);
void xpv_op_stats_free(xpv_op_stats *s);
size_t xpv_op_stats_size(const xpv_op_stats *s);

/* The same in two steps, so that a run's hosts are analysed one at a time
 * and their profiles released: what one host contributes (op metrics
 * part, steps, devices, errors, HLO protos: owns its memory, no pointer
 * into the profile; built with two threads), then the parts combined in
 * host order (NULL parts = hosts without a profile).  xpv_op_stats_build()
 * is exactly that.  The combined stats borrow the parts: keep them alive
 * as long as the result. */
typedef struct xpv_host_stats xpv_host_stats;
xpv_host_stats *xpv_host_stats_build(const xpv_profile *p);
void xpv_host_stats_free(xpv_host_stats *h);
size_t xpv_host_stats_size(const xpv_host_stats *h);
xpv_op_stats *xpv_op_stats_combine(const xpv_host_stats *const *parts, size_t n, xpv_err *err);

/* The derived kind wrapping the functions above ("op_stats", with
 * per-host parts). */
extern const xpv_derived_kind xpv_derived_op_stats;

/* ==== Generic input pipeline analysis (§2.6) ============================= */

typedef struct xpv_summary {
    double avg, sd, min, max;    /* sample standard deviation; 0s if empty */
} xpv_summary;

/* Per-step categories of the generic step table, in column order. */
enum xpv_ipa_cat {
    XPV_IPA_DEVICE_COMPUTE = 0,
    XPV_IPA_DEVICE_TO_DEVICE,
    XPV_IPA_DEVICE_COLLECTIVES,
    XPV_IPA_HOST_COMPUTE,
    XPV_IPA_KERNEL_LAUNCH,
    XPV_IPA_INPUT,
    XPV_IPA_OUTPUT,
    XPV_IPA_COMPILE,
    XPV_IPA_OTHER,
    XPV_IPA_NCATS
};

typedef struct xpv_ipa {
    const xpv_op_stats *os;
    xpv_summary step_time;       /* ms, per step the longest host */
    xpv_summary cat[XPV_IPA_NCATS]; /* ms */
    xpv_summary host_to_device;  /* ms */
    /* Bottleneck analysis, percent of the total step time. */
    double input_pct, output_pct, compute_pct, idle_pct;
    double kernel_launch_pct, all_other_pct, collectives_pct;
    const char *input_classification;     /* host/both/device/unknown */
    char input_statement[384];
    const char *kernel_launch_classification; /* high/moderate/no */
    char kernel_launch_statement[384];
    const char *all_other_classification;
    char all_other_statement[256];
    const char *collectives_classification;
    char collectives_statement[256];
    char summary_next_step[512];
    /* Host input time breakdown (µs). */
    double enqueue_us, demanded_file_read_us, advanced_file_read_us;
    double preprocessing_us, unclassified_non_enqueue_us;
    int tfdata_in_use;
    int64_t input_op_time_ps;    /* Σ self time of the input ops */
} xpv_ipa;

/* The op_stats a tool was handed as `derived` (borrowed), or NULL with a
 * 500 naming `tool` when it is missing. */
const xpv_op_stats *xpv_op_stats_need(const void *derived, const char *tool, xpv_err *err);

void xpv_ipa_compute(const xpv_op_stats *os, xpv_ipa *out);
/* Per-step value of a category, in ms. */
double xpv_ipa_step_cat_ms(const xpv_step *s, int cat);

/* The input pipeline's DataTables, each appended to `doc`: */
/* the generic step table (§2.6), as the overview embeds it too; */
void xpv_ipa_step_table(xpv_dt_doc *doc, const xpv_ipa *ipa);
/* host_input_ops_table; */
void xpv_ipa_input_ops_table(xpv_dt_doc *doc, const xpv_ipa *ipa);
/* recommendation_table (five fixed tf.data tips); */
void xpv_ipa_recommendation_table(xpv_dt_doc *doc);
/* the diagnostics table; `overview` adds the errors / device checks that
 * XProf's overview shows besides the step diagnostics. */
void xpv_ipa_diagnostics_table(xpv_dt_doc *doc, const xpv_op_stats *os, int overview);
/* Input op category ("Enqueue", "Preprocessing", ...) or NULL when the op
 * is not an input op. */
const char *xpv_input_op_category(const xpv_op_metric *m);

#endif /* XPV_OPSTATS_H */
