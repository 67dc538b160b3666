/*
 * host_check.h - which Host headers the server answers (DNS rebinding).
 *
 * A page of http://attacker.example:6006 whose name the attacker later
 * points at 127.0.0.1 is same-origin with the server in the browser: it
 * could read every run and the capture token.  The browser still sends
 * "Host: attacker.example:6006", so answering only the names the server is
 * known by stops it: IP literals (a page can only be same-origin with an
 * address by being served from it), "localhost" and *.localhost (never
 * resolved through DNS by browsers), the machine's own host name, the
 * name given to --host, and the names of --allowed_hosts (a reverse
 * proxy's public name).  A request without a Host header (HTTP/1.0 tools)
 * is answered: only browsers are the threat, and they always send one.
 */
#ifndef XPV_HOST_CHECK_H
#define XPV_HOST_CHECK_H

#include <stddef.h>

typedef struct xpv_host_policy {
    char **names;       /* lower case; ".example.com" also matches its
                         * subdomains; "*" matches every name */
    size_t n;
} xpv_host_policy;

/* The policy for a server bound to `bind_host` (may be NULL or an
 * address) with the comma-separated `allowed` (may be NULL) and the
 * machine's host name.  Free with xpv_host_policy_free. */
void xpv_host_policy_init(xpv_host_policy *p, const char *bind_host, const char *allowed);
void xpv_host_policy_free(xpv_host_policy *p);

/* Whether a request with this Host header value (NULL: none) is answered. */
int xpv_host_allowed(const xpv_host_policy *p, const char *host_header);

#endif
