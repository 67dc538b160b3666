/*
 * diff_route.c - /data/plugin/profile/diff and diff_csv: two runs (or two
 * hosts) compared in one tool by the compare layer (compare/compare.h).
 *
 *   GET diff?run=NEW&base_run=BASE&tag=TOOL&host=H&base_host=H2[&top=N]
 *     -> {"summary":{...},"columns":{...},"rows":[...],"steps":{...}}
 *   GET diff_csv?... -> the rows as CSV
 *
 * Both sides go through the server's cache (profiles and the tool's
 * derived data), so comparing with a run already open costs only the other
 * side and the alignment; two cold sides load in parallel.  The CLI's `xpview diff` calls xpv_app_diff with
 * one app per side.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cache.h"
#include "compare.h"

/* Resolve one side: run `run`, host `host`, tool `tag`, in app `a`. */
static int resolve_side(xpv_app *a, const char *run, const char *host, const char *tag,
                        reqctx *rc, xpv_err *err) {
    xpv_request q;
    memset(&q, 0, sizeof q);
    q.run = run;
    q.tag = tag;
    q.host = host;
    int ret = resolve_run(a, &q, 1, rc, err);
    if (ret == 0 && !rc->run->nhosts)
        ret = xpv_err_set(err, XPV_E_BAD_PROFILE, "run %s has no profile to compare (older formats "
                          "are not compared)", rc->run->name);
    if (ret == 0) ret = resolve_hosts(&q, rc, err);
    return ret;
}

/* One side's inputs, on its own thread. */
struct side_job {
    xpv_app *app;
    const reqctx *rc;
    tool_input *in;
    xpv_err err;
    int ret;
};

static void *side_main(void *p) {
    struct side_job *j = p;
    xpv_err_clear(&j->err);
    j->ret = get_tool_input(j->app, j->rc, 0, j->in, &j->err);
    return NULL;
}

/* xpv_compare_build() under an allocation-failure guard: the caller still
 * releases both sides' cache references when it fails. */
struct compare_call {
    const xpv_compare_kind *k;
    const tool_input *base, *cur;
    xpv_err *err;
    xpv_compare *result;
};

static int call_compare(void *p) {
    struct compare_call *c = p;
    c->result = xpv_compare_build(c->k, &c->base->hs, c->base->derived, &c->cur->hs,
                                  c->cur->derived, c->err);
    return 0;
}

int xpv_app_diff(xpv_app *base_app, xpv_app *new_app, const xpv_request *rq,
                 xpv_compare **out, xpv_err *err) {
    *out = NULL;
    const char *tag = rq->tag ? rq->tag : "overview_page";
    const char *run = rq->run, *base_run = rq->base_run;
    const char *host = rq->host, *base_host = rq->base_host ? rq->base_host : host;
    if (!run) return xpv_err_set(err, XPV_E_BAD_REQUEST, "missing parameter: run");
    if (!base_run) return xpv_err_set(err, XPV_E_BAD_REQUEST, "missing parameter: base_run");
    const xpv_tool *t = find_tool(new_app, tag);
    if (!t) return xpv_err_set(err, XPV_E_NOT_FOUND, "unknown tool: %s", tag);
    const xpv_compare_kind *k = xpv_compare_find(t->name);
    if (!k) {
        xpv_buf names;
        xpv_buf_init(&names);
        for (const xpv_compare_kind *const *p = xpv_compare_kinds(); *p; p++)
            xpv_buf_printf(&names, "%s%s", p == xpv_compare_kinds() ? "" : ", ", (*p)->tool);
        xpv_buf_putc(&names, '\0');
        xpv_err_set(err, XPV_E_BAD_REQUEST, "%s cannot be compared (tools: %s)", t->name, names.data);
        xpv_buf_free(&names);
        return -1;
    }
    reqctx brc, nrc;
    memset(&brc, 0, sizeof brc);
    memset(&nrc, 0, sizeof nrc);
    tool_input bin, nin;
    memset(&bin, 0, sizeof bin);
    memset(&nin, 0, sizeof nin);
    int ret = -1;
    if (resolve_side(base_app, base_run, base_host, t->name, &brc, err) != 0 ||
        resolve_side(new_app, run, host, t->name, &nrc, err) != 0)
        goto done;
    /* A side of several hosts merged (ALL_HOSTS) against one host of a
     * multi-host run would compare different amounts of work. */
    int ball = brc.nhosts > 1, nall = nrc.nhosts > 1;
    if (ball != nall) {
        xpv_err_set(err, XPV_E_BAD_REQUEST, "compare a host with a host or ALL_HOSTS with ALL_HOSTS "
                    "(base %s: %s, new %s: %s)", brc.run->name, brc.host_label,
                    nrc.run->name, nrc.host_label);
        goto done;
    }
    /* Both sides load at once (the base on a second thread), as two
     * requests would: the diff of two cold runs costs about the slower
     * load, not the sum. */
    struct side_job bj = {base_app, &brc, &bin, {0}, -1};
    pthread_t th;
    int threaded = pthread_create(&th, NULL, side_main, &bj) == 0;
    if (!threaded) side_main(&bj);
    xpv_err nerr;
    xpv_err_clear(&nerr);
    int nret = get_tool_input(new_app, &nrc, 0, &nin, &nerr);
    if (threaded) pthread_join(th, NULL);
    if (bj.ret != 0 || nret != 0) {
        *err = bj.ret != 0 ? bj.err : nerr;
        goto done;
    }
    struct compare_call cc = {k, &bin, &nin, err, NULL};
    size_t failed = 0;
    if (xpv_oom_run(call_compare, &cc, &failed) == XPV_OOM_FAILED) {
        xpv_err_clear(err);
        xpv_err_set(err, XPV_E_TOO_LARGE, "out of memory comparing %s: an allocation of %zu "
                    "bytes failed", k->tool, failed);
    }
    *out = cc.result;
    ret = *out ? 0 : -1;
done:
    tool_input_release(new_app, &nin);
    tool_input_release(base_app, &bin);
    reqctx_release(&nrc);
    reqctx_release(&brc);
    return ret;
}

static void diff(xpv_app *a, const xpv_request *rq, xpv_response *r, int csv) {
    size_t top = rq->top;
    xpv_compare *c;
    xpv_err err;
    xpv_err_clear(&err);
    if (xpv_app_diff(a, a, rq, &c, &err) != 0) {
        resp_error(r, &err);
        return;
    }
    xpv_buf b;
    xpv_buf_init(&b);
    if (csv) xpv_compare_write_csv(c, top, &b);
    else xpv_compare_write_json(c, top, &b);
    resp_take_buf(r, &b);
    r->compress = r->len > 512;
    r->cache_control = "no-cache";
    if (csv) {
        resp_csv(r, "diff_%s_%s_vs_%s", c->kind->tool, rq->base_run, rq->run);
    }
    xpv_compare_free(c);
}

void route_diff(xpv_app *a, const xpv_request *rq, const char *inm, xpv_response *r) {
    (void)inm;
    if (xpv_cache_defer_heavy()) return;   /* loads on two threads: a worker's job */
    diff(a, rq, r, 0);
}

void route_diff_csv(xpv_app *a, const xpv_request *rq, const char *inm, xpv_response *r) {
    (void)inm;
    if (xpv_cache_defer_heavy()) return;   /* loads on two threads: a worker's job */
    diff(a, rq, r, 1);
}
