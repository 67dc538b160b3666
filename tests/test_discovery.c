/*
 * test_discovery.c - logdir scan (server/discovery.c): nested TB runs, run
 * naming and order, host suffixes, junk, symlinks escaping the logdir,
 * loops, rescans.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "discovery.h"
#include "srv_fixture.h"
#include "testutil.h"

static const char *const cpu[] = {"/host:CPU", NULL};

static void touch(const char *root, const char *rel, const char *content) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    char d[4096];
    snprintf(d, sizeof d, "%s", p);
    *strrchr(d, '/') = '\0';
    fx_mkdirs(d);
    fx_write(p, content, strlen(content));
}

static void host(const char *root, const char *rundir, const char *file) {
    char d[4096];
    snprintf(d, sizeof d, "%s/%s", root, rundir);
    fx_host_file(d, file, cpu, 1);
}

static void test_discovery__layout(void **state) {
    (void)state;
    char *root = tu_mkdtemp();
    host(root, "plugins/profile/2024_01_01", "b.xplane.pb");
    host(root, "plugins/profile/2024_01_01", "a.xplane.pb");
    host(root, "plugins/profile/2024_01_02", "h.xplane.pb.gz");
    host(root, "train/plugins/profile/2024_02_01", "w1.xplane.pb");
    host(root, "train/eval/plugins/profile/r", "x.xplane.pb");
    /* .pb and .pb.gz twins: one host, the plain file wins. */
    host(root, "train/eval/plugins/profile/r", "x.xplane.pb.gz");
    /* Not profiles. */
    touch(root, "plugins/profile/2024_01_01/a.trace.json.gz", "x");
    touch(root, "plugins/profile/2024_01_01/.xplane.pb", "x");
    touch(root, "plugins/profile/2024_01_01/readme.txt", "x");
    touch(root, "events.out.tfevents.1", "x");
    fx_mkdirs(root);
    char p[4096];
    snprintf(p, sizeof p, "%s/plugins/profile/empty_run", root);
    fx_mkdirs(p);
    snprintf(p, sizeof p, "%s/other/plugins/notprofile/r", root);
    fx_mkdirs(p);
    /* A directory named like a host file is not a host. */
    snprintf(p, sizeof p, "%s/plugins/profile/2024_01_01/dir.xplane.pb", root);
    fx_mkdirs(p);

    char err[256];
    xpv_logdir *ld = xpv_logdir_new(root, 0, err, sizeof err);
    assert_non_null(ld);
    xpv_runlist *rl = xpv_logdir_scan(ld, 0);
    assert_int_equal(rl->nruns, 4);
    /* Descending by name. */
    assert_string_equal(rl->runs[0].name, "train/eval/r");
    assert_string_equal(rl->runs[1].name, "train/2024_02_01");
    assert_string_equal(rl->runs[2].name, "2024_01_02");
    assert_string_equal(rl->runs[3].name, "2024_01_01");

    const xpv_run *r = xpv_runlist_find(rl, "2024_01_01");
    assert_non_null(r);
    assert_int_equal(r->nhosts, 2);
    assert_string_equal(r->hosts[0].name, "a");
    assert_string_equal(r->hosts[1].name, "b");
    assert_string_equal(r->hosts[0].rel, "plugins/profile/2024_01_01/a.xplane.pb");
    assert_true(r->hosts[0].size > 0);
    assert_int_equal(r->hosts[0].gz, 0);

    r = xpv_runlist_find(rl, "2024_01_02");
    assert_int_equal(r->nhosts, 1);
    assert_string_equal(r->hosts[0].name, "h");
    assert_int_equal(r->hosts[0].gz, 1);

    r = xpv_runlist_find(rl, "train/eval/r");
    assert_int_equal(r->nhosts, 1);
    assert_int_equal(r->hosts[0].gz, 0);
    assert_non_null(xpv_run_find_host(r, "x"));
    assert_null(xpv_run_find_host(r, "y"));
    assert_string_equal(r->hosts[0].rel, "train/eval/plugins/profile/r/x.xplane.pb");

    assert_null(xpv_runlist_find(rl, "empty_run"));
    assert_null(xpv_runlist_find(rl, "../2024_01_01"));
    assert_null(xpv_runlist_find(rl, NULL));
    xpv_runlist_release(rl);
    xpv_logdir_free(ld);
    tu_rmrf(root);
    free(root);
}

static void test_discovery__symlinks(void **state) {
    (void)state;
    char *root = tu_mkdtemp();
    char *outside = tu_mkdtemp();
    char p[4096], t[4096];
    host(outside, "plugins/profile/secret", "s.xplane.pb");
    host(outside, ".", "loose.xplane.pb");
    host(root, "real/plugins/profile/r1", "h.xplane.pb");

    /* A TB run symlinked from outside the logdir: not followed. */
    snprintf(p, sizeof p, "%s/escape", root);
    assert_int_equal(symlink(outside, p), 0);
    /* A host file symlinked from outside: not listed. */
    snprintf(p, sizeof p, "%s/real/plugins/profile/r1/evil.xplane.pb", root);
    snprintf(t, sizeof t, "%s/loose.xplane.pb", outside);
    assert_int_equal(symlink(t, p), 0);
    /* A symlink inside the logdir to another part of it: followed. */
    snprintf(p, sizeof p, "%s/alias", root);
    snprintf(t, sizeof t, "%s/real", root);
    assert_int_equal(symlink(t, p), 0);
    /* Loops: a directory linking to its ancestor. */
    snprintf(p, sizeof p, "%s/real/loop", root);
    assert_int_equal(symlink(root, p), 0);

    char err[256];
    xpv_logdir *ld = xpv_logdir_new(root, 0, err, sizeof err);
    assert_non_null(ld);
    xpv_runlist *rl = xpv_logdir_scan(ld, 0);
    /* "alias" and "real" are the same directory: visited once. */
    assert_int_equal(rl->nruns, 1);
    const xpv_run *r = &rl->runs[0];
    assert_true(!strcmp(r->name, "real/r1") || !strcmp(r->name, "alias/r1"));
    assert_int_equal(r->nhosts, 1);
    assert_string_equal(r->hosts[0].name, "h");
    for (size_t i = 0; i < rl->nruns; i++)
        assert_null(strstr(rl->runs[i].name, "secret"));
    xpv_runlist_release(rl);
    xpv_logdir_free(ld);
    tu_rmrf(root);
    tu_rmrf(outside);
    free(root);
    free(outside);
}

/* A TB run whose `plugins` (or `plugins/profile`) directory is a symlink
 * out of the logdir: its runs are not listed (the last path component is
 * a real directory there, so checking only it is not enough). */
static void test_discovery__symlinked_plugins(void **state) {
    (void)state;
    char *root = tu_mkdtemp();
    char *outside = tu_mkdtemp();
    char p[4096], t[4096];
    host(outside, "plugins/profile/secret", "s.xplane.pb");
    host(outside, "x/profile/secret2", "s.xplane.pb");
    host(root, "ok/plugins/profile/r1", "h.xplane.pb");
    /* logdir/plugins -> outside/plugins */
    snprintf(p, sizeof p, "%s/plugins", root);
    snprintf(t, sizeof t, "%s/plugins", outside);
    assert_int_equal(symlink(t, p), 0);
    /* logdir/tb/plugins -> outside/x (holding profile/secret2) */
    snprintf(p, sizeof p, "%s/tb", root);
    fx_mkdirs(p);
    snprintf(p, sizeof p, "%s/tb/plugins", root);
    snprintf(t, sizeof t, "%s/x", outside);
    assert_int_equal(symlink(t, p), 0);
    /* logdir/tb2/plugins/profile -> outside/plugins/profile */
    snprintf(p, sizeof p, "%s/tb2/plugins", root);
    fx_mkdirs(p);
    snprintf(p, sizeof p, "%s/tb2/plugins/profile", root);
    snprintf(t, sizeof t, "%s/plugins/profile", outside);
    assert_int_equal(symlink(t, p), 0);

    char err[256];
    xpv_logdir *ld = xpv_logdir_new(root, 0, err, sizeof err);
    assert_non_null(ld);
    xpv_runlist *rl = xpv_logdir_scan(ld, 0);
    assert_int_equal(rl->nruns, 1);
    assert_string_equal(rl->runs[0].name, "ok/r1");
    for (size_t i = 0; i < rl->nruns; i++) {
        assert_null(strstr(rl->runs[i].name, "secret"));
        for (size_t j = 0; j < rl->runs[i].nhosts; j++)
            assert_null(strstr(rl->runs[i].hosts[j].path, outside));
    }
    assert_null(xpv_runlist_find(rl, "secret"));
    assert_null(xpv_runlist_find(rl, "tb/secret2"));
    assert_null(xpv_runlist_find(rl, "tb2/secret"));
    xpv_runlist_release(rl);
    xpv_logdir_free(ld);

    /* Served as a session (--logdir naming the TB run dir "tb2"): its
     * profile dir still points outside: nothing listed. */
    snprintf(p, sizeof p, "%s/tb2", root);
    ld = xpv_logdir_new(p, 0, err, sizeof err);
    if (ld) {
        rl = xpv_logdir_scan(ld, 0);
        assert_int_equal(rl->nruns, 0);
        xpv_runlist_release(rl);
        xpv_logdir_free(ld);
    }
    tu_rmrf(root);
    tu_rmrf(outside);
    free(root);
    free(outside);
}

static void test_discovery__rescan(void **state) {
    (void)state;
    char *root = tu_mkdtemp();
    char err[256];
    xpv_logdir *ld = xpv_logdir_new(root, 0, err, sizeof err);
    xpv_runlist *rl = xpv_logdir_scan(ld, 0);
    assert_int_equal(rl->nruns, 0);
    host(root, "plugins/profile/new", "h.xplane.pb");
    /* The old snapshot stays valid while a new one is taken. */
    xpv_runlist *rl2 = xpv_logdir_scan(ld, 0);
    assert_int_equal(rl->nruns, 0);
    assert_int_equal(rl2->nruns, 1);
    assert_string_equal(rl2->runs[0].name, "new");
    xpv_runlist_release(rl);
    xpv_runlist_release(rl2);

    /* Rate limiting: within the interval the snapshot is reused... */
    xpv_logdir *slow = xpv_logdir_new(root, 60000, err, sizeof err);
    rl = xpv_logdir_scan(slow, 0);
    assert_int_equal(rl->nruns, 1);
    host(root, "plugins/profile/newer", "h.xplane.pb");
    rl2 = xpv_logdir_scan(slow, 0);
    assert_ptr_equal(rl, rl2);
    xpv_runlist_release(rl2);
    /* ...unless forced. */
    rl2 = xpv_logdir_scan(slow, 1);
    assert_int_equal(rl2->nruns, 2);
    xpv_runlist_release(rl);
    xpv_runlist_release(rl2);
    xpv_logdir_free(slow);
    xpv_logdir_free(ld);
    tu_rmrf(root);
    free(root);
}

static void test_discovery__session_and_errors(void **state) {
    (void)state;
    char *root = tu_mkdtemp();
    char err[256], p[4096];
    host(root, "plugins/profile/run_x", "h2.xplane.pb");
    host(root, "plugins/profile/run_x", "h1.xplane.pb");
    snprintf(p, sizeof p, "%s/plugins/profile/run_x", root);
    xpv_logdir *ld = xpv_logdir_new_session(p, err, sizeof err);
    assert_non_null(ld);
    xpv_runlist *rl = xpv_logdir_scan(ld, 0);
    assert_int_equal(rl->nruns, 1);
    assert_string_equal(rl->runs[0].name, "run_x");
    assert_int_equal(rl->runs[0].nhosts, 2);
    assert_string_equal(rl->runs[0].hosts[0].name, "h1");
    xpv_runlist_release(rl);
    xpv_logdir_free(ld);

    snprintf(p, sizeof p, "%s/does/not/exist", root);
    assert_null(xpv_logdir_new(p, 0, err, sizeof err));
    assert_non_null(strstr(err, "not a readable directory"));
    snprintf(p, sizeof p, "%s/plugins/profile/run_x/h1.xplane.pb", root);
    assert_null(xpv_logdir_new(p, 0, err, sizeof err));
    tu_rmrf(root);
    free(root);
}

/* Background rescans: requests read the snapshot and never walk the tree
 * themselves (a long interval proves no inline scan happens); a forced
 * scan still sees new runs; with a short interval they appear on their own. */
static void test_discovery__background(void **state) {
    (void)state;
    char *root = tu_mkdtemp();
    char err[256];
    host(root, "plugins/profile/r1", "h.xplane.pb");
    xpv_logdir *ld = xpv_logdir_new(root, 60000, err, sizeof err);
    assert_non_null(ld);
    assert_int_equal(xpv_logdir_start_background(ld), 0);
    xpv_runlist *rl = xpv_logdir_scan(ld, 0);
    assert_int_equal(rl->nruns, 1);
    xpv_runlist_release(rl);
    host(root, "plugins/profile/r2", "h.xplane.pb");
    for (int i = 0; i < 50; i++) {
        rl = xpv_logdir_scan(ld, 0);
        assert_int_equal(rl->nruns, 1);       /* no request-time walk */
        xpv_runlist_release(rl);
    }
    rl = xpv_logdir_scan(ld, 1);
    assert_int_equal(rl->nruns, 2);
    xpv_runlist_release(rl);
    xpv_logdir_free(ld);

    ld = xpv_logdir_new(root, 50, err, sizeof err);
    assert_non_null(ld);
    assert_int_equal(xpv_logdir_start_background(ld), 0);
    host(root, "plugins/profile/r3", "h.xplane.pb");
    size_t n = 0;
    for (int i = 0; i < 200 && n != 3; i++) {
        rl = xpv_logdir_scan(ld, 0);
        n = rl->nruns;
        xpv_runlist_release(rl);
        if (n != 3) usleep(20000);
    }
    assert_int_equal(n, 3);                   /* found by the scanner thread */
    xpv_logdir_free(ld);
    tu_rmrf(root);
    free(root);
}

/* What users point --logdir at: each form resolves to what it holds. */
static void resolve_case(const char *root, const char *rel, const char *want_rel,
                         int want_session, int want_runs) {
    char p[4096], dir[4096], err[512], want[4096];
    snprintf(p, sizeof p, "%s%s%s", root, rel[0] ? "/" : "", rel);
    int session = -1;
    int rc = xpv_logdir_resolve(p, dir, sizeof dir, &session, err, sizeof err);
    if (rc) print_message("%s: %s\n", rel, err);
    assert_int_equal(rc, 0);
    char *real = realpath(root, NULL);
    snprintf(want, sizeof want, "%s%s%s", real, want_rel[0] ? "/" : "", want_rel);
    free(real);
    assert_string_equal(dir, want);
    assert_int_equal(session, want_session);
    xpv_logdir *ld = session ? xpv_logdir_new_session(dir, err, sizeof err)
                             : xpv_logdir_new(dir, 0, err, sizeof err);
    assert_non_null(ld);
    xpv_runlist *rl = xpv_logdir_scan(ld, 0);
    assert_int_equal(rl->nruns, want_runs);
    xpv_runlist_release(rl);
    xpv_logdir_free(ld);
}

static void test_discovery__resolve_forms(void **state) {
    (void)state;
    char *root = tu_mkdtemp();
    host(root, "train/plugins/profile/r1", "h.xplane.pb");
    host(root, "train/plugins/profile/r2", "h.xplane.pb.gz");
    touch(root, "torch/run_a/w0.pt.trace.json", "[]");
    resolve_case(root, "", "", 0, 3);                            /* the logdir */
    resolve_case(root, "train", "train", 0, 2);                  /* a TB run */
    resolve_case(root, "train/plugins", "train", 0, 2);
    resolve_case(root, "train/plugins/profile", "train", 0, 2);
    resolve_case(root, "train/plugins/profile/r1", "train/plugins/profile/r1", 1, 1);
    resolve_case(root, "train/plugins/profile/r2/h.xplane.pb.gz",
                 "train/plugins/profile/r2", 1, 1);              /* one file */
    resolve_case(root, "torch/run_a", "torch/run_a", 1, 1);
    resolve_case(root, "torch/run_a/w0.pt.trace.json", "torch/run_a", 1, 1);
    char p[4096], dir[4096], err[512];
    int session;
    touch(root, "notes.txt", "x");
    snprintf(p, sizeof p, "%s/notes.txt", root);
    assert_int_equal(xpv_logdir_resolve(p, dir, sizeof dir, &session, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a directory or a profile file"));
    snprintf(p, sizeof p, "%s/missing", root);
    assert_int_equal(xpv_logdir_resolve(p, dir, sizeof dir, &session, err, sizeof err), -1);
    assert_non_null(strstr(err, "missing"));
    tu_rmrf(root);
    free(root);
}

TU_MAIN(cmocka_unit_test(test_discovery__layout),
        cmocka_unit_test(test_discovery__symlinks),
        cmocka_unit_test(test_discovery__symlinked_plugins),
        cmocka_unit_test(test_discovery__rescan),
        cmocka_unit_test(test_discovery__session_and_errors),
        cmocka_unit_test(test_discovery__resolve_forms),
        cmocka_unit_test(test_discovery__background))
