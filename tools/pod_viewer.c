/*
 * pod_viewer.c - the pod viewer tool (XProf pod_viewer, ALL_HOSTS).
 *
 * Per step of the combined step database (op_stats, steps.h) and per
 * worker, the step-time breakdown in XProf's nine generic categories
 * (xprof-reference.md §2.11), written as XProf's PodViewerDatabase in
 * protobuf JSON:
 *
 *   {"podStatsSequence": {"podStatsMap": [{"stepNum": n,
 *      "podStatsPerCore": {"<core id>": {"hostName", "chipId", "nodeId",
 *        "stepNum", "totalDurationUs", "stepBreakdownUs": {"1": us, ...},
 *        "bottleneck"}}, "channelDb": [], "coreIdToReplicaIdMap": {},
 *      "allReduceOpDb": []}]},
 *    "stepBreakdownEvents": [{"id": 1, "name": "Device compute"}, ...],
 *    "diagnostics": {"info": [], "warnings": [...], "errors": []},
 *    "deviceType": "..."}
 *
 * GPU hosts have one core each, keyed like XProf's global core ids
 * (1000 * host index + 1, the local GPU core id being 1).  The host name is
 * the profile's file name (XProf prints the XSpace hostname; the file name
 * tells apart runs whose files carry the same embedded name).  Each host's
 * own step for a combined step is the one overlapping it most in time
 * (steps are aligned by time, as XProf's step intersection does); hosts
 * without a device are coordinators and left out when some host has one.
 * Step diagnostics are the op_stats ones (xpv_ipa_write_diagnostics_table).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opstats.h"
#include "steps.h"
#include "tool.h"

#define PV_CORES_PER_HOST 1000   /* XProf kMaxDevicesPerHost */
#define PV_GPU_CORE 1            /* XProf kDefaultGpuLocalCoreId */

/* XProf GenericEventType, ids 1..9. */
static const char *const pv_event_names[] = {
    "Device compute", "Device to device", "Device collective communication",
    "Host compute", "Kernel launch", "Input", "Output", "Compilation", "All others",
};
#define PV_NCATS 9

/* Breakdown of one step in ps, by generic category (index 0 = id 1). */
static void pv_breakdown(const xpv_step *s, int64_t out[PV_NCATS]) {
    const int64_t *t = s->type_ps;
    out[0] = t[XPV_EV_DEVICE_COMPUTE_32] + t[XPV_EV_DEVICE_COMPUTE_16];
    out[1] = t[XPV_EV_DEVICE_TO_DEVICE] + t[XPV_EV_DEVICE_WAIT_DEVICE];
    out[2] = t[XPV_EV_DEVICE_COLLECTIVES];
    out[3] = t[XPV_EV_HOST_COMPUTE];
    out[4] = t[XPV_EV_HOST_PREPARE];
    out[5] = t[XPV_EV_HOST_WAIT_INPUT] + t[XPV_EV_HOST_TO_DEVICE] + t[XPV_EV_DEVICE_WAIT_HOST];
    out[6] = t[XPV_EV_DEVICE_TO_HOST];
    out[7] = t[XPV_EV_HOST_COMPILE];
    out[8] = t[XPV_EV_UNKNOWN];
}

/* XProf: sort (ps, name) ascending and take the last. */
static const char *pv_bottleneck(const int64_t ps[PV_NCATS]) {
    int best = 0;
    for (int i = 1; i < PV_NCATS; i++) {
        if (ps[i] > ps[best] ||
            (ps[i] == ps[best] && strcmp(pv_event_names[i], pv_event_names[best]) > 0))
            best = i;
    }
    return pv_event_names[best];
}

/* The step of `db` overlapping [begin, begin+dur) most, or NULL. */
static const xpv_step *pv_match(const xpv_step_db *db, int64_t begin, int64_t dur) {
    const xpv_step *best = NULL;
    int64_t best_ov = 0;
    for (size_t i = 0; i < db->n; i++) {
        const xpv_step *s = &db->steps[i];
        int64_t lo = s->begin_ps > begin ? s->begin_ps : begin;
        int64_t e1 = s->begin_ps + s->dur_ps, e2 = begin + dur;
        int64_t hi = e1 < e2 ? e1 : e2;
        int64_t ov = hi - lo;
        if (ov > best_ov) {
            best = s;
            best_ov = ov;
        }
    }
    return best;
}

static void pv_us(xpv_buf *b, int64_t ps) {
    /* PicoToMicro: ps / 1e6 as a double. */
    xpv_buf_double(b, (double)ps / 1e6);
}

static void pv_record(xpv_buf *b, const char *host, const xpv_step *s) {
    int64_t ps[PV_NCATS];
    pv_breakdown(s, ps);
    xpv_buf_puts(b, "{\"hostName\":");
    xpv_buf_json_cstr(b, host);
    xpv_buf_puts(b, ",\"chipId\":0,\"nodeId\":0,\"stepNum\":");
    xpv_buf_i64(b, s->step_num);
    xpv_buf_puts(b, ",\"totalDurationUs\":");
    pv_us(b, s->dur_ps);
    xpv_buf_puts(b, ",\"stepBreakdownUs\":{");
    for (int i = 0; i < PV_NCATS; i++) {
        if (i) xpv_buf_putc(b, ',');
        xpv_buf_printf(b, "\"%d\":", i + 1);
        pv_us(b, ps[i]);
    }
    xpv_buf_puts(b, "},\"bottleneck\":");
    xpv_buf_json_cstr(b, pv_bottleneck(ps));
    xpv_buf_putc(b, '}');
}

/* Step diagnostics from op_stats' diagnostics DataTable, as
 * {"info":[],"warnings":[...],"errors":[...]}. */
static void pv_diagnostics(xpv_buf *b, const xpv_op_stats *os) {
    xpv_dt_doc doc;
    xpv_dt_doc_init(&doc, 1);
    xpv_ipa_diagnostics_table(&doc, os, 0);
    const xpv_dt *t = xpv_dt_doc_get(&doc, 0);
    static const char *const keys[3] = {"info", "warnings", "errors"};
    static const char *const sev[3] = {"INFO", "WARNING", "ERROR"};
    xpv_buf_putc(b, '{');
    for (int k = 0; k < 3; k++) {
        if (k) xpv_buf_putc(b, ',');
        xpv_buf_printf(b, "\"%s\":[", keys[k]);
        int first = 1;
        for (size_t i = 0; i < xpv_dt_nrows(t); i++) {
            const xpv_dt_cell *s = xpv_dt_cell_at(t, i, 0), *m = xpv_dt_cell_at(t, i, 1);
            if (!s || !m || strcmp(s->v.s, sev[k])) continue;
            if (!first) xpv_buf_putc(b, ',');
            first = 0;
            xpv_buf_json_cstr(b, m->v.s);
        }
        xpv_buf_putc(b, ']');
    }
    xpv_buf_putc(b, '}');
    xpv_dt_doc_release(&doc);
}

int xpv_pod_viewer_render(const xpv_hostset *hs, const void *derived, const xpv_params *q,
                          xpv_buf *out, xpv_err *err) {
    (void)q;
    const xpv_op_stats *os = derived;
    xpv_op_stats *own = NULL;
    if (!os) os = own = xpv_op_stats_build(hs, err);
    if (!os) return -1;
    const xpv_step_db *all = &os->steps;

    /* Each host's own steps (one host: the combined db is its db). */
    const xpv_step_db *const *dbs = os->host_steps;
    int any_device = 0;
    if (hs->n > 1)
        for (size_t h = 0; h < hs->n; h++) any_device |= dbs[h] && dbs[h]->has_device;

    xpv_buf_puts(out, "{\"podStatsSequence\":{\"podStatsMap\":[");
    for (size_t i = 0; i < all->n; i++) {
        const xpv_step *cs = &all->steps[i];
        if (i) xpv_buf_putc(out, ',');
        xpv_buf_puts(out, "{\"stepNum\":");
        xpv_buf_i64(out, cs->step_num);
        xpv_buf_puts(out, ",\"podStatsPerCore\":{");
        int first = 1;
        for (size_t h = 0; h < hs->n; h++) {
            const xpv_step *s = cs;
            if (hs->n > 1) {
                if (!dbs[h] || (any_device && !dbs[h]->has_device)) continue;
                s = pv_match(dbs[h], cs->begin_ps, cs->dur_ps);
                if (!s) continue;
            }
            if (!first) xpv_buf_putc(out, ',');
            first = 0;
            xpv_buf_printf(out, "\"%zu\":", h * PV_CORES_PER_HOST + PV_GPU_CORE);
            pv_record(out, hs->hostnames[h], s);
        }
        xpv_buf_puts(out, "},\"channelDb\":[],\"coreIdToReplicaIdMap\":{},\"allReduceOpDb\":[]}");
    }
    xpv_buf_puts(out, "]},\"stepBreakdownEvents\":[");
    for (int i = 0; i < PV_NCATS; i++) {
        if (i) xpv_buf_putc(out, ',');
        xpv_buf_printf(out, "{\"id\":%d,\"name\":", i + 1);
        xpv_buf_json_cstr(out, pv_event_names[i]);
        xpv_buf_putc(out, '}');
    }
    xpv_buf_puts(out, "],\"diagnostics\":");
    pv_diagnostics(out, os);
    xpv_buf_puts(out, ",\"deviceType\":");
    xpv_buf_json_cstr(out, os->device_type);
    xpv_buf_putc(out, '}');

    xpv_op_stats_free(own);
    return 0;
}
