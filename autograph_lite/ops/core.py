"""Where eager and traced op calls part ways, plus the shape and dtype helpers op rules share.

`apply(op, inputs, attrs)` runs the kernel on arrays (eager), or, when an input is a
symbolic Tensor, adds a node to the graph being built and returns its outputs.
"""
import functools
import numbers
import warnings

import numpy as np

from ..errors import ConversionError, user_location
from ..runtime import devices, fp_errors, memory
from ..runtime.boxes import PythonBox
from ..runtime.graph import Tensor, _tracing, building, current_graph
from ..runtime.opdef import CONST, DTYPE, STR, OpDef, lookup, register

_PY_SCALARS = (bool, int, float, complex)
# a subclass of a Python scalar as its plain value (its own methods, __repr__ included, are
# the user's code and never run here)
_BUILTIN_SCALAR = {bool: bool, int: int.__int__, float: float.__float__,
                   complex: lambda v: complex(float.__float__(v.real), float.__float__(v.imag))}


# (PythonValue, defer) of ops/python_values.py, which imports this module: a value known only when the
# graph runs, and how an op on one is deferred to the run
PYTHON_VALUE = [None, None]


def apply(op, inputs, attrs=None):
    """Run `op` on `inputs`: eagerly on arrays, as a new graph node if any input is a Tensor."""
    graph = _tracing.stack[-1] if _tracing.stack else None
    if graph is None or not (op.stateful or any(isinstance(x, Tensor) or (type(x) is list and holds_tensor(x))
                                                or type(x) is PYTHON_VALUE[0] for x in inputs)):
        # ops with no inputs follow `with ag.device(...)`; an op with a device array among its
        # inputs runs there, the host arrays among them copied to it (counted); else numpy
        xp = devices.array_module(inputs) if inputs else devices.current().xp
        if xp is not np:
            inputs = _on_device(inputs)
        if op.float_errors and xp is np:  # numpy's warning names the user's line, not this one
            return fp_errors.eager_reporter(op.float_errors).call(op.eager_kernel(xp, attrs), *inputs)
        return op.eager_kernel(xp, attrs)(*inputs)
    if any(type(x) is PYTHON_VALUE[0] for x in inputs):
        # a value known only when the graph runs (ops/python_values.py): the op runs then, eagerly
        return PYTHON_VALUE[1](eager_apply, op, inputs, attrs)
    out = add_node(graph, op, inputs, attrs or {})
    if op.view is not None and inputs and isinstance(inputs[0], Tensor):
        memory.track_view(inputs[0], out)  # `row = x[0]`: a view of x's memory
    return out


def eager_apply(op, inputs, attrs):
    return apply(op, tuple(inputs), attrs)  # when the graph runs no graph is being built: eagerly


def _on_device(inputs):
    device = next((d for d in map(devices.device_of, inputs) if d is not None), None)
    if device is None:  # no input array: a creation op on the current device
        return inputs
    return tuple(device.put(x) if type(x) is np.ndarray else x for x in inputs)


def add_node(graph, op, inputs, attrs):
    tensors = [convert_to_tensor(x, graph) for x in inputs]
    attrs = {k: _plain(v) for k, v in attrs.items()}
    try:
        specs = op.infer(*tensors, **attrs)
    except (ValueError, TypeError, IndexError) as e:
        # numpy's AxisError is worded as numpy words it, without the op's name
        named = "" if isinstance(e, np.exceptions.AxisError) else f"{op.name}: "
        raise _same_kind(e, f"{named}{e} (at {user_location(3)})") from None
    failure = _known_failure(op, tensors, attrs)
    if failure is not None:
        # the op fails whatever the values (`uint8_array + 300`): fail when the graph runs it, at
        # its place among the effects (a branch not taken does not fail, dead code still does)
        error, message = failure
        graph.add_node(RAISE.name, [t for t in tensors if not _weak_constant(t)] or tensors[:1],
                       {"error": error, "message": message, "location": user_location(3)}, [],
                       location=user_location(3))
    for t, dtype in _weak_ints_to_check(op, tensors, attrs):
        # a Python int known only when the graph runs (a loop counter): checked then, as numpy
        # does, also where the op is dead code or fused into a kernel that would cast it
        graph.add_node(CHECK_FITS.name, [t], {"dtype": dtype, "location": user_location(3)}, [],
                       location=user_location(3))
    weak = op.weak_result and all(t.weak for t in tensors)
    python_box = _python_box(op, tensors, attrs, specs)
    node = graph.add_node(op.name, tensors, attrs, specs, location=user_location(3), weak=weak)
    if python_box is not None:
        node.outputs[0].python_box = python_box
    return node.outputs[0] if len(node.outputs) == 1 else tuple(node.outputs)


def _same_kind(error, message):
    """`error`'s type with `message`, or its builtin base where that type takes other arguments
    (numpy's `_UFuncNoLoopError`, a TypeError)."""
    try:
        return type(error)(message)
    except TypeError:
        return next(t for t in type(error).__mro__ if t.__module__ == "builtins")(message)


def _python_box(op, tensors, attrs, specs):
    """The `PythonBox` of `op`'s result where an input is a tensor `if`'s merge of a Python number
    and a numpy value: eager computes on the Python number where that branch ran. None where the
    result is the same type on both paths; a ConversionError where eager's dtypes would differ."""
    boxes = [t.python_box for t in tensors if t.python_box is not None]
    if not boxes or not specs:  # an op with no result (a print formats it: operators/py_builtins.py)
        return None
    first = boxes[0]
    # each such input as the Python number (a weak stand-in of the same node, for the op's dtype rule)
    python_path = [Tensor(t.node, t.index, t.shape, t.dtype if t.python_box.value is None else
                          t.python_box.value.dtype, weak=True) if t.python_box is not None else t for t in tensors]
    try:
        python_specs = op.infer(*python_path, **attrs)
    except (ValueError, TypeError, IndexError):  # a rule that needs more than dtypes: the numpy path's type
        return None
    python_weak = op.weak_result and all(t.weak for t in python_path)
    same_pick = all(b.pick is first.pick and b.python_when == first.python_when for b in boxes)
    dtypes = [np.dtype(d) for _, d in specs], [np.dtype(d) for _, d in python_specs]
    if same_pick and len(specs) == 1 and (dtypes[0] == dtypes[1] or (
            python_weak and dtypes[0][0].kind == dtypes[1][0].kind and dtypes[0][0].kind in "biu")):
        # a Python int and an integer numpy value of its value: the same number
        return PythonBox(first.pick, first.python_when, None, first.location, first.loop) if python_weak else None
    if not same_pick:
        problem = "values merged from Python numbers and numpy values by different tensor `if`s"
    else:
        python_result = (f"a Python {type(dtypes[1][0].type(0).item()).__name__}" if python_weak
                         else dtypes[1][0] if len(dtypes[1]) == 1 else "other dtypes")
        on_python, on_numpy, _ = first.paths()
        problem = (f"a value that is a Python number where {on_python} and a numpy value {on_numpy}: "
                   f"eager's result would be {python_result} on one path and {', '.join(map(str, dtypes[0]))} "
                   f"on the other")
    remedy = first.paths()[2]
    raise ConversionError(f"`{op.name}` on {problem}; {remedy} (at {user_location(4)})")


def _weak_constant(t):
    return t.weak and t.node is not None and t.node.opdef is CONST


# what numpy (or Python, on weak scalars) raises for an op whatever the values of its other
# operands, given a weak constant: `uint8_array + 300` and `np.maximum(-2, uint8_array)`
# (OverflowError, NEP 50), `int_array ** -1` (ValueError), `w // 0` (ZeroDivisionError)
_VALUE_FREE_ERRORS = {OverflowError: "OverflowError", ValueError: "ValueError",
                      ZeroDivisionError: "ZeroDivisionError"}


def _known_failure(op, tensors, attrs):
    """(error type name, message) when elementwise `op` on `tensors` raises for any values of
    the ones not constant, else None. Comparisons of Python ints are exact (`uint8_x < -1` is
    False) and give None, as numpy does: the op's own numpy kernel is asked."""
    if not op.elementwise or not any(_weak_constant(t) for t in tensors):
        return None
    key = tuple((type(v), v) if _weak_constant(t) and type(v := t.node.attrs["value"]) in _PY_SCALARS
                else (type(exemplar(t)), None) if t.weak else t.dtype for t in tensors)
    try:
        return _failure_by_example(op.name, key, tuple(sorted(attrs.items())))
    except TypeError:  # an unhashable attr
        return None


def _weak_ints_to_check(op, tensors, attrs):
    """(weak int tensor, dtype) pairs for elementwise `op`: a Python int known only at run time
    meeting an integer dtype that numpy converts it to, raising OverflowError if it does not fit."""
    if not op.elementwise:
        return []
    dtypes = [t.dtype for t in tensors if not t.weak and t.dtype.kind in "iu" and t.dtype != np.int64]
    weak = [t for t in tensors if t.weak and t.dtype.kind in "iu" and not _weak_constant(t)]
    if not dtypes or not weak:
        return []
    found = []
    for dtype in dict.fromkeys(dtypes):
        # does numpy convert a Python int to `dtype` here? Ask with one that does not fit
        key = tuple((int, int(np.iinfo(dtype).max) + 1) if any(t is w for w in weak) else (type(exemplar(t)), None)
                    if t.weak else t.dtype for t in tensors)
        failure = _failure_by_example(op.name, key, tuple(sorted(attrs.items())))
        if failure is not None and failure[0] == "OverflowError":
            found += [(t, dtype) for t in weak]
    return found


@functools.lru_cache(maxsize=4096)
def _failure_by_example(name, key, attrs):
    args = [np.ones((), k) if isinstance(k, np.dtype) else k[0](1) if k[1] is None else k[1] for k in key]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            lookup(name).kernel(np, **dict(attrs))(*args)
    except tuple(_VALUE_FREE_ERRORS) as e:
        return _VALUE_FREE_ERRORS[type(e)], str(e)
    except Exception:  # noqa: BLE001 - anything else is for the op's own checks to report
        return None
    return None


def _plain(value):
    """An attr as a builtin value: numpy and subclassed ints become `int`, subclassed strs `str`.

    The graph then holds no user type whose `__repr__`/`__eq__` later stages would run,
    and an `np.int64` axis means what `0` means.
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, str):
        return str.__str__(value)
    if type(value) is tuple or type(value) is list:  # a list axis means what the tuple means (attr schema)
        return tuple(_plain(v) for v in value)
    if type(value) is slice:  # x[1:np.int32(2)]
        return slice(_plain(value.start), _plain(value.stop), _plain(value.step))
    return value


def constant_node(graph, value):
    """Stage `value` as a Const node; Python scalars become weak constants (NEP 50)."""
    if type(value) in _PY_SCALARS:
        dtype = np.result_type(type(value))
        return graph.add_node(CONST, (), {"value": value}, [((), dtype)],
                              location=user_location(3), weak=True).outputs[0]
    if isinstance(value, _PY_SCALARS) and not isinstance(value, np.generic):
        # a subclass of a Python scalar: numpy reads it as its strong default dtype
        value = np.array(_BUILTIN_SCALAR[next(t for t in _PY_SCALARS if isinstance(value, t))](value))
    array = np.asarray(value)
    if array.dtype == object:
        raise TypeError(f"cannot use {value!r} (a {type(value).__name__}) as a tensor value")
    if (array is value or array.base is not None) and array.flags.writeable:
        # this use reads the array as it is now, as eager code does: code running while tracing may
        # update it (or the array it is a view of) in place afterwards (`v -= 3` of an array made
        # here, fuzzer seed 1128004174; NPBench adi)
        array = array.copy()
    # a numpy scalar stays one: a loop that runs zero times gives it back as eager does, not
    # as a 0-d array
    held = value if isinstance(value, np.generic) else array
    return graph.add_node(CONST, (), {"value": held}, [(array.shape, array.dtype)],
                          location=user_location(3)).outputs[0]


def convert_to_tensor(value, graph=None):
    """`value` as a Tensor of `graph` (the current one by default)."""
    graph = graph or current_graph()
    if isinstance(value, Tensor):
        return graph.capture(value)
    if type(value) in (list, tuple) and holds_tensor(value):
        return _pack(value, graph)
    return constant_node(graph, devices.to_host(value))


def holds_tensor(value):
    """Whether list/tuple `value` holds a symbolic Tensor at any depth."""
    return any(isinstance(v, Tensor) or (type(v) in (list, tuple) and holds_tensor(v)) for v in value)


def _pack(items, graph):
    """A (nested) list holding tensors as one tensor, as numpy's array() and TF's
    convert_to_tensor make it: items stacked along a new first axis, Python numbers as
    numpy would type them inside a list."""
    with building(graph):
        parts = [convert_to_tensor(v, graph) if isinstance(v, (Tensor, list, tuple))
                 else constant_node(graph, np.asarray(v)) for v in items]
        if not parts:
            raise ValueError("cannot pack an empty list")
        return apply(lookup("Stack"), tuple(parts), {"axis": 0})  # array_ops' op: that module is above this one


# --- shape and dtype rules shared by ops ------------------------------------------------

def exemplar(t):
    """A value standing for `t` in a dtype computation: a Python scalar type stays weak.

    Ones, not zeros: Python scalars ignore numpy's errstate, and 0 % 0 would raise.
    """
    if t.weak:
        return {np.bool_: True, np.int64: 1, np.float64: 1.0, np.complex128: 1 + 0j}[t.dtype.type]
    return np.ones((), t.dtype)


@functools.lru_cache(maxsize=4096)
def _dtype_by_example(fn, key):
    # key holds dtypes and Python types (for weak scalars): 1 and 1.0 must not share an entry
    args = [np.ones((), k) if isinstance(k, np.dtype) else k(1) for k in key]
    with np.errstate(all="ignore"):
        return np.asarray(fn(*args)).dtype


def expanded(name, steps, **facts):
    """An elementwise op defined by its formula: numpy ufunc `steps` over x, each
    (ufunc name, operands) with "x" the input, "y" the running value and numbers constants,
    e.g. relu is `(("maximum", ("x", 0)),)`. Its kernel, fused blocks and C code all come
    from this one formula (`OpDef.expansion`)."""
    return elementwise(name, functools.partial(_expansion_kernel, steps), expansion=steps, **facts)


def _expansion_kernel(steps, xp):
    """The formula as straight-line code: the first step makes the result array, the others
    update it in place (one allocation however many steps)."""
    env = {}

    def operand(a):
        if a in ("x", "y"):
            return a
        env[f"c{len(env)}"] = a  # constants are closure variables, never text
        return f"c{len(env) - 1}"
    calls = []
    for j, (ufunc, args) in enumerate(steps):
        env[f"f{j}"] = getattr(xp, ufunc)
        calls.append(f"f{j}({', '.join(operand(a) for a in args)}")
    lines = ["def kernel(x):", f"    y = {calls[0]})"]
    if len(calls) > 1:
        lines += ["    if not getattr(y, 'ndim', 0):  # a scalar: no buffer to update",
                  *(f"        y = {c})" for c in calls[1:]), "        return y",
                  *(f"    {c}, out=y)" for c in calls[1:])]
    exec("\n".join(lines + ["    return y"]), env)
    return env["kernel"]


def result_dtype(fn, tensors):
    """The dtype numpy gives for `fn` applied to values like `tensors` (NEP 50 aware)."""
    key = tuple(type(exemplar(t)) if t.weak else t.dtype for t in tensors)
    return _dtype_by_example(fn, key)


def broadcast_shapes(*shapes):
    """numpy broadcasting where a dim may be None (unknown until the graph runs)."""
    ndim = max((len(s) for s in shapes), default=0)
    result = []
    for axis in range(-ndim, 0):
        dims = [s[axis] for s in shapes if len(s) >= -axis]
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ValueError(f"shapes {' and '.join(str(tuple(s)) for s in shapes)} cannot be broadcast together")
        if known:
            result.append(known.pop())
        elif None in dims:
            result.append(None)
        else:
            result.append(1)
    return tuple(result)


def normalize_axis(axis, ndim, msg_prefix=None):
    """`axis` of an array of `ndim` dims as a non-negative one; out of range numpy's AxisError (a
    ValueError and an IndexError), worded as numpy words it (`msg_prefix`: "source" for moveaxis)."""
    if not -ndim <= axis < max(ndim, 1):
        raise np.exceptions.AxisError(axis, ndim, msg_prefix)
    return axis % ndim if ndim else 0


def normalize_axes(axis, ndim):
    """A tuple of non-negative axes for an `axis=` argument (None means all)."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    return tuple(sorted(normalize_axis(a, ndim) for a in axes))


def static_ints(value, what):
    """A Python int or tuple of ints given as an attr; Tensors are not accepted here."""
    if isinstance(value, Tensor):
        raise TypeError(f"{what} must be a Python int or tuple of ints, not a symbolic {value!r} "
                        f"(at {user_location()})")
    return value


# --- defining ops -----------------------------------------------------------------------

def define(name, kernel, infer, c_expr=None, **flags):
    """Register an OpDef and return it. `c_expr`: an op's own C rule (runtime/native/cexpr.py), for
    an op the C renderer cannot spell from its facts."""
    opdef = register(OpDef(name, kernel, infer, **flags))
    if c_expr is not None:
        opdef.c_expr = c_expr
    return opdef


def _raise_kernel(xp, error, message, location):
    error_type = {name: e for e, name in _VALUE_FREE_ERRORS.items()}[error]

    def fail(*inputs):
        e = error_type(message)  # eager's message; the user's line as a note
        e.add_note(f"at {location}")
        raise e
    return fail


# an op that fails whenever it runs (see _known_failure); its inputs order it after theirs
RAISE = define("Raise", _raise_kernel, lambda *inputs, **attrs: [], stateful=True,
               attrs={"error": STR, "message": STR, "location": STR})


def _check_fits_kernel(xp, dtype, location):
    low, high = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)

    def check(value):
        if not low <= value <= high:
            e = OverflowError(f"Python integer {int(value)} out of bounds for {dtype}")
            e.add_note(f"at {location}")
            raise e
    return check


# numpy's NEP 50 check of a Python int known only when the graph runs (see _weak_ints_to_check)
CHECK_FITS = define("CheckFits", _check_fits_kernel, lambda value, **attrs: [], stateful=True,
                    attrs={"dtype": DTYPE, "location": STR})


def numpy_shape(shape):
    """A shape as numpy's messages write it: (0,1), (4,)."""
    return f"({','.join(map(str, shape))}{',' if len(shape) == 1 else ''})"


def _check_shape_kernel(xp, message, location):
    def check(new, x):
        if tuple(new.shape) != tuple(x.shape):
            e = ValueError(f"non-broadcastable output operand with shape {numpy_shape(x.shape)} doesn't match the "
                           f"broadcast shape {numpy_shape(new.shape)}{message}")
            e.add_note(f"at {location}")
            raise e
    return check


# numpy's check that `x op= y` leaves x's shape, where a length is known only when the graph runs (an
# empty x too: a reshape of the result would not see the difference)
CHECK_SHAPE = define("CheckShape", _check_shape_kernel, lambda new, x, **attrs: [], stateful=True,
                     attrs={"message": STR, "location": STR})


# the backprop engine's table (ops/gradients.py reads it): OpDef -> rule(node, *output cotangents)
# -> [input cotangent or None]; each op's rule is registered beside the op with @grad_rule, the
# Cond and While rules by the engine itself. An op with none is not differentiable.
GRADIENTS = {}


def grad_rule(*opdefs):
    """Decorator: `rule(node, *output_cotangents) -> [input cotangent or None]` for these ops."""
    def register_rule(rule):
        for opdef in opdefs:
            GRADIENTS[opdef] = rule
        return rule
    return register_rule


def elementwise_infer(op_fn_for_numpy):
    """Shape = broadcast of inputs; dtype = what numpy gives."""
    def infer(*tensors):
        return [(broadcast_shapes(*(t.shape for t in tensors)), result_dtype(op_fn_for_numpy, tensors))]
    return infer


def elementwise(name, make_kernel, weak_result=False, **facts):
    """An elementwise op whose kernel is `make_kernel(xp)`, e.g. `lambda xp: xp.add`.

    `weak_result`: the kernel gives a Python scalar for Python scalars (an `operator`
    function: `1 + 2` is `3`), so the op of weak tensors is weak (NEP 50); a ufunc's
    (`np.sqrt(4)`, `np.maximum(1, 2)`) is a numpy scalar, strong. `facts`: OpDef fields;
    an elementwise result is a new array and no input makes it raise (numpy warns instead)."""
    return define(name, make_kernel, elementwise_infer(make_kernel(np)),
                  elementwise=True, weak_result=weak_result, **{"fresh": True, "may_raise": False, **facts})
