"""README command 1: each example run eagerly and compiled, with timings.

    python examples/demo.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import autograph_lite as ag  # noqa: E402
from examples.models import EXAMPLES  # noqa: E402
from examples.timing import first_call_seconds, fmt_time, median_seconds  # noqa: E402
from examples.train_mlp import main as train_mlp  # noqa: E402


def same(a, b):
    a, b = ag.nest.flatten(a), ag.nest.flatten(b)
    return len(a) == len(b) and all(np.allclose(x, y, rtol=1e-5, atol=1e-6) for x, y in zip(a, b))


def main():
    header = f"{'function':<30} {'first call':>11} {'eager':>10} {'compiled':>10} {'speed-up':>9}  same result"
    print(header)
    print("-" * len(header))
    for name, fn, make_inputs in EXAMPLES:
        args = make_inputs()
        compiled = ag.function(fn)
        first = first_call_seconds(lambda: ag.function(fn), args)
        eager_t = median_seconds(fn, args)
        compiled_t = median_seconds(compiled, args)
        ok = same(fn(*args), compiled(*args))
        print(f"{name:<30} {fmt_time(first):>11} {fmt_time(eager_t):>10} {fmt_time(compiled_t):>10} "
              f"{eager_t / compiled_t:>8.2f}x  {'yes' if ok else 'NO'}")
    print("\nmedians of 7 rounds after warm-up; first call = convert + trace + lower + one run\n")
    train_mlp()
    print("\nThe lowered plan of lstm_cell:\n")
    print(ag.function(EXAMPLES[0][1]).get_concrete_function(*EXAMPLES[0][2]()).plan.source)


if __name__ == "__main__":
    main()
