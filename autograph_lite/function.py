"""`ag.function`: trace once per input signature, cache the graph, run its lowered plan.

The cache key of a call is built from its arguments: arrays by (type, shape, dtype),
Python scalars and strings by value (floats by their bits: -0.0 is not 0.0, NaN is NaN),
lists/tuples/dicts by structure and contents, any other object by identity. A call
whose key was seen runs the cached plan; a new key looks for a trace it fits through
indexes (by exact signature, or by structure for traces with None dims), so a lookup
costs the same with 5 traces as with 500; only then does it trace the Python function
into a Graph. The traces of a Function are an LRU of at most `max_traces`.
"""
import functools
import inspect
import itertools
import logging
import operator
import os
import reprlib
import sys
import threading
import types
import warnings
import weakref

import numpy as np

from . import nest, operators
from .operators.variables import check_defined
from .errors import ConversionError, is_internal_file, traceback_location, user_location
from .ops.core import constant_node
from .runtime import devices
from .runtime.devices import _placement
from .runtime.graph import Graph, Tensor, _tracing, building
from .runtime.lowering import Plan
from .runtime.passes import optimize

logger = logging.getLogger("autograph_lite")

_VALUE_TYPES = (bool, int, float, complex, str, bytes, type(None))

# A trace holds its graph, optimized graph and plan: about 12 KB for a three-op function,
# more for a large one. 256 is far above the handful of signatures a function meets in
# normal use (a few batch shapes, train/eval flags) and bounds the worst case (a new
# shape every call) to 256 traces' worth, about 3 MB for a small function.
DEFAULT_MAX_TRACES = 256

# Traces of one Function before RetracingWarning: well above legitimate variety, well
# below the LRU bound, so the warning comes before traces start being evicted.
RETRACE_WARNING_AT = 32


class RetracingWarning(UserWarning):
    """A Function keeps tracing: an argument changes shape, dtype or value from call to call."""


def _max_traces(value):
    """`max_traces` as given, else $AG_MAX_TRACES, else DEFAULT_MAX_TRACES; a positive int."""
    source = "max_traces"
    if value is None:
        value, source = os.environ.get("AG_MAX_TRACES") or DEFAULT_MAX_TRACES, "AG_MAX_TRACES"
    try:
        count = operator.index(value) if not isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        count = 0
    if count < 1:
        raise ValueError(f"{source} must be a positive integer, not {value!r}")
    return count


class TensorSpec:
    """Describes an array argument: `shape` (dims may be None) and `dtype` (float32 by default)."""

    __slots__ = ("shape", "dtype", "name")

    def __init__(self, shape, dtype=np.float32, name=None):
        self.shape = tuple(None if d is None else int(d) for d in shape)
        self.dtype, self.name = np.dtype(dtype), name

    @classmethod
    def from_value(cls, value):
        return cls(value.shape, value.dtype)

    def __repr__(self):
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype.name})"

    def __eq__(self, other):
        return isinstance(other, TensorSpec) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def mismatch(self, value):
        """Why `value` does not fit this spec, in words; None if it fits."""
        if isinstance(value, TensorSpec):
            shape, dtype, what = value.shape, value.dtype, repr(value)
        elif _is_array_input(value):
            refused = _subclass_problem(type(value))
            if refused:
                return f"got {refused}"
            shape, dtype = value.shape, value.dtype
            what = f"an array of shape {shape} and dtype {dtype}"
        else:
            return f"got {type(value).__name__} {value!r}, not an array"
        if dtype != self.dtype:
            return f"got {what}: dtype {dtype} is not {self.dtype}"
        if len(shape) != len(self.shape):
            return f"got {what}: rank {len(shape)} is not {len(self.shape)}"
        for axis, (want, have) in enumerate(zip(self.shape, shape)):
            if want is not None and want != have:
                return f"got {what}: dim {axis} is {have}, expected {want}"
        return None


_shape_dtype = operator.attrgetter("shape", "dtype")


def _is_array(value):
    t = type(value)
    return t is np.ndarray or isinstance(value, np.generic) or devices.is_gpu_array(value)


def _is_array_input(value):
    """An array argument: an ndarray (subclasses too), a numpy scalar or a GPU array."""
    return isinstance(value, (np.ndarray, np.generic)) or devices.is_gpu_array(value)


# ndarray methods whose override changes what an operation on the array means; a subclass
# may override the others (construction, printing, pickling, __array_finalize__).
_NDARRAY_SEMANTICS = frozenset(name for name in dir(np.ndarray) if name.startswith("__")) - {
    "__array_finalize__", "__array_priority__", "__class__", "__class_getitem__", "__copy__",
    "__deepcopy__", "__delattr__", "__dir__", "__doc__", "__format__", "__getattribute__",
    "__getstate__", "__hash__", "__init__", "__init_subclass__", "__new__", "__reduce__",
    "__reduce_ex__", "__repr__", "__setattr__", "__setstate__", "__sizeof__", "__str__",
    "__subclasshook__"}


def _subclass_problem(t):
    """Why arrays of type `t` cannot be array inputs, in words; None for ndarray and faithful subclasses.

    A compiled graph computes with ndarray semantics. np.memmap and subclasses that keep
    ndarray's operators are array inputs (their data read at each call); np.matrix, masked
    arrays and subclasses that override operators would compute something else than eager.
    """
    if t is np.ndarray or not issubclass(t, np.ndarray):
        return None
    if issubclass(t, np.matrix):
        return ("a numpy.matrix, whose operators differ from an ndarray's (`*` is a matrix product, "
                "results stay 2-D)")
    if issubclass(t, np.ma.MaskedArray):
        return "a masked array (numpy.ma), whose mask a compiled graph would ignore"
    mro = t.__mro__
    overridden = sorted({name for cls in mro[:mro.index(np.ndarray)] if cls is not np.memmap
                         for name in vars(cls) if name in _NDARRAY_SEMANTICS})
    if overridden:
        return (f"a {t.__name__}, an ndarray subclass overriding {', '.join(overridden)}, whose "
                f"operations may differ from an ndarray's")
    return None


class _RefusedArray(TypeError):
    """An array argument of a type compiled code cannot treat as an ndarray (see _subclass_problem)."""

    def __init__(self, value, problem):
        super().__init__(f"{problem}; pass np.asarray(...) of it, or call the function uncompiled")
        self.value, self.problem = value, problem


class _ByIdentity:
    """A cache-key part for an arbitrary object: equal only to the same (live) object."""

    __slots__ = ("ref", "ident")

    def __init__(self, obj):
        self.ident = id(obj)
        try:
            self.ref = weakref.ref(obj)
        except TypeError:
            self.ref = lambda obj=obj: obj  # not weak-referenceable: keep it alive instead

    def __hash__(self):
        return self.ident

    def __eq__(self, other):
        return isinstance(other, _ByIdentity) and self.ident == other.ident and self.ref() is not None \
            and self.ref() is other.ref()


def _key(value, arrays):
    """The cache-key part of `value`; appends its array leaves to `arrays` in trace order."""
    t = type(value)
    if t is np.ndarray:
        arrays.append(value)
        return (np.ndarray, value.shape, value.dtype)
    if t is float:  # by bits, so -0.0 and 0.0 differ and NaN equals NaN
        return (float, value.hex())
    if t is complex:
        return (complex, value.real.hex(), value.imag.hex())
    if t in _VALUE_TYPES:
        return (t, value)
    if t is tuple or t is list or nest._is_namedtuple(value):
        return (t, tuple(_key(v, arrays) for v in value))
    if t is dict:
        return (dict, tuple((_dict_key(k), _key(v, arrays)) for k, v in value.items()))
    if isinstance(value, TensorSpec):
        return (np.ndarray, value.shape, value.dtype)
    if _is_array_input(value):
        problem = _subclass_problem(t)
        if problem:
            raise _RefusedArray(value, problem)
        arrays.append(value)
        return (t, value.shape, value.dtype)
    if isinstance(value, Tensor):
        raise TypeError(f"{value!r} from another trace was passed to a compiled function; "
                        f"call it from inside the same @ag.function instead")
    return (_ByIdentity(value),)


def _dict_key(k):
    """A dict key as a cache-key part: floats by bits like values, anything else as it is."""
    return _key(k, []) if type(k) in (float, complex) else k


def _structure_key(specs):
    """Like `_key` of a spec tree, but arrays only by rank and dtype.

    Traces with the same structure key differ at most in their dims, so this indexes the
    traces with None dims that a call might fit, and the trace reduce_retracing relaxes.
    """
    t = type(specs)
    if isinstance(specs, TensorSpec):
        return (TensorSpec, len(specs.shape), specs.dtype)
    if t is tuple or t is list or nest._is_namedtuple(specs):
        return (t, tuple(_structure_key(v) for v in specs))
    if t is dict:
        return (dict, tuple((_dict_key(k), _structure_key(v)) for k, v in specs.items()))
    return _key(specs, [])


def _has_none_dims(specs):
    return any(isinstance(s, TensorSpec) and None in s.shape for s in nest.flatten(list(specs)))


def _argument_keys(specs):
    """Per argument: (its structure, the key of each leaf); what `_distance` compares."""
    return tuple((nest.structure_of(spec), tuple(_key(leaf, []) for leaf in nest.flatten([spec])))
                 for spec in specs)


def _distance(a, b):
    """How many leaves differ between two `_argument_keys`; a changed structure counts all its leaves."""
    d = 0
    for (structure_a, leaves_a), (structure_b, leaves_b) in zip(a, b):
        if structure_a != structure_b:
            d += max(len(leaves_a), len(leaves_b), 1)
        else:
            d += sum(x != y for x, y in zip(leaves_a, leaves_b))
    return d


def _specs(value):
    """`value` with every array leaf replaced by its TensorSpec."""
    t = type(value)
    if t is tuple or t is list:
        return t(_specs(v) for v in value)
    if nest._is_namedtuple(value):
        return t(*(_specs(v) for v in value))
    if t is dict:
        return {k: _specs(v) for k, v in value.items()}
    if _is_array_input(value):
        return TensorSpec.from_value(value)
    return value


def _spec_mismatch(spec, value, path):
    """Why `value` does not fit `spec` (a tree of TensorSpecs and Python values), or None."""
    if isinstance(spec, TensorSpec):
        problem = spec.mismatch(value)
        return problem and (path, spec, problem)
    t = type(spec)
    if t in (tuple, list, dict) or nest._is_namedtuple(spec):
        if type(value) is not t or len(value) != len(spec):
            return (path, spec, f"got {type(value).__name__} {value!r}, expected a {t.__name__} of {len(spec)}")
        items = spec.items() if t is dict else enumerate(spec)
        for k, s in items:
            if t is dict and k not in value:
                return (path, spec, f"missing key {k!r}")
            found = _spec_mismatch(s, value[k], f"{path}[{k!r}]")
            if found:
                return found
        return None
    if _key(spec, []) != _key(value, []):
        return (path, spec, f"got {value!r}, but this trace was made for {spec!r}")
    return None


def _relax(old, new):
    """Generalize spec tree `old` so `new` fits: dims that differ become None. None if ranks differ."""
    if isinstance(old, TensorSpec) and isinstance(new, TensorSpec):
        if old.dtype != new.dtype or len(old.shape) != len(new.shape):
            return None
        return TensorSpec([a if a == b else None for a, b in zip(old.shape, new.shape)], old.dtype)
    t = type(old)
    if t is not type(new):
        return None
    if t is tuple or t is list:
        parts = [_relax(a, b) for a, b in zip(old, new)]
        return t(parts) if len(old) == len(new) and all(p is not None for p in parts) else None
    if t is dict:
        if old.keys() != new.keys():
            return None
        parts = {k: _relax(old[k], new[k]) for k in old}
        return parts if all(p is not None for p in parts.values()) else None
    return old if _key(old, []) == _key(new, []) else None


def _add_note(exc, text):
    if hasattr(exc, "add_note"):
        exc.add_note(text)
    else:  # Python 3.10
        exc.args = (f"{exc.args[0] if exc.args else ''}\n{text}",) + exc.args[1:]


class ConcreteFunction:
    """One traced signature of a Function: its `graph`, callable with matching arguments."""

    def __init__(self, function, graph, input_specs, output_template, output_slots, device):
        self._function, self.graph, self.input_specs = function, graph, input_specs
        self._template, self._slots, self.device = output_template, output_slots, device
        self._plan, self._optimized, self._lock = None, None, threading.Lock()
        self._effects = ()  # steps redoing the trace's effects on the arguments (see _Effects)
        self._on_gpu = device is not devices.CPU
        # fast paths for the common output shapes: one tensor, or a flat tuple of them
        self._single = output_slots == [0] and output_template is _OUTPUT
        self._flat_tuple = type(output_template) is tuple and all(t is _OUTPUT for t in output_template) \
            and output_slots == list(range(len(output_template))) and not graph.write_back_outputs

    @property
    def optimized_graph(self):
        """The graph after the optimization passes (what the plan runs); printable like `graph`."""
        if self._optimized is None:
            with self._lock:
                if self._optimized is None:
                    self._optimized = optimize(self.graph)
        return self._optimized

    @property
    def plan(self):
        """The optimized graph lowered to generated Python for its device (built on first use)."""
        if self._plan is None:
            graph = self.optimized_graph
            with self._lock:
                if self._plan is None:
                    self._plan = Plan(graph, self.device)
        return self._plan

    @property
    def structured_input_signature(self):
        return self.input_specs

    def __call__(self, *args, **kwargs):
        values = self._function._canonicalize(args, kwargs)
        found = _spec_mismatch(list(self.input_specs), list(values), "")
        if found:
            raise self._function._signature_error(found, "this concrete function's signature")
        return self._run(self._function._leaves(self.input_specs, values), values)

    def _run(self, arrays, values=None):
        plan = self._plan or self.plan
        callers = arrays
        if self._on_gpu:
            arrays = [self.device.put(a) for a in arrays]
        try:
            results = plan.fn(*arrays)
        except Exception as e:
            nodes = plan.failing_nodes(e)
            if len(nodes) == 1:
                _add_note(e, f"while running {nodes[0].op} node '{nodes[0].name}' of "
                             f"{self._function.__name__}, created at {nodes[0].location}")
            elif nodes:
                _add_note(e, f"while running one of these nodes of {self._function.__name__}: " + "; ".join(
                    f"{n.op} '{n.name}' created at {n.location}" for n in nodes))
            raise
        if self.graph.write_back_outputs:
            self._write_back(callers, results)
        if self._effects:  # the trace changed the caller's containers or objects: redo it
            _replay(self._effects, values, results)
        if self._single:
            return results[0]
        if self._flat_tuple:
            return results
        return nest.pack(self._template, [results[s] if isinstance(s, int) else s.get(callers, results)
                                          for s in self._slots])

    def _write_back(self, callers, results):
        """Copy the final value of each argument updated in place into the caller's array."""
        for i, k in self.graph.write_back_outputs:
            target = callers[i]
            if isinstance(target, np.generic) or not hasattr(target, "__setitem__"):
                continue  # numpy scalars are immutable: `x += 1` rebinds, as eagerly
            for j, other in enumerate(callers):
                if j != i and isinstance(other, np.ndarray) and np.may_share_memory(target, other):
                    name = self.graph.inputs[i].node.attrs.get("argument")
                    raise ValueError(
                        f"{self._function.__name__}(): argument '{name}' is updated in place and shares memory "
                        f"with argument '{self.graph.inputs[j].node.attrs.get('argument')}'; the compiled "
                        f"function cannot make one see the update of the other: pass a copy "
                        f"(called at {user_location()})")
            value = results[k]
            target[...] = value.get() if devices.is_gpu_array(value) and isinstance(target, np.ndarray) else value

    def __repr__(self):
        return f"<ConcreteFunction {self._function.__name__}{self.input_specs}>"


class _Literal:
    """An output leaf that never touched a tensor: returned as it is."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def get(self, arrays, results):
        return self.value


class _UpdatedArgument:
    """An output leaf that is an argument's array after in-place updates: eagerly the function
    returns the caller's own array (`x += 1; return x`), so the compiled one does too."""
    __slots__ = ("input", "output")

    def __init__(self, input_index, output_index):
        self.input, self.output = input_index, output_index

    def get(self, arrays, results):
        array = arrays[self.input]
        return results[self.output] if isinstance(array, np.generic) else array


class _ListItems:
    """An output leaf that is a list built in a graph loop (a TensorList): a Python list of the
    rows of its stacked output, as the eager run returns a list."""
    __slots__ = ("output",)

    def __init__(self, output_index):
        self.output = output_index

    def get(self, arrays, results):
        return [] if self.output is None else list(results[self.output])


_OUTPUT = object()  # template marker for a graph output


class _TraceEntry:
    """What a Function keeps beside a live trace: its index keys and the cache keys that point at it."""
    __slots__ = ("signature", "structure", "argument_keys", "keys")

    def __init__(self, signature, structure, argument_keys):
        self.signature, self.structure, self.argument_keys = signature, structure, argument_keys
        self.keys = []  # (table, key): where eviction must unlink it (some may have been dropped)


class Function:
    """A Python function compiled per input signature. Create with `ag.function`."""

    def __init__(self, python_function, input_signature=None, reduce_retracing=False, device=None,
                 autograph=True, max_traces=None):
        functools.update_wrapper(self, python_function)
        if not hasattr(self, "__name__"):  # a callable instance: named after its class
            self.__name__ = self.__qualname__ = type(python_function).__name__
        self.python_function = python_function
        self._signature = inspect.signature(python_function)
        params = list(self._signature.parameters.values())
        self._param_names = [p.name for p in params]
        simple = all(p.kind == p.POSITIONAL_OR_KEYWORD and p.default is p.empty for p in params)
        self._n_simple = len(params) if simple else -1
        self._input_signature = None if input_signature is None else list(input_signature)
        self._reduce_retracing = reduce_retracing
        self._device = None if device is None else devices.get(device)
        self._autograph, self._converted = autograph, None
        self._fast_path = input_signature is None
        self._max_traces = _max_traces(max_traces)
        # Keys are many-to-one onto traces (relaxed dims, signatures), so both key caches are
        # bounded too, oldest key first; a dropped key of a live trace is found again by index.
        self._max_keys = 4 * self._max_traces
        self._fast_cache = {}       # (device, arg types, (shape, dtype) per arg) -> ConcreteFunction
        self._cache = {}            # full key -> ConcreteFunction
        self._traces = {}           # live ConcreteFunction -> its _TraceEntry
        self._exact = {}            # (device, signature key) -> trace whose specs have no None dims
        self._relaxed = {}          # (device, structure key) -> traces with None dims, oldest first
        self._latest = {}           # (device, structure key) -> newest trace (what reduce_retracing relaxes)
        self._clock = itertools.count(1)  # stamps each trace's last use: the LRU order
        self._lock = threading.RLock()
        self._warned = False
        self.trace_count = 0        # traces made, evicted ones included
        self._evictions = 0

    # --- calling ------------------------------------------------------------------------

    def __call__(self, *args, **kwargs):
        if _tracing.stack:  # called while tracing another function: inline it
            return self._traced_function()(*args, **kwargs)
        if not kwargs and self._fast_path:
            # positional arrays only: a key built at C speed, looked up in its own cache
            try:
                fast_key = (_placement.device, tuple(map(type, args)), tuple(map(_shape_dtype, args)))
            except AttributeError:
                fast_key = None
            concrete = self._fast_cache.get(fast_key)
            if concrete is not None:
                concrete._last_use = next(self._clock)
                return concrete._run(args)
        values = args if len(args) == self._n_simple and not kwargs else self._canonicalize(args, kwargs)
        arrays = []
        key = (devices.current(), self._key_of(values, arrays))
        concrete = self._cache.get(key)
        if concrete is None:
            concrete = self._concrete_for(key, values)
        else:
            concrete._last_use = next(self._clock)
        if self._input_signature is not None:
            arrays = self._leaves(concrete.input_specs, values)
        elif not kwargs and len(args) == self._n_simple and all(
                isinstance(a, (np.ndarray, np.generic)) for a in args):
            # array types that reach here were accepted by _key, and the fast key holds the type
            self._remember_fast((key[0], tuple(map(type, args)), tuple(map(_shape_dtype, args))), concrete)
        return concrete._run(arrays, values)

    def __get__(self, instance, owner=None):
        return self if instance is None else types.MethodType(self, instance)

    def get_concrete_function(self, *args, **kwargs):
        """The ConcreteFunction for these arguments (arrays or TensorSpecs), tracing if needed."""
        if not args and not kwargs and self._input_signature is not None:
            args = tuple(self._input_signature)
        values = self._canonicalize(args, kwargs)
        key = (devices.current(), self._key_of(values, []))
        return self._cache.get(key) or self._concrete_for(key, values)

    def _key_of(self, values, arrays):
        """The cache key of the arguments `values` (see `_key`); a refused array type names its argument."""
        try:
            return tuple([_key(v, arrays) for v in values])
        except _RefusedArray as e:
            path = next(p for name, v in zip(self._param_names, values)
                        for p, leaf in zip(nest.paths(v, name), nest.flatten([v])) if leaf is e.value)
            raise TypeError(f"{self.__name__}(): argument '{path}' is {e.problem}, so a compiled call "
                            f"could not match an eager one; pass np.asarray({path}) instead "
                            f"(called at {user_location()})") from None

    def _remember_fast(self, fast_key, concrete):
        with self._lock:
            if concrete in self._traces:  # not evicted meanwhile by another thread
                self._point(self._fast_cache, fast_key, concrete)

    def _point(self, table, key, concrete):
        """`table[key] = concrete` for a live trace; the table keeps its newest max_keys keys."""
        table[key] = concrete
        if len(table) > self._max_keys:
            del table[next(iter(table))]
        keys = self._traces[concrete].keys
        keys.append((table, key))
        if len(keys) > 4 * self._max_keys:  # forget dropped keys; amortized O(1)
            keys[:] = [(t, k) for t, k in keys if t.get(k) is concrete]

    def _canonicalize(self, args, kwargs):
        """Arguments in parameter order, defaults filled in."""
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.__name__}(): {e} (called at {user_location()})") from None
        bound.apply_defaults()
        return tuple(bound.arguments.values())

    def _call_python(self, fn, values):
        bound = self._signature.bind_partial()
        bound.arguments.update(zip(self._param_names, values))
        return fn(*bound.args, **bound.kwargs)

    def _traced_function(self):
        """What tracing calls: the converted Python function (or the original with autograph=False)."""
        if not self._autograph:
            return self.python_function
        if self._converted is None:
            self._converted = operators.call(self.python_function)
        return self._converted

    # --- choosing or making a trace -----------------------------------------------------

    def _concrete_for(self, key, values):
        with self._lock:
            concrete = self._cache.get(key)
            if concrete is None:
                if self._input_signature is not None:
                    concrete = self._for_signature(values)
                else:
                    concrete = self._find(key[0], values) or self._trace(self._specs_for(key[0], values),
                                                                         key[0], values)
                self._point(self._cache, key, concrete)
            concrete._last_use = next(self._clock)
            return concrete

    def _find(self, device, values):
        """A live trace that `values` fit, found by index: no scan over the traces."""
        specs = _specs(values)
        concrete = self._exact.get((device, _key(specs, [])))
        if concrete is None:
            # only traces with None dims and the same structure, ranks and dtypes could fit
            for candidate in reversed(self._relaxed.get((device, _structure_key(specs)), ())):
                if not _spec_mismatch(list(candidate.input_specs), list(values), ""):
                    return candidate
        return concrete

    def _specs_for(self, device, values):
        specs = _specs(values)
        if self._reduce_retracing:
            previous = self._latest.get((device, _structure_key(specs)))
            relaxed = previous and _relax(previous.input_specs, specs)
            if relaxed is not None:
                return relaxed
        return specs

    def _for_signature(self, values):
        signature = self._input_signature
        if len(values) != len(signature):
            raise TypeError(f"{self.__name__}() has an input_signature of {len(signature)} arguments "
                            f"but was called with {len(values)} (called at {user_location()})")
        found = _spec_mismatch(signature, [_python_to_array(s, v) for s, v in zip(signature, values)], "")
        if found:
            raise self._signature_error(found, "its input_signature")
        if not self._traces:
            return self._trace(tuple(signature), devices.current(), values)
        return next(iter(self._traces))

    def _signature_error(self, found, against):
        path, spec, problem = found
        index = int(path[1:].split("]")[0])
        name = self._param_names[index] if index < len(self._param_names) else f"args[{index}]"
        rest = path[path.index("]") + 1:]
        return TypeError(f"{self.__name__}(): argument '{name}{rest}' does not match {against}: "
                         f"expected {spec!r}, {problem} (called at {user_location()})")

    def _leaves(self, specs, values):
        """The array leaves of `values` where `specs` has TensorSpecs, converted as the specs say."""
        out = []

        def walk(spec, value):
            if isinstance(spec, TensorSpec):
                out.append(_python_to_array(spec, value))
            elif isinstance(spec, (tuple, list)):
                for s, v in zip(spec, value):
                    walk(s, v)
            elif isinstance(spec, dict):
                for k, s in spec.items():
                    walk(s, value[k])
        walk(list(specs), list(values))
        return out

    def _trace(self, specs, device, values):
        placement = device  # what the indexes key on: the device of the call
        if device is devices.CPU and self._device is None and any(
                devices.is_gpu_array(a) for a in nest.flatten(list(values))):
            device = devices.get("gpu")  # cupy arguments place the graph on the GPU
        device = self._device or device
        argument_keys = _argument_keys(specs)
        if os.environ.get("AG_LOG_RETRACES") and self._traces:
            logger.warning("retracing %s (trace %d) called at %s: %s", self.__name__, self.trace_count + 1,
                           user_location(), self._why_retrace(specs, argument_keys))
        graph = Graph(self.__name__)
        with building(graph):
            inputs = [_placeholders(graph, spec, name, name) for spec, name in zip(specs, self._param_names)]
            graph.inputs = [t for t in nest.flatten(inputs) if isinstance(t, Tensor)]
            effects = _Effects(self, graph, values, inputs)
            try:
                outputs = self._call_python(self._traced_function(), inputs)
                check_defined(outputs)
            except Exception as e:
                effects.restore()
                where = traceback_location(e.__traceback__)
                if where and where not in str(e):
                    _add_note(e, f"while tracing {self.__name__}, at {where}")
                raise
            try:
                template, slots = _output_template(graph, outputs)
            except BaseException:
                effects.restore()
                raise
            steps = effects.finish()
        concrete = ConcreteFunction(self, graph, tuple(specs), template, slots, device)
        concrete._effects = steps
        self.trace_count += 1
        self._add(concrete, placement, argument_keys)
        if self.trace_count >= RETRACE_WARNING_AT and not self._warned:
            self._warned = True
            _warn_at_caller(self._retracing_message(), RetracingWarning)
        return concrete

    # --- the trace cache: indexes and LRU -----------------------------------------------

    def _add(self, concrete, device, argument_keys):
        specs = concrete.input_specs
        signature, structure = (device, _key(specs, [])), (device, _structure_key(specs))
        concrete._last_use = next(self._clock)
        self._traces[concrete] = _TraceEntry(signature, structure, argument_keys)
        if _has_none_dims(specs):
            self._relaxed.setdefault(structure, []).append(concrete)
        else:
            self._exact[signature] = concrete
        self._latest[structure] = concrete
        if len(self._traces) > self._max_traces:
            # a min over max_traces stamps, once per trace made: far less than tracing costs
            self._evict(min(self._traces, key=operator.attrgetter("_last_use")))

    def _evict(self, concrete):
        """Forget the least recently used trace: with no reference left, its graph and plan are freed."""
        entry = self._traces.pop(concrete)
        signature, structure = entry.signature, entry.structure
        if self._exact.get(signature) is concrete:
            del self._exact[signature]
        relaxed = self._relaxed.get(structure, [])
        if concrete in relaxed:
            relaxed.remove(concrete)
            if not relaxed:
                del self._relaxed[structure]
        if self._latest.get(structure) is concrete:
            del self._latest[structure]
        for table, k in entry.keys:
            if table.get(k) is concrete:
                del table[k]
        self._evictions += 1

    def _why_retrace(self, specs, argument_keys):
        """What differs between `specs` and the closest live trace (fewest differing leaves), in words."""
        closest, fewest = None, None
        for concrete, entry in reversed(self._traces.items()):  # newest first wins ties
            d = _distance(entry.argument_keys, argument_keys)
            if fewest is None or d < fewest:
                closest, fewest = concrete, d
        changes = _describe_change(closest.input_specs, specs, self._param_names)
        text = "; ".join(changes) if changes else \
            f"no argument changed, but the closest trace was made on {closest.device.name}"
        if self._evictions:
            text += (f" ({self._evictions} older traces were evicted: at most max_traces="
                     f"{self._max_traces} are kept)")
        return text

    def _retracing_message(self):
        """The RetracingWarning text: which arguments keep changing and how, and what to do."""
        names, traces = self._param_names, list(self._traces)
        changing = []
        for i, name in enumerate(names):
            distinct = {self._traces[c].argument_keys[i] for c in traces}
            if len(distinct) > 1:
                kinds = sorted({kind for c in traces[:-1]
                                for kind in _change_kinds(c.input_specs[i], traces[-1].input_specs[i])})
                changing.append((len(distinct), name, kinds))
        changing.sort(key=lambda item: -item[0])
        what = "; ".join(f"argument '{name}' keeps changing {' and '.join(kinds)} ({count} different)"
                         for count, name, kinds in changing) or "its arguments keep changing identity"
        kinds = {kind for _, _, ks in changing for kind in ks}
        advice = []
        if kinds & {"shape", "dtype"}:
            advice.append("pass reduce_retracing=True to trace shapes with None dims, or an input_signature "
                          "of TensorSpecs to fix one signature")
        numbers = [name for _, name, ks in changing if {"value", "type"} & set(ks)]
        if numbers:
            advice.append(f"pass a Python number that changes as an array (np.asarray({numbers[0]})) or fix it "
                          f"with input_signature: numbers are keyed by value, arrays by shape and dtype")
        if kinds - {"shape", "dtype", "value", "type"} or not advice:
            advice.append("pass the same objects and structures each call, or their data as arrays")
        return (f"{self.__name__} has traced {self.trace_count} times: {what}. Each new signature traces "
                f"and compiles again; {'; or '.join(advice)}. Set AG_LOG_RETRACES=1 to log each retrace.")

    def __repr__(self):
        return f"<ag.function {self.__name__} ({self.trace_count} traces)>"


# --- effects of a trace on the caller's containers and objects ------------------------
#
# Tracing runs the Python function once; eagerly, every call runs its Python side effects.
# `_Effects.snapshot` records the mutable Python state reachable from the arguments before
# a trace, `_Effects.finish` compares it after the trace and turns each change into a step
# the ConcreteFunction replays after every call, or raises a ConversionError.
#
# Lists and dicts passed as arguments are keyed by their contents and the trace works on
# copies of them, so a trace's effect on them is fixed by the cache key: their final
# contents are replayed into the caller's containers (items that are tensors become extra
# graph outputs, items the arguments held are found again by path). Objects are keyed by
# identity, not by their state, so a change of a Python value in their attributes (a
# counter) could not be repeated; only attributes (and items of containers they hold) set
# to tensors or to argument values are replayed, anything else is an error. The caller's
# objects are restored after every trace, so no symbolic Tensor is left in them.

_IMMUTABLE = (bool, int, float, complex, str, bytes, type(None), np.generic, range, slice)


class _ReplayError(Exception):
    """A value a trace left in the caller's state that a later call could not produce again."""


class _Effects:
    """The argument state a trace may change, and what each call must redo (see above)."""

    def __init__(self, function, graph, values, traced):
        self._function, self._graph = function, graph
        self._origin = {}     # id(traced object) -> (path, traced object): found again in the arguments
        self._copies = []     # (path, traced copy, its items before): list/dict arguments
        self._direct = []     # (path, caller's object, its state before): objects, sets, containers they hold
        self._seen = set()
        for i, (name, value, view) in enumerate(zip(function._param_names, values, traced)):
            self._walk(value, view, ((i, name),), False)
        # list arguments a staged if/while/for must not change (operators/control_flow.py checks)
        graph.argument_lists = {id(view): (view, _label(path)) for path, view, _ in self._copies
                                if type(view) is list}

    # path: a tuple of (step, label); the first step is the argument index, then ("item", key)
    # or ("attr", name); labels make the words of an error message.
    def _walk(self, value, view, path, owned):
        if isinstance(view, Tensor):
            self._origin.setdefault(id(view), (path, view))
            return
        t = type(view)
        if t in _IMMUTABLE or _is_array_input(view) or id(view) in self._seen:
            return
        self._seen.add(id(view))
        self._origin.setdefault(id(view), (path, view))
        if (t is list or t is dict) and not owned and view is not value and type(value) is t:
            self._copies.append((path, view, list(view) if t is list else list(view.items())))
            items = enumerate(view) if t is list else view.items()
            for k, v in items:
                self._walk(value[k], v, path + ((("item", k), f"[{k!r}]"),), False)
        elif t is list or t is dict or t is set:
            self._direct.append((path, view, list(view) if t is not dict else list(view.items())))
            if t is not set:
                for k, v in (enumerate(view) if t is list else view.items()):
                    self._walk(v, v, path + ((("item", k), f"[{k!r}]"),), True)
        elif t is tuple or nest._is_namedtuple(view):
            if type(value) is t and len(value) == len(view):
                for k, (v, w) in enumerate(zip(value, view)):
                    self._walk(v, w, path + ((("item", k), f"[{k}]"),), owned)
        elif _has_state(view) and not owned:
            state = vars(view)
            self._direct.append((path, view, dict(state)))
            for k, v in state.items():
                if type(v) in (list, dict, set):
                    self._walk(v, v, path + ((("attr", k), f".{k}"),), True)

    def restore(self):
        """Put the caller's objects and containers back as they were before the trace."""
        for _, obj, before in self._direct:
            t = type(obj)
            if t is list:
                obj[:] = before
            elif t is dict or t is set:
                obj.clear()
                obj.update(before)
            else:
                state = vars(obj)
                state.clear()
                state.update(before)

    def finish(self):
        """The replay steps of this trace (restoring the caller's objects), or a ConversionError."""
        try:
            return self._steps()
        finally:
            self.restore()

    def _steps(self):
        steps, problems = [], []
        for path, view, before in self._copies:
            after = list(view) if type(view) is list else list(view.items())
            if len(after) == len(before) and (all(a is b for a, b in zip(after, before)) if type(view) is list else
                                              all(a[0] == b[0] and a[1] is b[1] for a, b in zip(after, before))):
                continue
            try:
                if type(view) is list:
                    steps.append(("contents", path, [self._recipe(v) for v in after]))
                else:
                    steps.append(("contents", path, {k: self._recipe(v) for k, v in after}))
            except _ReplayError as e:
                problems.append(f"argument '{_label(path)}' (a {type(view).__name__}): {e}")
        for path, obj, before in self._direct:
            t = type(obj)
            if t is set:
                if obj != set(before) or len(obj) != len(before):
                    problems.append(f"argument '{_label(path)}' (a set): items added or removed")
                continue
            if t is list:
                after = list(enumerate(obj))
                if len(obj) != len(before):
                    problems.append(f"argument '{_label(path)}' (a list): items "
                                    f"{'appended or inserted' if len(obj) > len(before) else 'removed'}")
                    continue
                old, what = dict(enumerate(before)), "item"
            else:
                after = list((obj if t is dict else vars(obj)).items())
                old, what = dict(before), ("item" if t is dict else "attribute")
            for k, v in after:
                if k in old and old[k] is v:
                    continue
                try:
                    steps.append(("set", path, (("item" if what == "item" else "attr"), k),
                                  self._recipe(v, old.get(k, _MISSING), f"{what} {k!r}")))
                except _ReplayError as e:
                    problems.append(f"argument '{_label(path)}': {e}")
            for k in old:
                if t is not list and k not in dict(after):
                    problems.append(f"argument '{_label(path)}': {what} {k!r} deleted")
        if problems:
            code = getattr(self._function.python_function, "__code__", None)
            where = f"{code.co_filename}:{code.co_firstlineno}" if code else user_location()
            raise ConversionError(
                f"{self._function.__name__} (defined at {where}) changes Python state of its arguments in a way a "
                f"compiled call cannot repeat: {'; '.join(problems)}. A compiled function runs Python side effects "
                f"only while tracing, and later calls with the same signature would not redo them; return the new "
                f"value instead (or keep it in an array argument updated in place)")
        return steps

    def _recipe(self, value, old=None, what=None):
        """How a call finds `value` again: ("path", ...) in the arguments, ("output", k), ("const", v).

        `what` (for objects' attributes and the containers they hold, whose Python state is
        not in the cache key) allows only tensors and argument values, not Python values."""
        if id(value) in self._origin and self._origin[id(value)][1] is value:
            return ("path", self._origin[id(value)][0])
        if isinstance(value, Tensor):
            for root, new in self._graph.write_backs.values():  # an argument updated in place: the caller's array
                if new is value and id(root) in self._origin:
                    return ("path", self._origin[id(root)][0])
            if what and _is_array(old) and any(n.op == "Const" and isinstance(n.attrs.get("value"), np.ndarray)
                                               and np.may_share_memory(n.attrs["value"], old)
                                               for n in self._graph.walk()):
                raise _ReplayError(f"{what} is read (as a constant: the arrays of objects are not inputs) and "
                                   f"assigned a new value; pass it as an argument and return its new value")
            if value.stale is not None:
                value.stale.check_read(self._graph, f"is stored into an argument by {self._graph.name}")
            tensor = self._graph.capture(value)
            k = next((j for j, o in enumerate(self._graph.outputs) if o is tensor), None)
            if k is None:
                k = len(self._graph.outputs)
                self._graph.outputs.append(tensor)
            return ("output", k)
        if type(value) is tuple:
            return ("tuple", [self._recipe(v, None, what) for v in value])
        if what:
            raise _ReplayError(f"{what} changed {_short(old)} -> {_short(value)}")
        if type(value) in _IMMUTABLE:
            return ("const", value)
        raise _ReplayError(f"a new {type(value).__name__} was stored, which a compiled call cannot create "
                           f"anew on each call")


_MISSING = type("_Missing", (), {"__repr__": lambda self: "<unset>"})()


def _short(value):
    return "<unset>" if value is _MISSING else reprlib.repr(value)


def _has_state(obj):
    """An object whose `__dict__` a trace may change: not a module, class, function or our own."""
    if isinstance(obj, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
                        types.MethodType, functools.partial)):
        return False
    module = type(obj).__module__ or ""
    return hasattr(obj, "__dict__") and not module.startswith("autograph_lite")


def _label(path):
    return path[0][1] + "".join(label for _, label in path[1:])


def _resolve_path(values, path):
    obj = values[path[0][0]]
    for (kind, k), _ in path[1:]:
        obj = obj[k] if kind == "item" else getattr(obj, k)
    return obj


def _resolve(recipe, values, results):
    kind, arg = recipe
    if kind == "output":
        return results[arg]
    if kind == "path":
        return _resolve_path(values, arg)
    if kind == "tuple":
        return tuple(_resolve(r, values, results) for r in arg)
    return arg


def _replay(steps, values, results):
    """Redo a trace's effects on the caller's containers and objects after a call."""
    resolved = []
    for kind, path, *rest in steps:  # resolve everything first: paths see the arguments as passed
        target = _resolve_path(values, path)
        if kind == "contents":
            recipe = rest[0]
            new = [_resolve(r, values, results) for r in recipe] if type(recipe) is list else \
                {k: _resolve(r, values, results) for k, r in recipe.items()}
            resolved.append((target, None, new))
        else:
            resolved.append((target, rest[0], _resolve(rest[1], values, results)))
    for target, slot, new in resolved:
        if slot is None:
            if type(target) is list:
                target[:] = new
            else:
                target.clear()
                target.update(new)
        elif slot[0] == "item":
            target[slot[1]] = new
        else:
            setattr(target, slot[1], new)


def _python_to_array(spec, value):
    """A Python number passed where a TensorSpec is expected becomes an array of its dtype."""
    if isinstance(spec, TensorSpec) and isinstance(value, (bool, int, float)) and not _is_array(value):
        kind = np.asarray(value).dtype.kind
        if kind == spec.dtype.kind or (kind in "bi" and spec.dtype.kind in "iuf") or (kind == "f" and spec.dtype.kind == "f"):
            return np.asarray(value, dtype=spec.dtype)
    return value


def _placeholders(graph, spec, path, argument):
    """`spec` with TensorSpecs replaced by graph placeholders named after the argument path."""
    if isinstance(spec, TensorSpec):
        name = "".join(c if c.isalnum() or c == "_" else "_" for c in path).strip("_")
        return graph.placeholder(spec.shape, spec.dtype, name=name, argument=argument)
    t = type(spec)
    if t is tuple or t is list:
        return t(_placeholders(graph, s, f"{path}_{i}", argument) for i, s in enumerate(spec))
    if nest._is_namedtuple(spec):
        return t(*(_placeholders(graph, s, f"{path}_{f}", argument) for f, s in zip(spec._fields, spec)))
    if t is dict:
        return {k: _placeholders(graph, s, f"{path}_{k}", argument) for k, s in spec.items()}
    return spec


def _output_template(graph, outputs):
    """Record which output leaves are graph outputs; others are returned as they are.

    Arguments updated in place get their final values as extra outputs, written back into
    the caller's arrays after each call (`graph.write_back_outputs`: (input, output) pairs)."""
    slots, flat = [], nest.flatten(outputs)
    inputs = {id(t): i for i, t in enumerate(graph.inputs)}
    write_backs = [(inputs[id(root)], value) for root, value in graph.write_backs.values()]
    for leaf in flat:
        if isinstance(leaf, operators.TensorList):  # a list built in a graph loop: its items
            slots.append(_ListItems(len(graph.outputs) if leaf.tensor is not None else None))
            if leaf.tensor is not None:
                graph.outputs.append(graph.capture(leaf.tensor))
        elif isinstance(leaf, Tensor) or _is_array(leaf):
            if isinstance(leaf, Tensor) and leaf.stale is not None:
                leaf.stale.check_read(graph, f"is returned by {graph.name}")
            tensor = graph.capture(leaf) if isinstance(leaf, Tensor) else constant_node(graph, np.asarray(
                leaf.get() if devices.is_gpu_array(leaf) else leaf))
            updated = next((i for i, value in write_backs if value is leaf), None)
            slots.append(len(graph.outputs) if updated is None else _UpdatedArgument(updated, len(graph.outputs)))
            graph.outputs.append(tensor)
        else:
            slots.append(_Literal(leaf))
    for i, value in write_backs:
        graph.write_back_outputs.append((i, len(graph.outputs)))
        graph.outputs.append(value)
    template = nest.pack(outputs, [s.value if isinstance(s, _Literal) else _OUTPUT for s in slots])
    return template, slots


def _describe_change(old, new, names):
    """Each argument that differs between the spec trees `old` and `new`, and how, in words."""
    changes = []
    for name, a, b in zip(names, old, new):
        if nest.structure_of(a) != nest.structure_of(b):
            changes.append(f"argument '{name}' changed structure: {_brief(a)} -> {_brief(b)}")
            continue
        for path, x, y in zip(nest.paths(a, name), nest.flatten([a]), nest.flatten([b])):
            if _key(x, []) != _key(y, []):
                changes.append(f"argument '{path}' {_leaf_change(x, y)}")
    return changes


def _change_kinds(a, b):
    """How spec tree `b` differs from `a`: a set of 'structure', 'shape', 'dtype', 'value', 'type', 'object'."""
    if nest.structure_of(a) != nest.structure_of(b):
        return {"structure"}
    kinds = set()
    for x, y in zip(nest.flatten([a]), nest.flatten([b])):
        if isinstance(x, TensorSpec) and isinstance(y, TensorSpec):
            kinds |= {"dtype"} if x.dtype != y.dtype else set()
            kinds |= {"shape"} if x.shape != y.shape else set()
        elif isinstance(x, TensorSpec) or isinstance(y, TensorSpec):
            kinds.add("type")
        elif _key(x, []) != _key(y, []):
            kinds.add("value" if type(x) is type(y) and type(x) in _VALUE_TYPES else
                      "type" if type(x) in _VALUE_TYPES and type(y) in _VALUE_TYPES else "object")
    return kinds


def _leaf_change(x, y):
    if isinstance(x, TensorSpec) and isinstance(y, TensorSpec):
        parts = [f"{what}: {getattr(x, what)} -> {getattr(y, what)}" for what in ("dtype", "shape")
                 if getattr(x, what) != getattr(y, what)]
        return "changed " + ", ".join(parts)
    kind = _change_kinds(x, y).pop()
    if kind == "value":
        return f"changed value: {reprlib.repr(x)} -> {reprlib.repr(y)}"
    if kind == "object":
        return f"is a different object: {_brief(x)} -> {_brief(y)} (objects are keyed by identity)"
    return f"changed type: {_brief(x)} -> {_brief(y)}"


def _brief(value):
    if isinstance(value, TensorSpec):
        return f"an array {value.dtype}{list(value.shape)}"
    return f"{type(value).__name__} {reprlib.repr(value)}"


def _warn_at_caller(message, category):
    """warnings.warn attributed to the innermost frame outside this package: the user's call."""
    frame, level = sys._getframe(1), 2
    while frame is not None and is_internal_file(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def function(func=None, *, input_signature=None, reduce_retracing=False, device=None, autograph=True,
             max_traces=None):
    """Compile `func` into a graph traced once per input signature.

        @ag.function
        def f(x):
            return ag.tanh(x) * 2.0

    `input_signature`: a list of TensorSpecs fixing the one signature (dims may be None).
    `reduce_retracing`: a new shape for a traced signature retraces once with None dims.
    `device`: "cpu" or "gpu"; by default the `with ag.device(...)` block or the inputs decide.
    `autograph`: convert native if/while/for on tensors to graph control flow (default True).
    `max_traces`: how many traces (graph and plan each) to keep, least recently used dropped
        first; default $AG_MAX_TRACES, else 256. At 32 traces a RetracingWarning names the
        argument that keeps changing.
    """
    def wrap(fn):
        return Function(fn, input_signature=input_signature, reduce_retracing=reduce_retracing,
                        device=device, autograph=autograph, max_traces=max_traces)
    return wrap if func is None else wrap(func)
