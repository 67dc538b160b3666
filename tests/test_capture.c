/*
 * test_capture.c - capture/ without a profiler server: address parsing and
 * file names, --capture_allow matching, run directory names, and the gRPC
 * client's failures against in-process sockets (closed port, an HTTP/1
 * answer, silence until the deadline), each naming the address and none
 * quoting the peer or telling them apart to network clients, canonical
 * target addresses (aliases of one address are one target), the deadline
 * cap, plus the route's refusals (off, off for network or proxied clients,
 * bad parameters and deadlines over the maximum, targets not allowed,
 * one address twice).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "capture_route.h"
#include "loader.h"
#include "testutil.h"
#include "util.h"

static void test_capture__targets(void **state) {
    (void)state;
    xpv_capture_target t[8];
    char err[512];
    int n = xpv_capture_parse_targets(" grpc://worker-0:9999, 10.0.0.2:8466 ,[::1]:7000/", t, 8,
                                      err, sizeof err);
    assert_int_equal(n, 3);
    assert_string_equal(t[0].host, "worker-0");
    assert_string_equal(t[0].port, "9999");
    assert_string_equal(t[0].stem, "worker-0");
    assert_string_equal(t[0].addr, "grpc://worker-0:9999");
    assert_string_equal(t[1].host, "10.0.0.2");
    assert_string_equal(t[2].host, "::1");
    assert_string_equal(t[2].port, "7000");
    assert_string_equal(t[2].stem, "__1");
    /* Several ports on one host: host_port file names. */
    n = xpv_capture_parse_targets("localhost:1,LOCALHOST:2", t, 8, err, sizeof err);
    assert_int_equal(n, 2);
    assert_string_equal(t[0].stem, "localhost_1");
    assert_string_equal(t[1].stem, "LOCALHOST_2");
    const char *bad[] = {"", " , ", "host", "host:", ":80", "host:0", "host:65536", "h:1x",
                         "::1:80", "a b:1", "h/x:1", "grpc://", NULL};
    for (int i = 0; bad[i]; i++) {
        err[0] = '\0';
        assert_int_equal(xpv_capture_parse_targets(bad[i], t, 8, err, sizeof err), -1);
        assert_true(err[0] != '\0');
    }
    assert_int_equal(xpv_capture_parse_targets("a:1,a:1", t, 8, err, sizeof err), -1);
    assert_non_null(strstr(err, "twice"));
    assert_int_equal(xpv_capture_parse_targets("a:1,b:1,c:1", t, 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "too many"));
}

static void test_capture__allow(void **state) {
    (void)state;
    xpv_capture_target t[2];
    char err[256];
    assert_int_equal(xpv_capture_parse_targets("Worker:9999,[::1]:80", t, 2, err, sizeof err), 2);
    assert_true(xpv_capture_allowed(NULL, &t[0]));
    assert_true(xpv_capture_allowed("", &t[0]));
    assert_true(xpv_capture_allowed("worker", &t[0]));
    assert_true(xpv_capture_allowed("x:1, worker:9999", &t[0]));
    assert_false(xpv_capture_allowed("worker:9998", &t[0]));
    assert_false(xpv_capture_allowed("work", &t[0]));
    assert_false(xpv_capture_allowed("worker2", &t[0]));
    assert_true(xpv_capture_allowed("[::1]:80", &t[1]));
    assert_true(xpv_capture_allowed("[::1]", &t[1]));
    assert_false(xpv_capture_allowed("[::1]:81", &t[1]));
    assert_true(xpv_capture_route_is_loopback("127.0.0.1"));
    assert_true(xpv_capture_route_is_loopback("127.1.2.3"));
    assert_true(xpv_capture_route_is_loopback("::1"));
    assert_true(xpv_capture_route_is_loopback("localhost"));
    assert_false(xpv_capture_route_is_loopback("0.0.0.0"));
    assert_false(xpv_capture_route_is_loopback("10.1.2.3"));
    assert_false(xpv_capture_route_is_loopback("::"));
}

/* Aliases of one address resolve to one canonical key; network clients'
 * numeric-only resolution never asks DNS. */
static void test_capture__resolve(void **state) {
    (void)state;
    xpv_capture_target t[10];
    char err[512];
    int n = xpv_capture_parse_targets("127.0.0.1:7000,127.1:7000,0x7f000001:7000,localhost:7000,"
                                      "LocalHost:7000,[::1]:7000,127.0.0.2:7000,0.0.0.0:7000,"
                                      "[::ffff:127.0.0.1]:7000,10.1.2.3:7000",
                                      t, 10, err, sizeof err);
    assert_int_equal(n, 10);
    for (int i = 0; i < n; i++) {
        assert_int_equal(xpv_capture_resolve(&t[i], 1, err, sizeof err), 0);
        assert_true(t[i].naddrs >= 1);
    }
    for (int i = 0; i < 9; i++) {
        assert_true(t[i].local);
        assert_true(xpv_capture_same_target(&t[0], &t[i]));
    }
    assert_string_equal(t[0].keys[0], "local:7000");
    assert_false(t[9].local);
    assert_string_equal(t[9].keys[0], "10.1.2.3:7000");
    assert_false(xpv_capture_same_target(&t[0], &t[9]));
    /* another port is another target */
    assert_int_equal(xpv_capture_parse_targets("127.0.0.1:7001", t, 1, err, sizeof err), 1);
    assert_int_equal(xpv_capture_resolve(&t[0], 1, err, sizeof err), 0);
    assert_int_equal(xpv_capture_parse_targets("127.1:7000", &t[1], 1, err, sizeof err), 1);
    assert_int_equal(xpv_capture_resolve(&t[1], 1, err, sizeof err), 0);
    assert_false(xpv_capture_same_target(&t[0], &t[1]));
    /* a name: refused without DNS when numeric_only */
    assert_int_equal(xpv_capture_parse_targets("profiler.invalid:7000", t, 1, err, sizeof err),
                     1);
    assert_int_equal(xpv_capture_resolve(&t[0], 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "not an IP address or localhost"));
    /* the local-address test itself */
    struct sockaddr_in s4;
    memset(&s4, 0, sizeof s4);
    s4.sin_family = AF_INET;
    s4.sin_addr.s_addr = htonl(0x7f7f0001);
    assert_true(xpv_capture_addr_is_local((struct sockaddr *)&s4));
    s4.sin_addr.s_addr = htonl(0x0a000001);
    assert_false(xpv_capture_addr_is_local((struct sockaddr *)&s4));
}

/* Deadlines: at most XPV_CAPTURE_MAX_MS whatever is asked. */
static void test_capture__timeout(void **state) {
    (void)state;
    xpv_capture_opts o;
    xpv_capture_defaults(&o);
    assert_int_equal(xpv_capture_timeout(&o), 31000);
    o.delay_ms = 500;
    o.timeout_ms = 2000;
    assert_int_equal(xpv_capture_timeout(&o), 2000);
    o.timeout_ms = 86400000;
    assert_int_equal(xpv_capture_timeout(&o), XPV_CAPTURE_MAX_MS);
    o.timeout_ms = 0;
    o.duration_ms = 590000;
    assert_int_equal(xpv_capture_timeout(&o), XPV_CAPTURE_MAX_MS);
    o.duration_ms = UINT64_MAX;
    assert_int_equal(xpv_capture_timeout(&o), XPV_CAPTURE_MAX_MS);
}

static void test_capture__run_dir(void **state) {
    (void)state;
    char *root = tu_mkdtemp();
    char run[128], run2[128], err[512], path[4096];
    assert_int_equal(xpv_capture_make_run(root, run, sizeof run, err, sizeof err), 0);
    assert_int_equal(strlen(run), 19);                       /* YYYY_MM_DD_HH_MM_SS */
    for (int i = 0; i < 19; i++)
        assert_true((i % 3 == 1 && i > 4) || i == 4 ? run[i] == '_' : (run[i] >= '0' && run[i] <= '9'));
    assert_int_equal(xpv_capture_make_run(root, run2, sizeof run2, err, sizeof err), 0);
    assert_string_not_equal(run, run2);                      /* same second: _2 */
    snprintf(path, sizeof path, "%s/plugins/profile/%s", root, run2);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    /* A logdir that cannot be written. */
    snprintf(path, sizeof path, "%s/file", root);
    FILE *f = fopen(path, "w");
    fclose(f);
    assert_int_equal(xpv_capture_make_run(path, run, sizeof run, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot create"));
    tu_rmrf(root);
    free(root);
}

/* ---- in-process peers ---------------------------------------------------- */

typedef struct peer {
    int lfd;
    int port;
    int mode;                   /* 0 silent, 1 HTTP/1 answer */
    pthread_t th;
} peer;

static void *peer_main(void *arg) {
    peer *p = arg;
    int c = accept(p->lfd, NULL, NULL);
    if (c < 0) return NULL;
    char buf[4096];
    if (p->mode == 1) {
        ssize_t r = read(c, buf, sizeof buf);
        (void)r;
        const char ans[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
        ssize_t w = write(c, ans, sizeof ans - 1);
        (void)w;
        close(c);
        return NULL;
    }
    while (read(c, buf, sizeof buf) > 0) {
    }                                                     /* until the client leaves */
    close(c);
    return NULL;
}

static void peer_start(peer *p, int mode) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    p->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(p->lfd >= 0);
    assert_int_equal(bind(p->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(p->lfd, 4), 0);
    socklen_t l = sizeof a;
    getsockname(p->lfd, (struct sockaddr *)&a, &l);
    p->port = ntohs(a.sin_port);
    p->mode = mode;
    assert_int_equal(pthread_create(&p->th, NULL, peer_main, p), 0);
}

static void peer_stop(peer *p) {
    pthread_join(p->th, NULL);
    close(p->lfd);
}

static int closed_port(void) {
    peer p;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    p.lfd = socket(AF_INET, SOCK_STREAM, 0);
    bind(p.lfd, (struct sockaddr *)&a, sizeof a);
    socklen_t l = sizeof a;
    getsockname(p.lfd, (struct sockaddr *)&a, &l);
    close(p.lfd);
    return ntohs(a.sin_port);
}

static void capture_one(const char *root, int port, uint64_t timeout_ms, xpv_capture_target *t,
                        int64_t *ms) {
    char list[64], err[256], run[128];
    snprintf(list, sizeof list, "127.0.0.1:%d", port);
    assert_int_equal(xpv_capture_parse_targets(list, t, 1, err, sizeof err), 1);
    assert_int_equal(xpv_capture_make_run(root, run, sizeof run, err, sizeof err), 0);
    xpv_capture_opts o;
    xpv_capture_defaults(&o);
    o.duration_ms = 10;
    o.num_retry = 0;
    o.timeout_ms = timeout_ms;
    int64_t t0 = xpv_now_ms();
    assert_int_equal(xpv_capture_run(root, run, t, 1, &o), 1);
    *ms = xpv_now_ms() - t0;
    assert_false(t->ok);
    assert_non_null(strstr(t->err, list));                  /* names the address */
    char dir[4096];
    struct stat st;
    snprintf(dir, sizeof dir, "%s/plugins/profile/%s", root, run);
    assert_int_not_equal(stat(dir, &st), 0);                /* the empty run is gone */
}

static void test_capture__failures(void **state) {
    (void)state;
    char *root = tu_mkdtemp();
    xpv_capture_target t;
    int64_t ms;

    /* The detail (err, the CLI and the server's log) tells them apart;
     * what network clients see (pub_err) does not, and neither quotes the
     * peer. */
    const char *generic = "could not reach a gRPC profiler server there";
    capture_one(root, closed_port(), 5000, &t, &ms);
    assert_non_null(strstr(t.err, "cannot connect"));
    assert_non_null(strstr(t.pub_err, generic));
    assert_null(strstr(t.pub_err, "refused"));
    assert_true(ms < 2000);

    peer p;
    peer_start(&p, 1);
    capture_one(root, p.port, 5000, &t, &ms);
    peer_stop(&p);
    assert_non_null(strstr(t.err, "not a gRPC server"));
    assert_null(strstr(t.err, "Bad Request"));
    assert_null(strstr(t.err, "400"));
    assert_non_null(strstr(t.pub_err, generic));
    assert_true(ms < 2000);

    peer_start(&p, 0);
    capture_one(root, p.port, 400, &t, &ms);
    peer_stop(&p);
    assert_non_null(strstr(t.err, "no answer within the deadline"));
    assert_non_null(strstr(t.pub_err, generic));
    assert_true(ms >= 390 && ms < 2000);
    tu_rmrf(root);
    free(root);
}

/* ---- the route's refusals (no job starts) ----------------------------------- */

/* GET `uri`; a capture_profile start carries the server's capture_token
 * (as the dashboard sends it) unless `raw`. */
static void route_tok(xpv_app *app, const char *uri, xpv_response *r, int raw) {
    const char *q = strstr(uri, "capture_profile?");
    if (raw || !q || strstr(uri, "capture_id=")) {
        xpv_app_route(app, "GET", uri, NULL, r);
        return;
    }
    xpv_response t;
    xpv_app_route(app, "GET", "/data/plugin/profile/capture_token", NULL, &t);
    assert_int_equal(t.status, 200);
    const char *v = strstr(t.body, "\"token\":\"");
    assert_non_null(v);
    char tok[64] = "";
    sscanf(v + 9, "%63[0-9a-f]", tok);
    xpv_response_release(&t);
    char full[1024];
    size_t at = (size_t)(q - uri) + strlen("capture_profile?");
    snprintf(full, sizeof full, "%.*stoken=%s&%s", (int)at, uri, tok, uri + at);
    xpv_app_route(app, "GET", full, NULL, r);
}

static void route(xpv_app *app, const char *uri, xpv_response *r) {
    route_tok(app, uri, r, 0);
}

static void test_capture__route_refusals(void **state) {
    (void)state;
    char *root = tu_mkdtemp();
    xpv_app_config cfg = {root, 0, "", 0, 0, -1};
    xpv_err e;
    xpv_app *app = xpv_app_new(&cfg, &e);
    assert_non_null(app);
    xpv_response r;
    const char *start = "/data/plugin/profile/capture_profile?service_addr=127.0.0.1:1&duration=10";

    route(app, start, &r);                   /* off until configured */
    assert_int_equal(r.status, 403);
    xpv_response_release(&r);
    xpv_capture_route_configure(0, "capture is off here: use --allow_capture", NULL);
    route(app, start, &r);
    assert_int_equal(r.status, 403);
    assert_non_null(strstr(r.body, "--allow_capture"));
    xpv_response_release(&r);

    /* On for local clients only: a request of unknown origin, one from
     * another machine and a proxied loopback one are network requests. */
    struct sockaddr_in lo, far;
    memset(&lo, 0, sizeof lo);
    lo.sin_family = AF_INET;
    lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    far = lo;
    far.sin_addr.s_addr = htonl(0xc0000207);                   /* 192.0.2.7 */
    xpv_capture_route_configure(XPV_CAPTURE_ON_LOCAL, NULL, NULL);
    for (int k = 0; k < 3; k++) {
        if (k == 0) xpv_capture_route_client(NULL, 0);
        else xpv_capture_route_client((struct sockaddr *)(k == 1 ? &far : &lo), k == 2);
        route(app, start, &r);
        assert_int_equal(r.status, 403);
        assert_non_null(strstr(r.body, "--allow_capture"));
        assert_non_null(strstr(r.body, "proxy"));
        xpv_response_release(&r);
    }
    /* --allow_capture: network clients may capture from this machine only
     * (no DNS lookup of names). */
    xpv_capture_route_configure(XPV_CAPTURE_ON_LOCAL | XPV_CAPTURE_ON_NETWORK, NULL, NULL);
    xpv_capture_route_client((struct sockaddr *)&far, 0);
    /* (none of them reachable even if the check were broken) */
    const char *far_targets[] = {"224.0.0.1:9999", "255.255.255.255:22", "[2001:db8::1]:80",
                                 "profiler.invalid:9999", "127.0.0.1:1,224.0.0.1:9999", NULL};
    for (int i = 0; far_targets[i]; i++) {
        char uri[256];
        snprintf(uri, sizeof uri, "/data/plugin/profile/capture_profile?service_addr=%s",
                 far_targets[i]);
        route(app, uri, &r);
        assert_int_equal(r.status, 403);
        assert_non_null(strstr(r.body, "only from this machine"));
        xpv_response_release(&r);
    }
    /* One target once per capture, on its canonical address. */
    route(app, "/data/plugin/profile/capture_profile?service_addr=127.0.0.1:1,0x7f000001:1", &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "same target"));
    xpv_response_release(&r);
    xpv_capture_route_client((struct sockaddr *)&lo, 0);
    xpv_capture_route_configure(XPV_CAPTURE_ON_LOCAL, NULL, "10.0.0.1:9999");
    route(app, start, &r);
    assert_int_equal(r.status, 403);
    assert_non_null(strstr(r.body, "127.0.0.1:1: not an allowed capture target"));
    xpv_response_release(&r);
    xpv_capture_route_configure(XPV_CAPTURE_ON_LOCAL, NULL, NULL);
    /* no or a wrong token: refused before anything else */
    route_tok(app, start, &r, 1);
    assert_int_equal(r.status, 403);
    assert_non_null(strstr(r.body, "capture_token"));
    xpv_response_release(&r);
    route_tok(app, "/data/plugin/profile/capture_profile?token=00&service_addr=a:1", &r, 1);
    assert_int_equal(r.status, 403);
    xpv_response_release(&r);
    route(app, "/data/plugin/profile/capture_profile?duration=10", &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "service_addr"));
    xpv_response_release(&r);
    const char *bad[] = {"duration=-1", "duration=1e3", "num_retry=101", "host_tracer_level=4",
                         "device_tracer_level=3", "python_tracer_level=2", "delay=x",
                         "timeout_ms=99999999999", "timeout_ms=600001", "duration=600001",
                         "delay=600001", "duration=600000", "duration=300000&delay=300000",
                         NULL};
    for (int i = 0; bad[i]; i++) {
        char uri[256];
        snprintf(uri, sizeof uri, "/data/plugin/profile/capture_profile?service_addr=a:1&%s",
                 bad[i]);
        route(app, uri, &r);
        assert_int_equal(r.status, 400);
        xpv_response_release(&r);
    }
    route(app, "/data/plugin/profile/capture_profile?service_addr=nope", &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "nope: not an address"));
    xpv_response_release(&r);
    route(app, "/data/plugin/profile/capture_profile?capture_id=12345", &r);
    assert_int_equal(r.status, 404);
    xpv_response_release(&r);
    /* Nothing was written into the logdir. */
    char p[4096];
    struct stat st;
    snprintf(p, sizeof p, "%s/plugins", root);
    assert_int_not_equal(stat(p, &st), 0);
    xpv_capture_route_configure(0, NULL, NULL);
    xpv_capture_route_client(NULL, 0);
    xpv_app_free(app);
    tu_rmrf(root);
    free(root);
}

/* What xpview capture wrote from a real jax.profiler.start_server on an
 * H100 (tests/data/device/README.md): it loads, and holds the JAX job's
 * timeline: 1,440 kernels on the GPU stream, the host threads, the HLO
 * protos of its 15 programs. */
static void test_capture__real_jax_capture(void **state) {
    (void)state;
    const char *src = getenv("XPV_SRC");
    if (!src) skip();
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/device/jax_gpu_xpview_capture.xplane.pb.gz", src);
    xpv_err err;
    xpv_profile *p = xpv_load_profile(path, NULL, NULL, &err);
    if (!p) print_message("%s\n", err.msg);
    assert_non_null(p);
    const xpv_plane *gpu = xpv_find_plane(p, "/device:GPU:0");
    assert_non_null(gpu);
    uint64_t kernels = 0;
    for (uint32_t i = 0; i < gpu->nlines; i++) kernels += gpu->lines[i].nevents;
    assert_int_equal(kernels, 1440);
    const xpv_plane *meta = xpv_find_plane(p, "/host:metadata");
    assert_non_null(meta);
    assert_int_equal(meta->nevent_meta >= 15, 1);
    assert_non_null(xpv_find_plane(p, "/host:CPU"));
    assert_int_equal(p->nevents, 6644);
    xpv_profile_free(p);
}

TU_MAIN(cmocka_unit_test(test_capture__targets),
        cmocka_unit_test(test_capture__allow),
        cmocka_unit_test(test_capture__resolve),
        cmocka_unit_test(test_capture__timeout),
        cmocka_unit_test(test_capture__run_dir),
        cmocka_unit_test(test_capture__failures),
        cmocka_unit_test(test_capture__route_refusals),
        cmocka_unit_test(test_capture__real_jax_capture))
