"""Functions a user would write: plain eager code on numpy arrays, using ag ops.

Each runs as it is (eager numpy) and under @ag.function (compiled); the demo times both.
"""
import numpy as np

import autograph_lite as ag


def lstm_cell(x, h, c, w_x, w_h, b):
    """W3: one LSTM cell step, units 10, input [10, 10]; gates from one fused matmul."""
    gates = ag.matmul(x, w_x) + ag.matmul(h, w_h) + b
    i = ag.nn.sigmoid(gates[:, 0:10])
    f = ag.nn.sigmoid(gates[:, 10:20])
    o = ag.nn.sigmoid(gates[:, 20:30])
    g = ag.tanh(gates[:, 30:40])
    c_new = f * c + i * g
    h_new = o * ag.tanh(c_new)
    return h_new, c_new


def lstm_inputs(seed=0):
    rng = np.random.default_rng(seed)
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32) * 0.5  # noqa: E731
    return f32(10, 10), f32(10, 10), f32(10, 10), f32(10, 40), f32(10, 40), f32(40)


def mlp_predict(x, w1, b1, w2, b2):
    """A two-layer ReLU network's class probabilities."""
    hidden = ag.nn.relu(ag.matmul(x, w1) + b1)
    return ag.nn.softmax(ag.matmul(hidden, w2) + b2)


def mlp_inputs(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((64, 100)), rng.standard_normal((100, 32)) * 0.1, np.zeros(32),
            rng.standard_normal((32, 10)) * 0.1, np.zeros(10))


def tanh_loop(x):
    """W1: squash x until its sum drops to 1 (~145 steps, decided by the data)."""
    while ag.reduce_sum(x) > 1:
        x = ag.tanh(x)
    return x


def collatz(n):
    """W6: steps of the Collatz sequence from n to 1 (111 from 27)."""
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def collatz_inputs():
    return (np.int32(27),)


def tanh_loop_inputs(seed=0):
    ag.random.set_seed(seed)
    return (ag.random.uniform([10], dtype=np.float32),)


def newton_sqrt(a):
    """Square roots by Newton's method until every estimate has converged (ag.while_loop)."""
    def body(x, steps):
        return 0.5 * (x + a / x), steps + 1
    x, steps = ag.while_loop(lambda x, s: ag.reduce_max(ag.abs(x * x - a)) > 1e-9 * ag.reduce_max(a),
                             body, (a, 0))
    return x, steps


def newton_inputs(seed=0):
    return (np.random.default_rng(seed).uniform(1, 100, 1000),)


EXAMPLES = [
    ("W3 lstm_cell", lstm_cell, lstm_inputs),
    ("mlp_predict", mlp_predict, mlp_inputs),
    ("W1 tanh_loop (native while)", tanh_loop, tanh_loop_inputs),
    ("W6 collatz (while + if)", collatz, collatz_inputs),
    ("newton_sqrt", newton_sqrt, newton_inputs),
]
