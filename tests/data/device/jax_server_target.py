"""Target for the remote capture: starts jax.profiler.start_server(PORT) and
runs the MLP training loop (jax_mlp_profile.py) for SECONDS, one step every
~20 ms.  Touches READY_FILE once the server is up and the step is compiled.

usage: python3 jax_server_target.py PORT SECONDS READY_FILE
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jax_mlp_profile import jax, make_data, train_step  # noqa: E402


def main():
    port, seconds, ready = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    server = jax.profiler.start_server(port)  # noqa: F841 (keep it alive)
    p, x, y = make_data()
    p, loss = train_step(p, x, y)
    loss.block_until_ready()
    open(ready, "w").close()
    t_end, i = time.time() + seconds, 0
    while time.time() < t_end:
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            p, loss = train_step(p, x, y)
            loss.block_until_ready()
        i += 1
        time.sleep(0.02)
    print("target ran %d steps" % i)


if __name__ == "__main__":
    main()
