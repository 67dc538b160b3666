/*
 * util.c - see util.h.
 */
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"

const char *xpv_err_text(int code) {
    static const struct {
        int code;
        const char *text;
    } table[] = {
        {XPV_E_BAD_REQUEST, "bad request"},
        {XPV_E_FORBIDDEN, "forbidden"},
        {XPV_E_NOT_FOUND, "not found"},
        {XPV_E_METHOD, "method not allowed"},
        {XPV_E_CONFLICT, "already running"},
        {XPV_E_TOO_LARGE, "too large"},
        {XPV_E_URI_TOO_LONG, "request URI too long"},
        {XPV_E_BAD_PROFILE, "profile does not decode"},
        {XPV_E_HEADERS_TOO_LARGE, "request headers too large"},
        {XPV_E_INTERNAL, "internal error"},
        {XPV_E_BUSY, "busy: retry later"},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].code == code) return table[i].text;
    return "error";
}

void xpv_err_clear(xpv_err *e) {
    e->status = 0;
    e->msg[0] = '\0';
    e->file[0] = '\0';
    e->offset = -1;
}

int xpv_err_set(xpv_err *e, int status, const char *fmt, ...) {
    va_list ap;
    e->status = status;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}


int64_t xpv_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec xpv_deadline_in_ms(int64_t ms) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    int64_t ns = (int64_t)t.tv_nsec + ms % 1000 * 1000000;
    t.tv_sec += (time_t)(ms / 1000 + ns / 1000000000);
    t.tv_nsec = (long)(ns % 1000000000);
    return t;
}

uint64_t xpv_hash_seed = 0x9e3779b97f4a7c15ULL;

__attribute__((constructor)) static void init_hash_seed(void) {
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        v = (uint64_t)ts.tv_nsec * 0x2545f4914f6cdd1dULL ^ (uint64_t)getpid() << 32 ^
            (uint64_t)(uintptr_t)&v;
    }
    xpv_hash_seed = v | 1;
}

uint64_t xpv_hash64_seeded(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ULL ^ xpv_hash_seed;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ULL;
    }
    h ^= xpv_hash_seed;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

uint64_t xpv_hash64(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

int xpv_parse_u64_strict(const char *s, uint64_t max, uint64_t *out) {
    if (!s || !*s) return 0;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return 0;
        unsigned d = (unsigned)(*p - '0');
        if (d > max || v > (max - d) / 10) return 0;   /* v * 10 + d > max */
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

int xpv_parse_decimal_strict(const char *s, double max_abs, double *out) {
    if (!s) return 0;
    const char *p = s;
    if (*p == '-') p++;
    size_t ndig = 0, nfrac = 0;
    while (*p >= '0' && *p <= '9') p++, ndig++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') p++, nfrac++;
        if (!nfrac) return 0;
    }
    if (!ndig || *p || ndig > 20) return 0;
    double v = strtod(s, NULL);
    if (!(v <= max_abs && v >= -max_abs)) return 0;
    *out = v;
    return 1;
}
