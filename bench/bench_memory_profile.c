/*
 * bench_memory_profile.c - speed of the memory profile converter
 * (tools/memory_profile.c) on one host file.
 *
 *   bench_memory_profile FILE.xplane.pb [reps]
 *
 * Reads and decodes the file once (decode time is the baseline), then
 * renders memory_profile `reps` times (default 3) and prints the best wall
 * and process CPU time and the output size (two runs must agree).
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
#include "tool.h"

extern const xpv_tool xpv_tool_memory_profile;

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

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_memory_profile FILE.xplane.pb [reps]\n");
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    if (reps < 1) reps = 1;
    size_t len;
    void *buf = read_all(argv[1], &len);
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
    double best = 1e30, best_cpu = 1e30;
    size_t outlen = 0;
    for (int r = 0; r < reps; r++) {
        xpv_buf out;
        xpv_buf_init(&out);
        t0 = now();
        double c0 = cpu_now();
        if (xpv_tool_memory_profile.render(&hs, NULL, &q, &out, &err) != 0) {
            fprintf(stderr, "render failed: %s\n", err.msg);
            return 1;
        }
        double t = now() - t0, c = cpu_now() - c0;
        if (t < best) best = t;
        if (c < best_cpu) best_cpu = c;
        outlen = out.len;
        xpv_buf_free(&out);
    }
    printf("file            %.1f MB\n", (double)len / 1e6);
    printf("decode          %.3f s (baseline)\n", tdec);
    printf("memory_profile  %.3f s  (CPU %.3f s) = %.2fx decode, %zu bytes (best of %d)\n", best,
           best_cpu, best / tdec, outlen, reps);
    xpv_profile_free(p);
    free(buf);
    return 0;
}
