/*
 * host_check.c - the Host header allow-list (see host_check.h).
 */
#include "host_check.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"

/* Append `s` (`len` bytes, lower-cased, one trailing dot dropped). */
static void add_name(xpv_host_policy *p, const char *s, size_t len) {
    while (len && isspace((unsigned char)*s)) s++, len--;
    while (len && isspace((unsigned char)s[len - 1])) len--;
    if (len && s[len - 1] == '.') len--;
    if (!len) return;
    char *n = xpv_xmalloc(len + 1);
    for (size_t i = 0; i < len; i++) n[i] = (char)tolower((unsigned char)s[i]);
    n[len] = 0;
    p->names = xpv_xrealloc(p->names, (p->n + 1) * sizeof *p->names);
    p->names[p->n++] = n;
}

void xpv_host_policy_init(xpv_host_policy *p, const char *bind_host, const char *allowed) {
    memset(p, 0, sizeof *p);
    if (bind_host && *bind_host) add_name(p, bind_host, strlen(bind_host));
    char hn[256];
    if (gethostname(hn, sizeof hn - 1) == 0) {
        hn[sizeof hn - 1] = 0;
        add_name(p, hn, strlen(hn));
    }
    for (const char *s = allowed; s && *s;) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        add_name(p, s, len);
        s += len + (e ? 1 : 0);
    }
}

void xpv_host_policy_free(xpv_host_policy *p) {
    for (size_t i = 0; i < p->n; i++) free(p->names[i]);
    free(p->names);
    memset(p, 0, sizeof *p);
}

static int all_digits(const char *s, size_t n) {
    if (!n || n > 5) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i])) return 0;
    return 1;
}

int xpv_host_allowed(const xpv_host_policy *p, const char *h) {
    if (!h) return 1;
    size_t len = strlen(h);
    if (!len || len > 255) return 0;
    char name[256];
    if (h[0] == '[') { /* [IPv6]:port */
        const char *e = strchr(h, ']');
        if (!e || (e[1] && (e[1] != ':' || !all_digits(e + 2, strlen(e + 2))))) return 0;
        size_t n = (size_t)(e - h - 1);
        memcpy(name, h + 1, n);
        name[n] = 0;
        struct in6_addr a6;
        return inet_pton(AF_INET6, name, &a6) == 1;
    }
    const char *colon = strrchr(h, ':');
    size_t n = len;
    if (colon) {
        if (!all_digits(colon + 1, strlen(colon + 1))) return 0;
        n = (size_t)(colon - h);
    }
    for (size_t i = 0; i < n; i++) name[i] = (char)tolower((unsigned char)h[i]);
    if (n && name[n - 1] == '.') n--;
    name[n] = 0;
    if (!n) return 0;
    struct in_addr a4;
    if (inet_pton(AF_INET, name, &a4) == 1) return 1;
    if (!strcmp(name, "localhost") || (n > 10 && !strcmp(name + n - 10, ".localhost")))
        return 1;
    for (size_t i = 0; i < p->n; i++) {
        const char *a = p->names[i];
        size_t an = strlen(a);
        if (!strcmp(a, "*") || !strcmp(a, name)) return 1;
        /* ".example.com": the name itself and any subdomain */
        if (a[0] == '.' && ((n > an && !strcmp(name + n - an, a)) ||
                            (n == an - 1 && !strcmp(name, a + 1))))
            return 1;
    }
    return 0;
}
