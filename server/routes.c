/*
 * routes.c - the HTTP API as functions (see routes.h).
 *
 * Request flow for a tool's data: resolve run, tool and host set in a
 * run-list snapshot (names are only looked up, never joined into paths),
 * then get the rendered response from the cache, keyed by tool + the host
 * files' identities (path, size, mtime, inode) + the query.  On a miss the
 * cache builds it once: profiles (cached), derived data (cached, keeps its
 * profiles alive), render.  Big responses are not kept, so a trace cannot
 * push decoded profiles out of the budget.  The full trace is never
 * rendered whole: its response carries a producer (the tool's stream) that
 * pins the profiles and the trace index while the body is sent.
 */
#include "routes.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "assets.h"
#include "capture_route.h"
#include "discovery.h"
#include "legacy_serve.h"
#include "loader.h"
#include "version.h"

#define DATA_PREFIX "/data/plugin/profile/"
#define ALL_HOSTS "ALL_HOSTS"

struct xpv_app {
    xpv_logdir *ld;
    xpv_cache *cache;
    xpv_diskcache *dc;               /* --cache_dir, or NULL */
    char *prefix;                    /* "" or "/sub/path" */
    xpv_load_limits limits;
    uint64_t keep_max;               /* largest rendered response kept */
    const xpv_tool *const *tools;
    uint64_t decodes, decode_failures, not_modified;   /* atomic counters */
    uint64_t build_id;               /* hash of the running binary (ETags) */
    int64_t code_mtime;              /* its mtime, s (Last-Modified), or 0 */
};

/* Hash of the running executable, so ETags change with the code that
 * computed the bodies (replicas running the same binary agree). */
static uint64_t binary_hash(void) {
    FILE *f = fopen("/proc/self/exe", "rb");
    uint64_t h = xpv_hash64(XPV_VERSION, strlen(XPV_VERSION));
    if (!f) return h;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        uint64_t c = xpv_hash64(chunk, n);
        h = xpv_hash64(&c, sizeof c) ^ (h * 0x100000001b3ULL);
    }
    fclose(f);
    return h;
}

/* ==== Responses ======================================================== */

static void resp_init(xpv_response *r) {
    memset(r, 0, sizeof *r);
    r->status = 200;
    r->content_type = "application/json";
    r->body = "";
    r->cache_control = "no-cache";
    r->ims = -1;
}

void xpv_response_release(xpv_response *r) {
    free(r->owned);
    free(r->owned_gz);
    if (r->pin) xpv_cache_release(r->pin_cache, r->pin);
    if (r->free_state) r->free_state(r->state);
    r->produce = NULL;
    r->free_state = NULL;
    r->state = NULL;
    r->owned = NULL;
    r->owned_gz = NULL;
    r->pin = NULL;
    r->body = "";
    r->len = 0;
    r->gz = NULL;
    r->gz_len = 0;
}

/* Hand the bytes of `b` to the response. */
static void resp_take_buf(xpv_response *r, xpv_buf *b) {
    size_t len;
    char *d = xpv_buf_steal(b, &len);
    free(r->owned);
    r->owned = d;
    r->body = d;
    r->len = len;
    r->compress = len > 512;
}

static void resp_error(xpv_response *r, const xpv_err *e) {
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_response_release(r);
    r->status = e->status ? e->status : 500;
    r->content_type = "application/json";
    r->etag = NULL;
    r->last_modified[0] = '\0';
    r->gz = NULL;
    xpv_buf_puts(&b, "{\"error\":");
    xpv_buf_json_cstr(&b, e->msg[0] ? e->msg : "error");
    if (e->file[0]) {
        xpv_buf_puts(&b, ",\"file\":");
        xpv_buf_json_cstr(&b, e->file);
    }
    if (e->offset >= 0) {
        xpv_buf_puts(&b, ",\"offset\":");
        xpv_buf_i64(&b, e->offset);
    }
    xpv_buf_puts(&b, "}");
    resp_take_buf(r, &b);
}

static void resp_errorf(xpv_response *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void resp_errorf(xpv_response *r, int status, const char *fmt, ...) {
    xpv_err e;
    va_list ap;
    xpv_err_clear(&e);
    e.status = status;
    va_start(ap, fmt);
    vsnprintf(e.msg, sizeof e.msg, fmt, ap);
    va_end(ap);
    resp_error(r, &e);
}

/* ==== App ============================================================== */

static uint64_t default_cache_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    uint64_t ram = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : (2ULL << 30);
    uint64_t b = ram / 2;
    return b > (8ULL << 30) ? (8ULL << 30) : b;
}

xpv_app *xpv_app_new(const xpv_app_config *cfg, xpv_err *err) {
    char msg[512];
    xpv_err_clear(err);
    int interval = cfg->scan_interval_ms < 0 ? 1000 : cfg->scan_interval_ms;
    xpv_logdir *ld = cfg->session ? xpv_logdir_new_session(cfg->logdir, msg, sizeof msg)
                                  : xpv_logdir_new(cfg->logdir, interval, msg, sizeof msg);
    if (!ld) {
        xpv_err_set(err, 404, "%s", msg);
        return NULL;
    }
    xpv_app *a = xpv_xcalloc(1, sizeof *a);
    a->ld = ld;
    uint64_t budget = cfg->cache_bytes ? cfg->cache_bytes : default_cache_bytes();
    a->cache = xpv_cache_new(budget);
    a->keep_max = budget / 8 < (64ULL << 20) ? budget / 8 : (64ULL << 20);
    a->limits.max_file = cfg->max_file_size ? cfg->max_file_size : XPV_DEFAULT_MAX_FILE;
    a->limits.max_inflated = a->limits.max_file;
    a->limits.root = xpv_logdir_root(ld);   /* loads stay inside the logdir */
    a->tools = xpv_tools();
    a->build_id = binary_hash();
    struct stat exe;
    a->code_mtime = stat("/proc/self/exe", &exe) == 0 ? (int64_t)exe.st_mtim.tv_sec : 0;

    /* Normalise the prefix: leading '/', no trailing '/', "" for none. */
    const char *p = cfg->path_prefix ? cfg->path_prefix : "";
    while (*p == '/') p++;
    size_t n = strlen(p);
    while (n && p[n - 1] == '/') n--;
    a->prefix = xpv_xmalloc(n + 2);
    if (n) {
        a->prefix[0] = '/';
        memcpy(a->prefix + 1, p, n);
        a->prefix[n + 1] = '\0';
    } else {
        a->prefix[0] = '\0';
    }
    return a;
}

void xpv_app_free(xpv_app *a) {
    if (!a) return;
    xpv_diskcache_free(a->dc);
    xpv_cache_free(a->cache);
    xpv_logdir_free(a->ld);
    free(a->prefix);
    free(a);
}

void xpv_app_set_tools(xpv_app *a, const xpv_tool *const *tools) {
    a->tools = tools ? tools : xpv_tools();
    xpv_cache_clear(a->cache);
}

int xpv_app_set_cache_dir(xpv_app *a, const char *dir, xpv_err *err) {
    char msg[1024];
    xpv_err_clear(err);
    xpv_diskcache *dc = xpv_diskcache_open(dir, xpv_logdir_root(a->ld), a->build_id, msg,
                                           sizeof msg);
    if (!dc) return xpv_err_set(err, 400, "%s", msg);
    xpv_diskcache_free(a->dc);
    a->dc = dc;
    return 0;
}

xpv_cache *xpv_app_cache(xpv_app *a) { return a->cache; }
const char *xpv_app_logdir(const xpv_app *a) { return xpv_logdir_root(a->ld); }

/* Tool by name or alias among the app's tools; a trailing '^' (old UIs) and
 * a trailing '@' (streaming trace viewer name) are accepted. */
static const xpv_tool *find_tool(const xpv_app *a, const char *name) {
    if (!name) return NULL;
    size_t n = strlen(name);
    for (int pass = 0; pass < 2; pass++) {
        for (const xpv_tool *const *t = a->tools; *t; t++) {
            const xpv_tool *tl = *t;
            if (strlen(tl->name) == n && !strncmp(tl->name, name, n)) return tl;
            if (tl->alias && strlen(tl->alias) == n && !strncmp(tl->alias, name, n))
                return tl;
        }
        if (n && (name[n - 1] == '^' || name[n - 1] == '@')) n--;
        else break;
        if (n && name[n - 1] == '@') n--;
    }
    return NULL;
}

static int is_trace_tool(const xpv_tool *t) {
    return !strncmp(t->name, "trace_viewer", 12);
}

/* ==== Profiles, through the cache ====================================== */

/* Identity of a host file: what makes a cached profile stale. */
static void host_identity(xpv_buf *b, const xpv_host *h) {
    xpv_buf_printf(b, "%s\x1f%llu\x1f%lld\x1f%llu\x1e", h->path,
                   (unsigned long long)h->size, (long long)h->mtime_ns,
                   (unsigned long long)h->ino);
}

struct profile_ctx {
    xpv_app *app;
    const xpv_host *host;
};

static void free_profile(void *p) { xpv_profile_free(p); }

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
    v->ptr = p;
    v->size = p->mem_size ? p->mem_size : p->buf_len;
    v->free = free_profile;
    return 0;
}

/* The cached profile of `h` (a referenced entry), or NULL with `err`. */
/* `holds`: whether the caller already holds cache entries (other hosts of
 * its host set), for memory admission. */
static xpv_centry *get_profile(xpv_app *a, const xpv_host *h, int holds, xpv_err *err) {
    xpv_buf key;
    xpv_buf_init(&key);
    xpv_buf_puts(&key, "P\x1f");
    host_identity(&key, h);
    xpv_buf_putc(&key, '\0');
    struct profile_ctx ctx = {a, h};
    /* Admission: a decode needs at least the file's bytes at once, so cold
     * decodes of different profiles queue rather than overrun the budget. */
    xpv_centry *e = xpv_cache_get_admit(a->cache, key.data, h->size, holds, h->rel,
                                        build_profile, &ctx, err);
    xpv_buf_free(&key);
    if (!e && !err->file[0]) snprintf(err->file, sizeof err->file, "%s", h->rel);
    return e;
}

/* ==== Request context: run, tool, host set ============================= */

typedef struct reqctx {
    xpv_runlist *rl;
    const xpv_run *run;
    const xpv_tool *tool;
    const xpv_host **hosts;     /* selected hosts, in run (= name) order */
    size_t nhosts;
    const char *host_label;     /* host name, or ALL_HOSTS */
} reqctx;

static void reqctx_release(reqctx *c) {
    free(c->hosts);
    if (c->rl) xpv_runlist_release(c->rl);
    memset(c, 0, sizeof *c);
}

/* Resolve `run` (and `tag` when need_tool) from the query. */
static int resolve_run(xpv_app *a, const xpv_query *q, int need_tool, reqctx *c,
                       xpv_err *err) {
    const char *run = xpv_query_get(q, "run");
    memset(c, 0, sizeof c[0]);
    if (!run || !*run) return xpv_err_set(err, 400, "missing parameter: run");
    c->rl = xpv_logdir_scan(a->ld, 0);
    /* No forced rescan for unknown names: that would let any client make
     * the server walk the logdir on every request.  New runs show up within
     * the scan interval. */
    c->run = xpv_runlist_find(c->rl, run);
    if (!c->run) return xpv_err_set(err, 404, "unknown run: %s", run);
    if (need_tool) {
        const char *tag = xpv_query_get(q, "tag");
        if (!tag || !*tag) return xpv_err_set(err, 400, "missing parameter: tag");
        c->tool = find_tool(a, tag);
        if (!c->tool) return xpv_err_set(err, 404, "unknown tool: %s", tag);
    }
    return 0;
}

/* Select hosts per XProf: hosts=a,b (trace viewer only), host=H, or
 * host=ALL_HOSTS / no host = all of them. */
static int resolve_hosts(const xpv_query *q, reqctx *c, xpv_err *err) {
    const xpv_run *run = c->run;
    const char *host = xpv_query_get(q, "host");
    const char *list = xpv_query_get(q, "hosts");
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
                    return xpv_err_set(err, 404, "unknown host in run %s: %.*s",
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
            return xpv_err_set(err, 404, "unknown host in run %s: %s", run->name, host);
        }
        sel[h - run->hosts] = 1;
        c->host_label = h->name;
    }
    c->hosts = xpv_xcalloc(run->nhosts ? run->nhosts : 1, sizeof *c->hosts);
    for (size_t i = 0; i < run->nhosts; i++)
        if (sel[i]) c->hosts[c->nhosts++] = &run->hosts[i];
    free(sel);
    if (!c->nhosts) return xpv_err_set(err, 404, "no host selected in run %s", run->name);
    if (c->nhosts > 1 && c->tool && !explicit_list && !is_trace_tool(c->tool) &&
        !(c->tool->flags & (XPV_TOOL_ALL_HOSTS_ONLY | XPV_TOOL_ALL_HOSTS_OK)))
        return xpv_err_set(err, 400, "%s shows one host at a time: choose a host "
                           "(host=NAME)", c->tool->name);
    return 0;
}

/* ==== Rendering, through the cache ===================================== */

typedef struct rendered {
    char *body;
    size_t len;
    unsigned char *gz;
    size_t gz_len;
} rendered;

static void free_rendered(void *p) {
    rendered *r = p;
    free(r->body);
    free(r->gz);
    free(r);
}

struct derived_ctx {
    const xpv_derived_kind *kind;
    const xpv_hostset *hs;
    xpv_centry **entries;       /* the profiles: kept alive by the value */
    size_t n;
    xpv_cache *cache;
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

static int build_derived(void *vctx, xpv_cache_val *v, xpv_err *err) {
    struct derived_ctx *ctx = vctx;
    xpv_err terr;
    memset(&terr, 0, sizeof terr);
    void *d = NULL;
    if (ctx->dc) d = xpv_diskcache_load_derived(ctx->dc, ctx->kind, ctx->hosts, ctx->hs);
    if (!d) {
        d = ctx->kind->build(ctx->hs, &terr);
        if (d && ctx->dc) xpv_diskcache_save_derived(ctx->dc, ctx->kind, ctx->hosts, ctx->hs, d);
    }
    if (!d) {
        xpv_err_set(err, terr.status ? terr.status : 500, "%s",
                    terr.msg[0] ? terr.msg : "cannot build derived data");
        return -1;
    }
    struct derived_val *dv = xpv_xmalloc(sizeof *dv);
    dv->kind = ctx->kind;
    dv->d = d;
    v->ptr = dv;
    v->size = ctx->kind->size ? ctx->kind->size(d) : 0;
    v->free = free_derived;
    v->deps = xpv_xmalloc(ctx->n * sizeof *v->deps);
    for (size_t i = 0; i < ctx->n; i++) {
        xpv_centry_ref(ctx->cache, ctx->entries[i]);
        v->deps[i] = ctx->entries[i];
    }
    v->ndeps = ctx->n;
    return 0;
}

/* The tool's derived data for the host set `hs` (whose profile entries
 * are `entries`; `ids` = the files' identities): a referenced entry holding
 * a `struct derived_val`, or NULL with `err`. */
static xpv_centry *get_derived(xpv_app *a, const reqctx *rc, const char *ids,
                               const xpv_hostset *hs, xpv_centry **entries, xpv_err *err) {
    const xpv_derived_kind *k = rc->tool->derived;
    xpv_buf key;
    xpv_buf_init(&key);
    xpv_buf_printf(&key, "D\x1f%s\x1f%s\x1f%s", k->name, rc->run->name, ids);
    xpv_buf_putc(&key, '\0');
    struct derived_ctx dctx = {k, hs, entries, hs->n, a->cache, a->dc, rc->hosts};
    xpv_centry *e = xpv_cache_get(a->cache, key.data, build_derived, &dctx, err);
    xpv_buf_free(&key);
    return e;
}

struct render_ctx {
    xpv_app *app;
    reqctx *rc;
    const xpv_query *q;
    const char *ids;            /* host identities, for the derived key */
};

static int build_rendered(void *vctx, xpv_cache_val *v, xpv_err *err) {
    struct render_ctx *ctx = vctx;
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

    for (size_t i = 0; i < n; i++) {
        entries[i] = get_profile(a, rc->hosts[i], i > 0, err);
        if (!entries[i]) goto done;
        profiles[i] = xpv_centry_value(entries[i]);
        names[i] = rc->hosts[i]->name;
    }
    xpv_hostset hs = {n, profiles, names};
    const void *derived = NULL;
    if (rc->tool->derived) {
        dentry = get_derived(a, rc, ctx->ids, &hs, entries, err);
        if (!dentry) goto done;
        derived = ((struct derived_val *)xpv_centry_value(dentry))->d;
    }
    xpv_params params = xpv_query_params(ctx->q);
    xpv_err terr;
    memset(&terr, 0, sizeof terr);
    if (rc->tool->render(&hs, derived, &params, &out, &terr) != 0) {
        xpv_err_set(err, terr.status ? terr.status : 500, "%s",
                    terr.msg[0] ? terr.msg : "the tool failed");
        goto done;
    }
    rendered *r = xpv_xcalloc(1, sizeof *r);
    r->body = xpv_buf_steal(&out, &r->len);
    v->ptr = r;
    v->free = free_rendered;
    if (r->len > a->keep_max) {
        v->transient = 1;       /* too big to keep: compress per request */
    } else if (r->len > 512) {
        r->gz = xpv_gzip(r->body, r->len, r->len <= (4u << 20) ? 6 : 1, &r->gz_len);
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
static void canonical_query(xpv_buf *b, const xpv_query *q) {
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

/* The rendered output of the request's tool (a referenced cache entry
 * holding a `rendered`), or NULL with `err`. */
static xpv_centry *get_rendered(xpv_app *a, reqctx *rc, const xpv_query *q,
                                xpv_err *err) {
    xpv_buf ids, key;
    xpv_buf_init(&ids);
    xpv_buf_init(&key);
    for (size_t i = 0; i < rc->nhosts; i++) host_identity(&ids, rc->hosts[i]);
    xpv_buf_putc(&ids, '\0');
    xpv_buf_printf(&key, "R\x1f%s\x1f%s\x1f", rc->tool->name, ids.data);
    canonical_query(&key, q);
    xpv_buf_putc(&key, '\0');
    struct render_ctx ctx = {a, rc, q, ids.data};
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

static int body_stream_produce(void *p, xpv_buf *out) {
    body_stream *bs = p;
    return bs->ts->next(bs->st, out, STREAM_CHUNK);
}

/* Give `r` a streamed body for the request's tool.  Returns 0 (r->produce
 * set, or an error response when the inputs fail to load) or -1 when the
 * tool does not stream this query (r untouched: render it instead). */
static int stream_body(xpv_app *a, reqctx *rc, const xpv_query *q, xpv_response *r) {
    const xpv_tool_stream *ts = rc->tool->stream;
    xpv_params params = xpv_query_params(q);
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
    bs->st = ts->open(&hs, derived, &params, &terr);
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

/* ==== Validators (ETag, Last-Modified) ================================ */

/* Whether If-None-Match `inm` lists `etag` (or is "*"). */
static int inm_matches(const char *inm, const char *etag) {
    if (!inm || !etag) return 0;
    while (*inm == ' ') inm++;
    return !strcmp(inm, "*") || strstr(inm, etag) != NULL;
}

/* Seconds since the epoch of an HTTP-date (RFC 9110 5.6.7: IMF-fixdate or
 * the obsolete RFC 850 and asctime forms, always GMT), or -1. */
static int64_t parse_http_date(const char *s) {
    static const char *const fmts[] = {
        "%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y"};
    while (*s == ' ') s++;
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        struct tm tm;
        memset(&tm, 0, sizeof tm);
        const char *end = strptime(s, fmts[i], &tm);
        if (end && !*end) return (int64_t)timegm(&tm);
    }
    return -1;
}

/* Give `r` an ETag and Last-Modified for a response computed by `route`
 * from the files `hosts` with query `q` (NULL: none).  The ETag changes
 * whenever the server version, a file's identity (path, size, mtime,
 * inode) or the query does; Last-Modified is the newest mtime or ctime of
 * the files and the binary's mtime.  Returns 1 when `inm` matches (or,
 * without `inm`, when r->ims is not older than Last-Modified): r is then a
 * 304 and the caller must not compute the body. */
static int set_validators(xpv_app *a, xpv_response *r, const char *route,
                          const xpv_host *const *hosts, size_t n,
                          const xpv_query *q, const char *inm) {
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_buf_printf(&b, "%s\x1f%016llx\x1f%s\x1f", XPV_VERSION,
                   (unsigned long long)a->build_id, route);
    int64_t newest = 0;
    for (size_t i = 0; i < n; i++) {
        host_identity(&b, hosts[i]);
        if (hosts[i]->mtime_ns > newest) newest = hosts[i]->mtime_ns;
        if (hosts[i]->ctime_ns > newest) newest = hosts[i]->ctime_ns;
    }
    if (q) canonical_query(&b, q);
    uint64_t h1 = xpv_hash64(b.data, b.len);
    xpv_buf_add(&b, &h1, sizeof h1);
    uint64_t h2 = xpv_hash64(b.data, b.len);
    xpv_buf_free(&b);
    snprintf(r->etag_buf, sizeof r->etag_buf, "\"%016llx%016llx\"",
             (unsigned long long)h1, (unsigned long long)h2);
    r->etag = r->etag_buf;
    int64_t lm = newest / 1000000000;
    if (n && a->code_mtime > lm) lm = a->code_mtime;
    time_t t = (time_t)lm;
    struct tm tm;
    if (gmtime_r(&t, &tm))
        strftime(r->last_modified, sizeof r->last_modified,
                 "%a, %d %b %Y %H:%M:%S GMT", &tm);
    /* RFC 9110 13.2.2: If-None-Match decides when present. */
    int fresh = inm ? inm_matches(inm, r->etag) : (n && r->ims >= 0 && lm <= r->ims);
    if (!fresh) return 0;
    __atomic_add_fetch(&a->not_modified, 1, __ATOMIC_RELAXED);
    r->status = 304;
    r->body = "";
    r->len = 0;
    return 1;
}

/* ==== Data routes ====================================================== */

static void route_runs(xpv_app *a, const xpv_query *q, const char *inm,
                        xpv_response *r) {
    (void)inm;
    (void)q;
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

/* ==== Older formats: TF 2.2-era per-tool files (legacy_serve.h) ======== */

/* run_tools of a run holding per-tool files (or no host at all): the
 * first host's tools merged with the files' tools. */
static void legacy_run_tools(xpv_app *a, const reqctx *rc, const char *inm,
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
        xpv_buf key;
        xpv_buf_init(&key);
        xpv_buf_puts(&key, "T\x1f");
        host_identity(&key, &run->hosts[0]);
        xpv_buf_putc(&key, '\0');
        struct tools_ctx ctx = {a, &run->hosts[0]};
        e = xpv_cache_get(a->cache, key.data, build_tool_list, &ctx, &err);
        xpv_buf_free(&key);
    }
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_legacy_tool_list(run, a->tools, e ? (const char *)xpv_centry_value(e) : NULL, &b);
    if (e) xpv_cache_release(a->cache, e);
    resp_take_buf(r, &b);
}

/* hosts?tag=T for a tool served from per-tool files.  Returns 1 when it
 * answered. */
static int legacy_hosts(xpv_app *a, const xpv_query *q, xpv_response *r) {
    const char *tag = xpv_query_get(q, "tag");
    if (!tag || !*tag) return 0;
    reqctx rc;
    xpv_err err;
    xpv_err_clear(&err);
    char tool[64];
    xpv_legacy_tool_name(tag, tool, sizeof tool);
    if (resolve_run(a, q, 0, &rc, &err) != 0 || !xpv_legacy_run_has_tool(rc.run, tool)) {
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
static int legacy_data(xpv_app *a, const xpv_query *q, const char *inm, xpv_response *r,
                       int csv) {
    reqctx rc;
    xpv_err err;
    memset(&rc, 0, sizeof rc);   /* released below even when never resolved */
    xpv_err_clear(&err);
    char tool[64];
    xpv_legacy_tool_name(xpv_query_get(q, "tag"), tool, sizeof tool);
    if (!tool[0] || resolve_run(a, q, 0, &rc, &err) != 0) {
        reqctx_release(&rc);
        return 0;
    }
    const xpv_host *f = xpv_legacy_find(rc.run, tool, xpv_query_get(q, "host"));
    if (!f) {
        reqctx_release(&rc);
        return 0;
    }
    if (set_validators(a, r, csv ? "data_csv" : "data", &f, 1, q, inm)) {
        reqctx_release(&rc);
        return 1;
    }
    xpv_buf b;
    xpv_buf_init(&b);
    if (xpv_legacy_serve(f, &a->limits, &b, &err) != 0) {
        xpv_buf_free(&b);
        resp_error(r, &err);
        reqctx_release(&rc);
        return 1;
    }
    if (csv) {
        const char *t = xpv_query_get(q, "table");
        size_t index = t && *t ? (size_t)strtoul(t, NULL, 10) : 0;
        xpv_buf c;
        xpv_buf_init(&c);
        int rcode = xpv_datatable_to_csv(b.data, b.len, index, &c, &err);
        xpv_buf_free(&b);
        if (rcode != 0) {
            xpv_buf_free(&c);
            resp_error(r, &err);
            reqctx_release(&rc);
            return 1;
        }
        resp_take_buf(r, &c);
        r->content_type = "text/csv; charset=utf-8";
        char fname[200];
        snprintf(fname, sizeof fname, "%s_%s_%s", tool, rc.run->name, f->name);
        for (char *p = fname; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                  (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_'))
                *p = '_';
        snprintf(r->disposition, sizeof r->disposition, "attachment; filename=\"%s.csv\"",
                 fname);
    } else {
        resp_take_buf(r, &b);
    }
    reqctx_release(&rc);
    return 1;
}

/* profile_info of a run made only of per-tool files: what "about this
 * profile" can say without a decoded profile (the files, their sizes). */
static void legacy_profile_info(const reqctx *rc, xpv_response *r) {
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

static void route_run_tools(xpv_app *a, const xpv_query *q, const char *inm,
                             xpv_response *r) {
    reqctx rc;
    xpv_err err;
    xpv_err_clear(&err);
    if (resolve_run(a, q, 0, &rc, &err) != 0) {
        resp_error(r, &err);
        reqctx_release(&rc);
        return;
    }
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
        xpv_buf key;
        xpv_buf_init(&key);
        xpv_buf_puts(&key, "T\x1f");
        host_identity(&key, h);
        xpv_buf_putc(&key, '\0');
        struct tools_ctx ctx = {a, h};
        xpv_err_clear(&err);
        e = xpv_cache_get(a->cache, key.data, build_tool_list, &ctx, &err);
        xpv_buf_free(&key);
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

static void route_hosts(xpv_app *a, const xpv_query *q, const char *inm,
                         xpv_response *r) {
    if (legacy_hosts(a, q, r)) return;   /* older formats */
    (void)inm;
    reqctx rc;
    xpv_err err;
    xpv_err_clear(&err);
    const char *tag = xpv_query_get(q, "tag");
    int need_tool = tag && *tag;
    if (resolve_run(a, q, need_tool, &rc, &err) != 0) {
        resp_error(r, &err);
        reqctx_release(&rc);
        return;
    }
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

static void route_data(xpv_app *a, const xpv_query *q, const char *inm,
                       xpv_response *r, int csv) {
    if (legacy_data(a, q, inm, r, csv)) return;   /* older formats */
    reqctx rc;
    xpv_err err;
    xpv_err_clear(&err);
    if (resolve_run(a, q, 1, &rc, &err) != 0 || resolve_hosts(q, &rc, &err) != 0) {
        resp_error(r, &err);
        reqctx_release(&rc);
        return;
    }
    if (csv && !(rc.tool->flags & XPV_TOOL_TABLE)) {   /* before any work */
        resp_errorf(r, 400, "%s has no tables: data_csv serves table tools only",
                    rc.tool->name);
        reqctx_release(&rc);
        return;
    }
    if (set_validators(a, r, csv ? "data_csv" : "data", rc.hosts, rc.nhosts, q, inm)) {
        reqctx_release(&rc);
        return;
    }
    if (!csv && stream_body(a, &rc, q, r) == 0) {   /* the full trace */
        reqctx_release(&rc);
        return;
    }
    xpv_centry *e = get_rendered(a, &rc, q, &err);
    if (!e) {
        resp_error(r, &err);
        reqctx_release(&rc);
        return;
    }
    const rendered *out = xpv_centry_value(e);
    if (!csv) {
        r->body = out->body;
        r->len = out->len;
        r->gz = out->gz;
        r->gz_len = out->gz_len;
        r->compress = out->len > 512;
        r->pin = e;
        r->pin_cache = a->cache;
        reqctx_release(&rc);
        return;
    }
    size_t index = 0;
    const char *t = xpv_query_get(q, "table");
    if (t && *t) {
        uint64_t v;
        if (!xpv_parse_u64_strict(t, 100000, &v)) {
            xpv_cache_release(a->cache, e);
            resp_errorf(r, 400, "bad parameter table=%s", t);
            reqctx_release(&rc);
            return;
        }
        index = (size_t)v;
    }
    xpv_buf b;
    xpv_buf_init(&b);
    int rcode = xpv_datatable_to_csv(out->body, out->len, index, &b, &err);
    xpv_cache_release(a->cache, e);
    if (rcode != 0) {
        xpv_buf_free(&b);
        resp_error(r, &err);
        reqctx_release(&rc);
        return;
    }
    resp_take_buf(r, &b);
    r->content_type = "text/csv; charset=utf-8";
    /* filename="<tool>_<run>_<host>.csv", restricted to safe characters. */
    char fname[200];
    snprintf(fname, sizeof fname, "%s_%s_%s", rc.tool->name, rc.run->name,
             rc.host_label ? rc.host_label : ALL_HOSTS);
    for (char *p = fname; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_'))
            *p = '_';
    snprintf(r->disposition, sizeof r->disposition,
             "attachment; filename=\"%s.csv\"", fname);
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

static void route_profile_info(xpv_app *a, const xpv_query *q, const char *inm,
                                xpv_response *r) {
    reqctx rc;
    xpv_err err;
    xpv_err_clear(&err);
    if (resolve_run(a, q, 0, &rc, &err) != 0) {
        resp_error(r, &err);
        reqctx_release(&rc);
        return;
    }
    if (!rc.run->nhosts) {   /* older formats: per-tool files only */
        legacy_profile_info(&rc, r);
        reqctx_release(&rc);
        return;
    }
    const char *hn = xpv_query_get(q, "host");
    const xpv_host *h = (!hn || !*hn || !strcmp(hn, ALL_HOSTS))
                            ? &rc.run->hosts[0] : xpv_run_find_host(rc.run, hn);
    if (!h) {
        resp_errorf(r, 404, "unknown host in run %s: %s", rc.run->name, hn);
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

static void route_version(xpv_app *a, const xpv_query *q, const char *inm,
                           xpv_response *r) {
    (void)inm;
    (void)a;
    (void)q;
    r->content_type = "text/plain; charset=utf-8";
    r->body = XPV_VERSION;
    r->len = strlen(XPV_VERSION);
}

static void route_data_plain(xpv_app *a, const xpv_query *q, const char *inm,
                              xpv_response *r) {
    route_data(a, q, inm, r, 0);
}

static void route_data_csv(xpv_app *a, const xpv_query *q, const char *inm,
                            xpv_response *r) {
    route_data(a, q, inm, r, 1);
}

static const struct {
    const char *name;
    void (*fn)(xpv_app *a, const xpv_query *q, const char *inm, xpv_response *r);
} data_routes[] = {
    {"runs", route_runs},
    {"run_tools", route_run_tools},
    {"hosts", route_hosts},
    {"data", route_data_plain},
    {"data_csv", route_data_csv},
    {"profile_info", route_profile_info},
    {"version", route_version},
    {"capture_profile", xpv_capture_route},
};

/* `r` is fresh from resp_init (r->ims already set by the caller). */
static void data_route(xpv_app *a, const char *route, const xpv_query *q,
                       const char *inm, xpv_response *r) {
    for (size_t i = 0; i < sizeof data_routes / sizeof data_routes[0]; i++)
        if (!strcmp(data_routes[i].name, route)) {
            data_routes[i].fn(a, q, inm, r);
            return;
        }
    resp_errorf(r, 404, "unknown route: %.200s", route);
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
    xpv_cache_get_stats(a->cache, &st->cache);
    st->has_disk = a->dc != NULL;
    memset(&st->disk, 0, sizeof st->disk);
    if (a->dc) xpv_diskcache_get_stats(a->dc, &st->disk);
}

static void route_statz(xpv_app *a, xpv_response *r) {
    xpv_app_stats st;
    xpv_buf b;
    xpv_app_get_stats(a, &st);
    xpv_buf_init(&b);
    xpv_buf_printf(&b, "{\"version\":\"%s\",\"decodes\":%llu,\"decode_failures\":%llu,"
                   "\"not_modified\":%llu,\"cache\":{\"budget\":%llu,\"used\":%llu,"
                   "\"entries\":%llu,\"hits\":%llu,\"misses\":%llu,\"evictions\":%llu,"
                   "\"builds\":%llu}", XPV_VERSION,
                   (unsigned long long)st.decodes, (unsigned long long)st.decode_failures,
                   (unsigned long long)st.not_modified, (unsigned long long)st.cache.budget,
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

/* ==== Static files and dispatch ======================================== */

static void route_static(const char *path, const char *inm, xpv_response *r) {
    if (!*path) path = "index.html";
    int immutable = 0;
    const xpv_asset *as = xpv_asset_find_versioned(path, &immutable);
    if (!as) {
        resp_errorf(r, 404, "not found: /%s", path);
        return;
    }
    r->content_type = as->mime;
    r->etag = as->etag;
    /* index.html names the files as v/<tree hash>/...: those never change. */
    r->cache_control = immutable ? "public, max-age=31536000, immutable" : "no-cache";
    if (inm && strstr(inm, as->etag)) {
        r->status = 304;
        return;
    }
    r->body = (const char *)as->data;
    r->len = as->len;
    r->gz = as->gz;
    r->gz_len = as->gz_len;
}

void xpv_app_route(xpv_app *a, const char *method, const char *uri,
                   const char *inm, xpv_response *r) {
    xpv_app_route_cond(a, method, uri, inm, NULL, r);
}

void xpv_app_route_cond(xpv_app *a, const char *method, const char *uri,
                        const char *inm, const char *ims, xpv_response *r) {
    char path[2048];
    resp_init(r);
    if (ims) {
        /* Ignored when invalid or in the future (a client clock ahead of
         * ours must not freeze its copy). */
        r->ims = parse_http_date(ims);
        if (r->ims > (int64_t)time(NULL)) r->ims = -1;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        resp_errorf(r, 405, "method not allowed: only GET and HEAD");
        r->allow = "GET, HEAD";
        return;
    }
    const char *qm = strchr(uri, '?');
    size_t plen = qm ? (size_t)(qm - uri) : strlen(uri);
    if (plen >= sizeof path) {
        resp_errorf(r, 414, "request path too long (max %zu bytes)", sizeof path - 1);
        return;
    }
    if (qm && strlen(qm + 1) > XPV_QUERY_MAX_LEN) {
        resp_errorf(r, 414, "query string too long (max %d bytes)", XPV_QUERY_MAX_LEN);
        return;
    }
    if (xpv_url_decode(uri, plen, path, sizeof path, 0) < 0) {
        resp_errorf(r, 400, "malformed request path");
        return;
    }
    const char *rest = path;
    size_t pl = strlen(a->prefix);
    if (pl) {
        if (!strcmp(path, a->prefix)) {
            /* "/sub/path" -> "path/": relative, so it also works behind a
             * proxy that adds its own prefix. */
            const char *last = strrchr(a->prefix, '/');
            r->status = 301;
            snprintf(r->location, sizeof r->location, "%s/", last + 1);
            r->content_type = "text/plain; charset=utf-8";
            r->body = "moved";
            r->len = 5;
            return;
        }
        if (strncmp(path, a->prefix, pl) != 0 || path[pl] != '/') {
            resp_errorf(r, 404, "not found (this server lives under %s/)", a->prefix);
            return;
        }
        rest = path + pl;
    }
    if (rest[0] != '/') {
        resp_errorf(r, 404, "not found");
        return;
    }
    if (!strcmp(rest, "/healthz")) {
        static const char ok[] = "{\"status\":\"ok\"}";
        r->body = ok;
        r->len = sizeof ok - 1;
        r->cache_control = "no-store";
        return;
    }
    if (!strcmp(rest, "/statz")) {
        route_statz(a, r);
        return;
    }
    if (!strncmp(rest, DATA_PREFIX, strlen(DATA_PREFIX))) {
        xpv_query q = XPV_QUERY_INIT;
        xpv_err err;
        xpv_err_clear(&err);
        const char *qs = qm ? qm + 1 : "";
        if (xpv_query_parse(&q, qs, strlen(qs), &err) != 0) {
            resp_error(r, &err);
            return;
        }
        data_route(a, rest + strlen(DATA_PREFIX), &q, inm, r);
        xpv_query_release(&q);
        return;
    }
    if (!strcmp(rest, "/index.html") || !strcmp(rest, "/")) {
        route_static("index.html", inm, r);
        return;
    }
    route_static(rest + 1, inm, r);
}

/* ==== DataTable -> CSV ================================================= */

static void csv_field(xpv_buf *b, const char *s, size_t n) {
    int quote = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r') quote = 1;
    /* Cells starting with = + - @ are left as they are: values are data
     * from the profile, and quoting would change numbers like -1. */
    if (!quote) {
        xpv_buf_add(b, s, n);
        return;
    }
    xpv_buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"') xpv_buf_putc(b, '"');
        xpv_buf_putc(b, s[i]);
    }
    xpv_buf_putc(b, '"');
}

static void csv_value(xpv_buf *b, json_t *v) {
    char tmp[64];
    switch (json_typeof(v)) {
    case JSON_STRING:
        csv_field(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        xpv_buf_i64(b, (int64_t)json_integer_value(v));
        break;
    case JSON_REAL:
        snprintf(tmp, sizeof tmp, "%.15g", json_real_value(v));
        xpv_buf_puts(b, tmp);
        break;
    case JSON_TRUE:
        xpv_buf_puts(b, "true");
        break;
    case JSON_FALSE:
        xpv_buf_puts(b, "false");
        break;
    case JSON_NULL:
        break;
    default: {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (s) {
            csv_field(b, s, strlen(s));
            free(s);
        }
    }
    }
}

int xpv_datatable_to_csv(const char *json, size_t len, size_t index,
                         xpv_buf *out, xpv_err *err) {
    json_error_t je;
    json_t *root = json_loadb(json, len, 0, &je);
    if (!root) return xpv_err_set(err, 400, "the tool's output is not JSON");
    json_t *t = root;
    if (json_is_array(root)) {
        size_t ntables = 0;
        json_t *el;
        size_t i;
        t = NULL;
        json_array_foreach(root, i, el) {
            if (json_is_object(el) && json_is_array(json_object_get(el, "cols"))) {
                if (ntables == index) {
                    t = el;
                    break;
                }
                ntables++;
            }
        }
        if (!t) {
            json_decref(root);
            return xpv_err_set(err, 400, "no table %zu in the tool's output", index);
        }
    } else if (index != 0) {
        json_decref(root);
        return xpv_err_set(err, 400, "the tool's output has only one table");
    }
    json_t *cols = json_object_get(t, "cols"), *rows = json_object_get(t, "rows");
    if (!json_is_array(cols) || !(json_is_array(rows) || !rows)) {
        json_decref(root);
        return xpv_err_set(err, 400, "the tool's output is not a DataTable");
    }
    size_t i, ncols = json_array_size(cols);
    json_t *c;
    json_array_foreach(cols, i, c) {
        if (i) xpv_buf_putc(out, ',');
        json_t *label = json_object_get(c, "label");
        if (!json_is_string(label) || !json_string_length(label))
            label = json_object_get(c, "id");
        if (json_is_string(label)) csv_value(out, label);
    }
    xpv_buf_puts(out, "\r\n");
    json_t *row;
    json_array_foreach(rows, i, row) {
        json_t *cells = json_object_get(row, "c");
        for (size_t k = 0; k < ncols; k++) {
            if (k) xpv_buf_putc(out, ',');
            json_t *cell = json_array_get(cells, k);
            if (json_is_object(cell)) {
                json_t *v = json_object_get(cell, "v");
                if (v) csv_value(out, v);
            } else if (cell) {
                csv_value(out, cell);
            }
        }
        xpv_buf_puts(out, "\r\n");
    }
    json_decref(root);
    return 0;
}
