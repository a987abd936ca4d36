"""Ops that only gradients create: undo broadcasting, and scatter slices back into place."""
import numpy as np

from ..runtime import devices
from ..runtime.graph import Slot
from ..runtime.opdef import INDEX
from .core import apply, define, grad_rule


def _sum_to_kernel(xp):
    def sum_to(g, like):
        shape = like.shape if hasattr(like, "shape") else ()
        g = xp.asarray(g)
        lead = g.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and g.shape[lead + i] != 1)
        return g.sum(axis=axes).reshape(shape) if axes else g.reshape(shape)
    return sum_to


SUM_TO = define("SumToShape", _sum_to_kernel, lambda g, like: [(like.shape, g.dtype)], primitive="sum_to")


def sum_to(g, like):
    """`g` summed over the axes along which `like` was broadcast, so it has `like`'s shape."""
    if g.shape == like.shape and None not in g.shape:
        return g
    if None in g.shape or None in like.shape:
        return apply(SUM_TO, (g, like))  # axes known only at run time
    lead = len(g.shape) - len(like.shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(like.shape)
                                      if d == 1 and g.shape[lead + i] != 1)
    # Tensor.sum / Tensor.reshape: math_ops and array_ops sit above this module
    summed = g.sum(axis=axes) if axes else g
    return summed if summed.shape == like.shape else summed.reshape(like.shape)


def _broadcast_kernel(xp):
    return lambda g, like: xp.broadcast_to(g, xp.shape(like)).copy()


BROADCAST = define("BroadcastLike", _broadcast_kernel, lambda g, like: [(like.shape, g.dtype)],
                   primitive="broadcast_to")


def broadcast_like(g, like):
    """`g` broadcast to `like`'s shape (a fresh array)."""
    return apply(BROADCAST, (g, like))


@grad_rule(SUM_TO)
def _sum_to_grad(node, dy):
    g, _ = node.inputs
    return [broadcast_like(dy, g), None]


@grad_rule(BROADCAST)
def _broadcast_grad(node, dy):
    g, _ = node.inputs
    return [sum_to(dy, g), None]


def _scatter_kernel(xp, index):
    def scatter(dy, like, *values):
        out = xp.zeros(xp.shape(like), dtype=dy.dtype if hasattr(dy, "dtype") else None)
        full = tuple(values[i.k] if isinstance(i, Slot) else slice(*(values[b.k] if isinstance(b, Slot) else b
                                                                      for b in (i.start, i.stop, i.step)))
                     if isinstance(i, slice) else i for i in index)
        add_at = devices.scatter_add(xp)
        if add_at is None:  # `out[full] += dy` would count a repeated index once: never silently
            raise NotImplementedError(f"the gradient of indexing needs {xp.__name__}.add.at (unbuffered "
                                      f"scatter-add), which this array module lacks")
        add_at(out, full, dy)
        return out
    return scatter


SCATTER = define("ScatterAdd", _scatter_kernel, lambda dy, like, *values, index: [(like.shape, dy.dtype)],
                 attrs={"index": INDEX})


def scatter_add(dy, like, values, index):
    """zeros shaped like `like` with `dy` added at `like[index]` (repeated indices add up)."""
    return apply(SCATTER, (dy, like, *values), {"index": index})


def float_dtype(t):
    return np.issubdtype(t.dtype, np.floating) or np.issubdtype(t.dtype, np.complexfloating)
