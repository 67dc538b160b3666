/*
 * routes.c - the HTTP API as functions (see routes.h): the app's life
 * cycle, response helpers, static files and the dispatch of a request
 * to its handler.  The data routes' handlers live in data_routes.c and
 * legacy_routes.c, the way through the cache in pipeline.c (app.h lists
 * the files).
 */
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
#include "hlo.h"
#include "legacy_serve.h"
#include "loader.h"
#include "version.h"

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

void resp_init(xpv_response *r) {
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
void resp_take_buf(xpv_response *r, xpv_buf *b) {
    size_t len;
    char *d = xpv_buf_steal(b, &len);
    free(r->owned);
    r->owned = d;
    r->body = d;
    r->len = len;
    r->compress = len > 512;
}

void resp_csv(xpv_response *r, const char *fmt, ...) {
    char fname[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fname, sizeof fname, fmt, ap);
    va_end(ap);
    for (char *p = fname; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_'))
            *p = '_';
    r->content_type = "text/csv; charset=utf-8";
    snprintf(r->disposition, sizeof r->disposition, "attachment; filename=\"%s.csv\"", fname);
}

void resp_error(xpv_response *r, const xpv_err *e) {
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_response_release(r);
    r->status = e->status ? e->status : 500;
    r->content_type = "application/json";
    r->etag = NULL;
    r->last_modified[0] = '\0';
    r->gz = NULL;
    xpv_buf_puts(&b, "{\"error\":");
    xpv_buf_json_cstr(&b, e->msg[0] ? e->msg : xpv_err_text(r->status));
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

void resp_errorf(xpv_response *r, int status, const char *fmt, ...) {
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
        xpv_err_set(err, XPV_E_NOT_FOUND, "%s", msg);
        return NULL;
    }
    /* The logdir is rescanned on a thread of its own: requests read the
     * last run list and never walk the tree (a 30k-folder logdir once cost
     * every request seconds). */
    if (!cfg->session && interval > 0) xpv_logdir_start_background(ld);
    xpv_app *a = xpv_xcalloc(1, sizeof *a);
    a->ld = ld;
    uint64_t budget = cfg->cache_bytes ? cfg->cache_bytes : default_cache_bytes();
    a->cache = xpv_cache_new(budget);
    a->keep_max = budget / 8 < (64ULL << 20) ? budget / 8 : (64ULL << 20);
    a->limits.max_file = cfg->max_file_size ? cfg->max_file_size : XPV_DEFAULT_MAX_FILE;
    a->limits.max_inflated = a->limits.max_file;
    /* One decode never holds more than the whole budget (file, inflated
     * bytes and model together): past it, the file is refused with a 413
     * naming it, before the memory is allocated. */
    a->limits.max_mem = budget;
    /* decoded HLO protos are measured against the same budget */
    xpv_hlo_set_decode_budget((size_t)budget);
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
    if (!dc) return xpv_err_set(err, XPV_E_BAD_REQUEST, "%s", msg);
    xpv_diskcache_free(a->dc);
    a->dc = dc;
    return 0;
}

xpv_cache *xpv_app_cache(xpv_app *a) { return a->cache; }
const char *xpv_app_logdir(const xpv_app *a) { return xpv_logdir_root(a->ld); }

/* Tool by name or alias among the app's tools; a trailing '^' (old UIs) and
 * a trailing '@' (streaming trace viewer name) are accepted. */
const xpv_tool *find_tool(const xpv_app *a, const char *name) {
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

int is_trace_tool(const xpv_tool *t) {
    return !strncmp(t->name, "trace_viewer", 12);
}

/* ==== Static files and dispatch ======================================== */

static void route_static(const char *path, const char *inm, xpv_response *r) {
    if (!*path) path = "index.html";
    int immutable = 0;
    const xpv_asset *as = xpv_asset_find_versioned(path, &immutable);
    if (!as) {
        resp_errorf(r, XPV_E_NOT_FOUND, "not found: /%s", path);
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
        resp_errorf(r, XPV_E_METHOD, "method not allowed: only GET and HEAD");
        r->allow = "GET, HEAD";
        return;
    }
    const char *qm = strchr(uri, '?');
    size_t plen = qm ? (size_t)(qm - uri) : strlen(uri);
    if (plen >= sizeof path) {
        resp_errorf(r, XPV_E_URI_TOO_LONG, "request path too long (max %zu bytes)", sizeof path - 1);
        return;
    }
    if (qm && strlen(qm + 1) > XPV_QUERY_MAX_LEN) {
        resp_errorf(r, XPV_E_URI_TOO_LONG, "query string too long (max %d bytes)", XPV_QUERY_MAX_LEN);
        return;
    }
    if (xpv_url_decode(uri, plen, path, sizeof path, 0) < 0) {
        resp_errorf(r, XPV_E_BAD_REQUEST, "malformed request path");
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
            resp_errorf(r, XPV_E_NOT_FOUND, "not found (this server lives under %s/)", a->prefix);
            return;
        }
        rest = path + pl;
    }
    if (rest[0] != '/') {
        resp_errorf(r, XPV_E_NOT_FOUND, "not found");
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
