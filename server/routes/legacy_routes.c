/*
 * legacy_routes.c - runs holding TF 2.2-era per-tool files (or Chrome
 * traces) on the same routes: run_tools, hosts, data, profile_info.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "cache.h"
#include "arena.h"
#include "assets.h"
#include "discovery.h"
#include "legacy_serve.h"
#include "loader.h"
#include "version.h"

/* ==== Older formats: TF 2.2-era per-tool files (legacy_serve.h) ======== */

/* run_tools of a run holding per-tool files (or no host at all): the
 * first host's tools merged with the files' tools. */
void legacy_run_tools(xpv_app *a, const reqctx *rc, const char *inm,
                      xpv_response *r) {
    const xpv_run *run = rc->run;
    size_t n = run->nlegacy + (run->nhosts ? 1 : 0);
    const xpv_host **files = xpv_xcalloc(n ? n : 1, sizeof *files);
    for (size_t i = 0; i < run->nlegacy; i++) files[i] = &run->legacy[i];
    if (run->nhosts) files[run->nlegacy] = &run->hosts[0];
    int not_modified = set_validators(a, r, "run_tools", files, n, NULL, inm);
    free(files);
    if (not_modified) return;
    xpv_centry *e = NULL;
    if (run->nhosts) {
        /* A broken xplane still leaves the per-tool files' tools. */
        xpv_err err;
        xpv_err_clear(&err);
        e = get_tool_list(a, &run->hosts[0], &err);
    }
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_legacy_tool_list(run, a->tools, e ? (const char *)xpv_centry_value(e) : NULL, &b);
    if (e) xpv_cache_release(a->cache, e);
    resp_take_buf(r, &b);
}

/* Whether a Chrome-trace run (PyTorch, TF 2.2 trace.json.gz) offers the
 * canonical tool `name`: the same list run_tools answers for it. */
int legacy_trace_run_offers(xpv_app *a, const reqctx *rc, const char *name) {
    const xpv_run *run = rc->run;
    xpv_centry *e = NULL;
    xpv_err err;
    xpv_err_clear(&err);
    if (run->nhosts) e = get_tool_list(a, &run->hosts[0], &err);
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_legacy_tool_list(run, a->tools, e ? (const char *)xpv_centry_value(e) : NULL, &b);
    if (e) xpv_cache_release(a->cache, e);
    xpv_buf q;
    xpv_buf_init(&q);
    xpv_buf_json_cstr(&q, name);
    xpv_buf_putc(&q, '\0');
    xpv_buf_putc(&b, '\0');
    int found = strstr(b.data, q.data) != NULL;
    xpv_buf_free(&q);
    xpv_buf_free(&b);
    return found;
}

/* hosts?tag=T for a tool served from per-tool files.  Returns 1 when it
 * answered. */
int legacy_hosts(xpv_app *a, const xpv_request *rq, xpv_response *r) {
    const char *tag = rq->tag;
    if (!tag) return 0;
    reqctx rc;
    xpv_err err;
    xpv_err_clear(&err);
    char tool[64];
    xpv_legacy_tool_name(tag, tool, sizeof tool);
    if (resolve_run(a, rq, 0, &rc, &err) != 0 || !xpv_legacy_run_has_tool(rc.run, tool)) {
        reqctx_release(&rc);
        return 0;
    }
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_legacy_host_list(rc.run, tool, &b);
    resp_take_buf(r, &b);
    reqctx_release(&rc);
    return 1;
}

/* data / data_csv from a per-tool file.  Returns 1 when it answered. */
int legacy_data(xpv_app *a, const xpv_request *rq, const char *inm, xpv_response *r,
                int csv) {
    reqctx rc;
    xpv_err err;
    memset(&rc, 0, sizeof rc);   /* released below even when never resolved */
    xpv_err_clear(&err);
    char tool[64];
    xpv_legacy_tool_name(rq->tag, tool, sizeof tool);
    if (!tool[0] || resolve_run(a, rq, 0, &rc, &err) != 0) {
        reqctx_release(&rc);
        return 0;
    }
    const xpv_host *f = xpv_legacy_find(rc.run, tool, rq->host);
    if (!f) {
        reqctx_release(&rc);
        return 0;
    }
    if (set_validators(a, r, csv ? "data_csv" : "data", &f, 1, rq->q, inm)) {
        reqctx_release(&rc);
        return 1;
    }
    if (xpv_cache_defer_heavy()) {   /* reads and converts the file: a worker's job */
        reqctx_release(&rc);
        return 1;
    }
    xpv_buf b;
    xpv_buf_init(&b);
    if (xpv_legacy_serve(f, &a->limits, csv ? (long)rq->table : -1, &b, &err) != 0) {
        xpv_buf_free(&b);
        resp_error(r, &err);
        reqctx_release(&rc);
        return 1;
    }
    resp_take_buf(r, &b);
    if (csv) resp_csv(r, "%s_%s_%s", tool, rc.run->name, f->name);
    reqctx_release(&rc);
    return 1;
}

/* profile_info of a run made only of per-tool files: what "about this
 * profile" can say without a decoded profile (the files, their sizes). */
void legacy_profile_info(const reqctx *rc, xpv_response *r) {
    const xpv_run *run = rc->run;
    xpv_buf b;
    xpv_buf_init(&b);
    const xpv_host *f0 = run->nlegacy ? &run->legacy[0] : NULL;
    xpv_buf_puts(&b, "{\"host\":");
    xpv_buf_json_cstr(&b, f0 ? f0->name : "");
    xpv_buf_puts(&b, ",\"file\":");
    xpv_buf_json_cstr(&b, f0 ? f0->rel : "");
    xpv_buf_puts(&b, ",\"size\":");
    xpv_buf_u64(&b, f0 ? f0->size : 0);
    xpv_buf_puts(&b, ",\"planes\":[],\"hostnames\":[],\"errors\":[],\"warnings\":[],"
                     "\"events\":0,\"files\":[");
    for (size_t i = 0; i < run->nlegacy; i++) {
        if (i) xpv_buf_putc(&b, ',');
        xpv_buf_puts(&b, "{\"file\":");
        xpv_buf_json_cstr(&b, run->legacy[i].rel);
        xpv_buf_puts(&b, ",\"size\":");
        xpv_buf_u64(&b, run->legacy[i].size);
        xpv_buf_putc(&b, '}');
    }
    xpv_buf_puts(&b, "]}");
    resp_take_buf(r, &b);
}
