/*
 * fuzz_tools.c - libFuzzer target: every converter on a decoded fuzz input.
 *
 * Input: optionally a first line "Q<query>\n" whose '&'-separated k=v
 * pairs become the request parameters (raw, not %-decoded), then the
 * XSpace bytes.  When they decode, every tool of xpv_tools() renders the
 * profile as a one-host set (and, for tools that accept ALL_HOSTS, as a
 * two-host set of the same profile), with its derived kind built first,
 * whether or not the tool says it is available (each derived kind built
 * once per host set and shared, as the server's cache shares it): a
 * converter must never crash, whatever the profile holds.  Output must be non-empty on success.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "xplane.h"
#include "tool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXP 16
#define MAXK 8   /* derived kinds (op stats, trace index, tf.data ...) */

/* Derived data built once per kind and host set, as the server's cache
 * does: ten tools share the op stats, and building them per tool made
 * the op stats builder most of each execution. */
typedef struct {
    const xpv_derived_kind *kind;
    void *data;     /* NULL once its build failed */
} built;

static void render_all(const xpv_hostset *hs, const xpv_params *params, int multi) {
    built made[MAXK];
    size_t nmade = 0;
    for (const xpv_tool *const *t = xpv_tools(); *t; t++) {
        const xpv_tool *tl = *t;
        if (multi && !(tl->flags & (XPV_TOOL_ALL_HOSTS_ONLY | XPV_TOOL_ALL_HOSTS_OK)) &&
            strncmp(tl->name, "trace_viewer", 12) != 0)
            continue;
        if (!multi && tl->available) (void)tl->available(hs->profiles[0]);
        void *derived = NULL;
        xpv_err err;
        if (tl->derived) {
            size_t k = 0;
            while (k < nmade && made[k].kind != tl->derived) k++;
            if (k == nmade) {
                if (nmade == MAXK) abort();
                memset(&err, 0, sizeof err);
                made[k].kind = tl->derived;
                made[k].data = tl->derived->build(hs, &err);
                if (!made[k].data && err.status == 0) abort();   /* failures must say why */
                if (made[k].data && tl->derived->size) (void)tl->derived->size(made[k].data);
                nmade++;
            }
            derived = made[k].data;
            if (!derived) continue;
        }
        xpv_buf out;
        xpv_buf_init(&out);
        memset(&err, 0, sizeof err);
        int rc = xpv_tool_render(tl, hs, derived, params, &out, &err);
        if (rc == 0 && out.len == 0) abort();
        if (rc != 0 && err.status == 0) abort();
        xpv_buf_free(&out);
    }
    for (size_t k = 0; k < nmade; k++)
        if (made[k].data && made[k].kind->free) made[k].kind->free(made[k].data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *keys[MAXP], *vals[MAXP];
    char *qcopy = NULL;
    size_t np = 0;
    if (size && data[0] == 'Q') {
        const uint8_t *nl = memchr(data, '\n', size);
        if (!nl) return 0;
        size_t ql = (size_t)(nl - data) - 1;
        qcopy = malloc(ql + 1);
        memcpy(qcopy, data + 1, ql);
        qcopy[ql] = '\0';
        char *save = NULL;
        for (char *kv = strtok_r(qcopy, "&", &save); kv && np < MAXP;
             kv = strtok_r(NULL, "&", &save)) {
            char *eq = strchr(kv, '=');
            if (eq) *eq = '\0';
            keys[np] = kv;
            vals[np] = eq ? eq + 1 : "";
            np++;
        }
        size -= (size_t)(nl - data) + 1;
        data = nl + 1;
    }
    /* An exact-size copy, so ASan sees reads past the end. */
    uint8_t *buf = malloc(size ? size : 1);
    if (size) memcpy(buf, data, size);
    xpv_decode_error derr;
    xpv_profile *p = xpv_decode(buf, size, NULL, &derr);
    if (p) {
        xpv_params params = {np, keys, vals, NULL};
        const char *tag = xpv_param(&params, "tag");   /* as the request parser */
        params.tag = tag && *tag ? tag : NULL;
        const xpv_profile *one[1] = {p};
        const char *one_name[1] = {"host0"};
        xpv_hostset hs1 = {1, one, one_name};
        render_all(&hs1, &params, 0);
        const xpv_profile *two[2] = {p, p};
        const char *two_names[2] = {"host0", "host1"};
        xpv_hostset hs2 = {2, two, two_names};
        render_all(&hs2, &params, 1);
        xpv_profile_free(p);
    }
    free(buf);
    free(qcopy);
    return 0;
}
