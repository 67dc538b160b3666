/*
 * arena.c - bump allocator backed by malloc'ed chunks.
 */
#include "arena.h"

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct xpv_arena_chunk {
    xpv_arena_chunk *next;
    size_t cap;
    size_t used;
    _Alignas(16) unsigned char data[];
};

/* The innermost xpv_oom_run() of this thread. */
typedef struct oom_scope {
    jmp_buf jb;
    struct oom_scope *prev;
    size_t failed;
} oom_scope;

static _Thread_local oom_scope *oom_top;

static _Noreturn void oom(size_t n) {
    oom_scope *s = oom_top;
    if (s) {
        oom_top = s->prev;
        s->failed = n;
        longjmp(s->jb, 1);
    }
    fprintf(stderr, "xpview: out of memory allocating %zu bytes\n", n);
    abort();
}

void xpv_oom_raise(size_t n) { oom(n); }

int xpv_oom_run(int (*fn)(void *arg), void *arg, size_t *failed) {
    oom_scope s;
    s.prev = oom_top;
    s.failed = 0;
    oom_top = &s;
    if (setjmp(s.jb)) {
        /* oom() has already popped the scope. */
        if (failed) *failed = s.failed;
        return XPV_OOM_FAILED;
    }
    int r = fn(arg);
    oom_top = s.prev;
    return r;
}

/* XPV_ALLOC_LIMIT, read once: SIZE_MAX when unset or malformed. */
static size_t alloc_limit(void) {
    static size_t limit;    /* 0 = not read yet; racing readers agree */
    size_t l = __atomic_load_n(&limit, __ATOMIC_RELAXED);
    if (!l) {
        const char *v = getenv("XPV_ALLOC_LIMIT");
        char *end = NULL;
        unsigned long long x = v && *v ? strtoull(v, &end, 10) : 0;
        l = (v && *v && end && !*end && x) ? (size_t)x : SIZE_MAX;
        __atomic_store_n(&limit, l, __ATOMIC_RELAXED);
    }
    return l;
}

void *xpv_xmalloc(size_t n) {
    void *p = n <= alloc_limit() ? malloc(n ? n : 1) : NULL;
    if (!p) oom(n);
    return p;
}

void *xpv_xcalloc(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) oom(SIZE_MAX);
    void *p = count * size <= alloc_limit() ? calloc(count ? count : 1, size ? size : 1) : NULL;
    if (!p) oom(count * size);
    return p;
}

void *xpv_xrealloc(void *p, size_t n) {
    void *q = n <= alloc_limit() ? realloc(p, n ? n : 1) : NULL;
    if (!q) oom(n);
    return q;
}

char *xpv_xstrdup(const char *s) {
    size_t n = strlen(s);
    char *d = xpv_xmalloc(n + 1);
    memcpy(d, s, n + 1);
    return d;
}

struct xpv_arena_block {
    xpv_arena_block *next;
    void *p;
};

void xpv_arena_adopt(xpv_arena *a, void *p, size_t n) {
    xpv_arena_block *b = xpv_arena_alloc(a, sizeof *b);
    b->p = p;
    b->next = a->adopted;
    a->adopted = b;
    a->total += n;
}

void xpv_arena_init(xpv_arena *a, size_t chunk_size) {
    a->head = NULL;
    a->adopted = NULL;
    a->chunk_size = chunk_size ? chunk_size : 64 * 1024;
    a->total = 0;
}

void *xpv_arena_alloc(xpv_arena *a, size_t n) {
    void *p = xpv_arena_try_alloc(a, n);
    if (!p) oom(n);
    return p;
}

void *xpv_arena_try_alloc(xpv_arena *a, size_t n) {
    if (n > SIZE_MAX - 15 - sizeof(xpv_arena_chunk)) return NULL;
    n = (n + 15) & ~(size_t)15;
    xpv_arena_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        /* Big requests get a chunk of their own so the small-object chunk
         * in use is not abandoned half full. */
        size_t cap = n > a->chunk_size / 4 ? n : a->chunk_size;
        xpv_arena_chunk *nc = cap <= alloc_limit() ? malloc(sizeof(*nc) + cap) : NULL;
        if (!nc) return NULL;
        nc->cap = cap;
        nc->used = 0;
        a->total += sizeof(*nc) + cap;
        if (c && cap == n && c->cap - c->used >= 64) {
            /* Keep the current chunk at the head for small objects. */
            nc->next = c->next;
            c->next = nc;
            nc->used = n;
            return nc->data;
        }
        nc->next = c;
        a->head = c = nc;
    }
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

void *xpv_arena_calloc(xpv_arena *a, size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) oom(SIZE_MAX);
    void *p = xpv_arena_alloc(a, count * size);
    memset(p, 0, count * size);
    return p;
}

char *xpv_arena_strndup(xpv_arena *a, const char *s, size_t n) {
    char *d = xpv_arena_alloc(a, n + 1);
    if (n) memcpy(d, s, n); /* s may be NULL when n is 0 */
    d[n] = 0;
    return d;
}

void xpv_arena_free(xpv_arena *a) {
    for (xpv_arena_block *b = a->adopted; b; b = b->next) free(b->p);
    a->adopted = NULL;
    xpv_arena_chunk *c = a->head;
    while (c) {
        xpv_arena_chunk *n = c->next;
        free(c);
        c = n;
    }
    a->head = NULL;
    a->total = 0;
}
