/*
 * test_http.c - the libmicrohttpd front end over a real socket on
 * 127.0.0.1: requests MHD rejects before our handler runs (too many query
 * parameters, an over-long request line or header, a malformed request
 * line) must not leak their per-request context (LeakSanitizer in the
 * sanitizer build reports it at exit) and must leave the server
 * answering; too many query parameters get a 414 at once.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "app_fixture.h"
#include "http.h"
#include "routes.h"
#include "srv_fixture.h"
#include "testutil.h"

static char *root;
static xpv_app *app;
static xpv_http *srv;
static int port;

static const char *const planes[] = {"/host:CPU", NULL};

static int setup(void **state) {
    (void)state;
    app = fx_app_one_run(&root, "run1", planes);
    xpv_http_config hc = {"127.0.0.1", 0, 0, 2, 16, 5, 1, 2, 8, 2, 0, 0, NULL};
    char msg[256];
    srv = xpv_http_start(app, &hc, msg, sizeof msg);
    if (!srv) print_message("start: %s\n", msg);
    assert_non_null(srv);
    port = xpv_http_port(srv);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    xpv_http_stop(srv);
    xpv_app_free(app);
    tu_rmrf(root);
    free(root);
    return 0;
}

/* A new connection to port `to` of 127.0.0.1. */
static int connect_port(int to) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)to);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

/* A new connection to the server. */
static int connect_server(void) { return connect_port(port); }

/* Sends `req` (len bytes) on a new connection and reads the answer until
 * the server closes or 5 s pass.  Returns the status code (0: none). */
static int exchange(const char *req, size_t len) {
    int fd = connect_server();
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);
        if (n <= 0) break;   /* the server may close before reading it all */
        off += (size_t)n;
    }
    shutdown(fd, SHUT_WR);
    char head[64] = {0};
    size_t got = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 5000) <= 0) break;
        char tmp[4096];
        ssize_t n = recv(fd, tmp, sizeof tmp, 0);
        if (n <= 0) break;
        if (got < sizeof head - 1) {
            size_t k = (size_t)n < sizeof head - 1 - got ? (size_t)n : sizeof head - 1 - got;
            memcpy(head + got, tmp, k);
            got += k;
        }
    }
    close(fd);
    int status = 0;
    if (sscanf(head, "HTTP/1.%*d %d", &status) != 1) status = 0;
    return status;
}

static int get(const char *target) {
    char req[512];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                     target);
    return exchange(req, (size_t)n);
}

/* GET `target` with this Host header on a new connection to port `to`;
 * the whole answer (head and body) in `ans` (NUL-terminated, cut at its
 * size).  Returns the status (0: none). */
static int get_as(int to, const char *target, const char *host, char *ans, size_t cap) {
    char req[512];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
                     target, host);
    int fd = connect_port(to);
    assert_int_equal(send(fd, req, (size_t)n, MSG_NOSIGNAL), n);
    size_t got = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 5000) <= 0) break;
        ssize_t k = recv(fd, ans + got, cap - 1 - got, 0);
        if (k <= 0) break;
        got += (size_t)k;
        if (got == cap - 1) break;
    }
    ans[got] = 0;
    close(fd);
    int status = 0;
    if (sscanf(ans, "HTTP/1.%*d %d", &status) != 1) status = 0;
    return status;
}

/* DNS rebinding (issue 26, item 5): a page of attacker.example rebound to
 * 127.0.0.1 sends its own name as Host: 421 and no data (no run names, no
 * capture token), on every route; the names the server is known by are
 * answered; --allowed_hosts adds a proxy's names (".corp.example": the
 * name and its subdomains). */
static void test_foreign_host(void **state) {
    (void)state;
    static char ans[65536];
    char h[128];
    static const char *const foreign[] = {"attacker.example", "attacker.example:%d",
                                          "127.0.0.1.nip.io:%d", "localhost.attacker.example",
                                          "[::1", "localhost:80x", ""};
    static const char *const routes[] = {"/data/plugin/profile/runs", "/healthz", "/",
                                         "/data/plugin/profile/capture_token"};
    for (size_t i = 0; i < sizeof foreign / sizeof *foreign; i++)
        for (size_t r = 0; r < sizeof routes / sizeof *routes; r++) {
            snprintf(h, sizeof h, foreign[i], port);
            int st = get_as(port, routes[r], h, ans, sizeof ans);
            if (st != 421 && !(st == 400 && !h[0]))
                fail_msg("Host '%s' %s: %d", h, routes[r], st);
            assert_null(strstr(ans, "run1"));
            assert_null(strstr(ans, "token"));
        }
    static const char *const ok[] = {"127.0.0.1:%d", "localhost:%d", "LOCALHOST", "[::1]:%d",
                                     "app.localhost:%d", "10.1.2.3"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        snprintf(h, sizeof h, ok[i], port);
        assert_int_equal(get_as(port, "/data/plugin/profile/runs", h, ans, sizeof ans), 200);
        assert_non_null(strstr(ans, "run1"));
    }
    /* a second server behind a proxy named profiles.corp.example */
    xpv_http_config hc = {"127.0.0.1", 0, 0, 2, 16, 5, 1, 2, 8, 2, 0, 0,
                          "profiles.example.com, .corp.example"};
    char msg[256];
    xpv_http *s2 = xpv_http_start(app, &hc, msg, sizeof msg);
    assert_non_null(s2);
    int p2 = xpv_http_port(s2);
    assert_int_equal(get_as(p2, "/data/plugin/profile/runs", "Profiles.Example.COM", ans,
                            sizeof ans), 200);
    assert_int_equal(get_as(p2, "/data/plugin/profile/runs", "x.corp.example:443", ans,
                            sizeof ans), 200);
    assert_int_equal(get_as(p2, "/data/plugin/profile/runs", "corp.example", ans, sizeof ans),
                     200);
    assert_int_equal(get_as(p2, "/data/plugin/profile/runs", "evilcorp.example", ans,
                            sizeof ans), 421);
    assert_int_equal(get_as(p2, "/data/plugin/profile/runs", "example.com", ans, sizeof ans),
                     421);
    xpv_http_stop(s2);
}

static void test_healthz(void **state) {
    (void)state;
    assert_int_equal(get("/healthz"), 200);
}

/* Thousands of query parameters exhaust MHD's per-connection pool while
 * it parses them; the request never reaches the handler.  In a loop: the
 * URI copy of each must be freed (LSan), and the server keeps answering. */
static void test_many_parameters(void **state) {
    (void)state;
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_buf_puts(&b, "GET /data/plugin/profile/runs?");
    for (int i = 0; i < 3000; i++) {
        char kv[16];
        int n = snprintf(kv, sizeof kv, "%sa%d=1", i ? "&" : "", i % 10);
        xpv_buf_add(&b, kv, (size_t)n);
    }
    xpv_buf_puts(&b, " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    for (int i = 0; i < 20; i++) assert_int_equal(exchange(b.data, b.len), 414);
    xpv_buf_free(&b);
    assert_int_equal(get("/healthz"), 200);
}

/* Requests MHD answers itself (414, 431, 400): same leak, same check. */
static void test_early_rejects(void **state) {
    (void)state;
    xpv_buf b;
    xpv_buf_init(&b);
    for (int round = 0; round < 10; round++) {
        /* request line over the 32 KiB limit */
        xpv_buf_reset(&b);
        xpv_buf_puts(&b, "GET /");
        for (int i = 0; i < 40000; i++) xpv_buf_putc(&b, 'a');
        xpv_buf_puts(&b, " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        int st = exchange(b.data, b.len);
        assert_true(st == 0 || st >= 400);
        /* one header over the limit */
        xpv_buf_reset(&b);
        xpv_buf_puts(&b, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ");
        for (int i = 0; i < 40000; i++) xpv_buf_putc(&b, 'b');
        xpv_buf_puts(&b, "\r\n\r\n");
        st = exchange(b.data, b.len);
        assert_true(st == 0 || st >= 400);
        /* malformed request line and header */
        static const char bad[] = "GET /healthz HTTP/1.1\r\nHost x\r\nNo-colon\r\n\r\n";
        st = exchange(bad, sizeof bad - 1);
        assert_true(st == 0 || st >= 400);
        static const char v9[] = "GET /healthz HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n";
        st = exchange(v9, sizeof v9 - 1);
        assert_true(st == 0 || st >= 400);
    }
    xpv_buf_free(&b);
    assert_int_equal(get("/healthz"), 200);
}

/* A connection that sends half a request head and stalls. */
static int stalled(void) {
    int fd = connect_server();
    static const char half[] = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    assert_true(send(fd, half, sizeof half - 1, MSG_NOSIGNAL) > 0);
    return fd;
}

/* Whether the server closed `fd` within `ms` milliseconds. */
static int closed_within(int fd, int ms) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0) return 0;
    char c;
    return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

/* Stalled clients never lock others out: at the per-address cap (8 here,
 * 16 overall) a stalled connection is closed to admit a new one, so 30
 * stalled connections later /healthz still answers at once; and a new
 * connection that sends no complete head is closed after the head
 * timeout (2 s here), long before the idle timeout (5 s). */
static void test_stalled_clients(void **state) {
    (void)state;
    int fds[30];
    for (int i = 0; i < 30; i++) fds[i] = stalled();
    assert_int_equal(get("/healthz"), 200);
    int closed = 0;
    for (int i = 0; i < 30; i++) closed += closed_within(fds[i], 0);
    print_message("%d of 30 stalled connections closed to admit others\n", closed);
    assert_true(closed >= 30 - 8);
    for (int i = 0; i < 30; i++) close(fds[i]);
    int fd = stalled();
    assert_true(closed_within(fd, 4500));      /* head timeout 2 s < idle 5 s */
    close(fd);
    assert_int_equal(get("/healthz"), 200);
}

TU_MAIN_WITH(setup, teardown,
             cmocka_unit_test(test_healthz),
             cmocka_unit_test(test_foreign_host),
             cmocka_unit_test(test_many_parameters),
             cmocka_unit_test(test_early_rejects),
             cmocka_unit_test(test_stalled_clients))
