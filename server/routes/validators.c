/*
 * validators.c - ETag and Last-Modified of data answers, from the host
 * files' identities, the binary and the query; 304 on a match.
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
#include "legacy_serve.h"
#include "loader.h"
#include "version.h"

/* ==== Validators (ETag, Last-Modified) ================================ */

/* Whether If-None-Match `inm` lists `etag` (or is "*"). */
static int inm_matches(const char *inm, const char *etag) {
    if (!inm || !etag) return 0;
    while (*inm == ' ') inm++;
    return !strcmp(inm, "*") || strstr(inm, etag) != NULL;
}

/* Seconds since the epoch of an HTTP-date (RFC 9110 5.6.7: IMF-fixdate or
 * the obsolete RFC 850 and asctime forms, always GMT), or -1. */
int64_t parse_http_date(const char *s) {
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
int set_validators(xpv_app *a, xpv_response *r, const char *route,
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
