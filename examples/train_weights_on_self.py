"""A training loop whose weights live on `self` and are updated outside the compiled step.

    python examples/train_weights_on_self.py

`Regressor.loss_and_grads` is compiled once. It reads `self.W` and `self.b`, which the loop
replaces after each step (`self.W = self.W - lr * gW`) and scales in place every 25 steps.
A compiled call reads that state again on every call (arrays as graph inputs, `self.lr_scale`
as a guard), so the compiled losses equal the eager ones step for step.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import autograph_lite as ag  # noqa: E402


class Regressor:
    def __init__(self, n_in, n_hidden, seed=0):
        rng = np.random.default_rng(seed)
        self.W = rng.standard_normal((n_in, n_hidden)) * 0.5
        self.b = np.zeros(n_hidden)
        self.v = rng.standard_normal(n_hidden) * 0.5
        self.lr_scale = 1.0

    def loss_and_grads(self, x, y):
        h = np.tanh(x @ self.W + self.b)
        err = h @ self.v - y
        loss = (err * err).mean()
        d_pred = 2.0 * err / err.shape[0]
        d_h = d_pred[:, None] * self.v * (1.0 - h * h)
        return loss, x.T @ d_h, d_h.sum(axis=0), h.T @ d_pred


def train(model, step, x, y, steps=100, lr=0.1):
    losses = []
    for i in range(steps):
        loss, g_w, g_b, g_v = step(model, x, y)
        model.W = model.W - lr * model.lr_scale * g_w   # rebound outside the compiled step
        model.b -= lr * model.lr_scale * g_b            # changed in place
        model.v = model.v - lr * model.lr_scale * g_v
        if i % 25 == 24:
            model.lr_scale *= 0.5                        # a Python float the step does not read
        losses.append(float(loss))
    return losses


def main(steps=100, verbose=True):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 3))
    y = np.sin(x).sum(axis=1)
    eager = train(Regressor(3, 16), Regressor.loss_and_grads, x, y, steps)
    step = ag.function(Regressor.loss_and_grads)
    compiled = train(Regressor(3, 16), step, x, y, steps)
    if verbose:
        for i in range(0, steps, 20):
            print(f"step {i:3d}  eager loss {eager[i]:.6f}  compiled loss {compiled[i]:.6f}")
        print(f"{steps} steps, largest difference {max(abs(a - b) for a, b in zip(eager, compiled)):.2e}, "
              f"traces: {step.trace_count}")
    return eager, compiled, step.trace_count


if __name__ == "__main__":
    main()
