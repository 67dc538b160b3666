/*
 * opstats.c - the OpStats intermediate and the generic input pipeline
 * analysis shared by overview_page and input_pipeline_analyzer
 * (xprof-reference.md §2.3, §2.5, §2.6).  See opstats.h.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opstats.h"
#include "hlo_cost.h"
#include "par.h"

/* ==== Run environment ==================================================== */

/* XProf's FindTensorCorePlanes: a plane named exactly "/device:TPU:<digits>"
 * (kTpuPlaneRegex; SparseCore and non-core planes are not TensorCores). */
static int is_tensor_core_plane(xpv_str name) {
    static const char pre[] = "/device:TPU:";
    if (!xpv_str_has_prefix(name, pre)) return 0;
    for (uint32_t i = sizeof pre - 1; i < name.len; i++)
        if (name.ptr[i] < '0' || name.ptr[i] > '9') return 0;
    return 1;
}

/* rocm GfxVersionIfWellFormed: "gfx" followed by at least three hex
 * digits (the agent name rocprofiler-sdk reports), else nothing. */
static int gfx_well_formed(xpv_str s) {
    if (!xpv_str_has_prefix(s, "gfx") || s.len < 6) return 0;
    for (uint32_t i = 3; i < s.len; i++)
        if (!isxdigit((unsigned char)s.ptr[i])) return 0;
    return 1;
}

/* XProf GpuModelName (cuda_type_utils.cc / rocm_type_utils.cc) from the
 * plane's device capabilities: the vendor must be "Nvidia" or "AMD"
 * exactly; any other vendor (or none, as TF 2.4 wrote them) gives "" and
 * SetRunEnvironment then says "GPU".  AMD: the exact gfx architecture
 * from gpu_device_name, else from the compute capability (9.4 and 9.5
 * only), else the family of the major version. */
void xpv_gpu_model_name(const xpv_plane *pl, char *out, size_t n) {
    xpv_stat st;
    int32_t id;
    int64_t major = 0, minor = 0;
    xpv_str vendor = {"", 0}, dev_name = {"", 0};
    if ((id = xpv_stat_id(pl, "compute_cap_major")) >= 0 && xpv_plane_stat(pl, id, &st))
        xpv_stat_as_int(&st, &major);
    if ((id = xpv_stat_id(pl, "compute_cap_minor")) >= 0 && xpv_plane_stat(pl, id, &st))
        xpv_stat_as_int(&st, &minor);
    if ((id = xpv_stat_id(pl, "device_vendor")) >= 0 && xpv_plane_stat(pl, id, &st) &&
        st.kind == XPV_STAT_STR)
        vendor = st.v.s;
    if ((id = xpv_stat_id(pl, "gpu_device_name")) >= 0 && xpv_plane_stat(pl, id, &st) &&
        st.kind == XPV_STAT_STR)
        dev_name = st.v.s;
    const char *s = "";
    if (xpv_str_eq(vendor, "Nvidia")) {
        switch (major) {
        case 2: s = "Nvidia GPU (Fermi)"; break;
        case 3: s = "Nvidia GPU (Kepler)"; break;
        case 5: s = "Nvidia GPU (Maxwell)"; break;
        case 6: s = "Nvidia GPU (Pascal)"; break;
        case 7: s = minor < 5 ? "Nvidia GPU (Volta)" : "Nvidia GPU (Turing)"; break;
        case 8: s = minor < 9 ? "Nvidia GPU (Ampere)" : "Nvidia GPU (Ada Lovelace)"; break;
        case 9: s = "Nvidia GPU (Hopper)"; break;
        case 10: s = "Nvidia GPU (Blackwell)"; break;
        default: s = "Nvidia GPU"; break;
        }
    } else if (xpv_str_eq(vendor, "AMD")) {
        if (gfx_well_formed(dev_name)) {
            snprintf(out, n, "AMD GPU - %.*s", (int)dev_name.len, dev_name.ptr);
            return;
        }
        s = major == 9 && minor == 4   ? "AMD GPU - gfx942"
            : major == 9 && minor == 5 ? "AMD GPU - gfx950"
            : major == 9               ? "AMD GPU - gfx-9XX series"
            : major == 10              ? "AMD GPU - gfx-10XX series"
            : major == 11              ? "AMD GPU - gfx-11XX series"
                                       : "AMD GPU";
    }
    snprintf(out, n, "%s", s);
}

int xpv_parse_hardware_type(const char *device_type) {
    if (strstr(device_type, "GPU")) return XPV_HW_GPU;
    if (!strcmp(device_type, "CPU")) return XPV_HW_CPU_ONLY;
    if (strstr(device_type, "TPU")) return XPV_HW_TPU;
    return XPV_HW_UNKNOWN;
}

const char *xpv_hardware_type_name(int hw) {
    switch (hw) {
    case XPV_HW_CPU_ONLY: return "CPU_ONLY";
    case XPV_HW_GPU: return "GPU";
    case XPV_HW_TPU: return "TPU";
    default: return "UNKNOWN_HARDWARE";
    }
}

/* XProf SetRunEnvironment for one XSpace: GPU planes win (device type the
 * first GPU plane's model name, "GPU" when that is empty, one core per GPU
 * plane); else TensorCore planes (device type the first one's
 * device_type_string stat, "" without it); else "CPU" with no core. */
static void host_run_environment(const xpv_profile *p, char *type, size_t n, int *cores,
                                 int *hw) {
    const xpv_plane *first_gpu = NULL, *first_tpu = NULL;
    int ngpu = 0, ntpu = 0;
    for (uint32_t k = 0; k < p->nplanes; k++) {
        const xpv_plane *pl = &p->planes[k];
        if (xpv_str_has_prefix(pl->name, "/device:GPU:")) {
            if (!ngpu++) first_gpu = pl;
        } else if (is_tensor_core_plane(pl->name)) {
            if (!ntpu++) first_tpu = pl;
        }
    }
    if (ngpu) {
        xpv_gpu_model_name(first_gpu, type, n);
        if (!type[0]) snprintf(type, n, "GPU");
        *cores = ngpu;
        *hw = XPV_HW_GPU;
    } else if (ntpu) {
        xpv_stat st;
        int32_t id = xpv_stat_id(first_tpu, "device_type_string");
        type[0] = 0;
        if (id >= 0 && xpv_plane_stat(first_tpu, id, &st) && st.kind == XPV_STAT_STR)
            snprintf(type, n, "%.*s", (int)st.v.s.len, st.v.s.ptr);
        *cores = ntpu;
        *hw = XPV_HW_TPU;
    } else {
        snprintf(type, n, "CPU");
        *cores = 0;
        *hw = XPV_HW_CPU_ONLY;
    }
}

/* ==== Per-host parts ===================================================== */

struct xpv_host_stats {
    xpv_om_part *ops;
    xpv_step_db steps;
    /* XProf's RunEnvironment of this XSpace (host_run_environment). */
    char device_type[64];
    int device_core_count;
    int hw;                      /* enum xpv_hw */
    const char *hostname;        /* XSpace.hostnames[0], or NULL */
    double mxu, hbm;             /* host plane utilization stats, or 0 */
    /* XSpace errors / warnings, each text once (first-seen order). */
    const char **errors, **warnings;
    size_t nerrors, nwarnings;
    xpv_hlo_blob *protos;        /* copied out of the profile */
    size_t nprotos;
    xpv_arena arena;
};

/* The distinct strings of in[0..n) (XProf PropagateXSpaceDiagnosticsToOpStats
 * puts them in a set), copied into `a`, in the order first seen: XProf's
 * own order is a hash set's, so any fixed order is as faithful. */
static const char **unique_strs(xpv_arena *a, const xpv_str *in, uint32_t n, size_t *nout) {
    const char **out = xpv_arena_alloc(a, (n ? n : 1) * sizeof *out);
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        int dup = 0;
        for (uint32_t j = 0; j < i && !dup; j++)
            dup = in[j].len == in[i].len && (in[i].len == 0 || !memcmp(in[j].ptr, in[i].ptr, in[i].len));
        if (!dup) out[k++] = xpv_arena_strndup(a, in[i].ptr, in[i].len);
    }
    *nout = k;
    return out;
}

typedef struct ops_job {
    const xpv_profile *p;
    xpv_om_part *ops;
} ops_job;

static void ops_part(void *arg) {
    ops_job *j = arg;
    j->ops = xpv_op_metrics_part_build(j->p);
}

/* Everything of a host but its op metrics: devices, errors and warnings,
 * steps, HLO protos. */
typedef struct rest_job {
    const xpv_profile *p;
    xpv_host_stats *h;
} rest_job;

/* XProf ConvertXSpaceToOpStats: the first "/host:CPU" plane's
 * matrix_unit_utilization_percent and hbm_utilization_percent stats
 * (DoubleValue: a stat of another kind reads as 0). */
static void host_utilization(const xpv_profile *p, double *mxu, double *hbm) {
    *mxu = *hbm = 0;
    for (uint32_t k = 0; k < p->nplanes; k++) {
        const xpv_plane *pl = &p->planes[k];
        if (!xpv_str_eq(pl->name, "/host:CPU")) continue;
        xpv_stat st;
        int32_t id = xpv_stat_id(pl, "matrix_unit_utilization_percent");
        if (id >= 0 && xpv_plane_stat(pl, id, &st) && st.kind == XPV_STAT_DOUBLE) *mxu = st.v.d;
        id = xpv_stat_id(pl, "hbm_utilization_percent");
        if (id >= 0 && xpv_plane_stat(pl, id, &st) && st.kind == XPV_STAT_DOUBLE) *hbm = st.v.d;
        return;
    }
}

static void rest_part(void *arg) {
    rest_job *j = arg;
    const xpv_profile *p = j->p;
    xpv_host_stats *h = j->h;
    host_run_environment(p, h->device_type, sizeof h->device_type, &h->device_core_count,
                         &h->hw);
    h->hostname = p->nhostnames ? xpv_arena_strndup(&h->arena, p->hostnames[0].ptr,
                                                    p->hostnames[0].len)
                                : NULL;
    host_utilization(p, &h->mxu, &h->hbm);
    /* A capture lists an error or warning once per occurrence; XProf keeps
     * each text once per XSpace (hosts are not deduplicated). */
    h->errors = unique_strs(&h->arena, p->errors, p->nerrors, &h->nerrors);
    h->warnings = unique_strs(&h->arena, p->warnings, p->nwarnings, &h->nwarnings);
    xpv_steps_build(p, &h->arena, &h->steps);
    h->nprotos = xpv_hlo_list(p, &h->arena, &h->protos);
}

/* Below this many events one thread builds the host stats. */
#define OPSTATS_PARALLEL_MIN_EVENTS 200000

xpv_host_stats *xpv_host_stats_build(const xpv_profile *p) {
    xpv_host_stats *h = xpv_xcalloc(1, sizeof *h);
    xpv_arena_init(&h->arena, 64 * 1024);
    /* The op metrics and the rest read the same const profile and share
     * nothing else: build them on two threads (the machine this targets
     * has 2 cores; both passes cost about the same), unless the profile is
     * so small that starting a thread costs more than the work. */
    ops_job job = {p, NULL};
    rest_job rj = {p, h};
    xpv_par_run_if(p->nevents >= OPSTATS_PARALLEL_MIN_EVENTS, ops_part, &job, rest_part, &rj);
    h->ops = job.ops;
    return h;
}

void xpv_host_stats_free(xpv_host_stats *h) {
    if (!h) return;
    xpv_op_metrics_part_free(h->ops);
    xpv_arena_free(&h->arena);
    free(h);
}

size_t xpv_host_stats_size(const xpv_host_stats *h) {
    return h ? sizeof *h + h->arena.total + xpv_op_metrics_part_size(h->ops) : 0;
}

/* ==== Combined over the hosts ============================================ */

static void append_strs(xpv_op_stats *s, const char *const *in, size_t n, const char ***arr,
                        size_t *cnt) {
    if (!n) return;
    const char **na = xpv_arena_alloc(&s->arena, (*cnt + n) * sizeof *na);
    if (*cnt) memcpy(na, *arr, *cnt * sizeof *na);
    memcpy(na + *cnt, in, n * sizeof *na);
    *arr = na;
    *cnt += n;
}

xpv_op_stats *xpv_op_stats_combine(const xpv_host_stats *const *parts, size_t n, xpv_err *err) {
    if (n == 0) {
        if (err) {
            err->status = XPV_E_NOT_FOUND;
            snprintf(err->msg, sizeof err->msg, "no host profile to analyse");
        }
        return NULL;
    }
    xpv_op_stats *s = xpv_xcalloc(1, sizeof *s);
    xpv_arena_init(&s->arena, 64 * 1024);
    /* XProf CombineRunEnvironment, host after host: a device type other
     * than "CPU" (or "Device") replaces the combined one and adds its
     * cores; "CPU" only fills an empty one.  The hardware type is the
     * highest (TPU > GPU > CPU_ONLY). */
    int hw = XPV_HW_UNKNOWN;
    s->device_type[0] = 0;
    const xpv_step_db **pdbs = xpv_xmalloc(n * sizeof *pdbs);
    const xpv_om_part **ops = xpv_xmalloc(n * sizeof *ops);
    const xpv_hlo_blob **lists = xpv_xmalloc(n * sizeof *lists);
    size_t *counts = xpv_xmalloc(n * sizeof *counts);
    s->host_steps = xpv_arena_calloc(&s->arena, n, sizeof *s->host_steps);
    size_t ndb = 0;
    for (size_t i = 0; i < n; i++) {
        const xpv_host_stats *h = parts[i];
        ops[i] = h ? h->ops : NULL;
        lists[i] = h ? h->protos : NULL;
        counts[i] = h ? h->nprotos : 0;
        if (!h) continue;
        /* XProf counts hosts by name (CombineRunEnvironment: the set of
         * each XSpace's hostname), tasks by XSpace: two files of one
         * embedded hostname are 1 host with 2 tasks.  A file without one
         * gets its file's host name from XProf, distinct within a run:
         * counted as a host of its own here. */
        int seen = 0;
        for (size_t k = 0; h->hostname && k < i && !seen; k++)
            seen = parts[k] && parts[k]->hostname && !strcmp(parts[k]->hostname, h->hostname);
        if (!seen) s->host_count++;
        s->task_count++;
        if (strcmp(h->device_type, "CPU") && strcmp(h->device_type, "Device")) {
            snprintf(s->device_type, sizeof s->device_type, "%s", h->device_type);
            s->device_core_count += h->device_core_count;
        } else if (!s->device_type[0]) {
            snprintf(s->device_type, sizeof s->device_type, "%s", h->device_type);
        }
        if (h->hw > hw) hw = h->hw;
        s->mxu_utilization_percent += h->mxu;
        s->hbm_utilization_percent = h->hbm;
        append_strs(s, h->errors, h->nerrors, &s->errors, &s->nerrors);
        append_strs(s, h->warnings, h->nwarnings, &s->warnings, &s->nwarnings);
        s->host_steps[i] = &h->steps;
        pdbs[ndb++] = &h->steps;
    }
    /* CombineAllOpStats: one host is copied as it is; several sum their
     * MXU figures and divide by the host count, HBM is not combined. */
    if (s->task_count > 1) {
        s->mxu_utilization_percent /= s->task_count;
        s->hbm_utilization_percent = 0;
    }
    s->hw = hw;
    s->hardware_type = hw == XPV_HW_TPU ? "TPU" : hw == XPV_HW_GPU ? "GPU" : "CPU_ONLY";
    if (ndb == 1) s->steps = *pdbs[0];
    else if (ndb > 1) xpv_steps_intersect(pdbs, ndb, &s->arena, &s->steps);
    s->hlo = xpv_hlo_map_from_lists(lists, counts, n); /* index only */
    /* GPU XLA ops' flops and bytes from XLA's cost analysis of their
     * programs (decoding those programs now: XProf builds its HLO module
     * map with the op stats). */
    s->ops = xpv_op_metrics_combine_costed(ops, n, xpv_hlo_gpu_cost_row, s->hlo);
    free(pdbs);
    free(ops);
    free(lists);
    free(counts);
    return s;
}

xpv_op_stats *xpv_op_stats_build(const xpv_hostset *hs, xpv_err *err) {
    if (!hs || hs->n == 0) return xpv_op_stats_combine(NULL, 0, err);
    xpv_host_stats **parts = xpv_xcalloc(hs->n, sizeof *parts);
    for (size_t i = 0; i < hs->n; i++)
        if (hs->profiles[i]) parts[i] = xpv_host_stats_build(hs->profiles[i]);
    xpv_op_stats *s = xpv_op_stats_combine((const xpv_host_stats *const *)parts, hs->n, err);
    s->own_parts = parts;
    s->nown = hs->n;
    return s;
}

void xpv_op_stats_free(xpv_op_stats *s) {
    if (!s) return;
    xpv_op_metrics_free(s->ops);
    xpv_hlo_map_free(s->hlo);
    for (size_t i = 0; i < s->nown; i++) xpv_host_stats_free(s->own_parts[i]);
    free(s->own_parts);
    xpv_arena_free(&s->arena);
    free(s);
}

size_t xpv_op_stats_size(const xpv_op_stats *s) {
    /* Decoded HLO protos: what their decodes allocated (measured, see
     * xpv_hlo_set_decode_budget), and at least 4 x their wire size, held
     * up front since decoding happens after the cache has sized the entry
     * (the pipeline grows the charge after each answer). */
    if (!s) return 0;
    size_t hlo = 0;
    if (s->hlo) {
        pthread_mutex_lock(&s->hlo->mu);
        hlo = s->hlo->decoded_heap;
        pthread_mutex_unlock(&s->hlo->mu);
        if (hlo < 4 * s->hlo->total_bytes) hlo = 4 * s->hlo->total_bytes;
        hlo += s->hlo->n * sizeof *s->hlo->progs;
    }
    size_t n = sizeof *s + s->arena.total + xpv_op_metrics_size(s->ops) + hlo;
    for (size_t i = 0; i < s->nown; i++) n += xpv_host_stats_size(s->own_parts[i]);
    return n;
}

static void *derived_build(const xpv_hostset *hs, xpv_err *err) {
    return xpv_op_stats_build(hs, err);
}
static void derived_free(void *d) { xpv_op_stats_free(d); }
static size_t derived_size(const void *d) { return xpv_op_stats_size(d); }
static void *part_build(const xpv_profile *p, xpv_err *err) {
    (void)err;
    return xpv_host_stats_build(p);
}
static void part_free(void *pt) { xpv_host_stats_free(pt); }
static size_t part_size(const void *pt) { return xpv_host_stats_size(pt); }
static void *combine(const void *const *parts, const char *const *names, size_t n,
                     xpv_err *err) {
    (void)names;
    return xpv_op_stats_combine((const xpv_host_stats *const *)parts, n, err);
}

const xpv_derived_kind xpv_derived_op_stats = {
    .name = "op_stats",
    .build = derived_build,
    .free = derived_free,
    .size = derived_size,
    .part_build = part_build,
    .part_free = part_free,
    .part_size = part_size,
    .combine = combine,
};

const xpv_op_stats *xpv_op_stats_need(const void *derived, const char *tool, xpv_err *err) {
    const xpv_op_stats *os = derived;
    if (os && os->ops) return os;
    xpv_err_set(err, XPV_E_INTERNAL, "%s: op_stats missing", tool);
    return NULL;
}

/* ==== Generic input pipeline analysis ==================================== */

#define PS_PER_MS 1e9

/* XProf thresholds (percent of the total step time). */
#define HIGHLY_INPUT_BOUND 20.0
#define MODERATELY_INPUT_BOUND 5.0
#define HIGHLY_KERNEL_LAUNCH_BOUND 15.0
#define MODERATELY_KERNEL_LAUNCH_BOUND 3.0
#define HIGHLY_ALL_OTHER_BOUND 15.0
#define MODERATELY_ALL_OTHER_BOUND 3.0
#define HIGHLY_COLLECTIVES_BOUND 15.0
#define MODERATELY_COLLECTIVES_BOUND 3.0

double xpv_ipa_step_cat_ms(const xpv_step *s, int cat) {
    int64_t ps = 0;
    switch (cat) {
    case XPV_IPA_DEVICE_COMPUTE: ps = xpv_step_device_compute_ps(s); break;
    case XPV_IPA_DEVICE_TO_DEVICE: ps = xpv_step_device_to_device_ps(s); break;
    case XPV_IPA_DEVICE_COLLECTIVES: ps = s->type_ps[XPV_EV_DEVICE_COLLECTIVES]; break;
    case XPV_IPA_HOST_COMPUTE: ps = s->type_ps[XPV_EV_HOST_COMPUTE]; break;
    case XPV_IPA_KERNEL_LAUNCH: ps = s->type_ps[XPV_EV_HOST_PREPARE]; break;
    case XPV_IPA_INPUT: ps = xpv_step_input_ps(s); break;
    case XPV_IPA_OUTPUT: ps = s->type_ps[XPV_EV_DEVICE_TO_HOST]; break;
    case XPV_IPA_COMPILE: ps = s->type_ps[XPV_EV_HOST_COMPILE]; break;
    case XPV_IPA_OTHER: ps = s->type_ps[XPV_EV_UNKNOWN]; break;
    default: break;
    }
    return (double)ps / PS_PER_MS;
}

typedef struct acc {
    size_t n;
    double sum, sumsq, min, max;
} acc;

static void acc_add(acc *a, double v) {
    if (a->n == 0 || v < a->min) a->min = v;
    if (a->n == 0 || v > a->max) a->max = v;
    a->n++;
    a->sum += v;
    a->sumsq += v * v;
}

static xpv_summary acc_summary(const acc *a) {
    xpv_summary s = {0, 0, 0, 0};
    if (!a->n) return s;
    s.avg = a->sum / (double)a->n;
    s.min = a->min;
    s.max = a->max;
    if (a->n > 1 && a->min != a->max) {
        double var = (a->sumsq - a->sum * a->sum / (double)a->n) / (double)(a->n - 1);
        s.sd = var > 0 ? sqrt(var) : 0;
    }
    return s;
}

static int lower_eq(const char *s, const char *lit) {
    for (; *s && *lit; s++, lit++) {
        char c = *s;
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != *lit) return 0;
    }
    return *s == 0 && *lit == 0;
}

static int ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !memcmp(s + n - m, suf, m);
}

/* Which host ops are input ops (XProf's SelectInputOpMetrics and
 * GenerateHostResult, op_stats_to_input_pipeline_analysis.cc).  Two XProf
 * versions disagree:
 *   (a) IsInputOp accepts the legacy kinds (InfeedEnqueue*, Dataset,
 *       MemcpyHToD) and the input-pipeline stage categories (enqueue, read,
 *       preprocessing, unknown; any case), the latter mapped by
 *       CategorizeInputOpNew; Dataset names ending ::ArrayRecord are file
 *       reads;
 *   (b) a flag OpMetricsDb.use_new_input_pipeline_analysis picks either the
 *       stage categories (xprof/convert/host_op_utils.h, "unknown" left
 *       out) or the legacy kinds, never both, and knows no ::ArrayRecord.
 * We follow (a), judged the newer: the newest stored op_metrics.proto
 * (with the high-confidence duty-cycle fields, "Next ID: 19") has no such
 * flag field, no stored XProf source sets the flag (ConvertHostThreads-
 * XPlaneToOpMetricsDb does not), and (a) has the later code (uint64_t for
 * tsl::uint64, ::ArrayRecord).  Under (b) with the flag never set, the
 * stage ops would never count as input ops. */
const char *xpv_input_op_category(const xpv_op_metric *m) {
    const char *cat = m->category ? m->category : "";
    if (m->is_idle) return NULL;
    /* New input-pipeline stage categories. */
    if (lower_eq(cat, "enqueue")) return "Enqueue";
    if (lower_eq(cat, "read")) return "Demanded file read";
    if (lower_eq(cat, "preprocessing")) return "Preprocessing";
    if (lower_eq(cat, "unknown")) return "Unknown";
    /* tsl IsInfeedEnqueueOp: a type starting "InfeedEnqueue" (also
     * InfeedEnqueuePrelinearizedBuffer). */
    if (!strncmp(cat, "InfeedEnqueue", 13) || !strcmp(cat, "MemcpyHToD")) return "Enqueue";
    if (strcmp(cat, "Dataset")) return NULL;
    const char *n = m->name ? m->name : "";
    if (ends_with(n, "::TFRecord") || ends_with(n, "::TextLine") ||
        ends_with(n, "::FixedLengthRecord") || ends_with(n, "::SSTable") ||
        ends_with(n, "::RecordIO") || ends_with(n, "::ArrayRecord")) {
        if (strstr(n, "::MemoryReader") || strstr(n, "::MemoryWriter") ||
            strstr(n, "::Interleave") || strstr(n, "::Prefetch") || strstr(n, "::ParallelMap"))
            return "Advanced file read";
        return "Demanded file read";
    }
    return "Preprocessing";
}

static void host_breakdown(xpv_ipa *r) {
    const xpv_op_metrics_db *db = &r->os->ops->host;
    double enq = 0, demanded = 0, advanced = 0, pre = 0;
    int any = 0;
    for (size_t i = 0; i < db->n; i++) {
        const char *c = xpv_input_op_category(&db->ops[i]);
        if (!c) continue;
        any = 1;
        double us = (double)db->ops[i].self_time_ps / 1e6;
        r->input_op_time_ps += db->ops[i].self_time_ps;
        if (!strcmp(c, "Enqueue")) enq += us;
        else if (!strcmp(c, "Demanded file read")) demanded += us;
        else if (!strcmp(c, "Advanced file read")) advanced += us;
        else if (!strcmp(c, "Preprocessing")) pre += us;
    }
    if (!any) return;
    double total = demanded + advanced + pre;
    /* Ratio of host-to-device time to step time (no TPU infeed here). */
    double ratio = r->step_time.avg > 0 ? r->host_to_device.avg / r->step_time.avg : 0;
    if (ratio > 1) ratio = 1;
    double non_enq = ratio != 0 ? enq * (1 - ratio) / ratio : total;
    r->enqueue_us = enq;
    r->demanded_file_read_us = total ? non_enq * demanded / total : 0;
    r->advanced_file_read_us = total ? non_enq * advanced / total : 0;
    r->preprocessing_us = total ? non_enq * pre / total : 0;
    double rest = non_enq - r->demanded_file_read_us - r->advanced_file_read_us - r->preprocessing_us;
    r->unclassified_non_enqueue_us = rest > 0 ? rest : 0;
    r->tfdata_in_use = r->demanded_file_read_us > 0 || r->advanced_file_read_us > 0 ||
                       r->preprocessing_us > 0;
}

void xpv_ipa_compute(const xpv_op_stats *os, xpv_ipa *r) {
    memset(r, 0, sizeof *r);
    r->os = os;
    const xpv_step_db *db = &os->steps;
    acc st = {0}, cats[XPV_IPA_NCATS], h2d = {0};
    memset(cats, 0, sizeof cats);
    double tot_step = 0, tot[XPV_IPA_NCATS] = {0};
    for (size_t i = 0; i < db->n; i++) {
        const xpv_step *s = &db->steps[i];
        acc_add(&st, (double)db->max_dur_ps[i] / PS_PER_MS);
        acc_add(&h2d, (double)xpv_step_host_to_device_ps(s) / PS_PER_MS);
        tot_step += (double)s->dur_ps / PS_PER_MS;
        for (int c = 0; c < XPV_IPA_NCATS; c++) {
            double v = xpv_ipa_step_cat_ms(s, c);
            acc_add(&cats[c], v);
            tot[c] += v;
        }
    }
    r->step_time = acc_summary(&st);
    r->host_to_device = acc_summary(&h2d);
    for (int c = 0; c < XPV_IPA_NCATS; c++) r->cat[c] = acc_summary(&cats[c]);
    host_breakdown(r);

    r->kernel_launch_classification = "no";
    r->all_other_classification = "no";
    r->collectives_classification = "no";
    if (tot_step == 0) {
        r->input_classification = "unknown";
        snprintf(r->input_statement, sizeof r->input_statement,
                 "No step time measured. Therefore we cannot tell where the performance "
                 "bottleneck is.");
    } else {
        r->input_pct = 100.0 * tot[XPV_IPA_INPUT] / tot_step;
        r->output_pct = 100.0 * tot[XPV_IPA_OUTPUT] / tot_step;
        r->compute_pct = 100.0 * tot[XPV_IPA_DEVICE_COMPUTE] / tot_step;
        r->collectives_pct = 100.0 * tot[XPV_IPA_DEVICE_COLLECTIVES] / tot_step;
        double idle = 100.0 - r->input_pct - r->output_pct - r->compute_pct - r->collectives_pct;
        r->idle_pct = idle > 0 ? idle : 0;
        r->kernel_launch_pct = 100.0 * tot[XPV_IPA_KERNEL_LAUNCH] / tot_step;
        r->all_other_pct = 100.0 * tot[XPV_IPA_OTHER] / tot_step;

        int all_other_reported = 0;
        if (r->input_pct >= HIGHLY_INPUT_BOUND) {
            r->input_classification = "host";
            snprintf(r->input_statement, sizeof r->input_statement,
                     "Your program is HIGHLY input-bound because %.1f%% of the total step time "
                     "sampled is waiting for input. Therefore, you should first focus on "
                     "reducing the input time.",
                     r->input_pct);
        } else if (r->input_pct >= MODERATELY_INPUT_BOUND) {
            r->input_classification = "both";
            snprintf(r->input_statement, sizeof r->input_statement,
                     "Your program is MODERATELY input-bound because %.1f%% of the total step "
                     "time sampled is waiting for input. Therefore, you would need to reduce "
                     "both the input time and other time.",
                     r->input_pct);
        } else if (r->all_other_pct >= MODERATELY_ALL_OTHER_BOUND) {
            r->input_classification = "both";
            snprintf(r->input_statement, sizeof r->input_statement,
                     "Your program is POTENTIALLY input-bound because %.1f%% of the total step "
                     "time sampled is spent on 'All Others' time (which could be due to I/O or "
                     "Python execution or both).",
                     r->all_other_pct);
            all_other_reported = 1;
        } else {
            r->input_classification = "device";
            snprintf(r->input_statement, sizeof r->input_statement,
                     "Your program is NOT input-bound because only %.1f%% of the total step "
                     "time sampled is waiting for input. Therefore, you should focus on "
                     "reducing other time.",
                     r->input_pct);
        }
        if (r->collectives_pct >= MODERATELY_COLLECTIVES_BOUND) {
            r->collectives_classification =
                r->collectives_pct >= HIGHLY_COLLECTIVES_BOUND ? "high" : "moderate";
            snprintf(r->collectives_statement, sizeof r->collectives_statement,
                     "%.1f %% of the total step time sampled is spent on 'Device Collective "
                     "Communication'.",
                     r->collectives_pct);
        }
        if (r->kernel_launch_pct >= MODERATELY_KERNEL_LAUNCH_BOUND) {
            r->kernel_launch_classification =
                r->kernel_launch_pct >= HIGHLY_KERNEL_LAUNCH_BOUND ? "high" : "moderate";
            snprintf(r->kernel_launch_statement, sizeof r->kernel_launch_statement,
                     "%.1f %% of the total step time sampled is spent on 'Kernel Launch'.%s",
                     r->kernel_launch_pct,
                     r->tfdata_in_use
                         ? " It could be due to CPU contention with tf.data. In this case, you "
                           "may try to set the environment variable "
                           "TF_GPU_THREAD_MODE=gpu_private."
                         : "");
        }
        if (!all_other_reported && r->all_other_pct >= MODERATELY_ALL_OTHER_BOUND) {
            r->all_other_classification =
                r->all_other_pct >= HIGHLY_ALL_OTHER_BOUND ? "high" : "moderate";
            snprintf(r->all_other_statement, sizeof r->all_other_statement,
                     "%.1f %% of the total step time sampled is spent on 'All Others' time. "
                     "This could be due to Python execution overhead.",
                     r->all_other_pct);
        }
    }
    if (!strcmp(r->input_classification, "host") || !strcmp(r->input_classification, "both")) {
        if (!r->tfdata_in_use)
            snprintf(r->summary_next_step, sizeof r->summary_next_step,
                     "Consider using <a href=\"https://www.tensorflow.org/guide/data\" "
                     "target=\"_blank\">the tf.data API</a> to enable profiler's host-side "
                     "analysis for input pipeline. Profiler currently does not support custom "
                     "input pipeline (please ignore Section 3 below).");
        else
            snprintf(r->summary_next_step, sizeof r->summary_next_step,
                     "Look at Section 3 for the breakdown of input time on the host.");
    } else {
        snprintf(r->summary_next_step, sizeof r->summary_next_step,
                 "You may skip the rest of this page.");
    }
}

static const xpv_dt_col step_cols[] = {
    {"stepnum", "Step number", "string", NULL},
    {"deviceComputeTimeMs", "Device compute", "number", NULL},
    {"deviceToDeviceTimeMs", "Device to device", "number", NULL},
    {"deviceCollectivesTimeMs", "Device collective communication", "number", NULL},
    {"hostComputeTimeMs", "Host compute", "number", NULL},
    {"kernelLaunchTimeMs", "Kernel launch", "number", NULL},
    {"infeedTimeMs", "Input", "number", NULL},
    {"outfeedTimeMs", "Output", "number", NULL},
    {"compileTimeMs", "Compilation", "number", NULL},
    {"otherTimeMs", "All others", "number", NULL},
    {"tooltip", "tooltip", "string", "tooltip"},
    {"stepTimeMs", "Step time", "number", NULL},
};

static const char *const cat_prop[XPV_IPA_NCATS] = {
    "device_compute", "device_to_device", "device_collectives", "host_compute",
    "kernel_launch",  "infeed",           "outfeed",            "compile",
    "other",
};

static void step_label(const xpv_step *s, char *out, size_t n) {
    if (s->name && s->name[0]) snprintf(out, n, "%s", s->name);
    else snprintf(out, n, "%lld", (long long)s->step_num);
}

void xpv_ipa_step_table(xpv_dt_doc *doc, const xpv_ipa *r) {
    const xpv_step_db *db = &r->os->steps;
    xpv_dt *t = xpv_dt_doc_table(doc, 0);
    xpv_dt_add_cols(t, step_cols, sizeof step_cols / sizeof step_cols[0]);
    char key[64];
    for (int c = 0; c < XPV_IPA_NCATS; c++) {
        snprintf(key, sizeof key, "%s_time_ms_avg", cat_prop[c]);
        xpv_dt_propf(t, key, "%.1f", r->cat[c].avg);
        snprintf(key, sizeof key, "%s_time_ms_sdv", cat_prop[c]);
        xpv_dt_propf(t, key, "%.1f", r->cat[c].sd);
    }
    xpv_dt_prop(t, "all_other_bottleneck", r->all_other_statement);
    xpv_dt_prop(t, "all_other_statement", r->all_other_statement);
    xpv_dt_prop(t, "device_collectives_bottleneck", r->collectives_statement);
    xpv_dt_prop(t, "device_collectives_statement", r->collectives_statement);
    xpv_dt_prop(t, "hardware_type", r->os->hardware_type);
    xpv_dt_prop(t, "input_conclusion", r->input_statement);
    xpv_dt_prop(t, "kernel_launch_bottleneck", r->kernel_launch_statement);
    xpv_dt_prop(t, "kernel_launch_statement", r->kernel_launch_statement);
    xpv_dt_prop(t, "step_time_graph_column_ids",
              "stepnum,deviceComputeTimeMs,deviceToDeviceTimeMs,deviceCollectivesTimeMs,"
              "hostComputeTimeMs,kernelLaunchTimeMs,infeedTimeMs,outfeedTimeMs,compileTimeMs,"
              "otherTimeMs, tooltip");
    xpv_dt_propf(t, "steptime_ms_average", "%.1f", r->step_time.avg);
    xpv_dt_propf(t, "steptime_ms_maximum", "%.1f", r->step_time.max);
    xpv_dt_propf(t, "steptime_ms_minimum", "%.1f", r->step_time.min);
    xpv_dt_propf(t, "steptime_ms_standard_deviation", "%.1f", r->step_time.sd);
    xpv_dt_prop(t, "summary_nextstep", r->summary_next_step);
    for (size_t i = 0; i < db->n; i++) {
        const xpv_step *s = &db->steps[i];
        char label[256], tip[1024];
        step_label(s, label, sizeof label);
        double v[XPV_IPA_NCATS];
        for (int c = 0; c < XPV_IPA_NCATS; c++) v[c] = xpv_ipa_step_cat_ms(s, c);
        double step_ms = (double)s->dur_ps / PS_PER_MS;
        snprintf(tip, sizeof tip,
                 "Step %s, duration: %.2f ms\n-All others: %.2f ms\n-Compilation: %.2f ms\n"
                 "-Output: %.2f ms\n-Input: %.2f ms\n-Kernel launch: %.2f ms\n"
                 "-Host compute: %.2f ms\n-Device collectives: %.2f ms\n"
                 "-Device to device: %.2f ms\n-Device compute: %.2f ms",
                 label, step_ms, v[XPV_IPA_OTHER], v[XPV_IPA_COMPILE], v[XPV_IPA_OUTPUT],
                 v[XPV_IPA_INPUT], v[XPV_IPA_KERNEL_LAUNCH], v[XPV_IPA_HOST_COMPUTE],
                 v[XPV_IPA_DEVICE_COLLECTIVES], v[XPV_IPA_DEVICE_TO_DEVICE],
                 v[XPV_IPA_DEVICE_COMPUTE]);
        xpv_dt_row(t);
        xpv_dt_str(t, label);
        for (int c = 0; c < XPV_IPA_NCATS; c++) xpv_dt_num(t, v[c]);
        xpv_dt_str(t, tip);
        xpv_dt_num(t, step_ms);
    }
}

void xpv_ipa_input_ops_table(xpv_dt_doc *doc, const xpv_ipa *r) {
    static const xpv_dt_col cols[] = {
        {"opName", "Input Op", "string", NULL},
        {"count", "Count", "number", NULL},
        {"timeInMs", "Total Time (in ms)", "number", NULL},
        {"timeInPercent", "Total Time (as % of total input-processing time)", "number", NULL},
        {"selfTimeInMs", "Total Self Time (in ms)", "number", NULL},
        {"selfTimeInPercent", "Total Self Time (as % of total input-processing time)",
         "number", NULL},
        {"category", "Category", "string", NULL},
    };
    xpv_dt *t = xpv_dt_doc_table(doc, 0);
    xpv_dt_add_cols(t, cols, sizeof cols / sizeof cols[0]);
    xpv_dt_propf(t, "advanced_file_read_us", "%.3f", r->advanced_file_read_us);
    xpv_dt_propf(t, "demanded_file_read_us", "%.3f", r->demanded_file_read_us);
    xpv_dt_propf(t, "enqueue_us", "%.3f", r->enqueue_us);
    xpv_dt_propf(t, "preprocessing_us", "%.3f", r->preprocessing_us);
    xpv_dt_propf(t, "unclassified_nonequeue_us", "%.3f", r->unclassified_non_enqueue_us);
    const xpv_op_metrics_db *db = &r->os->ops->host;
    double total = (double)r->input_op_time_ps;
    for (size_t i = 0; i < db->n; i++) {
        const xpv_op_metric *m = &db->ops[i];
        const char *c = xpv_input_op_category(m);
        if (!c) continue;
        xpv_dt_row(t);
        xpv_dt_str(t, m->name);
        xpv_dt_num(t, (double)m->occurrences);
        xpv_dt_num(t, (double)m->time_ps / PS_PER_MS);
        xpv_dt_num(t, total > 0 ? (double)m->time_ps / total : 0);
        xpv_dt_num(t, (double)m->self_time_ps / PS_PER_MS);
        xpv_dt_num(t, total > 0 ? (double)m->self_time_ps / total : 0);
        xpv_dt_str(t, c);
    }
}

void xpv_ipa_recommendation_table(xpv_dt_doc *doc) {
    static const char *const tips[] = {
        "Enqueuing data: you may want to combine small input data chunks into fewer but "
        "larger chunks.",
        "Data preprocessing: you may increase num_parallel_calls in <a "
        "href=\"https://www.tensorflow.org/api_docs/python/tf/data/Dataset#map\" "
        "target=\"_blank\">Dataset map()</a> or preprocess the data OFFLINE.",
        "Reading data from files in advance: you may tune parameters in the following tf.data "
        "API (<a href=\"https://www.tensorflow.org/api_docs/python/tf/data/Dataset#prefetch\" "
        "target=\"_blank\">prefetch size</a>, <a "
        "href=\"https://www.tensorflow.org/api_docs/python/tf/data/Dataset#interleave\" "
        "target=\"_blank\">interleave cycle_length</a>, <a "
        "href=\"https://www.tensorflow.org/api_docs/python/tf/data/"
        "TFRecordDataset#class_tfrecorddataset\" target=\"_blank\">reader buffer_size</a>)",
        "Reading data from files on demand: you should read data IN ADVANCE using the "
        "following tf.data API (<a "
        "href=\"https://www.tensorflow.org/api_docs/python/tf/data/Dataset#prefetch\" "
        "target=\"_blank\">prefetch</a>, <a "
        "href=\"https://www.tensorflow.org/api_docs/python/tf/data/Dataset#interleave\" "
        "target=\"_blank\">interleave</a>, <a "
        "href=\"https://www.tensorflow.org/api_docs/python/tf/data/"
        "TFRecordDataset#class_tfrecorddataset\" target=\"_blank\">reader buffer</a>)",
        "Other data reading or processing: you may consider using the <a "
        "href=\"https://www.tensorflow.org/programmers_guide/datasets\" "
        "target=\"_blank\">tf.data API</a> (if you are not using it now)",
    };
    static const xpv_dt_col cols[] = {{"link", "link", "string", NULL}};
    xpv_dt *t = xpv_dt_doc_table(doc, 0);
    xpv_dt_add_cols(t, cols, 1);
    for (size_t i = 0; i < sizeof tips / sizeof tips[0]; i++) {
        xpv_dt_row(t);
        xpv_dt_str(t, tips[i]);
    }
}

static const char NO_STEP_MARKER[] =
    "No step marker observed and hence the step time is unknown. This may happen if (1) "
    "training steps are not instrumented (e.g., if you are not using Keras) or (2) the "
    "profiling duration is shorter than the step time. For (1), you need to add step "
    "instrumentation; for (2), you may try to profile longer.";
/* XProf's kErrorIncompleteStep, its missing space after "unknown." kept. */
static const char INCOMPLETE_STEP[] =
    "Incomplete step observed and hence the step time is unknown.Instead, we use the trace "
    "duration as the step time. This may happen if your profiling duration is shorter than "
    "the step time. In this case, you may try to profile longer.";
static const char EMPTY_INTERSECT[] =
    "Although there are steps observed on some host(s), the intersection of the steps over "
    "all hosts is empty (because the differences among individual host's step sequences are "
    "too big). Consequently, the overall step time is unknown.";
static const char NO_DEVICE_TRACE[] =
    "No TensorCore device trace was collected. This might happen if your job hadn't been run "
    "on the device when sampling was turned on. You could try the sampling again later.";
static const char STEPS_DROPPED[] =
    " steps dropped. This might happen when you profile many hosts and/or many steps. You "
    "could try to profile shorter or reduce the number of hosts you profile.";

static void diag_row(xpv_dt *t, const char *sev, const char *msg) {
    xpv_dt_row(t);
    xpv_dt_str(t, sev);
    xpv_dt_str(t, msg);
}

static int cmp_cstr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void xpv_ipa_diagnostics_table(xpv_dt_doc *doc, const xpv_op_stats *os, int overview) {
    static const xpv_dt_col cols[] = {
        {"severity", "Severity", "string", NULL},
        {"message", "Message", "string", NULL},
    };
    xpv_dt *t = xpv_dt_doc_table(doc, 0);
    xpv_dt_add_cols(t, cols, 2);
    /* Warnings first then errors would change XProf's order: it lists
     * info, warnings, errors. */
    const xpv_step_db *db = &os->steps;
    if (overview)
        for (size_t i = 0; i < os->nwarnings; i++) diag_row(t, "WARNING", os->warnings[i]);
    /* XProf PopulateStepDiagnostics.  A profile with TF loop ops is not
     * grouped (XLA's CheckLoopOp), so it has no step: XProf says only
     * that no step marker was seen, and so do we. */
    if (db->use_incomplete_step) diag_row(t, "WARNING", INCOMPLETE_STEP);
    else if (db->n == 0)
        diag_row(t, "WARNING", db->empty_intersect ? EMPTY_INTERSECT : NO_STEP_MARKER);
    if (db->num_steps_dropped) {
        char msg[512];
        snprintf(msg, sizeof msg, "%u%s", db->num_steps_dropped, STEPS_DROPPED);
        diag_row(t, "WARNING", msg);
    }
    if (overview) {
        if (os->nerrors) {
            const char **errs = xpv_xmalloc(os->nerrors * sizeof *errs);
            memcpy(errs, os->errors, os->nerrors * sizeof *errs);
            qsort(errs, os->nerrors, sizeof *errs, cmp_cstr);
            for (size_t i = 0; i < os->nerrors; i++) diag_row(t, "ERROR", errs[i]);
            free(errs);
        } else if (strcmp(os->device_type, "CPU") && os->device_core_count <= 0) {
            diag_row(t, "ERROR", NO_DEVICE_TRACE);
        }
    }
}
