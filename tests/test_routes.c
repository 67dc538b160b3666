/*
 * test_routes.c - the HTTP API without a socket (server/routes/routes.c): every
 * route, ALL_HOSTS rules, 400/404/405/422 answers, path traversal attempts,
 * response and derived-data caching, CSV export, path prefixes.
 *
 * The tools are small test tools injected with xpv_app_set_tools(), so
 * these tests do not depend on which converters are linked.
 */
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app_fixture.h"
#include "cache.h"
#include "enrich.h"
#include "loader.h"
#include "assets.h"
#include "routes.h"
#include "srv_fixture.h"
#include "synth.h"
#include "testutil.h"
#include "version.h"

/* ==== Test tools ======================================================== */

static int nrender, nderived;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void count(int *c) {
    pthread_mutex_lock(&mu);
    (*c)++;
    pthread_mutex_unlock(&mu);
}

static int has_gpu(const xpv_profile *p) {
    return xpv_find_plane(p, "/device:GPU:0") != NULL;
}

/* Two DataTables: events per host, then the value of param x. */
static int tables_table(const xpv_hostset *hs, const void *d, const xpv_params *q,
                        xpv_dt_doc *doc, xpv_err *err) {
    (void)d;
    (void)err;
    count(&nrender);
    xpv_dt *t = xpv_dt_doc_table(doc, XPV_DT_PROPS_LAST);
    xpv_dt_add_col(t, "host", "Host", "string", NULL);
    xpv_dt_add_col(t, "n", "Events, total", "number", NULL);
    for (size_t i = 0; i < hs->n; i++) {
        xpv_dt_row(t);
        xpv_dt_str(t, hs->hostnames[i]);
        xpv_dt_int(t, (int64_t)hs->profiles[i]->nevents);
    }
    const char *x = xpv_param(q, "x");
    t = xpv_dt_doc_table(doc, 0);
    xpv_dt_add_col(t, "x", "X", "string", NULL);
    xpv_dt_row(t);
    xpv_dt_str(t, x ? x : "");
    xpv_dt_row(t);
    xpv_dt_null(t);
    return 0;
}

static int render_names(const xpv_hostset *hs, const void *d, const xpv_params *q,
                        xpv_buf *out, xpv_err *err) {
    (void)d;
    (void)q;
    (void)err;
    count(&nrender);
    xpv_buf_puts(out, "{\"hosts\":[");
    for (size_t i = 0; i < hs->n; i++) {
        if (i) xpv_buf_putc(out, ',');
        xpv_buf_json_cstr(out, hs->hostnames[i]);
    }
    xpv_buf_puts(out, "]}");
    return 0;
}

static int render_fail(const xpv_hostset *hs, const void *d, const xpv_params *q,
                       xpv_buf *out, xpv_err *err) {
    (void)hs;
    (void)d;
    (void)q;
    (void)out;
    err->status = 404;
    snprintf(err->msg, sizeof err->msg, "No step marker observed");
    return -1;
}

static void *derived_build(const xpv_hostset *hs, xpv_err *err) {
    (void)err;
    count(&nderived);
    uint64_t *v = malloc(sizeof *v);
    *v = 0;
    for (size_t i = 0; i < hs->n; i++) *v += hs->profiles[i]->nevents;
    return v;
}

static size_t derived_size(const void *d) {
    (void)d;
    return sizeof(uint64_t);
}

static const xpv_derived_kind kind_sum = {
    .name = "sum", .build = derived_build, .free = free, .size = derived_size};

static int render_derived(const xpv_hostset *hs, const void *d, const xpv_params *q,
                          xpv_buf *out, xpv_err *err) {
    (void)hs;
    (void)q;
    (void)err;
    count(&nrender);
    xpv_buf_printf(out, "{\"sum\":%llu}", (unsigned long long)*(const uint64_t *)d);
    return 0;
}

static const xpv_tool t_all = {"t_all", NULL, "All", XPV_TOOL_ALL_HOSTS_OK,
                               NULL, NULL, NULL, tables_table, NULL, NULL};
static const xpv_tool t_only = {"t_only", NULL, "Only", XPV_TOOL_ALL_HOSTS_ONLY, NULL, NULL,
                                render_names, NULL, NULL, NULL};
static const xpv_tool t_single = {"t_single", "t_old", "Single", 0, has_gpu, NULL,
                                  render_names, NULL, NULL, NULL};
static const xpv_tool t_trace = {"trace_viewer", NULL, "Trace", 0, NULL, NULL, render_names,
                                 NULL, NULL, NULL};
static const xpv_tool t_derived = {"t_derived", NULL, "Derived", XPV_TOOL_ALL_HOSTS_OK, NULL,
                                   &kind_sum, render_derived, NULL, NULL, NULL};
static const xpv_tool t_fail = {"t_fail", NULL, "Fail", 0, NULL, NULL, render_fail, NULL, NULL,
                                NULL};
static const xpv_tool *const test_tools[] = {&t_all, &t_trace, &t_only, &t_single,
                                            &t_derived, &t_fail, NULL};

/* ==== Fixture =========================================================== */

static char *root;
static xpv_app *app;
static const char *const cpu_gpu[] = {"/host:CPU", "/device:GPU:0", NULL};
static const char *const cpu[] = {"/host:CPU", NULL};

static void mkrun(const char *run, const char *host, const char *const *planes, int n) {
    char d[4096], f[512];
    snprintf(d, sizeof d, "%s/%s", root, run);
    snprintf(f, sizeof f, "%s.xplane.pb", host);
    fx_host_file(d, f, planes, n);
}

static xpv_app *new_app(const char *prefix) {
    xpv_app_config cfg = {root, 0, prefix, 0, 64 << 20, 0};
    xpv_err err;
    xpv_app *a = xpv_app_new(&cfg, &err);
    assert_non_null(a);
    xpv_app_set_tools(a, test_tools);
    return a;
}

static int setup(void **state) {
    xpv_param_register("x"); /* t_all reads it */
    (void)state;
    root = tu_mkdtemp();
    mkrun("plugins/profile/single", "h1", cpu_gpu, 3);
    mkrun("plugins/profile/multi", "b", cpu, 5);
    mkrun("plugins/profile/multi", "a", cpu, 4);
    mkrun("sub/plugins/profile/r", "x", cpu, 1);
    char d[4096];
    snprintf(d, sizeof d, "%s/plugins/profile/bad", root);
    fx_mkdirs(d);
    snprintf(d, sizeof d, "%s/plugins/profile/bad/z.xplane.pb", root);
    fx_write(d, "\x0a\xff\xff\xff\x0f garbage", 13);
    app = new_app("");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    xpv_app_free(app);
    tu_rmrf(root);
    free(root);
    return 0;
}

/* GET `uri`; returns the status; body copied into a static buffer. */
static const char *body;
static xpv_response last;

static int get(xpv_app *a, const char *uri) {
    static char *copy;
    xpv_app_route(a, "GET", uri, NULL, &last);
    free(copy);
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_buf_add(&b, last.body, last.len);
    while (last.produce && last.produce(last.state, &b)) {
    }
    xpv_buf_putc(&b, '\0');
    copy = xpv_buf_steal(&b, NULL);
    body = copy;
    int st = last.status;
    /* Keep headers of `last` readable: release only the body ownership. */
    xpv_response_release(&last);
    return st;
}

static void expect(const char *uri, int status, const char *want_body) {
    int st = get(app, uri);
    if (st != status) fail_msg("%s: status %d, want %d (body %s)", uri, st, status, body);
    if (want_body && strcmp(body, want_body) != 0)
        fail_msg("%s: body %s, want %s", uri, body, want_body);
}

static json_t *get_json(const char *uri, int status) {
    expect(uri, status, NULL);
    json_error_t je;
    json_t *j = json_loads(body, 0, &je);
    if (!j) fail_msg("%s: not JSON: %s", uri, body);
    return j;
}

#define P "/data/plugin/profile/"

/* ==== Tests ============================================================= */

static void test_routes__runs_and_tools(void **state) {
    (void)state;
    expect(P "runs", 200, "[\"sub/r\",\"single\",\"multi\",\"bad\"]");
    expect(P "run_tools?run=single", 200,
           "[\"t_all\",\"trace_viewer\",\"t_only\",\"t_single\",\"t_derived\",\"t_fail\"]");
    /* t_single needs a GPU plane: not offered for a CPU-only run. */
    expect(P "run_tools?run=multi", 200,
           "[\"t_all\",\"trace_viewer\",\"t_only\",\"t_derived\",\"t_fail\"]");
    expect(P "run_tools?run=sub%2Fr", 200, NULL);
    expect(P "run_tools?run=nope", 404, NULL);
    assert_non_null(strstr(body, "unknown run"));
    expect(P "run_tools", 400, NULL);
    expect(P "version", 200, XPV_VERSION);
    expect("/healthz", 200, "{\"status\":\"ok\"}");
    expect(P "nope", 404, NULL);
}

static void test_routes__hosts(void **state) {
    (void)state;
    expect(P "hosts?run=multi", 200, "[{\"hostname\":\"a\"},{\"hostname\":\"b\"}]");
    expect(P "hosts?run=multi&tag=t_all", 200,
           "[{\"hostname\":\"ALL_HOSTS\"},{\"hostname\":\"a\"},{\"hostname\":\"b\"}]");
    expect(P "hosts?run=multi&tag=t_only", 200, "[{\"hostname\":\"ALL_HOSTS\"}]");
    expect(P "hosts?run=multi&tag=t_single", 200,
           "[{\"hostname\":\"a\"},{\"hostname\":\"b\"}]");
    expect(P "hosts?run=multi&tag=trace_viewer", 200,
           "[{\"hostname\":\"a\"},{\"hostname\":\"b\"}]");
    /* One host: no ALL_HOSTS. */
    expect(P "hosts?run=single&tag=t_only", 200, "[{\"hostname\":\"h1\"}]");
    expect(P "hosts?run=single&tag=t_all", 200, "[{\"hostname\":\"h1\"}]");
    expect(P "hosts?run=multi&tag=bogus", 404, NULL);
    expect(P "hosts?run=gone&tag=t_all", 404, NULL);
}

static void test_routes__data(void **state) {
    (void)state;
    json_t *j = get_json(P "data?run=multi&tag=t_all", 200);
    json_t *rows = json_object_get(json_array_get(j, 0), "rows");
    assert_int_equal(json_array_size(rows), 2);
    json_decref(j);
    j = get_json(P "data?run=multi&tag=t_all&host=ALL_HOSTS", 200);
    assert_int_equal(json_array_size(json_object_get(json_array_get(j, 0), "rows")), 2);
    json_decref(j);
    j = get_json(P "data?run=multi&tag=t_all&host=b", 200);
    rows = json_object_get(json_array_get(j, 0), "rows");
    assert_int_equal(json_array_size(rows), 1);
    json_t *cells = json_object_get(json_array_get(rows, 0), "c");
    assert_string_equal(json_string_value(json_object_get(json_array_get(cells, 0), "v")), "b");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(cells, 1), "v")), 5);
    json_decref(j);

    /* Aliases and XProf's suffixes. */
    expect(P "data?run=single&tag=t_old", 200, "{\"hosts\":[\"h1\"]}");
    expect(P "data?run=single&tag=t_single%5E", 200, "{\"hosts\":[\"h1\"]}");
    expect(P "data?run=single&tag=trace_viewer%40", 200, "{\"hosts\":[\"h1\"]}");

    /* Single-host tools in a multi-host run need a host. */
    expect(P "data?run=multi&tag=t_single", 400, NULL);
    assert_non_null(strstr(body, "one host"));
    expect(P "data?run=multi&tag=t_single&host=a", 200, "{\"hosts\":[\"a\"]}");
    /* hosts=a,b is honoured by the trace viewer only. */
    expect(P "data?run=multi&tag=trace_viewer&hosts=b,a", 200, "{\"hosts\":[\"a\",\"b\"]}");
    expect(P "data?run=multi&tag=trace_viewer&hosts=a", 200, "{\"hosts\":[\"a\"]}");
    expect(P "data?run=multi&tag=trace_viewer&hosts=a,zz", 404, NULL);
    expect(P "data?run=multi&tag=t_only&host=a&hosts=a,b", 200, "{\"hosts\":[\"a\"]}");

    expect(P "data?run=multi&tag=t_all&host=zz", 404, NULL);
    expect(P "data?run=multi&tag=nope", 404, NULL);
    assert_non_null(strstr(body, "unknown tool"));
    expect(P "data?run=multi", 400, NULL);
    expect(P "data?tag=t_all", 400, NULL);
    expect(P "data?run=single&tag=t_fail", 404, "{\"error\":\"No step marker observed\"}");
}

static void test_routes__decode_error(void **state) {
    (void)state;
    for (int i = 0; i < 2; i++) {  /* the second answer comes from the cache */
        json_t *j = get_json(P "data?run=bad&tag=t_all", 422);
        assert_string_equal(json_string_value(json_object_get(j, "file")),
                            "plugins/profile/bad/z.xplane.pb");
        assert_true(json_is_integer(json_object_get(j, "offset")));
        assert_non_null(strstr(json_string_value(json_object_get(j, "error")),
                               "z.xplane.pb"));
        json_decref(j);
    }
    expect(P "run_tools?run=bad", 422, NULL);
    expect(P "profile_info?run=bad", 422, NULL);
    /* A readable host after the corrupt one: run_tools lists its tools
     * instead of failing the whole run (rescanned on every request here). */
    mkrun("plugins/profile/bad", "zz", cpu, 2);
    expect(P "run_tools?run=bad", 200, NULL);
    assert_non_null(strstr(body, "t_all"));
    char d[4096];
    snprintf(d, sizeof d, "%s/plugins/profile/bad/zz.xplane.pb", root);
    assert_int_equal(unlink(d), 0);
    expect(P "run_tools?run=bad", 422, NULL);
    /* Everything else keeps working. */
    expect(P "data?run=single&tag=t_single", 200, NULL);
}

static void test_routes__caching(void **state) {
    (void)state;
    nrender = nderived = 0;
    expect(P "data?run=single&tag=t_all&x=1", 200, NULL);
    expect(P "data?run=single&tag=t_all&x=1", 200, NULL);
    expect(P "data?tag=t_all&x=1&run=single", 200, NULL);  /* same set of params */
    assert_int_equal(nrender, 1);
    expect(P "data?run=single&tag=t_all&x=2", 200, NULL);
    assert_int_equal(nrender, 2);
    /* Parameters no tool reads do not key a new answer (issue 26, item
     * 13: each made-up one cost a render and a cache entry). */
    expect(P "data?run=single&tag=t_all&x=2&junk=1", 200, NULL);
    expect(P "data?run=single&tag=t_all&zz=9&x=2&junk=2", 200, NULL);
    assert_int_equal(nrender, 2);

    /* Derived data is built once per host set, shared across params. */
    expect(P "data?run=multi&tag=t_derived", 200, "{\"sum\":9}");
    expect(P "data?run=multi&tag=t_derived&y=1", 200, "{\"sum\":9}");
    assert_int_equal(nderived, 1);
    expect(P "data?run=multi&tag=t_derived&host=a", 200, "{\"sum\":4}");
    assert_int_equal(nderived, 2);

    /* A rewritten file is a new identity: the answer follows the file. */
    mkrun("plugins/profile/multi", "a", cpu, 7);
    expect(P "data?run=multi&tag=t_derived&host=a", 200, "{\"sum\":7}");
}

struct thr {
    xpv_app *a;
    int status;
};

static void *racer(void *p) {
    struct thr *t = p;
    xpv_response r;
    xpv_app_route(t->a, "GET", P "data?run=sub%2Fr&tag=t_derived&z=1", NULL, &r);
    t->status = r.status;
    xpv_response_release(&r);
    return NULL;
}

static void test_routes__concurrent(void **state) {
    (void)state;
    nrender = nderived = 0;
    enum { N = 8 };
    pthread_t th[N];
    struct thr t[N];
    for (int i = 0; i < N; i++) {
        t[i].a = app;
        pthread_create(&th[i], NULL, racer, &t[i]);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(t[i].status, 200);
    }
    assert_int_equal(nderived, 1);
    assert_int_equal(nrender, 1);
}

static void test_routes__csv(void **state) {
    (void)state;
    xpv_response r;
    xpv_app_route(app, "GET", P "data_csv?run=multi&tag=t_all", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.content_type, "text/csv; charset=utf-8");
    assert_string_equal(r.disposition, "attachment; filename=\"t_all_multi_ALL_HOSTS.csv\"");
    /* Stale row counts after the rewrite in test_routes__caching: a has 7. */
    assert_int_equal(r.len, strlen("Host,\"Events, total\"\r\na,7\r\nb,5\r\n"));
    assert_memory_equal(r.body, "Host,\"Events, total\"\r\na,7\r\nb,5\r\n", r.len);
    xpv_response_release(&r);

    expect(P "data_csv?run=multi&tag=t_all&table=1&x=say+%22hi%22,+ok", 200,
           "X\r\n\"say \"\"hi\"\", ok\"\r\n\r\n");
    expect(P "data_csv?run=multi&tag=t_all&table=2", 400, NULL);
    expect(P "data_csv?run=multi&tag=t_all&table=-1", 400, NULL);
    expect(P "data_csv?run=multi&tag=t_only", 400, NULL);
    assert_non_null(strstr(body, "no tables"));   /* refused before building */
    expect(P "data_csv?run=multi&tag=t_all&host=a", 200, NULL);
    xpv_app_route(app, "GET", P "data_csv?run=sub%2Fr&tag=t_all", NULL, &r);
    assert_string_equal(r.disposition, "attachment; filename=\"t_all_sub_r_x.csv\"");
    xpv_response_release(&r);
}

static void test_routes__profile_info(void **state) {
    (void)state;
    json_t *j = get_json(P "profile_info?run=single&host=h1", 200);
    assert_string_equal(json_string_value(json_object_get(j, "host")), "h1");
    assert_string_equal(json_string_value(json_object_get(j, "file")),
                        "plugins/profile/single/h1.xplane.pb");
    json_t *planes = json_object_get(j, "planes");
    assert_int_equal(json_array_size(planes), 2);
    json_t *p1 = json_array_get(planes, 1);
    assert_string_equal(json_string_value(json_object_get(p1, "name")), "/device:GPU:0");
    assert_int_equal(json_integer_value(json_object_get(p1, "lines")), 1);
    assert_int_equal(json_integer_value(json_object_get(p1, "events")), 3);
    assert_int_equal(json_integer_value(json_object_get(j, "events")), 6);
    assert_string_equal(json_string_value(json_array_get(json_object_get(j, "hostnames"), 0)),
                        "h1.xplane.pb");
    assert_int_equal(json_array_size(json_object_get(j, "errors")), 0);
    assert_true(json_integer_value(json_object_get(j, "size")) > 0);
    json_decref(j);
    expect(P "profile_info?run=multi", 200, NULL);  /* first host */
    expect(P "profile_info?run=multi&host=q", 404, NULL);
}

static void test_routes__traversal(void **state) {
    (void)state;
    static const char *const uris[] = {
        P "data?run=../../etc&tag=t_all",
        P "data?run=%2e%2e%2f%2e%2e%2fetc&tag=t_all",
        P "data?run=/etc/passwd&tag=t_all",
        P "data?run=single/../multi&tag=t_all",
        P "data?run=single&tag=t_all&host=../multi/a",
        P "data?run=single&tag=t_all&host=%2e%2e%2fmulti%2fa",
        P "data?run=single&tag=../../t_all",
        P "hosts?run=..",
        P "run_tools?run=.",
        P "profile_info?run=single&host=/etc/passwd",
        P "data?run=multi&tag=trace_viewer&hosts=../single/h1",
        P "../../../etc/passwd",
        "/../../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
        "//etc/passwd",
        "/web/../../etc/passwd",
        "/tools/../index.html/..",
        "",
        "*",
        "http://example.com/etc/passwd",
    };
    for (size_t i = 0; i < sizeof uris / sizeof uris[0]; i++) {
        int st = get(app, uris[i]);
        if (st != 404) fail_msg("%s: status %d (%s)", uris[i], st, body);
        assert_null(strstr(body, "root:"));
    }
    expect(P "data?run=%00&tag=t_all", 400, NULL);
    expect("/a%00b", 400, NULL);
    expect(P "data?run=single&tag=t_all&x=%zz", 400, NULL);
}

static void test_routes__methods_and_static(void **state) {
    (void)state;
    xpv_response r;
    xpv_app_route(app, "POST", P "runs", NULL, &r);
    assert_int_equal(r.status, 405);
    assert_string_equal(r.allow, "GET, HEAD");
    xpv_response_release(&r);
    xpv_app_route(app, "HEAD", P "runs", NULL, &r);
    assert_int_equal(r.status, 200);
    xpv_response_release(&r);

    expect("/no/such/file.js", 404, NULL);
    const xpv_asset *idx = xpv_asset_find("index.html");
    if (!idx) {
        print_message("SKIP static checks: web/index.html is not embedded yet\n");
        return;
    }
    xpv_app_route(app, "GET", "/", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.len, idx->len);
    assert_string_equal(r.content_type, "text/html; charset=utf-8");
    assert_non_null(r.etag);
    char etag[64];
    snprintf(etag, sizeof etag, "%s", r.etag);
    xpv_response_release(&r);
    xpv_app_route(app, "GET", "/index.html", etag, &r);
    assert_int_equal(r.status, 304);
    xpv_response_release(&r);
    /* Every embedded file is served at its path. */
    for (size_t i = 0; i < xpv_nassets; i++) {
        char uri[1024];
        snprintf(uri, sizeof uri, "/%s", xpv_assets[i].path);
        xpv_app_route(app, "GET", uri, NULL, &r);
        assert_int_equal(r.status, 200);
        assert_int_equal(r.len, xpv_assets[i].len);
        xpv_response_release(&r);
    }
}

static void test_routes__prefix(void **state) {
    (void)state;
    xpv_app *a = new_app("/sub/path/");
    xpv_response r;
    xpv_app_route(a, "GET", "/sub/path", NULL, &r);
    assert_int_equal(r.status, 301);
    assert_string_equal(r.location, "path/");
    xpv_response_release(&r);
    assert_int_equal(get(a, "/sub/path/data/plugin/profile/runs"), 200);
    assert_int_equal(get(a, "/sub/path/healthz"), 200);
    assert_int_equal(get(a, "/data/plugin/profile/runs"), 404);
    assert_int_equal(get(a, "/sub/pathX/healthz"), 404);
    assert_int_equal(get(a, "/healthz"), 404);
    if (xpv_asset_find("index.html")) assert_int_equal(get(a, "/sub/path/"), 200);
    xpv_app_free(a);
}

static void test_routes__new_run_appears(void **state) {
    (void)state;
    mkrun("later/plugins/profile/zz", "n", cpu, 1);
    expect(P "runs", 200, "[\"sub/r\",\"single\",\"multi\",\"later/zz\",\"bad\"]");
    expect(P "data?run=later%2Fzz&tag=t_only", 200, "{\"hosts\":[\"n\"]}");
}

/* The charge of the cached profile of `path` (0: not cached); its key as
 * the pipeline makes it ("P", then the file's identity). */
static size_t profile_charge(xpv_app *a, const char *path) {
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    char key[8192];
    snprintf(key, sizeof key, "P\x1f%s\x1f%llu\x1f%lld\x1f%lld\x1f%llu\x1e", path,
             (unsigned long long)st.st_size,
             (long long)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
             (long long)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec,
             (unsigned long long)st.st_ino);
    xpv_centry *e = xpv_cache_peek(xpv_app_cache(a), key);
    if (!e) return 0;
    size_t n = xpv_centry_size(e);
    xpv_cache_release(xpv_app_cache(a), e);
    return n;
}

/* Derived lines are built when the trace index first asks (only it reads
 * them), after the profile was decoded and charged: its cache charge then
 * grows by what they hold, counted here on an independent load. */
static void test_routes__derived_lines_charged(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    char rel[4096], path[PATH_MAX];
    snprintf(rel, sizeof rel, "%s/testdata/real/openxla-xprof/plugins/profile/tpu_inference_2/"
             "tpu_inference_2.xplane.pb", tu_shared_dir());
    assert_non_null(realpath(rel, path));
    xpv_err err;
    xpv_profile *p = xpv_load_profile(path, NULL, NULL, &err);
    assert_non_null(p);
    size_t grouped = xpv_enrichment_bytes(p);
    xpv_profile_derived_lines(p);
    size_t derived = xpv_enrichment_bytes(p) - grouped;
    assert_true(derived > 0);
    xpv_profile_free(p);

    xpv_app *a = fx_app_real("openxla-xprof");
    assert_non_null(a);
    assert_int_equal(get(a, P "data?run=tpu_inference_2&tag=overview_page"), 200);
    size_t before = profile_charge(a, path);
    assert_true(before > 0);
    assert_int_equal(get(a, P "data?run=tpu_inference_2&tag=trace_viewer@&resolution=100"), 200);
    assert_int_equal(profile_charge(a, path) - before, derived);
    xpv_app_free(a);
}

/* The real profiles under ../shared as a logdir, with the converters that
 * are linked: every route answers JSON, no 500, the corrupt file is a 422
 * naming the file. */
static void test_routes__real_logdir(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    xpv_app *a = fx_app_real(NULL);
    assert_non_null(a);
    assert_int_equal(get(a, P "runs"), 200);
    json_error_t je;
    json_t *runs = json_loads(body, 0, &je);
    assert_true(json_array_size(runs) >= 5);
    size_t i;
    json_t *run;
    int corrupt_seen = 0;
    json_array_foreach(runs, i, run) {
        const char *rn = json_string_value(run);
        char uri[2048], enc[1024];
        size_t o = 0;
        for (const char *p = rn; *p && o + 4 < sizeof enc; p++) {
            if (*p == '/') o += (size_t)snprintf(enc + o, sizeof enc - o, "%%2F");
            else enc[o++] = *p;
        }
        enc[o] = '\0';
        snprintf(uri, sizeof uri, P "run_tools?run=%s", enc);
        int st = get(a, uri);
        if (strstr(rn, "mangled")) {
            assert_int_equal(st, 422);
            assert_non_null(strstr(body, "tpu_inference_2.xplane.pb"));
            assert_non_null(strstr(body, "\"offset\""));
            corrupt_seen = 1;
            continue;
        }
        if (st != 200) fail_msg("%s: %d %s", uri, st, body);
        json_t *tools = json_loads(body, 0, &je);
        size_t k;
        json_t *t;
        json_array_foreach(tools, k, t) {
            snprintf(uri, sizeof uri, P "data?run=%s&tag=%s", enc, json_string_value(t));
            st = get(a, uri);
            print_message("%s -> %d (%zu bytes)\n", uri, st, strlen(body));
            if (st != 200 && st != 400 && st != 404 && st != 422)
                fail_msg("%s: status %d: %.300s", uri, st, body);
            json_t *j = json_loads(body, 0, &je);
            if (!j) fail_msg("%s: not JSON", uri);
            json_decref(j);
            snprintf(uri, sizeof uri, P "hosts?run=%s&tag=%s", enc, json_string_value(t));
            assert_int_equal(get(a, uri), 200);
        }
        json_decref(tools);
        snprintf(uri, sizeof uri, P "profile_info?run=%s", enc);
        assert_int_equal(get(a, uri), 200);
    }
    assert_true(corrupt_seen);
    json_decref(runs);
    xpv_app_free(a);
}

/* CSV records of `csv` (RFC 4180: quoted fields may hold newlines) and the
 * fields of its first record. */
static size_t csv_records(const char *csv, size_t *header_fields) {
    size_t recs = 0, fields = 1;
    int inq = 0;
    for (const char *p = csv; *p; p++) {
        if (*p == '"') inq = !inq;
        else if (!inq && *p == ',' && recs == 0) fields++;
        else if (!inq && *p == '\n') recs++;
    }
    *header_fields = fields;
    return recs;
}

/* data_csv through the routes for every table of the four op_stats tools on
 * the real GPU profile (one host and ALL_HOSTS): one CSV record per row plus
 * the header, one header field per column, and 400 past the last table. */
static void test_routes__csv_op_stats_tools(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    xpv_app *a = fx_app_real(NULL);
    assert_non_null(a);
    static const struct {
        const char *tool;
        size_t tables;
    } tools[] = {{"overview_page", 6}, {"input_pipeline_analyzer", 5},
                 {"framework_op_stats", 2}, {"kernel_stats", 1}};
    static const char *const hosts[] = {"34.83.195.179_6003", "ALL_HOSTS"};
    const char *run = "tensorflow-profiler%2FGPU-multi-worker";
    for (size_t h = 0; h < 2; h++) {
        for (size_t k = 0; k < sizeof tools / sizeof tools[0]; k++) {
            char uri[1024];
            snprintf(uri, sizeof uri, P "data?run=%s&tag=%s&host=%s", run, tools[k].tool,
                     hosts[h]);
            if (get(a, uri) != 200) fail_msg("%s: %d %.300s", uri, last.status, body);
            json_error_t je;
            json_t *j = json_loads(body, 0, &je);
            assert_non_null(j);
            /* The DataTables of the answer, in order (overview's {} skipped). */
            json_t *tabs = json_array();
            if (json_is_array(j)) {
                size_t i;
                json_t *el;
                json_array_foreach(j, i, el) if (json_object_get(el, "cols"))
                    json_array_append(tabs, el);
            } else {
                json_array_append(tabs, j);
            }
            assert_int_equal(json_array_size(tabs), tools[k].tables);
            for (size_t t = 0; t < tools[k].tables; t++) {
                json_t *tab = json_array_get(tabs, t);
                snprintf(uri, sizeof uri, P "data_csv?run=%s&tag=%s&host=%s&table=%zu", run,
                         tools[k].tool, hosts[h], t);
                if (get(a, uri) != 200) fail_msg("%s: %d %.300s", uri, last.status, body);
                assert_string_equal(last.content_type, "text/csv; charset=utf-8");
                size_t nfields;
                size_t nrec = csv_records(body, &nfields);
                size_t nrows = json_array_size(json_object_get(tab, "rows"));
                size_t ncols = json_array_size(json_object_get(tab, "cols"));
                print_message("%s table %zu: %zu rows, %zu cols\n", tools[k].tool, t, nrows,
                              ncols);
                if (nrec != nrows + 1 || nfields != ncols)
                    fail_msg("%s: %zu records / %zu fields, want %zu / %zu", uri, nrec, nfields,
                             nrows + 1, ncols);
            }
            snprintf(uri, sizeof uri, P "data_csv?run=%s&tag=%s&host=%s&table=%zu", run,
                     tools[k].tool, hosts[h], tools[k].tables);
            assert_int_equal(get(a, uri), 400);
            json_decref(tabs);
            json_decref(j);
        }
    }
    /* `input_pipeline` (the old name) answers as input_pipeline_analyzer. */
    assert_int_equal(get(a, P "data?run=tensorflow-profiler%2FGPU-multi-worker"
                             "&tag=input_pipeline_analyzer&host=34.83.195.179_6003"),
                     200);
    char *want = strdup(body);
    assert_int_equal(get(a, P "data?run=tensorflow-profiler%2FGPU-multi-worker"
                             "&tag=input_pipeline&host=34.83.195.179_6003"),
                     200);
    assert_string_equal(body, want);
    free(want);
    /* The kernel table's header carries the column labels. */
    assert_int_equal(get(a, P "data_csv?run=tensorflow-profiler%2FGPU-multi-worker"
                             "&tag=kernel_stats&host=34.83.195.179_6003"),
                     200);
    assert_true(strncmp(body, "Rank,Kernel Name,", 17) == 0);
    xpv_app_free(a);
}

/* The full trace is a streamed body: while it is held, the profile and the
 * trace index it reads stay pinned (a cache clear, which drops whatever
 * nobody uses, keeps them); released, they are unpinned. */
static void test_routes__stream_pins_inputs(void **state) {
    (void)state;
    char *dir = tu_mkdtemp();
    xpv_synth_opts o;
    memset(&o, 0, sizeof o);
    o.size_bytes = 300000;
    o.steps = 3;
    xpv_synth_defaults(&o);
    char msg[256];
    assert_int_equal(xpv_synth_logdir(&o, dir, "run", msg, sizeof msg), 0);
    xpv_app *a = fx_app_open(dir, 64 << 20);
    assert_non_null(a);
    const char *uri = P "data?run=run&tag=trace_viewer";
    xpv_response r;
    xpv_app_route(a, "GET", uri, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(r.produce);
    assert_non_null(r.etag);
    xpv_cache_stats st;
    xpv_cache_clear(xpv_app_cache(a));
    xpv_cache_get_stats(xpv_app_cache(a), &st);
    assert_true(st.entries >= 2);        /* profile + trace index, pinned */
    xpv_buf b;
    xpv_buf_init(&b);
    size_t chunks = 0;
    while (r.produce(r.state, &b)) chunks++;
    xpv_response_release(&r);
    xpv_cache_clear(xpv_app_cache(a));
    xpv_cache_get_stats(xpv_app_cache(a), &st);
    assert_int_equal(st.entries, 0);     /* released: nothing pinned */
    json_error_t je;
    json_t *j = json_loadb(b.data, b.len, 0, &je);
    if (!j) fail_msg("streamed trace is not JSON: %s at %d", je.text, je.position);
    assert_true(json_array_size(json_object_get(j, "traceEvents")) > 100);
    json_decref(j);
    print_message("%zu bytes in %zu chunks\n", b.len, chunks + 1);
    /* HEAD answers the same way (http.c never runs the producer then);
     * streaming viewports are rendered whole as before. */
    xpv_app_route(a, "HEAD", uri, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(r.produce);
    xpv_response_release(&r);
    xpv_app_route(a, "GET", P "data?run=run&tag=trace_viewer@&resolution=100", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_null(r.produce);
    assert_true(r.len > 0);
    xpv_response_release(&r);
    xpv_buf_free(&b);
    xpv_app_free(a);
    tu_rmrf(dir);
    free(dir);
}

TU_MAIN_WITH(setup, teardown,
             cmocka_unit_test(test_routes__runs_and_tools),
             cmocka_unit_test(test_routes__hosts),
             cmocka_unit_test(test_routes__data),
             cmocka_unit_test(test_routes__decode_error),
             cmocka_unit_test(test_routes__caching),
             cmocka_unit_test(test_routes__concurrent),
             cmocka_unit_test(test_routes__csv),
             cmocka_unit_test(test_routes__profile_info),
             cmocka_unit_test(test_routes__traversal),
             cmocka_unit_test(test_routes__methods_and_static),
             cmocka_unit_test(test_routes__prefix),
             cmocka_unit_test(test_routes__new_run_appears),
             cmocka_unit_test(test_routes__real_logdir),
             cmocka_unit_test(test_routes__derived_lines_charged),
             cmocka_unit_test(test_routes__csv_op_stats_tools),
             cmocka_unit_test(test_routes__stream_pins_inputs))
