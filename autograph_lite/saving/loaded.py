"""What `ag.load` returns: a callable with the saved function's call contract.

`LoadedFunction(*args)` binds the arguments to the saved parameters, picks the saved
signature they fit (or raises the TypeError a Function with an input_signature raises),
runs that signature's graph, optimized and lowered here as a traced graph would be, and
returns the saved output structure. Inside a trace (`ag.grad(loaded)`, another
`@ag.function` calling it) the saved graph is copied into the graph being built, so
gradients flow through it where its ops have gradient rules.
"""
import inspect
import threading

import numpy as np

from .. import nest
from ..call_signature import CallSignature
from ..errors import user_location
from ..runtime import devices
from ..runtime.graph import Tensor, copy_graph, current_graph
from ..runtime.interpreter import debug_plan, debugging
from ..runtime.lowering import Plan
from ..runtime.passes import optimize
from ..tensor_spec import TensorSpec, _python_to_array
from ..trace_cache import _scalar_leaves, _spec_mismatch


class Output:
    """Where a leaf of the result comes from: graph output `index`, a `literal` value, the
    caller's argument array `argument` after an in-place update (or its view `view`, a
    `memory.ViewSteps`), or the rows of a list built in a loop (`rows`)."""
    __slots__ = ("kind", "index", "value", "view")

    def __init__(self, kind, index=None, value=None, view=None):
        self.kind, self.index, self.value, self.view = kind, index, value, view


class LoadedConcreteFunction:
    """One saved signature: `graph` (as traced; printable), `input_specs`, callable."""

    def __init__(self, call_signature, graph, input_specs, output_treedef, outputs, write_backs):
        self.call_signature, self.graph, self.input_specs = call_signature, graph, input_specs
        self._treedef, self._outputs, self._write_backs = output_treedef, outputs, write_backs
        self._optimized, self._plans, self._lock = None, {}, threading.Lock()
        self.scalar_leaves = ()  # the argument leaves traced as numpy scalars (None: not recorded, any fits)

    @property
    def output_specs(self):
        """The result's structure with a TensorSpec (shape, dims None where they vary, and dtype)
        for each leaf that is a graph output, None for other leaves (literals, updated arguments)."""
        def spec(out):
            if out.kind != "output":
                return None
            t = self.graph.outputs[out.index]
            return TensorSpec(t.shape, t.dtype)
        return self._treedef.unflatten([spec(o) for o in self._outputs])

    @property
    def optimized_graph(self):
        """The graph after the optimization passes, derived here as for a fresh trace."""
        if self._optimized is None:
            with self._lock:
                if self._optimized is None:
                    self._optimized = optimize(self.graph)
        return self._optimized

    def plan(self, device=None):
        device = device or devices.current()
        plan = self._plans.get(device)
        if plan is None:
            graph = self.optimized_graph
            with self._lock:
                plan = self._plans.get(device) or Plan(graph, device)
                self._plans[device] = plan
        return plan

    @property
    def structured_input_signature(self):
        return self.input_specs

    def __call__(self, *args, **kwargs):
        values = self.call_signature.bind(args, kwargs)
        found = self._mismatch(values)
        if found:
            raise self.call_signature.mismatch_error(found, "this saved signature")
        return self._call(values)

    def _mismatch(self, values, checked=None):
        """Why `values` fit this signature not (as `_spec_mismatch` says), or None. A numpy scalar
        where the trace had a 0-d array, or the other way round, does not fit: eagerly the two differ
        (`isinstance`, `x += 1`)."""
        found = _spec_mismatch(list(self.input_specs), checked or [_as_spec(v) for v in values], "")
        if found or self.scalar_leaves is None:
            return found
        scalars = _scalar_leaves(values)
        if scalars != self.scalar_leaves:
            k = min(set(scalars) ^ set(self.scalar_leaves))
            argument, first = 0, 0
            while first + len(nest.flatten(values[argument])) <= k:
                first += len(nest.flatten(values[argument]))
                argument += 1
            path = f"[{argument}]" + (f" (leaf {k - first})" if len(nest.flatten(values[argument])) > 1 else "")
            return (path, nest.flatten(list(self.input_specs))[k], "got a numpy scalar, but this trace was made for "
                    "a 0-d array" if k in scalars else "got a 0-d array, but this trace was made for a numpy scalar")
        return None

    def _arrays(self, values):
        """The graph inputs: the array leaves where the specs have TensorSpecs."""
        specs, treedef = nest.flatten_with_treedef(list(self.input_specs))
        parts = treedef.flatten_up_to(list(values))
        return [_python_to_array(s, v) for s, v in zip(specs, parts) if isinstance(s, TensorSpec)]

    def _call(self, values):
        arrays = self._arrays(values)
        if current_graph() is not None:
            return self._inline(arrays)
        return self._run(arrays)

    def _run(self, arrays):
        plan = self._plans.get(devices.current()) or self.plan()
        if debugging.active:  # ag.debug: run the graph through an interpreter
            plan = debug_plan(self, plan)
        callers = arrays
        if plan.device is not devices.CPU:
            arrays = [plan.device.put(a) for a in arrays]
        try:
            results = plan.fn(*arrays)
        except Exception as e:
            nodes = plan.failing_nodes(e)
            if nodes:
                e.add_note(f"while running {nodes[0].op} node '{nodes[0].name}' of the loaded function "
                           f"{self.call_signature.name}, created at {nodes[0].location}")
            raise
        for i, k in self._write_backs:
            target = callers[i]
            if not isinstance(target, np.ndarray):
                continue  # numpy scalars are immutable: `x += 1` rebinds, as eagerly
            if any(j != i and isinstance(other, np.ndarray) and np.may_share_memory(target, other)
                   for j, other in enumerate(callers)):
                raise ValueError(f"{self.call_signature.name}(): an argument updated in place shares memory with "
                                 f"another argument; the loaded function cannot make one see the update of the "
                                 f"other: pass a copy (called at {user_location()})")
            value = results[k]
            target[...] = devices.to_host(value)
        return self._treedef.unflatten([self._leaf(o, callers, results) for o in self._outputs])

    @staticmethod
    def _leaf(out, callers, results):
        if out.kind == "output":
            return results[out.index]
        if out.kind == "literal":
            return out.value
        if out.kind == "choice":  # `x and y` of two types: the candidate picked, in its own box
            return LoadedConcreteFunction._leaf(out.value[1] if results[out.index] else out.value[0], callers, results)
        if out.kind == "item":  # a Python number where a tensor `if` merged one with a numpy value
            value = results[out.index]
            return value.item() if hasattr(value, "item") else value
        if out.kind == "argument":
            array = callers[out.value]
            if out.view is not None:
                return out.view(array, results) if type(array) is np.ndarray else results[out.index]
            return results[out.index] if isinstance(array, np.generic) or not isinstance(array, np.ndarray) else array
        if out.index is None:
            return []
        if out.value == "arrays0":  # 0-d arrays, each its own as eagerly
            return [np.array(row) for row in results[out.index]]
        return results[out.index].tolist() if out.value else list(results[out.index])

    def _inline(self, tensors):
        """Copy the saved graph into the graph being traced, fed with `tensors`; its outputs."""
        graph = current_graph()
        if self._write_backs:
            raise TypeError(f"{self.call_signature.name} (loaded) updates an argument in place, which it "
                            f"cannot do inside another trace (at {user_location()})")
        values = {id(p): graph.capture(t) if isinstance(t, Tensor) else _constant(graph, t)
                  for p, t in zip(self.graph.inputs, tensors)}
        for node in self.graph.nodes:
            attrs = {k: copy_graph(v, graph, values) if hasattr(v, "nodes") else v for k, v in node.attrs.items()}
            copy = graph.add_node(node.op, [values[id(i)] for i in node.inputs], attrs,
                                  [(o.shape, o.dtype) for o in node.outputs], location=node.location)
            for old, new in zip(node.outputs, copy.outputs):
                new.weak = old.weak
                values[id(old)] = new
        results = [values[id(t)] for t in self.graph.outputs]
        leaves = []
        for out in self._outputs:
            if out.kind in ("rows", "choice"):
                what = "a list built in a loop" if out.kind == "rows" else "`x and y` of operands of two types"
                raise TypeError(f"{self.call_signature.name} (loaded) returns {what}, which "
                                f"it cannot return inside another trace (at {user_location()})")
            leaves.append(out.value if out.kind == "literal" else results[out.index])
        return self._treedef.unflatten(leaves)

    def __repr__(self):
        return f"<LoadedConcreteFunction {self.call_signature.name}{self.input_specs}>"


def _constant(graph, value):
    from ..ops.core import convert_to_tensor
    return convert_to_tensor(value, graph)


def _as_spec(value):
    """A symbolic Tensor argument (a call inside a trace) as the TensorSpec it fits."""
    if isinstance(value, Tensor):
        return TensorSpec(value.shape, value.dtype)
    if type(value) in (list, tuple, dict) or nest.is_namedtuple(value):
        leaves, treedef = nest.flatten_with_treedef(value)
        if any(isinstance(v, Tensor) for v in leaves):
            return treedef.unflatten([_as_spec(v) for v in leaves])
    return value


class LoadedFunction:
    """A function loaded by `ag.load`: call it as the saved function, with any saved signature.

    `signatures`: one LoadedConcreteFunction per saved trace (`.graph` prints the graph).
    """

    def __init__(self, name, parameters, signatures):
        self.__name__ = self.__qualname__ = name
        self.__signature__ = inspect.Signature(parameters)
        self.call_signature = CallSignature(name, self.__signature__)
        self._param_names = self.call_signature.param_names
        self.signatures = tuple(signatures)
        self._fast = {}  # (device, (shape, dtype) per array argument) -> the signature they fit
        for s in self.signatures:
            s.call_signature = self.call_signature
        # specs without None dims first: an exact trace wins over a relaxed one, as in a Function
        self._order = sorted(self.signatures, key=lambda s: any(
            None in spec.shape for spec in nest.flatten(list(s.input_specs)) if isinstance(spec, TensorSpec)))

    def __call__(self, *args, **kwargs):
        fast = None
        if not kwargs and len(args) == len(self._param_names) and all(type(a) is np.ndarray for a in args):
            # arrays only: the signature they fit is remembered by their shapes and dtypes
            fast = (devices.current(), tuple((a.shape, a.dtype) for a in args))
            concrete = self._fast.get(fast)
            if concrete is not None and current_graph() is None:
                return concrete._run(list(args))
        values = self.call_signature.bind(args, kwargs)
        checked = [_as_spec(v) for v in values]
        first = None
        for concrete in self._order:
            found = concrete._mismatch(values, checked)
            if not found:
                if fast is not None and all(isinstance(s, TensorSpec) for s in concrete.input_specs):
                    if len(self._fast) > 256:
                        self._fast.clear()
                    self._fast[fast] = concrete
                return concrete._call(values)
            first = first or found
        against = "its saved signature" if len(self.signatures) == 1 else \
            f"any of its {len(self.signatures)} saved signatures (the first says)"
        raise self.call_signature.mismatch_error(first, against)

    def __repr__(self):
        return f"<ag.load {self.__name__} ({len(self.signatures)} signatures)>"
