/*
 * app_fixture.h - a server app on a temporary logdir holding one run of
 * one small host file, for the tests that drive routes or sockets
 * (test_http.c, test_hostile_live.c).  Header-only.
 */
#ifndef XPV_APP_FIXTURE_H
#define XPV_APP_FIXTURE_H

#include <stdio.h>

#include "routes.h"
#include "srv_fixture.h"
#include "testutil.h"

/* A new temporary logdir (*root, malloc'ed: tu_rmrf and free it) whose run
 * `run` holds h.xplane.pb with the planes `planes` (3 events each), and an
 * app serving it with a 64 MiB cache; fails the test when either fails. */
__attribute__((unused)) static xpv_app *fx_app_one_run(char **root, const char *run,
                                                       const char *const *planes) {
    *root = tu_mkdtemp();
    char d[4096];
    snprintf(d, sizeof d, "%s/plugins/profile/%s", *root, run);
    fx_host_file(d, "h.xplane.pb", planes, 3);
    xpv_app_config cfg = {*root, 0, "", 0, 64u << 20, 0};
    xpv_err err;
    xpv_app *app = xpv_app_new(&cfg, &err);
    assert_non_null(app);
    return app;
}

#endif
