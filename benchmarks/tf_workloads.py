"""W1-W6 as a TensorFlow user writes them (tf.function, AutoGraph control flow, GradientTape).

Imported by bench.py only when TensorFlow is installed; inputs are converted to tensors
once, outside the timed calls.
"""
import numpy as np
import tensorflow as tf


@tf.function
def tanh_loop(x):
    while tf.reduce_sum(x) > 1:
        x = tf.tanh(x)
    return x


@tf.function
def rnn(inputs, seq_len, w_in, w_state, b, w_out, b_out):
    state = tf.zeros((tf.shape(inputs)[1], tf.shape(w_state)[0]), inputs.dtype)
    for i in tf.range(tf.shape(inputs)[0]):
        updated = tf.tanh(tf.matmul(inputs[i], w_in) + tf.matmul(state, w_state) + b)
        state = tf.where(tf.cast(i, tf.int64) >= seq_len[:, None], state, updated)
    return tf.matmul(state, w_out) + b_out


@tf.function
def lstm_cell(x, h, c, w_x, w_h, b):
    gates = tf.matmul(x, w_x) + tf.matmul(h, w_h) + b
    i, f, o = tf.sigmoid(gates[:, 0:10]), tf.sigmoid(gates[:, 10:20]), tf.sigmoid(gates[:, 20:30])
    c_new = f * c + i * tf.tanh(gates[:, 30:40])
    return o * tf.tanh(c_new), c_new


@tf.function
def elementwise_chain(x):
    return tf.tanh(x * 1.5 + 0.5) * tf.sigmoid(x) - 0.25 * x * x


@tf.function
def mlp_step(w1, b1, w2, b2, x, y, lr):
    with tf.GradientTape() as tape:
        tape.watch([w1, b1, w2, b2])
        hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
        loss = tf.reduce_mean(tf.square(tf.matmul(hidden, w2) + b2 - y))
    dw1, db1, dw2, db2 = tape.gradient(loss, [w1, b1, w2, b2])
    return loss, w1 - lr * dw1, b1 - lr * db1, w2 - lr * dw2, b2 - lr * db2


@tf.function
def collatz(n):
    steps = tf.constant(0)
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


TF_WORKLOADS = {"W1": tanh_loop, "W2": rnn, "W3": lstm_cell, "W4": elementwise_chain,
                "W5": mlp_step, "W6": collatz}


def to_tensors(args):
    return tuple(tf.constant(a) if isinstance(a, (np.ndarray, np.generic)) else a for a in args)


def to_numpy(result):
    return tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, result)
