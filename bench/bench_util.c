/*
 * bench_util.c - helpers shared by the benchmark programs (see
 * bench_util.h).
 */
#include "bench_util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double bench_cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void *bench_read_all(const char *path, size_t *len) {
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

xpv_profile *bench_decode(void *buf, size_t len, void (*free_fn)(void *, size_t), double *secs) {
    double t0 = bench_now();
    xpv_decode_error derr;
    xpv_profile *p = xpv_decode(buf, len, free_fn, &derr);
    *secs = bench_now() - t0;
    if (!p) {
        fprintf(stderr, "decode failed: %s\n", derr.msg);
        exit(1);
    }
    return p;
}

void bench_buf_free(void *b, size_t n) {
    (void)n;
    free(b);
}

int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void bench_need_file(int argc, char **argv, const char *args) {
    if (argc >= 2) return;
    const char *slash = strrchr(argv[0], '/');
    fprintf(stderr, "usage: %s FILE.xplane.pb %s\n", slash ? slash + 1 : argv[0], args);
    exit(2);
}

int bench_reps(int argc, char **argv, int dflt) {
    bench_need_file(argc, argv, "[reps]");
    int reps = argc > 2 ? atoi(argv[2]) : dflt;
    return reps < 1 ? 1 : reps;
}

void bench_host_init(bench_host *h, const xpv_profile *p) {
    h->profiles[0] = p;
    h->names[0] = "host";
    h->hs = (xpv_hostset){1, h->profiles, h->names};
}

xpv_profile *bench_load_host(const char *path, bench_host *h) {
    size_t len;
    double decode_s;
    void *buf = bench_read_all(path, &len);
    xpv_profile *p = bench_decode(buf, len, bench_buf_free, &decode_s);
    bench_host_init(h, p);
    h->len = len;
    h->decode_s = decode_s;
    return p;
}
