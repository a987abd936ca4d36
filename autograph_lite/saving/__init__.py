"""`ag.save` / `ag.load`: a compiled function's traced graphs in a file that holds no code.

    ag.save(f, "f.agz")          # every traced signature of f (or one ConcreteFunction)
    g = ag.load("f.agz")         # in any process, the source of f not needed
    g(x)                         # what f(x) returns

The file (format.py, docs/saved_format.md) is a zip of JSON and .npy members; loading
never unpickles or executes anything from it, checks every member's sha256, and rebuilds
each graph through the op table (graphs.py), so a bad file raises `ag.LoadError`.
"""
import inspect
import os

from .. import nest, recursion
from ..errors import LoadError
from ..runtime import devices
from ..tensor_spec import TensorSpec
from . import format as _format
from .graphs import SaveError, decode_graph, decode_value, decode_view, encode_graph, encode_value, encode_view, fail
from .loaded import LoadedConcreteFunction, LoadedFunction, Output

__all__ = ["save", "load", "dumps", "loads", "LoadedFunction", "LoadError"]

_PARAMETER_KINDS = {k.name: k for k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                        inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.KEYWORD_ONLY,
                                        inspect.Parameter.VAR_KEYWORD)}


def save(f, path):
    """Save every traced signature of `f` (an `@ag.function`, a ConcreteFunction of one, or a
    loaded function) to `path`; `ag.load(path)` gives a callable with the same contract.

    A Function with an input_signature and no trace yet is traced first. Raises ValueError
    if a trace holds something a file cannot (an argument that is an arbitrary object, a
    print to a file other than stdout/stderr, effects on the caller's containers)."""
    writer, document = _document(f)
    with _room(f):  # json's encoder recurses per level of the document
        writer.write(path, document)


def dumps(f):
    """The bytes `ag.save(f, path)` would write: a saved function held in memory (to send to
    another process, `ag.distributed` does). Same bytes for the same traces; `loads` reads them."""
    writer, document = _document(f)
    with _room(f):
        return writer.to_bytes(document)


def _document(f):
    concretes = _concretes(f)
    writer = _format.Writer()
    name = f.call_signature.name
    with _room(f):
        document = {"name": name, "parameters": _parameters(f, writer),
                    "signatures": [_signature(c, writer) for c in concretes]}
    return writer, document


FRAMES_PER_LEVEL = 16  # the codec's and json's frames per level of nested sub-graphs (Cond in Cond)
LOAD_FRAMES = 20_000   # a file may nest sub-graphs ~1,000 deep; deeper is refused (a LoadError)


def _room(f):
    """Headroom for encoding the traces of `f`, by how deeply their sub-graphs nest."""
    nesting = max((c.graph.nesting() for c in _concretes(f)), default=0)
    return recursion.headroom(FRAMES_PER_LEVEL * nesting)


def _concretes(f):
    from ..function import ConcreteFunction, Function
    if isinstance(f, LoadedFunction):
        return list(f.signatures)
    if isinstance(f, (ConcreteFunction, LoadedConcreteFunction)):
        return [f]
    if isinstance(f, Function):
        traces = list(f.concrete_functions)
        if not traces and f.input_signature is not None:
            traces = [f.get_concrete_function()]
        if not traces:
            raise ValueError(f"ag.save: {f.__name__} has no traces yet; call it (or "
                             f"get_concrete_function(TensorSpec(...))) for each signature to save")
        return traces
    raise TypeError(f"ag.save takes an @ag.function, a ConcreteFunction or a loaded function, "
                    f"not {type(f).__name__}")


def _parameters(f, writer):
    signature = f.call_signature.signature
    out = []
    for p in signature.parameters.values():
        entry = {"name": p.name, "kind": p.kind.name}
        if p.default is not p.empty:
            try:
                entry["default"] = _tree(p.default, writer)
            except SaveError as e:
                raise ValueError(f"ag.save: the default of parameter '{p.name}' cannot be saved: {e}") from None
        out.append(entry)
    return out


def _tree(value, writer):
    leaves, treedef = nest.flatten_with_treedef(value)
    return {"tree": treedef.to_json(), "leaves": [encode_value(v, writer) for v in leaves]}


def _signature(concrete, writer):
    name = concrete.call_signature.name
    if getattr(concrete, "_effects", ()):
        raise ValueError(f"ag.save: the trace of {name}{concrete.input_specs} changes the caller's lists, dicts "
                         f"or objects; a saved graph cannot redo that. Return the new values instead")
    loop = _python_loop(concrete.graph)
    if loop is not None:
        raise ValueError(f"ag.save: {name} runs the loop on a tensor at {loop.location} as Python when the graph runs "
                         f"(its variables' ranks change), and a file cannot hold Python code")
    try:
        inputs = _tree(tuple(concrete.input_specs), writer)
    except SaveError as e:
        raise ValueError(f"ag.save: a signature of {name} holds an argument a file cannot: {e}") from None
    treedef, outputs = _output_slots(concrete, writer)
    graph = getattr(concrete, "graph_with_state", concrete.graph)  # outside state saved as constants
    return {"inputs": inputs, "graph": encode_graph(graph, writer),
            "output_tree": treedef.to_json(), "outputs": outputs,
            "write_backs": [list(p) for p in getattr(concrete, "_write_backs", None) or graph.write_back_outputs],
            "scalars": list(concrete.scalar_leaves)}


def _python_loop(graph):
    """A PythonLoop node of `graph` or its sub-graphs (ops/python_values.py), or None."""
    return next((node for node in graph.walk() if node.op == "PythonLoop"), None)


def _output_slots(concrete, writer):
    if isinstance(concrete, LoadedConcreteFunction):
        treedef, slots = concrete._treedef, concrete._outputs
    else:
        treedef = getattr(concrete, "_output", None)
        if type(treedef).__name__ == "_DropUnset":
            raise ValueError("ag.save: this function returns a dict whose key a tensor loop that may run zero "
                             "times leaves unset on some runs (the key left out then), which a saved function "
                             "cannot express yet; give the item a value before the loop")
        if not isinstance(treedef, nest.TreeDef):  # the ConcreteFunction of before the TreeDef
            treedef = nest.flatten_with_treedef(concrete._template)[1]
        slots = [_as_output(s) for s in concrete._slots]
    def entry(s):
        e = {"kind": s.kind, "index": s.index}
        if s.kind in ("literal", "argument"):
            try:
                e["value"] = _tree(s.value, writer) if s.kind == "literal" else s.value
                if s.view is not None:
                    e["view"] = encode_view(s.view, writer)
            except SaveError as err:
                raise ValueError(f"ag.save: an output of {getattr(concrete.graph, 'name', '?')} is a value a "
                                 f"file cannot hold: {err}") from None
        elif s.kind == "choice":
            e["value"] = [entry(c) for c in s.value]
        elif s.kind == "rows" and s.value:
            # True: its items were Python numbers, read back as such; "arrays0": 0-d arrays
            e["value"] = "arrays0" if s.value == "arrays0" else True
        return e
    return treedef, [entry(s) for s in slots]


def _as_output(slot):
    """A ConcreteFunction's output slot (function.py) as an Output."""
    if isinstance(slot, int):
        return Output("output", slot)
    kind = type(slot).__name__
    if kind == "_Literal":
        return Output("literal", value=slot.value)
    if kind == "_UpdatedArgument":
        return Output("argument", slot.output, slot.input, slot.view)
    if kind == "_ListItems":
        return Output("rows", slot.output, slot.python or None)
    if kind == "_Item":  # a Python number where a tensor `if` merged one with a numpy value
        return Output("item", slot.output)
    if kind == "_Chosen":  # `x and y` of two types: the candidate the pick output names
        return Output("choice", slot.pick, (_as_output(slot.if_false), _as_output(slot.if_true)))
    raise ValueError(f"ag.save: unknown output kind {kind}")


def load(path):
    """The function saved at `path` (by `ag.save`), as a callable `LoadedFunction`.

    Raises `ag.LoadError` saying what is wrong if the file is not a saved function, is
    corrupt or truncated, comes from a newer format version, or names an unknown op.

        g = ag.load("f.agz")
        g(np.ones(3))
    """
    with recursion.headroom(LOAD_FRAMES):
        document, arrays = _format.read(path)
    return _load(document, arrays, os.fspath(path))


def loads(data):
    """The function whose saved bytes (`dumps`, or a file's contents) are `data`, checked as `load` checks a file."""
    with recursion.headroom(LOAD_FRAMES):
        document, arrays = _format.read(bytes(data))
    return _load(document, arrays, "<bytes>")


def _load(document, arrays, path):
    try:
        with recursion.headroom(LOAD_FRAMES):
            loaded = _build(document, arrays)
    except LoadError as e:
        raise LoadError(f"{path}: {e}") from None
    except RecursionError:
        raise LoadError(f"{path}: the saved structure is nested too deeply") from None
    for k, concrete in enumerate(loaded.signatures):
        try:  # optimized and lowered now, as a first call would: a graph that cannot run is refused here
            concrete.plan(devices.CPU)
        except Exception as e:  # noqa: BLE001 - whatever the passes or the lowering meet, the file is at fault
            raise LoadError(f"{path}: signature {k} cannot be compiled ({type(e).__name__}: {e})") from None
    return loaded


def _object(obj, keys, where):
    if type(obj) is not dict or not set(keys) <= set(obj) or not set(obj) <= set(keys) | {"default", "value", "view", "scalars"}:
        fail(f"{where}: expected an object with keys {sorted(keys)}, got {str(obj)[:60]}")
    return obj


def _untree(obj, arrays, where):
    _object(obj, ("tree", "leaves"), where)
    try:
        treedef = nest.TreeDef.from_json(obj["tree"])
    except (ValueError, TypeError, KeyError) as e:
        fail(f"{where}: not a structure ({e})")
    leaves = obj["leaves"]
    if type(leaves) is not list or len(leaves) != treedef.num_leaves:
        fail(f"{where}: the structure has {treedef.num_leaves} leaves, the file {len(leaves) if type(leaves) is list else '?'}")
    return treedef.unflatten([decode_value(v, arrays, None, where) for v in leaves])


def _build(document, arrays):
    _object(document, ("name", "parameters", "signatures"), "function.json")
    name, parameters, signatures = document["name"], document["parameters"], document["signatures"]
    if type(name) is not str or len(name) > 1000:
        fail(f"the function's name {str(name)[:40]!r} is not a name")
    if type(parameters) is not list or type(signatures) is not list or not signatures:
        fail("parameters and signatures must be lists, with at least one signature")
    params = []
    for i, p in enumerate(parameters):
        _object(p, ("name", "kind"), f"parameter {i}")
        if type(p["name"]) is not str or not p["name"].isidentifier() or p["kind"] not in _PARAMETER_KINDS:
            fail(f"parameter {i}: {str(p)[:60]} is not a parameter")
        default = _untree(p["default"], arrays, f"parameter {p['name']!r}") if "default" in p else inspect.Parameter.empty
        try:
            params.append(inspect.Parameter(p["name"], _PARAMETER_KINDS[p["kind"]], default=default))
        except ValueError as e:
            fail(f"parameter {i}: {e}")
    try:
        inspect.Signature(params)
    except ValueError as e:
        fail(f"the parameters are not a valid signature: {e}")
    loaded = [_loaded_signature(s, arrays, k) for k, s in enumerate(signatures)]
    return LoadedFunction(name, params, loaded)


def _loaded_signature(obj, arrays, k):
    where = f"signature {k}"
    _object(obj, ("inputs", "graph", "output_tree", "outputs", "write_backs"), where)
    specs = _untree(obj["inputs"], arrays, f"{where}, inputs")
    if type(specs) is not tuple:
        fail(f"{where}: the inputs are not a tuple of arguments")
    graph = decode_graph(obj["graph"], arrays)
    tensor_specs = [s for s in nest.flatten(list(specs)) if isinstance(s, TensorSpec)]
    if len(tensor_specs) != len(graph.inputs) or any(
            s.shape != t.shape or s.dtype != t.dtype for s, t in zip(tensor_specs, graph.inputs)):
        fail(f"{where}: the graph's inputs do not match the signature {specs}")
    try:
        treedef = nest.TreeDef.from_json(obj["output_tree"])
    except (ValueError, TypeError, KeyError) as e:
        fail(f"{where}: the output structure is not a structure ({e})")
    outputs = obj["outputs"]
    if type(outputs) is not list or len(outputs) != treedef.num_leaves:
        fail(f"{where}: the output structure and its leaves differ in number")
    n_out, n_in = len(graph.outputs), len(graph.inputs)
    def output(o, at, depth=0):
        _object(o, ("kind", "index"), at)
        kind, index = o["kind"], o["index"]
        ok_index = type(index) is int and 0 <= index < n_out
        if kind == "output" and ok_index:
            return Output("output", index)
        if kind == "literal" and "value" in o:
            return Output("literal", value=_untree(o["value"], arrays, at))
        if kind == "argument" and ok_index and type(o.get("value")) is int and 0 <= o["value"] < n_in and not depth:
            return Output("argument", index, o["value"], decode_view(o["view"], arrays, n_out, at) if "view" in o else None)
        if kind == "item" and ok_index and depth:
            return Output("item", index)
        if kind == "rows" and (ok_index or index is None) and not depth:
            return Output("rows", index, o.get("value") if o.get("value") in (True, "arrays0") else None)
        if kind == "choice" and ok_index and type(o.get("value")) is list and len(o["value"]) == 2 and depth < 64:
            return Output("choice", index, tuple(output(c, at, depth + 1) for c in o["value"]))
        fail(f"{at}: {str(o)[:60]} is not an output")

    slots = [output(o, f"{where}, output {i}") for i, o in enumerate(outputs)]
    write_backs = obj["write_backs"]
    if type(write_backs) is not list or not all(
            type(p) is list and len(p) == 2 and all(type(x) is int for x in p)
            and 0 <= p[0] < n_in and 0 <= p[1] < n_out for p in write_backs):
        fail(f"{where}: write_backs must be [input, output] pairs in range")
    scalars = obj.get("scalars")  # absent in files of before the ninth session: any box fits
    if scalars is not None and (type(scalars) is not list or not all(
            type(i) is int and 0 <= i < len(nest.flatten(list(specs))) for i in scalars)):
        fail(f"{where}: scalars must be positions of the inputs' leaves")
    concrete = LoadedConcreteFunction(None, graph, specs, treedef, slots, [tuple(p) for p in write_backs])
    concrete.scalar_leaves = None if scalars is None else tuple(scalars)
    return concrete
