"""W1-W6 as a jax.jit user and a numba user write them, for bench.py's peer columns.

Each peer is imported only when installed (`pip install "autograph_lite[peers]"`):
`jax_workloads()` and `numba_workloads()` give {workload id: (fn, convert inputs)} or None.
JAX runs with 64-bit types on (`jax_enable_x64`), so every workload computes in the dtypes
the numpy version does; its inputs are put on the device once, outside the timed calls,
and every timed call waits for its result (`block_until_ready`). numba versions are written
in array style, as the numpy reference, with loops where numba needs them (W2's masked
update); numba's compile happens at the first call, which bench.py times as its first call.
W7 and W8 are numba's `@njit` on the ag workloads' own source (examples/models.py); without
scipy numba cannot run `@` on arrays, and W2, W3 and W5 have no numba column. JAX has no
version of W7 and W8 here (a DP table filled cell by cell is `lax.fori_loop` over `.at[].set`).
"""
import importlib.util
import types

import numpy as np

from examples.models import edit_distance, jacobi_2d


def jax_workloads():
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax import lax

    def tanh_loop(x):
        return lax.while_loop(lambda x: x.sum() > 1, jnp.tanh, x)

    def rnn(inputs, seq_len, w_in, w_state, b, w_out, b_out):
        state = jnp.zeros((inputs.shape[1], w_state.shape[0]), inputs.dtype)

        def step(i, state):
            updated = jnp.tanh(inputs[i] @ w_in + state @ w_state + b)
            return jnp.where(i >= seq_len[:, None], state, updated)
        state = lax.fori_loop(0, inputs.shape[0], step, state)
        return state @ w_out + b_out

    def rnn_by_columns(inputs, seq_len, w, b, w_out, b_out):
        state = jnp.zeros((inputs.shape[0], w.shape[1]), inputs.dtype)

        def step(i, state):
            updated = jnp.tanh(jnp.concatenate([inputs[:, i], state], axis=1) @ w + b)
            return jnp.where(i >= seq_len[:, None], state, updated)
        state = lax.fori_loop(0, inputs.shape[1], step, state)
        return state @ w_out + b_out

    def lstm_cell(x, h, c, w_x, w_h, b):
        gates = x @ w_x + h @ w_h + b
        i, f, o = (jax.nn.sigmoid(gates[:, k:k + 10]) for k in (0, 10, 20))
        c_new = f * c + i * jnp.tanh(gates[:, 30:40])
        return o * jnp.tanh(c_new), c_new

    def elementwise_chain(x):
        return jnp.tanh(x * 1.5 + 0.5) * jax.nn.sigmoid(x) - 0.25 * x * x

    def mlp_loss(params, x, y):
        w1, b1, w2, b2 = params
        hidden = jnp.maximum(x @ w1 + b1, 0)
        return jnp.mean(jnp.square(hidden @ w2 + b2 - y))

    def mlp_step(w1, b1, w2, b2, x, y, lr):
        loss, grads = jax.value_and_grad(mlp_loss)((w1, b1, w2, b2), x, y)
        return (loss, *(p - lr * g for p, g in zip((w1, b1, w2, b2), grads)))

    def collatz(n):
        def body(carry):
            n, steps = carry
            return lax.cond(n % 2 == 0, lambda: n // 2, lambda: 3 * n + 1), steps + 1
        return lax.while_loop(lambda carry: carry[0] != 1, body, (n, 0))[1]

    fns = {"W1": tanh_loop, "W2": rnn, "W2b": rnn_by_columns, "W3": lstm_cell, "W4": elementwise_chain,
           "W5": mlp_step, "W6": collatz}

    def wrap(fn):
        jitted = jax.jit(fn)
        return lambda *args: jax.block_until_ready(jitted(*args))

    def to_device(args):
        return tuple(jnp.asarray(a) if isinstance(a, (np.ndarray, np.generic)) else a for a in args)
    return {k: (wrap(fn), to_device) for k, fn in fns.items()}


def numba_workloads():
    try:
        import numba
    except ImportError:
        return None
    njit = numba.njit(cache=False)

    @njit
    def tanh_loop(x):
        while x.sum() > 1:
            x = np.tanh(x)
        return x

    @njit
    def rnn(inputs, seq_len, w_in, w_state, b, w_out, b_out):
        state = np.zeros((inputs.shape[1], w_state.shape[0]), inputs.dtype)
        for i in range(inputs.shape[0]):
            updated = np.tanh(inputs[i] @ w_in + state @ w_state + b)
            for j in range(state.shape[0]):
                if i < seq_len[j]:
                    state[j] = updated[j]
        return state @ w_out + b_out

    @njit
    def rnn_by_columns(inputs, seq_len, w, b, w_out, b_out):
        state = np.zeros((inputs.shape[0], w.shape[1]), inputs.dtype)
        for i in range(inputs.shape[1]):
            updated = np.tanh(np.concatenate((np.ascontiguousarray(inputs[:, i]), state), axis=1) @ w + b)
            for j in range(state.shape[0]):
                if i < seq_len[j]:
                    state[j] = updated[j]
        return state @ w_out + b_out

    # numba types a float literal as float64 (numpy keeps float32 arrays float32): the float32
    # workloads spell their constants as float32, as a numba user keeping float32 does
    one = np.float32(1)

    @njit
    def lstm_cell(x, h, c, w_x, w_h, b):
        gates = x @ w_x + h @ w_h + b
        i = one / (one + np.exp(-gates[:, 0:10]))
        f = one / (one + np.exp(-gates[:, 10:20]))
        o = one / (one + np.exp(-gates[:, 20:30]))
        c_new = f * c + i * np.tanh(gates[:, 30:40])
        return o * np.tanh(c_new), c_new

    @njit
    def elementwise_chain(x):
        return (np.tanh(x * np.float32(1.5) + np.float32(0.5)) * (one / (one + np.exp(-x)))
                - np.float32(0.25) * x * x)

    @njit
    def mlp_step(w1, b1, w2, b2, x, y, lr):
        pre = x @ w1 + b1
        hidden = np.maximum(pre, 0)
        err = hidden @ w2 + b2 - y
        loss = np.mean(err ** 2)
        d_out = 2 * err / err.size
        dw2, db2 = np.ascontiguousarray(hidden.T) @ d_out, d_out.sum(0)
        d_hidden = (d_out @ np.ascontiguousarray(w2.T)) * (pre > 0)
        dw1, db1 = np.ascontiguousarray(x.T) @ d_hidden, d_hidden.sum(0)
        return loss, w1 - lr * dw1, b1 - lr * db1, w2 - lr * dw2, b2 - lr * db2

    @njit
    def collatz(n):
        steps = 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            steps += 1
        return steps

    fns = {"W1": tanh_loop, "W2": rnn, "W2b": rnn_by_columns, "W3": lstm_cell, "W4": elementwise_chain,
           "W5": mlp_step, "W6": collatz,
           "W7": njit(_same_source(edit_distance)), "W8": njit(_same_source(jacobi_2d))}
    if importlib.util.find_spec("scipy") is None:  # numba's `@` on arrays calls scipy's BLAS
        fns = {k: fn for k, fn in fns.items() if k not in ("W2", "W2b", "W3", "W5")}
    return {k: (fn, tuple) for k, fn in fns.items()}


def _same_source(fn):
    """`fn` (the ag workload itself) as numba compiles it: its `ag.shape` is numpy's `np.shape`."""
    shim = types.ModuleType("ag_for_numba")
    shim.shape = np.shape
    return types.FunctionType(fn.__code__, {**fn.__globals__, "ag": shim}, fn.__name__)
