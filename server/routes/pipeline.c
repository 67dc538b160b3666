/*
 * pipeline.c - a data request's way through the cache: resolve run, tool
 * and host set in a run-list snapshot (names are only looked up, never
 * joined into paths), then profiles (cached per file identity), derived
 * data (cached per host set, keeps its profiles alive) and the rendered
 * answer (cached per tool + host identities + query; big answers are not
 * kept).  The full trace is never rendered whole: its response carries a
 * producer (the tool's stream) that pins profiles and trace index.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "arena.h"
#include "assets.h"
#include "discovery.h"
#include "enrich.h"
#include "legacy_serve.h"
#include "loader.h"
#include "tool.h"
#include "version.h"

/* ==== Profiles, through the cache ====================================== */

/* Identity of a host file: what makes a cached profile stale. */
void host_identity(xpv_buf *b, const xpv_host *h) {
    /* ctime too: a rewrite that puts the size and mtime back (cp -p) */
    xpv_buf_printf(b, "%s\x1f%llu\x1f%lld\x1f%lld\x1f%llu\x1e", h->path,
                   (unsigned long long)h->size, (long long)h->mtime_ns,
                   (long long)h->ctime_ns, (unsigned long long)h->ino);
}

/* A cache key for host file `h` in `key` (initialised here; the caller
 * frees it): `prefix`, then `name` when not NULL, each followed by a
 * separator, then the host's identity and a NUL. */
static void host_key(xpv_buf *key, const char *prefix, const char *name, const xpv_host *h) {
    xpv_buf_init(key);
    xpv_buf_printf(key, "%s\x1f", prefix);
    if (name) xpv_buf_printf(key, "%s\x1f", name);
    host_identity(key, h);
    xpv_buf_putc(key, '\0');
}

struct profile_ctx {
    xpv_app *app;
    const xpv_host *host;
};

static void changed_error(xpv_err *err, const xpv_host *h) {
    xpv_err_set(err, XPV_E_BUSY, "%s: the file changed while it was being read "
                "(rewritten in place?); retry", h->rel);
    snprintf(err->file, sizeof err->file, "%s", h->rel);
}

static void free_profile(void *p) { xpv_profile_free(p); }

/* What a decoded profile holds: its model (or bytes) and its enrichment
 * so far (the derived lines join it when the trace index first asks). */
static size_t profile_charge(const xpv_profile *p) {
    return (p->mem_size ? p->mem_size : p->buf_len) + xpv_enrichment_bytes(p);
}

static int build_profile(void *vctx, xpv_cache_val *v, xpv_err *err) {
    struct profile_ctx *ctx = vctx;
    __atomic_add_fetch(&ctx->app->decodes, 1, __ATOMIC_RELAXED);
    xpv_profile *p = xpv_load_profile(ctx->host->path, ctx->host->rel,
                                      &ctx->app->limits, err);
    if (!p) {
        __atomic_add_fetch(&ctx->app->decode_failures, 1, __ATOMIC_RELAXED);
        return -1;
    }
    /* run_tools reads what a Chrome trace held without loading it again. */
    if (p->trace_facts)
        xpv_legacy_note_trace(ctx->host->ino, ctx->host->size, ctx->host->mtime_ns,
                              p->trace_facts);
    /* XProf's preprocessing (grouping; the derived lines when the trace
     * index asks) runs here, once per decoded profile, and stays with it:
     * every tool and the trace index read the same result, and its memory
     * counts with the profile's. */
    xpv_enrich(p);
    v->ptr = p;
    v->size = profile_charge(p);
    v->free = free_profile;
    return 0;
}

/* The cached profile of `h` (a referenced entry), or NULL with `err`. */
/* `holds`: whether the caller already holds cache entries (other hosts of
 * its host set), for memory admission. */
xpv_centry *get_profile(xpv_app *a, const xpv_host *h, int holds, xpv_err *err) {
    xpv_buf key;
    host_key(&key, "P", NULL, h);
    struct profile_ctx ctx = {a, h};
    /* Admission: a decode needs about its heap estimate at once (the model,
     * and inflated or converted bytes; a mapped file's bytes are page
     * cache, not budget), so cold decodes of different profiles queue
     * rather than overrun the budget.  An estimate refuses nothing by
     * itself: past the budget it asks for the whole budget, and the
     * decoder's own checks (gunzip caps, per-allocation budget) say 413
     * with the exact reason if the file really does not fit. */
    uint64_t need = xpv_load_heap_estimate(h->path, h->size, &a->limits);
    if (a->limits.max_mem && need > a->limits.max_mem) need = a->limits.max_mem;
    xpv_centry *e = NULL;
    /* A cached profile whose mapped file was rewritten in place (or cut)
     * reads other bytes than it was decoded from: it is forgotten and the
     * file loaded again; a file still changing under the second load is a
     * 503 to retry. */
    for (int tries = 0; tries < 2; tries++) {
        e = xpv_cache_get_admit(a->cache, key.data, need, holds, h->rel, build_profile, &ctx,
                                err);
        if (!e || !xpv_profile_changed(xpv_centry_value(e))) break;
        xpv_cache_forget(a->cache, e);
        xpv_cache_release(a->cache, e);
        e = NULL;
        __atomic_add_fetch(&a->stale_reloads, 1, __ATOMIC_RELAXED);
        changed_error(err, h);
    }
    xpv_buf_free(&key);
    if (!e && !err->file[0]) snprintf(err->file, sizeof err->file, "%s", h->rel);
    return e;
}

/* Whether any of the n profile entries (NULL ones skipped) changed under
 * the answer just built from them: those are forgotten and `err` says to
 * retry (the answer mixed old and new bytes and is thrown away). */
static int profiles_changed(xpv_app *a, xpv_centry *const *entries, size_t n,
                            const xpv_host *const *hosts, xpv_err *err) {
    int changed = 0;
    for (size_t i = 0; i < n; i++) {
        if (!entries[i] || !xpv_profile_changed(xpv_centry_value(entries[i]))) continue;
        xpv_cache_forget(a->cache, entries[i]);
        if (!changed) changed_error(err, hosts[i]);
        changed = 1;
    }
    if (changed) __atomic_add_fetch(&a->stale_reloads, 1, __ATOMIC_RELAXED);
    return changed;
}

/* ==== Tool lists, through the cache ==================================== */

struct tools_ctx {
    xpv_app *app;
    const xpv_host *host;
};

static int build_tool_list(void *vctx, xpv_cache_val *v, xpv_err *err) {
    struct tools_ctx *ctx = vctx;
    xpv_centry *pe = get_profile(ctx->app, ctx->host, 0, err);
    if (!pe) return -1;
    const xpv_profile *p = xpv_centry_value(pe);
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_buf_putc(&b, '[');
    int first = 1;
    for (const xpv_tool *const *t = ctx->app->tools; *t; t++) {
        if ((*t)->available && !(*t)->available(p)) continue;
        if (!first) xpv_buf_putc(&b, ',');
        first = 0;
        xpv_buf_json_cstr(&b, (*t)->name);
    }
    xpv_buf_putc(&b, ']');
    xpv_buf_putc(&b, '\0');
    xpv_cache_release(ctx->app->cache, pe);
    size_t len;
    v->ptr = xpv_buf_steal(&b, &len);
    v->size = len;
    v->free = free;
    return 0;
}

xpv_centry *get_tool_list(xpv_app *a, const xpv_host *h, xpv_err *err) {
    xpv_buf key;
    host_key(&key, "T", NULL, h);
    struct tools_ctx ctx = {a, h};
    xpv_centry *e = xpv_cache_get(a->cache, key.data, build_tool_list, &ctx, err);
    xpv_buf_free(&key);
    return e;
}

/* ==== Request context: run, tool, host set ============================= */



void reqctx_release(reqctx *c) {
    free(c->hosts);
    if (c->rl) xpv_runlist_release(c->rl);
    memset(c, 0, sizeof *c);
}

/* Resolve `run` (and `tag` when need_tool) from the query. */
int resolve_run(xpv_app *a, const xpv_request *rq, int need_tool, reqctx *c,
                xpv_err *err) {
    const char *run = rq->run;
    memset(c, 0, sizeof c[0]);
    if (!run) return xpv_err_set(err, XPV_E_BAD_REQUEST, "missing parameter: run");
    c->rl = xpv_logdir_scan(a->ld, 0);
    /* No forced rescan for unknown names: that would let any client make
     * the server walk the logdir on every request.  New runs show up within
     * the scan interval. */
    c->run = xpv_runlist_find(c->rl, run);
    if (!c->run) return xpv_err_set(err, XPV_E_NOT_FOUND, "unknown run: %s", run);
    if (need_tool) {
        const char *tag = rq->tag;
        if (!tag) return xpv_err_set(err, XPV_E_BAD_REQUEST, "missing parameter: tag");
        c->tool = find_tool(a, tag);
        if (!c->tool) return xpv_err_set(err, XPV_E_NOT_FOUND, "unknown tool: %s", tag);
    }
    return 0;
}

/* Select hosts per XProf: hosts=a,b (trace viewer only), host=H, or
 * host=ALL_HOSTS / no host = all of them. */
int resolve_hosts(const xpv_request *rq, reqctx *c, xpv_err *err) {
    const xpv_run *run = c->run;
    const char *host = rq->host;
    const char *list = rq->hosts;
    char *sel = xpv_xcalloc(run->nhosts, 1);
    int explicit_list = 0;
    if (c->tool && is_trace_tool(c->tool) && list && *list) {
        explicit_list = 1;
        const char *s = list;
        while (*s) {
            const char *e = strchr(s, ',');
            size_t n = e ? (size_t)(e - s) : strlen(s);
            if (n) {
                size_t i;
                for (i = 0; i < run->nhosts; i++)
                    if (strlen(run->hosts[i].name) == n &&
                        !strncmp(run->hosts[i].name, s, n))
                        break;
                if (i == run->nhosts) {
                    free(sel);
                    return xpv_err_set(err, XPV_E_NOT_FOUND, "unknown host in run %s: %.*s",
                                       run->name, (int)(n > 200 ? 200 : n), s);
                }
                sel[i] = 1;
            }
            s += n;
            if (*s == ',') s++;
        }
        c->host_label = "hosts";
    } else if (!host || !*host || !strcmp(host, ALL_HOSTS)) {
        memset(sel, 1, run->nhosts);
        c->host_label = run->nhosts == 1 ? run->hosts[0].name : ALL_HOSTS;
    } else {
        const xpv_host *h = xpv_run_find_host(run, host);
        if (!h) {
            free(sel);
            return xpv_err_set(err, XPV_E_NOT_FOUND, "unknown host in run %s: %s", run->name, host);
        }
        sel[h - run->hosts] = 1;
        c->host_label = h->name;
    }
    c->hosts = xpv_xcalloc(run->nhosts ? run->nhosts : 1, sizeof *c->hosts);
    for (size_t i = 0; i < run->nhosts; i++)
        if (sel[i]) c->hosts[c->nhosts++] = &run->hosts[i];
    free(sel);
    if (!c->nhosts) return xpv_err_set(err, XPV_E_NOT_FOUND, "no host selected in run %s", run->name);
    if (c->nhosts > 1 && c->tool && !explicit_list && !is_trace_tool(c->tool) &&
        !(c->tool->flags & (XPV_TOOL_ALL_HOSTS_ONLY | XPV_TOOL_ALL_HOSTS_OK)))
        return xpv_err_set(err, XPV_E_BAD_REQUEST, "%s shows one host at a time: choose a host "
                           "(host=NAME)", c->tool->name);
    return 0;
}

/* ==== Rendering, through the cache ===================================== */



static void free_rendered(void *p) {
    rendered *r = p;
    free(r->body);
    free(r->gz);
    free(r);
}

/* ==== Tool calls that cannot take the server down ====================
 * Tools and derived kinds allocate as much as their input asks for; an
 * allocation failure inside one unwinds to these guards (xpv_oom_run),
 * which fail that call with a 413 while the caller still releases the
 * cache references it holds. */

static void oom_error(xpv_err *err, const char *what, const char *tool, size_t failed) {
    xpv_err_clear(err);
    xpv_err_set(err, XPV_E_TOO_LARGE, "out of memory %s %s: an allocation of %zu bytes failed",
                what, tool, failed);
}

struct tool_call {
    const xpv_tool *tool;
    const xpv_derived_kind *kind;
    const xpv_hostset *hs;
    const void *derived;
    const xpv_params *params;
    xpv_buf *out;
    xpv_err *err;
    const xpv_profile *profile; /* kind->part_build's */
    const void **parts;         /* kind->combine's */
    long csv_table;             /* render: -1 = JSON, else that table as CSV */
    size_t n;
    void *result;               /* kind->build's, part_build's, combine's or stream->open's */
};

/* The tool's JSON, or its table number csv_table as CSV (>= 0). */
static int call_render(void *p) {
    struct tool_call *c = p;
    return c->csv_table < 0
               ? xpv_tool_render(c->tool, c->hs, c->derived, c->params, c->out, c->err)
               : xpv_tool_csv(c->tool, c->hs, c->derived, c->params, (size_t)c->csv_table, c->out,
                              c->err);
}

static int call_build(void *p) {
    struct tool_call *c = p;
    c->result = c->kind->build(c->hs, c->err);
    return 0;
}

static int call_part_build(void *p) {
    struct tool_call *c = p;
    c->result = c->kind->part_build(c->profile, c->err);
    return 0;
}

static int call_combine(void *p) {
    struct tool_call *c = p;
    c->result = c->kind->combine((const void *const *)c->parts, c->hs->hostnames, c->n, c->err);
    return 0;
}

static int call_open(void *p) {
    struct tool_call *c = p;
    c->result = c->tool->stream->open(c->hs, c->derived, c->params, c->err);
    return 0;
}

struct derived_ctx {
    const xpv_derived_kind *kind;
    const xpv_hostset *hs;
    xpv_centry **entries;       /* the profiles: kept alive by the value
                                 * (kinds without parts) */
    size_t n;
    xpv_app *app;
    xpv_diskcache *dc;          /* persisted images, or NULL */
    const xpv_host *const *hosts;   /* the files, for the disk key */
};

struct derived_val {
    const xpv_derived_kind *kind;
    void *d;
};

static void free_derived(void *p) {
    struct derived_val *dv = p;
    if (dv->kind->free) dv->kind->free(dv->d);
    free(dv);
}

/* ---- Per-host parts (kinds with part_build) ----
 * A part is cached by its host file's identity, apart from the profile it
 * was made from: the profile is released as soon as its part exists, so a
 * many-host value never needs more than the profiles being decoded at
 * once, and a later value over the same hosts (another tool, another host
 * set) decodes nothing. */

static void free_part(void *p) {
    struct derived_val *pv = p;
    pv->kind->part_free(pv->d);
    free(pv);
}

struct part_ctx {
    xpv_app *app;
    const xpv_derived_kind *kind;
    const xpv_host *host;
    int holds;                  /* the request holds other hosts' parts */
};

static int build_part(void *vctx, xpv_cache_val *v, xpv_err *err) {
    struct part_ctx *ctx = vctx;
    /* The request holds no profile meanwhile, only the parts of the hosts
     * before (small, but pinned): as a request holding other hosts, a
     * decode the budget cannot admit waits for the decodes in flight and
     * briefly for held entries (the other thread's profile, released once
     * its part is made), then goes ahead rather than fail on its own
     * parts. */
    xpv_centry *pe = get_profile(ctx->app, ctx->host, ctx->holds, err);
    if (!pe) return -1;
    xpv_err terr;
    memset(&terr, 0, sizeof terr);
    struct tool_call tc = {.kind = ctx->kind, .profile = xpv_centry_value(pe), .err = &terr};
    size_t failed = 0;
    if (xpv_oom_run(call_part_build, &tc, &failed) == XPV_OOM_FAILED)
        oom_error(&terr, "building", ctx->kind->name, failed);
    void *part = tc.result;
    if (part && profiles_changed(ctx->app, &pe, 1, &ctx->host, err)) {
        ctx->kind->part_free(part);
        xpv_cache_release(ctx->app->cache, pe);
        return -1;
    }
    xpv_cache_release(ctx->app->cache, pe);
    if (!part) {
        xpv_err_set(err, terr.status ? terr.status : 500, "%s",
                    terr.msg[0] ? terr.msg : "cannot build derived data");
        return -1;
    }
    struct derived_val *pv = xpv_xmalloc(sizeof *pv);
    pv->kind = ctx->kind;
    pv->d = part;
    v->ptr = pv;
    v->size = sizeof *pv + ctx->kind->part_size(part);
    v->free = free_part;
    return 0;
}

static xpv_centry *get_part(xpv_app *a, const xpv_derived_kind *k, const xpv_host *h,
                            int holds, xpv_err *err) {
    xpv_buf key;
    host_key(&key, "H", k->name, h);
    struct part_ctx ctx = {a, k, h, holds};
    xpv_centry *e = xpv_cache_get(a->cache, key.data, build_part, &ctx, err);
    xpv_buf_free(&key);
    return e;
}

/* Hosts decoded and analysed at once (the machine this targets has 2
 * cores; each decode also needs its heap estimate of budget). */
#define PART_THREADS 2

struct parts_job {
    xpv_app *app;
    const xpv_derived_kind *kind;
    const xpv_host *const *hosts;
    size_t n;
    xpv_centry **out;           /* [n], NULL where not got */
    xpv_err *errs;              /* [n] */
    size_t next;                /* next host to take (atomic) */
    int failed;                 /* a host failed: take no more (atomic) */
};

static void *parts_worker(void *arg) {
    struct parts_job *j = arg;
    while (!__atomic_load_n(&j->failed, __ATOMIC_ACQUIRE)) {
        size_t i = __atomic_fetch_add(&j->next, 1, __ATOMIC_ACQ_REL);
        if (i >= j->n) break;
        j->out[i] = get_part(j->app, j->kind, j->hosts[i], i > 0, &j->errs[i]);
        if (!j->out[i]) __atomic_store_n(&j->failed, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* The parts of hosts[0..n) (referenced entries into out[]), taken in host
 * order by PART_THREADS threads.  Returns 0, or -1 with `err` of the first
 * failing host in host order (as one thread going host by host would
 * report) and nothing held. */
static int get_parts(xpv_app *a, const xpv_derived_kind *k, const xpv_host *const *hosts,
                     size_t n, xpv_centry **out, xpv_err *err) {
    struct parts_job j = {a, k, hosts, n, out, xpv_xcalloc(n, sizeof(xpv_err)), 0, 0};
    pthread_t th[PART_THREADS - 1];
    size_t nth = 0;
    while (nth < PART_THREADS - 1 && nth + 1 < n &&
           pthread_create(&th[nth], NULL, parts_worker, &j) == 0)
        nth++;
    parts_worker(&j);
    for (size_t t = 0; t < nth; t++) pthread_join(th[t], NULL);
    int ret = 0;
    for (size_t i = 0; i < n && !ret; i++)
        if (!out[i] && j.errs[i].status) {
            *err = j.errs[i];
            ret = -1;
        }
    if (ret)
        for (size_t i = 0; i < n; i++) {
            if (out[i]) xpv_cache_release(a->cache, out[i]);
            out[i] = NULL;
        }
    free(j.errs);
    return ret;
}

/* build_derived() for a kind with parts: the hosts' parts, combined. */
static void *build_from_parts(struct derived_ctx *ctx, xpv_cache_val *v, xpv_err *err) {
    size_t n = ctx->n;
    xpv_centry **parts = xpv_xcalloc(n, sizeof *parts);
    if (get_parts(ctx->app, ctx->kind, ctx->hosts, n, parts, err) != 0) {
        free(parts);
        return NULL;
    }
    const void **vals = xpv_xcalloc(n, sizeof *vals);
    for (size_t i = 0; i < n; i++)
        vals[i] = ((struct derived_val *)xpv_centry_value(parts[i]))->d;
    xpv_err terr;
    memset(&terr, 0, sizeof terr);
    struct tool_call tc = {.kind = ctx->kind, .hs = ctx->hs, .parts = vals, .n = n, .err = &terr};
    size_t failed = 0;
    if (xpv_oom_run(call_combine, &tc, &failed) == XPV_OOM_FAILED)
        oom_error(&terr, "combining", ctx->kind->name, failed);
    void *d = tc.result;
    free(vals);
    if (!d) {
        xpv_err_set(err, terr.status ? terr.status : 500, "%s",
                    terr.msg[0] ? terr.msg : "cannot build derived data");
        for (size_t i = 0; i < n; i++) xpv_cache_release(ctx->app->cache, parts[i]);
        free(parts);
        return NULL;
    }
    v->deps = parts;            /* the value borrows the parts */
    v->ndeps = n;
    return d;
}

static int build_derived(void *vctx, xpv_cache_val *v, xpv_err *err) {
    struct derived_ctx *ctx = vctx;
    xpv_err terr;
    memset(&terr, 0, sizeof terr);
    void *d = NULL;
    if (ctx->kind->part_build) {
        d = build_from_parts(ctx, v, err);
        if (!d) return -1;
    } else {
        if (ctx->dc) d = xpv_diskcache_load_derived(ctx->dc, ctx->kind, ctx->hosts, ctx->hs);
        if (!d) {
            struct tool_call tc = {.kind = ctx->kind, .hs = ctx->hs, .err = &terr};
            size_t failed = 0;
            if (xpv_oom_run(call_build, &tc, &failed) == XPV_OOM_FAILED)
                oom_error(&terr, "building", ctx->kind->name, failed);
            d = tc.result;
            if (d && ctx->dc)
                xpv_diskcache_save_derived(ctx->dc, ctx->kind, ctx->hosts, ctx->hs, d);
        }
        if (!d) {
            xpv_err_set(err, terr.status ? terr.status : 500, "%s",
                        terr.msg[0] ? terr.msg : "cannot build derived data");
            return -1;
        }
        v->deps = xpv_xmalloc(ctx->n * sizeof *v->deps);
        for (size_t i = 0; i < ctx->n; i++) {
            xpv_centry_ref(ctx->app->cache, ctx->entries[i]);
            v->deps[i] = ctx->entries[i];
            /* the build may have made the profile's derived lines */
            xpv_cache_grow(ctx->app->cache, ctx->entries[i],
                           profile_charge(xpv_centry_value(ctx->entries[i])));
        }
        v->ndeps = ctx->n;
    }
    struct derived_val *dv = xpv_xmalloc(sizeof *dv);
    dv->kind = ctx->kind;
    dv->d = d;
    v->ptr = dv;
    v->size = ctx->kind->size ? ctx->kind->size(d) : 0;
    v->free = free_derived;
    return 0;
}

/* Whether rendering rc's tool reads the hosts' profiles (else only its
 * derived data, built host by host). */
static int tool_needs_profiles(const xpv_tool *t) {
    return !t->derived || !t->derived->part_build;
}

/* The tool's derived data for the host set `hs` (whose profile entries
 * are `entries`, unused for kinds with parts; `ids` = the files'
 * identities): a referenced entry holding
 * a `struct derived_val`, or NULL with `err`. */
static xpv_centry *get_derived(xpv_app *a, const reqctx *rc, const char *ids,
                               const xpv_hostset *hs, xpv_centry **entries, xpv_err *err) {
    const xpv_derived_kind *k = rc->tool->derived;
    xpv_buf key;
    xpv_buf_init(&key);
    xpv_buf_printf(&key, "D\x1f%s\x1f%s\x1f%s", k->name, rc->run->name, ids);
    xpv_buf_putc(&key, '\0');
    struct derived_ctx dctx = {k, hs, entries, hs->n, a, a->dc, rc->hosts};
    xpv_centry *e = xpv_cache_get(a->cache, key.data, build_derived, &dctx, err);
    xpv_buf_free(&key);
    return e;
}

/* The inputs of rc's tool (its hosts' profiles and its derived data, all
 * referenced), for work on the tool's results other than rendering (the
 * compare layer).  `holds`: whether the caller already holds cache
 * entries.  Returns 0, or -1 with `err` (nothing held). */
int get_tool_input(xpv_app *a, const reqctx *rc, int holds, tool_input *in, xpv_err *err) {
    size_t n = rc->nhosts;
    memset(in, 0, sizeof *in);
    in->n = n;
    in->entries = xpv_xcalloc(n ? n : 1, sizeof *in->entries);
    in->profiles = xpv_xcalloc(n ? n : 1, sizeof *in->profiles);
    in->names = xpv_xcalloc(n ? n : 1, sizeof *in->names);
    int profiles = tool_needs_profiles(rc->tool);
    for (size_t i = 0; i < n; i++) {
        in->names[i] = rc->hosts[i]->name;
        if (!profiles) continue;
        in->entries[i] = get_profile(a, rc->hosts[i], holds || i > 0, err);
        if (!in->entries[i]) goto fail;
        in->profiles[i] = xpv_centry_value(in->entries[i]);
    }
    in->hs.n = n;
    in->hs.profiles = in->profiles;
    in->hs.hostnames = in->names;
    if (rc->tool->derived) {
        xpv_buf ids;
        xpv_buf_init(&ids);
        for (size_t i = 0; i < n; i++) host_identity(&ids, rc->hosts[i]);
        xpv_buf_putc(&ids, '\0');
        in->dentry = get_derived(a, rc, ids.data, &in->hs, in->entries, err);
        xpv_buf_free(&ids);
        if (!in->dentry) goto fail;
        in->derived = ((struct derived_val *)xpv_centry_value(in->dentry))->d;
    }
    return 0;
fail:
    tool_input_release(a, in);
    return -1;
}

void tool_input_release(xpv_app *a, tool_input *in) {
    if (in->dentry) xpv_cache_release(a->cache, in->dentry);
    for (size_t i = 0; i < in->n && in->entries; i++)
        if (in->entries[i]) xpv_cache_release(a->cache, in->entries[i]);
    free(in->entries);
    free(in->profiles);
    free(in->names);
    memset(in, 0, sizeof *in);
}

struct render_ctx {
    xpv_app *app;
    reqctx *rc;
    const xpv_request *rq;
    const char *ids;            /* host identities, for the derived key */
    long csv_table;             /* -1: the JSON; else this table as CSV */
};

/* Test hook: XPV_DEBUG_BUILD_SLEEP_MS makes every rendered build sleep
 * that long first (the busy-wait and shutdown tests need a build that
 * holds a worker for a known time; never set in production). */
static void debug_build_sleep(void) {
    static int ms = -1;
    if (ms < 0) {
        const char *e = getenv("XPV_DEBUG_BUILD_SLEEP_MS");
        int v = e ? atoi(e) : 0;
        __atomic_store_n(&ms, v > 0 && v < 600000 ? v : 0, __ATOMIC_RELAXED);
    }
    int d = __atomic_load_n(&ms, __ATOMIC_RELAXED);
    if (d > 0) {
        struct timespec ts = {d / 1000, (long)(d % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static int build_rendered(void *vctx, xpv_cache_val *v, xpv_err *err) {
    struct render_ctx *ctx = vctx;
    debug_build_sleep();
    xpv_app *a = ctx->app;
    reqctx *rc = ctx->rc;
    size_t n = rc->nhosts;
    xpv_centry **entries = xpv_xcalloc(n, sizeof *entries);
    const xpv_profile **profiles = xpv_xcalloc(n, sizeof *profiles);
    const char **names = xpv_xcalloc(n, sizeof *names);
    xpv_centry *dentry = NULL;
    xpv_buf out;
    int ret = -1;
    xpv_buf_init(&out);

    int need_profiles = tool_needs_profiles(rc->tool);
    for (size_t i = 0; i < n; i++) {
        names[i] = rc->hosts[i]->name;
        if (!need_profiles) continue;   /* the tool reads its derived data */
        entries[i] = get_profile(a, rc->hosts[i], i > 0, err);
        if (!entries[i]) goto done;
        profiles[i] = xpv_centry_value(entries[i]);
    }
    xpv_hostset hs = {n, profiles, names};
    const void *derived = NULL;
    if (rc->tool->derived) {
        dentry = get_derived(a, rc, ctx->ids, &hs, entries, err);
        if (!dentry) goto done;
        derived = ((struct derived_val *)xpv_centry_value(dentry))->d;
    }
    xpv_params params = xpv_request_params(ctx->rq);
    xpv_err terr;
    memset(&terr, 0, sizeof terr);
    struct tool_call tc = {.tool = rc->tool, .hs = &hs, .derived = derived,
                           .params = &params, .out = &out, .err = &terr,
                           .csv_table = ctx->csv_table};
    size_t failed = 0;
    int trc = xpv_oom_run(call_render, &tc, &failed);
    if (trc == XPV_OOM_FAILED) {
        oom_error(&terr, "rendering", rc->tool->name, failed);
        xpv_buf_init(&out);     /* its bytes went with the unwinding */
    }
    if (trc != 0) {
        xpv_err_set(err, terr.status ? terr.status : 500, "%s",
                    terr.msg[0] ? terr.msg : "the tool failed");
        goto done;
    }
    if (profiles_changed(a, entries, n, rc->hosts, err)) {
        if (dentry) xpv_cache_forget(a->cache, dentry);
        goto done;
    }
    /* Derived data may have grown while answering (the trace index's name
     * index, built by the first search): the budget counts it. */
    if (dentry && rc->tool->derived->size)
        xpv_cache_grow(a->cache, dentry, rc->tool->derived->size(derived));
    rendered *r = xpv_xcalloc(1, sizeof *r);
    r->body = xpv_buf_steal(&out, &r->len);
    v->ptr = r;
    v->free = free_rendered;
    if (r->len > a->keep_max) {
        v->transient = 1;       /* too big to keep: compress per request */
    } else if (r->len > 512) {
        /* Level 6 saves ~25% of the bytes and costs ~4x the time of level
         * 1: past 1 MB (a trace viewport answer: several MB, asked for
         * once per zoom step and waited on) the time matters more. */
        r->gz = xpv_gzip(r->body, r->len, r->len <= (1u << 20) ? 6 : 1, &r->gz_len);
    }
    v->size = r->len + r->gz_len + sizeof *r;
    ret = 0;

done:
    xpv_buf_free(&out);
    if (dentry) xpv_cache_release(a->cache, dentry);
    for (size_t i = 0; i < n; i++)
        if (entries[i]) xpv_cache_release(a->cache, entries[i]);
    free(entries);
    free(profiles);
    free(names);
    return ret;
}

/* Append the query's pairs to `b` in a canonical order: stable-sorted by
 * key (so "a=1&b=2" == "b=2&a=1", while duplicate keys keep their order,
 * which decides which one is seen first). */
void canonical_query(xpv_buf *b, const xpv_query *q) {
    size_t idx[XPV_QUERY_MAX_PARAMS];
    for (size_t i = 0; i < q->n; i++) idx[i] = i;
    for (size_t i = 1; i < q->n; i++)
        for (size_t j = i; j > 0 && strcmp(q->keys[idx[j - 1]], q->keys[idx[j]]) > 0; j--) {
            size_t t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    for (size_t i = 0; i < q->n; i++) {
        xpv_buf_puts(b, q->keys[idx[i]]);
        xpv_buf_putc(b, '\x1f');
        xpv_buf_puts(b, q->vals[idx[i]]);
        xpv_buf_putc(b, '\x1e');
    }
}

/* canonical_query() of the pairs a tool's answer depends on: the tag, the
 * CSV table and the parameters tools read (xpv_param_known), numbers
 * without leading zeros; others (made-up ones) are left out of the key. */
static void render_query_key(xpv_buf *b, const xpv_query *q) {
    if (!q) return;
    xpv_query f = XPV_QUERY_INIT;
    for (size_t i = 0; i < q->n; i++) {
        char *k = q->keys[i], *v = q->vals[i];
        if (strcmp(k, "tag") && strcmp(k, "table") && !xpv_param_known(k)) continue;
        if (xpv_param_numeric(k))
            while (v[0] == '0' && v[1] >= '0' && v[1] <= '9') v++;
        f.keys[f.n] = k;
        f.vals[f.n++] = v;
    }
    canonical_query(b, &f);
}

/* The rendered output of the request's tool (a referenced cache entry
 * holding a `rendered`): its JSON, or with csv_table >= 0 that table as
 * CSV; NULL with `err`. */
xpv_centry *get_rendered(xpv_app *a, reqctx *rc, const xpv_request *rq, long csv_table,
                         xpv_err *err) {
    xpv_buf ids, key;
    xpv_buf_init(&ids);
    xpv_buf_init(&key);
    for (size_t i = 0; i < rc->nhosts; i++) host_identity(&ids, rc->hosts[i]);
    xpv_buf_putc(&ids, '\0');
    if (csv_table < 0) xpv_buf_printf(&key, "R\x1f%s\x1f%s\x1f", rc->tool->name, ids.data);
    else xpv_buf_printf(&key, "C%ld\x1f%s\x1f%s\x1f", csv_table, rc->tool->name, ids.data);
    render_query_key(&key, rq->q);
    xpv_buf_putc(&key, '\0');
    struct render_ctx ctx = {a, rc, rq, ids.data, csv_table};
    xpv_centry *e = xpv_cache_get(a->cache, key.data, build_rendered, &ctx, err);
    xpv_buf_free(&ids);
    xpv_buf_free(&key);
    return e;
}

/* ==== Streamed bodies (the full trace) ================================= */

#define STREAM_CHUNK (1u << 20)     /* bytes per produce() call, about */

/* A body written chunk by chunk by the tool's stream (xpv_tool_stream),
 * never held whole.  It owns one cache reference on each profile and on
 * the derived data it reads, so an eviction while the body is being sent
 * cannot free them; all are given back by body_stream_free(). */
typedef struct body_stream {
    xpv_cache *cache;
    size_t n;
    xpv_centry **entries;       /* the profiles' entries (referenced) */
    const xpv_profile **profiles;
    char **names;               /* host names, copied: the run list may go */
    xpv_centry *dentry;         /* derived data (referenced), or NULL */
    const xpv_tool_stream *ts;
    void *st;                   /* the tool's writer, or NULL */
    int failed;                 /* the writer ran out of memory */
} body_stream;

static void body_stream_free(void *p) {
    body_stream *bs = p;
    if (!bs) return;
    if (bs->st) bs->ts->free(bs->st);
    if (bs->dentry) xpv_cache_release(bs->cache, bs->dentry);
    for (size_t i = 0; i < bs->n; i++) {
        if (bs->entries[i]) xpv_cache_release(bs->cache, bs->entries[i]);
        free(bs->names[i]);
    }
    free(bs->entries);
    free(bs->profiles);
    free(bs->names);
    free(bs);
}

struct next_call {
    body_stream *bs;
    xpv_buf *out;
};

static int call_next(void *p) {
    struct next_call *c = p;
    return c->bs->ts->next(c->bs->st, c->out, STREAM_CHUNK);
}

/* The next chunk; -1 when it could not be made (out of memory: the
 * response ends with an error, the writer is not called again). */
static int body_stream_produce(void *p, xpv_buf *out) {
    body_stream *bs = p;
    if (bs->failed) return -1;
    struct next_call nc = {bs, out};
    size_t failed = 0;
    int more = xpv_oom_run(call_next, &nc, &failed);
    if (more == XPV_OOM_FAILED) {
        fprintf(stderr, "xpview: out of memory (%zu bytes) streaming a body: it ends here\n",
                failed);
        bs->failed = 1;
        return -1;
    }
    return more;
}

/* Give `r` a streamed body for the request's tool.  Returns 0 (r->produce
 * set, or an error response when the inputs fail to load) or -1 when the
 * tool does not stream this query (r untouched: render it instead). */
int stream_body(xpv_app *a, reqctx *rc, const xpv_request *rq, xpv_response *r) {
    const xpv_tool_stream *ts = rc->tool->stream;
    xpv_params params = xpv_request_params(rq);
    if (!ts || !ts->wants(&params)) return -1;
    xpv_err err;
    xpv_err_clear(&err);
    xpv_buf ids;
    xpv_buf_init(&ids);
    for (size_t i = 0; i < rc->nhosts; i++) host_identity(&ids, rc->hosts[i]);
    xpv_buf_putc(&ids, '\0');
    body_stream *bs = xpv_xcalloc(1, sizeof *bs);
    bs->cache = a->cache;
    bs->n = rc->nhosts;
    bs->ts = ts;
    bs->entries = xpv_xcalloc(bs->n, sizeof *bs->entries);
    bs->profiles = xpv_xcalloc(bs->n, sizeof *bs->profiles);
    bs->names = xpv_xcalloc(bs->n, sizeof *bs->names);
    for (size_t i = 0; i < bs->n; i++) {
        bs->names[i] = xpv_xstrdup(rc->hosts[i]->name);
        bs->entries[i] = get_profile(a, rc->hosts[i], i > 0, &err);
        if (!bs->entries[i]) goto fail;
        bs->profiles[i] = xpv_centry_value(bs->entries[i]);
    }
    xpv_hostset hs = {bs->n, bs->profiles, (const char *const *)bs->names};
    const void *derived = NULL;
    if (rc->tool->derived) {
        bs->dentry = get_derived(a, rc, ids.data, &hs, bs->entries, &err);
        if (!bs->dentry) goto fail;
        derived = ((struct derived_val *)xpv_centry_value(bs->dentry))->d;
    }
    xpv_err terr;
    memset(&terr, 0, sizeof terr);
    struct tool_call tc = {.tool = rc->tool, .hs = &hs, .derived = derived, .params = &params,
                           .err = &terr};
    size_t failed = 0;
    if (xpv_oom_run(call_open, &tc, &failed) == XPV_OOM_FAILED)
        oom_error(&terr, "opening", rc->tool->name, failed);
    bs->st = tc.result;
    if (!bs->st) {
        xpv_err_set(&err, terr.status ? terr.status : 500, "%s",
                    terr.msg[0] ? terr.msg : "the tool failed");
        goto fail;
    }
    xpv_buf_free(&ids);
    r->body = "";
    r->len = 0;
    r->compress = 1;
    r->produce = body_stream_produce;
    r->free_state = body_stream_free;
    r->state = bs;
    return 0;

fail:
    xpv_buf_free(&ids);
    body_stream_free(bs);
    resp_error(r, &err);
    return 0;
}
