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


def bisection(lo, hi):
    """The root of x^3 - 2x - 5 in [lo, hi] by halving: a small scalar loop whose variables are
    Python floats, numpy floats or 0-d arrays as the caller passes them."""
    while hi - lo > 1e-12:
        mid = (lo + hi) / 2
        if mid * mid * mid - 2 * mid - 5 > 0:
            hi = mid
        else:
            lo = mid
    return lo


def mandelbrot(c):
    """Escape counts of complex points `c` over 60 steps of a Python loop (unrolled when traced)."""
    z = np.zeros_like(c)
    count = np.zeros(c.shape, np.int32)
    for _ in range(60):
        z = z * z + c
        inside = np.abs(z) <= 2.0
        count = count + inside
        z = np.where(inside, z, 2.0)
    return count


def newton_inputs(seed=0):
    return (np.random.default_rng(seed).uniform(1, 100, 1000),)


def rnn(inputs, seq_len, w_in, w_state, b, w_out, b_out):
    """W2: a basic RNN over [steps, batch, input]; example j stops updating after seq_len[j] steps."""
    state = ag.zeros((inputs.shape[1], w_state.shape[0]), inputs.dtype)
    for i in ag.range(ag.shape(inputs)[0]):
        updated = ag.tanh(ag.matmul(inputs[i], w_in) + ag.matmul(state, w_state) + b)
        state = ag.where(i >= seq_len[:, None], state, updated)
    return ag.matmul(state, w_out) + b_out


def rnn_by_columns(inputs, seq_len, w, b, w_out, b_out):
    """W2 as a user with batch-major inputs [batch, steps, input] writes it: column i of the
    inputs per step, joined to the state by np.concatenate for one matmul."""
    state = np.zeros((inputs.shape[0], w.shape[1]), inputs.dtype)
    for i in ag.range(ag.shape(inputs)[1]):
        updated = np.tanh(np.concatenate([inputs[:, i], state], axis=1) @ w + b)
        state = np.where(i >= seq_len[:, None], state, updated)
    return state @ w_out + b_out


def rnn_by_columns_inputs(seed=0, **sizes):
    """W2's inputs laid out for rnn_by_columns: [batch, steps, input], w_in stacked on w_state."""
    inputs, seq_len, w_in, w_state, b, w_out, b_out = rnn_inputs(seed, **sizes)
    return np.ascontiguousarray(inputs.transpose(1, 0, 2)), seq_len, np.concatenate([w_in, w_state]), b, w_out, b_out


def rnn_loss(w_in, w_state, b, w_out, b_out, inputs, seq_len, targets):
    """W2's squared error against targets."""
    return ag.reduce_mean(ag.square(rnn(inputs, seq_len, w_in, w_state, b, w_out, b_out) - targets))


def rnn_inputs(seed=0, steps=50, batch=32, n_in=16, units=64, n_out=8, dtype=np.float32):
    rng = np.random.default_rng(seed)
    r = lambda *shape, scale=1.0: (rng.standard_normal(shape) * scale).astype(dtype)  # noqa: E731
    return (r(steps, batch, n_in), rng.integers(min(10, steps), steps + 1, batch).astype(np.int64),
            r(n_in, units, scale=0.3), r(units, units, scale=0.1), np.zeros(units, dtype),
            r(units, n_out, scale=0.3), np.zeros(n_out, dtype))


def mlp_loss(w1, b1, w2, b2, x, y):
    """A two-layer ReLU network's squared error."""
    hidden = ag.nn.relu(ag.matmul(x, w1) + b1)
    return ag.reduce_mean(ag.square(ag.matmul(hidden, w2) + b2 - y))


def mlp_step(w1, b1, w2, b2, x, y, lr):
    """W5: one SGD step: loss, gradients of every parameter, updated parameters."""
    loss, (dw1, db1, dw2, db2) = ag.value_and_grad(mlp_loss, argnums=(0, 1, 2, 3))(w1, b1, w2, b2, x, y)
    return loss, w1 - lr * dw1, b1 - lr * db1, w2 - lr * dw2, b2 - lr * db2


def mlp_step_inputs(seed=0, n=64, d=1000, h=100, out=10):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    true_w = rng.standard_normal((d, out)) * 0.05
    return (rng.standard_normal((d, h)) * 0.03, np.zeros(h), rng.standard_normal((h, out)) * 0.1,
            np.zeros(out), x, np.tanh(x @ true_w), 0.05)


def elementwise_chain(x):
    """W4: six elementwise passes over memory that fusion turns into one."""
    return ag.tanh(x * 1.5 + 0.5) * ag.nn.sigmoid(x) - 0.25 * x * x


def elementwise_inputs(seed=0, n=4_000_000):
    return (np.random.default_rng(seed).standard_normal(n).astype(np.float32),)


def edit_distance(a, b):
    """W7: Levenshtein distance of two int arrays, its DP table filled cell by cell in nested loops
    (bounds from `ag.shape`, so the loops are two graph loops: Python ints would unroll them)."""
    n, m = ag.shape(a)[0], ag.shape(b)[0]
    D = np.zeros((n + 1, m + 1), np.int64)
    for i in range(n + 1):
        D[i, 0] = i
    for j in range(m + 1):
        D[0, j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            D[i, j] = min(D[i - 1, j] + 1, D[i, j - 1] + 1, D[i - 1, j - 1] + (a[i - 1] != b[j - 1]))
    return D[n, m]


def edit_distance_inputs(seed=0, n=1000):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 4, n), rng.integers(0, 4, n)


def jacobi_2d(TSTEPS, A, B):
    """W8: NPBench's jacobi_2d (two buffers, each step written from the other), on copies of
    A and B so that every call computes the same thing (NPBench's kernel updates its arguments)."""
    A, B = A.copy(), B.copy()
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])
    return A, B


def jacobi_2d_inputs(n=200, steps=50):
    """NPBench's initialization of jacobi_2d."""
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return steps, i * (j + 2) / n, i * (j + 3) / n


EXAMPLES = [
    ("W3 lstm_cell", lstm_cell, lstm_inputs),
    ("mlp_predict", mlp_predict, mlp_inputs),
    ("W1 tanh_loop (native while)", tanh_loop, tanh_loop_inputs),
    ("W6 collatz (while + if)", collatz, collatz_inputs),
    ("newton_sqrt", newton_sqrt, newton_inputs),
    ("W2 rnn (for over ag.range)", rnn, rnn_inputs),
    ("W5 mlp_step (forward + grad)", mlp_step, mlp_step_inputs),
    ("W4 elementwise (4M, fused)", elementwise_chain, elementwise_inputs),
]
