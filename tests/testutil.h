/*
 * testutil.h - helpers shared by the cmocka tests.
 */
#ifndef XPV_TESTUTIL_H
#define XPV_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "buf.h"
#include "model.h"
#include "synth.h"

/* ../shared beside the checkout ($XPV_SHARED), or NULL when absent. */
const char *tu_shared_dir(void);
/* Read a whole file into malloc'ed memory; NULL on error. */
void *tu_read_file(const char *path, size_t *len);
/* Recursively collect files under `dir` whose name ends with `suffix`.
 * Returns a NULL-terminated malloc'ed array of malloc'ed paths. */
char **tu_find_files(const char *dir, const char *suffix);
void tu_free_list(char **list);
/* A fresh temporary directory (removed by tu_rmrf). */
char *tu_mkdtemp(void);
void tu_rmrf(const char *path);
/* Every file under $XPV_SHARED/testdata/real/<sub> (the whole folder when
 * `sub` is NULL) whose name ends with `suffix`, as tu_find_files; fails the
 * test if the folder cannot be listed.  Call after TU_SKIP_NO_SHARED. */
char **tu_real_files(const char *sub, const char *suffix);
/* Every *.xplane.pb under $XPV_SHARED/testdata/real except those under a
 * corrupt/ folder, as tu_find_files (the caller frees it with
 * tu_free_list); fails the test if the folder cannot be listed.  Call after
 * TU_SKIP_NO_SHARED. */
char **tu_real_xplanes(void);
/* Call `fn(path)` for every file under $XPV_SHARED/testdata/real whose name
 * ends with `suffix` (corrupt/ included) and return how many there were.
 * `path` is borrowed for the call.  Skips the test when ../shared is absent
 * or holds no such file. */
size_t tu_each_real_file(const char *suffix, void (*fn)(const char *path));
/* Peak resident memory (KiB) added while `fn(arg)` runs in a forked child:
 * VmHWM after resetting it (clear_refs 5) minus VmRSS before; -1 when the
 * kernel cannot reset it.  Fails the test when `fn` returns non-zero (the
 * measured work itself failed) or the child cannot report. */
long tu_child_peak_growth_kb(int (*fn)(void *), void *arg);
/* Group fixtures for TU_MAIN_WITH: a new temporary directory, tu_tmpdir,
 * for the tests of a file, removed with what it holds after them. */
extern char *tu_tmpdir;
int tu_tmpdir_setup(void **state);
int tu_tmpdir_teardown(void **state);
/* Decode the XSpace bytes built in `b` into a profile that owns them (`b`
 * is left empty); fails the test when they do not decode. */
xpv_profile *tu_decode_buf(xpv_buf *b);
/* Host `host` of the synthetic run `o` (the caller has applied
 * xpv_synth_defaults), decoded as tu_decode_buf. */
xpv_profile *tu_synth_profile(const xpv_synth_opts *o, int host);
/* Compare `got` with the golden file tests/golden/<dir>/<name> of the
 * source tree ($XPV_SRC, else "."): as JSON values when `by_value`, else
 * byte for byte.  XPV_UPDATE_GOLDEN=1 (re)writes the file first.  Fails the
 * test when the file is missing or differs. */
void tu_check_golden(const char *dir, const char *name, const char *got, int by_value);
/* The main() of a test file: runs the cmocka tests given (cmocka_unit_test
 * entries) as one group, around group fixtures `setup` and `teardown` (or
 * NULL) for TU_MAIN_WITH.  An argument runs only the tests whose names match
 * it (cmocka's filter, '*' and '?' wildcards):
 *   build/tests/test_cache 'test_cache__single*'                        */
#define TU_MAIN_WITH(setup, teardown, ...)                                    \
    int main(int argc, char **argv) {                                         \
        const struct CMUnitTest tests[] = {__VA_ARGS__};                      \
        if (argc > 1) cmocka_set_test_filter(argv[1]);                        \
        return cmocka_run_group_tests(tests, setup, teardown);                \
    }
#define TU_MAIN(...) TU_MAIN_WITH(NULL, NULL, __VA_ARGS__)
/* Print a clear skip message and skip the current cmocka test. */
#define TU_SKIP_NO_SHARED()                                                   \
    do {                                                                      \
        if (!tu_shared_dir()) {                                               \
            print_message("SKIP: ../shared/testdata not present; real-file " \
                          "checks skipped\n");                               \
            skip();                                                           \
        }                                                                     \
    } while (0)

#endif
