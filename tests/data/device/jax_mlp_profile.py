"""Profiles a tiny jitted 2-layer-MLP training loop with jax.profiler.trace.

usage: python3 jax_mlp_profile.py LOGDIR [STEPS] [PYTHON_TRACER_LEVEL]
Writes LOGDIR/plugins/profile/<run>/<host>.xplane.pb.
"""
import inspect
import os
import sys

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402


def init_params(key):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (64, 128)) * 0.1, "b1": jnp.zeros((128,)),
            "w2": jax.random.normal(k2, (128, 10)) * 0.1, "b2": jnp.zeros((10,))}


def model(p, x):
    with jax.named_scope("mlp"):
        with jax.named_scope("layer1"):
            h = jax.nn.relu(x @ p["w1"] + p["b1"])
        with jax.named_scope("layer2"):
            return h @ p["w2"] + p["b2"]


def loss_fn(p, x, y):
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(model(p, x)) * y, axis=-1))


@jax.jit
def train_step(p, x, y):
    loss, g = jax.value_and_grad(loss_fn)(p, x, y)
    return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g), loss


def make_data():
    kx, ky = jax.random.split(jax.random.PRNGKey(1))
    x = jax.random.normal(kx, (256, 64))
    y = jax.nn.one_hot(jax.random.randint(ky, (256,), 0, 10), 10)
    return init_params(jax.random.PRNGKey(0)), x, y


def main():
    logdir = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    p, x, y = make_data()
    p, loss = train_step(p, x, y)  # compile + warm up outside the trace
    loss.block_until_ready()
    kwargs = {"create_perfetto_link": False}
    if len(sys.argv) > 3 and "profiler_options" in inspect.signature(jax.profiler.trace).parameters:
        opts = jax.profiler.ProfileOptions()
        opts.python_tracer_level = int(sys.argv[3])
        kwargs["profiler_options"] = opts
    if hasattr(jax.profiler, "ProfileOptions"):
        o = kwargs.get("profiler_options") or jax.profiler.ProfileOptions()
        print("ProfileOptions:", {k: getattr(o, k) for k in dir(o) if not k.startswith("_")
                                  and not callable(getattr(o, k))})
    with jax.profiler.trace(logdir, **kwargs):
        for i in range(steps):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                p, loss = train_step(p, x, y)
                loss.block_until_ready()
    print("final loss", float(loss))


if __name__ == "__main__":
    main()
