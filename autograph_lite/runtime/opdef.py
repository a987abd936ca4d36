"""The op table: every node kind is one `OpDef`, registered by name.

An op is defined once, in `ops/`: how to build its kernel for an array module, how
its output shapes and dtypes follow from its inputs, and the facts passes and backends
ask. The executor, the printer and the passes read this table; they never special-case
an op they can look up here. How each backend interprets an op (its Python spelling, its
C, its gradient, its ONNX) is a table keyed by OpDef in that backend's own module.

The four structural node kinds (`PLACEHOLDER`, `CONST`, `COND`, `WHILE`) are OpDefs too,
defined here because the graph itself makes them; they have no kernel (each interpreter
has its own rule for them). Consumers compare by identity: `node.opdef is WHILE`.
"""
import dataclasses
from typing import Callable, Optional


def broadcast_may_fail(shapes):
    """Whether broadcasting `shapes` together can fail when the graph runs: an axis where a dim known
    only then meets another dim that is not 1 (numpy raises "operands could not be broadcast")."""
    for axis in range(1, max(map(len, shapes), default=0) + 1):
        dims = [s[-axis] for s in shapes if len(s) >= axis]
        if None in dims and sum(d != 1 for d in dims) > 1:
            return True
    return False


@dataclasses.dataclass(eq=False)
class OpDef:
    name: str                       # graph op type, e.g. "MatMul"
    kernel: Optional[Callable]      # kernel(xp, **attrs) -> callable(*arrays); None: structural
    infer: Optional[Callable]       # infer(*input Tensors, **attrs) -> [(shape, dtype)]; None: structural
    elementwise: bool = False       # output[i] depends only on inputs[i] (fusion candidate)
    stateful: bool = False          # draws random numbers: never folded, merged or dropped
    weak_result: bool = False       # result of all-weak inputs stays weak (NEP 50 arithmetic)
    attrs: dict = dataclasses.field(default_factory=dict)  # attr name -> AttrType (below); none if empty
    printed_attrs: Optional[tuple] = None  # the attrs a printed graph shows (None: all)
    # numpy's name for the op in its floating-point warnings ("divide" in "divide by zero
    # encountered in divide"); None: the op raises none (see runtime/fp_errors.py)
    float_errors: Optional[str] = None
    # --- facts the passes and backends ask (tests/test_op_facts.py checks they are given) ---
    ufunc: Optional[str] = None     # numpy ufunc computing it (takes out=): fused numpy blocks, np.<ufunc>(tensor)
    # a composite elementwise op as numpy ufunc steps over x ("y": the running value, numbers are
    # constants); its kernel, fused blocks and C code all come from this one formula
    expansion: Optional[tuple] = None
    # what an op that is no ufunc computes, named for the backends that spell it ("where",
    # "astype", "not"): their tables are keyed by it, or by `ufunc`, as by any fact
    primitive: Optional[str] = None
    commutative: bool = False       # op(x, y) == op(y, x) bit for bit: either operand may be reused
    fresh: bool = False             # result is a new array, never a view of an input (its buffer may be reused)
    # how the plan writes the result into a dead input's buffer (passes/buffer_reuse.py): "+=" etc.
    # (augmented assignment), "ufunc" (the op's ufunc with out=), "copyto" (Select, into input 2),
    # "store" (the kernel built with copy=False writes into input 0: SetItem)
    in_place: Optional[str] = None
    may_raise: bool = True          # some inputs make the kernel raise: never hoisted out of a loop
    # value_errors(node) -> True when running `node` can raise for its inputs' values, not only for
    # their shapes (int ** negative int, an index out of range); given, it decides `raises`
    value_errors: Optional[Callable] = None
    # algebraic facts (passes/algebraic.py): op(x, identity) is x (and op(identity, x) if commutative);
    # for floats the identity's sign matters (x + -0.0 is x, x + 0.0 is not for x = -0.0)
    identity: Optional[float] = None
    involution: bool = False        # op(op(x)) is x bit for bit (negation)
    # simplify(node) -> a tensor with the node's value, or None (cast to the same dtype, ...)
    simplify: Optional[Callable] = None
    # static_value(node) -> the node's value when the trace already knows it (a shape), or None
    static_value: Optional[Callable] = None
    # its kernel may compute otherwise where two operands are one array (numpy's matmul and dot call
    # BLAS's syrk for x @ x.T, gemm for two arrays): passes never make distinct operands one (cse.py)
    same_operands_matter: bool = False
    # view(node) -> True when numpy may give the result as a view of input 0 (an in-place
    # update of one then reaches the other; runtime/graph.py tracks it); None: never a view
    view: Optional[Callable] = None
    # a reduction: the elementwise op folding its elements (Sum: "Add"); native code folds in
    # numpy's order (runtime/native/render.py). `averages`: the fold is divided by the count (Mean)
    reduce_with: Optional[str] = None
    averages: bool = False
    reshapes: bool = False          # output holds input 0's elements in the same C order (Reshape)
    # how its kernel boxes a 0-d result: "array" (a 0-d array: xp.where), "input" (as input 0 is
    # boxed: astype keeps a numpy scalar or a 0-d array; a Python number becomes a 0-d array),
    # "scalar" (a numpy scalar whatever the inputs: np.dot), None: numpy's rule for ufuncs and
    # reductions (a numpy scalar), else as its kernel boxes examples
    box: Optional[str] = None
    _eager: dict = dataclasses.field(default_factory=dict, repr=False)

    @property
    def structural(self):
        """A node kind the graph itself makes (Placeholder, Const, Cond, While): no kernel."""
        return self.kernel is None

    def raises(self, node):
        """Whether running `node` can raise: as its `value_errors` says, else for an op that may
        raise, when a dim is known only at run time (with every shape known the trace checked them).
        Such a node is neither dropped when unused nor hoisted out of a loop: eager raises there."""
        if self.value_errors is not None:
            return bool(self.value_errors(node))
        if self.elementwise and broadcast_may_fail([t.shape for t in dict.fromkeys(node.inputs)]):
            return True
        return self.may_raise and any(d is None for t in (*node.inputs, *node.outputs) for d in t.shape)

    @property
    def inline(self):
        """Read-only view: the op's Python spelling in the plan, from the lowering's table
        (runtime/lowering.py `SPELLINGS`, else derived from the op's facts); None: a kernel call."""
        from .lowering import spelling
        return spelling(self)

    @property
    def c_expr(self):
        """Read-only view: the op's C rule, from the C renderer's table (runtime/native/cexpr.py
        `rule_for`: its own entry, else by its ufunc or primitive); None: none, or C from its
        expansion."""
        from .native.cexpr import rule_for
        return rule_for(self)

    @c_expr.setter
    def c_expr(self, rule):
        """Give an op its own C rule (an entry in cexpr.RULES), as a test's or a user's op may."""
        from .native.cexpr import RULES
        RULES[self] = rule

    def __repr__(self):
        return f"<OpDef {self.name}>"

    def eager_kernel(self, xp, attrs=None):
        """The kernel for `xp` and `attrs`, built once per distinct (hashable) attrs."""
        try:
            key = (xp, tuple(attrs.items())) if attrs else xp
            fn = self._eager.get(key)
        except TypeError:  # unhashable attrs (an index holding a list): build it each time
            return self.kernel(xp, **attrs)
        if fn is None:
            if len(self._eager) > 256:
                self._eager.clear()
            fn = self._eager[key] = self.kernel(xp, **(attrs or {}))
        return fn


REGISTRY = {}     # name -> OpDef of every op with a kernel (what `ops/` registers)
_STRUCTURAL = {}  # name -> OpDef of the four node kinds the graph makes itself (below)


def register(opdef):
    if opdef.name in REGISTRY or opdef.name in _STRUCTURAL:
        raise ValueError(f"op {opdef.name!r} is already registered")
    (_STRUCTURAL if opdef.structural else REGISTRY)[opdef.name] = opdef
    return opdef


def lookup(name):
    """The OpDef named `name` (any node kind); KeyError for an unknown op."""
    opdef = REGISTRY.get(name) or _STRUCTURAL.get(name)
    if opdef is None:
        raise KeyError(f"unknown op {name!r}: no kernel is registered under that name")
    return opdef


def find(name):
    """The OpDef named `name`, or None."""
    return REGISTRY.get(name) or _STRUCTURAL.get(name)


def all_ops():
    """Every node kind: the registered ops and the four structural ones."""
    return [*REGISTRY.values(), *_STRUCTURAL.values()]


# --- attribute schema -----------------------------------------------------------------------
# Every attr of a node has a type from this closed set, declared on its OpDef (`attrs`): a node
# holding anything else is refused when it is built (`check_attrs`). Saving, comparing and
# printing a graph need to know only these types (saving/format.py encodes each one).

class AttrType:
    """One type of the closed set: a leaf (`INT`, `DTYPE`, `GRAPH`, ...) or a combination of
    leaves (`TupleOf`, `Record`, `OptionalOf`, `OneOf`)."""

    def __init__(self, name, accepts):
        self.name, self._accepts = name, accepts

    def accepts(self, value):
        return self._accepts(value)

    def __repr__(self):
        return self.name


def _exact(*types):
    return lambda value: type(value) in types


def _is_graph(value):
    from .graph import Graph
    return type(value) is Graph


def _is_slot(value):
    from .graph import Slot
    return type(value) is Slot and type(value.k) is int and value.k >= 0


def _is_array(value):
    import numpy as np
    return (type(value) is np.ndarray or isinstance(value, np.generic)) and value.dtype.kind in "biufc"


def _is_dtype(value):
    import numpy as np
    return isinstance(value, np.dtype)


INT = AttrType("int", _exact(int))
FLOAT = AttrType("float", _exact(float))
BOOL = AttrType("bool", _exact(bool))
STR = AttrType("str", _exact(str))
NUMBER = AttrType("number", _exact(int, float))                 # a Python int or float
SCALAR = AttrType("scalar", _exact(bool, int, float, complex))  # a Python scalar (a weak constant)
DTYPE = AttrType("dtype", _is_dtype)
ARRAY = AttrType("array", _is_array)                            # a numeric numpy array or scalar (a constant)
GRAPH = AttrType("graph", _is_graph)                            # a sub-graph (Cond branches, While body)
SLOT = AttrType("slot", _is_slot)                               # the k-th input of the node
ELLIPSIS = AttrType("ellipsis", lambda value: value is Ellipsis)
# where a print writes: a stream object (only sys.stdout / sys.stderr can be saved)
STREAM = AttrType("stream", lambda value: callable(getattr(value, "write", None)))


def _is_generator(value):
    from .devices import generator_device
    return generator_device(value) is not None


# an object held by reference, used when the graph runs (not copied, compared or folded): a
# random generator, which each run advances (only numpy's global RandomState can be saved)
REFERENCE = AttrType("reference", _is_generator)


# a loop a node runs as Python when the graph runs (operators/python_loops.py `PythonLoop`): its
# converted code, held by reference (never saved, exported or written as C)
PYTHON_CODE = AttrType("python code", lambda value: callable(getattr(value, "run", None)))


def _is_scalar_type(value):
    import numpy as np
    return isinstance(value, type) and (value in (bool, int, float, complex) or issubclass(value, np.generic))


SCALAR_TYPE = AttrType("scalar type", _is_scalar_type)  # `dtype=int` as given (not as np.dtype(int))


class TupleOf(AttrType):
    """A tuple of any length whose items all have type `item`."""

    def __init__(self, item):
        super().__init__(f"tuple[{item!r}, ...]", None)
        self.item = item

    def accepts(self, value):
        return type(value) is tuple and all(self.item.accepts(v) for v in value)


class Record(AttrType):
    """A tuple of fixed length whose i-th item has type `fields[i]`."""

    def __init__(self, *fields):
        super().__init__(f"tuple[{', '.join(map(repr, fields))}]", None)
        self.fields = fields

    def accepts(self, value):
        return type(value) is tuple and len(value) == len(self.fields) and all(
            f.accepts(v) for f, v in zip(self.fields, value))


class OneOf(AttrType):
    """A value of any of `options`."""

    def __init__(self, *options):
        super().__init__(" | ".join(map(repr, options)), None)
        self.options = options

    def accepts(self, value):
        return any(o.accepts(value) for o in self.options)


class OptionalOf(OneOf):
    """None or a value of type `item`."""

    def __init__(self, item):
        super().__init__(item, NONE)
        self.item = item


NONE = AttrType("None", lambda value: value is None)


def _slice_bound(value):
    return value is None or type(value) is int or _is_slot(value)


SLICE = AttrType("slice", lambda value: type(value) is slice and all(
    _slice_bound(b) for b in (value.start, value.stop, value.step)))
SHAPE = TupleOf(OptionalOf(INT))                          # dims, None where unknown until run time
AXES = OptionalOf(OneOf(INT, TupleOf(INT)))               # numpy's axis=: one, several, or None (all)
INDEX = TupleOf(OneOf(INT, NONE, ELLIPSIS, SLOT, SLICE))  # x[...]: tensor parts are Slots
# formatted text whose values come when the node runs: text, or (slot, conversion, format spec)
PIECES = TupleOf(OneOf(STR, Record(SLOT, OptionalOf(STR), STR)))
TEMPLATE = TupleOf(OneOf(STR, SLOT, PIECES))              # a print's arguments


class _CallValue(AttrType):
    """A Python argument of a call a node makes when it runs: a scalar, str, None, dtype, scalar
    type, array, Slot (the node's k-th input) or a tuple of these."""

    _LEAVES = (SCALAR, STR, NONE, DTYPE, SCALAR_TYPE, ARRAY, SLOT)

    def __init__(self):
        super().__init__("call value", None)

    def accepts(self, value):
        if type(value) is tuple:
            return all(self.accepts(v) for v in value)
        return any(leaf.accepts(value) for leaf in self._LEAVES)


CALL_VALUE = _CallValue()
CALL_ARGS = TupleOf(CALL_VALUE)                     # positional arguments
CALL_KWARGS = TupleOf(Record(STR, CALL_VALUE))      # keyword arguments as (name, value) pairs

# --- the node kinds the graph makes itself ---------------------------------------------------
# No kernel: each interpreter (runtime/interpreter.py, lowering.py, native/render.py, ops/gradients.py,
# export/onnx.py, saving/graphs.py) has its rule for them in its own table, as for any op.
PLACEHOLDER = register(OpDef("Placeholder", None, None, attrs={"argument": STR, "outside": STR}, may_raise=False))
CONST = register(OpDef("Const", None, None, attrs={"value": OneOf(SCALAR, ARRAY)}, may_raise=False))
COND = register(OpDef("Cond", None, None, attrs={"then_branch": GRAPH, "else_branch": GRAPH}))
WHILE = register(OpDef("While", None, None, attrs={"cond": GRAPH, "body": GRAPH}))
CONTROL_FLOW = (COND, WHILE)  # the node kinds holding sub-graphs
LEAVES = (PLACEHOLDER, CONST)  # the node kinds with no inputs whose value the graph is given

# name -> attr schema of the structural node kinds (derived; the saved format and tests read it)
STRUCTURAL = {op.name: op.attrs for op in _STRUCTURAL.values()}


class AttrError(TypeError):
    """A node was built with an attr its op does not declare, or of another type (a bug in the
    code building it, not in the user's)."""


def attr_schema(op):
    """The declared attrs of op `op` (name -> AttrType); KeyError for an unknown op."""
    return lookup(op).attrs


def always(node):
    """`value_errors` of an op whose inputs' values can always make it raise (a Gather's indices)."""
    return True


def check_attrs(op, attrs, node=None, location=None):
    """Raise AttrError unless every attr in `attrs` is declared by `op` (an OpDef or a name) with
    the value's type; returns the OpDef."""
    opdef = op if isinstance(op, OpDef) else find(op)
    if opdef is None:
        raise AttrError(f"a node of unknown op {op!r} was built{_where(node, location)}: no op "
                        f"is registered under that name")
    op, schema = opdef.name, opdef.attrs
    for name, value in attrs.items():
        kind = schema.get(name)
        if kind is None:
            raise AttrError(f"op {op} has no attr {name!r} (it declares {sorted(schema) or 'none'})"
                            f"{_where(node, location)}")
        if not kind.accepts(value):
            raise AttrError(f"attr {name!r} of op {op} must be {kind!r}, got {type(value).__name__} "
                            f"{_short(value)}{_where(node, location)}")
    return opdef


def _where(node, location):
    return f" (node '{node}' created at {location})" if node else ""


def _short(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
