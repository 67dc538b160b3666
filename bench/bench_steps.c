/*
 * bench_steps.c - speed of the shared step analysis and the op_stats
 * intermediate (tools/steps.c, tools/opstats.c) on one host file.
 *
 *   bench_steps FILE.xplane.pb [reps] [steps]
 *
 * Reads and decodes the file once (the decode time is the baseline), then
 * builds, `reps` times each (default 3), best wall time and best process CPU
 * time (less disturbed than wall time on a shared machine):
 *   steps       xpv_steps_build alone (one thread)
 *   op_metrics  xpv_op_metrics_build alone (one thread)
 *   op_stats    the cached intermediate: steps and op metrics on two threads
 *   render      overview_page rendered from a built op_stats (warm request)
 * and the cold figure (read + decode + op_stats + render).  Prints the step
 * count and output size so two runs can be checked to agree.  With the
 * third argument `steps` only the step build runs (for perf record).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "model.h"
#include "opstats.h"
#include "steps.h"
#include "tool.h"

extern const xpv_tool xpv_tool_overview_page;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *read_all(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        perror(path);
        exit(1);
    }
    size_t n = (size_t)st.st_size, got = 0;
    char *b = malloc(n ? n : 1);
    if (!b) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    while (got < n) {
        ssize_t r = read(fd, b + got, n - got);
        if (r <= 0) {
            perror(path);
            exit(1);
        }
        got += (size_t)r;
    }
    close(fd);
    *len = n;
    return b;
}

typedef struct best {
    double wall, cpu;
} best;

static void best_init(best *b) { b->wall = b->cpu = 1e30; }

static void best_add(best *b, double w, double c) {
    if (w < b->wall) b->wall = w;
    if (c < b->cpu) b->cpu = c;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_steps FILE.xplane.pb [reps]\n");
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    if (reps < 1) reps = 1;
    /* "steps": only xpv_steps_build, for profiling it alone. */
    int only_steps = argc > 3 && !strcmp(argv[3], "steps");
    double tcold = now();
    size_t len;
    void *buf = read_all(argv[1], &len);
    double tread = now() - tcold;
    double mb = (double)len / 1e6;
    double t0 = now();
    xpv_decode_error derr;
    xpv_profile *p = xpv_decode(buf, len, NULL, &derr);
    double tdec = now() - t0;
    if (!p) {
        fprintf(stderr, "decode failed: %s\n", derr.msg);
        return 1;
    }
    const xpv_profile *profiles[1] = {p};
    const char *names[1] = {"host"};
    xpv_hostset hs = {1, profiles, names};
    xpv_params q = {0, NULL, NULL};
    xpv_tool_error err;

    if (only_steps) {
        for (int r = 0; r < reps; r++) {
            xpv_arena a;
            xpv_arena_init(&a, 64 * 1024);
            xpv_step_db db;
            t0 = now();
            double c0 = cpu_now();
            xpv_steps_build(p, &a, &db);
            printf("steps       %.3f s  (CPU %.3f s), %zu steps\n", now() - t0, cpu_now() - c0,
                   db.n);
            xpv_arena_free(&a);
        }
        xpv_profile_free(p);
        free(buf);
        return 0;
    }
    /* Cold: the first op_stats build and render, right after decoding. */
    t0 = now();
    xpv_op_stats *os = xpv_op_stats_build(&hs, &err);
    if (!os) {
        fprintf(stderr, "op_stats failed: %s\n", err.msg);
        return 1;
    }
    double tos_cold = now() - t0;
    xpv_buf out;
    xpv_buf_init(&out);
    t0 = now();
    if (xpv_tool_overview_page.render(&hs, os, &q, &out, &err) != 0) {
        fprintf(stderr, "render failed: %s\n", err.msg);
        return 1;
    }
    double trender_cold = now() - t0;
    double cold = now() - tcold;
    size_t outlen = out.len;
    xpv_op_stats_free(os);

    best bs, bo, bos, br;
    best_init(&bs);
    best_init(&bo);
    best_init(&bos);
    best_init(&br);
    size_t nsteps = 0;
    for (int r = 0; r < reps; r++) {
        xpv_arena a;
        xpv_arena_init(&a, 64 * 1024);
        xpv_step_db db;
        t0 = now();
        double c0 = cpu_now();
        xpv_steps_build(p, &a, &db);
        best_add(&bs, now() - t0, cpu_now() - c0);
        nsteps = db.n;
        xpv_arena_free(&a);

        t0 = now();
        c0 = cpu_now();
        xpv_op_metrics *m = xpv_op_metrics_build(&hs, &err);
        best_add(&bo, now() - t0, cpu_now() - c0);
        xpv_op_metrics_free(m);

        t0 = now();
        c0 = cpu_now();
        os = xpv_op_stats_build(&hs, &err);
        best_add(&bos, now() - t0, cpu_now() - c0);
        for (int i = 0; i < 5; i++) {
            xpv_buf_reset(&out);
            t0 = now();
            c0 = cpu_now();
            xpv_tool_overview_page.render(&hs, os, &q, &out, &err);
            best_add(&br, now() - t0, cpu_now() - c0);
        }
        xpv_op_stats_free(os);
    }
    printf("file        %.1f MB, %llu events\n", mb, (unsigned long long)p->nevents);
    printf("read        %.3f s\n", tread);
    printf("decode      %.3f s  %.0f MB/s (baseline)\n", tdec, mb / tdec);
    printf("steps       %.3f s  (CPU %.3f s) = %.2fx decode, %zu steps\n", bs.wall, bs.cpu,
           bs.wall / tdec, nsteps);
    printf("op_metrics  %.3f s  (CPU %.3f s) = %.2fx decode\n", bo.wall, bo.cpu, bo.wall / tdec);
    printf("op_stats    %.3f s  (CPU %.3f s), cold %.3f s (two threads)\n", bos.wall, bos.cpu,
           tos_cold);
    printf("render      %.4f s  (CPU %.4f s), cold %.4f s, %zu bytes (overview_page, warm)\n",
           br.wall, br.cpu, trender_cold, outlen);
    printf("cold        %.3f s  read + decode + op_stats + render\n", cold);
    xpv_buf_free(&out);
    xpv_profile_free(p);
    free(buf);
    return 0;
}
