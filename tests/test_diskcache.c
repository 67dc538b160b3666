/*
 * test_diskcache.c - the --cache_dir store (server/cache/diskcache.c): entries
 * round trip; truncated, extended, corrupt or foreign files are misses,
 * never trusted; writes are atomic (readers and a second writer racing
 * one writer never see a partial file under the final name); a cache dir
 * inside the logdir is refused; an unwritable cache is harmless; and
 * through the app, two servers on one cache dir give identical trace
 * viewer answers, the second one loading the first one's index.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diskcache.h"
#include "routes.h"
#include "synth.h"
#include "testutil.h"

static char *path_of(const char *fmt, const char *a) {
    char *p = malloc(4096);
    snprintf(p, 4096, fmt, tu_tmpdir, a);
    return p;
}

/* Files under dir whose name starts with `prefix` (recursively). */
static int count_files(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if (!strcmp(de->d_name, "secret")) continue; /* the deployment's key */
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        struct stat st;
        if (lstat(p, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) n += count_files(p, prefix);
        else if (!strncmp(de->d_name, prefix, strlen(prefix))) n++;
    }
    closedir(d);
    return n;
}

static xpv_diskcache *open_cache(const char *dir) {
    char msg[512] = "";
    xpv_diskcache *dc = xpv_diskcache_open(dir, NULL, 42, msg, sizeof msg);
    if (!dc) fail_msg("open %s: %s", dir, msg);
    return dc;
}

/* The entry files under dir/trace-index (their paths, malloc'd; NULL-ended). */
static char **entry_files(const char *dir) {
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/trace-index", dir);
    DIR *d = opendir(sub);
    char **out = calloc(64, sizeof *out);
    size_t n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) && n < 63)
        if (de->d_name[0] != '.') {
            out[n] = malloc(strlen(sub) + strlen(de->d_name) + 2);
            sprintf(out[n++], "%s/%s", sub, de->d_name);
        }
    if (d) closedir(d);
    return out;
}

/* Entries are authenticated by the deployment's secret (issue 26, item
 * 13): an entry written under another secret (a co-user's forgery, which
 * could recompute the image hash) is a miss counted as rejected, and so is
 * one whose payload was changed in place; the secret is 0600. */
static void test_diskcache__forged_entries(void **state) {
    (void)state;
    char *da = path_of("%s/forge-a%s", ""), *db = path_of("%s/forge-b%s", "");
    xpv_diskcache *a = open_cache(da), *b = open_cache(db);
    const char payload[] = "0123456789abcdefghij";
    assert_int_equal(xpv_diskcache_write(a, "trace-index", "k", payload, 20), 0);
    assert_int_equal(xpv_diskcache_write(b, "trace-index", "k", "ABCDEFGHIJ0123456789", 20), 0);
    size_t len;
    char *got = xpv_diskcache_get(b, "trace-index", "k", 1 << 20, &len);
    assert_non_null(got);
    free(got);
    /* b's entry replaced by a's (a valid entry under another secret) */
    char **fa = entry_files(da), **fb = entry_files(db);
    assert_non_null(fa[0]);
    assert_non_null(fb[0]);
    assert_int_equal(rename(fa[0], fb[0]), 0);
    xpv_diskcache_stats st0, st1;
    xpv_diskcache_get_stats(b, &st0);
    assert_null(xpv_diskcache_get(b, "trace-index", "k", 1 << 20, &len));
    xpv_diskcache_get_stats(b, &st1);
    assert_int_equal(st1.rejected, st0.rejected + 1);
    /* a payload byte changed in place */
    assert_int_equal(xpv_diskcache_write(b, "trace-index", "k", payload, 20), 0);
    assert_non_null((got = xpv_diskcache_get(b, "trace-index", "k", 1 << 20, &len)));
    free(got);
    FILE *f = fopen(fb[0], "r+b");
    assert_non_null(f);
    fseek(f, 24 + 8 + 3, SEEK_SET);
    fputc('#', f);
    fclose(f);
    assert_null(xpv_diskcache_get(b, "trace-index", "k", 1 << 20, &len));
    struct stat ss;
    char sp[4096];
    snprintf(sp, sizeof sp, "%s/secret", db);
    assert_int_equal(stat(sp, &ss), 0);
    assert_int_equal(ss.st_mode & 0777, 0600);
    assert_int_equal(ss.st_size, 32);
    for (char **p = fa; *p; p++) free(*p);
    for (char **p = fb; *p; p++) free(*p);
    free(fa);
    free(fb);
    xpv_diskcache_free(a);
    xpv_diskcache_free(b);
    free(da);
    free(db);
}

static void test_diskcache__round_trip(void **state) {
    (void)state;
    char *dir = path_of("%s/cache%s", "");
    xpv_diskcache *dc = open_cache(dir);
    const char payload[] = "0123456789abcdefghij";
    assert_int_equal(xpv_diskcache_write(dc, "trace-index", "key one", payload, 20), 0);
    size_t len = 0;
    char *got = xpv_diskcache_get(dc, "trace-index", "key one", 1 << 20, &len);
    assert_non_null(got);
    assert_int_equal(len, 20);
    assert_memory_equal(got, payload, 20);
    free(got);
    /* other keys, a limit below the size: misses */
    assert_null(xpv_diskcache_get(dc, "trace-index", "key two", 1 << 20, &len));
    assert_null(xpv_diskcache_get(dc, "trace-index", "key one", 19, &len));
    /* background put, then flush: visible, no temporary file left */
    char *big = malloc(3 << 20);
    memset(big, 'x', 3 << 20);
    xpv_diskcache_put(dc, "trace-index", "key big", big, 3 << 20);
    xpv_diskcache_flush(dc);
    got = xpv_diskcache_get(dc, "trace-index", "key big", 4 << 20, &len);
    assert_non_null(got);
    assert_int_equal(len, 3 << 20);
    assert_int_equal(got[len - 1], 'x');
    free(got);
    assert_int_equal(count_files(dir, ".tmp."), 0);
    assert_int_equal(count_files(dir, ""), 2);
    xpv_diskcache_stats st;
    xpv_diskcache_get_stats(dc, &st);
    assert_int_equal(st.writes, 2);
    assert_int_equal(st.write_errors, 0);
    xpv_diskcache_free(dc);
    free(dir);
}

static void test_diskcache__bad_files_are_misses(void **state) {
    (void)state;
    char *dir = path_of("%s/bad%s", "");
    xpv_diskcache *dc = open_cache(dir);
    char payload[1000];
    for (size_t i = 0; i < sizeof payload; i++) payload[i] = (char)i;
    assert_int_equal(xpv_diskcache_write(dc, "trace-index", "k", payload, sizeof payload), 0);
    xpv_buf p;
    xpv_buf_init(&p);
    xpv_diskcache_path(dc, "trace-index", "k", &p);
    size_t full = 0;
    char *orig = tu_read_file(p.data, &full);
    assert_non_null(orig);
    size_t len;
    /* every truncation */
    for (size_t n = 0; n < full; n += (n < 64 ? 1 : 97)) {
        assert_int_equal(truncate(p.data, (off_t)n), 0);
        assert_null(xpv_diskcache_get(dc, "trace-index", "k", 1 << 20, &len));
    }
    /* a FIFO in place of the entry: a miss at once, never a blocked open */
    assert_int_equal(unlink(p.data), 0);
    assert_int_equal(mkfifo(p.data, 0644), 0);
    assert_null(xpv_diskcache_get(dc, "trace-index", "k", 1 << 20, &len));
    assert_int_equal(unlink(p.data), 0);
    /* extended by one byte */
    FILE *f = fopen(p.data, "wb");
    fwrite(orig, 1, full, f);
    fputc(0, f);
    fclose(f);
    assert_null(xpv_diskcache_get(dc, "trace-index", "k", 1 << 20, &len));
    /* header or key bytes changed (a foreign file under the name) */
    for (size_t at = 0; at < 32; at++) {
        orig[at] ^= 0x20;
        f = fopen(p.data, "wb");
        fwrite(orig, 1, full, f);
        fclose(f);
        assert_null(xpv_diskcache_get(dc, "trace-index", "k", 1 << 20, &len));
        orig[at] ^= 0x20;
    }
    /* a directory or a symlink under the name */
    unlink(p.data);
    assert_int_equal(symlink(dir, p.data), 0);
    assert_null(xpv_diskcache_get(dc, "trace-index", "k", 1 << 20, &len));
    unlink(p.data);
    assert_int_equal(mkdir(p.data, 0755), 0);
    assert_null(xpv_diskcache_get(dc, "trace-index", "k", 1 << 20, &len));
    rmdir(p.data);
    /* restored: a hit again */
    f = fopen(p.data, "wb");
    fwrite(orig, 1, full, f);
    fclose(f);
    char *got = xpv_diskcache_get(dc, "trace-index", "k", 1 << 20, &len);
    assert_non_null(got);
    assert_memory_equal(got, payload, sizeof payload);
    free(got);
    free(orig);
    xpv_buf_free(&p);
    xpv_diskcache_free(dc);
    free(dir);
}

/* ---- atomic writes: racing writers and readers ---------------------------- */

#define RACE_LEN (4u << 20)
#define RACE_ROUNDS 12

struct racer {
    xpv_diskcache *dc;
    int id;
    volatile int *stop;
    int reads, partial;
};

static void *race_writer(void *arg) {
    struct racer *r = arg;
    char *buf = malloc(RACE_LEN);
    for (int i = 0; i < RACE_ROUNDS; i++) {
        /* every byte of one image is the same: a mix would be visible */
        memset(buf, 'a' + (r->id * RACE_ROUNDS + i) % 26, RACE_LEN);
        assert_int_equal(xpv_diskcache_write(r->dc, "trace-index", "shared", buf, RACE_LEN), 0);
    }
    free(buf);
    return NULL;
}

static void *race_reader(void *arg) {
    struct racer *r = arg;
    while (!*r->stop) {
        size_t len = 0;
        char *got = xpv_diskcache_get(r->dc, "trace-index", "shared", RACE_LEN, &len);
        if (!got) continue;
        r->reads++;
        if (len != RACE_LEN) r->partial++;
        else
            for (size_t i = 1; i < len; i++)
                if (got[i] != got[0]) {
                    r->partial++;
                    break;
                }
        free(got);
    }
    return NULL;
}

static void test_diskcache__atomic_writes(void **state) {
    (void)state;
    char *dir = path_of("%s/race%s", "");
    /* Two handles on one directory: two replicas. */
    xpv_diskcache *a = open_cache(dir), *b = open_cache(dir);
    volatile int stop = 0;
    struct racer w1 = {a, 0, &stop, 0, 0}, w2 = {b, 1, &stop, 0, 0};
    struct racer r1 = {a, 2, &stop, 0, 0}, r2 = {b, 3, &stop, 0, 0};
    pthread_t t[4];
    pthread_create(&t[2], NULL, race_reader, &r1);
    pthread_create(&t[3], NULL, race_reader, &r2);
    pthread_create(&t[0], NULL, race_writer, &w1);
    pthread_create(&t[1], NULL, race_writer, &w2);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    stop = 1;
    pthread_join(t[2], NULL);
    pthread_join(t[3], NULL);
    print_message("racing: %d complete reads, %d partial\n", r1.reads + r2.reads,
                  r1.partial + r2.partial);
    assert_int_equal(r1.partial + r2.partial, 0);
    assert_true(r1.reads + r2.reads > 0);
    assert_int_equal(count_files(dir, ".tmp."), 0);
    assert_int_equal(count_files(dir, ""), 1);
    xpv_diskcache_free(a);
    xpv_diskcache_free(b);
    free(dir);
}

static void test_diskcache__stale_temporaries_swept(void **state) {
    (void)state;
    char *dir = path_of("%s/sweep%s", "");
    xpv_diskcache_free(open_cache(dir));
    char *subdir = path_of("%s/sweep/%s", "trace-index");
    assert_int_equal(mkdir(subdir, 0755), 0);
    free(subdir);
    char *old = path_of("%s/sweep/trace-index/.tmp.1.1.%s", "dead.bin");
    char *young = path_of("%s/sweep/trace-index/.tmp.2.1.%s", "live.bin");
    FILE *f = fopen(old, "w");
    assert_non_null(f);
    fclose(f);
    f = fopen(young, "w");
    assert_non_null(f);
    fclose(f);
    struct timespec ts[2] = {{1000, 0}, {1000, 0}};
    utimensat(AT_FDCWD, old, ts, 0);
    xpv_diskcache_free(open_cache(dir));
    assert_int_not_equal(access(old, F_OK), 0);
    assert_int_equal(access(young, F_OK), 0);
    free(old);
    free(young);
    free(dir);
}

/* ---- the logdir is never written ------------------------------------------ */

static void test_diskcache__inside_logdir_refused(void **state) {
    (void)state;
    char *logdir = path_of("%s/logs%s", "");
    char *sub = path_of("%s/logs/%s", "plugins");
    assert_int_equal(mkdir(logdir, 0755), 0);
    assert_int_equal(mkdir(sub, 0755), 0);
    char *link = path_of("%s/%s", "link");
    assert_int_equal(symlink(sub, link), 0);
    const char *inside[] = {"%s/logs", "%s/logs/", "%s/logs/plugins", "%s/logs/new/deeper",
                            "%s/link", "%s/link/new", "%s/other/../logs/x", "%s/logs/./a/../b"};
    for (size_t i = 0; i < sizeof inside / sizeof inside[0]; i++) {
        char dir[4096], msg[512] = "";
        snprintf(dir, sizeof dir, inside[i], tu_tmpdir);
        xpv_diskcache *dc = xpv_diskcache_open(dir, logdir, 1, msg, sizeof msg);
        if (dc) fail_msg("accepted %s inside %s", dir, logdir);
        assert_non_null(strstr(msg, "inside the logdir"));
    }
    /* nothing was created inside the logdir */
    assert_int_equal(count_files(logdir, ""), 0);
    char *absent = path_of("%s/logs/%s", "new");
    assert_int_not_equal(access(absent, F_OK), 0);
    /* beside it: fine, even with a shared name prefix */
    const char *outside[] = {"%s/logs-cache", "%s/cache/x", "%s/logs/../beside"};
    for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++) {
        char dir[4096], msg[512] = "";
        snprintf(dir, sizeof dir, outside[i], tu_tmpdir);
        xpv_diskcache *dc = xpv_diskcache_open(dir, logdir, 1, msg, sizeof msg);
        if (!dc) fail_msg("refused %s: %s", dir, msg);
        xpv_diskcache_free(dc);
    }
    free(absent);
    free(logdir);
    free(sub);
    free(link);
}

static void test_diskcache__unwritable_is_harmless(void **state) {
    (void)state;
    char *dir = path_of("%s/ro%s", "");
    assert_int_equal(mkdir(dir, 0755), 0);
    char *blocker = path_of("%s/ro/%s", "trace-index");
    FILE *f = fopen(blocker, "w");         /* a file where the subdirectory goes */
    fclose(f);
    xpv_diskcache *dc = open_cache(dir);
    char data[16] = "abc";
    assert_int_equal(xpv_diskcache_write(dc, "trace-index", "k", data, sizeof data), -1);
    xpv_diskcache_put(dc, "trace-index", "k", strdup("x"), 2);
    xpv_diskcache_flush(dc);
    size_t len;
    assert_null(xpv_diskcache_get(dc, "trace-index", "k", 100, &len));
    xpv_diskcache_stats st;
    xpv_diskcache_get_stats(dc, &st);
    assert_int_equal(st.write_errors, 2);
    assert_int_equal(st.writes, 0);
    xpv_diskcache_free(dc);
    free(blocker);
    free(dir);
}

/* ---- through the app: two servers, one cache dir ------------------------- */

static void get_body(xpv_app *app, const char *uri, xpv_buf *out) {
    xpv_response r;
    xpv_app_route(app, "GET", uri, NULL, &r);
    if (r.status != 200) fail_msg("%s: %d %.*s", uri, r.status, (int)r.len, r.body);
    xpv_buf_reset(out);
    xpv_buf_add(out, r.body, r.len);
    xpv_response_release(&r);
}

static xpv_app *new_app(const char *logdir, const char *cache) {
    xpv_app_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.logdir = logdir;
    cfg.path_prefix = "";
    cfg.cache_bytes = 256u << 20;
    cfg.scan_interval_ms = -1;
    xpv_err err;
    xpv_app *a = xpv_app_new(&cfg, &err);
    assert_non_null(a);
    if (cache) assert_int_equal(xpv_app_set_cache_dir(a, cache, &err), 0);
    return a;
}

static void test_diskcache__replicas_share_trace_index(void **state) {
    (void)state;
    char *logdir = path_of("%s/applogs%s", ""), *cache = path_of("%s/appcache%s", "");
    xpv_synth_opts o;
    memset(&o, 0, sizeof o);
    o.size_bytes = 600000;
    o.hosts = 2;
    o.steps = 3;
    xpv_synth_defaults(&o);
    char err[256];
    assert_int_equal(xpv_synth_logdir(&o, logdir, "run1", err, sizeof err), 0);
    const char *uris[] = {
        "/data/plugin/profile/data?run=run1&tag=trace_viewer@&host=worker0&resolution=800",
        "/data/plugin/profile/data?run=run1&tag=trace_viewer@&resolution=500",
        "/data/plugin/profile/data?run=run1&tag=trace_viewer@&hosts=worker1&resolution=0"
        "&start_time_ms=1&end_time_ms=3",
    };
    enum { NU = sizeof uris / sizeof uris[0] };
    xpv_buf ref[NU], b;
    xpv_buf_init(&b);

    /* Reference: no cache dir. */
    xpv_app *plain = new_app(logdir, NULL);
    for (int i = 0; i < NU; i++) {
        xpv_buf_init(&ref[i]);
        get_body(plain, uris[i], &ref[i]);
    }
    xpv_app_free(plain);

    /* Replica A builds and writes (free waits for the writes). */
    xpv_app *a = new_app(logdir, cache);
    for (int i = 0; i < NU; i++) {
        get_body(a, uris[i], &b);
        assert_int_equal(b.len, ref[i].len);
        assert_memory_equal(b.data, ref[i].data, b.len);
    }
    xpv_app_stats st;
    xpv_app_get_stats(a, &st);
    assert_int_equal(st.has_disk, 1);
    assert_int_equal(st.disk.hits, 0);
    xpv_app_free(a);
    int files = count_files(cache, "");
    assert_int_equal(files, 3);                 /* three host sets */
    assert_int_equal(count_files(cache, ".tmp."), 0);
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/trace-index", cache);
    assert_int_equal(count_files(sub, ""), 3);
    /* the logdir holds only the profiles */
    assert_int_equal(count_files(logdir, ""), 2);

    /* Replica B loads them: same bytes, no index build. */
    xpv_app *b2 = new_app(logdir, cache);
    for (int i = 0; i < NU; i++) {
        get_body(b2, uris[i], &b);
        assert_int_equal(b.len, ref[i].len);
        assert_memory_equal(b.data, ref[i].data, b.len);
    }
    xpv_app_get_stats(b2, &st);
    assert_int_equal(st.disk.hits, 3);
    assert_int_equal(st.disk.writes, 0);
    xpv_app_free(b2);

    /* Corrupt every file: replica C rejects them, rebuilds, same bytes,
     * and rewrites them. */
    DIR *d = opendir(sub);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", sub, de->d_name);
        int fd = open(p, O_RDWR);
        assert_true(fd >= 0);
        struct stat fst;
        fstat(fd, &fst);
        char c = 0x55;
        assert_int_equal(pwrite(fd, &c, 1, fst.st_size - 9), 1);
        close(fd);
    }
    closedir(d);
    xpv_app *c = new_app(logdir, cache);
    for (int i = 0; i < NU; i++) {
        get_body(c, uris[i], &b);
        assert_int_equal(b.len, ref[i].len);
        assert_memory_equal(b.data, ref[i].data, b.len);
    }
    xpv_app_get_stats(c, &st);
    assert_int_equal(st.disk.hits, 0);
    assert_int_equal(st.disk.rejected, 3);
    xpv_app_free(c);
    xpv_diskcache_stats ds;
    xpv_app *e = new_app(logdir, cache);
    get_body(e, uris[0], &b);
    xpv_app_get_stats(e, &st);
    ds = st.disk;
    assert_int_equal(ds.hits, 1);
    xpv_app_free(e);

    /* A cache dir inside the logdir is refused by the app too. */
    xpv_app *f = new_app(logdir, NULL);
    xpv_err er;
    char inside[4096];
    snprintf(inside, sizeof inside, "%s/plugins/cache", logdir);
    assert_int_equal(xpv_app_set_cache_dir(f, inside, &er), -1);
    assert_int_equal(er.status, 400);
    assert_non_null(strstr(er.msg, "inside the logdir"));
    xpv_app_free(f);

    for (int i = 0; i < NU; i++) xpv_buf_free(&ref[i]);
    xpv_buf_free(&b);
    free(logdir);
    free(cache);
}

TU_MAIN_WITH(tu_tmpdir_setup, tu_tmpdir_teardown,
             cmocka_unit_test(test_diskcache__forged_entries),
             cmocka_unit_test(test_diskcache__round_trip),
             cmocka_unit_test(test_diskcache__bad_files_are_misses),
             cmocka_unit_test(test_diskcache__atomic_writes),
             cmocka_unit_test(test_diskcache__stale_temporaries_swept),
             cmocka_unit_test(test_diskcache__inside_logdir_refused),
             cmocka_unit_test(test_diskcache__unwritable_is_harmless),
             cmocka_unit_test(test_diskcache__replicas_share_trace_index))
