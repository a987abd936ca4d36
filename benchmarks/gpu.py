"""GPU timings (`python benchmarks/bench.py --device gpu`): W2, W4 (4M and 64M float32) and W5
(its spec sizes, and GPU sizes: N 8192, D 4096, H 4096, out 1024) compiled for the GPU,
against the same function run eagerly on cupy arrays, `cupy.fuse` (W4), and `jax.jit` and
`torch.compile` (W4) where JAX or PyTorch has a GPU. Every timed round ends with `cupy.cuda.Device().synchronize()`, so a time is
the work done, not its launch. Writes results-gpu.json and, with matplotlib, results-gpu.png;
the last line printed is the one-line summary scripts/gpu_check.sh shows.
"""
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import autograph_lite as ag  # noqa: E402
from benchmarks.stats import quartiles  # noqa: E402
from examples.models import (elementwise_chain, elementwise_inputs, mlp_step, mlp_step_inputs,  # noqa: E402
                             rnn, rnn_inputs)

CASES = [  # name, ag function, inputs
    ("W2 rnn", rnn, lambda: rnn_inputs()),
    ("W4 elementwise_chain 4M", elementwise_chain, lambda: elementwise_inputs(n=4_000_000)),
    ("W4 elementwise_chain 64M", elementwise_chain, lambda: elementwise_inputs(n=64_000_000)),
    ("W5 mlp_step", mlp_step, lambda: _float32(mlp_step_inputs())),
    ("W5 mlp_step GPU sizes", mlp_step, lambda: _float32(mlp_step_inputs(n=8192, d=4096, h=4096, out=1024))),
]


def _float32(values):
    return tuple(v.astype(np.float32) if isinstance(v, np.ndarray) else np.float32(v) for v in values)


def _fused_chain(cupy):
    @cupy.fuse()
    def chain(x):  # cupy.fuse needs a named function (a lambda fails to compile)
        return cupy.tanh(x * 1.5 + 0.5) * (0.5 * cupy.tanh(x * 0.5) + 0.5) - 0.25 * x * x
    return chain


def _torch_gpu():
    try:
        import torch
        return torch if torch.cuda.is_available() else None
    except Exception:
        return None


def _jax_gpu():
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # else jax takes 75% of the GPU first
    try:
        import jax
        return jax if jax.devices("gpu") else None
    except Exception:
        return None


def timed(fn, args, sync, repeats):
    """(median, (q1, q3)) seconds per call, each round synchronized."""
    for _ in range(3):
        fn(*args)
    sync()
    calls, samples = 1, []
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        sync()
        if time.perf_counter() - start > 0.02 or calls >= 1024:
            break
        calls *= 2
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        sync()
        samples.append((time.perf_counter() - start) / calls)
    low, median, high = quartiles(samples)
    return median, (low, high)


def main(repeats, out_dir):
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        print(f"GPU bench: no GPU here ({type(e).__name__}: {e})")
        return 1
    return run(cupy, "gpu", CASES, repeats, out_dir, _jax_gpu(), _torch_gpu())


def run(cupy, device, cases, repeats, out_dir, jax=None, torch=None):
    """Times `cases` on `device`, whose array module is `cupy` (the tests pass the stand-in)."""
    sync = cupy.cuda.Device().synchronize
    rows, failed = [], False
    print(f"{'workload':<28} {'cupy eager':>11} {'compiled':>11} {'speed-up':>9}  others (speed-up of compiled over each)")
    for name, fn, make_inputs in cases:
        host = make_inputs()
        args = tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in host)
        compiled = ag.function(fn)
        with ag.device(device):
            out, expected = compiled(*args), fn(*args)
            for e, c in zip(ag.nest.flatten(expected), ag.nest.flatten(out)):
                if not np.allclose(cupy.asnumpy(e), cupy.asnumpy(c), rtol=1e-4, atol=1e-5):
                    print(f"MISMATCH in {name}: compiled differs from cupy eager", file=sys.stderr)
                    failed = True
            ways = {"cupy eager": (fn, args), "compiled": (compiled, args)}
            if name.startswith("W4"):
                ways["cupy.fuse"] = (_fused_chain(cupy), args)
            if jax is not None and name.startswith("W4"):
                jitted = jax.jit(lambda x: jax.numpy.tanh(x * 1.5 + 0.5) * jax.nn.sigmoid(x) - 0.25 * x * x)
                jx = jax.device_put(host[0])
                ways["jax.jit"] = (lambda x: jitted(x).block_until_ready(), (jx,))
            if torch is not None and name.startswith("W4"):
                chain = torch.compile(lambda x: torch.tanh(x * 1.5 + 0.5) * torch.sigmoid(x) - 0.25 * x * x)

                def torch_chain(x, chain=chain):
                    out = chain(x)
                    torch.cuda.synchronize()  # torch's own stream: cupy's synchronize does not wait for it
                    return out
                ways["torch.compile"] = (torch_chain, (torch.as_tensor(host[0], device="cuda"),))
            times = {way: timed(f, a, sync, repeats) for way, (f, a) in ways.items()}
        t = {way: m for way, (m, _) in times.items()}
        others = "  ".join(f"{way} {t[way] / t['compiled']:.2f}x" for way in t if way not in ("cupy eager", "compiled"))
        print(f"{name:<28} {t['cupy eager'] * 1e3:>9.3f}ms {t['compiled'] * 1e3:>9.3f}ms "
              f"{t['cupy eager'] / t['compiled']:>8.2f}x  {others}")
        rows.append({"workload": name, "seconds": t, "iqr_seconds": {w: iqr for w, (_, iqr) in times.items()},
                     "speedup_over_cupy_eager": t["cupy eager"] / t["compiled"]})
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "results-gpu.json"), "w") as f:
        json.dump({"device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(), "repeats": repeats,
                   "workloads": rows}, f, indent=2)
    _chart(rows, os.path.join(out_dir, "results-gpu.png"))
    speedup = {r["workload"]: r["speedup_over_cupy_eager"] for r in rows}
    w4, w5 = speedup.get("W4 elementwise_chain 64M", float("nan")), speedup.get("W5 mlp_step GPU sizes", float("nan"))
    print(f"GPU bench: W4 64M {w4:.2f}x cupy eager (want >= 3), W5 GPU sizes {w5:.2f}x (want >= 1.5)"
          f"{'; MISMATCH' if failed else ''}")
    return 1 if failed else 0


def _chart(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    ways = sorted({w for r in rows for w in r["seconds"]})
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / len(ways)
    for k, way in enumerate(ways):
        xs = [i + k * width for i, r in enumerate(rows) if way in r["seconds"]]
        ys = [r["seconds"]["cupy eager"] / r["seconds"][way] for r in rows if way in r["seconds"]]
        ax.bar(xs, ys, width, label=way)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(rows))], [r["workload"] for r in rows], rotation=15)
    ax.set_ylabel("speed-up over cupy eager")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
