/*
 * data_routes.c - the /data/plugin/profile/<route> handlers (XProf's API):
 * runs, run_tools, hosts, data, data_csv, profile_info, version; /statz.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "capture_route.h"
#include "arena.h"
#include "assets.h"
#include "discovery.h"
#include "legacy_serve.h"
#include "loader.h"
#include "opstats.h"
#include "version.h"

/* ==== Data routes ====================================================== */

static void route_runs(xpv_app *a, const xpv_request *rq, const char *inm,
                        xpv_response *r) {
    (void)inm;
    (void)rq;
    xpv_runlist *rl = xpv_logdir_scan(a->ld, 0);
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_buf_putc(&b, '[');
    for (size_t i = 0; i < rl->nruns; i++) {
        if (i) xpv_buf_putc(&b, ',');
        xpv_buf_json_cstr(&b, rl->runs[i].name);
    }
    xpv_buf_putc(&b, ']');
    xpv_runlist_release(rl);
    resp_take_buf(r, &b);
}


/* resolve_run (and resolve_hosts when `hosts`), answering the error
 * itself: 0, or -1 when `r` holds the error (rc released). */
static int open_request(xpv_app *a, const xpv_request *rq, int need_tool, int hosts,
                        reqctx *rc, xpv_response *r) {
    xpv_err err;
    xpv_err_clear(&err);
    if (resolve_run(a, rq, need_tool, rc, &err) == 0 &&
        (!hosts || resolve_hosts(rq, rc, &err) == 0))
        return 0;
    resp_error(r, &err);
    reqctx_release(rc);
    return -1;
}

static void route_run_tools(xpv_app *a, const xpv_request *rq, const char *inm,
                             xpv_response *r) {
    reqctx rc;
    xpv_err err;
    if (open_request(a, rq, 0, 0, &rc, r) != 0) return;
    if (!rc.run->nhosts || rc.run->nlegacy || rc.run->hosts[0].kind) {   /* older formats */
        legacy_run_tools(a, &rc, inm, r);
        reqctx_release(&rc);
        return;
    }
    /* XProf decides from the first host file; cached per file identity.  A
     * host that cannot be read (corrupt, unreadable, gone) does not hide
     * the run: the next one decides, and only when none can be read does
     * run_tools answer the first host's error. */
    const xpv_host *h = &rc.run->hosts[0];
    if (set_validators(a, r, "run_tools", &h, 1, NULL, inm)) {
        reqctx_release(&rc);
        return;
    }
    xpv_centry *e = NULL;
    xpv_err first;
    xpv_err_clear(&first);
    for (size_t i = 0; i < rc.run->nhosts && !e; i++) {
        h = &rc.run->hosts[i];
        if (h->kind) continue;   /* older formats are listed by legacy_run_tools */
        xpv_err_clear(&err);
        e = get_tool_list(a, h, &err);
        if (!e && !first.status) first = err;
    }
    if (!e) {
        resp_error(r, &first);
    } else {
        r->body = xpv_centry_value(e);
        r->len = strlen(r->body);
        r->pin = e;
        r->pin_cache = a->cache;
    }
    reqctx_release(&rc);
}

static int cmp_cstr(const void *x, const void *y) {
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static void route_hosts(xpv_app *a, const xpv_request *rq, const char *inm,
                         xpv_response *r) {
    if (legacy_hosts(a, rq, r)) return;   /* older formats */
    (void)inm;
    reqctx rc;
    if (open_request(a, rq, rq->tag != NULL, 0, &rc, r) != 0) return;
    size_t n = rc.run->nhosts;
    const char **names = xpv_xcalloc(n + 1, sizeof *names);
    size_t k = 0;
    unsigned flags = rc.tool ? rc.tool->flags : 0;
    if (n > 1 && (flags & XPV_TOOL_ALL_HOSTS_ONLY)) {
        names[k++] = ALL_HOSTS;
    } else {
        for (size_t i = 0; i < n; i++) names[k++] = rc.run->hosts[i].name;
        if (n > 1 && (flags & XPV_TOOL_ALL_HOSTS_OK)) names[k++] = ALL_HOSTS;
        /* XProf adds ALL_HOSTS, then sorts. */
        qsort(names, k, sizeof *names, cmp_cstr);
    }
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_buf_putc(&b, '[');
    for (size_t i = 0; i < k; i++) {
        if (i) xpv_buf_putc(&b, ',');
        xpv_buf_puts(&b, "{\"hostname\":");
        xpv_buf_json_cstr(&b, names[i]);
        xpv_buf_putc(&b, '}');
    }
    xpv_buf_putc(&b, ']');
    free(names);
    resp_take_buf(r, &b);
    reqctx_release(&rc);
}

static void route_data(xpv_app *a, const xpv_request *rq, const char *inm,
                       xpv_response *r, int csv) {
    if (legacy_data(a, rq, inm, r, csv)) return;   /* older formats */
    reqctx rc;
    xpv_err err;
    xpv_err_clear(&err);
    if (open_request(a, rq, 1, 1, &rc, r) != 0) return;
    /* A Chrome-trace run (PyTorch) answers only the tools its run_tools
     * lists; the others are 404, not an empty page. */
    if (rc.run->nhosts && rc.run->hosts[0].kind && !is_trace_tool(rc.tool) &&
        !legacy_trace_run_offers(a, &rc, rc.tool->name)) {
        resp_errorf(r, XPV_E_NOT_FOUND, "run %.200s has no %s (see run_tools for what it offers)",
                    rc.run->name, rc.tool->name);
        reqctx_release(&rc);
        return;
    }
    if (csv && !rc.tool->tables) {   /* before any work */
        resp_errorf(r, XPV_E_BAD_REQUEST, "%s has no tables: data_csv serves table tools only",
                    rc.tool->name);
        reqctx_release(&rc);
        return;
    }
    if (set_validators(a, r, csv ? "data_csv" : "data", rc.hosts, rc.nhosts, rq->q, inm)) {
        reqctx_release(&rc);
        return;
    }
    if (!csv && stream_body(a, &rc, rq, r) == 0) {   /* the full trace */
        reqctx_release(&rc);
        return;
    }
    xpv_centry *e = get_rendered(a, &rc, rq, csv ? (long)rq->table : -1, &err);
    if (!e) {
        resp_error(r, &err);
        reqctx_release(&rc);
        return;
    }
    const rendered *out = xpv_centry_value(e);
    r->body = out->body;
    r->len = out->len;
    r->gz = out->gz;
    r->gz_len = out->gz_len;
    r->compress = out->len > 512;
    r->pin = e;
    r->pin_cache = a->cache;
    if (csv) {
        /* filename="<tool>_<run>_<host>.csv" */
        resp_csv(r, "%s_%s_%s", rc.tool->name, rc.run->name,
                 rc.host_label ? rc.host_label : ALL_HOSTS);
    } else if (rc.tool->content_type) {    /* e.g. graph_viewer's DOT text */
        xpv_params params = xpv_request_params(rq);
        const char *ct = rc.tool->content_type(&params);
        if (ct) r->content_type = ct;
    }
    reqctx_release(&rc);
}

static void json_str_array(xpv_buf *b, const xpv_str *s, uint32_t n) {
    xpv_buf_putc(b, '[');
    for (uint32_t i = 0; i < n; i++) {
        if (i) xpv_buf_putc(b, ',');
        xpv_buf_json_str(b, s[i].ptr, s[i].len);
    }
    xpv_buf_putc(b, ']');
}

static void route_profile_info(xpv_app *a, const xpv_request *rq, const char *inm,
                                xpv_response *r) {
    reqctx rc;
    xpv_err err;
    xpv_err_clear(&err);
    if (open_request(a, rq, 0, 0, &rc, r) != 0) return;
    if (!rc.run->nhosts) {   /* older formats: per-tool files only */
        legacy_profile_info(&rc, r);
        reqctx_release(&rc);
        return;
    }
    const char *hn = rq->host;
    const xpv_host *h = (!hn || !strcmp(hn, ALL_HOSTS))
                            ? &rc.run->hosts[0] : xpv_run_find_host(rc.run, hn);
    if (!h) {
        resp_errorf(r, XPV_E_NOT_FOUND, "unknown host in run %s: %s", rc.run->name, hn);
        reqctx_release(&rc);
        return;
    }
    if (set_validators(a, r, "profile_info", &h, 1, NULL, inm)) {
        reqctx_release(&rc);
        return;
    }
    xpv_centry *e = get_profile(a, h, 0, &err);
    if (!e) {
        resp_error(r, &err);
        reqctx_release(&rc);
        return;
    }
    const xpv_profile *p = xpv_centry_value(e);
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_buf_puts(&b, "{\"host\":");
    xpv_buf_json_cstr(&b, h->name);
    xpv_buf_puts(&b, ",\"file\":");
    xpv_buf_json_cstr(&b, h->rel);
    xpv_buf_printf(&b, ",\"size\":%llu,\"decoded_size\":%llu,\"memory\":%llu",
                   (unsigned long long)h->size, (unsigned long long)p->file_size,
                   (unsigned long long)p->mem_size);
    xpv_buf_puts(&b, ",\"planes\":[");
    for (uint32_t i = 0; i < p->nplanes; i++) {
        const xpv_plane *pl = &p->planes[i];
        if (i) xpv_buf_putc(&b, ',');
        xpv_buf_printf(&b, "{\"id\":%lld,\"name\":", (long long)pl->id);
        xpv_buf_json_str(&b, pl->name.ptr, pl->name.len);
        xpv_buf_printf(&b, ",\"lines\":%u,\"events\":%llu,\"stats\":%u,"
                       "\"event_metadata\":%u}",
                       pl->nlines, (unsigned long long)pl->nevents,
                       pl->nstat_meta ? pl->nstat_meta - 1 : 0,
                       pl->nevent_meta ? pl->nevent_meta - 1 : 0);
    }
    xpv_buf_puts(&b, "],\"hostnames\":");
    json_str_array(&b, p->hostnames, p->nhostnames);
    xpv_buf_puts(&b, ",\"errors\":");
    json_str_array(&b, p->errors, p->nerrors);
    xpv_buf_puts(&b, ",\"warnings\":");
    json_str_array(&b, p->warnings, p->nwarnings);
    xpv_buf_printf(&b, ",\"events\":%llu}", (unsigned long long)p->nevents);
    xpv_cache_release(a->cache, e);
    resp_take_buf(r, &b);
    reqctx_release(&rc);
}

/* module_list (XProf): the run's HLO module names, comma-separated, as
 * text: "jit_f(123),jit_g(45)".  Ordered by device time (the default
 * module of memory_viewer first), then by name. */
static void route_module_list(xpv_app *a, const xpv_request *rq, const char *inm,
                              xpv_response *r) {
    (void)inm;
    reqctx rc;
    xpv_err err;
    xpv_err_clear(&err);
    tool_input in;
    if (resolve_run(a, rq, 0, &rc, &err) != 0 || !(rc.tool = find_tool(a, "memory_viewer")) ||
        !rc.run->nhosts || rc.run->hosts[0].kind || resolve_hosts(rq, &rc, &err) != 0 ||
        get_tool_input(a, &rc, 0, &in, &err) != 0) {
        if (!err.status) xpv_err_set(&err, XPV_E_NOT_FOUND, "this run has no HLO modules");
        resp_error(r, &err);
        reqctx_release(&rc);
        return;
    }
    const xpv_op_stats *os = in.derived;
    const xpv_hlo_program **order = xpv_hlo_programs_by_device_time(os->hlo, &os->ops->device);
    xpv_buf b;
    xpv_buf_init(&b);
    for (size_t i = 0; order && i < os->hlo->n; i++) {
        if (i) xpv_buf_putc(&b, ',');
        xpv_buf_puts(&b, order[i]->meta_name);
    }
    free(order);
    tool_input_release(a, &in);
    resp_take_buf(r, &b);
    r->content_type = "text/plain; charset=utf-8";
    reqctx_release(&rc);
}

static void route_version(xpv_app *a, const xpv_request *rq, const char *inm,
                           xpv_response *r) {
    (void)inm;
    (void)a;
    (void)rq;
    r->content_type = "text/plain; charset=utf-8";
    r->body = XPV_VERSION;
    r->len = strlen(XPV_VERSION);
}

static void route_data_plain(xpv_app *a, const xpv_request *rq, const char *inm,
                              xpv_response *r) {
    route_data(a, rq, inm, r, 0);
}

static void route_data_csv(xpv_app *a, const xpv_request *rq, const char *inm,
                            xpv_response *r) {
    route_data(a, rq, inm, r, 1);
}

static const struct {
    const char *name;
    void (*fn)(xpv_app *a, const xpv_request *rq, const char *inm, xpv_response *r);
} data_routes[] = {
    {"runs", route_runs},
    {"run_tools", route_run_tools},
    {"hosts", route_hosts},
    {"data", route_data_plain},
    {"data_csv", route_data_csv},
    {"profile_info", route_profile_info},
    {"version", route_version},
    {"module_list", route_module_list},
    {"capture_profile", xpv_capture_route},
    {"capture_token", xpv_capture_token_route},
    {"diff", route_diff},            /* diff_route.c */
    {"diff_csv", route_diff_csv},
};

/* `r` is fresh from resp_init (r->ims already set by the caller). */
void data_route(xpv_app *a, const char *route, const xpv_query *q,
                const char *inm, xpv_response *r) {
    for (size_t i = 0; i < sizeof data_routes / sizeof data_routes[0]; i++)
        if (!strcmp(data_routes[i].name, route)) {
            xpv_request rq;
            xpv_err err;
            xpv_err_clear(&err);
            if (xpv_request_parse(&rq, q, &err) != 0) resp_error(r, &err);
            else data_routes[i].fn(a, &rq, inm, r);
            return;
        }
    resp_errorf(r, XPV_E_NOT_FOUND, "unknown route: %.200s", route);
}

void xpv_app_data_route(xpv_app *a, const char *route, const xpv_query *q,
                        xpv_response *r) {
    resp_init(r);
    data_route(a, route, q, NULL, r);
}

void xpv_app_get_stats(xpv_app *a, xpv_app_stats *st) {
    st->decodes = __atomic_load_n(&a->decodes, __ATOMIC_RELAXED);
    st->decode_failures = __atomic_load_n(&a->decode_failures, __ATOMIC_RELAXED);
    st->not_modified = __atomic_load_n(&a->not_modified, __ATOMIC_RELAXED);
    st->stale_reloads = __atomic_load_n(&a->stale_reloads, __ATOMIC_RELAXED);
    xpv_cache_get_stats(a->cache, &st->cache);
    st->has_disk = a->dc != NULL;
    memset(&st->disk, 0, sizeof st->disk);
    if (a->dc) xpv_diskcache_get_stats(a->dc, &st->disk);
}

void route_statz(xpv_app *a, xpv_response *r) {
    xpv_app_stats st;
    xpv_buf b;
    xpv_app_get_stats(a, &st);
    xpv_buf_init(&b);
    xpv_buf_printf(&b, "{\"version\":\"%s\",\"decodes\":%llu,\"decode_failures\":%llu,"
                   "\"not_modified\":%llu,\"stale_reloads\":%llu,\"cache\":{\"budget\":%llu,\"used\":%llu,"
                   "\"entries\":%llu,\"hits\":%llu,\"misses\":%llu,\"evictions\":%llu,"
                   "\"builds\":%llu}", XPV_VERSION,
                   (unsigned long long)st.decodes, (unsigned long long)st.decode_failures,
                   (unsigned long long)st.not_modified, (unsigned long long)st.stale_reloads,
                   (unsigned long long)st.cache.budget,
                   (unsigned long long)st.cache.used, (unsigned long long)st.cache.entries,
                   (unsigned long long)st.cache.hits, (unsigned long long)st.cache.misses,
                   (unsigned long long)st.cache.evictions, (unsigned long long)st.cache.builds);
    if (st.has_disk)
        xpv_buf_printf(&b, ",\"disk_cache\":{\"hits\":%llu,\"misses\":%llu,\"rejected\":%llu,"
                       "\"writes\":%llu,\"write_errors\":%llu,\"skipped\":%llu}",
                       (unsigned long long)st.disk.hits, (unsigned long long)st.disk.misses,
                       (unsigned long long)st.disk.rejected, (unsigned long long)st.disk.writes,
                       (unsigned long long)st.disk.write_errors,
                       (unsigned long long)st.disk.skipped);
    xpv_buf_putc(&b, '}');
    resp_take_buf(r, &b);
    r->cache_control = "no-store";
}
