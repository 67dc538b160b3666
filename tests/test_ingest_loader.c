/*
 * test_ingest_loader.c - loading host files (ingest/loader.c): plain, gzip, empty,
 * truncated, garbage, size caps, gzip bombs (byte cap, memory budget and
 * compression ratio), decoding budgets, the real corrupt file, and
 * confinement to the logdir (symlinks swapped in after the scan), mapped
 * files (cut anywhere: the decoder's errors; truncated while mapped: zeros
 * and xpv_profile_damaged, never SIGBUS).
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "loader.h"
#include "synth.h"
#include "srv_fixture.h"
#include "testutil.h"

static const char *const planes[] = {"/host:CPU", "/device:GPU:0", NULL};

static char *path_of(const char *name) {
    static char p[4096];
    snprintf(p, sizeof p, "%s/%s", tu_tmpdir, name);
    return p;
}

static void test_loader__plain_and_gzip(void **state) {
    (void)state;
    xpv_buf b;
    xpv_buf_init(&b);
    fx_xspace(&b, planes, 10, "myhost");
    assert_int_equal(fx_write(path_of("a.xplane.pb"), b.data, b.len), 0);
    xpv_err err;
    xpv_profile *p = xpv_load_profile(path_of("a.xplane.pb"), "run/a.xplane.pb", NULL, &err);
    assert_non_null(p);
    assert_int_equal(p->nplanes, 2);
    assert_int_equal(p->nevents, 20);
    assert_int_equal(p->nhostnames, 1);
    assert_true(xpv_str_eq(p->hostnames[0], "myhost"));
    xpv_profile_free(p);

    size_t gzlen;
    unsigned char *gz = fx_gzip(b.data, b.len, &gzlen);
    assert_int_equal(fx_write(path_of("a.xplane.pb.gz"), gz, gzlen), 0);
    p = xpv_load_profile(path_of("a.xplane.pb.gz"), NULL, NULL, &err);
    assert_non_null(p);
    assert_int_equal(p->nplanes, 2);
    assert_int_equal(p->file_size, b.len);
    xpv_profile_free(p);

    /* Truncated gzip stream: incomplete, never a crash. */
    assert_int_equal(fx_write(path_of("t.xplane.pb.gz"), gz, gzlen / 2), 0);
    p = xpv_load_profile(path_of("t.xplane.pb.gz"), "t.xplane.pb.gz", NULL, &err);
    assert_null(p);
    assert_int_equal(err.status, 422);
    assert_non_null(strstr(err.msg, "t.xplane.pb.gz"));
    assert_non_null(strstr(err.msg, "incomplete"));
    assert_string_equal(err.file, "t.xplane.pb.gz");
    free(gz);
    xpv_buf_free(&b);
}

static void test_loader__empty_missing_dir(void **state) {
    (void)state;
    xpv_err err;
    assert_int_equal(fx_write(path_of("e.xplane.pb"), "", 0), 0);
    assert_null(xpv_load_profile(path_of("e.xplane.pb"), "e.xplane.pb", NULL, &err));
    assert_int_equal(err.status, 422);
    assert_non_null(strstr(err.msg, "e.xplane.pb: empty file"));

    assert_null(xpv_load_profile(path_of("missing.xplane.pb"), NULL, NULL, &err));
    assert_int_equal(err.status, 404);

    fx_mkdirs(path_of("d.xplane.pb"));
    assert_null(xpv_load_profile(path_of("d.xplane.pb"), NULL, NULL, &err));
    assert_int_equal(err.status, 422);

    /* Special files in place of a host file: 4xx naming them, never a hang
     * (FIFO: opened non-blocking) or a 500 (a UNIX socket cannot be
     * opened at all). */
    assert_int_equal(mkfifo(path_of("f.xplane.pb"), 0644), 0);
    assert_null(xpv_load_profile(path_of("f.xplane.pb"), "f.xplane.pb", NULL, &err));
    assert_int_equal(err.status, 422);
    assert_non_null(strstr(err.msg, "f.xplane.pb: not a regular file"));
    int sfd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(sfd >= 0);
    struct sockaddr_un sa = {0};
    sa.sun_family = AF_UNIX;
    const char *sp = path_of("s.xplane.pb");
    if (strlen(sp) < sizeof sa.sun_path) {
        memcpy(sa.sun_path, sp, strlen(sp) + 1);
        assert_int_equal(bind(sfd, (struct sockaddr *)&sa, sizeof sa), 0);
        assert_null(xpv_load_profile(sp, "s.xplane.pb", NULL, &err));
        assert_int_equal(err.status, 422);
        assert_non_null(strstr(err.msg, "s.xplane.pb: not a regular file"));
    }
    close(sfd);

    /* An empty gzip stream. */
    size_t gzlen;
    unsigned char *gz = fx_gzip("", 0, &gzlen);
    fx_write(path_of("eg.xplane.pb.gz"), gz, gzlen);
    free(gz);
    assert_null(xpv_load_profile(path_of("eg.xplane.pb.gz"), NULL, NULL, &err));
    assert_int_equal(err.status, 422);
    assert_non_null(strstr(err.msg, "empty"));
}

static void test_loader__truncated_and_garbage(void **state) {
    (void)state;
    xpv_buf b;
    xpv_buf_init(&b);
    fx_xspace(&b, planes, 50, "h");
    /* Cut inside the first plane: the decoder reports where. */
    fx_write(path_of("cut.xplane.pb"), b.data, b.len / 2);
    xpv_err err;
    assert_null(xpv_load_profile(path_of("cut.xplane.pb"), "r/cut.xplane.pb", NULL, &err));
    assert_int_equal(err.status, 422);
    assert_string_equal(err.file, "r/cut.xplane.pb");
    assert_true(err.offset >= 0 && (size_t)err.offset <= b.len / 2);
    assert_non_null(strstr(err.msg, "r/cut.xplane.pb"));
    assert_non_null(strstr(err.msg, "offset"));

    /* Not a protobuf at all (a JSON trace renamed). */
    const char *junk = "{\"traceEvents\": []}\n";
    fx_write(path_of("junk.xplane.pb"), junk, strlen(junk));
    assert_null(xpv_load_profile(path_of("junk.xplane.pb"), NULL, NULL, &err));
    assert_int_equal(err.status, 422);
    assert_true(err.offset >= 0);
    xpv_buf_free(&b);
}

static void test_loader__caps(void **state) {
    (void)state;
    xpv_buf b;
    xpv_buf_init(&b);
    fx_xspace(&b, planes, 100, "h");
    fx_write(path_of("big.xplane.pb"), b.data, b.len);
    xpv_load_limits lim = {b.len - 1, 1 << 20, NULL, 0};
    xpv_err err;
    assert_null(xpv_load_profile(path_of("big.xplane.pb"), NULL, &lim, &err));
    assert_int_equal(err.status, 413);
    lim.max_file = b.len;
    xpv_profile *p = xpv_load_profile(path_of("big.xplane.pb"), NULL, &lim, &err);
    assert_non_null(p);
    xpv_profile_free(p);
    xpv_buf_free(&b);

    /* A gzip bomb: 256 MiB of zeros in ~250 KB; the inflated cap stops it
     * long before the memory is spent. */
    size_t n = 256u << 20;
    char *zeros = calloc(1, n);
    size_t gzlen;
    unsigned char *gz = fx_gzip(zeros, n, &gzlen);
    free(zeros);
    assert_true(gzlen < (1u << 20));
    fx_write(path_of("bomb.xplane.pb.gz"), gz, gzlen);
    free(gz);
    lim.max_file = 4u << 20;
    lim.max_inflated = 8u << 20;
    assert_null(xpv_load_profile(path_of("bomb.xplane.pb.gz"), "bomb", &lim, &err));
    assert_int_equal(err.status, 413);
    assert_non_null(strstr(err.msg, "bomb"));
    assert_non_null(strstr(err.msg, "limit"));
}

/* 1 MiB of "0a 00" (512Ki empty planes) as `members` concatenated gzip
 * members: a tiny file whose planes would take ~100 bytes each. */
static unsigned char *empty_planes_gz(unsigned members, size_t *gzlen) {
    size_t n = 1u << 20;
    unsigned char *pl = malloc(n);
    for (size_t i = 0; i < n; i += 2) {
        pl[i] = 0x0a;
        pl[i + 1] = 0x00;
    }
    size_t ml;
    unsigned char *m = fx_gzip(pl, n, &ml);
    free(pl);
    unsigned char *out = malloc(ml * members);
    for (unsigned i = 0; i < members; i++) memcpy(out + i * ml, m, ml);
    free(m);
    *gzlen = ml * members;
    return out;
}

/* Decoding budget: counts are checked against it before anything is
 * allocated; over it is a 413 naming the file, never an abort. */
static void test_loader__decode_budget(void **state) {
    (void)state;
    size_t n = 4u << 20;                     /* 2Mi empty planes, 4 MiB */
    unsigned char *pl = malloc(n);
    for (size_t i = 0; i < n; i += 2) {
        pl[i] = 0x0a;
        pl[i + 1] = 0x00;
    }
    xpv_decode_error de;
    unsigned char *copy = malloc(n);
    memcpy(copy, pl, n);
    assert_null(xpv_decode_limited(copy, n, NULL, 64u << 20, &de));
    assert_int_equal(de.status, 413);
    assert_non_null(strstr(de.msg, "memory budget"));
    assert_non_null(strstr(de.msg, "planes"));
    /* Without a budget (or a big enough one) the same bytes decode. */
    xpv_profile *p = xpv_decode_limited(copy, n, NULL, 2048u << 20, &de);
    assert_non_null(p);
    assert_int_equal(p->nplanes, n / 2);
    xpv_profile_free(p);
    free(copy);

    /* Through the loader: 413 naming the file, for the raw file ... */
    fx_write(path_of("planes.xplane.pb"), pl, n);
    free(pl);
    xpv_load_limits lim = {XPV_DEFAULT_MAX_FILE, XPV_DEFAULT_MAX_FILE, NULL, 64u << 20};
    xpv_err err;
    assert_null(xpv_load_profile(path_of("planes.xplane.pb"), "run/planes.xplane.pb", &lim,
                                 &err));
    assert_int_equal(err.status, 413);
    assert_non_null(strstr(err.msg, "run/planes.xplane.pb"));
    assert_non_null(strstr(err.msg, "memory budget"));

    /* ... and for its gzip (16 MiB inflated, ratio ~1000:1 but under the
     * 64 MiB ratio floor: the budget stops it). */
    size_t gzlen;
    unsigned char *gz = empty_planes_gz(16, &gzlen);
    fx_write(path_of("planes.xplane.pb.gz"), gz, gzlen);
    free(gz);
    assert_null(xpv_load_profile(path_of("planes.xplane.pb.gz"), "run/planes.xplane.pb.gz",
                                 &lim, &err));
    assert_int_equal(err.status, 413);
    assert_non_null(strstr(err.msg, "run/planes.xplane.pb.gz"));
    /* A budget below the inflated size stops the inflate itself. */
    lim.max_mem = 8u << 20;
    assert_null(xpv_load_profile(path_of("planes.xplane.pb.gz"), "p.gz", &lim, &err));
    assert_int_equal(err.status, 413);
    assert_non_null(strstr(err.msg, "memory budget (--cache_mb)"));
}

/* A ratio no real profile has is refused once past the ratio floor, well
 * before the byte cap: 1 GiB of empty planes in ~1 MB. */
static void test_loader__gzip_ratio_bomb(void **state) {
    (void)state;
    size_t gzlen;
    unsigned char *gz = empty_planes_gz(1024, &gzlen);
    assert_true(gzlen < (2u << 20));
    xpv_err err;
    size_t out_len;
    xpv_err_clear(&err);
    assert_null(xpv_gunzip(gz, gzlen, 4ULL << 30, &out_len, &err));
    assert_int_equal(err.status, 413);
    assert_non_null(strstr(err.msg, "gzip bomb"));
    /* Stopped just past the floor: few compressed bytes consumed. */
    assert_true(err.offset > 0 && (uint64_t)err.offset < gzlen / 8);
    fx_write(path_of("bomb1g.xplane.pb.gz"), gz, gzlen);
    free(gz);
    xpv_load_limits lim = {XPV_DEFAULT_MAX_FILE, XPV_DEFAULT_MAX_FILE, NULL, 0};
    assert_null(xpv_load_profile(path_of("bomb1g.xplane.pb.gz"), "run/bomb1g", &lim, &err));
    assert_int_equal(err.status, 413);
    assert_non_null(strstr(err.msg, "run/bomb1g"));
    assert_non_null(strstr(err.msg, "gzip bomb"));

    /* A Chrome trace (streamed through its own inflater) follows the same
     * rule: 1 GiB of blanks after "{" in ~1 MB. */
    size_t bn = 16u << 20, bl, hl;
    char *blanks = malloc(bn);
    memset(blanks, ' ', bn);
    unsigned char *bm = fx_gzip(blanks, bn, &bl);   /* blanks only */
    blanks[0] = '{';
    unsigned char *hm = fx_gzip(blanks, bn, &hl);   /* the first member */
    free(blanks);
    unsigned char *tj = malloc(hl + bl * 63);
    memcpy(tj, hm, hl);
    for (int i = 0; i < 63; i++) memcpy(tj + hl + (size_t)i * bl, bm, bl);
    free(bm);
    free(hm);
    fx_write(path_of("bomb.pt.trace.json.gz"), tj, hl + bl * 63);
    free(tj);
    assert_null(xpv_load_profile(path_of("bomb.pt.trace.json.gz"), "run/bomb.pt.trace.json.gz",
                                 &lim, &err));
    assert_int_equal(err.status, 413);
    assert_non_null(strstr(err.msg, "run/bomb.pt.trace.json.gz"));
    assert_non_null(strstr(err.msg, "gzip bomb"));

    /* Under the floor a high ratio is fine (small profiles with few
     * distinct bytes exist): 32 MiB of empty planes inflate. */
    gz = empty_planes_gz(32, &gzlen);
    char *out = xpv_gunzip(gz, gzlen, 4ULL << 30, &out_len, &err);
    assert_non_null(out);
    assert_int_equal(out_len, 32u << 20);
    free(out);
    free(gz);
}

static void test_loader__gunzip_concatenated(void **state) {
    (void)state;
    size_t l1, l2, out_len;
    unsigned char *a = fx_gzip("hello ", 6, &l1), *b = fx_gzip("world", 5, &l2);
    unsigned char *both = malloc(l1 + l2);
    memcpy(both, a, l1);
    memcpy(both + l1, b, l2);
    xpv_err err;
    xpv_err_clear(&err);
    char *out = xpv_gunzip(both, l1 + l2, 100, &out_len, &err);
    assert_non_null(out);
    assert_int_equal(out_len, 11);
    assert_memory_equal(out, "hello world", 11);
    free(out);
    /* The cap counts the whole output. */
    assert_null(xpv_gunzip(both, l1 + l2, 10, &out_len, &err));
    assert_int_equal(err.status, 413);
    free(a);
    free(b);
    free(both);
}

static void test_loader__real_files(void **state) {
    (void)state;
    TU_SKIP_NO_SHARED();
    char **bad = tu_real_files("corrupt", ".xplane.pb");
    assert_non_null(bad[0]);
    for (char **f = bad; *f; f++) {
        xpv_err err;
        assert_null(xpv_load_profile(*f, "corrupt.xplane.pb", NULL, &err));
        assert_int_equal(err.status, 422);
        assert_string_equal(err.file, "corrupt.xplane.pb");
        assert_true(err.offset >= 0);
        assert_non_null(strstr(err.msg, "offset"));
        assert_non_null(strstr(err.msg, "corrupt.xplane.pb"));
        print_message("corrupt file: %s\n", err.msg);
    }
    tu_free_list(bad);

    char **all = tu_real_xplanes();
    int ok = 0;
    for (char **f = all; *f; f++) {
        xpv_err err;
        xpv_profile *prof = xpv_load_profile(*f, NULL, NULL, &err);
        if (!prof) fail_msg("%s", err.msg);
        assert_true(prof->nplanes > 0);
        xpv_profile_free(prof);
        ok++;
    }
    assert_true(ok > 0);
    tu_free_list(all);
}

/* The scan (discovery.c) saw a regular file inside the logdir; by the time
 * it is loaded, the file - or a directory above it - has been swapped for a
 * symlink to a profile outside.  With lim.root set the load is refused
 * (403, naming the file); symlinks that stay inside keep working. */
static void test_loader__confined_to_root(void **state) {
    (void)state;
    char logdir[1024], p[2048], q[2048], *real;
    xpv_err err;
    snprintf(p, sizeof p, "%s/logdir/run", tu_tmpdir);
    fx_host_file(p, "a.xplane.pb", planes, 2);
    snprintf(p, sizeof p, "%s/outside", tu_tmpdir);
    fx_host_file(p, "secret.xplane.pb", planes, 7);
    snprintf(p, sizeof p, "%s/logdir", tu_tmpdir);
    real = realpath(p, NULL);
    assert_non_null(real);
    snprintf(logdir, sizeof logdir, "%s", real);
    free(real);
    xpv_load_limits lim = {XPV_DEFAULT_MAX_FILE, XPV_DEFAULT_MAX_FILE, logdir, 0};

    /* Before the swap: loads; an inside symlink resolves and loads too. */
    snprintf(p, sizeof p, "%s/run/a.xplane.pb", logdir);
    xpv_profile *prof = xpv_load_profile(p, "run/a.xplane.pb", &lim, &err);
    assert_non_null(prof);
    xpv_profile_free(prof);
    snprintf(q, sizeof q, "%s/run/in.xplane.pb", logdir);
    assert_int_equal(symlink("a.xplane.pb", q), 0);
    prof = xpv_load_profile(q, "run/in.xplane.pb", &lim, &err);
    assert_non_null(prof);
    xpv_profile_free(prof);

    /* The file is swapped for a symlink to outside the logdir. */
    snprintf(q, sizeof q, "%s/run/a.xplane.pb.old", logdir);
    assert_int_equal(rename(p, q), 0);
    snprintf(q, sizeof q, "%s/outside/secret.xplane.pb", tu_tmpdir);
    assert_int_equal(symlink(q, p), 0);
    assert_null(xpv_load_profile(p, "run/a.xplane.pb", &lim, &err));
    assert_int_equal(err.status, 403);
    assert_string_equal(err.file, "run/a.xplane.pb");
    assert_non_null(strstr(err.msg, "run/a.xplane.pb"));
    assert_non_null(strstr(err.msg, "outside the logdir"));
    print_message("swapped file: %s\n", err.msg);
    /* Unconfined (the CLI's `xpview decode FILE`) it would be followed:
     * the limit is what refuses it. */
    prof = xpv_load_profile(p, NULL, NULL, &err);
    assert_non_null(prof);
    assert_int_equal(prof->nevents, 14);
    xpv_profile_free(prof);

    /* A directory above the file swapped for a symlink to outside. */
    snprintf(p, sizeof p, "%s/run2", logdir);
    snprintf(q, sizeof q, "%s/outside", tu_tmpdir);
    assert_int_equal(symlink(q, p), 0);
    snprintf(p, sizeof p, "%s/run2/secret.xplane.pb", logdir);
    assert_null(xpv_load_profile(p, "run2/secret.xplane.pb", &lim, &err));
    assert_int_equal(err.status, 403);
    assert_non_null(strstr(err.msg, "outside the logdir"));

    /* The race after realpath(): the walk follows no symlink at all, even
     * one that points inside, and no "..". */
    assert_int_equal(xpv_open_beneath(logdir, "run/in.xplane.pb", "in", &err), -1);
    assert_int_equal(err.status, 403);
    assert_non_null(strstr(err.msg, "symlink"));
    assert_int_equal(xpv_open_beneath(logdir, "run2/secret.xplane.pb", "s", &err), -1);
    assert_int_equal(err.status, 403);
    assert_int_equal(xpv_open_beneath(logdir, "run/../run/in.xplane.pb", "d", &err), -1);
    assert_int_equal(err.status, 403);
    assert_int_equal(xpv_open_beneath(logdir, "run/missing.xplane.pb", "m", &err), -1);
    assert_int_equal(err.status, 404);
    int fd = xpv_open_beneath(logdir, "run/a.xplane.pb.old", "old", &err);
    assert_true(fd >= 0);
    close(fd);

    /* Gone after the scan: 404, not a crash. */
    snprintf(p, sizeof p, "%s/run/gone.xplane.pb", logdir);
    assert_null(xpv_load_profile(p, "run/gone.xplane.pb", &lim, &err));
    assert_int_equal(err.status, 404);
}

/* Files are mapped now: a file cut anywhere fails as the decoder says for
 * the same bytes read into memory (offset and reason), whatever the cut. */
static void test_loader__mapped_cuts_as_read(void **state) {
    (void)state;
    xpv_buf b;
    xpv_buf_init(&b);
    fx_xspace(&b, planes, 400, "h");
    int failed = 0;
    for (size_t cut = 1; cut < b.len; cut += b.len / 37 + 1) {
        fx_write(path_of("cuts.xplane.pb"), b.data, cut);
        xpv_err err;
        xpv_profile *p = xpv_load_profile(path_of("cuts.xplane.pb"), "cuts.xplane.pb", NULL, &err);
        void *copy = malloc(cut);
        memcpy(copy, b.data, cut);
        xpv_decode_error de;
        xpv_profile *q = xpv_decode(copy, cut, NULL, &de);
        assert_int_equal(p != NULL, q != NULL);
        if (p) {
            assert_true(p->nevents == q->nevents);
            assert_int_equal(xpv_profile_damaged(p), 0);
        } else {
            failed++;
            assert_int_equal(err.status, 422);
            assert_true((uint64_t)err.offset == de.offset);
            /* The loader names a file cut inside a record as incomplete,
             * else it gives the decoder's reason. */
            assert_true(strstr(err.msg, de.msg) || strstr(err.msg, "incomplete: the file ends"));
        }
        xpv_profile_free(p);
        xpv_profile_free(q);
        free(copy);
    }
    assert_true(failed > 10);
    xpv_buf_free(&b);
}

/* Every event stat of `p` decoded (touches every byte the model points
 * to); returns how many. */
static uint64_t touch_stats(const xpv_profile *p) {
    uint64_t n = 0;
    for (uint32_t i = 0; i < p->nplanes; i++) {
        const xpv_plane *pl = &p->planes[i];
        for (uint32_t l = 0; l < pl->nlines; l++)
            for (uint32_t e = 0; e < pl->lines[l].nevents; e++) {
                xpv_stat_iter it;
                xpv_stat st;
                xpv_stat_iter_init(&it, pl, &pl->lines[l], &pl->lines[l].events[e]);
                while (xpv_stat_next(&it, &st)) n++;
            }
    }
    return n;
}

/* A mapped profile whose file is truncated by someone else afterwards:
 * its lost bytes read as zeros (no SIGBUS), and it says it is damaged. */
static void test_loader__truncated_while_mapped(void **state) {
    (void)state;
    xpv_synth_opts o = {0};
    o.size_bytes = 400 * 1000;
    o.hosts = 1;
    xpv_synth_defaults(&o);
    xpv_buf b;
    xpv_buf_init(&b);
    assert_int_equal(xpv_synth_host(&o, 0, &b), 0);
    assert_true(b.len > 16 * 4096);
    fx_write(path_of("shrinks.xplane.pb"), b.data, b.len);
    xpv_err err;
    xpv_profile *p = xpv_load_profile(path_of("shrinks.xplane.pb"), NULL, NULL, &err);
    assert_non_null(p);
    uint64_t all = touch_stats(p);
    assert_true(all > 0);
    assert_int_equal(xpv_profile_damaged(p), 0);
    assert_int_equal(truncate(path_of("shrinks.xplane.pb"), 4096), 0);
    uint64_t left = touch_stats(p);
    assert_true(left < all);
    assert_int_equal(xpv_profile_damaged(p), 1);
    xpv_profile_free(p);
    /* The slot is free again: a new load is not damaged. */
    fx_write(path_of("shrinks.xplane.pb"), b.data, b.len);
    p = xpv_load_profile(path_of("shrinks.xplane.pb"), NULL, NULL, &err);
    assert_non_null(p);
    assert_true(touch_stats(p) == all);
    assert_int_equal(xpv_profile_damaged(p), 0);
    xpv_profile_free(p);
    xpv_buf_free(&b);
}

/* A mapped profile whose file is rewritten in place (same inode, same size)
 * with bytes whose stat lengths point far past the mapping (issue 26, item
 * 3: the iterator trusted the lengths the decoder had checked and read
 * past the mapping): every stat read stays inside the line's bytes, and
 * the profile says it changed. */
static void test_loader__rewritten_while_mapped(void **state) {
    (void)state;
    xpv_synth_opts o = {0};
    o.size_bytes = 200 * 1000;
    o.hosts = 1;
    xpv_synth_defaults(&o);
    xpv_buf b;
    xpv_buf_init(&b);
    assert_int_equal(xpv_synth_host(&o, 0, &b), 0);
    const char *path = path_of("rewritten.xplane.pb");
    fx_write(path, b.data, b.len);
    xpv_err err;
    xpv_profile *p = xpv_load_profile(path, NULL, NULL, &err);
    assert_non_null(p);
    assert_true(touch_stats(p) > 0);
    assert_int_equal(xpv_profile_changed(p), 0);
    /* The last event with stats: its stats' length becomes 2^24 - 1 and
     * every byte after it an empty stat (field 4, length 0), so a reader
     * that trusts the length walks on past the end of the file. */
    const uint8_t *at = NULL;
    const xpv_plane *apl = NULL;
    const xpv_line *aln = NULL;
    const xpv_event *aev = NULL;
    for (uint32_t i = 0; i < p->nplanes; i++)
        for (uint32_t l = 0; l < p->planes[i].nlines; l++) {
            const xpv_line *ln = &p->planes[i].lines[l];
            for (uint32_t e = 0; e < ln->nevents; e++)
                if (ln->events[e].wire != XPV_NO_STATS && ln->wire + ln->events[e].wire > at) {
                    at = ln->wire + ln->events[e].wire;
                    apl = &p->planes[i], aln = ln, aev = &ln->events[e];
                }
        }
    assert_non_null(at);
    size_t off = (size_t)(at - (const uint8_t *)p->buf);
    assert_true(off + 8 < b.len);
    uint8_t *junk = malloc(b.len - off);
    for (size_t i = 0; i < b.len - off; i += 2) {
        junk[i] = 0x22;
        if (i + 1 < b.len - off) junk[i + 1] = 0x00;
    }
    memcpy(junk, (const uint8_t[]){0xff, 0xff, 0xff, 0x07}, 4);
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, junk, b.len - off, (off_t)off), (ssize_t)(b.len - off));
    close(fd);
    free(junk);
    touch_stats(p);
    /* its length runs past its line's bytes: it has no stats */
    xpv_stat_iter it;
    xpv_stat st;
    xpv_stat_iter_init(&it, apl, aln, aev);
    uint64_t nst = 0;
    while (xpv_stat_next(&it, &st)) nst++;
    assert_int_equal(nst, 0);
    assert_int_equal(xpv_profile_changed(p), 1);
    assert_int_equal(xpv_profile_damaged(p), 0);
    xpv_profile_free(p);
    xpv_buf_free(&b);
}

/* Admission estimates (issue 17): a mapped plain file counts its model,
 * not its bytes (page cache); a gzipped one counts its inflated buffer
 * (the gzip trailer's size) and that buffer's model; the loaded profiles'
 * mem_size counts the same way. */
static void test_loader__heap_estimate(void **state) {
    (void)state;
    xpv_synth_opts o = {0};
    o.size_bytes = 2 * 1000 * 1000;
    o.hosts = 1;
    xpv_synth_defaults(&o);
    xpv_buf b;
    xpv_buf_init(&b);
    assert_int_equal(xpv_synth_host(&o, 0, &b), 0);
    assert_int_equal(fx_write(path_of("est.xplane.pb"), b.data, b.len), 0);
    size_t gzlen;
    unsigned char *gz = fx_gzip(b.data, b.len, &gzlen);
    assert_true(gzlen < b.len);
    assert_int_equal(fx_write(path_of("est.xplane.pb.gz"), gz, gzlen), 0);

    uint64_t plain = xpv_load_heap_estimate(path_of("est.xplane.pb"), b.len, NULL);
    assert_true(plain == xpv_decode_heap_estimate(b.len, 1));
    assert_true(plain < b.len);          /* admitted with less than its size */
    assert_true(plain > b.len / 4);      /* but its model counts */
    uint64_t zipped = xpv_load_heap_estimate(path_of("est.xplane.pb.gz"), gzlen, NULL);
    assert_true(zipped == xpv_decode_heap_estimate(b.len, 0));
    assert_true(zipped >= b.len + plain - sizeof(xpv_profile));   /* the inflated buffer */
    /* The inflate caps bound what the trailer may claim. */
    xpv_load_limits lim = {XPV_DEFAULT_MAX_FILE, XPV_DEFAULT_MAX_FILE, NULL, b.len / 2};
    assert_true(xpv_load_heap_estimate(path_of("est.xplane.pb.gz"), gzlen, &lim) ==
                xpv_decode_heap_estimate(b.len / 2, 0));

    /* The profiles are charged their heap: the arena, plus the inflated
     * buffer for the gzipped one, never the mapped bytes. */
    xpv_err err;
    xpv_profile *p = xpv_load_profile(path_of("est.xplane.pb"), NULL, NULL, &err);
    assert_non_null(p);
    assert_true(p->mem_size == p->arena.total + sizeof *p);
    size_t model = p->mem_size;
    xpv_profile_free(p);
    p = xpv_load_profile(path_of("est.xplane.pb.gz"), NULL, NULL, &err);
    assert_non_null(p);
    assert_true(p->mem_size == b.len + p->arena.total + sizeof *p);
    assert_true(p->mem_size == b.len + model);
    xpv_profile_free(p);
    free(gz);
    xpv_buf_free(&b);
}

TU_MAIN_WITH(tu_tmpdir_setup, tu_tmpdir_teardown,
             cmocka_unit_test(test_loader__plain_and_gzip),
             cmocka_unit_test(test_loader__empty_missing_dir),
             cmocka_unit_test(test_loader__truncated_and_garbage),
             cmocka_unit_test(test_loader__caps),
             cmocka_unit_test(test_loader__gunzip_concatenated),
             cmocka_unit_test(test_loader__decode_budget),
             cmocka_unit_test(test_loader__gzip_ratio_bomb),
             cmocka_unit_test(test_loader__real_files),
             cmocka_unit_test(test_loader__confined_to_root),
             cmocka_unit_test(test_loader__mapped_cuts_as_read),
             cmocka_unit_test(test_loader__truncated_while_mapped),
             cmocka_unit_test(test_loader__rewritten_while_mapped),
             cmocka_unit_test(test_loader__heap_estimate))
