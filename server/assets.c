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
