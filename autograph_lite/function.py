"""`ag.function`: trace once per input signature, cache the graph, run its lowered plan.

This module holds the public API (`function`, `Function`, `ConcreteFunction`, and
`TensorSpec`, `RetracingWarning` re-exported) and how a call runs or traces. The cache
keys and the trace index live in trace_cache.py, the replay of a trace's effects on the
caller's objects in effects.py, TensorSpec and the array-argument rules in tensor_spec.py.
"""
import contextlib
import functools
import gc
import inspect
import logging
import os
import threading
import types
import weakref

import numpy as np

from . import nest, operators
from .call_signature import CallSignature
from .operators import control_flow, outside_state
from .operators.variables import check_defined
from .effects import _Effects, _replay
from .errors import ConversionError, SymbolicValueError, traceback_location, user_location
from .ops.core import constant_node
from .ops.python_values import PythonValue
from .runtime import devices, memory
from .runtime.devices import _placement
from .runtime.graph import Graph, Tensor, _tracing, building, check_numpy_aliases, copy_graph
from .runtime.interpreter import debug_plan, debugging
from .runtime.lowering import Plan
from .runtime.native import entry as _entry
from .runtime.passes import optimize
from .tensor_spec import TensorSpec, _is_array, _python_to_array
from .trace_cache import (DEFAULT_MAX_TRACES, RETRACE_WARNING_AT, RetracingWarning, TraceCache, _argument_keys,  # noqa: F401 (DEFAULT_MAX_TRACES: re-exported)
                          _key, _RefusedArray, _scalar_leaves, _spec_mismatch, _warn_at_caller)

logger = logging.getLogger("autograph_lite")


def _add_note(exc, text):
    if hasattr(exc, "add_note"):
        exc.add_note(text)
    else:  # Python 3.10
        exc.args = (f"{exc.args[0] if exc.args else ''}\n{text}",) + exc.args[1:]


@contextlib.contextmanager
def collecting_later():
    """Python's cycle collector paused while a graph is traced, optimized or lowered: those make
    many small objects that all live on, and each collection would walk them all again (about a
    third of tracing 200 unrolled RK4 steps); cycles are collected once it resumes."""
    if not gc.isenabled():  # paused already (by the user, or by an enclosing trace)
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _set_single_plain(concrete, direct):
    """The fast path's function is the plan's Direct once the plan has one (lowering.Plan._direct)."""
    concrete = concrete()
    if concrete is not None:
        concrete._single_plain = direct


class ConcreteFunction:
    """One traced signature of a Function: its `graph`, callable with matching arguments."""

    def __init__(self, call_signature, graph, input_specs, output_treedef, output_slots, device):
        self.call_signature, self.graph, self.input_specs = call_signature, graph, input_specs
        self._output, self._slots, self.device = output_treedef, output_slots, device
        self._plan, self._optimized, self._lock = None, None, threading.Lock()
        self._effects = ()  # steps redoing the trace's effects on the arguments (see _Effects)
        self._effect_roots = ()  # objects besides the arguments the effects reach (a bound method's self)
        self._outside = None  # OutsideState: what the trace read from outside its arguments, or None
        self._last_outside = None  # the arrays read from outside at the latest call
        self._retrace = None  # Function._call: what a fast-path call whose guards fail goes to
        self.check_numerics = False  # run through ag.debug's NumericsChecker (ag.function(check_numerics=True))
        self.scalar_leaves = ()  # the argument leaves traced as numpy scalars, not 0-d arrays (`_scalar_leaves`)
        self._plain = False  # True when a call is only the plan's (no write-backs, effects, GPU, checks): set by Function
        self._single_plain = None  # the plan's function once built, when _plain and _single: __call__ calls it
        self._positions = None  # on the fast path: the positions of the arguments that are graph inputs, where
        # some are not (Python numbers: the trace's constants); None: all are
        self._on_device = device is not devices.CPU
        # the argument leaves that are graph inputs, and their specs (Python numbers become arrays)
        self._input_leaves = [(i, spec) for i, spec in enumerate(nest.flatten(input_specs))
                              if isinstance(spec, TensorSpec)]
        # fast paths for the common output shapes: one tensor, or a flat tuple of them
        n = output_treedef.num_leaves
        self._single = output_slots == [0] and output_treedef.is_leaf
        self._flat_tuple = output_treedef == nest.structure_of((0,) * n) and output_slots == list(range(n)) \
            and len(graph.outputs) == n  # no extra outputs (write-backs, effects)

    @property
    def optimized_graph(self):
        """The graph after the optimization passes (what the plan runs); printable like `graph`."""
        if self._optimized is None:
            with self._lock, collecting_later():
                if self._optimized is None:
                    self._optimized = optimize(self.graph)
        return self._optimized

    @property
    def plan(self):
        """The optimized graph lowered to generated Python for its device (built on first use)."""
        if self._plan is None:
            graph = self.optimized_graph
            with self._lock, collecting_later():
                if self._plan is None:
                    self._plan = Plan(graph, self.device)
                    if self._plain and self._single:
                        self._single_plain = self._plan.direct or self._plan.fn
                        concrete = weakref.ref(self)
                        self._plan.on_direct.append(lambda direct: _set_single_plain(concrete, direct))
        return self._plan

    @property
    def graph_with_state(self):
        """`graph` with the arrays it reads from outside its arguments as constants, holding their
        values at the latest call (what ag.save and ag.export_onnx write: a graph that outlives
        its source takes the state with it, as a SavedModel takes its variables)."""
        if self._outside is None:
            return self.graph
        values = self._last_outside or self._outside.trace_values
        outside = self.graph.inputs[len(self.graph.inputs) - len(values):]
        return copy_graph(self.graph, freeze={id(t): np.array(devices.to_host(v)) for t, v in zip(outside, values)})

    @property
    def structured_input_signature(self):
        return self.input_specs

    def __call__(self, *args, **kwargs):
        values = self.call_signature.bind(args, kwargs)
        found = _spec_mismatch(list(self.input_specs), list(values), "")
        if found:
            raise self.call_signature.mismatch_error(found, "this concrete function's signature")
        leaves = nest.flatten(values)
        arrays = self._arrays(leaves)
        if self._outside is not None:
            feeds = self._outside.read(leaves)
            if feeds is None:
                raise ValueError(f"{self.call_signature.name}: this concrete function was traced with outside "
                                 f"state that has changed ({self._outside.why(leaves)}); call the Function, "
                                 f"which traces again (called at {user_location()})")
            arrays += feeds
            self._last_outside = feeds
        return self._run(arrays, values)

    def _arrays(self, leaves):
        """The graph inputs among the leaves of arguments that fit `input_specs`, converted as the specs say."""
        return [_python_to_array(spec, leaves[i]) for i, spec in self._input_leaves]

    def _run(self, arrays, values=None):
        plan = self._plan or self.plan
        if self._plain and not debugging.active:  # the common case, in few steps
            try:
                results = (plan.direct or plan.fn)(*arrays)  # a plan that is one native loop: its C Direct
            except Exception as e:
                self._note_failure(plan, e)
                raise
            if self._single:
                return results[0]
            if self._flat_tuple:
                return results
            return self._output.unflatten([results[s] if isinstance(s, int) else s.get(arrays, results)
                                           for s in self._slots])
        if values is None:  # from the fast path (FastCall too): the positional arrays are the arguments
            values = arrays
            if self._outside is not None:
                feeds = self._outside.read(arrays)
                if feeds is None:  # a guard failed: the Function finds the trace that fits, or traces
                    return self._retrace(*arrays)
                self._last_outside = feeds
                arrays = list(arrays) + feeds
        if debugging.active or self.check_numerics:  # ag.debug: run the graph through an interpreter
            plan = debug_plan(self, plan, self.check_numerics)
        callers = arrays
        if self._on_device:
            arrays = [self.device.put(a) for a in arrays]
        try:
            results = plan.fn(*arrays)
        except Exception as e:
            self._note_failure(plan, e)
            raise
        if self.graph.write_back_outputs:
            self._write_back(callers, results)
        if self._effects:  # the trace changed the caller's containers or objects: redo it
            _replay(self._effects, tuple(values) + self._effect_roots, results)
        if self._single:
            return results[0]
        if self._flat_tuple:
            return results
        return self._output.unflatten([results[s] if isinstance(s, int) else s.get(callers, results)
                                       for s in self._slots])

    def _note_failure(self, plan, e):
        """Name the node(s) whose plan line raised `e`, and the user's line they came from."""
        nodes = plan.failing_nodes(e)
        if len(nodes) == 1:
            _add_note(e, f"while running {nodes[0].op} node '{nodes[0].name}' of "
                         f"{self.call_signature.name}, created at {nodes[0].place}")
        elif nodes:
            _add_note(e, f"while running one of these nodes of {self.call_signature.name}: " + "; ".join(
                f"{n.op} '{n.name}' created at {n.place}" for n in nodes))

    def _write_back(self, callers, results):
        """Copy the final value of each argument updated in place into the caller's array. Arguments
        that share memory with another input are refused before any caller's array changes, and a
        value that is a view of another such argument (`x[:] = y[:]` before `y` is written: the plan
        gives x the view `y[:]`) is copied first (fuzzer seed 1220010496)."""
        written = [(i, k) for i, k in self.graph.write_back_outputs
                   if not isinstance(callers[i], np.generic) and hasattr(callers[i], "__setitem__")]
        for i, _ in written:  # (numpy scalars are immutable: `x += 1` rebinds, as eagerly)
            for j, other in enumerate(callers):
                if j != i and isinstance(other, np.ndarray) and np.may_share_memory(callers[i], other):
                    raise ValueError(
                        f"{self.call_signature.name}(): {self._input_words(i)} is updated in place and shares "
                        f"memory with {self._input_words(j)}; the compiled function cannot make one see the "
                        f"update of the other: pass or assign a copy (`.copy()`) (called at {user_location()})")
        targets = [callers[i] for i, _ in written if isinstance(callers[i], np.ndarray)]
        values = {}
        for i, k in written:
            value = results[k]
            if len(targets) > 1 and isinstance(value, np.ndarray) and any(
                    t is not callers[i] and np.may_share_memory(value, t) for t in targets):
                value = value.copy()
            values[i] = value
        for i, _ in written:
            target, value = callers[i], values[i]
            target[...] = devices.to_host(value) if isinstance(target, np.ndarray) else value

    def _input_words(self, i):
        """Input i in words: an argument by its name, outside state (`self.w`) by its label and the
        line that read it."""
        node = self.graph.inputs[i].node
        if node.attrs.get("argument") is not None:
            return f"argument '{node.attrs['argument']}'"
        return f"'{node.attrs.get('outside')}' (read at {node.location})"

    def __repr__(self):
        return f"<ConcreteFunction {self.call_signature.name}{self.input_specs}>"


_DEFAULT_TYPES = (int, float, bool, complex, str, bytes, tuple, type(None))  # compared by value


class _Literal:
    """An output leaf that never touched a tensor: returned as it is."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def get(self, arrays, results):
        return self.value


class _UpdatedArgument:
    """An output leaf that is an argument's array after in-place updates, or a view of it: eagerly
    the function returns the caller's own array (`x += 1; return x`) or a view sharing its memory
    (`x += 1; return x[1:]`), so the compiled one does too (`view`: a `memory.ViewSteps` taking
    the caller's array to it after the write-back)."""
    __slots__ = ("input", "output", "view")

    def __init__(self, input_index, output_index, view=None):
        self.input, self.output, self.view = input_index, output_index, view

    def get(self, arrays, results):
        array = arrays[self.input]
        if self.view is None:
            return results[self.output] if isinstance(array, np.generic) else array
        # a device's array: its value (a copy); numpy's view ops take host arrays
        return self.view(array, results) if type(array) is np.ndarray else results[self.output]


class _ListItems:
    """An output leaf that is a list built in a graph loop (a TensorList): a Python list of the
    rows of its stacked output, as the eager run returns a list; Python numbers where its items
    were Python numbers (`python`), as eagerly."""
    __slots__ = ("output", "python")

    def __init__(self, output_index, python=False):
        self.output, self.python = output_index, python

    def get(self, arrays, results):
        if self.output is None:
            return []
        rows = results[self.output]
        if self.python == "arrays0":  # 0-d arrays, each its own as eagerly
            return [np.array(row) for row in rows]
        return rows.tolist() if self.python else list(rows)


class _Item:
    """An output leaf that eager holds as a Python number: graph output `output`'s value as one."""
    __slots__ = ("output",)

    def __init__(self, output):
        self.output = output

    def get(self, arrays, results):
        value = results[self.output]
        return value.item() if hasattr(value, "item") else value  # an array's, a numpy scalar's, a device's


class _PythonSlot:
    """An output leaf a tensor loop run as Python gave (`PythonValue`): the object as it is; one holding
    a variable that has no value (its loop ran zero times) raises UnboundLocalError, as reading it does."""
    __slots__ = ("output",)

    def __init__(self, output):
        self.output = output

    def get(self, arrays, results):
        value = results[self.output]
        check_defined(value)
        return value


class _Chosen:
    """An output leaf that is a `Choice` (`x and y` whose operands eager gives back as different
    types): the candidate its pick names, in that candidate's own box, when the call returns."""
    __slots__ = ("pick", "if_false", "if_true")

    def __init__(self, pick, if_false, if_true):
        self.pick, self.if_false, self.if_true = pick, if_false, if_true

    def get(self, arrays, results):
        slot = self.if_true if _slot_value(self.pick, arrays, results) else self.if_false
        return _slot_value(slot, arrays, results)


def _slot_value(slot, arrays, results):
    """An output slot's value: a graph output's, or what a slot object gives (a pick that is itself a
    merge of a Python bool and a numpy bool, `max(v, 0.0)` of a merged v, is a `_Chosen`)."""
    return results[slot] if isinstance(slot, int) else slot.get(arrays, results)


class Function(TraceCache):
    """A Python function compiled per input signature. Create with `ag.function`."""

    def __init__(self, python_function, input_signature=None, reduce_retracing=False, device=None,
                 autograph=True, max_traces=None, check_numerics=False):
        functools.update_wrapper(self, python_function)
        if not hasattr(self, "__name__"):  # a callable instance: named after its class
            self.__name__ = self.__qualname__ = type(python_function).__name__
        self.python_function = python_function
        self.call_signature = CallSignature(self.__name__, inspect.signature(python_function))
        params = list(self.call_signature.signature.parameters.values())
        self._param_names = self.call_signature.param_names
        simple = all(p.kind == p.POSITIONAL_OR_KEYWORD and p.default is p.empty for p in params)
        self._n_simple = len(params) if simple else -1
        self._input_signature = None if input_signature is None else list(input_signature)
        self._reduce_retracing = reduce_retracing
        self._device = None if device is None else devices.get(device)
        self._autograph, self._converted = autograph, None
        self._check_numerics = bool(check_numerics)
        self._fast_path = input_signature is None
        self._bound_self = bound_self(python_function)
        self._init_trace_cache(max_traces)

    # --- calling ------------------------------------------------------------------------

    def __call__(self, *args, **kwargs):  # in C once the entry module loads: _install_fast_call
        if not kwargs and self._fast_path and not _tracing.stack and (
                self._fast_path is True or _modules_hold(self._fast_path)):
            # positional arrays only: a key built at C speed, looked up in its own cache
            try:
                fast_key = _entry.fast_key(_placement.device, args)
            except AttributeError:
                fast_key = None
            concrete = self._fast_cache.get(fast_key)
            if concrete is not None:
                self._stamp(concrete)
                fn = concrete._single_plain
                arrays = args if concrete._positions is None else [args[i] for i in concrete._positions]
                if fn is not None and not debugging.active:  # _run's commonest case, a frame less
                    try:
                        return fn(*arrays)[0]
                    except Exception as e:
                        concrete._note_failure(concrete._plan, e)
                        raise
                return concrete._run(args) if concrete._positions is None else concrete._run(tuple(arrays), args)
        return self._call(*args, **kwargs)

    def _call(self, *args, **kwargs):
        """A call the fast path does not take (its C spelling's too): traced inline while tracing
        another function, else keyed, traced if new, and run."""
        if _tracing.stack:  # called while tracing another function: inline it
            return self._traced_function()(*args, **kwargs)
        values = args if len(args) == self._n_simple and not kwargs else self.call_signature.bind(args, kwargs)
        arrays = []
        try:
            key = (devices.current(), tuple([_key(v, arrays) for v in values]))
        except _RefusedArray as e:
            raise self._refused(e, values) from None
        concrete = self._cache.get(key)
        if concrete is None:
            concrete = self._concrete_for(key, values)
        else:
            self._stamp(concrete)
        if self._input_signature is not None:
            arrays = concrete._arrays(nest.flatten(values))
        if concrete._outside is not None:  # state read from outside the arguments: guarded, fed
            concrete, feeds = self._with_outside(concrete, key, values)
            concrete._last_outside = feeds
        if self._input_signature is None and not kwargs and len(args) == self._n_simple:
            self._remember_fast_call(key[0], args, concrete)
        if concrete._outside is not None:
            return concrete._run(arrays + feeds, values)
        return concrete._run(arrays, values)

    def _remember_fast_call(self, device, args, concrete):
        """Let the fast path take calls like this one (positional arguments, each a leaf): array types
        that reach here were accepted by _key, and the fast key holds the type; a trace with outside
        state checks its guards in _run (it is never _plain). Python numbers (int, float, bool)
        are keyed by value, and the plan is given the other arguments (`_positions`), where the
        trace reads no outside state (_run is given the arguments then, not its guards' feeds)."""
        numbers = [type(a) in (int, float, bool) for a in args]
        if not all(n or isinstance(a, (np.ndarray, np.generic)) for n, a in zip(numbers, args)):
            return
        if any(numbers):
            positions = tuple(i for i, number in enumerate(numbers) if not number)
            if concrete._outside is not None or positions != tuple(i for i, _ in concrete._input_leaves):
                return
            concrete._positions = positions
        elif concrete._positions is not None:
            return
        self._remember_fast(_entry.fast_key(device, args), concrete)

    def _with_outside(self, concrete, key, values):
        """(a trace whose guards hold for this call, the arrays it reads from outside): `concrete`,
        another live trace of the same signature, or a new trace (counted as a retrace)."""
        leaves = nest.flatten(values)
        feeds = concrete._outside.read(leaves)
        if feeds is not None:
            return concrete, feeds
        with self._lock:
            signature = self._traces[concrete].signature if concrete in self._traces else None
            for other in reversed(list(self._traces)):
                if other is not concrete and other._outside is not None and \
                        self._traces[other].signature == signature:
                    feeds = other._outside.read(leaves)
                    if feeds is not None:
                        break
            else:
                self._outside_change = concrete._outside.why(leaves)
                other = self._trace(concrete.input_specs, key[0], values, reason=self._outside_change)
                feeds = [] if other._outside is None else other._outside.read(leaves)
                if feeds is None:
                    raise RuntimeError(f"{self.__name__}: the state it reads from outside its arguments changed "
                                       f"while it was traced ({other._outside.why(leaves)})")
            self._point(self._cache, key, other)
            self._stamp(other)
        return other, feeds

    def __get__(self, instance, owner=None):
        return self if instance is None else types.MethodType(self, instance)

    @property
    def concrete_functions(self):
        """The live traces (ConcreteFunctions): at most `max_traces`, oldest first."""
        return tuple(self._traces)

    @property
    def input_signature(self):
        """The TensorSpecs fixing the one signature, or None."""
        return None if self._input_signature is None else tuple(self._input_signature)

    def get_concrete_function(self, *args, **kwargs):
        """The ConcreteFunction for these arguments (arrays or TensorSpecs), tracing if needed."""
        if not args and not kwargs and self._input_signature is not None:
            args = tuple(self._input_signature)
        values = self.call_signature.bind(args, kwargs)
        try:
            key = (devices.current(), tuple([_key(v, []) for v in values]))
        except _RefusedArray as e:
            raise self._refused(e, values) from None
        return self._cache.get(key) or self._concrete_for(key, values)

    def _refused(self, e, values):
        """The TypeError for an argument of a refused array type (see `_key`), naming the argument."""
        path = next(p for name, v in zip(self._param_names, values)
                    for p, leaf in zip(nest.paths(v, name), nest.flatten(v)) if leaf is e.value)
        return TypeError(f"{self.__name__}(): argument '{path}' is {e.problem}, so a compiled call "
                         f"could not match an eager one; pass np.asarray({path}) instead "
                         f"(called at {user_location()})")

    def _call_python(self, fn, values):
        bound = self.call_signature.signature.bind_partial()
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
        _entry.preload()  # the C fast key, if an earlier process built the entry module
        with self._lock, collecting_later():
            concrete = self._cache.get(key)
            if concrete is None:
                if self._input_signature is not None:
                    concrete = self._for_signature(values)
                else:
                    concrete = self._find(key[0], values) or self._trace(self._specs_for(key[0], values),
                                                                         key[0], values)
                self._point(self._cache, key, concrete)
            self._stamp(concrete)
            return concrete

    def _for_signature(self, values):
        signature = self._input_signature
        if len(values) < len(signature):
            raise TypeError(f"{self.__name__}() has an input_signature of {len(signature)} arguments "
                            f"but was called with {len(values)} (called at {user_location()})")
        defaults = self._defaults_beyond(signature, values)
        found = _spec_mismatch(signature, [_python_to_array(s, v) for s, v in zip(signature, values)], "")
        if found:
            raise self.call_signature.mismatch_error(found, "its input_signature")
        boxes = _scalar_leaves(values)  # a numpy scalar where the trace had a 0-d array: traced for it
        return next((c for c in self._traces if c.scalar_leaves == boxes), None) or \
            self._trace(tuple(signature) + defaults, devices.current(), values)

    def _defaults_beyond(self, signature, values):
        """The values of the parameters after those `signature` covers: each takes its default, and
        passing another value is a TypeError, as tf.function does (a trace is made for the signature)."""
        params = list(self.call_signature.signature.parameters.values())[len(signature):]
        for p, v in zip(params, values[len(signature):]):
            default = {p.VAR_POSITIONAL: (), p.VAR_KEYWORD: {}}.get(p.kind, p.default)
            if default is p.empty:
                raise TypeError(f"{self.__name__}() has an input_signature of {len(signature)} arguments, and "
                                f"its parameter '{p.name}' has no default: add a TensorSpec for it "
                                f"(called at {user_location()})")
            if not (v is default or (type(v) is type(default) and type(v) in _DEFAULT_TYPES and v == default)):
                raise TypeError(f"{self.__name__}(): argument '{p.name}' is not covered by its input_signature "
                                f"({len(signature)} arguments), so it always takes its default {default!r}; "
                                f"got {v!r}. Add a TensorSpec for it, or make one function per value "
                                f"(functools.partial) (called at {user_location()})")
        return tuple(values[len(signature):])

    def _trace(self, specs, device, values, reason=None):
        with control_flow.range_staging(True) as staged:
            try:
                return self._trace_once(specs, device, values, reason)
            except Exception as e:  # noqa: BLE001 - traced again below, where the error comes back if it is the code's
                if not staged:
                    raise
                error = e
        # the rest of a long Python loop ran as a graph loop, whose body is traced with a tensor target:
        # unrolled, as Python runs it, the code may trace (or fail with its own error)
        logger.info("tracing %s again unrolling the Python loops at %s: staged as graph loops, %s: %s",
                    self.__name__, ", ".join(staged), type(error).__name__, error)
        with control_flow.range_staging(False):
            return self._trace_once(specs, device, values, reason)

    def _trace_once(self, specs, device, values, reason):
        placement = device  # what the indexes key on: the device of the call
        if device is devices.CPU and self._device is None:
            # device arrays as arguments (cupy's) place the graph on their device
            device = next(filter(None, map(devices.device_of, nest.flatten(list(values)))), device)
        device = self._device or device
        argument_keys = _argument_keys(specs)
        if os.environ.get("AG_LOG_RETRACES") and self._traces:
            logger.warning("retracing %s (trace %d) called at %s: %s", self.__name__, self.trace_count + 1,
                           user_location(), reason or self._why_retrace(specs, argument_keys))
        graph = Graph(self.__name__)
        roots = () if self._bound_self is None else (("self", self._bound_self),)
        leaves = nest.flatten(list(values))
        reads = outside_state.Reads(graph, leaves, _leaf_labels(self._param_names, values), self._bound_self)
        label = f"{self.__name__} (defined at {self._where()})"  # what refusals of outside state name
        with building(graph), reads.recording():
            inputs = [_placeholders(graph, spec, name, value)
                      for spec, name, value in zip(specs, self._param_names, values)]
            graph.inputs = [t for t in nest.flatten(inputs) if isinstance(t, Tensor)]
            effects = _Effects(self, graph, values, inputs, roots)
            effects.outside = reads
            reads.swap_in()
            try:
                outputs = self._call_python(self._traced_function(), inputs)
                check_defined(outputs)
            except Exception as e:
                effects.restore()
                refusal = e.__cause__ or e.__context__
                if isinstance(refusal, SymbolicValueError) and not isinstance(e, SymbolicValueError):
                    # numpy (or other library code) met a Tensor, and our refusal, naming the value and the
                    # user's line, became its own error ("setting an array element with a sequence"):
                    # ours is the one that says what happened
                    _add_note(refusal, f"(raised by the library as {type(e).__name__}: {e})")
                    raise refusal.with_traceback(e.__traceback__) from None
                where = traceback_location(e.__traceback__)
                if where and where not in str(e):
                    _add_note(e, f"while tracing {self.__name__}, at {where}")
                raise
            try:
                treedef, slots = _output_slots(graph, outputs, self._where())
                reads.finish(label)
                for k, (label, obj, before) in enumerate(reads.adopted, len(values) + len(roots)):
                    effects.adopt(k, label, obj, before)
                roots += tuple((label, obj) for label, obj, _ in reads.adopted)
                for k, (name, cell, before, now) in enumerate(reads.cell_writes, len(values) + len(roots)):
                    effects.adopt_cell(k, name, cell, before, now)
                roots += tuple((name, cell) for name, cell, _, _ in reads.cell_writes)
                for k, (name, globals_, before, now, what) in enumerate(reads.global_writes, len(values) + len(roots)):
                    effects.adopt_global(k, name, globals_, before, now, what)
                roots += tuple((name, globals_) for name, globals_, _, _, _ in reads.global_writes)
            except BaseException:
                effects.restore()
                raise
            steps = effects.finish()
        graph.read_values.clear()  # the arguments' arrays are not kept alive by the trace
        outside = reads.state(label, leaves)  # the hooks are off: values read as the caller sees them
        concrete = ConcreteFunction(self.call_signature, graph, tuple(specs), treedef, slots, device)
        concrete.check_numerics = self._check_numerics
        concrete._effects, concrete._outside = steps, outside
        concrete._effect_roots = tuple(obj for _, obj in roots)
        # a trace whose only outside state is module globals (`np`) stays plain: the fast path checks
        # those before it runs the plan (Function._fast_path), _call checks them with the rest
        concrete._plain = not (steps or self._check_numerics or concrete._on_device or graph.write_back_outputs
                               or (outside is not None and not outside.modules_only))
        concrete._retrace = self._call
        concrete._module_guards = [] if outside is None else outside.module_guards
        self.trace_count += 1
        concrete.scalar_leaves = _scalar_leaves(values)
        self._add(concrete, placement, argument_keys)
        if self._input_signature is None:
            # the module globals any live trace read, checked before each fast-path call (FastCall too)
            guards = {(id(d), name): (d, name, m) for c in self._traces for d, name, m in c._module_guards}
            self._fast_path = tuple(guards.values()) or True
        if self.trace_count >= RETRACE_WARNING_AT and not self._warned:
            self._warned = True
            _warn_at_caller(self._retracing_message(), RetracingWarning)
        return concrete

    def _where(self):
        """`file:line` of the compiled function's definition, for errors about the trace as a whole."""
        code = getattr(getattr(self.python_function, "__func__", self.python_function), "__code__", None)
        return f"{code.co_filename}:{code.co_firstlineno}" if code else user_location()

    def __repr__(self):
        return f"<ag.function {self.__name__} ({self.trace_count} traces)>"


def _modules_hold(guards):
    """Whether each module global a trace read (`np`) still names the same module."""
    return all(d.get(name) is module for d, name, module in guards)


def bound_self(fn):
    """The object a compiled bound method or callable object reads its state from, or None."""
    if isinstance(fn, types.MethodType):
        return fn.__self__
    if isinstance(fn, (types.FunctionType, types.BuiltinFunctionType, type, functools.partial)):
        return None
    return fn


def _leaf_labels(names, values):
    return [label for name, value in zip(names, values) for label in nest.paths(value, name)]


def _install_fast_call(module):
    """entry.c's FastCall takes `Function.__call__`'s place: its fast path in C, every call it
    does not take `Function._call`. Without the entry module (no compiler, AG_NATIVE=off) the
    Python method stays."""
    Function.__call__ = module.FastCall(Function._call, _tracing, _placement, debugging)


PYTHON_CALL = Function.__call__  # the fast path's Python spelling (tests run it with the module loaded too)
_entry.on_load(_install_fast_call)


def _placeholders(graph, spec, argument, value):
    """`spec` with TensorSpecs replaced by graph placeholders named after the argument path; a
    placeholder for a numpy scalar of `value` is boxed as one (`isinstance(s, np.floating)`)."""
    leaves, treedef = nest.flatten_with_treedef(spec)
    values = nest.flatten(value)
    inputs = treedef.unflatten([
        graph.placeholder(leaf.shape, leaf.dtype, argument=argument, name="".join(
            c if c.isalnum() or c == "_" else "_" for c in name).strip("_"))
        if isinstance(leaf, TensorSpec) else leaf for leaf, name in zip(leaves, treedef.names(argument))])
    if len(values) == len(leaves):
        for t, v in zip(nest.flatten(inputs), values):
            if isinstance(t, Tensor):
                graph.read_values[id(t)] = v
            if isinstance(t, Tensor) and t.shape == ():
                t.box = "scalar" if isinstance(v, np.generic) else "array"
    return inputs


def _output_slots(graph, outputs, where=None):
    """The TreeDef of `outputs` and, per leaf, its graph output index or how a call finds it.

    Leaves that never touched a tensor are returned as they are. Arguments updated in place
    get their final values as extra outputs, written back into the caller's arrays after
    each call (`graph.write_back_outputs`: (input, output) pairs)."""
    slots, (flat, treedef) = [], nest.flatten_with_treedef(outputs)
    memory.finish(graph)  # arguments written through views and item assignment are written back too
    check_numpy_aliases(graph)  # a numpy array a tensor `if` gave on some runs, updated by numpy since
    inputs = {id(t): i for i, t in enumerate(graph.inputs)}
    write_backs = [(inputs[id(root)], value) for root, value in graph.write_backs.values()]
    def choice_slot(leaf):  # a Choice's tensors become outputs; its numbers are returned as they are
        if isinstance(leaf, operators.Choice):
            return _Chosen(choice_slot(leaf.pick), choice_slot(leaf.if_false), choice_slot(leaf.if_true))
        if isinstance(leaf, Tensor):
            graph.outputs.append(graph.capture(leaf))
            if leaf.python_box is None:
                return len(graph.outputs) - 1
            box, numpy = leaf.python_box, len(graph.outputs) - 1  # a Python number where one branch ran
            python = _Item(numpy) if box.value is None else choice_slot(box.value)
            return _Chosen(choice_slot(box.pick), *((numpy, python) if box.python_when else (python, numpy)))
        return _Literal(leaf)

    for leaf in flat:
        if isinstance(leaf, operators.Choice) or (
                isinstance(leaf, Tensor) and leaf.python_box is not None and leaf.stale is None
                and not any(value is leaf for _, value in write_backs)):
            slots.append(choice_slot(leaf))
        elif isinstance(leaf, operators.TensorList):  # a list built in a graph loop: its items
            if leaf.kind == "mixed":
                raise ConversionError(
                    f"{graph.name} returns a list built in a graph loop whose items are of different types "
                    f"(Python numbers and arrays, or numpy scalars and 0-d arrays): eagerly each item keeps its "
                    f"own type, which the stacked list cannot tell apart. Make the items one type "
                    f"(np.asarray(v), or v[()] for a numpy scalar) (function defined at {where})")
            slots.append(_ListItems(len(graph.outputs) if leaf.tensor is not None else None,
                                    "arrays0" if leaf.kind == "arrays0" else
                                    leaf.kind in ("bool", "int", "float", "complex")))
            if leaf.tensor is not None:
                graph.outputs.append(graph.capture(leaf.tensor))
        elif isinstance(leaf, PythonValue):  # a loop run as Python gave it: returned as that run made it
            slots.append(_PythonSlot(len(graph.outputs)))
            graph.outputs.append(graph.capture(leaf.tensor))
        elif isinstance(leaf, Tensor) or _is_array(leaf):
            if isinstance(leaf, Tensor) and leaf.stale is not None:
                leaf.stale.check_read(graph, f"is returned by {graph.name}")
            tensor = graph.capture(leaf) if isinstance(leaf, Tensor) else constant_node(
                graph, leaf if isinstance(leaf, np.generic) else np.asarray(devices.to_host(leaf)))
            # an argument updated in place (`x += 1; return x`), or a view of one: the caller's memory
            updated = next(((i, steps) for i, value in write_backs if isinstance(leaf, Tensor)
                            and (steps := memory.view_steps(leaf, value, graph)) is not None), None)
            index = len(graph.outputs)
            graph.outputs.append(tensor)
            slots.append(index if updated is None else _UpdatedArgument(
                updated[0], index, _view_steps(graph, updated[1]) if updated[1] else None))
        else:
            slots.append(_Literal(leaf))
    for i, value in write_backs:
        graph.write_back_outputs.append((i, len(graph.outputs)))
        graph.outputs.append(value)
    if any(isinstance(leaf, operators.MaybeUnset) for leaf in flat):
        _check_unset_items(outputs)
        treedef = _DropUnset(treedef)
    return treedef, slots


def _view_steps(graph, nodes):
    """A `memory.ViewSteps` replaying view nodes `nodes`: their other inputs (a run-time subscript's
    bounds) become outputs of `graph`."""
    steps = []
    for node in nodes:
        first = len(graph.outputs)
        graph.outputs.extend(graph.capture(t) for t in node.inputs[1:])
        steps.append((node.opdef, dict(node.attrs), tuple(range(first, len(graph.outputs)))))
    return memory.ViewSteps(steps)


def _check_unset_items(value, holder=None, key=None):
    """A dict item a tensor loop that may run zero times first wrote can be returned in its own
    dict only (the key left out on those runs): anywhere else eager would have raised KeyError."""
    if isinstance(value, operators.MaybeUnset):
        if holder is not value.base or key != value.key:
            value._refuse()
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_unset_items(v, value, k)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _check_unset_items(v)


class _DropUnset:
    """An output TreeDef whose dicts leave out the items unset on this run (`MaybeUnset`)."""
    __slots__ = ("treedef",)

    def __init__(self, treedef):
        self.treedef = treedef

    def __getattr__(self, name):
        return getattr(self.treedef, name)

    def unflatten(self, leaves):
        return _drop_unset(self.treedef.unflatten(leaves))


def _drop_unset(value):
    if isinstance(value, dict):
        for k in [k for k, v in value.items() if v is nest.UNSET]:
            del value[k]
        for v in value.values():
            _drop_unset(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _drop_unset(v)
    return value

def function(func=None, *, input_signature=None, reduce_retracing=False, device=None, autograph=True,
             max_traces=None, check_numerics=False):
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
    `check_numerics`: every call runs node by node and raises FloatingPointError at the first
        NaN or Inf, as inside `with ag.debug.check_numerics():` (slow: for debugging).
    """
    def wrap(fn):
        return Function(fn, input_signature=input_signature, reduce_retracing=reduce_retracing,
                        device=device, autograph=autograph, max_traces=max_traces,
                        check_numerics=check_numerics)
    return wrap if func is None else wrap(func)
