/*
 * steps_fixture.h - hand-built profiles whose step analysis is known,
 * shared by test_analysis_steps.c, test_tool_overview_page.c and
 * test_tool_input_pipeline.c.  Header-only (static functions).
 *
 * sf_training(): a TF2/Keras-shaped GPU profile of 10 steps of 30 ms.
 * Step i starts at T = i * 30 ms:
 *   host  `train` [T, T+30] (_r=1, step_num=i)           -> host marker
 *         IteratorGetNext:IteratorGetNext [T, T+12]        -> Input 12 ms
 *         cuLaunchKernel [T+12, T+13] corr 2i              -> Kernel launch 1 ms
 *         cuLaunchKernel [T+13, T+14] corr 2i+1            (hidden by kernel A)
 *   GPU   kernel A [T+13, T+20] corr 2i, fp32              -> compute 7 ms
 *         kernel B [T+20, T+28] corr 2i+1, shape (half..)  -> compute 8 ms
 *   [T+28, T+30] nothing                                   -> All others 2 ms
 * So: step time 30 ms, input 40% (HIGHLY input-bound), kernel launch 3.3%,
 * all others 6.7%, device compute 50% of which 8/15 = 53.3% is 16-bit.
 * With `tfdata` set, the host also runs tf.data iterator events on another
 * thread: Iterator::Model [0, 5 ms] containing Iterator::Model::Map [1, 4]
 * containing Iterator::Model::Map::TFRecord [2, 3].
 */
#ifndef XPV_STEPS_FIXTURE_H
#define XPV_STEPS_FIXTURE_H

#include "tool.h"
#include "tool_xspace.h"

#define SF_MS INT64_C(1000000000)
#define SF_STEPS 10

/* The same profile with steps first .. first+n-1 (step i still at
 * T = i * 30 ms): hosts with different step sets, for the intersection. */
__attribute__((unused)) static xpv_profile *sf_training_steps(int tfdata, int first, int n) {
    int host, py;
    tx_space *s = tx_new_line("/host:CPU", 100, "python", &host, &py);
    int gpu = tx_plane(s, "/device:GPU:0");
    tx_plane_int(s, gpu, "compute_cap_major", 8);
    tx_plane_int(s, gpu, "compute_cap_minor", 0);
    tx_plane_str(s, gpu, "device_vendor", "Nvidia");
    int stream = tx_line(s, gpu, 7, "Stream #7(Kernel)", 0);
    for (int i = first; i < first + n; i++) {
        int64_t t = i * 30 * SF_MS;
        tx_event_t *e = tx_event(s, host, py, "train", t, 30 * SF_MS);
        tx_ev_int(s, host, e, "_r", 1);
        tx_ev_int(s, host, e, "step_num", i);
        tx_event(s, host, py, "IteratorGetNext:IteratorGetNext", t, 12 * SF_MS);
        e = tx_event(s, host, py, "cuLaunchKernel", t + 12 * SF_MS, SF_MS);
        tx_ev_int(s, host, e, "correlation_id", 2 * i);
        e = tx_event(s, host, py, "cuLaunchKernel", t + 13 * SF_MS, SF_MS);
        tx_ev_int(s, host, e, "correlation_id", 2 * i + 1);
        e = tx_event(s, gpu, stream, "volta_sgemm_128x64_nn", t + 13 * SF_MS, 7 * SF_MS);
        tx_ev_int(s, gpu, e, "correlation_id", 2 * i);
        tx_ev_ref(s, gpu, e, "kernel_details", "regs:32 static_shared:0 dynamic_shared:0 grid:1,1,1 block:128,1,1 occ_pct:50");
        tx_ev_str(s, gpu, e, "tf_op", "model/dense/MatMul:MatMul");
        e = tx_event(s, gpu, stream, "elementwise_kernel", t + 20 * SF_MS, 8 * SF_MS);
        tx_ev_int(s, gpu, e, "correlation_id", 2 * i + 1);
        tx_ev_str(s, gpu, e, "shape", "(half[2,3])");
        tx_ev_str(s, gpu, e, "tf_op", "model/relu/Relu:Relu");
    }
    /* Events of the python line are in start order, parents first (train,
     * IteratorGetNext, the launches), as capture writes them. */
    if (tfdata) {
        int data = tx_line(s, host, 300, "tf_data_iterator_get_next", 0);
        tx_event(s, host, data, "Iterator::Model", 0, 5 * SF_MS);
        tx_event(s, host, data, "Iterator::Model::Map", 1 * SF_MS, 3 * SF_MS);
        tx_event(s, host, data, "Iterator::Model::Map::TFRecord", 2 * SF_MS, SF_MS);
    }
    return tx_decode(s);
}

__attribute__((unused)) static xpv_profile *sf_training(int tfdata) {
    return sf_training_steps(tfdata, 0, SF_STEPS);
}

/* A hostset of one or more profiles named h0, h1, ... */
typedef struct sf_hosts {
    const xpv_profile *p[4];
    const char *names[4];
    xpv_hostset hs;
} sf_hosts;

__attribute__((unused)) static void sf_hosts_init(sf_hosts *h, xpv_profile *const *ps, size_t n) {
    static const char *const names[] = {"h0", "h1", "h2", "h3"};
    for (size_t i = 0; i < n; i++) {
        h->p[i] = ps[i];
        h->names[i] = names[i];
    }
    h->hs.n = n;
    h->hs.profiles = h->p;
    h->hs.hostnames = h->names;
}

#endif
