/*
 * op_metrics_fixture.h - building and reading op metrics in the tests of
 * analysis/ops/op_metrics.c and the TPU op tools.  Header-only.
 */
#ifndef XPV_OP_METRICS_FIXTURE_H
#define XPV_OP_METRICS_FIXTURE_H

#include <string.h>

#include "op_metrics.h"
#include "testutil.h"

#define MS 1000000000LL /* ps per ms */

/* The op named `name` in `db` (borrowed), or NULL. */
__attribute__((unused)) static const xpv_op_metric *om_find_op(const xpv_op_metrics_db *db,
                                                               const char *name) {
    for (size_t i = 0; i < db->n; i++)
        if (!strcmp(db->ops[i].name, name)) return &db->ops[i];
    return NULL;
}

/* Op metrics of `p` as the only host ("host"); fails the test when the
 * build fails.  The caller frees them with xpv_op_metrics_free. */
__attribute__((unused)) static xpv_op_metrics *om_build1(xpv_profile *p) {
    const xpv_profile *ps[1] = {p};
    const char *hn[1] = {"host"};
    xpv_hostset hs = {1, ps, hn};
    xpv_err err;
    xpv_op_metrics *m = xpv_op_metrics_build(&hs, &err);
    assert_non_null(m);
    return m;
}

#endif
