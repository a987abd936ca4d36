"""The trace cache of a Function: cache keys, the trace index and LRU, retrace warnings and log.

The cache key of a call is the TreeDef of its arguments (nest.py: tuples, lists, dicts,
namedtuples by structure) and a key per leaf: arrays by (type, shape, dtype), Python
scalars and strings by value (floats by their bits: -0.0 is not 0.0, NaN is NaN), any
other object by identity. A call
whose key was seen runs the cached plan; a new key looks for a trace it fits through
indexes (by exact signature, or by structure for traces with None dims), so a lookup
costs the same with 5 traces as with 500; only then does it trace the Python function
into a Graph. The traces of a Function are an LRU of at most `max_traces`.
"""
import itertools
import operator
import os
import reprlib
import sys
import threading
import warnings
import weakref

import numpy as np

from . import nest
from .errors import is_internal_file
from .runtime.graph import Tensor
from .tensor_spec import TensorSpec, _is_array_input, _subclass_problem

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
    """The cache key of `value`: its TreeDef and each leaf's key; appends the array leaves to `arrays`.

    A leaf is keyed by `_leaf_key` alone (no TreeDef to build: most arguments are leaves)."""
    t = type(value)
    if t is np.ndarray:  # the most common argument, without a second call
        arrays.append(value)
        return (np.ndarray, value.shape, value.dtype)
    if t is list or t is dict or isinstance(value, tuple):
        leaves, treedef = nest.flatten_with_treedef(value)
        return treedef, tuple([_leaf_key(leaf, arrays) for leaf in leaves])
    return _leaf_key(value, arrays)


def _leaf_key(value, arrays):
    """The cache-key part of one leaf; appends it to `arrays` if it is an array argument."""
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


def _structure_key(specs):
    """Like `_key` of a spec tree, but arrays only by rank and dtype.

    Traces with the same structure key differ at most in their dims, so this indexes the
    traces with None dims that a call might fit, and the trace reduce_retracing relaxes.
    """
    leaves, treedef = nest.flatten_with_treedef(specs)
    return treedef, tuple([(TensorSpec, len(leaf.shape), leaf.dtype) if isinstance(leaf, TensorSpec)
                           else _leaf_key(leaf, []) for leaf in leaves])


def _has_none_dims(specs):
    return any(isinstance(s, TensorSpec) and None in s.shape for s in nest.flatten(specs))


def _argument_keys(specs):
    """Per argument: (its TreeDef, the key of each leaf); what `_distance` compares."""
    keys = []
    for spec in specs:
        leaves, treedef = nest.flatten_with_treedef(spec)
        keys.append((treedef, tuple([_leaf_key(leaf, []) for leaf in leaves])))
    return tuple(keys)


def _distance(a, b):
    """How many leaves differ between two `_argument_keys`; a changed structure counts all its leaves."""
    d = 0
    for (structure_a, leaves_a), (structure_b, leaves_b) in zip(a, b):
        if structure_a != structure_b:
            d += max(len(leaves_a), len(leaves_b), 1)
        else:
            d += sum(x != y for x, y in zip(leaves_a, leaves_b))
    return d


def _scalar_leaves(values):
    """The positions of the numpy scalars among the leaves of `values`: part of each index key, since
    a trace made for a 0-d array does not serve a numpy scalar of its dtype, nor the other way round
    (`isinstance(x, np.ndarray)`, `x += 1`, `np.asarray(x)` differ: the placeholder's `box`)."""
    return tuple(i for i, leaf in enumerate(nest.flatten(list(values))) if isinstance(leaf, np.generic))


def _specs(value):
    """`value` with every array leaf replaced by its TensorSpec."""
    leaves, treedef = nest.flatten_with_treedef(value)
    return treedef.unflatten([TensorSpec.from_value(leaf) if _is_array_input(leaf) else leaf for leaf in leaves])


def _spec_mismatch(spec, value, path):
    """Why `value` does not fit `spec` (a tree of TensorSpecs and Python values), or None.

    Found: (where, the spec there, the problem in words); `where` is `path` followed by
    the keys to the part that differs, e.g. "[0]['w']"."""
    spec_leaves, treedef = nest.flatten_with_treedef(spec)
    try:
        parts = treedef.flatten_up_to(value)
    except nest.StructureMismatch as e:
        at = spec
        for k in e.path:
            at = at[k]
        return (path + _keys_text(e.path), at, e.problem)
    for i, (s, v) in enumerate(zip(spec_leaves, parts)):
        if isinstance(s, TensorSpec):
            problem = s.mismatch(v)
        elif not nest.structure_of(v).is_leaf or _leaf_key(s, []) != _leaf_key(v, []):
            problem = f"got {v!r}, but this trace was made for {s!r}"
        else:
            continue
        if problem:
            return (path + _keys_text(treedef.key_paths()[i]), s, problem)
    return None


def _keys_text(keys):
    return "".join(f"[{k!r}]" for k in keys)


def _relax(old, new):
    """Generalize spec tree `old` so `new` fits: dims that differ become None. None if ranks differ."""
    old_leaves, treedef = nest.flatten_with_treedef(old)
    new_leaves, new_treedef = nest.flatten_with_treedef(new)
    if treedef != new_treedef:
        return None
    relaxed = []
    for a, b in zip(old_leaves, new_leaves):
        if isinstance(a, TensorSpec) and isinstance(b, TensorSpec):
            if a.dtype != b.dtype or len(a.shape) != len(b.shape):
                return None
            relaxed.append(TensorSpec([x if x == y else None for x, y in zip(a.shape, b.shape)], a.dtype))
        elif _leaf_key(a, []) == _leaf_key(b, []):
            relaxed.append(a)
        else:
            return None
    return treedef.unflatten(relaxed)


class _TraceEntry:
    """What a Function keeps beside a live trace: its index keys and the cache keys that point at it."""
    __slots__ = ("signature", "structure", "argument_keys", "keys")

    def __init__(self, signature, structure, argument_keys):
        self.signature, self.structure, self.argument_keys = signature, structure, argument_keys
        self.keys = []  # (table, key): where eviction must unlink it (some may have been dropped)


class TraceCache:
    """The traces of a Function and the indexes that find them; `Function` inherits it.

    State (set by `_init_trace_cache`): `_cache` and `_fast_cache` map call keys to traces,
    `_traces` holds each live trace's `_TraceEntry`, `_exact`/`_relaxed`/`_latest` index
    them by signature and structure, `_clock` stamps each use for the LRU order.
    """

    def _init_trace_cache(self, max_traces):
        self._max_traces = _max_traces(max_traces)
        # Keys are many-to-one onto traces (relaxed dims, signatures), so both key caches are
        # bounded too, oldest key first; a dropped key of a live trace is found again by index.
        self._max_keys = 4 * self._max_traces
        self._fast_cache = {}       # (device, arg types, (shape, dtype) per arg) -> ConcreteFunction
        self._cache = {}            # full key -> ConcreteFunction
        self._traces = {}           # live ConcreteFunction -> its _TraceEntry
        # indexes keyed by ((device, the numpy scalars' positions: `_scalar_leaves`), specs' key)
        self._exact = {}            # (place, signature key) -> trace whose specs have no None dims
        self._relaxed = {}          # (place, structure key) -> traces with None dims, oldest first
        self._latest = {}           # (place, structure key) -> newest trace (what reduce_retracing relaxes)
        self._clock = itertools.count(1)  # stamps each trace's last use: the LRU order
        self._mru = None            # the trace stamped last (its stamp is the newest)
        self._fast_memo = None      # entry.c's Memo of the last fast-cache hit (FastCall's)
        self._lock = threading.RLock()
        self._warned = False
        self._outside_change = None  # the last failed guard of outside state, in words (the warning names it)
        self.trace_count = 0        # traces made, evicted ones included
        self._evictions = 0

    def _stamp(self, concrete):
        """Mark `concrete` used now (the LRU order); nothing to write if it was the last one used."""
        if self._mru is not concrete:
            concrete._last_use = next(self._clock)
            self._mru = concrete

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

    def _find(self, device, values):
        """A live trace that `values` fit, found by index: no scan over the traces."""
        specs, device = _specs(values), (device, _scalar_leaves(values))
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
            previous = self._latest.get(((device, _scalar_leaves(values)), _structure_key(specs)))
            relaxed = previous and _relax(previous.input_specs, specs)
            if relaxed is not None:
                return relaxed
        return specs

    def _add(self, concrete, device, argument_keys):
        specs, device = concrete.input_specs, (device, concrete.scalar_leaves)
        signature, structure = (device, _key(specs, [])), (device, _structure_key(specs))
        self._stamp(concrete)
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
        if self._mru is concrete:
            self._mru = None
        self._fast_memo = None
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
                         for count, name, kinds in changing)
        if self._outside_change and not what:
            return (f"{self.__name__} has traced {self.trace_count} times: a Python value it reads from outside its "
                    f"arguments keeps changing (last: {self._outside_change}). Each change traces and compiles "
                    f"again; keep a value that changes in an array (arrays are read on every call, never traced "
                    f"again) or pass it as an argument. Set AG_LOG_RETRACES=1 to log each retrace.")
        what = what or "its arguments keep changing identity"
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


def _describe_change(old, new, names):
    """Each argument that differs between the spec trees `old` and `new`, and how, in words."""
    changes = []
    for name, a, b in zip(names, old, new):
        (a_leaves, a_treedef), (b_leaves, b_treedef) = nest.flatten_with_treedef(a), nest.flatten_with_treedef(b)
        if a_treedef != b_treedef:
            changes.append(f"argument '{name}' changed structure: {_brief(a)} -> {_brief(b)}")
            continue
        for path, x, y in zip(a_treedef.paths(name), a_leaves, b_leaves):
            if _leaf_key(x, []) != _leaf_key(y, []):
                changes.append(f"argument '{path}' {_leaf_change(x, y)}")
    return changes


def _change_kinds(a, b):
    """How spec tree `b` differs from `a`: a set of 'structure', 'shape', 'dtype', 'value', 'type', 'object'."""
    (a_leaves, a_treedef), (b_leaves, b_treedef) = nest.flatten_with_treedef(a), nest.flatten_with_treedef(b)
    if a_treedef != b_treedef:
        return {"structure"}
    kinds = set()
    for x, y in zip(a_leaves, b_leaves):
        if isinstance(x, TensorSpec) and isinstance(y, TensorSpec):
            kinds |= {"dtype"} if x.dtype != y.dtype else set()
            kinds |= {"shape"} if x.shape != y.shape else set()
        elif isinstance(x, TensorSpec) or isinstance(y, TensorSpec):
            kinds.add("type")
        elif _leaf_key(x, []) != _leaf_key(y, []):
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
