/*
 * capture.c - remote profile capture into a logdir run (see capture.h).
 */
#include "capture.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "buf.h"
#include "grpc.h"
#include "profiler_service.pb-c.h"
#include "util.h"

#define PROFILE_PATH "/tensorflow.ProfilerService/Profile"
#define REST_CAP (1u << 20)     /* ProfileResponse fields other than xspace */
#define FILE_BUF (256u << 10)

void xpv_capture_defaults(xpv_capture_opts *o) {
    memset(o, 0, sizeof *o);
    o->duration_ms = 1000;
    o->num_retry = 3;
    o->host_tracer_level = 2;
    o->device_tracer_level = 1;
    o->python_tracer_level = 0;
}

uint64_t xpv_capture_timeout(const xpv_capture_opts *o) {
    uint64_t t = o->timeout_ms;
    if (!t) {
        t = o->delay_ms < XPV_CAPTURE_MAX_MS && o->duration_ms < XPV_CAPTURE_MAX_MS
                ? 30000 + o->delay_ms + o->duration_ms
                : XPV_CAPTURE_MAX_MS;
    }
    return t > XPV_CAPTURE_MAX_MS ? XPV_CAPTURE_MAX_MS : t;
}

/* ==== Targets ========================================================== */

/* "[v6]:port", "host:port", optionally after "grpc://".  0 or -1. */
static int split_hostport(const char *s, size_t len, char *host, size_t hostcap, char *port,
                          size_t portcap) {
    const char *end = s + len, *h = s, *he, *p;
    if (len >= 7 && !strncmp(s, "grpc://", 7)) h += 7;
    while (end > h && end[-1] == '/') end--;
    if (h < end && *h == '[') {
        he = memchr(h, ']', (size_t)(end - h));
        if (!he || he + 1 >= end || he[1] != ':') return -1;
        p = he + 2;
        h++;
    } else {
        he = NULL;
        for (const char *c = end; c > h; c--)
            if (c[-1] == ':') {
                he = c - 1;
                break;
            }
        if (!he) return -1;
        p = he + 1;
        if (memchr(h, ':', (size_t)(he - h))) return -1;   /* bare IPv6 needs [] */
    }
    size_t hl = (size_t)(he - h), pl = (size_t)(end - p);
    if (hl == 0 || hl >= hostcap || pl == 0 || pl >= portcap) return -1;
    for (size_t i = 0; i < hl; i++) {
        char c = h[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_' || c == ':' || c == '%'))
            return -1;
    }
    long v = 0;
    for (size_t i = 0; i < pl; i++) {
        if (p[i] < '0' || p[i] > '9') return -1;
        v = v * 10 + (p[i] - '0');
        if (v > 65535) return -1;
    }
    if (v == 0) return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    memcpy(port, p, pl);
    port[pl] = '\0';
    return 0;
}

static void sanitize(char *out, size_t cap, const char *in) {
    size_t o = 0;
    for (; *in && o + 1 < cap; in++) {
        char c = *in;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '-' || c == '_';
        out[o++] = ok ? c : '_';
    }
    out[o] = '\0';
    if (out[0] == '.') out[0] = '_';            /* never a hidden file */
}

int xpv_capture_parse_targets(const char *list, xpv_capture_target *t, size_t cap,
                              char *err, size_t errlen) {
    size_t n = 0;
    const char *s = list ? list : "";
    while (*s) {
        while (*s == ' ' || *s == ',') s++;
        if (!*s) break;
        size_t len = strcspn(s, ", ");
        if (n == cap) {
            snprintf(err, errlen, "too many addresses (at most %zu)", cap);
            return -1;
        }
        xpv_capture_target *x = &t[n];
        memset(x, 0, sizeof *x);
        snprintf(x->addr, sizeof x->addr, "%.*s", (int)(len < 250 ? len : 250), s);
        if (split_hostport(s, len, x->host, sizeof x->host, x->port, sizeof x->port) != 0) {
            snprintf(err, errlen, "%s: not an address: expected grpc://HOST:PORT or "
                     "HOST:PORT", x->addr);
            return -1;
        }
        n++;
        s += len;
    }
    if (n == 0) {
        snprintf(err, errlen, "no address to capture from");
        return -1;
    }
    /* File names: the host, or host_port when several targets share it. */
    for (size_t i = 0; i < n; i++) {
        int shared = 0;
        for (size_t j = 0; j < n; j++)
            if (j != i && !strcasecmp(t[i].host, t[j].host)) shared = 1;
        char raw[300];
        snprintf(raw, sizeof raw, "%s%s%s", t[i].host, shared ? "_" : "",
                 shared ? t[i].port : "");
        sanitize(t[i].stem, sizeof t[i].stem, raw);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(t[i].stem, t[j].stem)) {
                snprintf(err, errlen, "%s: the same address twice", t[i].addr);
                return -1;
            }
    }
    return (int)n;
}

int xpv_capture_allowed(const char *allow, const xpv_capture_target *t) {
    if (!allow || !*allow) return 1;
    const char *s = allow;
    while (*s) {
        while (*s == ' ' || *s == ',') s++;
        if (!*s) break;
        size_t len = strcspn(s, ", ");
        char host[256], port[16];
        if (split_hostport(s, len, host, sizeof host, port, sizeof port) == 0) {
            if (!strcasecmp(host, t->host) && !strcmp(port, t->port)) return 1;
        } else {
            size_t hl = len;
            const char *h = s;
            if (hl > 2 && h[0] == '[' && h[hl - 1] == ']') h++, hl -= 2;
            if (hl == strlen(t->host) && !strncasecmp(h, t->host, hl)) return 1;
        }
        s += len;
    }
    return 0;
}

/* ==== Addresses ======================================================== */

int xpv_capture_addr_is_local(const struct sockaddr *sa) {
    if (sa->sa_family == AF_INET) {
        uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
        return (a >> 24) == 127 || a == 0;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_UNSPECIFIED(a)) return 1;
        if (IN6_IS_ADDR_V4MAPPED(a)) {
            const uint8_t *b = a->s6_addr;
            return b[12] == 127 || (b[12] | b[13] | b[14] | b[15]) == 0;
        }
    }
    return 0;
}

/* The canonical key of a resolved address: "local:PORT" for this machine,
 * "a.b.c.d:PORT" (IPv4-mapped IPv6 too), "[v6%scope]:PORT". */
static void addr_key(const struct sockaddr_storage *ss, char *out, size_t cap) {
    const struct sockaddr *sa = (const struct sockaddr *)ss;
    char ip[INET6_ADDRSTRLEN + 16];
    unsigned port;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
        port = ntohs(s4->sin_port);
        inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof ip);
    } else {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
        port = ntohs(s6->sin6_port);
        if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
            inet_ntop(AF_INET, s6->sin6_addr.s6_addr + 12, ip, sizeof ip);
        } else {
            char v6[INET6_ADDRSTRLEN];
            inet_ntop(AF_INET6, &s6->sin6_addr, v6, sizeof v6);
            if (s6->sin6_scope_id)
                snprintf(ip, sizeof ip, "[%s%%%u]", v6, (unsigned)s6->sin6_scope_id);
            else
                snprintf(ip, sizeof ip, "[%s]", v6);
        }
    }
    if (xpv_capture_addr_is_local(sa)) snprintf(out, cap, "local:%u", port);
    else snprintf(out, cap, "%.62s:%u", ip, port);
}

static int add_addr(xpv_capture_target *t, const struct sockaddr *sa, size_t len) {
    if ((sa->sa_family != AF_INET && sa->sa_family != AF_INET6) ||
        len > sizeof t->addrs[0] || t->naddrs == XPV_CAPTURE_MAX_ADDRS)
        return 0;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    memcpy(&ss, sa, len);
    for (size_t i = 0; i < t->naddrs; i++)
        if (!memcmp(&t->addrs[i], &ss, sizeof ss)) return 0;
    t->addrs[t->naddrs] = ss;
    addr_key(&ss, t->keys[t->naddrs], sizeof t->keys[0]);
    t->naddrs++;
    return 1;
}

/* "localhost" and "*.localhost" (RFC 6761): loopback, without asking any
 * resolver. */
static int is_localhost_name(const char *h) {
    size_t n = strlen(h);
    return !strcasecmp(h, "localhost") ||
           (n > 10 && !strcasecmp(h + n - 10, ".localhost"));
}

int xpv_capture_resolve(xpv_capture_target *t, int numeric_only, char *err, size_t errlen) {
    t->naddrs = 0;
    t->local = 0;
    unsigned long port = strtoul(t->port, NULL, 10);
    if (is_localhost_name(t->host)) {
        struct sockaddr_in s4;
        struct sockaddr_in6 s6;
        memset(&s4, 0, sizeof s4);
        memset(&s6, 0, sizeof s6);
        s4.sin_family = AF_INET;
        s4.sin_port = htons((uint16_t)port);
        s4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        s6.sin6_family = AF_INET6;
        s6.sin6_port = htons((uint16_t)port);
        s6.sin6_addr = in6addr_loopback;
        add_addr(t, (struct sockaddr *)&s4, sizeof s4);
        add_addr(t, (struct sockaddr *)&s6, sizeof s6);
    } else {
        struct addrinfo hints, *res = NULL;
        memset(&hints, 0, sizeof hints);
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_NUMERICSERV | (numeric_only ? AI_NUMERICHOST : 0);
        int gai = getaddrinfo(t->host, t->port, &hints, &res);
        if (gai != 0) {
            if (numeric_only)
                snprintf(err, errlen, "%.300s: not an IP address or localhost", t->addr);
            else
                snprintf(err, errlen, "%.300s: cannot resolve %.256s: %s", t->addr, t->host,
                         gai_strerror(gai));
            return -1;
        }
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next)
            add_addr(t, ai->ai_addr, ai->ai_addrlen);
        freeaddrinfo(res);
    }
    if (t->naddrs == 0) {
        snprintf(err, errlen, "%.300s: %.256s has no IPv4 or IPv6 address", t->addr, t->host);
        return -1;
    }
    t->local = 1;
    for (size_t i = 0; i < t->naddrs; i++)
        if (!xpv_capture_addr_is_local((const struct sockaddr *)&t->addrs[i])) t->local = 0;
    return 0;
}

int xpv_capture_same_target(const xpv_capture_target *a, const xpv_capture_target *b) {
    for (size_t i = 0; i < a->naddrs; i++)
        for (size_t j = 0; j < b->naddrs; j++)
            if (!strcmp(a->keys[i], b->keys[j])) return 1;
    return 0;
}

/* ==== Run directory ==================================================== */

static int mkdir_p(const char *path) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

int xpv_capture_make_run(const char *logdir, char *run, size_t runlen, char *err,
                         size_t errlen) {
    char root[4200], dir[4300], stamp[64];
    snprintf(root, sizeof root, "%s/plugins/profile", logdir);
    if (mkdir_p(root) != 0) {
        snprintf(err, errlen, "cannot create %s: %s", root, strerror(errno));
        return -1;
    }
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y_%m_%d_%H_%M_%S", &tm);
    for (int i = 1; i < 1000; i++) {
        if (i == 1) snprintf(run, runlen, "%s", stamp);
        else snprintf(run, runlen, "%s_%d", stamp, i);
        snprintf(dir, sizeof dir, "%s/%s", root, run);
        if (mkdir(dir, 0755) == 0) return 0;
        if (errno != EEXIST) {
            snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
            return -1;
        }
    }
    snprintf(err, errlen, "cannot create a run directory in %s", root);
    return -1;
}

/* ==== ProfileResponse, streamed ======================================== */

/* Field 8 (xspace) goes to the file as it arrives; every other field is
 * copied into `rest` (at most REST_CAP bytes) and decoded with protoc-c at
 * the end. */
typedef struct resp_parser {
    int state;                  /* 0 tag, 1 length, 2 varint value, 3 payload */
    uint64_t acc;
    int shift;
    uint8_t raw[10];
    int rawn;
    uint32_t field;
    int wt;
    uint64_t left;
    int to_file;
    FILE *f;
    uint64_t limit;             /* largest XSpace written (max_bytes) */
    uint64_t xspace_bytes;
    int have_xspace;
    xpv_buf rest;
    int rest_overflow;
    char ferr[256];
} resp_parser;

static void rest_add(resp_parser *p, const void *d, size_t n) {
    if (p->rest_overflow) return;
    if (p->rest.len + n > REST_CAP) {
        p->rest_overflow = 1;
        return;
    }
    xpv_buf_add(&p->rest, d, n);
}

static int parser_sink(void *ctx, const uint8_t *d, size_t n, char *err, size_t errlen) {
    resp_parser *p = ctx;
    while (n) {
        if (p->state != 3) {
            uint8_t b = *d++;
            n--;
            if (p->rawn == 10 || (p->shift == 63 && b > 1)) {
                snprintf(err, errlen, "malformed ProfileResponse (bad varint)");
                return -1;
            }
            p->raw[p->rawn++] = b;
            p->acc |= (uint64_t)(b & 0x7f) << p->shift;
            p->shift += 7;
            if (b & 0x80) continue;
            uint64_t v = p->acc;
            p->acc = 0;
            p->shift = 0;
            if (p->state == 0) {
                p->field = (uint32_t)(v >> 3);
                p->wt = (int)(v & 7);
                p->to_file = p->field == 8 && p->wt == 2;
                if (!p->to_file) rest_add(p, p->raw, (size_t)p->rawn);
                p->rawn = 0;
                if (p->field == 0 || p->wt == 3 || p->wt == 4 || p->wt > 5) {
                    snprintf(err, errlen, "malformed ProfileResponse (field %u, wire type %d)",
                             p->field, p->wt);
                    return -1;
                }
                if (p->wt == 0) p->state = 2;
                else if (p->wt == 2) p->state = 1;
                else {
                    p->left = p->wt == 1 ? 8 : 4;
                    p->state = 3;
                }
            } else if (p->state == 1) {
                if (!p->to_file) rest_add(p, p->raw, (size_t)p->rawn);
                p->rawn = 0;
                p->left = v;
                p->state = v ? 3 : 0;
                if (p->to_file && v > p->limit) {
                    snprintf(err, errlen, "the profile (%llu bytes) is larger than the limit of "
                             "%llu bytes (--max_file_size); nothing was kept",
                             (unsigned long long)v, (unsigned long long)p->limit);
                    return -1;
                }
                if (p->to_file) {
                    if (p->have_xspace) {           /* a repeated field: last wins */
                        rewind(p->f);
                        if (ftruncate(fileno(p->f), 0) != 0) {
                            snprintf(err, errlen, "truncate: %s", strerror(errno));
                            return -1;
                        }
                        p->xspace_bytes = 0;
                    }
                    p->have_xspace = 1;
                }
            } else {
                rest_add(p, p->raw, (size_t)p->rawn);
                p->rawn = 0;
                p->state = 0;
            }
            continue;
        }
        size_t k = p->left < n ? (size_t)p->left : n;
        if (p->to_file) {
            if (p->xspace_bytes + k > p->limit) {      /* (the length was checked) */
                snprintf(err, errlen, "the profile is larger than the limit of %llu bytes "
                         "(--max_file_size); nothing was kept", (unsigned long long)p->limit);
                return -1;
            }
            if (fwrite(d, 1, k, p->f) != k) {
                snprintf(err, errlen, "cannot write the profile: %s", strerror(errno));
                return -1;
            }
            p->xspace_bytes += k;
        } else {
            rest_add(p, d, k);
        }
        d += k;
        n -= k;
        p->left -= k;
        if (p->left == 0) p->state = 0;
    }
    return 0;
}

/* ==== One target ======================================================= */

typedef struct job {
    const char *logdir, *run;
    xpv_capture_target *t;
    const xpv_capture_opts *o;
    int64_t deadline;
} job;

static uint8_t *build_request(const job *j, size_t *len) {
    Tensorflow__ProfileOptions opts = TENSORFLOW__PROFILE_OPTIONS__INIT;
    Tensorflow__ProfileRequest req = TENSORFLOW__PROFILE_REQUEST__INIT;
    char root[4200], *tools[1] = {"xplane.pb"};
    snprintf(root, sizeof root, "%s/plugins/profile", j->logdir);
    opts.include_dataset_ops = 1;
    opts.host_tracer_level = (uint32_t)j->o->host_tracer_level;
    opts.device_tracer_level = (uint32_t)j->o->device_tracer_level;
    opts.python_tracer_level = (uint32_t)j->o->python_tracer_level;
    opts.version = 1;
    opts.enable_hlo_proto = 1;
    opts.duration_ms = j->o->duration_ms;
    if (j->o->delay_ms) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        opts.start_timestamp_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec +
                                  j->o->delay_ms * 1000000ULL;
    }
    req.duration_ms = j->o->duration_ms;
    req.max_events = 1000000;
    req.n_tools = 1;
    req.tools = tools;
    req.opts = &opts;
    req.repository_root = root;
    req.session_id = (char *)j->run;
    req.host_name = j->t->stem;
    req.emit_xspace = 1;
    *len = tensorflow__profile_request__get_packed_size(&req);
    uint8_t *b = xpv_xmalloc(*len ? *len : 1);
    tensorflow__profile_request__pack(&req, b);
    return b;
}

static void *capture_one(void *arg) {
    job *j = arg;
    xpv_capture_target *t = j->t;
    char dir[4400], tmp[4800], why[1024] = "";
    int generic = 0;            /* `why` before the peer proved to be gRPC */
    uint64_t limit = j->o->max_bytes ? j->o->max_bytes : XPV_CAPTURE_DEFAULT_MAX_BYTES;
    snprintf(dir, sizeof dir, "%.3800s/plugins/profile/%.100s", j->logdir, j->run);
    snprintf(t->path, sizeof t->path, "%.4000s/%.300s.xplane.pb", dir, t->stem);
    snprintf(tmp, sizeof tmp, "%s/.%s.xplane.pb.part", dir, t->stem);
    int max_attempts = 1 + (j->o->num_retry > 0 ? j->o->num_retry : 0);
    char *fbuf = xpv_xmalloc(FILE_BUF);
    for (int a = 0; a < max_attempts; a++) {
        if (a > 0 && xpv_now_ms() >= j->deadline) break;
        t->attempts++;
        generic = 0;
        resp_parser p;
        memset(&p, 0, sizeof p);
        p.limit = limit;
        xpv_buf_init(&p.rest);
        p.f = fopen(tmp, "wbx");
        if (!p.f && errno == EEXIST && unlink(tmp) == 0) p.f = fopen(tmp, "wbx");
        if (!p.f) {
            snprintf(why, sizeof why, "cannot create %.700s: %s", tmp, strerror(errno));
            xpv_buf_free(&p.rest);
            break;
        }
        setvbuf(p.f, fbuf, _IOFBF, FILE_BUF);
        size_t rlen;
        uint8_t *req = build_request(j, &rlen);
        int grpc_answer = 0;
        xpv_grpc_call c = {.host = t->host,
                           .port = t->port,
                           .path = PROFILE_PATH,
                           .req = req,
                           .req_len = rlen,
                           .deadline_ms = j->deadline,
                           .sink = parser_sink,
                           .sink_ctx = &p,
                           .addrs = t->naddrs ? t->addrs : NULL,
                           .naddrs = t->naddrs,
                           .grpc_answer = &grpc_answer};
        int gs;
        char gerr[800];
        int rc = xpv_grpc_unary(&c, &gs, gerr, sizeof gerr);
        free(req);
        int ferr = fflush(p.f) != 0;
        ferr |= fclose(p.f) != 0;
        int retry = 0;
        if (rc == XPV_GRPC_OK && (p.state != 0 || p.rawn)) {
            snprintf(why, sizeof why, "the ProfileResponse is truncated");
        } else if (rc == XPV_GRPC_OK && ferr) {
            snprintf(why, sizeof why, "cannot write %.700s: %s", tmp, strerror(errno));
        } else if (rc == XPV_GRPC_OK) {
            int empty = 0;
            if (!p.rest_overflow && p.rest.len) {
                Tensorflow__ProfileResponse *resp = tensorflow__profile_response__unpack(
                    NULL, p.rest.len, (const uint8_t *)p.rest.data);
                if (resp) {
                    empty = resp->empty_trace;
                    tensorflow__profile_response__free_unpacked(resp, NULL);
                }
            }
            struct stat st;
            if (p.have_xspace && p.xspace_bytes > 0) {
                if (rename(tmp, t->path) != 0) {
                    snprintf(why, sizeof why, "cannot rename to %.700s: %s", t->path,
                             strerror(errno));
                } else {
                    t->ok = 1;
                    t->bytes = p.xspace_bytes;
                    t->how = "response";
                }
            } else if (unlink(tmp), stat(t->path, &st) == 0 && S_ISREG(st.st_mode) &&
                       (uint64_t)st.st_size > limit) {
                unlink(t->path);
                snprintf(why, sizeof why, "the profile the server saved under repository_root "
                         "(%llu bytes) is larger than the limit of %llu bytes "
                         "(--max_file_size); it was deleted", (unsigned long long)st.st_size,
                         (unsigned long long)limit);
            } else if (stat(t->path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
                t->ok = 1;
                t->bytes = (uint64_t)st.st_size;
                t->how = "repository_root";
            } else if (empty) {
                snprintf(why, sizeof why, "the profiler collected no trace events (empty "
                         "trace) in %d attempt%s", a + 1, a ? "s" : "");
                retry = 1;
            } else {
                snprintf(why, sizeof why,
                         "the server answered but delivered no profile: no XSpace in the "
                         "response (it ignores emit_xspace) and nothing saved as %.500s (such a "
                         "server saves <repository_root>/<session_id>/<host>.xplane.pb on "
                         "its own filesystem; run xpview where the job's files are, or "
                         "share that directory)", t->path);
            }
        } else {
            snprintf(why, sizeof why, "%s", gerr);
            generic = !grpc_answer;
            retry = rc == XPV_GRPC_CONNECT || (rc == XPV_GRPC_STATUS && gs == 14);
        }
        xpv_buf_free(&p.rest);
        if (!t->ok) unlink(tmp);
        if (t->ok || !retry) break;
        /* Pause before another attempt, but never past the deadline. */
        int64_t left = j->deadline - xpv_now_ms();
        if (a + 1 < max_attempts && left > 0) {
            int64_t ms = left < 500 ? left : 500;
            struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    free(fbuf);
    if (!t->ok) {
        snprintf(t->err, sizeof t->err, "%.299s: %.880s", t->addr, why);
        if (generic)
            snprintf(t->pub_err, sizeof t->pub_err,
                     "%.299s: could not reach a gRPC profiler server there (nothing listening, "
                     "unreachable, no answer in time, or not a profiler server; the xpview "
                     "server's log has the details)", t->addr);
        else
            snprintf(t->pub_err, sizeof t->pub_err, "%s", t->err);
    }
    return NULL;
}

int xpv_capture_run(const char *logdir, const char *run, xpv_capture_target *t, size_t n,
                    const xpv_capture_opts *o) {
    int64_t deadline = xpv_now_ms() + (int64_t)xpv_capture_timeout(o);
    job *jobs = xpv_xcalloc(n ? n : 1, sizeof *jobs);
    pthread_t *th = xpv_xcalloc(n ? n : 1, sizeof *th);
    int *started = xpv_xcalloc(n ? n : 1, sizeof *started);
    for (size_t i = 0; i < n; i++) {
        t[i].ok = 0;
        t[i].err[0] = '\0';
        t[i].pub_err[0] = '\0';
        t[i].attempts = 0;
        jobs[i] = (job){logdir, run, &t[i], o, deadline};
        started[i] = pthread_create(&th[i], NULL, capture_one, &jobs[i]) == 0;
        if (!started[i]) capture_one(&jobs[i]);
    }
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        if (started[i]) pthread_join(th[i], NULL);
        if (!t[i].ok) failed++;
    }
    if ((size_t)failed == n) {
        char dir[4400];
        snprintf(dir, sizeof dir, "%s/plugins/profile/%s", logdir, run);
        rmdir(dir);                                 /* only when empty */
    }
    free(started);
    free(th);
    free(jobs);
    return failed;
}
