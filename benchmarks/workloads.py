"""The six benchmark workloads, each as handwritten numpy and as a user's ag code.

W1 tanh_loop: `while reduce_sum(x) > 1: x = tanh(x)` on a seeded float32 [10] vector
   (about 145 data-dependent iterations): per-op and per-iteration overhead.
W2 rnn: a basic RNN (batch 32, 50 steps, input 16, state 64) with per-example lengths
   masked by `where`, looping over a tensor range: a realistic recurrent loop.
W2b rnn_by_columns: W2 with batch-major inputs as a user writes it: `inputs[:, i]` (a strided
   column) per step, joined to the state by `np.concatenate` for one matmul (`--only W2` runs both).
W3 lstm_cell: one LSTM cell (units 10, input [10, 10]): dispatch cost of a short graph.
W4 elementwise_chain: `tanh(x*1.5 + 0.5) * sigmoid(x) - 0.25*x*x` on 4,000,000 float32:
   memory bandwidth, where fusion makes six passes over memory one.
W5 mlp_step: one SGD step of a 2-layer ReLU MLP (N 64, D 1000, H 100, 10 outputs) with
   `ag.grad`: gradients and a training loop.
W6 collatz: steps of the Collatz sequence from int32 27 (111): an `if` inside a `while`;
   `W6 collatz_0d` the same from a 0-d array, np.array(27, np.int32): no per-call tax for one.
W7 edit_distance: Levenshtein distance of two 1000-long int arrays, the DP table filled cell by
   cell in nested loops: a preallocate-and-fill loop (numba's home ground).
W8 jacobi_2d: NPBench's jacobi_2d, 50 steps on 200x200, two buffers written from each other
   through slices.
"""
import numpy as np

from examples.models import (collatz, collatz_inputs, edit_distance, edit_distance_inputs, elementwise_chain,
                             elementwise_inputs, jacobi_2d, jacobi_2d_inputs, lstm_cell, lstm_inputs, mlp_step,
                             mlp_step_inputs, rnn, rnn_by_columns, rnn_by_columns_inputs, rnn_inputs, tanh_loop,
                             tanh_loop_inputs)


def elementwise_chain_numpy(x):
    return np.tanh(x * 1.5 + 0.5) * (1 / (1 + np.exp(-x))) - 0.25 * x * x


def rnn_numpy(inputs, seq_len, w_in, w_state, b, w_out, b_out):
    state = np.zeros((inputs.shape[1], w_state.shape[0]), inputs.dtype)
    for i in range(inputs.shape[0]):
        updated = np.tanh(inputs[i] @ w_in + state @ w_state + b)
        state = np.where(i >= seq_len[:, None], state, updated)
    return state @ w_out + b_out


def rnn_by_columns_numpy(inputs, seq_len, w, b, w_out, b_out):
    state = np.zeros((inputs.shape[0], w.shape[1]), inputs.dtype)
    for i in range(inputs.shape[1]):
        updated = np.tanh(np.concatenate([inputs[:, i], state], axis=1) @ w + b)
        state = np.where(i >= seq_len[:, None], state, updated)
    return state @ w_out + b_out


def mlp_step_numpy(w1, b1, w2, b2, x, y, lr):
    pre = x @ w1 + b1
    hidden = np.maximum(pre, 0)
    err = hidden @ w2 + b2 - y
    loss = np.mean(err ** 2)
    d_out = 2 * err / err.size
    dw2, db2 = hidden.T @ d_out, d_out.sum(0)
    d_hidden = (d_out @ w2.T) * (pre > 0)
    dw1, db1 = x.T @ d_hidden, d_hidden.sum(0)
    return loss, w1 - lr * dw1, b1 - lr * db1, w2 - lr * dw2, b2 - lr * db2


def tanh_loop_numpy(x):
    while x.sum() > 1:
        x = np.tanh(x)
    return x


# W6 written by hand for numpy is the ag version itself: plain Python on an np.int32
collatz_numpy = collatz


def lstm_cell_numpy(x, h, c, w_x, w_h, b):
    gates = x @ w_x + h @ w_h + b
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731 - what a numpy user writes
    i, f, o = sig(gates[:, 0:10]), sig(gates[:, 10:20]), sig(gates[:, 20:30])
    c_new = f * c + i * np.tanh(gates[:, 30:40])
    return o * np.tanh(c_new), c_new


def edit_distance_numpy(a, b):
    """W7 as a numpy user vectorizes it: one row at a time, the row's left-to-right dependency
    D[i, j] = min(t[j], D[i, j-1] + 1) as a running minimum of t[k] - k (plus j)."""
    n, m = len(a), len(b)
    row = np.arange(m + 1, dtype=np.int64)
    j = np.arange(m + 1, dtype=np.int64)
    for i in range(1, n + 1):
        t = np.empty(m + 1, np.int64)
        t[0] = i
        t[1:] = np.minimum(row[1:] + 1, row[:-1] + (a[i - 1] != b))
        row = np.minimum.accumulate(t - j) + j
    return row[m]


# W8 written by hand for numpy is the workload itself: NPBench's numpy kernel
jacobi_2d_numpy = jacobi_2d


def collatz_zero_d_inputs():
    """W6 as a user may call it: n a 0-d array (np.array(27, np.int32)), not a numpy scalar."""
    return (np.array(27, np.int32),)


# id -> (handwritten numpy, ag function, inputs)
WORKLOADS = {
    "W1 tanh_loop": (tanh_loop_numpy, tanh_loop, tanh_loop_inputs),
    "W2 rnn": (rnn_numpy, rnn, rnn_inputs),
    "W2b rnn_by_columns": (rnn_by_columns_numpy, rnn_by_columns, rnn_by_columns_inputs),
    "W3 lstm_cell": (lstm_cell_numpy, lstm_cell, lstm_inputs),
    "W4 elementwise_chain": (elementwise_chain_numpy, elementwise_chain, elementwise_inputs),
    "W5 mlp_step": (mlp_step_numpy, mlp_step, mlp_step_inputs),
    "W6 collatz": (collatz_numpy, collatz, collatz_inputs),
    "W6 collatz_0d": (collatz_numpy, collatz, collatz_zero_d_inputs),
    "W7 edit_distance": (edit_distance_numpy, edit_distance, edit_distance_inputs),
    "W8 jacobi_2d": (jacobi_2d_numpy, jacobi_2d, jacobi_2d_inputs),
}
