"""Python builtins that mean something else on tensors: print, range, len, str, string formatting,
and the questions about a value's type (isinstance, type, hasattr, callable), answered for the
value eager code would hold (runtime/boxes.py)."""
import builtins
import functools
import re

import numpy as np

from .. import ops
from ..errors import ConversionError, user_location
from ..ops import array_ops, math_ops
from ..ops.core import apply, holds_tensor
from ..ops.logging_ops import ASSERT, FormattedText, is_run_time_shape, warn_if
from ..ops.python_values import PythonValue
from ..runtime.boxes import ARRAY, SCALAR, box_of, eager_type
from ..ops.control_flow import python_int, python_scalar
from ..runtime.graph import Tensor, current_graph, internal_reads
from .exceptions import assert_stmt
from .lists import TensorList
from .logical import Choice


def print_(*args, sep=" ", end="\n", file=None, flush=False):
    """print: inside a trace, a graph node (Python values as constants), so that every call prints
    what the eager run prints, in the same order, with tensor and Python-only prints interleaved.
    A `Choice` (`x and y` of two types) prints as the operand picked when the graph runs."""
    graph = current_graph()
    args = tuple(_as_choice(a) if isinstance(a, Tensor) and a.python_box is not None and a.node.graph is graph
                 else a for a in args)
    at = next((i for i, a in enumerate(args) if isinstance(a, Choice)), None)
    if at is not None:
        def printing(candidate):
            return lambda: print_(*args[:at], candidate, *args[at + 1:], sep=sep, end=end, file=file, flush=flush)
        ops.cond(args[at].pick, printing(args[at].if_true), printing(args[at].if_false))
        return None
    return ops.print(*args, sep=sep, end=end, file=file, flush=flush)


def _as_choice(t):
    """Tensor `t` that a tensor `if` merged from a Python number and a numpy value (`PythonBox`) as a
    Choice of the two, so it prints as the one its branch made (`5`, not `5.0`)."""
    box = t.python_box
    python = box.value
    if python is None:
        default = np.dtype(type(t.dtype.type(0).item()))
        python = python_scalar(t if t.dtype == default else ops.cast(t, default))
    return Choice(box.pick, *((t, python) if box.python_when else (python, t)))


def fstring(callee, *pieces):
    """An f-string: the text now, or, as an argument of the builtin print (or an assert's message)
    that holds tensors, the pieces formatted when the graph runs."""
    if (callee is builtins.print or callee is assert_stmt) and any(
            isinstance(p, tuple) and (isinstance(p[0], (Tensor, PythonValue)) or is_run_time_shape(p[0]))
            for p in pieces):
        return FormattedText(pieces)
    return "".join(p if isinstance(p, str) else _format_now(*p) for p in pieces)


def _format_now(value, conversion, spec):
    _refuse_tensors(value, "an f-string")
    if conversion is not None:
        value = {"s": str, "r": repr, "a": ascii}[conversion](value)
    return format(value, spec)


# one `%` directive: no mapping key and no `*` width (those are formatted now, refusing tensors)
_DIRECTIVE = re.compile(r"%[#0\- +]*\d*(?:\.\d+)?[hlL]?[diouxXeEfFgGcrsa]|%%")


def percent_format(text, values, callee=None):
    """`text % values`: the text now, or, as an argument of the builtin print holding tensors, one
    piece per directive, each `directive % (value,)` when the graph runs (as Python formats it)."""
    items = values if type(values) is tuple else (values,)
    if callee is builtins.print and any(isinstance(v, (Tensor, PythonValue)) for v in items) and \
            "%(" not in text and "*" not in text:
        pieces, at, k = [], 0, 0
        for m in _DIRECTIVE.finditer(text):
            pieces.append(text[at:m.start()])
            at = m.end()
            if m.group() == "%%":
                pieces.append("%")
            elif k < len(items):
                pieces.append((items[k], "%", m.group()))
                k += 1
            else:
                raise TypeError(f"not enough arguments for format string (at {user_location(2)})")
        if k < len(items):
            raise TypeError(f"not all arguments converted during string formatting (at {user_location(2)})")
        pieces.append(text[at:])
        return FormattedText([p for p in pieces if p != ""])
    _refuse_tensors(values, "`%` formatting")
    return text % values


def str_(*args, **kwargs):
    """str(): of a symbolic tensor an error, not the text 'Tensor(...)'."""
    if args:
        _refuse_tensors(args[0], "str()")
    return str(*args, **kwargs)


def _refuse_tensors(value, what, depth=0):
    if isinstance(value, Tensor):
        raise TypeError(
            f"{what} of symbolic {value!r} would give the text 'Tensor(...)', not its value, which "
            f"exists only when the graph runs; pass the tensor to print(...) or ag.print(...) "
            f"instead (at {user_location(3 + depth)})")
    if depth < 20 and isinstance(value, (list, tuple, dict)):
        for item in value.values() if isinstance(value, dict) else value:
            _refuse_tensors(item, what, depth + 1)


def range_(*args):
    """range: with a tensor bound, ag.range (a graph loop when iterated), marked so that a `for`
    over it gives Python ints (weak, NEP 50) as Python's range does, not ag.range's int64s."""
    if any(isinstance(a, Tensor) for a in args):
        r = ops.range(*args)
        r.graph.python_ranges[id(r)] = r
        return r
    return builtins.range(*args)


def len_(value):
    """len: of a tensor whose first dim is unknown, a scalar tensor."""
    if isinstance(value, TensorList):
        value = value.stacked()
    if isinstance(value, Tensor):
        if value.ndim == 0:
            raise TypeError(f"len() of a scalar {value!r}")
        if value.shape[0] is not None:
            return value.shape[0]
        with internal_reads():  # a length, which no in-place update changes: read from a stale value too
            return python_int(ops.shape(value)[0])  # a Python int, as eager's len() gives
    return builtins.len(value)


def _eager_types(value):
    """The types eager code may hold for `value`: one, or a Choice's candidates' (known when the graph
    runs); None for a value that is not symbolic."""
    if isinstance(value, PythonValue):
        value._refuse()  # its type is known only when the graph runs
    if isinstance(value, Tensor):
        types = [eager_type(value)]  # None: it depends on the path a tensor `if` took
        if value.python_box is not None:  # a Python number on the runs that took one side
            python = value if value.python_box.value is None else value.python_box.value
            types.append(builtins.type(python.dtype.type(0).item()))
        return types
    if isinstance(value, TensorList):
        return [list]
    if isinstance(value, Choice):
        return [t for c in value.candidates() for t in (_eager_types(c) or [builtins.type(c)])]
    return None


def _same_answer(value, answer, what):
    """`answer(type)` for each type eager may hold for `value`; refused where they differ."""
    types = _eager_types(value)
    answers = {answer(t) for t in types if t is not None}
    if len(answers) > 1 or None in types:
        raise ConversionError(f"{what} of {value!r}: eagerly the value is a numpy scalar or an array (or another "
                              f"type) by the path a tensor `if`, a loop iteration or `x and y` / `x or y` took, known "
                              f"only when the graph runs; give both paths one type (np.asarray(v), v[()]) "
                              f"(at {user_location(3)})")
    return answers.pop()


def isinstance_(value, classinfo):
    """isinstance: a tensor is an instance of what eager code holds (np.ndarray, np.float64, float);
    `isinstance(t, ag.Tensor)` stays true (the one way to ask whether code is being traced)."""
    if _eager_types(value) is None or (isinstance(value, Tensor) and builtins.isinstance(value, classinfo)):
        return builtins.isinstance(value, classinfo)
    return _same_answer(value, lambda t: builtins.issubclass(t, classinfo), "isinstance()")


def type_(*args):
    """type: of a tensor, the type of the value eager code holds (`type(x) is np.ndarray`)."""
    if len(args) == 1 and _eager_types(args[0]) is not None:
        return _same_answer(args[0], lambda t: t, "type()")
    return builtins.type(*args)


def hasattr_(value, name):
    """hasattr: of a tensor, whether the value eager code holds has attribute `name`."""
    if _eager_types(value) is None:
        return builtins.hasattr(value, name)
    return _same_answer(value, lambda t: builtins.hasattr(t, name), "hasattr()")


def callable_(value):
    """callable: a tensor is not callable, as an array is not."""
    if _eager_types(value) is None:
        return builtins.callable(value)
    return _same_answer(value, lambda t: any("__call__" in vars(k) for k in t.__mro__), "callable()")


@functools.lru_cache(maxsize=None)
def numpy_scalar_type(scalar_type):
    """A numpy scalar type called on a tensor (`np.float32(t)`, `type(s)(t)`): the value as that type,
    a numpy scalar where it is 0-d (as eagerly), else an array."""
    def convert(*args, **kwargs):
        if len(args) != 1 or kwargs or not isinstance(args[0], Tensor):
            return scalar_type(*args, **kwargs)
        if args[0].ndim and args[0].dtype == np.dtype(scalar_type):
            return args[0]  # numpy gives an array of this dtype back itself: `v = np.float32(x); v -= 1` updates x
        x = args[0]
        if x.python_box is not None:
            # a Python number where a tensor `if` took one side (the merged value holds it as one on those
            # runs, which a cast would make a 0-d array): its number, cast as a Python number's
            if x.python_box.value is not None and x.python_box.value.dtype != x.dtype:
                on_python, on_numpy, remedy = x.python_box.paths()
                raise ConversionError(f"{scalar_type.__name__}() of a value that is a Python number where "
                                      f"{on_python} and a numpy {x.dtype} {on_numpy}; {remedy} "
                                      f"(at {user_location(2)})")
            x = python_scalar(x)
        out = ops.cast(x, scalar_type)
        return out[()] if out.ndim == 0 and box_of(out) != SCALAR else out
    return convert


# --- min, max, sum, sorted, any, all, float, int and math.* on tensors: as eager Python computes them ---

_NO_DEFAULT = object()


def _refuse_with_tensors(name, what):
    raise ConversionError(f"{name}() with {what} of tensors is not supported (at {user_location(3)})")


def _rows(value, name):
    """A tensor Python iterates: its rows, which must be 0-d for Python to compare them."""
    if value.ndim == 0:
        raise TypeError(f"iteration over a 0-d array (at {user_location(3)})")
    if value.shape[0] is None:
        raise ConversionError(f"{name}() of {value!r}, whose length is known only when the graph runs, is not "
                              f"supported (at {user_location(3)})")
    if value.ndim > 1 and value.shape[0] > 1 and (None in value.shape or np.prod(value.shape[1:]) != 1):
        raise ValueError(f"The truth value of an array with more than one element is ambiguous. Use a.any() or "
                         f"a.all() (comparing the rows of {value!r} in {name}(), at {user_location(3)})")
    return value


def _same_type(a, b):
    def kind(v):
        return (eager_type(v), v.dtype) if isinstance(v, Tensor) else (builtins.type(v), np.asarray(v).dtype)
    # `is not None`: a float64 dtype == None (np.dtype(None) is float64)
    return kind(a) == kind(b) and kind(a)[0] is not None


def _picked(pick, if_false, if_true):
    """Python's `if_true if pick else if_false` of a tensor `pick`: one value where both are the
    same type, else a Choice (returned as the one picked)."""
    if not _same_type(if_false, if_true):
        return Choice(pick, if_false, if_true)
    chosen = math_ops.where(pick, if_true, if_false)
    like = if_false if isinstance(if_false, Tensor) else if_true
    if isinstance(like, Tensor) and like.weak:
        return python_scalar(chosen)
    return chosen[()] if chosen.ndim == 0 and box_of(chosen) != box_of(like) else chosen


def _min_max(builtin, compare, arg_extreme, fill):
    name = builtin.__name__

    def fold(items):
        current = items[0]
        for item in items[1:]:  # Python keeps the first of equal items: replaced only by a strictly smaller one
            if isinstance(item, Tensor) or isinstance(current, Tensor):
                if isinstance(current, Choice) or isinstance(item, Choice):
                    _refuse_with_tensors(name, "values of several types")
                smaller = compare(item, current)
                if not isinstance(smaller, Tensor):
                    current = item if smaller else current
                    continue
                if None in smaller.shape or int(np.prod(smaller.shape)) != 1:
                    raise ValueError(f"The truth value of an array with more than one element is ambiguous. Use "
                                     f"a.any() or a.all() (comparing {item!r} and {current!r} in {name}(), at "
                                     f"{user_location(3)})")
                current = _picked(smaller, current, item)
            else:
                current = builtin(current, item)
        return current

    def extreme_row(x):
        if x.ndim > 1:  # rows of one element: compared as arrays
            return fold([x[i] for i in builtins.range(x.shape[0])])
        if x.dtype.kind not in "fc":
            return x[arg_extreme(x)]
        # Python's fold: a NaN first stays (nothing compares smaller), any other NaN is passed over
        best = x[arg_extreme(math_ops.where(math_ops.isnan(x), fill, x))]
        return math_ops.where(math_ops.isnan(x[0]), x[0], best)[()]

    def fn(*args, key=None, default=_NO_DEFAULT):
        if len(args) == 1 and not isinstance(args[0], Tensor):
            args = (list(args[0]),)  # an iterable (a generator of tensors too) read once, as Python does
        if not any(isinstance(a, Tensor) or (builtins.type(a) is list and holds_tensor(a)) for a in args):
            kwargs = {} if default is _NO_DEFAULT else {"default": default}
            return builtin(*args, key=key, **kwargs)
        if key is not None:
            _refuse_with_tensors(name, "key=")
        if len(args) > 1:
            return fold(list(args))
        (items,) = args
        if isinstance(items, Tensor):
            if _rows(items, name).shape[0] == 0:
                if default is _NO_DEFAULT:
                    raise ValueError(f"{name}() iterable argument is empty")
                return default
            return extreme_row(items)
        if not items:
            if default is _NO_DEFAULT:
                raise ValueError(f"{name}() iterable argument is empty")
            return default
        return fold(list(items))
    fn.__name__ = name
    return fn


min_ = _min_max(builtins.min, lambda item, current: math_ops.less(item, current), math_ops.argmin, np.inf)
max_ = _min_max(builtins.max, lambda item, current: math_ops.greater(item, current), math_ops.argmax, -np.inf)


def sum_(iterable, /, start=0):
    """sum() of a tensor: its rows added one by one from `start`, in the dtype numpy gives
    `start + row` (a running sum in order, as Python adds, not numpy's pairwise sum)."""
    if not isinstance(iterable, Tensor):
        return builtins.sum(iterable, start)
    x = iterable
    if x.ndim == 0:
        raise TypeError(f"iteration over a 0-d array (at {user_location(2)})")
    if x.shape[0] is None:
        raise ConversionError(f"sum() of {x!r}, whose length is known only when the graph runs, is not supported "
                              f"(at {user_location(2)}); use np.sum(x, axis=0) or x.sum(0)")
    if x.shape[0] == 0:
        return start
    first = math_ops.add(start, x[0])
    dtype = first.dtype
    begin = array_ops.expand_dims(array_ops.broadcast_to(math_ops.cast(start, dtype), first.shape), 0)
    return math_ops.cumsum(array_ops.concat([begin, math_ops.cast(x, dtype)], 0), 0, dtype)[-1]


def _truth_of_rows(builtin, reduce):
    def truth(iterable, /):
        """any()/all() of a tensor, or of items some of which are tensors: each row's or item's
        truth, as Python tests it (a Python bool)."""
        if isinstance(iterable, Tensor):
            x = _rows(iterable, builtin.__name__)
            return math_ops.python_call("bool", reduce(math_ops.cast(x, np.bool_)))
        items = list(iterable)
        tensors = [v for v in items if isinstance(v, Tensor)]
        if not tensors:
            return builtin(items)
        if builtin(v for v in items if not isinstance(v, Tensor)) is (builtin is builtins.any):
            return builtin is builtins.any  # a Python item decides it (any: one true; all: one false)
        for t in tensors:
            if None in t.shape or int(np.prod(t.shape)) != 1:
                raise ValueError(f"The truth value of an array with more than one element is ambiguous. Use "
                                 f"a.any() or a.all() ({t!r} in {builtin.__name__}(), at {user_location(2)})")
        truths = array_ops.stack([math_ops.cast(array_ops.reshape(t, ()), np.bool_) for t in tensors])
        return math_ops.python_call("bool", reduce(truths))
    truth.__name__ = builtin.__name__
    return truth


any_ = _truth_of_rows(builtins.any, math_ops.reduce_any)
all_ = _truth_of_rows(builtins.all, math_ops.reduce_all)


def sorted_(iterable, /, *, key=None, reverse=False):
    """sorted() of a 1-D tensor: a list of its elements (numpy scalars) in order, stable as
    Python's sort; Python's order for NaN depends on the comparisons it makes, so a NaN among
    the values raises ValueError when the graph runs."""
    if not isinstance(iterable, Tensor):
        return builtins.sorted(iterable, key=key, reverse=reverse)
    x = _rows(iterable, "sorted")
    if key is not None:
        _refuse_with_tensors("sorted", "key=")
    if x.ndim > 1:
        _refuse_with_tensors("sorted", "rows")
    if x.dtype.kind in "fc":
        apply(ASSERT, (math_ops.logical_not(math_ops.isnan(x)),), {
            "message": "sorted() of values holding NaN: Python's order for NaN depends on the comparisons its "
                       "sort makes, which compiled code does not repeat", "location": user_location(2),
            "error": "ValueError"})
    if reverse:  # stable descending: equal items keep their order, as Python's reverse=True does
        ordered = array_ops.sort(x[::-1], stable=True)[::-1]
    else:
        ordered = array_ops.sort(x, stable=True)
    return [ordered[i] for i in builtins.range(x.shape[0])]


def _real_numbers(name, args):
    """The tensors among `args` as the real numbers Python's `name` (float, int, a math function) reads
    from eager's values: a numpy complex scalar's real part, with numpy's ComplexWarning at the user's
    line on every call; a complex 0-d array raises Python's TypeError, as eagerly (a Python complex
    raises it when the graph runs)."""
    real = []
    for a in args:
        if isinstance(a, Tensor) and a.dtype.kind == "c" and not a.weak:
            box = box_of(a)
            if box == ARRAY:
                accepted = "a string, a bytes-like object or a real number" if name == "int" else \
                    "a string or a real number"
                raise TypeError(f"{'int' if name == 'int' else 'float'}() argument must be {accepted}, not "
                                f"'complex' (at {user_location(3)})")
            if box != SCALAR or a.python_box is not None:
                raise ConversionError(f"{name}() of {a!r}: eagerly a complex numpy scalar (its real part, with "
                                      f"a ComplexWarning) or a 0-d array (a TypeError) by the path a tensor `if` "
                                      f"took; give both paths one type (at {user_location(3)})")
            warn_if(True, "Casting complex values to real discards the imaginary part", user_location(3),
                    category="ComplexWarning")
            a = math_ops.real(a)
        real.append(a)
    return real


def _to_python(builtin):
    def convert(*args, **kwargs):
        if len(args) == 1 and not kwargs and isinstance(args[0], Tensor):
            return math_ops.python_call(builtin.__name__, *_real_numbers(builtin.__name__, args))
        return builtin(*args, **kwargs)
    convert.__name__ = builtin.__name__
    return convert


float_ = _to_python(builtins.float)
int_ = _to_python(builtins.int)


@functools.lru_cache(maxsize=None)
def math_function(fn):
    """`math.<fn>` called in converted code: on tensors (0-d), Python's function of their values
    when the graph runs, giving a Python number as eagerly (and raising where it raises)."""
    def call(*args):
        if any(isinstance(a, Tensor) for a in args):
            return math_ops.python_call(fn.__name__, *_real_numbers(fn.__name__, args))
        return fn(*args)
    call.__name__ = fn.__name__
    return call
