"""`ag.export_onnx`: a function's traced graph as an ONNX model that onnxruntime runs.

The exporter walks the traced graph (`concrete_fn.graph`, not the optimized one) and turns
each node into ONNX nodes through `RULES`, a table keyed by the op's `OpDef` and filled with
`@rule("Add", ...)`. Graph nodes already carry numpy's result dtypes (NEP 50, weak Python
scalars resolved), so a rule casts its operands to the dtype numpy computes in and emits
the ONNX operator; where ONNX's semantics differ from numpy's (integer floor division and
modulo, bool arithmetic, integer powers) the rule spells numpy's out of several ONNX ops.
`Cond` becomes `If`, `While` becomes `Loop` (a list appended on every iteration becomes a
scan output). Ops with no sensible ONNX form are listed in `NOT_EXPORTABLE` with the reason;
exporting one, or an op without a rule, raises ConversionError naming it and the user's line.
"""
import warnings

import numpy as np

from .. import ops as _ops  # noqa: F401 - fills the op table RULES is keyed by
from ..errors import ConversionError
from ..runtime.graph import Slot
from ..runtime.opdef import COND, CONST, REGISTRY, WHILE

DEFAULT_OPSET = 18  # the first opset where every Reduce* takes its axes as an input

RULES = {}  # OpDef -> rule(ctx, node) -> [ONNX value name per node output]

NOT_EXPORTABLE = {
    "Placeholder": "a graph input is no step: the model takes it as an input",
    "Print": "ONNX graphs have no side effects: nothing can print",
    "Raise": "ONNX graphs cannot raise an error",
    "CheckFits": "ONNX cannot raise numpy's OverflowError for a Python int out of the dtype's range; "
                 "cast the Python int explicitly (ag.cast / np.int8(...)) so no check is needed",
    "CheckShape": "ONNX cannot raise numpy's ValueError for an in-place operator's result of another shape",
    "RandomNormal": "ONNX draws from another generator, so results could never equal the eager run's",
    "RandomUniform": "ONNX draws from another generator, so results could never equal the eager run's",
    "RandomDraw": "it calls a numpy (or cupy) generator object held by reference; ONNX has no such object",
    "PythonLoop": "it runs a loop's Python code (its variables change rank), which ONNX cannot hold",
    "DeferredCall": "it calls Python code on a value a PythonLoop gives, which ONNX cannot hold",
    "PythonTruth": "it tests the truth of a Python object a PythonLoop gives, which ONNX cannot hold",
    "StackNew": "per-run stacks exist only in gradients of While loops; export the forward function",
    "StackPush": "per-run stacks exist only in gradients of While loops; export the forward function",
    "StackPop": "per-run stacks exist only in gradients of While loops; export the forward function",
    "StackSize": "per-run stacks exist only in gradients of While loops; export the forward function",
    "FusedElementwise": "made only by optimization passes; the exporter reads the traced graph",
    "UfuncAt": "not written yet: ONNX's ScatterND reduces repeated indices for add and mul only, and numpy's "
               "ufunc.at applies any ufunc once per occurrence",
    "SetItem": "not written yet (issue 26): ONNX's ScatterND leaves repeated indices undefined where numpy's "
               "last write wins, so it needs the positions deduplicated first",
    **{op: f"ONNX has no {op} operator, and one written from its operators would round differently "
              f"from numpy's" for op in ("Trunc", "Exp2", "Expm1", "Log2", "Log10", "Log1p", "Cbrt", "Deg2Rad",
                                         "Rad2Deg", "Atan2", "Hypot", "LogAddExp", "CopySign")},
    "IsFinite": "ONNX has no IsFinite operator",
    "SignBit": "ONNX has no operator telling -0.0 from 0.0",
    "FMax": "ONNX's Max propagates NaN where numpy's fmax ignores it",
    "FMin": "ONNX's Min propagates NaN where numpy's fmin ignores it",
    "Heaviside": "ONNX has no Heaviside operator",
    **{op: f"ONNX has no {op} operator" for op in ("BitwiseCount", "Spacing", "LogAddExp2", "FloatPower", "Ldexp",
                                                   "NextAfter", "Gcd", "Lcm")},
    "LeftShift": "ONNX's BitShift takes unsigned integers only, and numpy's shift by the width or more is 0",
    "RightShift": "ONNX's BitShift takes unsigned integers only, and numpy's right shift of a negative fills ones",
    "Conj": "ONNX has no complex dtypes",
    "Real": "ONNX has no complex dtypes",
    "Imag": "ONNX has no complex dtypes",
    "Complex": "ONNX has no complex dtypes",
    # numpy's linear algebra and products (ops/linalg_ops.py), computed by numpy's own functions
    **{op: f"ONNX has no {what} operator" for op, what in (
        ("Cholesky", "Cholesky"), ("MatrixInverse", "matrix inverse"), ("PseudoInverse", "pseudo-inverse"),
        ("Solve", "linear solve"), ("LogDet", "log-determinant"), ("MatrixPower", "matrix power"),
        ("Qr", "QR"), ("Eigh", "eigendecomposition"), ("EigvalsH", "eigenvalue"), ("Svd", "SVD"),
        ("Norm", "norm of every numpy ord"), ("Kron", "Kronecker product"), ("Cross", "cross product"),
        ("Histogram", "histogram"), ("BinCount", "bincount"), ("Interp", "interpolation"),
        ("Cov", "covariance"), ("CorrCoef", "correlation"), ("SvdVals", "SVD"),
        ("ConditionNumber", "condition number"), ("MatrixRank", "matrix rank"), ("MatrixNorm", "matrix norm"),
        ("VectorNorm", "norm of every numpy ord"), ("LinalgCross", "cross product"))},
    **{op: f"numpy computes {op} with its own loops or BLAS; ONNX's would round differently" for op in (
        "MultiDot", "LinalgTensorDot", "LinalgOuter", "LinalgTrace", "LinalgDiagonal", "VecDot")},
    "Unique": "ONNX's Unique sorts only when asked and numpy's NaN handling (equal_nan) has no ONNX form",
    **{op: f"numpy computes {op} with its own loops or BLAS; ONNX's would round differently" for op in (
        "Vdot", "Inner", "TensorDot", "Einsum", "Det")},
    "Modf": "ONNX has no operator splitting a float into its fraction and integral parts",
    "Frexp": "ONNX has no operator splitting a float into mantissa and exponent",
    "Accumulate": "a running ufunc (numpy's accumulate): ONNX's CumSum rounds float sums in another order",
    "Cumprod": "ONNX has no cumulative product operator",
    "Sort": "ONNX's TopK orders NaN differently from numpy's sort (NaN last) and is not stable",
    "ArgSort": "ONNX's TopK orders NaN differently from numpy's argsort (NaN last) and is not stable",
    "TakeAlongAxis": "no rule yet: ONNX's GatherElements does not broadcast the other axes as numpy does",
    "NonZero": "no rule yet: ONNX's NonZero gives one (ndim, n) array where numpy gives a tuple",
    "SearchSorted": "ONNX has no searchsorted operator",
    "PythonCall": "it calls a Python function (math.sqrt, float, round) on a number: ONNX has none",
}


def rule(*op_names):
    """Decorator: `fn(ctx, node) -> [output names]` exports the nodes of these ops."""
    def register(fn):
        for name in op_names:
            RULES[REGISTRY[name]] = fn
        return fn
    return register


MAX_NESTING = 31  # If/Loop graphs in If/Loop graphs: protobuf's readers stop at 100 message levels, 3 per graph


def export_onnx(f, path, opset=DEFAULT_OPSET, *, args=None):
    """Write the traced graph of `f` to `path` as an ONNX model; returns the `onnx.ModelProto`.

    `f` is a ConcreteFunction, or an `ag.function` with exactly one trace or an
    input_signature; `args` (arrays or TensorSpecs, as for `get_concrete_function`) picks
    or makes the trace of a Function with several. The model's inputs are the graph's
    array arguments in order (named after them); its outputs `output_0`, ... are the tensor
    leaves of the result, flattened (a list built in a loop is one stacked tensor), then the
    final values of arguments the function updates in place.

        ag.export_onnx(f, "f.onnx", args=(np.zeros(3, np.float32),))
        onnxruntime.InferenceSession("f.onnx").run(None, {"x": x})
    """
    try:
        import onnx
    except ImportError:
        raise ImportError("ag.export_onnx needs the onnx package: pip install autograph_lite[onnx]") from None
    if not isinstance(opset, int) or not DEFAULT_OPSET <= opset <= onnx.defs.onnx_opset_version():
        raise ValueError(f"opset must be an int from {DEFAULT_OPSET} to {onnx.defs.onnx_opset_version()}, "
                         f"got {opset!r}")
    concrete = _concrete(f, args)
    graph = getattr(concrete, "graph_with_state", concrete.graph)  # outside state exported as constants
    ctx = _Builder(onnx, _Names())
    output_names = [f"output_{i}" for i in range(len(graph.outputs))]
    ctx.names.taken.update(output_names)  # an argument may be called output_0
    inputs = []
    for t in graph.inputs:
        name = ctx.names.fresh(t.node.name)
        ctx.env[id(t)] = name
        inputs.append(ctx.value_info(name, t, dim_prefix=name))
    nesting = graph.nesting()
    if nesting > MAX_NESTING:
        raise ConversionError(
            f"cannot export {graph.name} to ONNX: its tensor `if`s and loops nest {nesting} deep (an `elif` chain "
            f"nests one level per condition), and ONNX's protobuf readers refuse a model whose If/Loop graphs nest "
            f"more than {MAX_NESTING} deep")
    ctx.emit_nodes(graph)
    outputs = []
    for name, t in zip(output_names, graph.outputs):
        ctx.add("Identity", [ctx.value(t)], [name])
        outputs.append(ctx.value_info(name, t))
    # the IR version the opset needs, not the newest the onnx package writes: an onnxruntime older
    # than the onnx package refuses a newer IR version ("Unsupported model IR version")
    model = onnx.helper.make_model_gen_version(
        onnx.helper.make_graph(ctx.nodes, graph.name, inputs, outputs),
        opset_imports=[onnx.helper.make_opsetid("", opset)], producer_name="autograph_lite")
    onnx.save(model, path)
    return model


def _concrete(f, args):
    from ..function import ConcreteFunction, Function
    if isinstance(f, ConcreteFunction):
        if args is not None:
            raise TypeError("export_onnx: args= picks a trace of an ag.function; a ConcreteFunction is one trace")
        return f
    if not isinstance(f, Function):
        raise TypeError(f"export_onnx takes an ag.function or a ConcreteFunction, got {type(f).__name__}")
    if args is not None:
        return f.get_concrete_function(*args)
    if f.input_signature is not None:
        return f.get_concrete_function()
    traces = list(f.concrete_functions)
    if len(traces) == 1:
        return traces[0]
    found = "none" if not traces else ", ".join(repr(c) for c in traces)
    raise ValueError(f"export_onnx: {f.__name__} has {len(traces)} traces ({found}); pass args=(...) "
                     f"with arrays or TensorSpecs to pick or make the one to export")


class _Names:
    """Fresh ONNX value names, unique across the model and all its sub-graphs."""

    def __init__(self):
        self.taken, self.count = set(), 0

    def fresh(self, base):
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in base) or "v"
        name = base
        while name in self.taken:
            self.count += 1
            name = f"{base}_{self.count}"
        self.taken.add(name)
        return name


class _Builder:
    """The ONNX nodes of one graph (the model's, or an If branch's or Loop body's) being built.

    `env` maps id(Tensor) -> ONNX name; `consts` maps id(Tensor) -> the value of a Const
    node (also seen through captures), emitted in whatever dtype the reader needs."""

    def __init__(self, onnx, names, parent=None):
        self.onnx, self.names, self.nodes = onnx, names, []
        self.env = {} if parent is None else dict(parent.env)
        self.consts = {} if parent is None else dict(parent.consts)
        self._const_cache = {}
        self.skip = set()  # ids of nodes not to export: a list's appends that a Loop scan output replaces
        self.node = None  # the graph node being exported (for error locations)

    # --- values ---------------------------------------------------------------------------

    def add(self, op_type, inputs, outputs=None, **attrs):
        outputs = outputs or [self.names.fresh(op_type.lower())]
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), outputs, **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def const(self, value, dtype=None):
        """A Constant node holding `value` as an array of `dtype`."""
        array = np.asarray(value) if dtype is None else np.array(value).astype(dtype)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._const_cache:
            name = self.names.fresh("const")
            self.add("Constant", [], [name], value=self.onnx.numpy_helper.from_array(array, name))
            self._const_cache[key] = name
        return self._const_cache[key]

    def value(self, t, dtype=None):
        """The name of tensor `t`'s value, converted to `dtype` (numpy astype) if given."""
        dtype = t.dtype if dtype is None else np.dtype(dtype)
        if id(t) in self.consts:
            return self.const(self.consts[id(t)], dtype)
        name = self.env[id(t)]
        return name if dtype == t.dtype else self.cast(name, dtype)

    def cast(self, name, dtype):
        return self.add("Cast", [name], to=_onnx_dtype(self.onnx, np.dtype(dtype), self.node))

    def ints(self, values):
        return self.const(np.asarray(values, np.int64))

    def value_info(self, name, t, dtype=None, dim_prefix=None):
        dims = [d if d is not None else (f"{dim_prefix}_dim{k}" if dim_prefix else None)
                for k, d in enumerate(t.shape)]
        return self.onnx.helper.make_tensor_value_info(
            name, _onnx_dtype(self.onnx, np.dtype(dtype or t.dtype), t.node), dims)

    def fail(self, reason):
        node = self.node
        raise ConversionError(f"cannot export {node.op} node '{node.name}' to ONNX: {reason} "
                              f"(at {node.location})")

    # --- graphs ---------------------------------------------------------------------------

    def emit_nodes(self, graph):
        for node in graph.nodes:
            self.node = node
            if id(node) in self.skip:
                continue
            fn = rule_for(node.opdef)
            if fn is None:
                reason = NOT_EXPORTABLE.get(node.op, "the op has no ONNX rule")
                self.fail(reason)
            names = fn(self, node)
            names = [names] if isinstance(names, str) else names
            for t, name in zip(node.outputs, names):
                self.env[id(t)] = name

    def bind(self, sub, names, consts=()):
        """Map the inputs of sub-graph `sub` to ONNX names (and known constant values)."""
        for t, name, value in zip(sub.inputs, names, consts or [None] * len(names)):
            if value is not None:
                self.consts[id(t)] = value
            else:
                self.env[id(t)] = name


def _onnx_dtype(onnx, dtype, node):
    if dtype.kind not in "biuf":
        raise ConversionError(f"cannot export {node.op} node '{node.name}' to ONNX: dtype {dtype} "
                              f"has no ONNX operators (at {node.location})")
    return onnx.helper.np_dtype_to_tensor_dtype(dtype)


def _exemplar(t):
    """What numpy's promotion sees for `t`: a Python scalar for weak values (NEP 50)."""
    if t.weak:
        return {"b": False, "i": 0, "u": 0, "f": 0.0}.get(t.dtype.kind, t.dtype)
    return t.dtype


def _common(node):
    return np.result_type(*[_exemplar(t) for t in node.inputs])


def _capture_values(ctx, outer):
    """(names, constant values) of the outer values a Cond or While passes to its sub-graphs."""
    return [ctx.value(t) if id(t) not in ctx.consts else None for t in outer], \
        [ctx.consts.get(id(t)) for t in outer]


# --- structural ops -----------------------------------------------------------------------

def _cond(ctx, node):
    pred = ctx.value(node.inputs[0], np.bool_)
    names, consts = _capture_values(ctx, node.inputs[1:])
    branches = []
    for key in ("then_branch", "else_branch"):
        sub = node.attrs[key]
        inner = _Builder(ctx.onnx, ctx.names, ctx)
        inner.bind(sub, names, consts)
        inner.emit_nodes(sub)
        inner.node = node
        outs = []
        for t, spec in zip(sub.outputs, node.outputs):
            name = inner.names.fresh(f"{key}_out")
            inner.add("Identity", [inner.value(t, spec.dtype)], [name])
            outs.append(inner.value_info(name, spec))
        branches.append(ctx.onnx.helper.make_graph(inner.nodes, ctx.names.fresh(key), [], outs))
    outputs = [ctx.names.fresh(f"{node.name}_{i}") for i in range(len(node.outputs))]
    ctx.add("If", [pred], outputs, then_branch=branches[0], else_branch=branches[1])
    return outputs


def _appended_lists(node):
    """Carried values of a While that are lists appended to once per iteration: k -> the item.

    The body's k-th output is Concat(its k-th input, ExpandDims(item, 0)) along axis 0 and
    nothing else reads the list inside the loop: ONNX can collect it as a scan output."""
    cond_g, body = node.attrs["cond"], node.attrs["body"]
    found = {}
    for k, out in enumerate(body.outputs):
        concat = out.node
        if concat.op != "Concat" or concat.attrs["axis"] != 0 or len(concat.inputs) != 2:
            continue
        carried, grown = concat.inputs
        if carried is not body.inputs[k] or grown.node.op != "ExpandDims" or grown.node.attrs["axis"] != 0:
            continue
        if carried.users != [concat] or cond_g.inputs[k].users or \
                sum(o is out for o in body.outputs) != 1 or grown.users != [concat]:
            continue
        found[k] = grown.node.inputs[0]
    return found


def _while(ctx, node):
    n = len(node.outputs)
    cond_g, body = node.attrs["cond"], node.attrs["body"]
    init = [ctx.value(t, spec.dtype) for t, spec in zip(node.inputs[:n], node.outputs)]
    captures = _capture_values(ctx, node.inputs[n:])
    scans = _appended_lists(node)
    carried = [k for k in range(n) if k not in scans]
    go = _test(ctx, node, init, captures)  # before the first iteration

    inner = _Builder(ctx.onnx, ctx.names, ctx)
    step, cond_in = inner.names.fresh("iteration"), inner.names.fresh("cond_in")
    body_in = [inner.names.fresh(f"{node.name}_in{k}") for k in range(n)]
    inner.bind(body, body_in + captures[0], [None] * n + captures[1])
    inner.skip = {id(body.outputs[k].node) for k in scans}  # the appends: the scan outputs collect them
    inner.emit_nodes(body)
    inner.node = node
    body_out = [inner.value(t, spec.dtype) if k in carried else "" for k, (t, spec)
                in enumerate(zip(body.outputs, node.outputs))]
    outputs = [(_test(inner, node, body_out, captures), _Scalar(np.bool_))]
    outputs += [(body_out[k], node.outputs[k]) for k in carried]
    outputs += [(inner.value(item, node.outputs[k].dtype), _Scalar(node.outputs[k].dtype, item.shape))
                for k, item in scans.items()]
    out_infos = []
    for value, spec in outputs:
        name = inner.names.fresh(f"{node.name}_out")
        inner.add("Identity", [value], [name])
        out_infos.append(inner.value_info(name, spec))
    in_infos = [inner.value_info(step, _Scalar(np.int64)), inner.value_info(cond_in, _Scalar(np.bool_))]
    in_infos += [inner.value_info(body_in[k], node.outputs[k]) for k in carried]
    loop_body = ctx.onnx.helper.make_graph(inner.nodes, ctx.names.fresh(f"{node.name}_body"), in_infos, out_infos)

    finals = [ctx.names.fresh(f"{node.name}_{k}") for k in carried]
    stacked = [ctx.names.fresh(f"{node.name}_stacked{k}") for k in scans]
    ctx.add("Loop", ["", go] + [init[k] for k in carried], finals + stacked, body=loop_body)
    results = dict(zip(carried, finals))
    for k, items in zip(scans, stacked):
        start = node.inputs[k]
        empty = id(start) in ctx.consts and np.size(ctx.consts[id(start)]) == 0
        results[k] = items if empty else ctx.add("Concat", [init[k], items], axis=0)
    return [results[k] for k in range(n)]


def _test(ctx, node, carried, captures):
    """The While `node`'s condition on loop values `carried`, emitted into `ctx`: a bool's name."""
    cond_g = node.attrs["cond"]
    test = _Builder(ctx.onnx, ctx.names, ctx)
    test.bind(cond_g, carried + captures[0], [None] * len(carried) + captures[1])
    test.emit_nodes(cond_g)
    test.node = node
    go = test.value(cond_g.outputs[0], np.bool_)
    ctx.nodes.extend(test.nodes)
    return go


class _Scalar:
    """The type of a Loop input or output that is no graph value (iteration count, condition, item)."""

    def __init__(self, dtype, shape=()):
        self.shape, self.dtype, self.node = shape, np.dtype(dtype), None


def _const(ex, node):
    ex.consts[id(node.outputs[0])] = node.attrs["value"]  # written as an initializer where it is used
    return []


RULES.update({CONST: _const, COND: _cond, WHILE: _while})


# --- elementwise arithmetic ---------------------------------------------------------------

def _operands(ctx, node, dtype=None):
    dtype = node.outputs[0].dtype if dtype is None else dtype
    return [ctx.value(t, dtype) for t in node.inputs]


def _binary(onnx_op, bool_op=None):
    def emit(ctx, node):
        if node.outputs[0].dtype == np.bool_:
            if bool_op is None:
                ctx.fail("numpy has no bool form of this op")
            return ctx.add(bool_op, _operands(ctx, node))
        return ctx.add(onnx_op, _operands(ctx, node))
    return emit


rule("Add")(_binary("Add", "Or"))
rule("Mul")(_binary("Mul", "And"))
rule("Maximum")(_binary("Max", "Or"))
rule("Minimum")(_binary("Min", "And"))
rule("Sub")(_binary("Sub"))
rule("RealDiv")(_binary("Div"))


@rule("Warn")
def _warn(ctx, node):
    """A warning numpy gives for some values is no result: the model leaves it out."""
    return []


@rule("Assert")
def _assert(ctx, node):
    """A check Python itself makes (`error` set: a list stacked empty, a variable a loop that ran
    zero times never assigned) is left out of the model, with one warning; an `assert` is refused."""
    if node.attrs.get("error") is None:
        ctx.fail("ONNX graphs cannot raise an error")
    message = node.attrs["message"]
    warnings.warn(f"ONNX graphs cannot raise: the exported model does not make the check a compiled call makes "
                  f"(raising {node.attrs['error']}: {message if isinstance(message, str) else 'a formatted message'},"
                  f" at {node.attrs['location']}); where it would fail, the model returns a result instead",
                  ExportWarning, stacklevel=4)
    return []


class ExportWarning(UserWarning):
    """ag.export_onnx left out of the model something the compiled function does (a run-time check)."""


@rule("Pow")
def _pow(ctx, node):
    out = node.outputs[0].dtype
    if out.kind == "f":
        return ctx.add("Pow", _operands(ctx, node))
    exponent = ctx.consts.get(id(node.inputs[1]))
    if exponent is None or np.ndim(exponent) or not 0 <= int(exponent) <= 64:
        ctx.fail("an integer power needs a constant exponent from 0 to 64 (ONNX's Pow on integers "
                 "rounds through floating point)")
    base, result, e = ctx.value(node.inputs[0], out), None, int(exponent)
    while e:  # square and multiply: wraps on overflow exactly as numpy's integer power
        if e & 1:
            result = base if result is None else ctx.add("Mul", [result, base])
        e >>= 1
        if e:
            base = ctx.add("Mul", [base, base])
    if result is None:
        shape = ctx.add("Shape", [ctx.value(node.inputs[0])])
        return ctx.add("Expand", [ctx.const(1, out), shape])
    return result


def _int_divmod(ctx, node, a, b):
    """numpy's integer floor division and remainder: x // 0 and x % 0 are 0, and
    MIN // -1 wraps (ONNX's Div and Mod would trap on both)."""
    dtype = node.outputs[0].dtype
    zero, one = ctx.const(0, dtype), ctx.const(1, dtype)
    unsafe = ctx.add("Equal", [b, zero])
    if dtype.kind == "i":
        minus_one = ctx.const(-1, dtype)
        unsafe = ctx.add("Or", [unsafe, ctx.add("Equal", [b, minus_one])])
    safe = ctx.add("Where", [unsafe, one, b])
    mod = ctx.add("Mod", [a, safe], fmod=0)  # ONNX's integer Mod takes the divisor's sign, as numpy
    div = ctx.add("Div", [a, safe])           # truncates toward zero
    if dtype.kind == "i":
        # truncation and floor differ when the remainder is nonzero and the signs differ
        rem = ctx.add("Mod", [a, safe], fmod=1)
        signs = ctx.add("Xor", [ctx.add("Less", [a, zero]), ctx.add("Less", [safe, zero])])
        adjust = ctx.add("And", [signs, ctx.add("Not", [ctx.add("Equal", [rem, zero])])])
        div = ctx.add("Sub", [div, ctx.cast(adjust, dtype)])
        div = ctx.add("Where", [ctx.add("Equal", [b, minus_one]), ctx.add("Neg", [a]), div])
    div = ctx.add("Where", [ctx.add("Equal", [b, zero]), zero, div])
    return div, mod


def _float_divmod(ctx, node, a, b):
    """numpy's npy_divmod for floats, step by step (ONNX has no floor division)."""
    dtype = node.outputs[0].dtype
    zero, one, half = ctx.const(0, dtype), ctx.const(1, dtype), ctx.const(0.5, dtype)
    mod = ctx.add("Mod", [a, b], fmod=1)
    div = ctx.add("Div", [ctx.add("Sub", [a, mod]), b])
    mod_nonzero = ctx.add("Not", [ctx.add("Equal", [mod, zero])])
    flip = ctx.add("And", [mod_nonzero, ctx.add("Xor", [ctx.add("Less", [b, zero]), ctx.add("Less", [mod, zero])])])
    mod = where(ctx, flip, ctx.add("Add", [mod, b]), mod, dtype)
    div = where(ctx, flip, ctx.add("Sub", [div, one]), div, dtype)
    mod = where(ctx, mod_nonzero, mod, _signed_zero(ctx, ctx.add("Less", [b, zero]), dtype), dtype)
    floor = ctx.add("Floor", [div])
    floor = where(ctx, ctx.add("Greater", [ctx.add("Sub", [div, floor]), half]), ctx.add("Add", [floor, one]),
                  floor, dtype)
    quotient = ctx.add("Div", [a, b])
    floor = where(ctx, ctx.add("Equal", [div, zero]), _signed_zero(ctx, _sign_bit(ctx, quotient, dtype), dtype),
                  floor, dtype)
    b_zero = ctx.add("Equal", [b, zero])
    return where(ctx, b_zero, quotient, floor, dtype), where(ctx, b_zero, ctx.add("Mod", [a, b], fmod=1), mod, dtype)


def _sign_bit(ctx, x, dtype):
    """x < 0, or x is -0.0 (1 / -0.0 is -inf); no ONNX op reads the sign bit."""
    return ctx.add("Or", [ctx.add("Less", [x, ctx.const(0, dtype)]),
                          ctx.add("Less", [ctx.add("Div", [ctx.const(1, dtype), x]), ctx.const(0, dtype)])])


def _signed_zero(ctx, negative, dtype):
    """-0.0 where `negative`, else 0.0 (made at run time: onnxruntime merges a -0.0 constant with 0.0)."""
    sign = ctx.add("Where", [negative, ctx.const(-1, dtype), ctx.const(1, dtype)])
    return ctx.add("Mul", [ctx.const(0, dtype), sign])


def where(ctx, c, x, y, dtype):
    """ONNX Where(c, x, y) as numpy.where: onnxruntime's Where gives +0.0 where it picks a -0.0 of `x`
    (its false side keeps the sign), so for floats a factor of -1 puts the sign back."""
    chosen = ctx.add("Where", [c, x, y])
    if np.dtype(dtype).kind != "f":
        return chosen
    zero = ctx.const(0, dtype)
    lost = ctx.add("And", [c, ctx.add("And", [ctx.add("Equal", [x, zero]), _sign_bit(ctx, x, dtype)])])
    return ctx.add("Mul", [chosen, ctx.add("Where", [lost, ctx.const(-1, dtype), ctx.const(1, dtype)])])


def _divmod(ctx, node):
    if node.outputs[0].dtype == np.bool_:
        ctx.fail("numpy has no bool form of this op")
    a, b = _operands(ctx, node)
    return (_float_divmod if node.outputs[0].dtype.kind == "f" else _int_divmod)(ctx, node, a, b)


@rule("FloorDiv")
def _floordiv(ctx, node):
    return _divmod(ctx, node)[0]


@rule("FloorMod")
def _floormod(ctx, node):
    return _divmod(ctx, node)[1]


def _compare(onnx_op, negate=False):
    def emit(ctx, node):
        dtype = _common(node)
        if dtype.kind in "iu" and not all(_fits(ctx, t, dtype) for t in node.inputs):
            # numpy compares a Python int out of the array's range by value (int8 < 1000)
            dtype = np.dtype(np.int64)
            if not all(_fits(ctx, t, dtype) for t in node.inputs) or np.uint64 in [t.dtype for t in node.inputs]:
                ctx.fail("a Python int out of int64's range compared with an integer array")
        if dtype == np.bool_ and onnx_op != "Equal":
            dtype = np.dtype(np.uint8)  # ONNX orders numbers only; False < True as 0 < 1
        result = ctx.add(onnx_op, _operands(ctx, node, dtype))
        return ctx.add("Not", [result]) if negate else result
    return emit


def _fits(ctx, t, dtype):
    value = ctx.consts.get(id(t))
    if not t.weak or value is None or t.dtype.kind not in "iu":
        return True
    return np.iinfo(dtype).min <= value <= np.iinfo(dtype).max


for _name, _op in [("Equal", "Equal"), ("Greater", "Greater"), ("GreaterEqual", "GreaterOrEqual"),
                   ("Less", "Less"), ("LessEqual", "LessOrEqual")]:
    rule(_name)(_compare(_op))
rule("NotEqual")(_compare("Equal", negate=True))


@rule("LogicalAnd", "LogicalOr")
def _logical(ctx, node):
    return ctx.add(node.op[len("Logical"):], _operands(ctx, node, np.bool_))


@rule("BitwiseAnd", "BitwiseOr", "BitwiseXor", "LogicalXor")
def _bitwise(ctx, node):
    logical = node.outputs[0].dtype == np.bool_
    onnx_op = {"BitwiseAnd": "And", "BitwiseOr": "Or"}.get(node.op, "Xor") if logical else node.op
    return ctx.add(onnx_op, _operands(ctx, node))


@rule("Invert")
def _invert(ctx, node):
    return ctx.add("Not" if node.outputs[0].dtype == np.bool_ else "BitwiseNot", _operands(ctx, node))


@rule("LogicalNot", "Not")
def _not(ctx, node):
    return ctx.add("Not", _operands(ctx, node, np.bool_))


@rule("Abs")
def _abs(ctx, node):
    (x,) = _operands(ctx, node)
    return ctx.add("Identity" if node.outputs[0].dtype.kind in "bu" else "Abs", [x])


@rule("Neg")
def _neg(ctx, node):
    (x,) = _operands(ctx, node)
    if node.outputs[0].dtype.kind == "u":  # ONNX's Neg has no unsigned form; 0 - x wraps as numpy
        return ctx.add("Sub", [ctx.const(0, node.outputs[0].dtype), x])
    return ctx.add("Neg", [x])


@rule("Square")
def _square(ctx, node):
    (x,) = _operands(ctx, node)
    return ctx.add("And" if node.outputs[0].dtype == np.bool_ else "Mul", [x, x])


@rule("Exp", "Log", "Tanh", "Sqrt")
def _unary(ctx, node):
    return ctx.add(node.op, _operands(ctx, node))


# numpy's math ufuncs ONNX has an operator for (float inputs; an int one is cast to the result's float)
_MATH = {"Sin": "Sin", "Cos": "Cos", "Tan": "Tan", "Asin": "Asin", "Acos": "Acos", "Atan": "Atan",
         "Sinh": "Sinh", "Cosh": "Cosh", "Asinh": "Asinh", "Acosh": "Acosh", "Atanh": "Atanh",
         "Floor": "Floor", "Ceil": "Ceil", "Rint": "Round", "Fabs": "Abs", "Sign": "Sign",
         "Reciprocal": "Reciprocal"}


@rule(*_MATH)
def _math(ctx, node):
    dtype = node.outputs[0].dtype
    if dtype.kind != "f":
        if node.op in ("Floor", "Ceil", "Rint", "Sign") and dtype.kind in "iu":
            return ctx.add("Identity" if node.op != "Sign" else "Sign", _operands(ctx, node))
        ctx.fail(f"numpy's {node.opdef.ufunc} on {dtype} has no ONNX form")
    return ctx.add(_MATH[node.op], _operands(ctx, node))


@rule("IsNaN", "IsInf")
def _float_test(ctx, node):
    (x,) = node.inputs
    if x.dtype.kind != "f":
        ctx.fail(f"ONNX's {node.op} takes floats only")
    return ctx.add(node.op, [ctx.value(x)])


@rule("FMod")
def _fmod(ctx, node):
    if node.outputs[0].dtype.kind != "f":
        ctx.fail("numpy's fmod of integers (0 for a zero divisor) has no ONNX form")
    return ctx.add("Mod", _operands(ctx, node), fmod=1)


_UFUNCS = {"add": "Add", "multiply": "Mul", "subtract": "Sub", "divide": "Div", "maximum": "Max",
           "minimum": "Min", "tanh": "Tanh", "exp": "Exp", "negative": "Neg"}


def rule_for(opdef):
    """The export rule of `opdef`: its entry in RULES, else one from its facts (an op defined by
    its `expansion` of steps ONNX has is written as those steps), else None."""
    fn = RULES.get(opdef)
    if fn is None and opdef.expansion is not None and all(u in _UFUNCS for u, _ in opdef.expansion):
        fn = _expansion
    return fn


@rule("Relu", "Sigmoid")
def _expansion(ctx, node):
    """An op defined by its OpDef's numpy steps (sigmoid as 0.5 * tanh(x / 2) + 0.5): the same steps."""
    dtype = node.outputs[0].dtype
    x = y = ctx.value(node.inputs[0], dtype)
    for ufunc, operands in node.opdef.expansion:
        args = [x if a == "x" else y if a == "y" else ctx.const(a, dtype) for a in operands]
        y = ctx.add(_UFUNCS[ufunc], args)
    return y


@rule("Select")
def _select(ctx, node):
    c, x, y = node.inputs
    dtype = node.outputs[0].dtype
    return where(ctx, ctx.value(c, np.bool_), ctx.value(x, dtype), ctx.value(y, dtype), dtype)


@rule("Cast", "Identity", "PythonInt", "PythonScalar", "Positive")
def _cast(ctx, node):
    return ctx.add("Identity", _operands(ctx, node))


@rule("BoxLike")
def _box_like(ctx, node):  # ONNX values have no box: the value
    return ctx.add("Identity", [ctx.value(node.inputs[1])])


# --- linear algebra and reductions --------------------------------------------------------

_MATMUL_IN = {"f": None, "i": np.int64, "u": np.uint64, "b": np.int64}


@rule("MatMul")
def _matmul(ctx, node):
    out = node.outputs[0].dtype
    native = out in (np.float32, np.float64, np.int32, np.int64, np.uint32, np.uint64)
    # wrapping integer sums are the same in a wider type, cast back (mod 2^bits)
    work = out if native else np.dtype(_MATMUL_IN[out.kind] or np.float32)
    product = ctx.add("MatMul", _operands(ctx, node, work))
    if out == np.bool_:
        return ctx.add("Not", [ctx.add("Equal", [product, ctx.const(0, work)])])
    return product if work == out else ctx.cast(product, out)


@rule("Dot")
def _dot(ctx, node):  # np.dot of vectors and matrices is matmul's product (numpy's BLAS calls differ)
    if not all(1 <= t.ndim <= 2 for t in node.inputs):
        ctx.fail("numpy computes Dot of these ranks with its own loops; ONNX's would round differently")
    return _matmul(ctx, node)


def _axes(node):
    axis = node.attrs.get("axis")
    ndim = node.inputs[0].ndim
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, int) else axis
    return sorted(a % ndim for a in axes)


def _reduce(onnx_op, work=None):
    def emit(ctx, node):
        out = node.outputs[0].dtype
        dtype = np.dtype(work) if work else (np.dtype(np.uint8) if out == np.bool_ else out)
        x = ctx.value(node.inputs[0], np.bool_ if work else dtype)
        if work:
            x = ctx.cast(x, dtype)
        axes = _axes(node)
        if node.inputs[0].ndim == 0 or axes == []:
            result = ctx.add("Identity", [x])
        else:
            inputs = [x] if axes is None else [x, ctx.ints(axes)]
            result = ctx.add(onnx_op, inputs, keepdims=int(node.attrs["keepdims"]))
        return result if dtype == out else ctx.cast(result, out)
    return emit


rule("Sum")(_reduce("ReduceSum"))
rule("Mean")(_reduce("ReduceMean"))
rule("Prod")(_reduce("ReduceProd"))
rule("Max")(_reduce("ReduceMax"))
rule("Min")(_reduce("ReduceMin"))
rule("Any")(_reduce("ReduceMax", np.uint8))
rule("All")(_reduce("ReduceMin", np.uint8))


@rule("UfuncReduce")
def _ufunc_reduce(ctx, node):
    """np.fmax.reduce / np.fmin.reduce of floats (np.nanmax, np.nanmin): ReduceMax / ReduceMin over
    the NaNs made -inf / inf, NaN where a slice is all NaN. Any other ufunc's reduce is refused."""
    x, ufunc = node.inputs[0], node.attrs["ufunc"]
    if ufunc not in ("fmax", "fmin") or x.dtype.kind != "f" or node.attrs["dtype"] is not None \
            or node.attrs["initial"] is not None:
        ctx.fail(f"np.{ufunc}.reduce of {x.dtype} (numpy's own reduce, with dtype= and initial=): not mapped yet")
    name = ctx.value(x)
    axes = _axes(node)
    if x.ndim == 0 or axes == []:
        return ctx.add("Identity", [name])
    nan = ctx.add("IsNaN", [name])
    filled = ctx.add("Where", [nan, ctx.const(-np.inf if ufunc == "fmax" else np.inf, x.dtype), name])
    extra = [] if axes is None else [ctx.ints(axes)]
    keepdims = int(node.attrs["keepdims"])
    result = ctx.add("ReduceMax" if ufunc == "fmax" else "ReduceMin", [filled, *extra], keepdims=keepdims)
    all_nan = ctx.add("ReduceMin", [ctx.cast(nan, np.uint8), *extra], keepdims=keepdims)
    return ctx.add("Where", [ctx.cast(all_nan, np.bool_), ctx.const(np.nan, x.dtype), result])


@rule("ArgMax", "ArgMin")
def _argmax(ctx, node):
    x = node.inputs[0]
    name = ctx.value(x, np.uint8) if x.dtype == np.bool_ else ctx.value(x)
    axis = node.attrs["axis"]
    if axis is None:
        name, axis = ctx.add("Reshape", [name, ctx.ints([-1])]), 0
    return ctx.add(node.op, [name], axis=axis, keepdims=0)


@rule("Cumsum")
def _cumsum(ctx, node):
    name = ctx.value(node.inputs[0], node.outputs[0].dtype)
    axis = node.attrs["axis"]
    if axis is None:
        name, axis = ctx.add("Reshape", [name, ctx.ints([-1])]), 0
    return ctx.add("CumSum", [name, ctx.const(np.int64(axis))])


@rule("Softmax")
def _softmax(ctx, node):
    return ctx.add("Softmax", _operands(ctx, node), axis=node.attrs["axis"])


# --- shapes and creation ------------------------------------------------------------------

@rule("Shape", "Size")
def _shape(ctx, node):
    return ctx.add(node.op, [ctx.value(node.inputs[0])])


def _shape_operand(ctx, t):
    name = ctx.value(t, np.int64)
    return ctx.add("Reshape", [name, ctx.ints([-1])]) if t.ndim == 0 else name


@rule("Zeros", "Ones")
def _filled(ctx, node):
    dtype = node.outputs[0].dtype
    fill = ctx.onnx.numpy_helper.from_array(np.array([node.op == "Ones"]).astype(dtype))
    return ctx.add("ConstantOfShape", [_shape_operand(ctx, node.inputs[0])], value=fill)


@rule("ZerosLike", "OnesLike")
def _like(ctx, node):
    dtype = node.outputs[0].dtype
    shape = ctx.add("Shape", [ctx.value(node.inputs[0])])
    return ctx.add("Expand", [ctx.const(int(node.op == "OnesLike"), dtype), shape])


@rule("Fill")
def _fill(ctx, node):
    shape, value = node.inputs
    return ctx.add("Expand", [ctx.value(value, node.outputs[0].dtype), _shape_operand(ctx, shape)])


@rule("BroadcastLike")
def _broadcast_like(ctx, node):
    g, like = node.inputs
    return ctx.add("Expand", [ctx.value(g), ctx.add("Shape", [ctx.value(like)])])


@rule("BroadcastTo")
def _broadcast_to(ctx, node):
    x, shape = node.inputs
    return ctx.add("Expand", [ctx.value(x), _shape_operand(ctx, shape)])


@rule("SumToShape")
def _sum_to_shape(ctx, node):
    g, like = node.inputs
    lead = g.ndim - like.ndim
    like_shape = ctx.add("Shape", [ctx.value(like)])
    g_shape = ctx.add("Shape", [ctx.value(g)], start=lead)
    # axes: the leading ones, and those where `like` has 1 and `g` does not (known at run time)
    ones = ctx.add("And", [ctx.add("Equal", [like_shape, ctx.ints(1)]),
                           ctx.add("Not", [ctx.add("Equal", [g_shape, ctx.ints(1)])])])
    trailing = ctx.add("Add", [ctx.add("Reshape", [ctx.add("NonZero", [ones]), ctx.ints([-1])]), ctx.ints(lead)])
    axes = ctx.add("Concat", [ctx.ints(list(range(lead))), trailing], axis=0)
    summed = ctx.add("ReduceSum", [ctx.value(g), axes], keepdims=1, noop_with_empty_axes=1)
    return ctx.add("Reshape", [summed, like_shape])


@rule("Range")
def _range(ctx, node):
    dtype = node.outputs[0].dtype
    bounds = [ctx.value(t, dtype) for t in node.inputs]
    if len(bounds) == 1:
        bounds = [ctx.const(0, dtype)] + bounds
    if len(bounds) == 2:
        bounds.append(ctx.const(1, dtype))
    return ctx.add("Range", bounds)


@rule("Reshape")
def _reshape(ctx, node):
    x, shape = node.inputs
    return ctx.add("Reshape", [ctx.value(x), _shape_operand(ctx, shape)])


@rule("Transpose")
def _transpose(ctx, node):
    perm = node.attrs["perm"]
    perm = list(reversed(range(node.inputs[0].ndim))) if perm is None else list(perm)
    return ctx.add("Transpose", [ctx.value(node.inputs[0])], perm=perm)


@rule("ExpandDims")
def _expand_dims(ctx, node):
    return ctx.add("Unsqueeze", [ctx.value(node.inputs[0]), ctx.ints([node.attrs["axis"]])])


@rule("Squeeze")
def _squeeze(ctx, node):
    x, axis = node.inputs[0], node.attrs["axis"]
    if axis is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
        if None in x.shape:
            ctx.fail("squeezing every size-1 axis needs the input's shape known when tracing")
    else:
        axes = [a % x.ndim for a in ((axis,) if isinstance(axis, int) else axis)]
    return ctx.add("Squeeze", [ctx.value(x), ctx.ints(axes)]) if axes else ctx.add("Identity", [ctx.value(x)])


@rule("Concat")
def _concat(ctx, node):
    return ctx.add("Concat", _operands(ctx, node), axis=node.attrs["axis"])


@rule("Stack")
def _stack(ctx, node):
    axis = node.attrs["axis"] % node.outputs[0].ndim
    rows = [ctx.add("Unsqueeze", [name, ctx.ints([axis])]) for name in _operands(ctx, node)]
    return ctx.add("Concat", rows, axis=axis)


@rule("Gather")
def _gather(ctx, node):
    params, indices = node.inputs
    return ctx.add("Gather", [ctx.value(params), ctx.value(indices, np.int64)], axis=node.attrs["axis"])


@rule("Pad")
def _pad(ctx, node):
    x, c = node.inputs
    widths = node.attrs["paddings"]
    pads = ctx.ints([w[0] for w in widths] + [w[1] for w in widths])
    return ctx.add("Pad", [ctx.value(x), pads, ctx.value(c, node.outputs[0].dtype)], mode="constant")


_INT64_MAX, _INT64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min


@rule("StridedSlice")
def _strided_slice(ctx, node):
    source = ctx.value(node.inputs[0])
    name = _take(ctx, source, node.inputs[0].ndim, node.inputs[1:], node.attrs["index"])
    return name if name != source else ctx.add("Identity", [source])


@rule("ScatterAdd")
def _scatter_add(ctx, node):
    """zeros like `like`, `dy` added at `like[index]`: the flat positions `like[index]` holds (an
    index applied to 0, 1, 2, ... shaped like `like`) tell ScatterND where each element goes."""
    dy, like, values = node.inputs[0], node.inputs[1], node.inputs[2:]
    shape = ctx.add("Shape", [ctx.value(like)])
    size = ctx.add("Reshape", [ctx.add("Size", [ctx.value(like)]), ctx.ints([1])])
    positions = ctx.add("Reshape", [ctx.add("Range", [ctx.const(0, np.int64), ctx.add("Reshape", [size, ctx.ints([])]),
                                                      ctx.const(1, np.int64)]), shape])
    positions = _take(ctx, positions, like.ndim, values, node.attrs["index"])
    grads = ctx.add("Expand", [ctx.value(dy), ctx.add("Shape", [positions])])
    zeros = ctx.add("ConstantOfShape", [size], value=ctx.onnx.numpy_helper.from_array(np.zeros(1, dy.dtype)))
    flat = ctx.add("ScatterND", [zeros, ctx.add("Reshape", [positions, ctx.ints([-1, 1])]),
                                 ctx.add("Reshape", [grads, ctx.ints([-1])])], reduction="add")
    return ctx.add("Reshape", [flat, shape])


def _take(ctx, name, ndim, values, index):
    """`name[index]` (an INDEX attr whose Slots are `values`): numpy basic indexing (ints, slices,
    None, ...), tensor scalars in any place, and one integer array index when every other item
    is a slice."""

    def scalar(item):  # an index part as a 1-element int64 tensor
        if isinstance(item, Slot):
            return ctx.add("Reshape", [ctx.value(values[item.k], np.int64), ctx.ints([1])])
        return ctx.ints([item])

    def is_array(item):
        return isinstance(item, Slot) and values[item.k].ndim > 0

    if any(isinstance(i, Slot) and values[i.k].dtype == np.bool_ for i in index):
        ctx.fail("a boolean mask index gives a shape known only from the data")
    consumed = sum(1 for i in index if i is not None and i is not Ellipsis)
    if Ellipsis in index:
        pos = index.index(Ellipsis)
        index = index[:pos] + (slice(None),) * (ndim - consumed) + index[pos + 1:]
    index = index + (slice(None),) * (ndim - sum(1 for i in index if i is not None))
    arrays = [i for i in index if is_array(i)]
    if arrays and (len(arrays) > 1 or any(i is None or not (isinstance(i, slice) or is_array(i)) for i in index)):
        ctx.fail("an array index mixed with integers or None (numpy moves axes around)")
    starts, ends, steps, axes, picks, new_axes, axis, out_pos = [], [], [], [], [], [], 0, 0
    for item in index:
        if item is None:
            new_axes.append(out_pos)
            out_pos += 1
            continue
        if isinstance(item, slice):
            if (item.start, item.stop, item.step) != (None, None, None):
                step = 1 if item.step is None else item.step
                negative = isinstance(step, int) and step < 0
                if isinstance(step, Slot):
                    ctx.fail("a slice step known only when the graph runs")
                starts.append(scalar(item.start) if item.start is not None
                              else ctx.ints([_INT64_MAX if negative else 0]))
                ends.append(scalar(item.stop) if item.stop is not None
                            else ctx.ints([_INT64_MIN if negative else _INT64_MAX]))
                steps.append(step)
                axes.append(axis)
            out_pos += 1
        elif is_array(item):
            picks.append((axis, ctx.value(values[item.k], np.int64)))
            out_pos += values[item.k].ndim
        else:
            picks.append((axis, ctx.add("Reshape", [scalar(item), ctx.ints([])])))
        axis += 1
    if axes:
        name = ctx.add("Slice", [name, ctx.add("Concat", starts, axis=0), ctx.add("Concat", ends, axis=0),
                                 ctx.ints(axes), ctx.ints(steps)])
    for axis, where in sorted(picks, key=lambda p: -p[0]):  # from the last axis: numbering stays valid
        name = ctx.add("Gather", [name, where], axis=axis)
    if new_axes:
        name = ctx.add("Unsqueeze", [name, ctx.ints(new_axes)])
    return name
