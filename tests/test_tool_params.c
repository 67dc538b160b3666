/*
 * test_tool_params.c - the tools' parameters (tools/registry.c): every
 * parameter a tool or analysis reads with xpv_param(q, "...") is in the
 * known list the server keys rendered answers by (else two requests
 * differing in it would share one cached answer), read from the sources
 * themselves; numbers without leading zeros key alike.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tool.h"

/* Checks every xpv_param(q, "NAME") literal of the .c files in `dir` and
 * its sub-folders; returns how many were found. */
static size_t check_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) fail_msg("cannot open %s", dir);
    size_t found = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        if (de->d_type == DT_DIR) {
            char sub[4096];
            snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name);
            found += check_dir(sub);
            continue;
        }
        size_t n = strlen(de->d_name);
        if (n < 3 || strcmp(de->d_name + n - 2, ".c")) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        char line[4096];
        while (fgets(line, sizeof line, f)) {
            for (char *p = strstr(line, "xpv_param(q, \""); p; p = strstr(p + 1, "xpv_param(q, \"")) {
                char *s = p + strlen("xpv_param(q, \""), *e = strchr(s, '"');
                if (!e) continue;
                *e = 0;
                if (!xpv_param_known(s)) fail_msg("%s reads parameter %s, not in known_params", path, s);
                found++;
                *e = '"';
            }
        }
        fclose(f);
    }
    closedir(d);
    return found;
}

static void test_params_known(void **state) {
    (void)state;
    const char *src = getenv("XPV_SRC");
    char dir[4096];
    size_t n = 0;
    snprintf(dir, sizeof dir, "%s/tools", src ? src : ".");
    n += check_dir(dir);
    snprintf(dir, sizeof dir, "%s/analysis", src ? src : ".");
    n += check_dir(dir);
    print_message("%zu parameter reads, all known\n", n);
    assert_true(n >= 20);
    assert_false(xpv_param_known("junk"));
    assert_true(xpv_param_numeric("memory_space"));
    assert_false(xpv_param_numeric("search"));
}

TU_MAIN(cmocka_unit_test(test_params_known))
