"""Programs from a new user's first hour, eager against compiled, in one process.

    python benchmarks/first_hour.py [--repeats 15]

Each is written as a numpy user writes it (Python loops that unroll, scalar loops, an early
`return` inside a loop). Prints, per program, the median and IQR of each measure:
- mandelbrot: a Python loop unrolled 60 times on 80x120 complex values: time per call and the
  peak of memory traced (numpy reports its buffers to tracemalloc) during one call;
- rk4 / value_and_grad: tracing cost of 200 unrolled RK4 steps and of 50 unrolled gradient
  steps (a fresh `ag.function` per sample: the first call, which traces), and per traced node;
- newton_sqrt, bisection: small scalar loops, time per call;
- early_return_150: `for i in range(150)` with a tensor `if ...: return` inside (its result).
No assertions on time: the figures are for the reader (issue 27's targets beside them).
"""
import argparse
import os
import statistics
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("AG_NATIVE_BUILD", "wait")  # steady state: native code in place from its tier-up run
import autograph_lite as ag  # noqa: E402
from benchmarks.stats import quartiles  # noqa: E402
from examples.models import bisection, mandelbrot  # noqa: E402


def _deriv(y):
    return -0.5 * y + np.sin(y)


def rk4(y, h):
    for _ in range(200):
        k1 = _deriv(y)
        k2 = _deriv(y + 0.5 * h * k1)
        k3 = _deriv(y + 0.5 * h * k2)
        k4 = _deriv(y + h * k3)
        y = y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def _loss(w, x, y):
    return np.mean((np.tanh(x @ w) - y) ** 2)


def gradient_steps(w, x, y):
    for _ in range(50):
        loss, g = ag.value_and_grad(_loss)(w, x, y)
        w = w - 0.1 * g
    return w, loss


def newton_sqrt(a):
    x = a
    for _ in range(20):
        x = 0.5 * (x + a / x)
    return x


def early_return_150(x):
    for i in range(150):
        if x[i % x.shape[0]] > 100:
            return x * i
        x = x + 1
    return x


def _spread(samples, scale=1.0):
    low, median, high = quartiles(samples)
    return f"{median * scale:9.3f} (IQR {(high - low) * scale:.3f})"


def _timed(fn, args, repeats, inner=1):
    for _ in range(3):  # past the tier-up run
        fn(*args)
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(inner):
            fn(*args)
        samples.append((time.perf_counter() - t) / inner)
    return samples


def _peak(fn, args):
    fn(*args)
    tracemalloc.start()
    fn(*args)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def _trace_cost(fn, args, repeats):
    """Seconds to trace (the graph built), per traced node, and to the first call's result (the
    trace, the passes, the plan and its native source), each over `repeats` fresh functions."""
    traces, per_node, first_calls = [], [], []
    for _ in range(repeats):
        compiled = ag.function(fn)
        t = time.perf_counter()
        concrete = compiled.get_concrete_function(*args)
        traces.append(time.perf_counter() - t)
        nodes = sum(1 for _ in concrete.graph.walk())
        per_node.append(traces[-1] / nodes)
        t = time.perf_counter()
        ag.function(fn)(*args)
        first_calls.append(time.perf_counter() - t)
    return traces, per_node, nodes, first_calls


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args(argv)
    n = max(args.repeats, 2)
    x, y = np.linspace(-2, 1, 120), np.linspace(-1.2, 1.2, 80)
    c = x[None, :] + 1j * y[:, None]
    compiled = ag.function(mandelbrot)
    assert np.array_equal(compiled(c), mandelbrot(c))
    eager_ms, compiled_ms = _timed(mandelbrot, (c,), n), _timed(compiled, (c,), n)
    eager_peak, compiled_peak = _peak(mandelbrot, (c,)), _peak(compiled, (c,))
    print(f"mandelbrot 80x120, 60 unrolled steps: eager {_spread(eager_ms, 1e3)} ms, compiled "
          f"{_spread(compiled_ms, 1e3)} ms; peak memory eager {eager_peak / 1e6:.2f} MB, compiled "
          f"{compiled_peak / 1e6:.2f} MB ({compiled_peak / eager_peak:.2f}x; target <= 1.5x)")

    rng = np.random.default_rng(0)
    data = (rng.standard_normal((8, 3)), rng.standard_normal((32, 8)), rng.standard_normal((32, 3)))
    for name, fn, inputs, target in (
            ("rk4, 200 unrolled steps", rk4, (np.array([1.0, 0.5]), 0.01), "; targets <= 0.5 s, <= 20 us"),
            ("value_and_grad, 50 unrolled steps", gradient_steps, data, "")):
        traces, per_node, nodes, first_calls = _trace_cost(fn, inputs, max(n // 3, 2))
        print(f"{name}: trace {_spread(traces)} s for {nodes} nodes ({_spread(per_node, 1e6)} us a "
              f"node{target}); first call {_spread(first_calls)} s")

    for name, fn, inputs in (("newton_sqrt", newton_sqrt, (np.float64(2.0),)),
                             ("bisection", bisection, (np.float64(2.0), np.float64(3.0)))):
        compiled = ag.function(fn)
        assert compiled(*inputs) == fn(*inputs)
        eager_us = _timed(fn, inputs, n, inner=200)
        compiled_us = _timed(compiled, inputs, n, inner=200)
        print(f"{name}: eager {_spread(eager_us, 1e6)} us, compiled {_spread(compiled_us, 1e6)} us "
              f"({statistics.median(compiled_us) / statistics.median(eager_us):.2f}x)")

    x = np.zeros(4)
    try:
        same = np.array_equal(ag.function(early_return_150)(x), early_return_150(x))
        print(f"early_return_150: compiles, {'equals' if same else 'DIFFERS FROM'} eager")
    except RecursionError as e:
        print(f"early_return_150: RecursionError ({e})")


if __name__ == "__main__":
    main()
