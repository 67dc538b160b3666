/*
 * par.c - see par.h.
 */
#include "par.h"

#include <pthread.h>
#include <stddef.h>

#include "arena.h"

typedef struct half {
    void (*fn)(void *);
    void *arg;
    size_t failed;      /* the allocation that failed, 0 = none */
    int oom;
} half;

static int half_call(void *p) {
    half *h = p;
    h->fn(h->arg);
    return 0;
}

static void half_run(half *h) {
    h->oom = xpv_oom_run(half_call, h, &h->failed) == XPV_OOM_FAILED;
}

static void *half_thread(void *p) {
    half_run(p);
    return NULL;
}

void xpv_par_run(void (*fa)(void *), void *a, void (*fb)(void *), void *b) {
    half ha = {fa, a, 0, 0}, hb = {fb, b, 0, 0};
    pthread_t th;
    int threaded = pthread_create(&th, NULL, half_thread, &ha) == 0;
    half_run(&hb);
    if (threaded) pthread_join(th, NULL);
    else if (!hb.oom) half_run(&ha);
    if (hb.oom || ha.oom) xpv_oom_raise(hb.oom ? hb.failed : ha.failed);
}

void xpv_par_run_if(int parallel, void (*fa)(void *), void *a, void (*fb)(void *), void *b) {
    if (parallel) {
        xpv_par_run(fa, a, fb, b);
        return;
    }
    fb(b);
    fa(a);
}

/* xpv_par_many's shared state: the next job to take. */
typedef struct many {
    void (*fn)(void *);
    void *const *args;
    int n, next;
} many;

static void many_take(void *p) {
    many *m = p;
    for (;;) {
        int i = __atomic_fetch_add(&m->next, 1, __ATOMIC_RELAXED);
        if (i >= m->n) return;
        m->fn(m->args[i]);
    }
}

void xpv_par_many(void (*fn)(void *), void *const *args, int n) {
    enum { MAX = 64 };
    if (n <= 0) return;
    many m = {fn, args, n, 0};
    int nt = n < MAX ? n : MAX;
    half h[MAX];
    pthread_t th[MAX];
    int started[MAX] = {0};
    for (int i = 0; i < nt; i++) h[i] = (half){many_take, &m, 0, 0};
    for (int i = 1; i < nt; i++) started[i] = pthread_create(&th[i], NULL, half_thread, &h[i]) == 0;
    half_run(&h[0]);
    for (int i = 1; i < nt; i++) {
        if (started[i]) pthread_join(th[i], NULL);
        else half_run(&h[i]); /* (takes what is left, if anything) */
    }
    for (int i = 0; i < nt; i++)
        if (h[i].oom) xpv_oom_raise(h[i].failed);
}
