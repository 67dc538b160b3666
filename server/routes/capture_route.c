/*
 * capture_route.c - the capture_profile route (see capture_route.h).
 *
 * Jobs live in a small table guarded by one mutex; each runs in a detached
 * thread and only marks itself done at the end, so a request never waits
 * for a capture.  Finished jobs stay queryable until their slot is reused.
 */
#include "capture_route.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <strings.h>

#include "app.h"
#include "arena.h"
#include "buf.h"
#include "capture.h"

#define MAX_JOBS 16

typedef struct cjob {
    uint64_t id;
    char logdir[4096];
    char run[128];
    xpv_capture_target *t;
    size_t n;
    xpv_capture_opts o;
    int64_t started_ms, finished_ms;
    uint64_t expected_ms;
    int done;
} cjob;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static cjob *jobs[MAX_JOBS];
static uint64_t next_id = 1;
static int enabled;             /* XPV_CAPTURE_ON_* bits */
/* The request being routed on this thread: 0 unknown, 1 local, 2 network
 * (xpv_capture_route_client). */
static _Thread_local int client_kind;
/* A random token the dashboard reads from capture_token: a page of another
 * origin can make the browser send a GET here but cannot read the token
 * (no CORS), so it cannot start a capture (cross-site request forgery). */
static char token[33];
static pthread_once_t token_once = PTHREAD_ONCE_INIT;
static char why_off[512] = "Capture Profile is not enabled on this server";
static char *allow_list;

void xpv_capture_route_configure(int on, const char *why, const char *allow) {
    pthread_mutex_lock(&mu);
    enabled = on;
    if (why) snprintf(why_off, sizeof why_off, "%s", why);
    free(allow_list);
    allow_list = allow && *allow ? strdup(allow) : NULL;
    pthread_mutex_unlock(&mu);
}

static void make_token(void) {
    unsigned char raw[16] = {0};
    FILE *f = fopen("/dev/urandom", "rb");
    size_t n = f ? fread(raw, 1, sizeof raw, f) : 0;
    if (f) fclose(f);
    if (n != sizeof raw) {   /* no urandom: time and address bits, weaker */
        uint64_t x = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)&raw ^ 0x9E3779B97F4A7C15ull;
        for (size_t i = 0; i < sizeof raw; i++, x = x * 6364136223846793005ull + 1)
            raw[i] = (unsigned char)(x >> 56);
    }
    for (size_t i = 0; i < sizeof raw; i++) snprintf(token + 2 * i, 3, "%02x", raw[i]);
}


void xpv_capture_route_client(const struct sockaddr *peer, int forwarded) {
    int loop = 0;
    if (peer && peer->sa_family == AF_INET) {
        loop = (ntohl(((const struct sockaddr_in *)peer)->sin_addr.s_addr) >> 24) == 127;
    } else if (peer && peer->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)peer)->sin6_addr;
        loop = IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    client_kind = !peer ? 0 : loop && !forwarded ? 1 : 2;
}

int xpv_capture_route_is_loopback(const char *h) {
    if (!h) return 0;
    return !strncmp(h, "127.", 4) || !strcmp(h, "::1") || !strcmp(h, "[::1]") ||
           !strcasecmp(h, "localhost");
}

/* ---- responses ----------------------------------------------------------- */

static void take(xpv_response *r, int status, xpv_buf *b) {
    resp_take_buf(r, b);
    r->compress = 0;   /* small answers, sent as they are */
    r->status = status;
    r->content_type = "application/json";
    r->cache_control = "no-store";
}

void xpv_capture_token_route(xpv_app *a, const xpv_request *rq, const char *inm,
                             xpv_response *r) {
    (void)a;
    (void)rq;
    (void)inm;
    pthread_once(&token_once, make_token);
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_buf_printf(&b, "{\"token\":\"%s\"}", token);
    take(r, 200, &b);
    r->cache_control = "no-store";
}

static void answer_error(xpv_response *r, int status, const char *msg) {
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_buf_puts(&b, "{\"error\":");
    xpv_buf_json_cstr(&b, msg);
    xpv_buf_putc(&b, '}');
    take(r, status, &b);
}

/* The job's state as JSON (mu held). */
static void job_json(const cjob *j, xpv_buf *b, int *status) {
    *status = 200;
    xpv_buf_printf(b, "{\"capture_id\":\"%llu\",\"run\":", (unsigned long long)j->id);
    int ok = 0;
    for (size_t i = 0; i < j->n; i++) ok += j->done && j->t[i].ok;
    xpv_buf_json_cstr(b, !j->done || ok ? j->run : "");
    xpv_buf_printf(b, ",\"running\":%s,\"elapsed_ms\":%lld,\"expected_ms\":%llu",
                   j->done ? "false" : "true",
                   (long long)((j->done ? j->finished_ms : xpv_now_ms()) - j->started_ms),
                   (unsigned long long)j->expected_ms);
    xpv_buf_puts(b, ",\"targets\":[");
    for (size_t i = 0; i < j->n; i++) {
        if (i) xpv_buf_putc(b, ',');
        xpv_buf_json_cstr(b, j->t[i].addr);
    }
    xpv_buf_putc(b, ']');
    if (!j->done) {
        xpv_buf_putc(b, '}');
        return;
    }
    xpv_buf_puts(b, ",\"files\":[");
    int first = 1;
    for (size_t i = 0; i < j->n; i++) {
        if (!j->t[i].ok) continue;
        if (!first) xpv_buf_putc(b, ',');
        first = 0;
        xpv_buf_puts(b, "{\"addr\":");
        xpv_buf_json_cstr(b, j->t[i].addr);
        xpv_buf_puts(b, ",\"file\":");
        const char *slash = strrchr(j->t[i].path, '/');
        xpv_buf_json_cstr(b, slash ? slash + 1 : j->t[i].path);
        xpv_buf_printf(b, ",\"bytes\":%llu,\"delivery\":", (unsigned long long)j->t[i].bytes);
        xpv_buf_json_cstr(b, j->t[i].how);
        xpv_buf_putc(b, '}');
    }
    xpv_buf_putc(b, ']');
    if ((size_t)ok == j->n) {
        xpv_buf_puts(b, ",\"result\":\"Capture profile successfully. Please refresh.\"}");
        return;
    }
    xpv_buf e;
    xpv_buf_init(&e);
    if (ok) xpv_buf_printf(&e, "%d of %zu captures failed: ", (int)(j->n - (size_t)ok), j->n);
    for (size_t i = 0, k = 0; i < j->n; i++) {
        if (j->t[i].ok) continue;
        if (k++) xpv_buf_puts(&e, "; ");
        xpv_buf_puts(&e, j->t[i].pub_err[0] ? j->t[i].pub_err : j->t[i].err);
    }
    xpv_buf_putc(&e, '\0');
    xpv_buf_puts(b, ",\"error\":");
    xpv_buf_json_cstr(b, e.data);
    xpv_buf_putc(b, '}');
    xpv_buf_free(&e);
}

/* ---- the job thread -------------------------------------------------------------- */

static void *job_main(void *arg) {
    cjob *j = arg;
    xpv_capture_run(j->logdir, j->run, j->t, j->n, &j->o);
    /* The details (what a peer is, how it failed) only here, never in the
     * status. */
    for (size_t i = 0; i < j->n; i++)
        if (j->t[i].ok)
            fprintf(stderr, "xpview: capture %llu: %s: wrote %s (%llu bytes)\n",
                    (unsigned long long)j->id, j->t[i].addr, j->t[i].path,
                    (unsigned long long)j->t[i].bytes);
        else
            fprintf(stderr, "xpview: capture %llu: %s\n", (unsigned long long)j->id,
                    j->t[i].err);
    pthread_mutex_lock(&mu);
    j->done = 1;
    j->finished_ms = xpv_now_ms();
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void job_free(cjob *j) {
    if (!j) return;
    free(j->t);
    free(j);
}

/* ---- parameters ----------------------------------------------------------------- */

static int param_u64(const xpv_query *q, const char *name, uint64_t max, uint64_t *out,
                     xpv_response *r) {
    const char *v = xpv_query_get(q, name);
    if (!v || !*v) return 0;
    uint64_t x;
    /* (parse wide, then compare: the parser's own bound wraps for max < 9) */
    if (!xpv_parse_u64_strict(v, UINT64_MAX, &x) || x > max) {
        char msg[300];
        snprintf(msg, sizeof msg, "%s: expected an integer in [0, %llu]: %.100s", name,
                 (unsigned long long)max, v);
        answer_error(r, 400, msg);
        return -1;
    }
    *out = x;
    return 0;
}

/* param_u64 for an int option; absent, *out keeps its value. */
static int param_int(const xpv_query *q, const char *name, int max, int *out, xpv_response *r) {
    uint64_t v = (uint64_t)*out;
    if (param_u64(q, name, (uint64_t)max, &v, r)) return -1;
    *out = (int)v;
    return 0;
}

/* ---- the route ------------------------------------------------------------------ */

static void status_route(const char *id, xpv_response *r) {
    xpv_buf b;
    xpv_buf_init(&b);
    int status = 404;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MAX_JOBS; i++)
        if (jobs[i]) {
            char s[32];
            snprintf(s, sizeof s, "%llu", (unsigned long long)jobs[i]->id);
            if (!strcmp(s, id)) {
                job_json(jobs[i], &b, &status);
                break;
            }
        }
    pthread_mutex_unlock(&mu);
    if (status == 404) {
        xpv_buf_free(&b);
        answer_error(r, 404, "unknown capture_id (finished captures are kept for a while "
                             "only)");
        return;
    }
    take(r, status, &b);
}

/* Whether target `t` may be captured from by this request; resolves it
 * (t->addrs, t->keys).  0, or -1 with the answer in `r`. */
static int check_target(xpv_capture_target *t, const char *allow, int local, xpv_response *r) {
    char err[1024];
    if (allow) {
        if (!xpv_capture_allowed(allow, t)) {
            snprintf(err, sizeof err, "%.300s: not an allowed capture target on this server "
                     "(--capture_allow %.500s)", t->addr, allow);
            answer_error(r, 403, err);
            return -1;
        }
    } else if (!local) {
        /* Network clients: this machine only, and no DNS lookup. */
        if (xpv_capture_resolve(t, 1, err, sizeof err) != 0 || !t->local) {
            snprintf(err, sizeof err, "%.300s: not an allowed capture target: requests from "
                     "other machines or through a proxy may capture only from this machine "
                     "(a loopback address or localhost) unless the server names the targets "
                     "with --capture_allow", t->addr);
            answer_error(r, 403, err);
            return -1;
        }
        return 0;
    }
    if (xpv_capture_resolve(t, 0, err, sizeof err) != 0) {
        answer_error(r, 400, err);
        return -1;
    }
    return 0;
}

/* The phases of a capture request: may this client capture (on, token),
 * its options, its targets (parsed, allowed, resolved, distinct), then the
 * job started in a free slot.  Each returns 0, or -1 with the answer in r. */

/* Capture on for this client, and the token right; *allow gets a copy of
 * --capture_allow (free it) and *local whether the client is local. */
static int capture_gate(const xpv_query *q, int *local, char **allow, xpv_response *r) {
    *local = client_kind == 1;
    pthread_mutex_lock(&mu);
    int on = *local ? enabled != 0 : (enabled & XPV_CAPTURE_ON_NETWORK) != 0;
    char why[512];
    if (enabled && !on)
        snprintf(why, sizeof why, "Capture Profile is off for requests from other machines or "
                 "through a proxy (X-Forwarded-For); restart xpview with --allow_capture (and "
                 "--capture_allow HOST[:PORT],... for targets other than this machine) to "
                 "allow it");
    else
        snprintf(why, sizeof why, "%s", why_off);
    *allow = allow_list ? strdup(allow_list) : NULL;
    pthread_mutex_unlock(&mu);
    if (!on) {
        answer_error(r, 403, why);
        return -1;
    }
    pthread_once(&token_once, make_token);
    const char *tk = xpv_query_get(q, "token");
    if (!tk || strcmp(tk, token)) {
        answer_error(r, 403, "capture_profile needs token=<the value of capture_token> "
                     "(the dashboard sends it; it keeps other web sites from starting "
                     "captures through your browser)");
        return -1;
    }
    return 0;
}

static int capture_options(xpv_app *a, const xpv_query *q, xpv_capture_opts *o,
                           xpv_response *r) {
    xpv_capture_defaults(o);
    if (param_u64(q, "duration", XPV_CAPTURE_MAX_MS, &o->duration_ms, r) ||
        param_u64(q, "delay", XPV_CAPTURE_MAX_MS, &o->delay_ms, r) ||
        param_u64(q, "timeout_ms", XPV_CAPTURE_MAX_MS, &o->timeout_ms, r))
        return -1;
    if (o->duration_ms == 0) o->duration_ms = 1000;
    if (o->duration_ms + o->delay_ms >= XPV_CAPTURE_MAX_MS) {
        char msg[200];
        snprintf(msg, sizeof msg, "duration + delay: must end within the %llu ms a capture "
                 "may take", (unsigned long long)XPV_CAPTURE_MAX_MS);
        answer_error(r, 400, msg);
        return -1;
    }
    if (param_int(q, "num_retry", 100, &o->num_retry, r) ||
        param_int(q, "host_tracer_level", 3, &o->host_tracer_level, r) ||
        param_int(q, "device_tracer_level", 2, &o->device_tracer_level, r) ||
        param_int(q, "python_tracer_level", 1, &o->python_tracer_level, r))
        return -1;
    o->max_bytes = a->limits.max_file;
    return 0;
}

/* The targets of worker_list / service_addr: *t (malloc'd, free it) and
 * *n of them, each allowed for this client and resolved (outside the lock:
 * a name may take a while), no two the same. */
static int capture_targets(const xpv_query *q, const char *allow, int local,
                           xpv_capture_target **out, int *nout, xpv_response *r) {
    const char *list = xpv_query_get(q, "worker_list");
    if (!list || !*list) list = xpv_query_get(q, "service_addr");
    if (!list || !*list) {
        answer_error(r, 400, "missing parameter: service_addr");
        return -1;
    }
    xpv_capture_target *t = xpv_xcalloc(XPV_CAPTURE_MAX_TARGETS, sizeof *t);
    char err[1024];
    int n = xpv_capture_parse_targets(list, t, XPV_CAPTURE_MAX_TARGETS, err, sizeof err);
    if (n < 0) {
        free(t);
        answer_error(r, 400, err);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (check_target(&t[i], allow, local, r) != 0) {
            free(t);
            return -1;
        }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < i; k++)
            if (xpv_capture_same_target(&t[i], &t[k])) {
                snprintf(err, sizeof err, "%.300s and %.300s are the same target", t[k].addr,
                         t[i].addr);
                free(t);
                answer_error(r, 400, err);
                return -1;
            }
    *out = t;
    *nout = n;
    return 0;
}

/* A free job slot (lock held), or -1 with the answer in r (a target busy:
 * 409; no slot: 503). */
static int free_slot_locked(const xpv_capture_target *t, int n, xpv_response *r) {
    char err[1024];
    int slot = -1;
    for (int k = 0; k < MAX_JOBS; k++) {
        cjob *j = jobs[k];
        if (!j || j->done) {
            if (slot < 0 || (jobs[slot] && (!j || j->id < jobs[slot]->id))) slot = k;
            continue;
        }
        for (size_t x = 0; x < j->n; x++)
            for (int i = 0; i < n; i++)
                if (xpv_capture_same_target(&j->t[x], &t[i])) {
                    snprintf(err, sizeof err, "%.300s: a capture from this address is already "
                             "running (capture_id %llu, %.300s)", t[i].addr,
                             (unsigned long long)j->id, j->t[x].addr);
                    answer_error(r, 409, err);
                    return -1;
                }
    }
    if (slot < 0) answer_error(r, 503, "too many captures are running; try again later");
    return slot;
}

/* Start the capture of targets t (taken over) with options o; its status
 * is the answer. */
static void start_job(xpv_app *a, xpv_capture_target *t, int n, const xpv_capture_opts *o,
                      xpv_response *r) {
    /* At most one capture per target (on its addresses); a free slot. */
    pthread_mutex_lock(&mu);
    int slot = free_slot_locked(t, n, r);
    if (slot < 0) {
        pthread_mutex_unlock(&mu);
        free(t);
        return;
    }
    char err[1024];
    cjob *j = xpv_xcalloc(1, sizeof *j);
    j->t = t;
    j->n = (size_t)n;
    j->o = *o;
    snprintf(j->logdir, sizeof j->logdir, "%s", xpv_app_logdir(a));
    if (xpv_capture_make_run(j->logdir, j->run, sizeof j->run, err, sizeof err) != 0) {
        pthread_mutex_unlock(&mu);
        job_free(j);
        answer_error(r, 500, err);
        return;
    }
    j->id = next_id++;
    j->started_ms = xpv_now_ms();
    j->expected_ms = o->delay_ms + o->duration_ms;
    job_free(jobs[slot]);
    jobs[slot] = j;
    pthread_attr_t attr;
    pthread_t th;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int started = pthread_create(&th, &attr, job_main, j) == 0;
    pthread_attr_destroy(&attr);
    if (!started) {
        j->done = 1;
        j->finished_ms = j->started_ms;
        for (size_t i = 0; i < j->n; i++)
            snprintf(j->t[i].err, sizeof j->t[i].err, "%.300s: cannot start a thread",
                     j->t[i].addr);
    }
    xpv_buf b;
    xpv_buf_init(&b);
    int status;
    job_json(j, &b, &status);
    pthread_mutex_unlock(&mu);
    take(r, status, &b);
}

void xpv_capture_route(xpv_app *a, const xpv_request *rq, const char *inm, xpv_response *r) {
    (void)inm;
    const xpv_query *q = rq->q;   /* the capture's own options */
    const char *id = xpv_query_get(q, "capture_id");
    if (id) {
        status_route(id, r);
        return;
    }
    int local;
    char *allow = NULL;
    xpv_capture_opts o;
    xpv_capture_target *t = NULL;
    int n = 0;
    int ok = capture_gate(q, &local, &allow, r) == 0 && capture_options(a, q, &o, r) == 0 &&
             capture_targets(q, allow, local, &t, &n, r) == 0;
    free(allow);
    if (ok) start_job(a, t, n, &o, r);
}
