"""The workloads of shared/BENCHMARKS.md, each as handwritten numpy and as a user's ag code."""
import numpy as np

from examples.models import (collatz, collatz_inputs, lstm_cell, lstm_inputs, tanh_loop,
                             tanh_loop_inputs)


def tanh_loop_numpy(x):
    while x.sum() > 1:
        x = np.tanh(x)
    return x


def collatz_numpy(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def lstm_cell_numpy(x, h, c, w_x, w_h, b):
    gates = x @ w_x + h @ w_h + b
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731 - what a numpy user writes
    i, f, o = sig(gates[:, 0:10]), sig(gates[:, 10:20]), sig(gates[:, 20:30])
    c_new = f * c + i * np.tanh(gates[:, 30:40])
    return o * np.tanh(c_new), c_new


# id -> (handwritten numpy, ag function, inputs)
WORKLOADS = {
    "W1 tanh_loop": (tanh_loop_numpy, tanh_loop, tanh_loop_inputs),
    "W3 lstm_cell": (lstm_cell_numpy, lstm_cell, lstm_inputs),
    "W6 collatz": (collatz_numpy, collatz, collatz_inputs),
}
