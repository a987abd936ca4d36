"""Neural-network activations: relu, sigmoid, softmax."""
import numpy as np

from ..runtime.graph import _tracing
from .core import apply, define, expanded, normalize_axis
from .math_ops import OPS
from ..runtime.opdef import INT

# sigmoid as 0.5 * tanh(x / 2) + 0.5: equals 1 / (1 + exp(-x)) and never overflows
_SIGMOID = (("multiply", ("x", 0.5)), ("tanh", ("y",)), ("multiply", ("y", 0.5)), ("add", ("y", 0.5)))
OPS["relu"] = expanded("Relu", (("maximum", ("x", 0)),))
OPS["sigmoid"] = expanded("Sigmoid", _SIGMOID)


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


OPS["softmax"] = define("Softmax", _softmax_kernel, _softmax_infer, float_errors="softmax", fresh=True,
                        attrs={"axis": INT},
                        may_raise=False)


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
