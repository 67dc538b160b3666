/*
 * test_fuzz_replay.c - the libFuzzer targets (tests/fuzz/fuzz_*.c) built
 * with the normal compiler and run on fixed inputs, so every build (and
 * the AddressSanitizer/UBSan CI pass) replays:
 *   - tests/fuzz/regressions/<target>/ (every file): every crash fuzzing ever found;
 *   - deterministic mutations of a synthetic profile (truncations at many
 *     offsets, bit flips, absurd varints) through the decoder and every
 *     converter;
 *   - a gzip bomb, hostile request targets, broken JSON traces and
 *     per-tool files.
 * The targets abort() on a broken invariant, which fails the test; the
 * sanitizers catch memory errors and undefined behaviour.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* Each target defines LLVMFuzzerTestOneInput (and fuzz_routes also
 * LLVMFuzzerInitialize): include them under distinct names. */
#define LLVMFuzzerTestOneInput fuzz_xplane_one
#include "fuzz/fuzz_xplane.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_tools_one
#include "fuzz/fuzz_tools.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_gunzip_one
#include "fuzz/fuzz_gunzip.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_chrome_trace_one
#include "fuzz/fuzz_chrome_trace.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_legacy_one
#include "fuzz/fuzz_legacy.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_group_events_one
#include "fuzz/fuzz_group_events.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_derived_lines_one
#include "fuzz/fuzz_derived_lines.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_hlo_one
#include "fuzz/fuzz_hlo.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_hlo_struct_one
#define LLVMFuzzerCustomMutator fuzz_hlo_struct_mutate
#include "fuzz/fuzz_hlo_struct.c"
#undef LLVMFuzzerTestOneInput
#undef LLVMFuzzerCustomMutator
#define LLVMFuzzerTestOneInput fuzz_routes_one
#define LLVMFuzzerInitialize fuzz_routes_init
#include "fuzz/fuzz_routes.c"
#undef LLVMFuzzerTestOneInput
#undef LLVMFuzzerInitialize

typedef int (*fuzz_fn)(const uint8_t *, size_t);

static int run_str(fuzz_fn f, const char *s) {
    return f((const uint8_t *)s, strlen(s));
}

/* Replay every file of tests/fuzz/regressions/<target>/.  Returns the
 * number of inputs replayed. */
static int replay_dir(const char *target, fuzz_fn f) {
    const char *src = getenv("XPV_SRC");
    char dir[2048];
    if (src && *src) {
        snprintf(dir, sizeof dir, "%s/tests/fuzz/regressions/%s", src, target);
    } else {
        /* __FILE__ is absolute under CMake: <src>/tests/test_fuzz_replay.c */
        const char *slash = strrchr(__FILE__, '/');
        snprintf(dir, sizeof dir, "%.*s/fuzz/regressions/%s",
                 (int)(slash ? slash - __FILE__ : 1), slash ? __FILE__ : ".", target);
    }
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        size_t len;
        void *data = tu_read_file(path, &len);
        assert_non_null(data);
        print_message("replay %s/%s (%zu bytes)\n", target, de->d_name, len);
        f(data, len);
        free(data);
        n++;
    }
    closedir(d);
    return n;
}

/* A small synthetic profile (the fuzz seeds' shape). */
static uint8_t *synth_profile(size_t *len) {
    xpv_synth_opts o;
    xpv_buf b;
    memset(&o, 0, sizeof o);
    o.size_bytes = 12000;
    o.steps = 2;
    xpv_synth_defaults(&o);
    xpv_buf_init(&b);
    assert_int_equal(xpv_synth_host(&o, 0, &b), 0);
    return (uint8_t *)xpv_buf_steal(&b, len);
}

static void test_fuzz__regressions(void **state) {
    (void)state;
    int n = 0;
    n += replay_dir("fuzz_xplane", fuzz_xplane_one);
    n += replay_dir("fuzz_tools", fuzz_tools_one);
    n += replay_dir("fuzz_gunzip", fuzz_gunzip_one);
    n += replay_dir("fuzz_chrome_trace", fuzz_chrome_trace_one);
    n += replay_dir("fuzz_legacy", fuzz_legacy_one);
    n += replay_dir("fuzz_group_events", fuzz_group_events_one);
    n += replay_dir("fuzz_derived_lines", fuzz_derived_lines_one);
    n += replay_dir("fuzz_hlo", fuzz_hlo_one);
    n += replay_dir("fuzz_hlo_struct", fuzz_hlo_struct_one);
    fuzz_routes_init(NULL, NULL);
    n += replay_dir("fuzz_routes", fuzz_routes_one);
    print_message("%d regression input(s) replayed\n", n);
    assert_true(n >= 2);   /* the directory is found and holds inputs */

    /* Found by fuzzing the converters (buf.c): no UB for empty slices with
     * a NULL pointer or for doubles beyond int64. */
    xpv_buf b;
    xpv_buf_init(&b);
    xpv_buf_json_str(&b, NULL, 0);
    xpv_buf_add(&b, NULL, 0);
    xpv_buf_double(&b, 6.69344e+42);
    xpv_buf_double(&b, -9.3e18);
    xpv_buf_putc(&b, '\0');
    assert_string_equal(b.data, "\"\"6.69344e+42-9.3e+18");
    xpv_buf_free(&b);
}

/* Truncations and bit flips of a real-shaped profile through the decoder
 * and every converter. */
static void test_fuzz__mutated_profiles(void **state) {
    (void)state;
    size_t len;
    uint8_t *p = synth_profile(&len);
    uint8_t *m = malloc(len);
    fuzz_tools_one(p, len);
    /* Truncated at 64 offsets spread over the file. */
    for (int i = 1; i <= 64; i++) {
        size_t cut = len * (size_t)i / 65;
        fuzz_xplane_one(p, cut);
        fuzz_tools_one(p, cut);
    }
    /* 200 deterministic multi-bit flips, and 0xff runs (huge varints). */
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 200; i++) {
        memcpy(m, p, len);
        for (int k = 0; k < 4; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t at = (size_t)(x % len);
            if (i % 5 == 0) {
                for (size_t j = at; j < at + 9 && j < len; j++) m[j] = 0xff;
            } else {
                m[at] ^= (uint8_t)(1u << (x >> 61));
            }
        }
        fuzz_xplane_one(m, len);
        fuzz_tools_one(m, len);
    }
    /* Parameters the converters parse, with absurd values. */
    static const char *const qs[] = {
        "Qresolution=-1&start_time_ms=1e308&end_time_ms=-1e308\n",
        "Qsearch_prefix=&search_limit=99999999999999999999&search_start_ms=nan\n",
        "Qhost=&tag=%00&uid=-9223372036854775808&unique_id=x\n",
    };
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        size_t ql = strlen(qs[i]);
        uint8_t *q = malloc(ql + len);
        memcpy(q, qs[i], ql);
        memcpy(q + ql, p, len);
        fuzz_tools_one(q, ql + len);
        free(q);
    }
    free(m);
    free(p);
}

/* Grouping, derived lines and HLO decoding (the newer analysis code) on
 * the synthetic profile, the JAX device captures of tests/data/device
 * (HLO protos), and truncations and bit flips of both. */
static void analysis_mutations(const uint8_t *p, size_t len, int hlo) {
    uint8_t *m = malloc(len + 1);
    m[0] = 'X';
    memcpy(m + 1, p, len);
    fuzz_group_events_one(p, len);
    fuzz_derived_lines_one(p, len);
    fuzz_hlo_one(m, len + 1);
    if (hlo) fuzz_hlo_one(p, len);   /* raw mode: the XSpace read as an HloProto */
    for (int i = 1; i <= 16; i++) {
        size_t cut = len * (size_t)i / 17;
        fuzz_group_events_one(p, cut);
        fuzz_derived_lines_one(p, cut);
        if (hlo) fuzz_hlo_one(m, cut + 1);
    }
    uint64_t x = 0x243f6a8885a308d3ULL;
    for (int i = 0; i < 40; i++) {
        m[0] = 'X';
        memcpy(m + 1, p, len);
        for (int k = 0; k < 3; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            m[1 + (size_t)(x % len)] ^= (uint8_t)(1u << (x >> 61));
        }
        fuzz_group_events_one(m + 1, len);
        fuzz_derived_lines_one(m + 1, len);
        if (hlo) fuzz_hlo_one(m, len + 1);
    }
    free(m);
}

static void test_fuzz__analysis(void **state) {
    (void)state;
    size_t len;
    uint8_t *p = synth_profile(&len);
    analysis_mutations(p, len, 0);
    free(p);
    const char *src = getenv("XPV_SRC");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/device/jax_gpu_mlp.xplane.pb",
             src && *src ? src : ".");
    uint8_t *d = tu_read_file(path, &len);
    if (!d) {
        print_message("skip: %s not found (set XPV_SRC)\n", path);
        return;
    }
    analysis_mutations(d, len, 1);
    free(d);
}

static void test_fuzz__gzip(void **state) {
    (void)state;
    /* A gzip bomb: 16 MiB of zeros in ~16 KiB, over the target's 4 MiB cap. */
    size_t n = 16u << 20, gl;
    uint8_t *zeros = calloc(1, n);
    unsigned char *gz = fx_gzip(zeros, n, &gl);
    assert_true(gl < n / 100);
    xpv_err err;
    size_t out_len;
    xpv_err_clear(&err);
    assert_null(xpv_gunzip(gz, gl, 4u << 20, &out_len, &err));
    assert_int_equal(err.status, 413);
    fuzz_gunzip_one(gz, gl);
    /* Truncated gzip of a profile: "incomplete". */
    size_t len;
    uint8_t *p = synth_profile(&len);
    unsigned char *pg = fx_gzip(p, len, &gl);
    xpv_err_clear(&err);
    assert_null(xpv_gunzip(pg, gl / 2, 4u << 20, &out_len, &err));
    assert_int_equal(err.status, 422);
    assert_non_null(strstr(err.msg, "incomplete"));
    for (size_t cut = 0; cut < gl; cut += gl / 17 + 1) fuzz_gunzip_one(pg, cut);
    fuzz_gunzip_one(pg, gl);
    free(pg);
    free(p);
    free(gz);
    free(zeros);
}

static void test_fuzz__requests(void **state) {
    (void)state;
    fuzz_routes_init(NULL, NULL);
    static const char *const uris[] = {
        "/", "/index.html", "/statz", "/healthz", "/team/profile", "/team/profile/",
        "/data/plugin/profile/runs",
        "/data/plugin/profile/data?run=link/evil&tag=overview_page",
        "/data/plugin/profile/hosts?run=link%2Fevil",
        "/%2e%2e/%2e%2e/etc/passwd", "/..%2f..%2fetc%2fpasswd", "//etc/passwd",
        "/data/plugin/profile/data?run=../../outside&tag=trace_viewer",
        "/data/plugin/profile/data?run=%2Ftmp&tag=x&host=..%2F..%2Fetc%2Fpasswd",
        "/data/plugin/profile/data?run=one%00&tag=x", "/a%00b", "/%zz", "/%",
        "/data/plugin/profile/data?run=one&tag=trace_viewer&resolution=%2d1",
        "/data/plugin/profile/data?run=nested/two&tag=trace_viewer&hosts=,,,host0,,zz",
        "/data/plugin/profile/data_csv?run=one&tag=overview_page&table=99999999999",
        "/data/plugin/profile/profile_info?run=bad&host=corrupt",
        "/data/plugin/profile/profile_info?run=bad&host=empty",
        "/data/plugin/profile/profile_info?run=bad&host=g",
        "POST /data/plugin/profile/runs", "HEAD /data/plugin/profile/runs",
        "/data/plugin/profile/data?run=one&tag=overview_page\n*",
    };
    for (size_t i = 0; i < sizeof uris / sizeof uris[0]; i++) run_str(fuzz_routes_one, uris[i]);
    /* Overlong path and query, many parameters. */
    size_t big = 20000;
    char *s = malloc(big + 64);
    memset(s, 'a', big);
    s[0] = '/';
    s[big] = '\0';
    run_str(fuzz_routes_one, s);
    strcpy(s, "/data/plugin/profile/runs?");
    for (size_t k = strlen(s); k + 4 < big; k += 4) memcpy(s + k, "a=1&", 4), s[k + 4] = '\0';
    run_str(fuzz_routes_one, s);
    free(s);
}

static void test_fuzz__traces_and_legacy(void **state) {
    (void)state;
    static const char *const traces[] = {
        "", "{", "[", "{\"traceEvents\":[", "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1e400,"
        "\"dur\":-5,\"pid\":\"a\",\"tid\":{},\"name\":\"x\"}]}",
        "[{\"ph\":\"X\",\"ts\":\"12.34567\",\"dur\":1,\"pid\":0,\"tid\":0,\"args\":"
        "{\"correlation\":-1,\"External id\":1e30,\"a\":[[[[[[[[[[[[]]]]]]]]]]]]}}",
        "{\"traceEvents\":[{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,"
        "\"args\":{\"name\":\"/device:GPU:99999999999\"}}],\"deviceProperties\":[{\"id\":-1}]}",
    };
    for (size_t i = 0; i < sizeof traces / sizeof traces[0]; i++)
        run_str(fuzz_chrome_trace_one, traces[i]);
    /* Deep nesting. */
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 32);
    strcpy(deep, "{\"traceEvents\":");
    size_t k = strlen(deep);
    memset(deep + k, '[', depth);
    deep[k + depth] = '\0';
    run_str(fuzz_chrome_trace_one, deep);
    free(deep);
    for (int kind = 0; kind < 8; kind++) {
        char in[64];
        in[0] = (char)kind;
        memcpy(in + 1, "\x0a\xff\xff\xff\xff\x0f{\"a\":[1e999, -0, \"\\u0000\"]}", 33);
        fuzz_legacy_one((const uint8_t *)in, 34);
        fuzz_legacy_one((const uint8_t *)in, 1);
    }
}

/* The structured HLO mutator (fuzz_hlo_struct.c) from an empty module,
 * 200 deterministic steps in 8 chains, each step's module run through every
 * HLO tool reader (4 instructions costed each): a hang (an unbounded walk)
 * or a crash fails. */
static void test_fuzz__hlo_struct(void **state) {
    (void)state;
    enum { MAX = 256 << 10 };
    uint8_t *buf = malloc(MAX);
    size_t biggest = 0;
    struct_costs_per_input = 4;
    for (unsigned chain = 0; chain < 8; chain++) {
        size_t len = 0;
        for (unsigned step = 0; step < 25; step++) {
            len = fuzz_hlo_struct_mutate(buf, len, MAX, chain * 1000 + step + 1);
            if (len > biggest) biggest = len;
            fuzz_hlo_struct_one(buf, len);
        }
    }
    print_message("structured HLO: 200 modules, largest %zu bytes\n", biggest);
    assert_true(biggest > 1000);
    free(buf);
}

TU_MAIN(cmocka_unit_test(test_fuzz__regressions),
        cmocka_unit_test(test_fuzz__hlo_struct),
        cmocka_unit_test(test_fuzz__mutated_profiles),
        cmocka_unit_test(test_fuzz__analysis),
        cmocka_unit_test(test_fuzz__gzip),
        cmocka_unit_test(test_fuzz__requests),
        cmocka_unit_test(test_fuzz__traces_and_legacy))
