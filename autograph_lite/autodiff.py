"""`ag.grad` and `ag.value_and_grad`: differentiate a Python function, traced and compiled.

The backprop engine (`ops/gradients.py`) builds backward nodes into a graph; this module
sits above the driver: it converts the user's function (`operators.call`), traces it
with its arguments as inputs, asks the engine for the gradients, and compiles the whole
as a `Function` once per signature. Inside an @ag.function it adds to the graph being
traced instead.
"""
import functools
import inspect
import numbers

import numpy as np

from . import nest
from .effects import _has_state, _short
from .errors import ConversionError, user_location
from .function import Function, bound_self
from .operators import call, outside_state
from .ops.array_ops import identity, zeros_like
from .ops.control_flow import python_scalar
from .ops.core import convert_to_tensor
from .ops.gradient_ops import float_dtype
from .ops.gradients import gradients
from .ops.python_values import PythonValue
from .runtime.graph import Tensor, current_graph


def value_and_grad(fn, argnums=0):
    """A function returning `(fn(*args), gradient of fn with respect to args[argnums])`.

    `fn` must return a float scalar. `argnums` is an int or a tuple of ints (then the
    gradients come as a tuple). Arguments may be arrays, Python floats or nested
    lists/tuples/dicts of them; gradients have the same structure. Works on arrays
    (traced and compiled once per signature) and inside @ag.function. `fn` gets copies of
    the differentiated arguments: what it writes into them stays there.

        loss_and_grads = ag.value_and_grad(loss, argnums=(0, 1))
        loss, (dw, db) = loss_and_grads(w, b, x, y)
    """
    single = isinstance(argnums, numbers.Integral)
    positions = (argnums,) if single else tuple(argnums)

    def symbolic(*args, python_floats=()):
        graph = current_graph()
        args = list(args)
        treedefs, xs = {}, []
        for p in positions:
            leaves, treedefs[p] = nest.flatten_with_treedef(args[p])
            inputs = [convert_to_tensor(v, graph) for v in leaves]
            xs += inputs
            # fn runs on copies: its writes into them reach neither the caller's arrays (called
            # eagerly, a compiled call's arguments) nor the traced values (inside ag.function)
            copies = [python_scalar(t) if (p, k) in python_floats else identity(t)  # a Python float passed
                      for k, t in enumerate(inputs)]                               # as an array: one again
            args[p] = treedefs[p].unflatten(copies)
        value = call(fn)(*args)
        if isinstance(value, PythonValue):
            raise ConversionError(
                f"ag.grad cannot differentiate {getattr(fn, '__name__', 'fn')}: its result ({value.label}) comes from "
                f"the loop on a tensor at {value.location}, which runs as Python when the graph runs (its "
                f"variables' ranks change), and a gradient needs the loop as a graph loop (at {user_location()})")
        if not isinstance(value, Tensor):
            value = convert_to_tensor(value, graph)
        if value.shape != () or not float_dtype(value):
            raise TypeError(f"ag.grad needs {getattr(fn, '__name__', 'fn')} to return a float scalar, got "
                            f"{value!r} (at {user_location()})")
        grads = gradients([value], xs, [np.ones((), value.dtype)])
        grads = [g if g is not None else zeros_like(x) for g, x in zip(grads, xs)]
        structured, start = [], 0
        for p in positions:
            count = treedefs[p].num_leaves
            structured.append(treedefs[p].unflatten(grads[start:start + count]))
            start += count
        return value, (structured[0] if single else tuple(structured))

    compiled = {}

    @functools.wraps(fn)
    def value_and_grad_fn(*args):
        _check_differentiable(fn, args, positions)
        python_floats = tuple((i, k) for i in positions for k, v in enumerate(nest.flatten(args[i]))
                              if type(v) is float)
        args = tuple(_as_float_arrays(a) if i in positions else a for i, a in enumerate(args))
        if current_graph() is not None:
            reads = outside_state.active()
            then = reads.attributes_now() if reads is not None else None
            result = symbolic(*args, python_floats=python_floats)
            if then is not None:
                _refuse_what_a_call_cannot_repeat(fn, args, reads.attributes_set_since(then))
            return result
        key = len(args), python_floats
        if key not in compiled:
            compiled[key] = Function(_positional(functools.partial(symbolic, python_floats=python_floats),
                                                 len(args)), autograph=False)
            # a bound method's object (ag.grad(model.loss)): its state is read on every call, as the
            # Function of the method itself would read it
            compiled[key]._bound_self = bound_self(fn)
        return compiled[key](*args)

    return value_and_grad_fn


def _refuse_what_a_call_cannot_repeat(fn, args, changes):
    """Inside a trace, the attribute writes of `fn` that `ag.grad(fn)` called eagerly refuses (a
    compiled call of its own, whose replay of them takes only tensors and its arguments' values):
    the same error both ways, whatever the enclosing function does with the attribute later."""
    own = {id(v) for v in nest.flatten(list(args))}
    def words(value):
        return "<unset>" if value is outside_state.ABSENT else _short(value)
    problems = [f"'{label}': attribute {name!r} changed {words(before)} -> {words(now)}"
                for label, obj, name, before, now in changes if _has_state(obj) and not _replayable(now, own)]
    if problems:
        name = getattr(fn, "__name__", "fn")
        raise ConversionError(
            f"ag.grad of {name} (at {user_location()}) changes Python state in a way a compiled call cannot "
            f"repeat: {'; '.join(problems)}. ag.grad compiles {name}, which runs Python side effects only while "
            f"tracing; store a tensor computed from the arguments, or return the new value instead")


def _replayable(value, own):
    if type(value) is tuple:
        return all(_replayable(v, own) for v in value)
    return isinstance(value, Tensor) or id(value) in own


def _positional(fn, count):
    """`fn` with exactly `count` positional parameters (so the cache keys each argument)."""
    names = [f"arg{i}" for i in range(count)]
    namespace = {"fn": fn}
    source = f"def positional({', '.join(names)}):\n    return fn({', '.join(names)})\n"
    exec(compile(source, "<autograph_lite grad>", "exec"), namespace)  # internal: errors name the user's line
    return namespace["positional"]


def grad(fn, argnums=0):
    """A function returning the gradient of scalar `fn` with respect to `args[argnums]`.

        dloss_dw = ag.grad(loss)(w, x, y)
    """
    value_and_grad_fn = value_and_grad(fn, argnums)

    @functools.wraps(fn)
    def grad_fn(*args):
        return value_and_grad_fn(*args)[1]
    return grad_fn


def _check_differentiable(fn, args, positions):
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    for p in positions:
        if p >= len(args):
            raise TypeError(f"argnums {p} is out of range: {getattr(fn, '__name__', 'fn')} was called "
                            f"with {len(args)} arguments")
        for leaf in nest.flatten(args[p]):
            dtype = leaf.dtype if hasattr(leaf, "dtype") else np.asarray(leaf).dtype
            if not (np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.complexfloating)):
                name = names[p] if p < len(names) else f"argument {p}"
                raise TypeError(f"cannot differentiate {getattr(fn, '__name__', 'fn')} with respect to "
                                f"'{name}': it is {dtype} ({leaf!r}), not a float; pass a float array "
                                f"or leave it out of argnums (at {user_location()})")


def _as_float_arrays(value):
    """Python floats become float64 arrays, so they are traced as inputs, not constants."""
    leaves, treedef = nest.flatten_with_treedef(value)
    return treedef.unflatten([np.asarray(v) if type(v) is float else v for v in leaves])  # (np.float64 stays)
