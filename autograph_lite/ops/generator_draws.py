"""Draws from the user's random generators: `np.random.standard_normal(...)`, `rng.random(n)`.

numpy's global functions (`np.random.rand`, ...) are methods of its global `RandomState`, and
`rng.random` is a method of a `Generator`. Converted code calls every callee through
`ag__.call`, which hands such a method called while tracing to `method_call`: the call becomes
one stateful `RandomDraw` node that holds the generator by reference and calls the method each
time the graph runs, so compiled and eager calls advance the same generator the same way (and
`np.random.seed(s)` between calls is seen). The trace learns the result's shape, dtype and
Python type by drawing from a copy of the generator; the real one never moves while tracing.

A generator the traced code makes from a seed (`np.random.default_rng(0)` inside the function)
is made anew by every eager call, so its draws are the trace's own: drawn once, at the trace.
"""
import copy
import random
import types

import numpy as np

from ..errors import ConversionError, NeedsPython, UnknownRank, user_location
from ..runtime import devices
from ..runtime.graph import Slot, Tensor, current_graph, fill_slots
from ..runtime.opdef import CALL_ARGS, CALL_KWARGS, CALL_VALUE, REFERENCE, STR
from .core import apply, define

# methods that are not draws: why a compiled function cannot run them, and what to do instead
_OUTSIDE = "call it outside the compiled function (which draws from the same generator, so it sees the change)"
_NOT_DRAWS = {
    "seed": ("reseeds the generator", _OUTSIDE),
    "set_state": ("sets the generator's state", _OUTSIDE),
    "get_state": ("reads the generator's state", _OUTSIDE),
    "setstate": ("sets the generator's state", _OUTSIDE),
    "getstate": ("reads the generator's state", _OUTSIDE),
    "__getstate__": ("reads the generator's state", _OUTSIDE),
    "__setstate__": ("sets the generator's state", _OUTSIDE),
    "shuffle": ("shuffles its argument in place", "use permutation(x), which returns a shuffled copy"),
    "spawn": ("makes new generators", "make them outside the compiled function and pass them in"),
    "jumped": ("makes a new bit generator", "make it outside the compiled function and pass it in"),
    "advance": ("moves the bit generator's state", _OUTSIDE),
    "get_random_state": ("reads the generator's state", _OUTSIDE),  # cupy.random's own
    "set_random_state": ("sets the generator's state", _OUTSIDE),
    "reset_states": ("resets the generators' states", _OUTSIDE),
}
_BIT_GENERATOR_DRAWS = {"random_raw"}


def _draw_kernel(xp, generator, method, args, kwargs):
    call = getattr(generator, method)
    home, here = devices.generator_device(generator), devices.module_device(xp)
    if home is here:
        def draw(*inputs):
            return call(*fill_slots(args, inputs), **{k: fill_slots(v, inputs) for k, v in kwargs})
        return draw

    def draw_elsewhere(*inputs):  # e.g. numpy's generator in a function placed on a GPU
        inputs = [home.put(x) if isinstance(x, here.xp.ndarray) else x for x in inputs]
        value = call(*fill_slots(args, inputs), **{k: fill_slots(v, inputs) for k, v in kwargs})
        return here.put(value) if isinstance(value, home.xp.ndarray) else value
    return draw_elsewhere


def _example(t, k):
    """A value like tensor `t` holding `k` everywhere (what a copy of the generator is given)."""
    if any(d is None for d in t.shape):
        raise UnknownRank(f"the shape of tensor argument {t!r} is not known at the trace")
    if t.weak:
        return {np.bool_: True, np.int64: k, np.float64: float(k), np.complex128: complex(k)}[t.dtype.type]
    if t.shape == ():
        return t.dtype.type(k)
    return np.full(t.shape, k, t.dtype)


def _sample(generator, method, args, kwargs, examples):
    """One result of the call, drawn from a twin of `generator` (the real one does not move): a
    copy of a host generator; a fresh one of a device's, whose state cannot be copied (cupy's
    holds a cuRAND handle), as only the result's shape, dtype and type are wanted."""
    home = devices.generator_device(generator)
    if home is not devices.CPU:
        examples = [home.put(e) if isinstance(e, np.ndarray) else e for e in examples]

    def draw(twin):
        return getattr(twin, method)(*fill_slots(args, examples), **{k: fill_slots(v, examples) for k, v in kwargs})
    if home is devices.CPU:
        return draw(copy.deepcopy(generator))
    rng = home.xp.random
    if generator is rng:  # the device's global functions: they draw from its current RandomState
        saved = rng.get_random_state()
        rng.set_random_state(rng.RandomState(0))
        try:
            return draw(rng)
        finally:
            rng.set_random_state(saved)
    return draw(rng.RandomState(0) if isinstance(generator, rng.RandomState) else rng.default_rng(0))


_PY_SCALARS = (bool, int, float, complex)


def _spec(value):
    """(shape, dtype, weak) of a drawn value: a Python scalar is weak (NEP 50), as eager holds it."""
    if type(value) in _PY_SCALARS:
        return (), np.result_type(type(value)), True
    dtype = getattr(value, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.kind in "biufc" and hasattr(value, "shape"):
        return tuple(value.shape), dtype, False
    raise TypeError(f"it gives a {type(value).__name__}, not a number or a numeric array")


def _sample_spec(generator, method, args, kwargs, inputs, k):
    """`_spec` of one result drawn with tensor arguments `inputs` holding `k` everywhere, or, where
    numpy refuses those values (`p=` must sum to 1), the arrays they stood for while tracing."""
    try:
        return _spec(_sample(generator, method, args, kwargs, [_example(t, k) for t in inputs]))
    except UnknownRank:
        raise
    except Exception:
        read = [_read_value(t, current_graph()) for t in inputs]
        if not inputs or any(v is None for v in read):
            raise
    return _spec(_sample(generator, method, args, kwargs, read))


def _draw_infer(*inputs, generator, method, args, kwargs):
    shape, dtype, _ = _sample_spec(generator, method, args, kwargs, inputs, 1)
    return [(shape, dtype)]


DRAW = define("RandomDraw", _draw_kernel, _draw_infer, stateful=True,
              attrs={"generator": REFERENCE, "method": STR, "args": CALL_ARGS, "kwargs": CALL_KWARGS},
              printed_attrs=("method", "args", "kwargs"))


def call_name(generator, method):
    """How the user wrote the call, near enough: `np.random.rand()`, `Generator.random()`."""
    if generator is np.random.mtrand._rand:
        return f"np.random.{method}()"
    if generator is getattr(random, "_inst", None):
        return f"random.{method}()"
    if isinstance(generator, types.ModuleType):  # a device's global functions: cupy.random.rand()
        return f"{generator.__name__}.{method}()"
    return f"{type(generator).__name__}.{method}()"


def _read_value(t, graph):
    """The array input tensor `t` stood for while tracing (an argument's, or one read from outside), or
    None (a value the graph computes)."""
    while graph is not None:
        if graph.parent is None:
            return graph.read_values.get(id(t))
        t = next((outer for outer, inner in graph.captures if inner is t), None)
        graph = graph.parent if t is not None else None
    return None


def _root(graph):
    while graph.parent is not None:
        graph = graph.parent
    return graph


def is_draw_method(f):
    """Whether `f` is a method of a random generator (numpy's, or a device's such as cupy's)."""
    owner = getattr(f, "__self__", None)
    return owner is not None and not isinstance(owner, type) and devices.generator_device(owner) is not None


def method_call(method, generator=None):
    """What converted code calls, while tracing, in place of `generator`'s method `method` (by
    default `method.__self__`; a device's global function names its random module)."""
    generator = method.__self__ if generator is None else generator

    def draw(*args, **kwargs):
        return _draw(generator, method.__name__, method, args, kwargs, user_location(2))
    return draw


def _draw(generator, name, method, args, kwargs, location):
    what = call_name(generator, name)
    refused = _NOT_DRAWS.get(name) or (
        ("is not a draw", _OUTSIDE) if isinstance(generator, np.random.BitGenerator)
        and name not in _BIT_GENERATOR_DRAWS else None)
    if refused is not None:
        why, instead = refused
        raise ConversionError(f"{what} {why}; in a compiled function it would run once, while tracing, not "
                              f"on each call (at {location}): {instead}")
    graph = current_graph()
    if id(generator) in _root(graph).made_generators:
        if graph.parent is not None:
            raise ConversionError(
                f"{what} draws from a generator this function made, inside an `if`/`while`/`for` on a "
                f"tensor (at {location}): the trace would draw once for every run of the block. Make the "
                f"generator outside the compiled function and pass it in")
        return method(*args, **kwargs)  # eager makes the generator anew on each call: the trace's own
    inputs = []
    stored_args = tuple(_stored(a, inputs, what, location) for a in args)
    stored_kwargs = tuple((k, _stored(v, inputs, what, location)) for k, v in kwargs.items())
    specs = set()
    for k in (1, 2) if inputs else (1,):  # with tensor arguments: does their value change the type?
        try:
            specs.add(_sample_spec(generator, name, stored_args, stored_kwargs, inputs, k))
        except Exception as e:  # noqa: BLE001 - whatever numpy raises, said at the user's line
            # an argument's shape known only when the graph runs: a tensor loop around it runs as Python
            raise (NeedsPython if isinstance(e, UnknownRank) else ConversionError)(
                f"{what} cannot be compiled (at {location}): the trace learns its result's shape, dtype "
                f"and type by drawing from a copy of the generator, which failed: {type(e).__name__}: {e}"
            ) from None
    if len(specs) > 1:
        raise NeedsPython(
            f"{what} cannot be compiled (at {location}): the shape or type of its result depends on the "
            f"value of a tensor argument; pass that argument as a Python number")
    (_, _, weak), = specs
    out = apply(DRAW, tuple(inputs), {"generator": generator, "method": name, "args": stored_args,
                                      "kwargs": stored_kwargs})
    out.weak = weak
    return out


def _stored(value, inputs, what, location):
    """An argument as the node stores it: a tensor as a Slot naming a new input, lists as tuples."""
    if isinstance(value, Tensor):
        inputs.append(value)
        return Slot(len(inputs) - 1)
    if type(value) in (list, tuple):
        return tuple(_stored(v, inputs, what, location) for v in value)
    stored = devices.to_host(value)
    if not CALL_VALUE.accepts(stored):
        raise ConversionError(f"{what} cannot be compiled (at {location}): its argument {value!r} is a "
                              f"{type(value).__name__}; a compiled draw takes numbers, strings, dtypes, "
                              f"arrays, tensors and tuples or lists of these")
    return stored


def made_generator(constructor):
    """What converted code calls, while tracing, in place of `np.random.default_rng` or a
    generator class: the generator is made, and remembered as the trace's own when it starts
    from a seed (each eager call makes it anew, so its draws are the same on every call)."""
    def make(*args, **kwargs):
        seed = args[0] if args else next(iter(kwargs.values()), None)
        graph = _root(current_graph())
        if seed is None:
            raise ConversionError(
                f"{getattr(constructor, '__name__', constructor)}() without a seed makes a generator from "
                f"fresh entropy on each eager call, but only once in a compiled function (at "
                f"{user_location(2)}): make the generator outside the compiled function and pass it in")
        made = constructor(*args, **kwargs)
        if devices.generator_device(seed) is None or id(seed) in graph.made_generators:
            graph.made_generators[id(made)] = made  # a fresh state: the trace's own
        return made
    return make
