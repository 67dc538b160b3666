/*
 * assets.c - lookup in the embedded web/ table (see assets.h).
 */
#include "assets.h"

#include <string.h>

const xpv_asset *xpv_asset_find(const char *path) {
    size_t lo = 0, hi = xpv_nassets;
    if (!path) return NULL;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(xpv_assets[mid].path, path);
        if (c == 0) return &xpv_assets[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const xpv_asset *xpv_asset_find_versioned(const char *path, int *immutable) {
    *immutable = 0;
    if (!path || strncmp(path, "v/", 2) != 0) return xpv_asset_find(path);
    const char *ver = path + 2, *slash = strchr(ver, '/');
    size_t n = slash ? (size_t)(slash - ver) : 0;
    if (!n || n > 64 || strspn(ver, "0123456789abcdef") != n) return NULL;
    if (!strcmp(slash + 1, "index.html")) return NULL;
    const xpv_asset *as = xpv_asset_find(slash + 1);
    if (as && n == strlen(xpv_assets_version) &&
        !memcmp(ver, xpv_assets_version, n))
        *immutable = 1;
    return as;
}
