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
from examples.train_weights_on_self import main as train_weights_on_self  # noqa: E402


def same(a, b):
    a, b = ag.nest.flatten(a), ag.nest.flatten(b)
    return len(a) == len(b) and all(np.allclose(x, y, rtol=1e-5, atol=1e-6) for x, y in zip(a, b))


def main():
    header = (f"{'function':<30} {'first call':>11} {'native from':>12} {'eager':>10} {'compiled (IQR)':>26} "
              f"{'speed-up':>9}  same result")
    print(header)
    print("-" * len(header))
    for name, fn, make_inputs in EXAMPLES:
        args = make_inputs()
        compiled = ag.function(fn)
        first, native_from = first_call_seconds(lambda: ag.function(fn), args)
        eager_t, _ = median_seconds(fn, args)
        compiled_t, (low, high) = median_seconds(compiled, args)
        ok = same(fn(*args), compiled(*args))
        print(f"{name:<30} {fmt_time(first):>11} {fmt_time(native_from):>12} {fmt_time(eager_t):>10} "
              f"{fmt_time(compiled_t) + f' ({fmt_time(low)}-{fmt_time(high)})':>26} "
              f"{eager_t / compiled_t:>8.2f}x  {'yes' if ok else 'NO'}")
    print("\nmedians of 7 rounds after warm-up (IQR: the middle half of the rounds); first call = convert +"
          "\ntrace + lower + one run; native from = from the first call until its native code runs: the calls"
          "\nup to the tier-up and the C compile they start in the background (fast once the kernel cache has it)\n")
    train_mlp()
    eager, compiled, traces = train_weights_on_self(steps=100, verbose=False)
    print(f"\nweights on self, updated outside the compiled step (examples/train_weights_on_self.py): "
          f"100 losses {'equal' if eager == compiled else 'DIFFER from'} eager's, {traces} trace")
    print("\nThe lowered plan of lstm_cell:\n")
    print(ag.function(EXAMPLES[0][1]).get_concrete_function(*EXAMPLES[0][2]()).plan.source)


if __name__ == "__main__":
    main()
