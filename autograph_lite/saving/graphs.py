"""Graphs and attr values as JSON, and back, checked as they are read.

A value is JSON that says what it is: null, true/false, an int, a string, a list (a tuple), or
an object with one key naming a type from the attr schema: {"float": hex}, {"complex": [hex,
hex]}, {"dtype": name}, {"array": member}, {"scalar": member} (a numpy scalar, stored as a 0-d
array), {"graph": graph}, {"slot": k}, {"slice": [a, b, c]}, {"ellipsis": true},
{"stream": "stdout" | "stderr"}, {"random_state": "global"} (numpy's global RandomState),
{"scalar_type": "int" | "numpy.int32" | ...}, {"spec": {"shape", "dtype"}}.

A graph: {"name", "inputs": [placeholder], "nodes": [node], "outputs": [ref], "captures"}.
A node: {"op", "name", "location", "inputs": [ref], "attrs": {name: value}, "outputs":
[{"shape", "dtype", "weak"}]}. A ref names a value of the same graph: [-1, i] is input i,
[n, k] output k of node n (an earlier node). Decoding rebuilds every node through the op
table: each op is looked up, its attrs checked against its schema, its output types inferred
again from its inputs (a dtype that differs from the stored one is refused), and a Cond or
While checked against its sub-graphs, so a file cannot make the runtime see types that
are not what the arrays will be.
"""
import sys

import numpy as np

from ..errors import LoadError
from ..ops.control_flow import relax_shape
from ..runtime import memory
from ..runtime.graph import Graph, Slot
from ..runtime.opdef import COND, CONST, PLACEHOLDER, REFERENCE, SCALAR_TYPE, WHILE, AttrError, check_attrs, find
from ..tensor_spec import TensorSpec
from .format import DTYPES

MAX_RANK = 64
_STREAMS = {"stdout": lambda: sys.stdout, "stderr": lambda: sys.stderr}
_NOT_TRACED = {"FusedElementwise"}  # made by the optimizer from a loaded graph, never stored


class SaveError(ValueError):
    """A traced function holds something the saved format cannot express."""


# --- encoding ---------------------------------------------------------------------------

def encode_value(value, writer, refs=None):
    """`value` (an attr, a signature leaf) as self-describing JSON; arrays go to `writer`."""
    t = type(value)
    if value is None or t is bool or t is str or t is int:
        return value
    if t is float:
        return {"float": value.hex()}
    if t is complex:
        return {"complex": [value.real.hex(), value.imag.hex()]}
    if t is tuple:
        return [encode_value(v, writer, refs) for v in value]
    if isinstance(value, np.dtype):
        if value.name not in DTYPES:
            raise SaveError(f"dtype {value} cannot be saved")
        return {"dtype": value.name}
    if t is np.ndarray:
        return {"array": writer.array(value)}
    if isinstance(value, np.generic) and t is value.dtype.type:  # a numpy scalar keeps its box
        return {"scalar": writer.array(np.asarray(value))}
    if t is Graph:
        return {"graph": encode_graph(value, writer, refs)}
    if t is Slot:
        return {"slot": value.k}
    if t is slice:
        return {"slice": [encode_value(b, writer, refs) for b in (value.start, value.stop, value.step)]}
    if value is Ellipsis:
        return {"ellipsis": True}
    if t is TensorSpec:
        return {"spec": {"shape": list(value.shape), "dtype": encode_value(value.dtype, writer)["dtype"]}}
    for name, stream in _STREAMS.items():
        if value is stream():
            return {"stream": name}
    if SCALAR_TYPE.accepts(value):  # a draw's `dtype=int` or `dtype=np.int32`, as given
        name = value.__name__ if value in _PY_TYPES.values() else f"numpy.{np.dtype(value).name}"
        if _scalar_type(name) is not value:
            raise SaveError(f"scalar type {value!r} cannot be saved")
        return {"scalar_type": name}
    if value is np.random.mtrand._rand:  # np.random.*: the loading process's, as eager code there uses
        return {"random_state": "global"}
    if REFERENCE.accepts(value):
        raise SaveError(f"it draws from the random generator {_brief(value)}, which cannot be saved: a loaded "
                        f"function could not draw from that same object. Only numpy's global RandomState "
                        f"(np.random.*) is saved, as the loading process's")
    raise SaveError(f"a {t.__name__} ({_brief(value)}) cannot be saved: a saved function holds only "
                    f"numbers, strings, None, tuples, dtypes, arrays, numpy scalars and graphs")


_PY_TYPES = {t.__name__: t for t in (bool, int, float, complex)}


def _scalar_type(name):
    """The scalar type saved as `name` ('int', 'numpy.int32'), or None."""
    if name.startswith("numpy."):
        dtype = DTYPES.get(name[len("numpy."):])
        return None if dtype is None else dtype.type
    return _PY_TYPES.get(name)


def _brief(value):
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."


def _tensor_type(t):
    # "object": the per-run stack a gradient's While carries (a StackNew output and the
    # sub-graph inputs it feeds); the loader accepts it there only
    dtype = "object" if t.dtype == object else encode_value(t.dtype, None)["dtype"]
    return {"shape": list(t.shape), "dtype": dtype, "weak": bool(t.weak)}


def encode_graph(graph, writer, outer_refs=None):
    """`graph` (and its sub-graphs) as JSON; `outer_refs` gives the refs of the enclosing graph."""
    refs = {}
    inputs = []
    for i, t in enumerate(graph.inputs):
        refs[id(t)] = [-1, i]
        inputs.append({"name": t.node.name, "location": t.node.location, **_tensor_type(t),
                       "attrs": {k: encode_value(v, writer) for k, v in t.node.attrs.items()}})

    def ref(t, node):
        found = refs.get(id(t))
        if found is None:
            raise SaveError(f"node '{node}' of graph '{graph.name}' reads {t!r}, which is not a value of its graph")
        return found

    nodes = []
    for n, node in enumerate(graph.nodes):
        entry = {"op": node.op, "name": node.name, "location": node.location,
                 "inputs": [ref(t, node.name) for t in node.inputs],
                 "attrs": {k: _encode_attr(node, k, v, writer, refs) for k, v in node.attrs.items()},
                 "outputs": [_tensor_type(o) for o in node.outputs]}
        nodes.append(entry)
        for k, o in enumerate(node.outputs):
            refs[id(o)] = [n, k]
    captures = []
    if outer_refs is not None:
        index = {id(t): i for i, t in enumerate(graph.inputs)}
        captures = [[outer_refs[id(o)], index[id(i)]] for o, i in graph.captures
                    if id(o) in outer_refs and id(i) in index]
    return {"name": graph.name, "inputs": inputs, "nodes": nodes,
            "outputs": [ref(t, "(outputs)") for t in graph.outputs], "captures": captures}


def _encode_attr(node, name, value, writer, refs):
    try:
        return encode_value(value, writer, refs)
    except SaveError as e:
        raise SaveError(f"attr {name!r} of {node.op} node '{node.name}' (created at {node.location}): {e}") from None


def encode_view(view, writer):
    """A returned view of an argument updated in place (`memory.ViewSteps`) as JSON: per step its
    op, attrs, and the graph outputs its other inputs are."""
    return [{"op": opdef.name, "attrs": {k: encode_value(v, writer) for k, v in attrs.items()},
             "inputs": list(inputs)} for opdef, attrs, inputs in view.steps]


# --- decoding ---------------------------------------------------------------------------

def fail(message):
    raise LoadError(message)


def decode_value(obj, arrays, parent=None, where="a value"):
    """The Python value of JSON `obj` (see the module docstring); LoadError if it is not one."""
    t = type(obj)
    if obj is None or t is bool or t is str or t is int:
        return obj
    if t is list:
        return tuple(decode_value(v, arrays, parent, where) for v in obj)
    if t is not dict or len(obj) != 1:
        fail(f"{where}: {_brief(obj)} is not a saved value")
    (kind, body), = obj.items()
    if kind == "float" and type(body) is str:
        return _float(body, where)
    if kind == "complex" and type(body) is list and len(body) == 2 and all(type(b) is str for b in body):
        return complex(_float(body[0], where), _float(body[1], where))
    if kind == "dtype":
        return decode_dtype(body, where)
    if kind == "array":
        if type(body) is not str or body not in arrays:
            fail(f"{where}: array {_brief(body)} is not a member of the file")
        return arrays[body]
    if kind == "scalar":
        if type(body) is not str or body not in arrays or arrays[body].ndim != 0:
            fail(f"{where}: scalar {_brief(body)} is not a 0-d array member of the file")
        return arrays[body][()]
    if kind == "graph":
        return decode_graph(body, arrays, parent)
    if kind == "slot" and type(body) is int and 0 <= body < 1 << 20:
        return Slot(body)
    if kind == "slice" and type(body) is list and len(body) == 3:
        return slice(*(decode_value(b, arrays, parent, where) for b in body))
    if kind == "ellipsis" and body is True:
        return Ellipsis
    if kind == "stream" and body in _STREAMS:
        return _STREAMS[body]()
    if kind == "scalar_type" and type(body) is str and _scalar_type(body) is not None:
        return _scalar_type(body)
    if kind == "random_state" and body == "global":
        return np.random.mtrand._rand
    if kind == "spec" and type(body) is dict and set(body) == {"shape", "dtype"}:
        return TensorSpec(decode_shape(body["shape"], where), decode_dtype(body["dtype"], where))
    fail(f"{where}: {_brief(obj)} is not a saved value")


def _float(text, where):
    try:
        return float.fromhex(text)
    except (ValueError, OverflowError):
        fail(f"{where}: {text!r} is not a float")


def decode_dtype(name, where):
    dtype = DTYPES.get(name) if type(name) is str else None
    if dtype is None:
        fail(f"{where}: dtype {_brief(name)} is not one a saved graph may hold")
    return dtype


def decode_shape(shape, where):
    if type(shape) is not list or len(shape) > MAX_RANK or not all(
            d is None or (type(d) is int and 0 <= d < 1 << 62) for d in shape):
        fail(f"{where}: shape {_brief(shape)} is not a list of sizes")
    return tuple(shape)


def _fields(obj, keys, where):
    if type(obj) is not dict or set(obj) != set(keys):
        fail(f"{where}: expected an object with keys {sorted(keys)}, got {_brief(obj)}")
    return [obj[k] for k in keys]


def _text(value, where):
    if type(value) is not str or len(value) > 10_000:
        fail(f"{where}: {_brief(value)} is not a name")
    return value


def _fits(placeholder, value):
    """Whether `value` (a tensor) may be fed to `placeholder`: same dtype and rank, each
    placeholder dim None or equal."""
    return (placeholder.dtype == value.dtype and len(placeholder.shape) == len(value.shape)
            and all(p is None or p == v for p, v in zip(placeholder.shape, value.shape)))


def decode_graph(obj, arrays, parent=None):
    """A Graph (sub-graphs of Cond/While included) from JSON, every node checked as it is rebuilt."""
    name, inputs, nodes, outputs, captures = _fields(
        obj, ("name", "inputs", "nodes", "outputs", "captures"), "a graph")
    graph = Graph(_text(name, "a graph's name"), parent=parent)
    where = f"graph '{graph.name}'"
    if type(inputs) is not list or type(nodes) is not list or type(outputs) is not list or type(captures) is not list:
        fail(f"{where}: inputs, nodes, outputs and captures must be lists")
    for i, entry in enumerate(inputs):
        pname, location, shape, dtype, weak, attrs = _fields(
            entry, ("name", "location", "shape", "dtype", "weak", "attrs"), f"{where}, input {i}")
        at = f"{where}, input {i}"
        if dtype == "object" and parent is not None and shape == []:
            dtype_ = np.dtype(object)  # a gradient's per-run stack handle; checked against the node's input
        else:
            dtype_ = decode_dtype(dtype, at)
        attrs = _attrs(attrs, arrays, graph, at)
        try:
            t = graph.placeholder(decode_shape(shape, at), dtype_, name=_text(pname, at), weak=_bool(weak, at), **attrs)
        except AttrError as e:
            fail(f"{at}: {e}")
        t.node.location = _text(location, at)
        graph.inputs.append(t)
    for n, entry in enumerate(nodes):
        _node(graph, n, entry, arrays)
    graph.outputs = [_ref(graph, r, len(graph.nodes), f"{where}, outputs") for r in outputs]
    if parent is not None:
        for c in captures:
            if type(c) is not list or len(c) != 2 or type(c[1]) is not int or not 0 <= c[1] < len(graph.inputs):
                fail(f"{where}: capture {_brief(c)} is not [outer value, input index]")
            graph.captures.append((_ref(parent, c[0], len(parent.nodes), f"{where}, captures"), graph.inputs[c[1]]))
    elif captures:
        fail(f"{where}: the function's graph cannot capture values")
    return graph


def _bool(value, where):
    if type(value) is not bool:
        fail(f"{where}: {_brief(value)} is not true or false")
    return value


def _attrs(obj, arrays, graph, where):
    if type(obj) is not dict:
        fail(f"{where}: attrs must be an object")
    return {_text(k, where): decode_value(v, arrays, graph, f"{where}, attr {k!r}") for k, v in obj.items()}


def _ref(graph, ref, before, where):
    """The tensor `ref` names in `graph`: an input, or an output of one of its first `before` nodes."""
    if type(ref) is not list or len(ref) != 2 or not all(type(x) is int for x in ref):
        fail(f"{where}: {_brief(ref)} is not a value reference")
    n, k = ref
    if n == -1 and 0 <= k < len(graph.inputs):
        return graph.inputs[k]
    if 0 <= n < before and 0 <= k < len(graph.nodes[n].outputs):
        return graph.nodes[n].outputs[k]
    fail(f"{where}: reference {ref} is out of range (not an input or an earlier node's output)")


def _node(graph, n, entry, arrays):
    op, name, location, inputs, attrs, outputs = _fields(
        entry, ("op", "name", "location", "inputs", "attrs", "outputs"), f"graph '{graph.name}', node {n}")
    op, name = _text(op, f"node {n}"), _text(name, f"node {n}")
    where = f"node '{name}' ({op}) of graph '{graph.name}'"
    opdef = find(op)
    if op in _NOT_TRACED or opdef is None or opdef is PLACEHOLDER:  # a graph's inputs are not nodes in the file
        fail(f"{where}: unknown op {op!r}; this version of autograph_lite has no such op "
             f"(saved by a newer or different version?)")
    if type(inputs) is not list or type(outputs) is not list:
        fail(f"{where}: inputs and outputs must be lists")
    ins = [_ref(graph, r, n, where) for r in inputs]
    attrs = _checked_attrs(opdef, attrs, arrays, graph, len(ins), where, name, location,
                           f"the node has {len(ins)} inputs")
    stored = []
    for k, o in enumerate(outputs):
        shape, dtype, weak = _fields(o, ("shape", "dtype", "weak"), f"{where}, output {k}")
        at = f"{where}, output {k}"
        dtype = np.dtype(object) if dtype == "object" and op == "StackNew" else decode_dtype(dtype, at)
        stored.append((decode_shape(shape, at), dtype, _bool(weak, at)))
    specs = _output_types(opdef, ins, attrs, where)
    if len(specs) != len(stored):
        fail(f"{where}: the file says {len(stored)} outputs, the op gives {len(specs)}")
    for k, ((shape, dtype), (s_shape, s_dtype, _)) in enumerate(zip(specs, stored)):
        if np.dtype(dtype) != s_dtype or len(shape) != len(s_shape) or any(
                d is not None and s is not None and d != s for d, s in zip(shape, s_shape)):
            fail(f"{where}: output {k} is stored as {s_shape} {s_dtype} but the op gives {tuple(shape)} {np.dtype(dtype)}")
    node = graph.add_node(opdef, ins, attrs, specs, location=_text(location, where), name=name)
    for out, (_, _, weak) in zip(node.outputs, stored):
        out.weak = weak


def decode_view(obj, arrays, n_out, where):
    """The `memory.ViewSteps` JSON `obj` encodes: view ops the memory model replays, their attrs
    checked as a node's are, their other inputs graph outputs in range."""
    if type(obj) is not list or len(obj) > 64:
        fail(f"{where}: a view must be a list of at most 64 steps")
    steps = []
    for k, step in enumerate(obj):
        at = f"{where}, view step {k}"
        op, attrs, inputs = _fields(step, ("op", "attrs", "inputs"), at)
        opdef = find(_text(op, at))
        if opdef not in memory.VIEWS:
            fail(f"{at}: {_brief(op)} is not a view op")
        if type(inputs) is not list or not all(type(i) is int and 0 <= i < n_out for i in inputs):
            fail(f"{at}: inputs must be graph outputs in range")
        attrs = _checked_attrs(opdef, attrs, arrays, None, len(inputs), at, op, at, f"the step has {len(inputs)}")
        steps.append((opdef, attrs, tuple(inputs)))
    return memory.ViewSteps(steps)


def _checked_attrs(opdef, obj, arrays, graph, inputs, where, name, location, has):
    """The attrs JSON `obj` holds for an `opdef` node (or view step) with `inputs` inputs its Slots
    may name, checked against the op's schema."""
    attrs = _attrs(obj, arrays, graph, where)
    try:
        check_attrs(opdef, attrs, name, location)
    except AttrError as e:
        fail(f"{where}: {e}")
    if any(k >= inputs for k in _slots(attrs.values())):
        fail(f"{where}: an attr names input ${max(_slots(attrs.values()))}, {has}")
    return attrs


def _slots(values):
    """The input numbers the Slots inside attr `values` name (an index, a print template)."""
    for v in values:
        if type(v) is Slot:
            yield v.k
        elif type(v) is tuple:
            yield from _slots(v)
        elif type(v) is slice:
            yield from _slots((v.start, v.stop, v.step))


def _output_types(opdef, ins, attrs, where):
    """[(shape, dtype)] of a node, from its inputs and attrs as tracing found them."""
    rule = _STRUCTURAL_TYPES.get(opdef)
    if rule is not None:
        return rule(ins, attrs, where)
    try:
        specs = opdef.infer(*ins, **attrs)
        return [(tuple(shape), np.dtype(dtype)) for shape, dtype in specs]
    except (ValueError, TypeError, IndexError, KeyError, AttributeError, OverflowError) as e:
        fail(f"{where}: its inputs and attrs do not fit the op ({type(e).__name__}: {e})")


def _const_types(ins, attrs, where):
    value = attrs.get("value")
    if value is None or ins:
        fail(f"{where}: a Const has a value and no inputs")
    return [((), np.result_type(type(value)))] if not isinstance(value, np.ndarray) else [(value.shape, value.dtype)]


def _cond_types(ins, attrs, where):
    then_g, else_g = attrs.get("then_branch"), attrs.get("else_branch")
    if then_g is None or else_g is None or not ins or ins[0].ndim != 0:
        fail(f"{where}: a Cond has a scalar predicate and two branches")
    for branch in (then_g, else_g):
        if len(branch.inputs) != len(ins) - 1 or not all(_fits(p, v) for p, v in zip(branch.inputs, ins[1:])):
            fail(f"{where}: branch '{branch.name}' does not take the node's inputs")
    if len(then_g.outputs) != len(else_g.outputs) or any(
            t.dtype != e.dtype or t.ndim != e.ndim for t, e in zip(then_g.outputs, else_g.outputs)):
        fail(f"{where}: the branches give different outputs")
    return [(relax_shape(t.shape, e.shape), t.dtype) for t, e in zip(then_g.outputs, else_g.outputs)]


def _while_types(ins, attrs, where):
    cond_g, body = attrs.get("cond"), attrs.get("body")
    if cond_g is None or body is None:
        fail(f"{where}: a While has a cond and a body")
    n = len(body.outputs)
    for sub in (cond_g, body):
        if len(sub.inputs) != len(ins) or not all(_fits(p, v) for p, v in zip(sub.inputs, ins)):
            fail(f"{where}: '{sub.name}' does not take the node's inputs")
    if n > len(ins) or len(cond_g.outputs) != 1 or cond_g.outputs[0].ndim != 0:
        fail(f"{where}: a While's cond gives one scalar and its body one value per loop variable")
    if not all(_fits(p, o) and _fits(c, p) and _fits(p, c)
               for p, c, o in zip(body.inputs, cond_g.inputs, body.outputs)):
        fail(f"{where}: the body's outputs do not fit its loop variables")
    return [(p.shape, p.dtype) for p in body.inputs[:n]]


# the loader's output types of a structural node (checked against the file); other ops: OpDef.infer
_STRUCTURAL_TYPES = {CONST: _const_types, COND: _cond_types, WHILE: _while_types}
NOT_NODES = {PLACEHOLDER: "a graph input: saved with the graph's inputs, never as a node"}
