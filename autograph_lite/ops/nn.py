"""Neural-network activations: relu, sigmoid, softmax."""
import numpy as np

from ..runtime.graph import _tracing
from .core import apply, define, elementwise
from .math_ops import OPS
from .core import normalize_axis

def _sigmoid_kernel(xp):
    """0.5 * tanh(x / 2) + 0.5: equals 1 / (1 + exp(-x)) and never overflows; after the
    first step every step works in place (one allocation instead of three)."""
    tanh, multiply, add = xp.tanh, xp.multiply, xp.add

    def sigmoid(x):
        t = x * 0.5
        if not getattr(t, "ndim", 0):  # a scalar: no buffer to reuse
            return tanh(t) * 0.5 + 0.5
        tanh(t, out=t)
        multiply(t, 0.5, out=t)
        add(t, 0.5, out=t)
        return t
    return sigmoid


OPS["relu"] = elementwise("Relu", lambda xp: lambda x: xp.maximum(x, 0))
OPS["sigmoid"] = elementwise("Sigmoid", _sigmoid_kernel)
OPS["relu"].inline = lambda xp, a, bind: f"{bind(xp.maximum)}({a[0]}, 0)"


_relu_numpy, _sigmoid_numpy = OPS["relu"].kernel(np), OPS["sigmoid"].kernel(np)


def relu(x):
    """max(x, 0), elementwise."""
    if not _tracing.stack and type(x) is np.ndarray:
        return _relu_numpy(x)
    return apply(OPS["relu"], (x,))


def sigmoid(x):
    """1 / (1 + exp(-x)), elementwise, computed without overflow."""
    if not _tracing.stack and type(x) is np.ndarray:
        return _sigmoid_numpy(x)
    return apply(OPS["sigmoid"], (x,))


def _softmax_kernel(xp, axis=-1):
    def softmax(x):
        e = xp.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)
    return softmax


def _softmax_infer(x, axis=-1):
    normalize_axis(axis, x.ndim)
    return [(x.shape, x.dtype)]


OPS["softmax"] = define("Softmax", _softmax_kernel, _softmax_infer, float_errors="softmax")


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`, shifted by the max for stability."""
    return apply(OPS["softmax"], (x,), {"axis": axis})


# --- gradients ----------------------------------------------------------------------------

from .core import grad_rule  # noqa: E402
from .math_ops import _to_input, multiply, reduce_sum, subtract, where  # noqa: E402


@grad_rule(OPS["relu"])
def _relu_grad(node, dy):
    x = node.inputs[0]
    return [_to_input(where(x > 0, dy, 0.0), x)]


@grad_rule(OPS["sigmoid"])
def _sigmoid_grad(node, dy):
    out = node.outputs[0]
    return [_to_input(multiply(dy, multiply(out, subtract(1.0, out))), node.inputs[0])]


@grad_rule(OPS["softmax"])
def _softmax_grad(node, dy):
    out = node.outputs[0]
    inner = reduce_sum(multiply(dy, out), axis=node.attrs["axis"], keepdims=True)
    return [_to_input(multiply(out, subtract(dy, inner)), node.inputs[0])]
