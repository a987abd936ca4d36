"""W5 as a user writes it: train a two-layer network with SGD, the step compiled.

    python examples/train_mlp.py
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import autograph_lite as ag  # noqa: E402
from examples.models import mlp_step, mlp_step_inputs  # noqa: E402


def train(steps=100, compiled=True):
    """Run `steps` SGD steps; returns the loss before each step and the seconds taken."""
    w1, b1, w2, b2, x, y, lr = mlp_step_inputs()
    step = ag.function(mlp_step) if compiled else mlp_step
    losses, start = [], time.perf_counter()
    for _ in range(steps):
        loss, w1, b1, w2, b2 = step(w1, b1, w2, b2, x, y, lr)
        losses.append(float(loss))
    return losses, time.perf_counter() - start


def main():
    losses, seconds = train()
    _, eager_seconds = train(compiled=False)
    print(f"training W5 (64x1000 -> 100 -> 10, SGD) for {len(losses)} steps, compiled step:")
    for i in (0, 24, 49, 74, 99):
        print(f"  step {i + 1:>3}: loss {losses[i]:.5f}")
    print(f"  {seconds * 1e3:.0f} ms compiled vs {eager_seconds * 1e3:.0f} ms eager "
          f"({eager_seconds / seconds:.2f}x), first step included")


if __name__ == "__main__":
    main()
