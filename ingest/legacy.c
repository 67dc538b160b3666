/*
 * legacy.c - TF 2.2-2.x per-tool files -> tool JSON (see legacy.h).
 *
 * Protobuf files are unpacked with protobuf-c (proto/legacy_tools.proto)
 * and written as the DataTables of the current XProf pages (the old
 * plugin's converters, legacy-and-pytorch.md §4, with the current column
 * sets of xprof-reference.md §2.5-2.9 where they differ).  JSON files are
 * parsed with jansson, normalized to the current field names and dumped
 * compactly.
 */
#include "legacy.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "gz.h"
#include "legacy_tools.pb-c.h"

typedef Tensorflow__Profiler__LegacyAny Any;
typedef Tensorflow__Profiler__LegacyStepSummary StepSummary;
typedef Tensorflow__Profiler__LegacyPerGenericStepDetails StepDetails;
typedef Tensorflow__Profiler__LegacyGenericStepTimeBreakdown Breakdown;
typedef Tensorflow__Profiler__LegacyBottleneckAnalysis Bottleneck;
typedef Tensorflow__Profiler__LegacyInputPipelineAnalysisResult InputResult;
typedef Tensorflow__Profiler__LegacyDiagnostics Diagnostics;
typedef Tensorflow__Profiler__LegacyOverviewPage OverviewPage;
typedef Tensorflow__Profiler__LegacyOverviewPageTip Tip;
typedef Tensorflow__Profiler__LegacyGenericRecommendation GenericRec;
typedef Tensorflow__Profiler__LegacyTfStatsDatabase TfStatsDb;
typedef Tensorflow__Profiler__LegacyTfStatsTable TfStatsTable;
typedef Tensorflow__Profiler__LegacyKernelStatsDb KernelDb;

#define DEFAULT_MAX_INFLATED (1ULL << 30)

const xpv_legacy_suffix xpv_legacy_suffixes[] = {
    {".overview_page.pb", XPV_LEGACY_OVERVIEW_PB, "overview_page"},
    {".overview_page.json", XPV_LEGACY_OVERVIEW_JSON, "overview_page"},
    {".trace.json.gz", XPV_LEGACY_TRACE_JSON_GZ, "trace_viewer"},
    {".input_pipeline.pb", XPV_LEGACY_INPUT_PIPELINE_PB, "input_pipeline_analyzer"},
    {".input_pipeline.json", XPV_LEGACY_INPUT_PIPELINE_JSON, "input_pipeline_analyzer"},
    {".kernel_stats.pb", XPV_LEGACY_KERNEL_STATS_PB, "kernel_stats"},
    {".memory_profile.json.gz", XPV_LEGACY_MEMORY_PROFILE_JSON_GZ, "memory_profile"},
    {".pod_viewer.json", XPV_LEGACY_POD_VIEWER_JSON, "pod_viewer"},
    {".tensorflow_stats.pb", XPV_LEGACY_TF_STATS_PB, "framework_op_stats"},
    {NULL, XPV_LEGACY_NONE, NULL},
};

static int ends_with(const char *s, size_t n, const char *sfx) {
    size_t l = strlen(sfx);
    return n > l && !memcmp(s + n - l, sfx, l);
}

const xpv_legacy_suffix *xpv_legacy_match(const char *fname, size_t *host_len) {
    size_t n = strlen(fname);
    /* "<worker>.pt.trace.json.gz" is a PyTorch trace, not a TF host file. */
    if (ends_with(fname, n, ".pt.trace.json.gz")) return NULL;
    for (const xpv_legacy_suffix *s = xpv_legacy_suffixes; s->suffix; s++)
        if (ends_with(fname, n, s->suffix)) {
            if (host_len) *host_len = n - strlen(s->suffix);
            return s;
        }
    return NULL;
}

int xpv_legacy_is_trace_file(const char *fname, int any_json, size_t *host_len) {
    size_t n = strlen(fname);
    if (fname[0] == '.') return 0;
    size_t base = n;
    if (ends_with(fname, n, ".json.gz")) base = n - 8;
    else if (ends_with(fname, n, ".json")) base = n - 5;
    else return 0;
    /* Never a TF per-tool JSON file (a TF trace.json.gz is a trace). */
    const xpv_legacy_suffix *ls = xpv_legacy_match(fname, NULL);
    if (ls && ls->kind != XPV_LEGACY_TRACE_JSON_GZ) return 0;
    static const char pt[] = ".pt.trace";
    if (base > sizeof pt - 1 && !memcmp(fname + base - (sizeof pt - 1), pt, sizeof pt - 1)) {
        /* The host keeps a ".<span>" number: spans are separate hosts. */
        size_t w = base - (sizeof pt - 1);
        if (host_len) *host_len = w;
        return w > 0;
    }
    if (!any_json) return 0;
    if (host_len) *host_len = base;
    return base > 0;
}

/* ==== Output helpers ===================================================== */

static void fail(xpv_err *err, int status, const char *fmt, const char *arg) {
    err->status = status;
    snprintf(err->msg, sizeof err->msg, fmt, arg);
}

/* A new table of `d` with columns given as "id|type|label" strings, in the
 * old plugin's gviz order (column "p" after "type", table "p" after
 * "rows", written even when empty when `props`). */
static xpv_dt *table(xpv_dt_doc *d, const char *const *c, size_t n, int props) {
    xpv_dt *t = xpv_dt_doc_table(d, XPV_DT_PROPS_LAST | XPV_DT_ROLE_LAST |
                                        (props ? XPV_DT_PROPS_ALWAYS : 0));
    for (size_t i = 0; i < n; i++) {
        const char *s = c[i], *p1 = strchr(s, '|'), *p2 = strchr(p1 + 1, '|');
        char id[64], type[16];
        snprintf(id, sizeof id, "%.*s", (int)(p1 - s), s);
        snprintf(type, sizeof type, "%.*s", (int)(p2 - p1 - 1), p1 + 1);
        xpv_dt_add_col(t, id, p2 + 1, type, strcmp(id, "tooltip") ? NULL : "tooltip");
    }
    return t;
}

/* A number cell (no NaN or infinities in the old plugin's tables). */
static void cnum(xpv_dt *t, double v) { xpv_dt_num(t, isfinite(v) ? v : 0.0); }

/* Whole nanoseconds as exact microseconds (fixed decimals). */
static void cus_from_ns(xpv_dt *t, uint64_t ns) {
    if (ns > (uint64_t)INT64_MAX / 1000) {
        xpv_dt_num(t, (double)ns / 1000.0);
        return;
    }
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_buf_ps_as_us(&b, (int64_t)ns * 1000);
    xpv_buf_putc(&b, '\0');
    xpv_dt_num_text(t, b.data);
    xpv_buf_free(&b);
}

static void propf(xpv_dt *t, const char *k, const char *fmt, double v) {
    char s[64];
    snprintf(s, sizeof s, fmt, v);
    xpv_dt_prop(t, k, s);
}

/* ==== Any payloads ======================================================= */

static int any_is(const Any *a, const char *msg) {
    if (!a || !a->type_url) return 0;
    const char *slash = strrchr(a->type_url, '/');
    const char *name = slash ? slash + 1 : a->type_url;
    const char *dot = strrchr(name, '.');
    return !strcmp(dot ? dot + 1 : name, msg);
}

static Breakdown *unpack_breakdown(const Any *a) {
    if (!any_is(a, "GenericStepTimeBreakdown")) return NULL;
    return tensorflow__profiler__legacy_generic_step_time_breakdown__unpack(
        NULL, a->value.len, a->value.data);
}

static Bottleneck *unpack_bottleneck(const Any *a) {
    if (!any_is(a, "BottleneckAnalysis")) return NULL;
    return tensorflow__profiler__legacy_bottleneck_analysis__unpack(NULL, a->value.len,
                                                                      a->value.data);
}

/* ==== Input pipeline ===================================================== */

static const char *const STEP_COLS[] = {
    "stepnum|string|Step number",
    "deviceComputeTimeMs|number|Device compute",
    "deviceToDeviceTimeMs|number|Device to device",
    "deviceCollectivesTimeMs|number|Device collective communication",
    "hostComputeTimeMs|number|Host compute",
    "kernelLaunchTimeMs|number|Kernel launch",
    "infeedTimeMs|number|Input",
    "outfeedTimeMs|number|Output",
    "compileTimeMs|number|Compilation",
    "otherTimeMs|number|All others",
    "tooltip|string|",
    "stepTimeMs|number|Step time",
};

static double avg_of(const StepSummary *s) { return s ? s->average : 0; }
static double sdv_of(const StepSummary *s) { return s ? s->standard_deviation : 0; }

/* The generic step-time table of an InputPipelineAnalysisResult. */
static void step_table(xpv_dt_doc *doc, const InputResult *r) {
    xpv_dt *t = table(doc, STEP_COLS, sizeof STEP_COLS / sizeof STEP_COLS[0], 1);
    for (size_t i = 0; i < r->n_step_details; i++) {
        const Any *a = r->step_details[i];
        if (!any_is(a, "PerGenericStepDetails")) continue;
        StepDetails *d = tensorflow__profiler__legacy_per_generic_step_details__unpack(
            NULL, a->value.len, a->value.data);
        if (!d) continue;
        char label[64];
        if (d->step_name && *d->step_name) snprintf(label, sizeof label, "%s", d->step_name);
        else snprintf(label, sizeof label, "%d", d->step_number);
        double input = d->host_wait_input_ms + d->host_to_device_ms;
        char tip[1024];
        snprintf(tip, sizeof tip,
                 "Step %s, duration: %.2f ms\n-All others: %.2f ms\n-Compilation: %.2f ms\n"
                 "-Output: %.2f ms\n-Input: %.2f ms\n-Kernel launch: %.2f ms\n"
                 "-Host compute: %.2f ms\n-Device collectives: %.2f ms\n"
                 "-Device to device: %.2f ms\n-Device compute: %.2f ms",
                 label, d->step_time_ms, d->unknown_time_ms, d->host_compile_ms, d->output_ms,
                 input, d->host_prepare_ms, d->host_compute_ms, d->device_collectives_ms,
                 d->device_to_device_ms, d->device_compute_ms);
        xpv_dt_row(t);
        xpv_dt_str(t, label);
        cnum(t, d->device_compute_ms);
        cnum(t, d->device_to_device_ms);
        cnum(t, d->device_collectives_ms);
        cnum(t, d->host_compute_ms);
        cnum(t, d->host_prepare_ms);
        cnum(t, input);
        cnum(t, d->output_ms);
        cnum(t, d->host_compile_ms);
        cnum(t, d->unknown_time_ms);
        xpv_dt_str(t, tip);
        cnum(t, d->step_time_ms);
        tensorflow__profiler__legacy_per_generic_step_details__free_unpacked(d, NULL);
    }
    xpv_dt_prop(t, "step_time_graph_column_ids",
         "deviceComputeTimeMs,deviceToDeviceTimeMs,deviceCollectivesTimeMs,hostComputeTimeMs,"
         "kernelLaunchTimeMs,infeedTimeMs,outfeedTimeMs,compileTimeMs,otherTimeMs");
    xpv_dt_prop(t, "hardware_type", r->hardware_type);
    const StepSummary *st = r->step_time_summary;
    propf(t, "steptime_ms_average", "%.1f", st ? st->average : 0);
    propf(t, "steptime_ms_standard_deviation", "%.1f", st ? st->standard_deviation : 0);
    propf(t, "steptime_ms_minimum", "%.1f", st ? st->minimum : 0);
    propf(t, "steptime_ms_maximum", "%.1f", st ? st->maximum : 0);
    Breakdown *bd = unpack_breakdown(r->step_time_breakdown);
    struct { const char *name; const StepSummary *s; } cats[] = {
        {"device_compute", bd ? bd->device_compute_ms_summary : NULL},
        {"device_to_device", bd ? bd->device_to_device_ms_summary : NULL},
        {"device_collectives", bd ? bd->device_collectives_ms_summary : NULL},
        {"infeed", bd ? bd->input_ms_summary : NULL},
        {"outfeed", bd ? bd->output_ms_summary : NULL},
        {"host_compute", bd ? bd->host_compute_ms_summary : NULL},
        {"kernel_launch", bd ? bd->host_prepare_ms_summary : NULL},
        {"compile", bd ? bd->host_compile_ms_summary : NULL},
        {"other", bd ? bd->unknown_time_ms_summary : NULL},
    };
    for (size_t i = 0; i < sizeof cats / sizeof cats[0]; i++) {
        char k[64];
        snprintf(k, sizeof k, "%s_time_ms_avg", cats[i].name);
        propf(t, k, "%.1f", avg_of(cats[i].s));
        snprintf(k, sizeof k, "%s_time_ms_sdv", cats[i].name);
        propf(t, k, "%.1f", sdv_of(cats[i].s));
    }
    if (bd) tensorflow__profiler__legacy_generic_step_time_breakdown__free_unpacked(bd, NULL);
    const Tensorflow__Profiler__LegacyInputPipelineAnalysisRecommendation *rec = r->recommendation;
    Bottleneck *ba = rec ? unpack_bottleneck(rec->bottleneck_analysis) : NULL;
    xpv_dt_prop(t, "input_conclusion", ba ? ba->input_statement : "");
    xpv_dt_prop(t, "summary_nextstep", rec ? rec->summary_next_step : "");
    if (ba) {
        xpv_dt_prop(t, "device_collectives_bottleneck", ba->device_collectives_classification);
        xpv_dt_prop(t, "device_collectives_statement", ba->device_collectives_statement);
        xpv_dt_prop(t, "kernel_launch_bottleneck", ba->kernel_launch_classification);
        xpv_dt_prop(t, "kernel_launch_statement", ba->kernel_launch_statement);
        xpv_dt_prop(t, "all_other_bottleneck", ba->all_other_classification);
        xpv_dt_prop(t, "all_other_statement", ba->all_other_statement);
        tensorflow__profiler__legacy_bottleneck_analysis__free_unpacked(ba, NULL);
    }
}

static void diagnostics_table(xpv_dt_doc *doc, const Diagnostics *d, char **extra_errors,
                              size_t nextra) {
    static const char *const c[] = {"severity|string|severity", "message|string|message"};
    xpv_dt *t = table(doc, c, 2, 0);
    struct { const char *sev; char **msgs; size_t n; } groups[] = {
        {"INFO", d ? d->info : NULL, d ? d->n_info : 0},
        {"WARNING", d ? d->warnings : NULL, d ? d->n_warnings : 0},
        {"ERROR", d ? d->errors : NULL, d ? d->n_errors : 0},
        {"ERROR", extra_errors, nextra},
    };
    for (size_t g = 0; g < 4; g++)
        for (size_t i = 0; i < groups[g].n; i++) {
            xpv_dt_row(t);
            xpv_dt_str(t, groups[g].sev);
            xpv_dt_str(t, groups[g].msgs[i]);
        }
}

static void input_pipeline_tables(xpv_dt_doc *doc, const InputResult *r) {
    /* [max_infeed_core (TPU only: empty), steps, input ops, tips, diagnostics] */
    (void)table(doc, NULL, 0, 0);
    step_table(doc, r);
    static const char *const op_cols[] = {
        "opName|string|Input Op",
        "count|number|Count",
        "timeInMs|number|Total Time (in ms)",
        "timeInPercent|number|Total Time (as % of total input-processing time)",
        "selfTimeInMs|number|Total Self Time (in ms)",
        "selfTimeInPercent|number|Total Self Time (as % of total input-processing time)",
        "category|string|Category",
    };
    xpv_dt *t = table(doc, op_cols, sizeof op_cols / sizeof op_cols[0], 1);
    for (size_t i = 0; i < r->n_input_op_details; i++) {
        const Tensorflow__Profiler__LegacyInputOpDetails *o = r->input_op_details[i];
        xpv_dt_row(t);
        xpv_dt_str(t, o->op_name);
        cnum(t, (double)o->count);
        cnum(t, o->time_in_ms);
        cnum(t, o->time_in_percent / 100.0);
        cnum(t, o->self_time_in_ms);
        cnum(t, o->self_time_in_percent / 100.0);
        xpv_dt_str(t, o->category);
    }
    const Tensorflow__Profiler__LegacyInputTimeBreakdown *tb = r->input_time_breakdown;
    propf(t, "enqueue_us", "%.3f", tb ? tb->enqueue_us : 0);
    propf(t, "demanded_file_read_us", "%.3f", tb ? tb->demanded_file_read_us : 0);
    propf(t, "advanced_file_read_us", "%.3f", tb ? tb->advanced_file_read_us : 0);
    propf(t, "preprocessing_us", "%.3f", tb ? tb->preprocessing_us : 0);
    propf(t, "unclassified_nonequeue_us", "%.3f", tb ? tb->unclassified_non_enqueue_us : 0);
    static const char *const link_col[] = {"link|string|link"};
    t = table(doc, link_col, 1, 0);
    for (size_t i = 0; r->recommendation && i < r->recommendation->n_details; i++) {
        xpv_dt_row(t);
        xpv_dt_str(t, r->recommendation->details[i]);
    }
    diagnostics_table(doc, r->diagnostics, r->error_messages, r->n_error_messages);
}

/* ==== Overview page ====================================================== */

static void tip_rows(xpv_dt *t, const char *type, Tip **tips, size_t n) {
    for (size_t i = 0; i < n; i++) {
        xpv_dt_row(t);
        xpv_dt_str(t, type);
        xpv_dt_str(t, tips[i]->link);
    }
}

/* Overview table 0: the top device ops and the analysis properties. */
static void ov_analysis_table(xpv_dt_doc *doc,
                              const Tensorflow__Profiler__LegacyOverviewPageAnalysis *a) {
    static const char *const an_cols[] = {
        "selfTimePercent|number|Time (%)",
        "cumulativeTimePercent|number|Cumulative time (%)",
        "category|string|Category",
        "operation|string|Operation",
        "flopRate|number|GFLOPs/Sec",
        "tcEligibility|boolean|TensorCore eligibility",
        "tcUtilization|boolean|Op is using TensorCore",
    };
    xpv_dt *t = table(doc, an_cols, sizeof an_cols / sizeof an_cols[0], 1);
    for (size_t i = 0; a && i < a->n_top_device_ops; i++) {
        const Tensorflow__Profiler__LegacyOverviewTfOp *op = a->top_device_ops[i];
        xpv_dt_row(t);
        cnum(t, op->self_time_fraction);
        cnum(t, op->cumulative_time_fraction);
        xpv_dt_str(t, op->category);
        xpv_dt_str(t, op->name);
        cnum(t, op->flop_rate);
        xpv_dt_bool(t, op->is_op_tensorcore_eligible);
        xpv_dt_bool(t, op->is_op_using_tensorcore);
    }
    if (a) {
        propf(t, "host_tf_op_percent", "%.1f%%", a->host_tf_op_percent);
        propf(t, "device_tf_op_percent", "%.1f%%", a->device_tf_op_percent);
        propf(t, "host_op_time_eager_percent", "%.1f%%", a->host_op_time_eager_percent);
        propf(t, "device_op_time_eager_percent", "%.1f%%", a->device_op_time_eager_percent);
        propf(t, "device_compute_16bit_percent", "%.1f%%", a->device_compute_16bit_percent);
        propf(t, "device_compute_32bit_percent", "%.1f%%", a->device_compute_32bit_percent);
        propf(t, "host_trace_level", "%.0f", (double)a->host_trace_level);
        xpv_dt_prop(t, "remark_text", a->remark_text);
        xpv_dt_prop(t, "remark_color", a->remark_color);
    }
}

/* Overview table 2: the run environment. */
static void ov_environment_table(
    xpv_dt_doc *doc, const Tensorflow__Profiler__LegacyOverviewPageRunEnvironment *env) {
    static const char *const env_cols[] = {
        "host_id|string|host_id", "command_line|string|command_line",
        "start_time|string|start_time", "bns_address|string|bns_address",
    };
    xpv_dt *t = table(doc, env_cols, 4, 1);
    for (size_t i = 0; env && i < env->n_host_dependent_job_info; i++) {
        const Tensorflow__Profiler__LegacyOverviewPageHostDependentJobInfo *h =
            env->host_dependent_job_info[i];
        char ts[32] = "";
        time_t start = (time_t)h->start_time;
        struct tm tm;
        if (gmtime_r(&start, &tm)) strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
        xpv_dt_row(t);
        xpv_dt_str(t, h->host_id);
        xpv_dt_str(t, h->command_line);
        xpv_dt_str(t, ts);
        xpv_dt_str(t, h->bns_address);
    }
    if (env) {
        char v[128];
        if (env->host_count < 0) xpv_dt_prop(t, "host_count", "unknown");
        else propf(t, "host_count", "%.0f", env->host_count);
        snprintf(v, sizeof v, "%d (num tasks per host = %.1f)", env->task_count,
                 env->host_count > 0 ? (double)env->task_count / env->host_count : 0.0);
        xpv_dt_prop(t, "task_count", v);
        xpv_dt_prop(t, "device_type", env->device_type);
        if (env->replica_count > 0)
            snprintf(v, sizeof v, "%d (Replica count = %d, num cores per replica = %d)",
                     env->device_core_count, env->replica_count, env->num_cores_per_replica);
        else
            snprintf(v, sizeof v, "%d", env->device_core_count);
        xpv_dt_prop(t, "device_core_count", v);
    }
}

/* Overview table 3: the recommendation (tips and statements). */
static void ov_recommendation_table(
    xpv_dt_doc *doc, const Tensorflow__Profiler__LegacyOverviewPageRecommendation *rec) {
    static const char *const rec_cols[] = {"tip_type|string|tip_type", "link|string|link"};
    xpv_dt *t = table(doc, rec_cols, 2, 1);
    if (rec) {
        tip_rows(t, "faq", rec->faq_tips, rec->n_faq_tips);
        tip_rows(t, "host", rec->host_tips, rec->n_host_tips);
        tip_rows(t, "device", rec->device_tips, rec->n_device_tips);
        tip_rows(t, "doc", rec->documentation_tips, rec->n_documentation_tips);
        tip_rows(t, "inference", rec->inference_tips, rec->n_inference_tips);
        tip_rows(t, "input", rec->input_tips, rec->n_input_tips);
    }
    if (rec) {
        xpv_dt_prop(t, "bottleneck", rec->bottleneck);
        xpv_dt_prop(t, "statement", rec->statement);
        if (!strcmp(rec->bottleneck, "host")) xpv_dt_prop(t, "non_bottleneck_tip_types", "device");
        else if (!strcmp(rec->bottleneck, "device")) xpv_dt_prop(t, "non_bottleneck_tip_types", "host");
        if (*rec->output_statement) xpv_dt_prop(t, "output_statement", rec->output_statement);
        if (*rec->tf_function_statement_html)
            xpv_dt_prop(t, "tf_function_statement_html", rec->tf_function_statement_html);
        if (*rec->eager_statement_html)
            xpv_dt_prop(t, "eager_statement_html", rec->eager_statement_html);
        if (*rec->outside_compilation_statement_html)
            xpv_dt_prop(t, "outside_compilation_statement_html",
                 rec->outside_compilation_statement_html);
        const Any *ga = rec->recommendation;
        GenericRec *g = any_is(ga, "GenericRecommendation")
            ? tensorflow__profiler__legacy_generic_recommendation__unpack(NULL, ga->value.len,
                                                                          ga->value.data)
            : NULL;
        if (g) {
            xpv_dt_prop(t, "device_collectives_bottleneck", g->device_collectives_bottleneck);
            xpv_dt_prop(t, "device_collectives_statement", g->device_collectives_statement);
            xpv_dt_prop(t, "kernel_launch_bottleneck", g->kernel_launch_bottleneck);
            xpv_dt_prop(t, "kernel_launch_statement", g->kernel_launch_statement);
            xpv_dt_prop(t, "all_other_bottleneck", g->all_other_bottleneck);
            xpv_dt_prop(t, "all_other_statement", g->all_other_statement);
            xpv_dt_prop(t, "precision_statement", g->precision_statement);
            tensorflow__profiler__legacy_generic_recommendation__free_unpacked(g, NULL);
        }
    }
}

static void overview_tables(xpv_dt_doc *doc, const OverviewPage *o) {
    ov_analysis_table(doc, o->analysis);
    /* Step table from the embedded input analysis. */
    if (o->input_analysis) {
        step_table(doc, o->input_analysis);
    } else {
        Tensorflow__Profiler__LegacyInputPipelineAnalysisResult empty =
            TENSORFLOW__PROFILER__LEGACY_INPUT_PIPELINE_ANALYSIS_RESULT__INIT;
        step_table(doc, &empty);
    }
    ov_environment_table(doc, o->run_environment);
    ov_recommendation_table(doc, o->recommendation);
    xpv_dt_doc_raw(doc, "{}");
    xpv_dt_doc_raw(doc, "{}");
    diagnostics_table(doc, o->diagnostics, o->errors, o->n_errors);
}

/* ==== TF stats =========================================================== */

static void tf_stats_table(xpv_dt_doc *doc, const TfStatsTable *tab, int gpu) {
    static const char *const c[] = {
        "rank|number|Rank",
        "host_or_device|string|Host/device",
        "type|string|Operation Type",
        "operation|string|Operation Name",
        "occurrences|number|#Occurrences",
        "total_time|number|Total time (us)",
        "avg_time|number|Avg. time (us)",
        "total_self_time|number|Total self-time (us)",
        "avg_self_time|number|Avg. self-time (us)",
        "device_total_self_time_percent|number|Total self-time on Device (%)",
        "device_cumulative_total_self_time_percent|number|Cumulative total-self time on Device (%)",
        "host_total_self_time_percent|number|Total self-time on Host (%)",
        "Host_cumulative_total_self_time_percent|number|Cumulative total-self time on Host (%)",
        "measured_flop_rate|number|Normalized FLOP Rate (FLOPs/s)",
        "model_flop_rate|number|Model FLOP Rate (GFLOP/s)",
        "measured_memory_bw|number|Measured Memory BW (GBytes/Sec)",
        "operational_intensity|number|Operational Intensity (FLOPs/Byte)",
        "gpu_tensorcore_utilization|number|GPU TensorCore utilization",
        "bound_by|string|Bound by",
        "eager|string|Execution mode",
    };
    const char *use[sizeof c / sizeof c[0]];
    size_t n = 0;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        if (gpu || strncmp(c[i], "gpu_tensorcore", 14)) use[n++] = c[i];
    xpv_dt *t = table(doc, use, n, 0);
    for (size_t i = 0; tab && i < tab->n_tf_stats_record; i++) {
        const Tensorflow__Profiler__LegacyTfStatsRecord *r = tab->tf_stats_record[i];
        xpv_dt_row(t);
        cnum(t, (double)r->rank);
        xpv_dt_str(t, r->host_or_device);
        xpv_dt_str(t, r->op_type);
        xpv_dt_str(t, r->op_name);
        cnum(t, (double)r->occurrences);
        cnum(t, r->total_time_in_us);
        cnum(t, r->avg_time_in_us);
        cnum(t, r->total_self_time_in_us);
        cnum(t, r->avg_self_time_in_us);
        cnum(t, r->device_total_self_time_as_fraction);
        cnum(t, r->device_cumulative_total_self_time_as_fraction);
        cnum(t, r->host_total_self_time_as_fraction);
        cnum(t, r->host_cumulative_total_self_time_as_fraction);
        cnum(t, r->measured_flop_rate);
        cnum(t, r->measured_flop_rate);   /* no model flops in these files */
        cnum(t, r->measured_memory_bw);
        cnum(t, r->operational_intensity);
        if (gpu) cnum(t, r->gpu_tensorcore_utilization);
        xpv_dt_str(t, r->bound_by);
        xpv_dt_str(t, r->is_eager ? "Eager" : "Function");
    }
}

/* ==== Kernel stats ======================================================= */

static void dims(char *out, size_t cap, const uint32_t *d, size_t n) {
    size_t k = 0;
    out[0] = 0;
    for (size_t i = 0; i < n && i < 3; i++)
        k += (size_t)snprintf(out + k, cap - k, i ? ",%u" : "%u", d[i]);
}

static void kernel_stats_table(xpv_dt_doc *doc, const KernelDb *db) {
    static const char *const c[] = {
        "rank|number|Rank",
        "kernel_name|string|Kernel Name",
        "registers_per_thread|number|Registers per thread",
        "shmem_bytes|number|Shared Mem bytes",
        "block_dim|string|Block dim",
        "grid_dim|string|Grid dim",
        "occupancy_pct|number|Theoretical Occupancy %",
        "is_op_tensor_core_eligible|boolean|Op is TensorCore eligible",
        "is_kernel_using_tensor_core|boolean|Kernel uses TensorCore",
        "op_name|string|Op Name",
        "occurrences|number|Occurrences",
        "total_duration_us|number|Total Duration (\xce\xbcs)",
        "avg_duration_us|number|Avg Duration (\xce\xbcs)",
        "min_duration_us|number|Min Duration (\xce\xbcs)",
        "max_duration_us|number|Max Duration (\xce\xbcs)",
    };
    xpv_dt *t = table(doc, c, sizeof c / sizeof c[0], 0);
    for (size_t i = 0; db && i < db->n_reports; i++) {
        const Tensorflow__Profiler__LegacyKernelReport *k = db->reports[i];
        char bd[48], gd[48];
        dims(bd, sizeof bd, k->block_dim, k->n_block_dim);
        dims(gd, sizeof gd, k->grid_dim, k->n_grid_dim);
        xpv_dt_row(t);
        cnum(t, (double)(i + 1));
        xpv_dt_str(t, k->name);
        cnum(t, k->registers_per_thread);
        cnum(t, (double)k->static_shmem_bytes + (double)k->dynamic_shmem_bytes);
        xpv_dt_str(t, bd);
        xpv_dt_str(t, gd);
        cnum(t, k->occupancy_pct);
        xpv_dt_bool(t, k->is_op_tensor_core_eligible);
        xpv_dt_bool(t, k->is_kernel_using_tensor_core);
        xpv_dt_str(t, k->op_name);
        cnum(t, k->occurrences);
        cus_from_ns(t, k->total_duration_ns);
        cus_from_ns(t, k->occurrences ? k->total_duration_ns / k->occurrences : 0);
        cus_from_ns(t, k->min_duration_ns);
        cus_from_ns(t, k->max_duration_ns);
    }
}

/* ==== JSON files ========================================================= */


static json_t *parse_json(const void *data, size_t len, xpv_err *err) {
    json_error_t je;
    json_t *j = json_loadb(data, len, 0, &je);
    if (!j) {
        err->status = XPV_E_BAD_PROFILE;
        snprintf(err->msg, sizeof err->msg, "invalid JSON at byte %d: %s", je.position, je.text);
    }
    return j;
}

static int dump(json_t *j, xpv_buf *out) {
    char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!s) return -1;
    xpv_buf_puts(out, s);
    free(s);
    return 0;
}

/* memory_profile: the timeline lives in sampledTimelineSnapshots now. */
static void normalize_memory_profile(json_t *root) {
    json_t *per = json_object_get(root, "memoryProfilePerAllocator");
    const char *key;
    json_t *a;
    json_object_foreach(per, key, a) {
        if (json_object_get(a, "sampledTimelineSnapshots")) continue;
        json_t *src = json_object_get(a, "memoryProfileTimelineSnapshots");
        if (!src) src = json_object_get(a, "memoryProfileSnapshots");
        if (src) json_object_set(a, "sampledTimelineSnapshots", src);
        else json_object_set_new(a, "sampledTimelineSnapshots", json_array());
    }
    if (!json_object_get(root, "memoryIds") && json_is_object(per)) {
        json_t *ids = json_array();
        json_object_foreach(per, key, a) json_array_append_new(ids, json_string(key));
        json_object_set_new(root, "memoryIds", ids);
    }
    if (!json_object_get(root, "numHosts")) json_object_set_new(root, "numHosts", json_integer(1));
}

/* pod_viewer 2020/2021 -> current: flat *DurationUs fields become
 * stepBreakdownUs keyed by event id, plus stepBreakdownEvents, deviceType,
 * topology (ints) and diagnostics; the old fields are kept. */
static void normalize_pod_viewer(json_t *root) {
    static const struct { const char *field, *name; } flat[] = {
        {"highFlopsComputeUs", "High flops compute"},
        {"lowFlopsComputeUs", "Low flops compute"},
        {"hostInfeedDurationUs", "Infeed"},
        {"hostOutfeedDurationUs", "Outfeed"},
        {"crsDurationUs", "All reduce"},
        {"allReduceComputeDurationUs", "AllReduce compute"},
        {"allReduceSyncDurationUs", "AllReduce sync"},
        {"sendDurationUs", "Send"},
        {"recvDurationUs", "Recv"},
        {"bcInfeedTransformDurationUs", "Infeed transform"},
        {"bcInfeedWaitDurationUs", "Infeed wait"},
        {"bcOutfeedDurationUs", "Outfeed (bc)"},
    };
    enum { NFLAT = sizeof flat / sizeof flat[0] };
    int present[NFLAT] = {0};
    json_t *seq = json_object_get(json_object_get(root, "podStatsSequence"), "podStatsMap");
    size_t i;
    json_t *step;
    int had_breakdown = 0;
    json_array_foreach(seq, i, step) {
        const char *core;
        json_t *cs;
        json_object_foreach(json_object_get(step, "podStatsPerCore"), core, cs) {
            if (json_object_get(cs, "stepBreakdownUs")) had_breakdown = 1;
            for (int f = 0; f < NFLAT; f++)
                if (json_object_get(cs, flat[f].field)) present[f] = 1;
        }
        /* 2021 logicalIdGroups -> replicaGroups; scalar core ids -> arrays. */
        size_t k;
        json_t *op;
        json_array_foreach(json_object_get(step, "allReduceOpDb"), k, op) {
            json_t *lg = json_object_get(op, "logicalIdGroups");
            if (!lg || json_object_get(op, "replicaGroups")) continue;
            json_t *groups = json_array();
            size_t g;
            json_t *grp;
            json_array_foreach(lg, g, grp) {
                json_t *ids = json_array();
                size_t m;
                json_t *lid;
                json_array_foreach(json_object_get(grp, "logicalIds"), m, lid)
                    json_array_append(ids, json_object_get(lid, "replicaId"));
                json_t *o = json_object();
                json_object_set_new(o, "replicaIds", ids);
                json_array_append_new(groups, o);
            }
            json_object_set_new(op, "replicaGroups", groups);
        }
        json_t *ch;
        json_array_foreach(json_object_get(step, "channelDb"), k, ch) {
            static const char *const pairs[][2] = {{"srcCoreId", "srcCoreIds"},
                                                   {"dstCoreId", "dstCoreIds"}};
            for (int p = 0; p < 2; p++) {
                json_t *v = json_object_get(ch, pairs[p][0]);
                if (v && !json_object_get(ch, pairs[p][1])) {
                    json_t *arr = json_array();
                    json_array_append(arr, v);
                    json_object_set_new(ch, pairs[p][1], arr);
                }
            }
        }
    }
    if (!had_breakdown) {
        int id[NFLAT];
        int next = 1;
        json_t *events = json_array();
        for (int f = 0; f < NFLAT; f++) {
            if (!present[f]) continue;
            id[f] = next++;
            json_t *e = json_object();
            json_object_set_new(e, "id", json_integer(id[f]));
            json_object_set_new(e, "name", json_string(flat[f].name));
            json_array_append_new(events, e);
        }
        json_array_foreach(seq, i, step) {
            const char *core;
            json_t *cs;
            json_object_foreach(json_object_get(step, "podStatsPerCore"), core, cs) {
                json_t *bd = json_object();
                for (int f = 0; f < NFLAT; f++) {
                    if (!present[f]) continue;
                    json_t *v = json_object_get(cs, flat[f].field);
                    char k[16];
                    snprintf(k, sizeof k, "%d", id[f]);
                    json_object_set_new(bd, k, json_real(v ? json_number_value(v) : 0.0));
                }
                json_object_set_new(cs, "stepBreakdownUs", bd);
            }
        }
        if (!json_object_get(root, "stepBreakdownEvents"))
            json_object_set_new(root, "stepBreakdownEvents", events);
        else
            json_decref(events);
    }
    json_t *env = json_object_get(root, "runEnvironment");
    if (!json_object_get(root, "deviceType") && json_object_get(env, "tpuType"))
        json_object_set(root, "deviceType", json_object_get(env, "tpuType"));
    json_t *topo = json_object_get(env, "topology");
    if (!json_object_get(root, "topology") && json_is_object(topo)) {
        json_t *t = json_object();
        const char *k;
        json_t *v;
        json_object_foreach(topo, k, v) {
            if (json_is_string(v)) json_object_set_new(t, k, json_integer(atoll(json_string_value(v))));
            else json_object_set(t, k, v);
        }
        json_object_set_new(root, "topology", t);
    }
    if (!json_object_get(root, "diagnostics")) {
        json_t *d = json_object();
        json_object_set_new(d, "info", json_array());
        json_object_set_new(d, "warnings", json_array());
        json_object_set_new(d, "errors", json_array());
        json_object_set_new(root, "diagnostics", d);
    }
}

/* ==== Stored DataTable JSON, for CSV ===================================== */

/* One cell as a JSON reader gives it: strings, integers, reals (as text
 * that stays a real: -0.0, 1e16), booleans, null; arrays and objects as
 * their compact JSON. */
static void import_value(xpv_dt *t, json_t *v) {
    char tmp[40];
    switch (json_typeof(v)) {
    case JSON_STRING: xpv_dt_strn(t, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER: xpv_dt_int(t, (int64_t)json_integer_value(v)); break;
    case JSON_REAL:
        snprintf(tmp, sizeof tmp, "%.17g", json_real_value(v));
        if (!strpbrk(tmp, ".eEni")) strcat(tmp, ".0");
        xpv_dt_num_text(t, tmp);
        break;
    case JSON_TRUE: xpv_dt_bool(t, 1); break;
    case JSON_FALSE: xpv_dt_bool(t, 0); break;
    case JSON_NULL: xpv_dt_null(t); break;
    default: {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        xpv_dt_str(t, s ? s : "");
        free(s);
    }
    }
}

static void import_table(xpv_dt_doc *doc, json_t *jt) {
    xpv_dt *t = xpv_dt_doc_table(doc, XPV_DT_PROPS_LAST | XPV_DT_ROLE_LAST);
    json_t *cols = json_object_get(jt, "cols"), *c, *row;
    size_t i, ncols = json_array_size(cols);
    json_array_foreach(cols, i, c) {
        const char *id = json_string_value(json_object_get(c, "id"));
        const char *label = json_string_value(json_object_get(c, "label"));
        const char *type = json_string_value(json_object_get(c, "type"));
        xpv_dt_add_col(t, id, label, type, NULL);
    }
    json_array_foreach(json_object_get(jt, "rows"), i, row) {
        json_t *cells = json_object_get(row, "c");
        xpv_dt_row(t);
        for (size_t k = 0; k < ncols; k++) {
            json_t *cell = json_array_get(cells, k);
            if (json_is_object(cell)) cell = json_object_get(cell, "v");
            if (cell) import_value(t, cell);
            else xpv_dt_null(t);
        }
    }
}

/* The DataTables of a stored JSON answer (array elements with "cols"). */
static void import_tables(xpv_dt_doc *doc, json_t *root) {
    size_t i;
    json_t *el;
    json_array_foreach(root, i, el) {
        if (json_is_object(el) && json_is_array(json_object_get(el, "cols")))
            import_table(doc, el);
        else
            xpv_dt_doc_raw(doc, "{}");   /* not a table: only counted out */
    }
}

/* ==== Entry points ======================================================= */

/* The stored JSON of a JSON kind, inflated, parsed and shape-checked. */
static json_t *load_json(enum xpv_legacy_kind kind, const uint8_t *d, size_t len,
                         size_t max_inflated, xpv_err *err) {
    void *inflated = NULL;
    size_t n = len;
    if (len >= 2 && d[0] == 0x1f && d[1] == 0x8b) {
        inflated = xpv_gunzip(d, len, max_inflated, &n, err);
        if (!inflated) return NULL;
        d = inflated;
    }
    json_t *j = parse_json(d, n, err);
    free(inflated);
    if (!j) return NULL;
    int ok = kind == XPV_LEGACY_POD_VIEWER_JSON || kind == XPV_LEGACY_MEMORY_PROFILE_JSON_GZ
                 ? json_is_object(j) : json_is_array(j);
    if (!ok) {
        json_decref(j);
        fail(err, 422, "%s", "stored tool JSON has an unexpected shape");
        return NULL;
    }
    return j;
}

/* The tables of a protobuf kind into `doc`: 1, or 0 when the bytes are
 * not the kind's message, -1 when the kind is no protobuf table kind. */
static int pb_tables(enum xpv_legacy_kind kind, const uint8_t *d, size_t len, xpv_dt_doc *doc) {
    switch (kind) {
    case XPV_LEGACY_OVERVIEW_PB: {
        OverviewPage *o = tensorflow__profiler__legacy_overview_page__unpack(NULL, len, d);
        if (!o) return 0;
        overview_tables(doc, o);
        tensorflow__profiler__legacy_overview_page__free_unpacked(o, NULL);
        return 1;
    }
    case XPV_LEGACY_INPUT_PIPELINE_PB: {
        InputResult *r =
            tensorflow__profiler__legacy_input_pipeline_analysis_result__unpack(NULL, len, d);
        if (!r) return 0;
        input_pipeline_tables(doc, r);
        tensorflow__profiler__legacy_input_pipeline_analysis_result__free_unpacked(r, NULL);
        return 1;
    }
    case XPV_LEGACY_TF_STATS_PB: {
        TfStatsDb *db = tensorflow__profiler__legacy_tf_stats_database__unpack(NULL, len, d);
        if (!db) return 0;
        int gpu = !strcmp(db->device_type, "GPU");
        tf_stats_table(doc, db->with_idle, gpu);
        tf_stats_table(doc, db->without_idle, gpu);
        tensorflow__profiler__legacy_tf_stats_database__free_unpacked(db, NULL);
        return 1;
    }
    case XPV_LEGACY_KERNEL_STATS_PB: {
        /* A 0-byte file is a valid empty KernelStatsDb. */
        KernelDb *db = tensorflow__profiler__legacy_kernel_stats_db__unpack(NULL, len, d);
        if (!db) return 0;
        doc->array = 0;
        kernel_stats_table(doc, db);
        tensorflow__profiler__legacy_kernel_stats_db__free_unpacked(db, NULL);
        return 1;
    }
    default: return -1;
    }
}

static const char NOT_PB[] = "file does not decode as the expected protobuf message";

int xpv_legacy_tables(enum xpv_legacy_kind kind, const void *data, size_t len,
                      size_t max_inflated, xpv_dt_doc *doc, xpv_err *err) {
    if (!max_inflated) max_inflated = DEFAULT_MAX_INFLATED;
    int rc = pb_tables(kind, data, len, doc);
    if (rc >= 0) return rc ? 0 : (fail(err, 422, "%s", NOT_PB), -1);
    if (kind != XPV_LEGACY_OVERVIEW_JSON && kind != XPV_LEGACY_INPUT_PIPELINE_JSON) {
        fail(err, 400, "%s", "this file holds no DataTables");
        return -1;
    }
    json_t *j = load_json(kind, data, len, max_inflated, err);
    if (!j) return -1;
    import_tables(doc, j);
    json_decref(j);
    return 0;
}

int xpv_legacy_render(enum xpv_legacy_kind kind, const void *data, size_t len,
                      size_t max_inflated, xpv_buf *out, xpv_err *err) {
    if (!max_inflated) max_inflated = DEFAULT_MAX_INFLATED;
    xpv_dt_doc doc;
    xpv_dt_doc_init(&doc, 1);
    int rc = pb_tables(kind, data, len, &doc);
    if (rc == 1) xpv_dt_doc_write_json(&doc, out);
    xpv_dt_doc_release(&doc);
    if (rc >= 0) return rc ? 0 : (fail(err, 422, "%s", NOT_PB), -1);
    switch (kind) {
    case XPV_LEGACY_OVERVIEW_JSON:
    case XPV_LEGACY_INPUT_PIPELINE_JSON:
    case XPV_LEGACY_POD_VIEWER_JSON:
    case XPV_LEGACY_MEMORY_PROFILE_JSON_GZ: {
        json_t *j = load_json(kind, data, len, max_inflated, err);
        if (!j) return -1;
        if (kind == XPV_LEGACY_POD_VIEWER_JSON) normalize_pod_viewer(j);
        if (kind == XPV_LEGACY_MEMORY_PROFILE_JSON_GZ) normalize_memory_profile(j);
        int drc = dump(j, out);
        json_decref(j);
        if (drc) fail(err, 500, "%s", "JSON serialization failed");
        return drc;
    }
    default:
        fail(err, 400, "%s", "not a per-tool file kind");
        return -1;
    }
}
