/*
 * app_fixture.h - server apps for the tests that drive routes or sockets:
 * one on a given logdir, or one on a temporary logdir holding one run of
 * one small host file.  Header-only.
 */
#ifndef XPV_APP_FIXTURE_H
#define XPV_APP_FIXTURE_H

#include <stdio.h>

#include "routes.h"
#include "srv_fixture.h"
#include "testutil.h"

/* An app serving `logdir` (no path prefix, default scan interval) with a
 * cache of `cache_bytes`, or NULL when xpv_app_new fails. */
__attribute__((unused)) static xpv_app *fx_app_open(const char *logdir, uint64_t cache_bytes) {
    xpv_app_config cfg = {logdir, 0, "", 0, cache_bytes, 0};
    xpv_err err;
    return xpv_app_new(&cfg, &err);
}

/* An app serving $XPV_SHARED/testdata/real/<sub> (all of it when `sub` is
 * NULL) with a 256 MiB cache, or NULL when xpv_app_new fails.  Call after
 * TU_SKIP_NO_SHARED. */
__attribute__((unused)) static xpv_app *fx_app_real(const char *sub) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/testdata/real%s%s", tu_shared_dir(), sub ? "/" : "",
             sub ? sub : "");
    return fx_app_open(dir, 256u << 20);
}

/* A new temporary logdir (*root, malloc'ed: tu_rmrf and free it) whose run
 * `run` holds h.xplane.pb with the planes `planes` (3 events each), and an
 * app serving it with a 64 MiB cache; fails the test when either fails. */
__attribute__((unused)) static xpv_app *fx_app_one_run(char **root, const char *run,
                                                       const char *const *planes) {
    *root = tu_mkdtemp();
    char d[4096];
    snprintf(d, sizeof d, "%s/plugins/profile/%s", *root, run);
    fx_host_file(d, "h.xplane.pb", planes, 3);
    xpv_app *app = fx_app_open(*root, 64u << 20);
    assert_non_null(app);
    return app;
}

#endif
