/*
 * testutil.c - helpers shared by the cmocka tests.
 */
#include "testutil.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xplane.h"

const char *tu_shared_dir(void) {
    static char path[4096];
    const char *env = getenv("XPV_SHARED");
    if (!env) env = "../shared";
    snprintf(path, sizeof path, "%s/testdata/real", env);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return NULL;
    snprintf(path, sizeof path, "%s", env);
    return path;
}

void *tu_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return NULL;
    }
    buf[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void collect(const char *dir, const char *suffix, char ***list,
                    size_t *n, size_t *cap) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    size_t sl = strlen(suffix);
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            collect(path, suffix, list, n, cap);
        } else {
            size_t l = strlen(de->d_name);
            if (l >= sl && !strcmp(de->d_name + l - sl, suffix)) {
                if (*n + 2 > *cap) {
                    *cap = *cap ? *cap * 2 : 16;
                    *list = realloc(*list, *cap * sizeof(char *));
                }
                (*list)[(*n)++] = strdup(path);
                (*list)[*n] = NULL;
            }
        }
    }
    closedir(d);
}

char **tu_find_files(const char *dir, const char *suffix) {
    char **list = NULL;
    size_t n = 0, cap = 0;
    collect(dir, suffix, &list, &n, &cap);
    if (!list) list = calloc(1, sizeof(char *));
    return list;
}

void tu_free_list(char **list) {
    for (char **p = list; p && *p; p++) free(*p);
    free(list);
}

char *tu_mkdtemp(void) {
    char tmpl[] = "/tmp/xpvtest.XXXXXX";
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

void tu_rmrf(const char *path) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "rm -rf %s failed\n", path);
}

char **tu_real_files(const char *sub, const char *suffix) {
    char dir[4096];
    int n = snprintf(dir, sizeof dir, "%s/testdata/real%s%s", tu_shared_dir(), sub ? "/" : "",
                     sub ? sub : "");
    assert_true(n > 0 && (size_t)n < sizeof dir);
    char **files = tu_find_files(dir, suffix);
    assert_non_null(files);
    return files;
}

static char **real_files(const char *suffix) { return tu_real_files(NULL, suffix); }

char **tu_real_xplanes(void) {
    char **files = real_files(".xplane.pb");
    size_t n = 0;
    for (char **f = files; *f; f++) {
        if (strstr(*f, "/corrupt/"))
            free(*f);
        else
            files[n++] = *f;
    }
    files[n] = NULL;
    return files;
}

size_t tu_each_real_file(const char *suffix, void (*fn)(const char *path)) {
    TU_SKIP_NO_SHARED();
    char **files = real_files(suffix);
    size_t n = 0;
    for (char **f = files; *f; f++, n++) fn(*f);
    tu_free_list(files);
    if (n == 0) {
        print_message("SKIP: no %s under %s/testdata/real\n", suffix + 1, tu_shared_dir());
        skip();
    }
    return n;
}

long tu_child_peak_growth_kb(int (*fn)(void *), void *arg) {
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        long before = -1, peak = -1, res = -1;
        FILE *f = fopen("/proc/self/clear_refs", "w");
        int ok = f && fputs("5", f) >= 0;
        if (f && fclose(f) != 0) ok = 0;
        char line[256];
        if (ok && (f = fopen("/proc/self/status", "r"))) {
            while (fgets(line, sizeof line, f))
                if (!strncmp(line, "VmRSS:", 6)) before = atol(line + 6);
            fclose(f);
        }
        int frc = fn(arg);
        if (ok && before >= 0 && (f = fopen("/proc/self/status", "r"))) {
            while (fgets(line, sizeof line, f))
                if (!strncmp(line, "VmHWM:", 6)) peak = atol(line + 6);
            fclose(f);
            if (peak >= 0) res = peak - before;
        }
        if (frc) res = -2;
        ssize_t w = write(pfd[1], &res, sizeof res);
        _exit(w == (ssize_t)sizeof res ? 0 : 1);
    }
    close(pfd[1]);
    long res = -3;
    ssize_t r = read(pfd[0], &res, sizeof res);
    close(pfd[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_int_equal(r, (ssize_t)sizeof res);
    assert_true(res != -2); /* the measured work itself failed */
    return res;
}

char *tu_tmpdir;

int tu_tmpdir_setup(void **state) {
    (void)state;
    tu_tmpdir = tu_mkdtemp();
    return 0;
}

int tu_tmpdir_teardown(void **state) {
    (void)state;
    tu_rmrf(tu_tmpdir);
    free(tu_tmpdir);
    tu_tmpdir = NULL;
    return 0;
}

static void free_bytes(void *p, size_t n) {
    (void)n;
    free(p);
}

xpv_profile *tu_decode_buf(xpv_buf *b) {
    size_t len;
    void *bytes = xpv_buf_steal(b, &len);
    xpv_decode_error derr;
    xpv_profile *p = xpv_decode(bytes, len, free_bytes, &derr);
    if (!p) fail_msg("decode failed: %s at %llu", derr.msg, (unsigned long long)derr.offset);
    return p;
}

xpv_profile *tu_synth_profile(const xpv_synth_opts *o, int host) {
    xpv_buf b;
    xpv_buf_init(&b);
    assert_int_equal(xpv_synth_host(o, host, &b), 0);
    return tu_decode_buf(&b);
}

void tu_check_golden(const char *dir, const char *name, const char *got, int by_value) {
    const char *src = getenv("XPV_SRC");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/golden/%s/%s", src ? src : ".", dir, name);
    if (getenv("XPV_UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(got, f);   /* as `xpview export` writes it: no newline */
        fclose(f);
        print_message("wrote %s\n", path);
    }
    size_t len;
    char *want = tu_read_file(path, &len);
    if (!want) fail_msg("golden %s missing (XPV_UPDATE_GOLDEN=1 writes it)", path);
    int same;
    if (by_value) {
        json_t *a = json_loads(got, 0, NULL), *b = json_loadb(want, len, 0, NULL);
        assert_non_null(a);
        assert_non_null(b);
        same = json_equal(a, b);
        json_decref(a);
        json_decref(b);
    } else {
        same = strlen(got) == len && !memcmp(got, want, len);
    }
    free(want);
    if (!same) fail_msg("%s differs from the tool's answer:\n%.2000s", path, got);
}
