"""The C-style renderer: a region of a graph (nodes, nested Cond and While) written as the
statements of one function, in any dialect (`language.py`), with numpy's semantics.

Every value has a static shape, but for the dims of a slice whose bounds are computed
(`A[i, :j]` in a loop): such a dim is a `Dim`, a C local holding its length. A 0-d value is a C
local (`float v3`); an array is a local array (`float v4[10]`, sized for a Dim's largest value),
or a pointer into an argument for a captured input or a view.
An elementwise node becomes a loop over its output, each operand read at the element it
broadcasts to, the element's expression the op's C rule (cexpr.py's table); a reduction is a loop
in the order numpy reduces (pairwise sums as numpy's, so results are bit for bit numpy's);
`Cond` becomes `if`, `While` becomes `for (;;)`. A node the renderer cannot write raises
`Unsupported` naming it, and the caller keeps the numpy path for the whole region.

Values of Python scalars (weak) follow Python's rules, not C's: where C would differ (an
int outgrowing int64, a division by zero that raises) the function jumps to `ag_inexact`
and the caller reruns the region in Python from its start (loops.py says how).
"""
import collections
import itertools
import math
import types

import numpy as np

from ...recursion import iterate
from ..boxes import ARRAY, box_of
from ..fp_errors import scalar_math
from ..graph import Slot
from ..opdef import COND, CONST, PLACEHOLDER, REGISTRY, WHILE
from . import cexpr
from .language import Unsupported
from .numpy_loops import LOOP_TYPEDEF

# a value in the function: `expr` names a scalar local, or the start of an array's elements
# (`base`: the array it points into, so a write to that array is known to reach it). `strides`:
# the element step per dim of a view (a transpose, a slice, a column, a broadcast), None where
# the elements lie C-contiguous. `layout`: None where eager numpy's array has this memory
# layout; "c" where eager's is a fresh C-contiguous array read here through a broadcast view;
# "unknown" where eager's may be laid out otherwise (an elementwise result of a transposed
# operand: numpy allocates it in its operands' order). Ops whose result depends on the order
# memory is read in (numpy's reductions, its matmul) take only values laid out as eager's.
# `python`: for a scalar whose box eager decides on the path (a loop variable that is a Python
# float or a numpy float64 by the path that set it, `loops.tracked_boxes`; a Cond's output whose
# branches box it differently), a C int expression, nonzero while eager holds a Python number
# there (the dtype the same); None: the box is `weak`'s.
# `origin`: for a 0-d value that may be an argument of the native call as it came (eager passes
# the object on: `out is arg`), a C int expression: the argument's index while it holds it, -1 once
# an op computed it (loops.source tracks it per loop variable); None: never an argument's object
Val = collections.namedtuple("Val", "expr dtype weak shape base strides layout python origin",
                             defaults=((), None, None, None, None, None))
# a large array not computed yet: `element(indices)` is the C expression of its element at one C
# index expression per dim; `reads`: the arrays it reads (a store into one must wait for its uses).
# An elementwise op or a slice too large for a local is one; its consumer computes it where it
# needs it (a store's loop, another such op), or writes it into a buffer (`materialize`)
Lazy = collections.namedtuple("Lazy", "element dtype weak shape reads expr base strides layout",
                              defaults=(None, None, None, None))

# a Cond's or loop's variable larger than this stays on numpy; a larger result of an op is computed
# where it is read (`Lazy`), or kept in the heap (a straight-line graph's) or `ag_scratch` (a loop's)
MAX_ELEMENTS = 1 << 14
MAX_LOCAL_BYTES = 1 << 18  # stack bytes of local arrays per function (threads have small stacks)
MAX_LAZY_TEXT = 4000       # characters of a Lazy value's element expression (reads repeat it)
MAX_SCRATCH_BYTES = 1 << 26  # heap bytes of a function's arrays in `ag_scratch` (`Renderer.scratch`)
_EXACT_DOUBLE = "9007199254740992"   # 2**53: ints up to it are exact as doubles
_MATMUL = "(n?,k),(k,m?)->(n?,m?)"   # numpy's matmul signature: its loop takes (count, n, k, m)


class Dim(str):
    """A length known only at run time (a slice whose bounds are computed: `A[i, :j]`): the C
    expression of the int64 local holding it. `bound`: the most it can be (the length of the axis
    it was sliced from), which sizes storage and work budgets. Two Dims of the same expression are
    the same length; Dims of different expressions are checked equal at run time where numpy needs
    them equal (`Renderer.broadcast`): where they differ the Python path runs."""

    def __new__(cls, expr, bound):
        dim = super().__new__(cls, expr)
        dim.bound = bound
        return dim


def bound_of(n):
    """The most a dim can be: itself if static, a Dim's bound."""
    return n.bound if isinstance(n, Dim) else n


def size_of(shape):
    """The most elements an array of `shape` holds (its size if every dim is static)."""
    return math.prod(bound_of(n) for n in shape)


def count_of(shape):
    """The number of elements of an array of `shape`: an int if static, else a C expression."""
    return _product(shape, 1)


def _product(factors, start):
    """The product of ints and C expressions: an int while all are ints."""
    static = math.prod(n for n in factors if not isinstance(n, str)) * start
    dynamic = [n for n in factors if isinstance(n, str)]
    return " * ".join(([str(static)] if static != 1 else []) + dynamic) if dynamic and static else static


def strides_of(shape):
    """Element strides of a C-contiguous array of `shape` (C expressions past a run-time dim)."""
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step = _product([d, step], 1)
    return tuple(reversed(strides))


def _static_shape(t, local=True):
    """`t`'s shape, static; for a `local` value (not an argument read in place) a small one."""
    shape = t.shape
    if shape is None or any(d is None for d in shape):
        raise Unsupported(f"a value of dynamic shape ({t.name})")
    if local and size_of(shape) > MAX_ELEMENTS:
        raise Unsupported(f"a value of {size_of(shape)} elements ({t.name}): large arrays run on numpy")
    return tuple(shape)


class Renderer:
    """Writes graph nodes as statements into `lines`; `emitter` writes their expressions."""

    def __init__(self, emitter):
        self.emitter, self.language = emitter, emitter.language
        self.lines, self.counter = [], itertools.count()
        self.inexact = False   # some result may be one Python computes differently: `ag_inexact`
        self.origin_lost = False  # a value that may be an argument's object reached code that does not track it
        self.local_bytes = 0
        self.numpy_loops = []  # (ufunc, dtypes) of the numpy inner loops called: ag_fn[j], ag_data[j]
        self.work = 0          # elements computed per pass over the nodes written (for budgets)
        self.declared = []     # the names of the local arrays declared, in order
        self.heap = None       # a list where large arrays may live on the heap (graphs.py), else None
        # bytes of `ag_scratch`, the heap block the function allocates once at its start, in which an
        # array too large for its locals has its room: one of run-time length (a gather a dot reads) its
        # bound's, one in a loop's body or a branch the same room on every run of it
        self.scratch = 0
        # a straight-line function's arrays no later node reads, by C type: [(elements, name)], which a
        # later array of up to that size takes over (an unrolled loop's steps reuse a few buffers)
        self.dead = collections.defaultdict(list)
        self.sizes = {}        # name -> (C type, elements) of the arrays declared at the top level
        self.homes = {}        # id(matmul result) -> the output buffer it is made in (graphs.py: `homes`)
        # the arrays read where the order of eager's memory decides the result (a product's BLAS call,
        # a float reduction's order): an input among them must come C-contiguous, as the C reads it;
        # `ordered_layout`: those an array so read was computed from element by element, which must come
        # with their axes in C order (eager's result is then C-contiguous, as the C's) (graphs.py,
        # loops.py: `exact`; an argument in another layout runs the Python code)
        self.exact_layout, self.ordered_layout = set(), set()
        self.derived = {}      # an array computed here -> the arrays its layout follows (eager's elementwise ops)
        self.scopes = []       # per graph being written, innermost last: a _Scope

    # --- locals ------------------------------------------------------------------------

    def name(self):
        return f"v{next(self.counter)}"

    def emit(self, text, indent):
        self.lines.append("    " * indent + text)

    def local(self, t, indent, expr=None):
        """A local for tensor `t`: a scalar (set to `expr` if given) or an array."""
        return self.declare(np.dtype(t.dtype), t.weak, _static_shape(t), indent, expr)

    def materialize(self, value, indent):
        """`value` as an array in memory: a Lazy one written into a new buffer (a view is one)."""
        if not isinstance(value, Lazy):
            return value
        out = self.declare(value.dtype, value.weak, value.shape, indent)
        self.elementwise_loop(out, [value], lambda v: v[0].expr, indent)
        self.derived[out.base] = _sources(value)
        return out._replace(layout=value.layout)

    def exact(self, value):
        """Note that `value` is read as eager lays it out: so are the arrays it was computed from
        element by element (numpy lays an elementwise result out in its operands' order)."""
        if isinstance(value, Lazy):
            stack = list(_sources(value))
        else:
            self.exact_layout.update(_sources(value))
            stack = list(self.derived.get(value.base, ()))
        while stack:
            base = stack.pop()
            if base not in self.ordered_layout:
                self.ordered_layout.add(base)
                stack.extend(self.derived.get(base, ()))

    def packed(self, value, indent):
        """`value` as C-contiguous elements: a Lazy value or a view copied into a new buffer. The
        copy of a view is not laid out as eager's array (a reduction would read it in another
        order), except where eager's is a fresh C array read here through a broadcast."""
        if not isinstance(value, Lazy) and contiguous(value):
            return value
        out = self.declare(value.dtype, value.weak, value.shape, indent)
        self.elementwise_loop(out, [value], lambda v: v[0].expr, indent)
        self.derived[out.base] = _sources(value)
        view = not isinstance(value, Lazy) and value.layout != "c"
        return out._replace(layout="unknown" if view or value.layout == "unknown" else None)

    def declare(self, dtype, weak, shape, indent, expr=None):
        name, t_c = self.name(), self.language.type(dtype)
        if shape == ():
            self.emit(f"{t_c} {name}{f' = {expr}' if expr is not None else ''};", indent)
            return Val(name, dtype, weak)
        if size_of(shape) == 0:
            raise Unsupported("an empty array")
        spare = [d for d in self.dead[t_c] if d[0] >= size_of(shape)] if indent == 1 else ()
        if spare:
            size, reused = min(spare)
            self.dead[t_c].remove((size, reused))
            self.declared.append(reused)
            return Val(reused, dtype, weak, shape, reused)
        if size_of(shape) > MAX_ELEMENTS or self.local_bytes + size_of(shape) * dtype.itemsize > MAX_LOCAL_BYTES:
            if self.heap is None or indent != 1:
                return self.scratch_buffer(name, t_c, dtype, weak, shape, indent)
            # a straight-line function's large array: allocated here, freed at every return
            self.heap.append((name, t_c))
            self.sizes[name] = (t_c, size_of(shape))
            self.emit(f"{name} = ({t_c}*)malloc({size_of(shape)} * sizeof({t_c}));", indent)
            self.emit(f"if (!{name}) goto ag_inexact;", indent)  # the Python plan raises numpy's MemoryError
            self.inexact = True
            self.declared.append(name)
            return Val(name, dtype, weak, shape, name)
        self.local_bytes += size_of(shape) * dtype.itemsize
        if indent == 1:
            self.sizes[name] = (t_c, size_of(shape))
        self.emit(f"{t_c} {name}[{size_of(shape)}];", indent)
        self.declared.append(name)
        return Val(name, dtype, weak, shape, name)

    def scratch_buffer(self, name, t_c, dtype, weak, shape, indent):
        """An array in `ag_scratch`, room for its size (run-time length: its bound); a loop body's is the
        same room on every iteration, as a local array's would be."""
        at, self.scratch = self.scratch, self.scratch + -(-size_of(shape) * dtype.itemsize // 64) * 64
        if self.scratch > MAX_SCRATCH_BYTES:
            raise Unsupported(f"arrays of {self.scratch} bytes in all in the heap block: more than {MAX_SCRATCH_BYTES}")
        self.emit(f"{t_c}* {name} = ({t_c}*)(ag_scratch + {at});", indent)
        self.declared.append(name)
        return Val(name, dtype, weak, shape, name)

    def prologue(self):
        """The lines that start the function: `ag_scratch` allocated (NULL if no array needs it)."""
        if not self.scratch:
            return ["    char* ag_scratch = NULL;"]
        self.inexact = True  # no memory: the Python path runs, and raises numpy's MemoryError if it must
        return [f"    char* ag_scratch = (char*)malloc({self.scratch});", "    if (!ag_scratch) goto ag_inexact;"]

    @staticmethod
    def release():
        """The statement that frees what `prologue` allocated, before each return."""
        return "free(ag_scratch);"

    def worked(self, count, indent):
        """Count `count` elements computed toward the budget: a static count once per pass over the
        nodes (`work`), a run-time one (a C expression of Dims) where it is computed."""
        if isinstance(count, str):
            self.emit(f"ag_budget -= {count};", indent)
        else:
            self.work += count

    def copy(self, target, value, indent):
        """target = value (same shape; the value cast to the target's dtype)."""
        if target.shape == ():
            self.emit(f"{target.expr} = {self.emitter.cast(_scalar(value), target.dtype)};", indent)
            return
        self.elementwise_loop(target, [value], lambda v: self.emitter.cast(v[0], target.dtype), indent)

    # --- elements ----------------------------------------------------------------------

    def elementwise_loop(self, out, operands, element, indent):
        """out[...] = element(operand elements) over out's shape, operands broadcast to it."""
        self.worked(count_of(out.shape), indent)
        pad = indent
        if contiguous(out) and all(v.shape == () or (v.shape == out.shape and not isinstance(v, Lazy) and
                                                     contiguous(v)) for v in operands):
            self.emit(f"for (int64_t k = 0; k < {count_of(out.shape)}; k++) {{", pad)
            index = {id(v): "k" for v in operands}
            flat = "k"
        else:
            names = [f"i{d}" for d in range(len(out.shape))]
            for d, (i, n) in enumerate(zip(names, out.shape)):
                self.emit("    " * d + f"for (int64_t {i} = 0; {i} < {n}; {i}++) {{", pad)
            index = {id(v): _broadcast_names(v.shape, out.shape, names) if isinstance(v, Lazy) else
                     _broadcast_index(v.shape, out.shape, names, v.strides) for v in operands}
            flat = _broadcast_index(out.shape, out.shape, names, out.strides)
        depth = 1 if flat == "k" else len(out.shape)
        values = [cexpr.Value(v.element(index[id(v)]), v.dtype, v.weak) if isinstance(v, Lazy) else _at(v, index[id(v)])
                  for v in operands]
        self.emit("    " * depth + f"{out.expr}[{flat}] = {element(values)};", pad)
        for d in reversed(range(depth)):
            self.emit("    " * d + "}", pad)

    # --- nodes -------------------------------------------------------------------------

    def graph(self, graph, inputs, indent, owned=()):
        """Write `graph`'s nodes with `inputs` bound to its placeholders; its outputs' Vals.
        `owned`: the positions of inputs whose arrays the graph may write in place (a loop
        variable's buffer: its value at the start of the iteration is not read again)."""
        return iterate(self.walk(graph, inputs, indent, owned))

    def walk(self, graph, inputs, indent, owned=()):
        """`graph` as a walk for `iterate`: it yields the walks of the Conds' branches in it (an
        `elif` chain nests them 1,000 deep)."""
        values = {id(t): v for t, v in zip(graph.inputs, inputs)}
        scope = _Scope(graph, values, {inputs[k].base for k in owned if inputs[k].shape != ()})
        self.scopes.append(scope)
        for scope.position, node in enumerate(graph.nodes):
            if self.heap is not None and indent == 1:
                self.reclaim(scope)
            ins = [values[id(t)] for t in node.inputs]
            if not _takes_lazy(node):
                ins = [self.materialize(v, indent) for v in ins]
            mark = len(self.declared)
            outs = self.node(node, ins, indent)
            if isinstance(outs, types.GeneratorType):  # a Cond: its branches are walks
                outs = yield outs
            if node.opdef is not COND and any(getattr(v, "python", None) for v in ins):
                outs = self.tracked_box(node, ins, outs, indent)
            if node.opdef is not COND and node.opdef is not WHILE:  # an op's result is a new object
                outs = [v._replace(origin=None) if getattr(v, "origin", None) else v for v in outs]
            # a Lazy value read twice is computed twice: one read by several ops is written once
            outs = [self.materialize(v, indent) if isinstance(v, Lazy) and (
                self.heap is not None or len(v.element(["i"] * len(v.shape))) > MAX_LAZY_TEXT) and (
                len(t.users) + sum(o is t for o in graph.outputs) > 1) else v for t, v in zip(node.outputs, outs)]
            scope.owned.update(self.declared[mark:])  # arrays this graph made: its own to write
            values.update((id(t), v) for t, v in zip(node.outputs, outs))
            scope.hold(zip(node.outputs, outs))
        self.scopes.pop()
        return [values[id(t)] for t in graph.outputs]

    def reclaim(self, scope):
        """Put the top-level arrays this graph made that no node from here on reads among the dead."""
        for name in list(scope.owned):
            if scope.read_until.get(name, -1) < scope.position and name in self.sizes:
                scope.owned.discard(name)
                self.dead[self.sizes[name][0]].append((self.sizes[name][1], name))

    def writable(self, t, value, read_first=()):
        """True if the current node may write tensor `t`'s array (Val `value`) in place: the
        array is owned by the graph being written (made in it, or a loop variable's buffer),
        and neither `t` nor anything else holding that array (a view, a reshape, another
        name) is read after the current node or returned, nor is another of the node's operands
        (`t` twice is one; `read_first`: operands the node reads whole before it writes)."""
        scope = self.scopes[-1]
        if value.shape == () or value.base is None or value.base not in scope.owned:
            return False
        skip = {id(i) for i in read_first}
        return scope.read_until.get(value.base, -1) <= scope.position and len(
            {id(i) for i in scope.graph.nodes[scope.position].inputs
             if id(i) not in skip and scope.values[id(i)].base == value.base}) == 1

    def node(self, node, ins, indent):
        if node.op == "CheckFits":
            # a Python int numpy would refuse for an array dtype (NEP 50): the Python path
            # runs instead and raises OverflowError where eager does
            info = np.iinfo(node.attrs["dtype"])
            (value,) = ins
            self.bail(f"{value.expr} < {int(info.min)}LL || {value.expr} > {int(info.max)}LL", indent)
            return []
        if node.op == "CheckShape":
            # `x op= y` whose result has another shape than x at run time: numpy raises, the Python path too
            new, x = ins
            for n, m in zip(new.shape, x.shape):
                if n != m:
                    self.bail(f"{n} != {m}", indent)
            return []
        if node.opdef.in_place == "store":  # x[index] = value (SetItem)
            return self.set_item(node, ins, indent)
        view = VIEWS.get(node.opdef.primitive) or (Renderer.fused if node.op == "FusedElementwise" else None)
        if view is not None:
            return view(self, node, ins, indent)
        rule = RULES.get(node.opdef)
        if rule is not None:
            return rule(self, node, ins, indent)
        if len(node.outputs) != 1:
            raise Unsupported(f"{node.op} with {len(node.outputs)} outputs")
        out = node.outputs[0]
        if node.opdef.reduce_with:
            return [self.reduction(node, ins, out, indent)]
        if node.opdef.reshapes:
            return [self.reshape(ins[0], out, indent)]
        if node.op == "StridedSlice":
            return [self.subscript(node, ins, out, indent)]
        if node.opdef.primitive == "dot":
            return self.dot(node, ins, indent)
        if node.opdef.ufunc and getattr(np, node.opdef.ufunc).signature == _MATMUL:
            return [self.numpy_matmul(node.opdef.ufunc, ins, np.dtype(out.dtype), _static_shape(out, local=False), indent,
                                      self.homes.get(id(out)))]
        if node.opdef.elementwise or cexpr.rule_for(node.opdef) is not None or node.opdef.expansion is not None:
            shape = self.result_shape(out, ins, indent)
            if shape == () and not out.weak and np.dtype(out.dtype).kind in "iu" and scalar_math(node):
                checked = self.numpy_scalar_op(node.op, ins, np.dtype(out.dtype), indent)
                if checked is not None:
                    return [checked]
            return [self.apply(node.op, ins, np.dtype(out.dtype), out.weak, shape, indent,
                               self.operand_to_write(node, ins, out, shape))]
        raise Unsupported(f"{node.op} (node '{node.name}') has no C form in a native region")

    def operand_to_write(self, node, ins, out, shape):
        """An operand of elementwise `node` whose array its result may be computed in, element by
        element (each read before it is written): one of the result's shape and dtype, contiguous
        in C order, that nothing reads after the node (`writable`): a loop variable's buffer its body
        gives the next value of (W2b's `state = np.where(..., state, updated)` copied the result
        back every step). None if there is none."""
        if shape == () or any(isinstance(n, Dim) for n in shape) or size_of(shape) > MAX_ELEMENTS:
            return None  # (a larger result is Lazy: computed where it is read, in no buffer)
        for t, v in zip(node.inputs, ins):
            if isinstance(v, Val) and v.shape == shape and v.dtype == np.dtype(out.dtype) and contiguous(v) \
                    and v.layout is None and self.writable(t, v):
                return v._replace(weak=out.weak)
        return None

    def known_shape(self, t, computed, indent):
        """The shape of `t` where the renderer `computed` one for it: the graph's static dims (a
        run-time length there must be it, else the Python path runs), the computed ones elsewhere."""
        if t.shape is None or len(t.shape) != len(computed) or any(
                d is not None and not isinstance(c, Dim) and c != d for d, c in zip(t.shape, computed)):
            raise Unsupported(f"a value of shape {computed} where the graph has {t.shape} ({t.name})")
        for d, c in zip(t.shape, computed):
            if d is not None and isinstance(c, Dim):
                self.bail(f"{c} != {d}", indent)
        return tuple(c if d is None else d for d, c in zip(t.shape, computed))

    def result_shape(self, out, ins, indent):
        """The shape of elementwise result `out` of operands `ins`: the graph's, static, unless an
        operand's length is known only at run time; then numpy's broadcast of theirs."""
        if not _run_time(ins):
            return _static_shape(out, local=False)
        return self.known_shape(out, self.broadcast([v.shape for v in ins], indent), indent)

    def broadcast(self, shapes, indent):
        """numpy's broadcast of `shapes`. A run-time length (Dim) must be the length of that axis
        in the others at run time: where it is not (a Dim of 1 numpy stretches, or lengths numpy
        refuses) the Python path runs, and broadcasts or raises as numpy does."""
        ndim = max(map(len, shapes), default=0)
        result = []
        for d in range(ndim):
            dims = [shape[d - ndim + len(shape)] for shape in shapes if d - ndim + len(shape) >= 0]
            static = {n for n in dims if not isinstance(n, Dim) and n != 1}
            if len(static) > 1:
                raise Unsupported(f"operands of shapes {shapes}")  # numpy raised at the trace
            dynamic = list(dict.fromkeys(n for n in dims if isinstance(n, Dim)))
            length = static.pop() if static else dynamic[0] if dynamic else 1
            for n in dynamic:
                if n != length:
                    self.bail(f"{n} != {length}", indent)
            result.append(length)
        return tuple(result)

    def apply(self, op, ins, dtype, weak, shape, indent, home=None):
        """The Val of elementwise op `op` over `ins`, of `dtype` and `shape` (computed in `home`, an
        operand's buffer, if given and the op is one C loop)."""
        if shape == () and weak:
            return self.weak_op(op, ins, dtype, indent)
        # numpy lays its result out in its operands' order: C unless an operand is transposed
        layout = None if all(c_ordered(v) for v in ins if v.shape != ()) else "unknown"
        result = self._apply(op, ins, dtype, weak, shape, indent, home)._replace(layout=layout)
        if not isinstance(result, Lazy) and result.base is not None:
            sources = frozenset().union(*map(_sources, ins))
            if home is not None:  # computed in an operand's buffer: what that was computed from too
                sources = (sources - {result.base}) | self.derived.get(result.base, frozenset())
            self.derived[result.base] = sources
        return result

    def _apply(self, op, ins, dtype, weak, shape, indent, home=None):
        if cexpr.needs_numpy_loop(op):
            ins = [self.packed(v, indent) for v in ins]
            opdef = REGISTRY[op]
            if opdef.expansion is None:
                return self.numpy_loop(opdef.ufunc, ins, dtype, shape, indent)
            (x,) = ins
            y = None
            for ufunc, args in opdef.expansion:  # the steps numpy's kernel runs, one by one
                operands = [x if a == "x" else y if a == "y" else Val(cexpr.literal(a, dtype), dtype, True)
                            for a in args]
                y = self._apply(cexpr._op_of_ufunc(ufunc), operands, dtype, False, shape, indent)
            return y
        if shape == ():
            return self.declare(dtype, weak, (), indent, self.emitter.op(op, [_scalar(v) for v in ins], dtype))
        if size_of(shape) > MAX_ELEMENTS or any(isinstance(v, Lazy) for v in ins) or any(
                isinstance(n, Dim) for n in shape):  # computed where it is used
            self.emitter.op(op, [cexpr.Value("0", v.dtype, v.weak) for v in ins], dtype)  # Unsupported now, not there

            def element(names):
                return self.emitter.op(op, [_element(v, shape, names) for v in ins], dtype)
            reads = frozenset().union(*((v.reads if isinstance(v, Lazy) else {v.base}) for v in ins if v.shape != ()))
            if len(element(["i"] * len(shape))) > MAX_LAZY_TEXT:
                raise Unsupported(f"an expression of {op} too long to repeat where it is read")
            return Lazy(element, dtype, weak, shape, reads - {None})
        result = home if home is not None else self.declare(dtype, weak, shape, indent)
        self.elementwise_loop(result, ins, lambda v: self.emitter.op(op, v, dtype), indent)
        return result

    def numpy_matmul(self, ufunc, ins, dtype, shape, indent, home=None):
        """a @ b of two matrices through numpy's own matmul loop (its BLAS call for floats), as
        eager numpy calls it: once, over operands laid out as eager's (a transpose as a view: the
        loop picks BLAS's transposed form from its strides), so the result is numpy's. `home`: an
        output buffer to make it in (the output an elementwise op computes from it, element by element)."""
        a, b = ins
        if len(a.shape) == 1 and len(b.shape) == 1 and shape == ():
            return self.numpy_dot(ufunc, a, b, dtype, indent)
        if len(a.shape) != 2 or len(b.shape) != 2 or a.dtype != dtype or b.dtype != dtype or dtype.kind not in "iuf":
            raise Unsupported(f"{ufunc} of {a.shape} and {b.shape} ({a.dtype}, {b.dtype})")
        if size_of(a.shape) == 0 or size_of(b.shape) == 0:
            raise Unsupported(f"{ufunc} of an empty array")
        a, b = (self.as_eager(v, f"{ufunc}'s operand", indent) for v in (a, b))
        return self.matmul_loop(a, b, dtype, shape, indent, home)

    def matmul_loop(self, a, b, dtype, shape, indent, home=None):
        """numpy's matmul loop over matrices a and b as they lie in memory."""
        (m, k), (other, p) = a.shape, b.shape
        # a run-time length: the output's shape is the graph's, static; numpy raises where they differ
        for length, expected in ((m, shape[0]), (k, other), (p, shape[1])):
            if length != expected:
                self.bail(f"{length} != {expected}", indent)
        m, p = shape
        size = dtype.itemsize
        result = Val(home, dtype, False, shape, home) if home else self.declare(dtype, False, shape, indent)
        (a0, a1), (b0, b1) = a.strides or strides_of(a.shape), b.strides or strides_of(b.shape)
        # gufunc arguments: dims (outer count, m, k, p); steps: outer strides, then the core strides
        steps = [0, 0, 0, *(_product([s, size], 1) for s in (a0, a1, b0, b1)), p * size, size]
        self.call_numpy_loop("matmul", 2, [a.expr, b.expr, result.expr], [1, m, k, p], steps, dtype, indent)
        self.worked(_product([m, k, p], 1), indent)
        return result

    def numpy_dot(self, ufunc, a, b, dtype, indent):
        """a @ b of two vectors through numpy's matmul loop as a (1, k) @ (k, 1): it calls numpy's
        dot of the dtype (BLAS's for floats, with the vectors' strides; 0 for empty ones), as eager
        numpy does. The lengths may be known only at run time."""
        a, b = self.vector_operands(ufunc, a, b, dtype, indent)
        result = self.declare(dtype, False, (), indent)
        self.dot_loop(a, b, result, indent)
        return result

    def vector_operands(self, what, a, b, dtype, indent):
        """Vectors a and b of a product, laid out as eager's, their lengths checked equal."""
        if a.dtype != dtype or b.dtype != dtype or dtype.kind not in "iuf":
            raise Unsupported(f"{what} of {a.dtype} and {b.dtype} vectors")
        (k,), (other,) = a.shape, b.shape
        if not isinstance(k, Dim) and not isinstance(other, Dim) and k != other:
            raise Unsupported(f"{what} of vectors of shapes {a.shape} and {b.shape}")  # numpy raised at the trace
        if k != other:
            self.bail(f"{k} != {other}", indent)  # numpy raises (no broadcast in a product): the Python path does
        return [self.as_eager(v, f"{what}'s operand", indent) for v in (a, b)]

    def dot_loop(self, a, b, result, indent):
        """result = numpy's dot of the dtype over vectors a and b with their strides, through
        its matmul loop as a (1, k) @ (k, 1) (0 for empty ones)."""
        (k,), size = a.shape, result.dtype.itemsize
        (_, a_step), (_, b_step) = one_dim(a), one_dim(b)
        steps = [0, 0, 0, 0, _product([a_step, size], 1), _product([b_step, size], 1), 0, 0, 0]
        self.call_numpy_loop("matmul", 2, [a.expr, b.expr, f"&{result.expr}"], [1, 1, k, 1], steps, result.dtype,
                             indent)
        self.worked(k, indent)

    def dot(self, node, ins, indent):
        """np.dot of two vectors or two matrices as numpy's dot computes it (`cblas_matrixproduct`,
        for floats): an operand whose strides BLAS cannot take (one negative, or 0 along an axis
        longer than 1: a flip, a broadcast) copied first, one-element vectors multiplied, a matrix
        neither C- nor F-contiguous copied too; then the BLAS call numpy's dot makes, through
        numpy's matmul loop (its dot for vectors, gemm or syrk for matrices: on such operands
        matmul's loop chooses as dot does). Integers sum exactly in any order. Other ranks, and
        float matrices with an axis of one (numpy's dot takes its scalar and vector paths there),
        stay numpy."""
        (out,) = node.outputs
        a, b = ins
        dtype = np.dtype(out.dtype)
        floats = dtype.kind == "f"
        if len(a.shape) == 1 and len(b.shape) == 1:
            a, b = (self.blas_strides(v, floats, indent) for v in self.vector_operands("np.dot", a, b, dtype, indent))
            result = self.declare(dtype, False, (), indent)
            (k,) = a.shape
            if not floats or not isinstance(k, Dim) and k != 1:
                self.dot_loop(a, b, result, indent)
            elif k == 1:
                self.emit(f"{result.expr} = {a.expr}[0] * {b.expr}[0];", indent)
            else:  # one-element vectors are numpy's scalars: their product, not BLAS's sum onto 0
                self.emit(f"if ({k} == 1) {result.expr} = {a.expr}[0] * {b.expr}[0]; else {{", indent)
                self.dot_loop(a, b, result, indent + 1)
                self.emit("}", indent)
            return [result]
        shape = _static_shape(out, local=False)
        if len(a.shape) != 2 or len(b.shape) != 2 or a.dtype != dtype or b.dtype != dtype or dtype.kind not in "iuf":
            raise Unsupported(f"np.dot of {a.shape} and {b.shape} ({a.dtype}, {b.dtype})")
        if any(isinstance(n, Dim) for n in (*a.shape, *b.shape)):
            raise Unsupported("np.dot of matrices of run-time shape: numpy's dot copies by their layout")
        if size_of(a.shape) == 0 or size_of(b.shape) == 0 or floats and 1 in (*a.shape, b.shape[1]):
            raise Unsupported(f"np.dot of {a.shape} and {b.shape}: numpy's dot takes its scalar or vector path")
        a, b = (self.as_eager(v, "np.dot's operand", indent) for v in (a, b))
        if floats:
            a, b = (self.blas_strides(v, floats, indent) for v in (a, b))
            a, b = (v if contiguous(v) or contiguous(_transposed(v)) else self.packed(v, indent) for v in (a, b))
        return [self.matmul_loop(a, b, dtype, shape, indent, self.homes.get(id(out)))]

    def blas_strides(self, value, floats, indent):
        """`value` copied C-contiguous where numpy's dot copies it for BLAS (`_bad_strides`: a
        negative step, or a step of 0 along an axis longer than 1), as it is elsewhere. A step
        known only at run time is the length of a C array's axis: not negative."""
        steps = value.strides or strides_of(value.shape)
        bad = any(type(s) is int and (s < 0 or s == 0 and bound_of(n) > 1) for n, s in zip(value.shape, steps))
        return self.packed(value, indent) if floats and bad else value

    def as_eager(self, value, what, indent):
        """`value` in memory laid out as eager numpy's array, for an op whose result depends on
        the layout (numpy's matmul picks its BLAS call by strides); raises Unsupported where eager's
        layout is not known here."""
        value = self.materialize(value, indent)
        if value.layout is None:
            self.exact(value)
        if value.layout == "c":
            return self.packed(value, indent)
        if value.layout == "unknown":
            raise Unsupported(f"{what} laid out as numpy lays out an elementwise result of a transposed operand")
        return value

    def call_numpy_loop(self, ufunc, nin, pointers, dims, steps, dtype, indent):
        key = (ufunc, (dtype,) * (nin + 1))
        if key not in self.numpy_loops:
            self.numpy_loops.append(key)
        j = self.numpy_loops.index(key)
        self.emitter.helpers.setdefault("ag_numpy_loop", LOOP_TYPEDEF)
        args = ", ".join(f"(char*){p}" for p in pointers)
        # numpy's loops may clear the flags (maximum does, after its comparisons): keep those raised so far
        self.emit("ag_seen |= ag_flags();", indent)
        self.emit(f"{{ char* a[] = {{{args}}}; const int64_t d[] = {{{', '.join(map(str, dims))}}}, "
                  f"s[] = {{{', '.join(map(str, steps))}}}; ((ag_numpy_loop)ag_fn[{j}])(a, d, s, ag_data[{j}]); }}",
                  indent)

    def numpy_loop(self, ufunc, ins, dtype, shape, indent):
        """numpy's own inner loop of `ufunc` over `ins` (cast to `dtype`), as eager numpy
        calls it: once over the contiguous elements (see numpy_loops.py)."""
        if dtype.kind != "f":
            raise Unsupported(f"numpy's {ufunc} loop on {dtype}")
        n, pointers, steps = count_of(shape), [], []
        for v in ins:
            if v.shape == ():  # a scalar operand: a local of the dtype, read with step 0
                local = self.declare(dtype, False, (), indent, self.emitter.cast(_scalar(v), dtype))
                pointers.append(f"&{local.expr}")
                steps.append(0 if shape != () else dtype.itemsize)
            elif v.shape == shape and v.dtype == dtype and contiguous(v):
                pointers.append(v.expr)
                steps.append(dtype.itemsize)
            else:
                raise Unsupported(f"numpy's {ufunc} loop over broadcast or cast operands")
        result = self.declare(dtype, False, shape, indent)
        pointers.append(result.expr if shape != () else f"&{result.expr}")
        steps.append(dtype.itemsize)
        self.call_numpy_loop(ufunc, len(ins), pointers, [n], steps, dtype, indent)
        self.work += size_of(shape) * 8
        return result

    def constant(self, node, out, indent):
        value = np.asarray(node.attrs["value"])
        shape = _static_shape(out)
        dtype = np.dtype(out.dtype)
        c_type = self.language.type(dtype)  # Unsupported for a dtype C does not hold (complex): numpy runs it
        if shape == ():
            return Val(cexpr.literal(value.item(), dtype), dtype, out.weak)
        name = self.name()
        items = ", ".join(_exact_literal(v, dtype) for v in value.astype(dtype).ravel().tolist())
        self.emit(f"static const {c_type} {name}[{size_of(shape)}] = {{{items}}};", indent)
        return Val(name, dtype, out.weak, shape, name)

    def reshape(self, value, out, indent):
        """A reshape: the same elements (a view's copied first, as numpy copies one it cannot
        view), C order."""
        if value.shape == ():
            raise Unsupported("a reshape of a scalar")
        # numpy reshapes in C order whatever the layout (a copy where it cannot view): these elements;
        # a result numpy may have laid out otherwise stays so
        layout = value.layout
        value = self.packed(self.materialize(value, indent), indent)
        shape = _static_shape(out, local=False)
        if not isinstance(count_of(value.shape), int):
            self.bail(f"{count_of(value.shape)} != {size_of(shape)}", indent)  # numpy raises: Python does
        return value._replace(shape=shape, strides=None, layout=layout)

    def subscript(self, node, ins, out, indent):
        """x[i] by a scalar (a view of row i), or x[...] by constant ints and slices (a copy of
        the elements it selects: a local is never written after it is made, so a copy reads as
        numpy's view would)."""
        index, x = node.attrs["index"], ins[0]
        if index == () and len(ins) == 1 and x.shape == ():  # x[()] of a scalar: itself (only its box changes)
            return x
        if x.layout == "c":  # a broadcast read in place: eager slices a C array
            x = self.packed(x, indent)
        if len(index) == 1 and type(index[0]) is Slot and ins[1 + index[0].k].shape != ():
            return self.gather(x, ins[1 + index[0].k], out, indent)
        if len(index) == 1 and (type(index[0]) is Slot or type(index[0]) is int and not isinstance(x.shape[0], Dim)):
            return self.row(node, ins, out, indent)
        offset, axes = self.region(index, x, ins[1:], indent)
        shape = self.known_shape(out, tuple(c for c, _ in axes), indent)
        if shape == ():
            return self.declare(x.dtype, x.weak, (), indent, f"{x.expr}[{offset}]")
        return self.view(x, offset, shape, tuple(step for _, step in axes))._replace(layout=x.layout)

    def gather(self, x, positions, out, indent):
        """x[positions] by a 1-D array of integers (numpy's integer array indexing of the first axis):
        a Lazy value, each element read where it is used at its position (a negative one counts from
        the end). numpy raises outside [-n, n): every position is checked first, and one out of
        range runs the Python path, which raises numpy's IndexError."""
        if x.shape == () or len(positions.shape) != 1 or positions.dtype.kind not in "iu":
            raise Unsupported(f"indexing {x.dtype}{list(x.shape)} by {positions.dtype}{list(positions.shape)}")
        (count,), n = positions.shape, x.shape[0]
        self.check_positions(positions, n, indent)
        strides = x.strides or strides_of(x.shape)

        def element(names):
            at = self.position(positions, names[0], n)
            terms = [_product([at, strides[0]], 1)] + [_product([i, s], 1) for i, s in zip(names[1:], strides[1:])]
            return f"{x.expr}[{' + '.join(str(t) for t in terms)}]"
        shape = self.known_shape(out, (count, *x.shape[1:]), indent)
        return Lazy(element, x.dtype, out.weak, shape, frozenset({x.base, positions.base}) - {None})

    def check_positions(self, positions, n, indent):
        """Run the Python path (which raises numpy's IndexError) if an element of 1-D integer array
        `positions` is not an index into an axis of length `n`, [-n, n)."""
        k = self.name()
        p = _at(positions, _broadcast_index(positions.shape, positions.shape, [k], positions.strides)).expr
        self.emit(f"for (int64_t {k} = 0; {k} < {positions.shape[0]}; {k}++) {{", indent)
        self.bail(f"{p} >= (uint64_t){n}" if positions.dtype.kind == "u" else f"{p} < -{n} || {p} >= {n}", indent + 1)
        self.emit("}", indent)
        self.worked(positions.shape[0], indent)

    @staticmethod
    def position(positions, i, n):
        """C of the index into an axis of length `n` that element `i` of checked `positions` names."""
        p = _at(positions, _broadcast_index(positions.shape, positions.shape, [i], positions.strides)).expr
        return f"(int64_t){p}" if positions.dtype.kind == "u" else f"({p} < 0 ? (int64_t){p} + {n} : (int64_t){p})"

    def view(self, x, offset, shape, strides):
        """A view into x's elements from flat `offset` (a C expression), `strides` per dim, as
        numpy's basic indexing and transposes make; never written in place (stores copy it)."""
        start = x.expr if offset == "0" else f"({x.expr} + {offset})"
        return Val(start, x.dtype, x.weak, shape, x.base, None if strides == strides_of(shape) else strides)

    def region(self, index, x, slots, indent):
        """(the flat offset of the first element, (count, element step) per dim) of x[index]:
        ints, None, computed scalar ints (Slot k: `slots[k]`; numpy raises outside [-n, n): the
        Python path does the same) and slices of constant steps whose bounds are constant or
        computed ints (a computed bound, or an axis of run-time length, gives a Dim)."""
        def dynamic(i):
            return type(i) is Slot and slots[i.k].shape == () and slots[i.k].dtype.kind in "iu"

        if index.count(Ellipsis) == 1:  # `...`: as many full slices as the other indices leave axes
            at, rest = index.index(Ellipsis), [i for i in index if i is not None and i is not Ellipsis]
            index = (*index[:at], *[slice(None)] * (len(x.shape) - len(rest)), *index[at + 1:])
        picks = [i for i in index if i is not None]  # None: a new axis of length 1
        if x.shape == () or len(picks) > len(x.shape) or not all(
                type(i) is int or dynamic(i) or (type(i) is slice and type(i.step) in (int, type(None)) and all(
                    type(v) in (int, type(None)) or dynamic(v) for v in (i.start, i.stop)))
                for i in picks):
            raise Unsupported(f"indexing {index!r}")
        terms, axes = [], []  # terms: the flat offset of the first element; axes: (count, element step) per output dim
        dims = iter(zip(x.shape, x.strides or strides_of(x.shape)))
        for i in list(index) + [slice(None)] * (len(x.shape) - len(picks)):
            if i is None:
                axes.append((1, 0))
                continue
            n, stride = next(dims)
            if type(i) is int and not isinstance(n, Dim):
                if not -n <= i < n:
                    raise Unsupported(f"index {i} out of range")  # numpy raised at the trace
                terms.append(_product([i % n, stride], 1))
            elif type(i) is not slice:
                position = self.declare(np.dtype(np.int64), False, (), indent,
                                        f"(int64_t){slots[i.k].expr if type(i) is Slot else i}")
                self.bail(f"{position.expr} < -{n} || {position.expr} >= {n}", indent)
                self.emit(f"if ({position.expr} < 0) {position.expr} += {n};", indent)
                terms.append(_product([position.expr, stride], 1))
            elif isinstance(n, Dim) or any(type(v) is Slot for v in (i.start, i.stop)):
                start, count = self.slice_bounds(i, n, slots, indent)
                axes.append((count, _product([i.step or 1, stride], 1)))
                terms.append(_product([start, stride], 1))
            else:
                start, stop, step = i.indices(n)
                axes.append((len(range(start, stop, step)), _product([step, stride], 1)))
                terms.append(_product([start, stride], 1))
        static = sum(t for t in terms if not isinstance(t, str))
        return " + ".join([str(static)] + [t for t in terms if isinstance(t, str)]), axes

    def slice_bounds(self, i, n, slots, indent):
        """(first index, Dim count) of slice `i` (a constant step) of an axis of length `n` whose
        bounds or length are known only at run time, by Python's rules (negative bounds count from
        the end, then bounds are clamped to the axis), as numpy slices."""
        step = 1 if i.step is None else i.step
        if step == 0:
            raise Unsupported("a slice of step 0")  # numpy raised at the trace
        names = {}
        for key, value, default in (("start", i.start, f"{n} - 1" if step < 0 else "0"),
                                    ("stop", i.stop, "-1" if step < 0 else f"{n}")):
            if value is None:
                names[key] = self.declare(np.dtype(np.int64), False, (), indent, default).expr
                continue
            v = self.declare(np.dtype(np.int64), False, (), indent,
                             f"(int64_t){slots[value.k].expr if type(value) is Slot else value}").expr
            low, high = ("-1", f"{n} - 1") if step < 0 else ("0", f"{n}")
            self.emit(f"if ({v} < 0) {{ {v} += {n}; if ({v} < 0) {v} = {low}; }} "
                      f"else if ({v} >= {n}) {v} = {high};", indent)
            names[key] = v
        first, last = (names["start"], names["stop"]) if step > 0 else (names["stop"], names["start"])
        count = self.declare(np.dtype(np.int64), False, (), indent,
                             f"{first} < {last} ? {last} - {first} : 0" if abs(step) == 1 else
                             f"{first} < {last} ? ({last} - {first} - 1) / {abs(step)} + 1 : 0")
        return names["start"], Dim(count.expr, len(range(0, bound_of(n), abs(step))))

    def set_item(self, node, ins, indent):
        """x[index] = value: a store into x's array where the graph owns it and nothing reads
        its old contents later (a fill loop's buffer), else into a copy. The value is broadcast
        and cast as numpy assigns; an index out of range runs the Python path, which raises.
        `x[positions] = value` by a 1-D integer array stores in the positions' order, so where a
        position repeats the last store stays, as numpy's."""
        x, value = ins[0], ins[1]
        index = node.attrs["index"]
        if x.shape == () or x.dtype.kind not in "biuf" or (value.dtype.kind == "f" and x.dtype.kind != "f") or (
                value.dtype.kind in "iuf" and x.dtype.kind == "b"):
            raise Unsupported(f"storing {value.dtype} into {x.dtype} at {index!r}")  # numpy's casts that may raise
        positions = ins[2 + index[0].k] if len(index) == 1 and type(index[0]) is Slot else None
        if value.shape == () and value.dtype.kind in "iu" and x.dtype.kind in "iu" and (
                value.weak or box_of(node.inputs[1]) != ARRAY and (positions is None or positions.shape == ())):
            # numpy stores a Python int, or a numpy integer scalar at a basic index, through a Python int:
            # out of the array's range it raises OverflowError (or wraps, for some dtypes): the Python path does
            self.bail_outside(value, x.dtype, indent)
        if isinstance(x, Lazy):
            x = self.materialize(x, indent)  # a buffer of its own: this graph's to write
        elif not self.writable(node.inputs[0], x, read_first=node.inputs[1:2]) or not contiguous(x) or \
                x.layout is not None:
            # numpy's SetItem stores into a C-ordered copy (a view is never written in place here)
            copy = self.declare(x.dtype, x.weak, _static_shape(node.outputs[0], local=False), indent)
            self.copy(copy, x, indent)
            x = copy
        if positions is not None and positions.shape != ():
            positions = self.materialize(positions, indent)
            if len(positions.shape) != 1 or positions.dtype.kind not in "iu":
                raise Unsupported(f"storing into {x.dtype}{list(x.shape)} at {positions.dtype}{list(positions.shape)}")
            self.check_positions(positions, x.shape[0], indent)
            strides = strides_of(x.shape)  # x is C-contiguous here
            axes = [(positions.shape[0], None), *zip(x.shape[1:], strides[1:])]
            offset = None
        else:
            offset, axes = self.region(index, x, ins[2:], indent)
        shape = tuple(count for count, _ in axes)
        source = value.shape
        while len(source) > len(shape) and source[0] == 1:  # numpy drops leading 1s of the value
            source = source[1:]
        if isinstance(value, Lazy) and len(source) < len(value.shape):
            value = self.materialize(value, indent)
        value = value._replace(shape=source)
        if len(source) > len(shape):
            raise Unsupported(f"storing {value.shape} into {shape}")
        for v, t in zip(reversed(source), reversed(shape)):
            if isinstance(v, Dim) or isinstance(t, Dim):
                if v != t and v != 1:
                    self.bail(f"{v} != {t}", indent)  # numpy stretches a run-time 1, or raises: Python does
            elif v not in (1, t):
                raise Unsupported(f"storing {value.shape} into {shape}")
        if source != () and (value.base == x.base or x.base in (getattr(value, "reads", None) or ())):
            # x[1:] = x[:-1]: numpy reads the value before storing
            value = self.materialize(value, indent) if isinstance(value, Lazy) else value
            temp = self.declare(value.dtype, value.weak, source, indent)
            self.copy(temp, value, indent)
            value = temp
        names = [f"i{d}" for d in range(len(shape))]
        for d, (name, (count, _)) in enumerate(zip(names, axes)):
            self.emit("    " * d + f"for (int64_t {name} = 0; {name} < {count}; {name}++) {{", indent)
        if offset is None:  # by positions: the first axis at each one
            target = " + ".join([str(_product([self.position(positions, names[0], x.shape[0]), strides[0]], 1))] +
                                [f"{name} * {step}" for name, (_, step) in zip(names[1:], axes[1:])])
        else:
            target = " + ".join([offset] + [f"{name} * {step}" for name, (_, step) in zip(names, axes)])
        element = _element(value, shape, names)
        self.emit("    " * len(shape) + f"{x.expr}[{target}] = {self.emitter.cast(element, x.dtype)};", indent)
        for d in reversed(range(len(shape))):
            self.emit("    " * d + "}", indent)
        self.worked(count_of(shape) or 1, indent)
        return [x._replace(weak=node.outputs[0].weak)]

    def row(self, node, ins, out, indent):
        """x[i]: row i of an array by a scalar integer (a view into it); numpy raises outside
        [-n, n), the Python path does the same."""
        index = node.attrs["index"]
        x = ins[0]
        if len(index) != 1 or x.shape == ():
            raise Unsupported(f"indexing {index!r}")
        n = x.shape[0]
        if len(ins) == 1 and type(index[0]) is int and -n <= index[0] < n:  # a constant row
            position = Val(str(index[0] % n), np.dtype(np.int64), False)
        elif len(ins) == 2 and ins[1].shape == () and ins[1].dtype.kind in "iu":
            position = self.declare(np.dtype(np.int64), False, (), indent, f"(int64_t){ins[1].expr}")
            self.bail(f"{position.expr} < -{n} || {position.expr} >= {n}", indent)
            self.emit(f"if ({position.expr} < 0) {position.expr} += {n};", indent)
        else:
            raise Unsupported(f"indexing {index!r}")
        strides = x.strides or strides_of(x.shape)
        at = position.expr if strides[0] == 1 else f"{position.expr} * {strides[0]}"
        if x.shape[1:] == ():
            return self.declare(x.dtype, x.weak, (), indent, f"{x.expr}[{at}]")
        return Val(f"({x.expr} + {at})", x.dtype, x.weak, self.known_shape(out, x.shape[1:], indent), x.base,
                   x.strides and x.strides[1:], x.layout)

    def transpose(self, node, ins, indent):
        """x.T, np.transpose(x, perm): a view with x's strides permuted, as numpy's."""
        (x,) = ins
        if x.shape == ():
            return [x]
        perm = node.attrs["perm"] or tuple(reversed(range(len(x.shape))))
        strides = x.strides or strides_of(x.shape)
        return [Val(x.expr, x.dtype, x.weak, tuple(x.shape[p] for p in perm), x.base,
                    tuple(strides[p] for p in perm), x.layout)]

    def identity(self, node, ins, indent):
        """A copy (ag.identity, the gradient's copies of its arguments): an array is read where
        it lies (a write into either is known through their shared base)."""
        (x,) = ins
        out = node.outputs[0]
        if x.shape == () or np.dtype(out.dtype) != x.dtype:
            return [self.apply(node.op, ins, np.dtype(out.dtype), out.weak, _static_shape(out, local=False), indent)]
        return [x._replace(weak=out.weak)]

    def broadcast_like(self, node, ins, indent):
        """BroadcastLike (a gradient's broadcast): g read at the element it broadcasts to, where
        it is used; numpy's is a fresh C array, which an op reading memory in order gets."""
        g = ins[0]
        out = node.outputs[0]
        shape = _static_shape(out, local=False)
        if np.dtype(out.dtype) != g.dtype or shape == () or _run_time(ins):
            raise Unsupported(f"BroadcastLike of {g.dtype}{list(g.shape)} to {out.dtype}{list(shape)}")

        def element(names):
            return _element(g, shape, names).expr
        reads = g.reads if isinstance(g, Lazy) else {g.base}
        return [Lazy(element, g.dtype, out.weak, shape, frozenset(reads) - {None})]

    def concat(self, node, ins, indent):
        """np.concatenate: each piece copied (cast as numpy casts) into its place in a new array."""
        out = node.outputs[0]
        shape, dtype = _static_shape(out, local=False), np.dtype(out.dtype)
        if _run_time(ins):
            raise Unsupported("np.concatenate of a piece of run-time length")
        axis = node.attrs["axis"] % len(shape)
        result = self.declare(dtype, out.weak, shape, indent)
        strides, at = strides_of(shape), 0
        for piece in ins:
            if piece.shape[axis]:
                self.copy(self.view(result, str(at * strides[axis]), piece.shape, strides), piece, indent)
            at += piece.shape[axis]
        return [result]

    def fused(self, node, ins, indent):
        """A FusedElementwise node: its steps written one by one (large results stay Lazy: the
        chain is computed where it is read)."""
        from ..fused import parts  # fused.py builds these nodes (and imports this package)
        out = node.outputs[0]
        size = size_of(self.broadcast([v.shape for v in ins], indent))
        if parts(size) > 1:
            raise Unsupported(f"a fused chain of {size} elements: its own kernel splits it among {parts(size)} threads")
        steps = []
        for op, args, dtype in node.attrs["steps"]:
            operands = [ins[k] if kind == "in" else steps[k] for kind, k in args]
            shape = self.broadcast([v.shape for v in operands], indent)
            steps.append(self.apply(op, operands, np.dtype(dtype), False, shape, indent))
        return [steps[-1]._replace(weak=out.weak)]

    def reduction(self, node, ins, out, indent):
        (x,) = ins
        axes = node.attrs.get("axis")
        return self.reduce(node.opdef, x, axes, np.dtype(out.dtype), out.weak, _static_shape(out, local=False), indent)

    def sum_to_shape(self, node, ins, indent):
        """SumToShape (a gradient undoing a broadcast): the sum over the axes `like` was broadcast
        along, reshaped to its shape, as its kernel computes it."""
        g, like = ins
        shape, out = _static_shape(node.outputs[0], local=False), node.outputs[0]
        if _run_time(ins):
            raise Unsupported("SumToShape of a value of run-time length")
        lead = len(g.shape) - len(shape)
        axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and g.shape[lead + i] != 1)
        if not axes:
            return [self.reshape(g, out, indent)]
        kept = tuple(n for d, n in enumerate(g.shape) if d not in axes)
        fold = Fold(node.op, cexpr._op_of_ufunc("add"), False)
        summed = self.reduce(fold, g, axes, np.dtype(out.dtype), out.weak, kept, indent)
        if summed.shape == () and shape != ():  # all summed, into a [1, 1]
            array = self.declare(summed.dtype, summed.weak, shape, indent)
            self.emit(f"{array.expr}[0] = {summed.expr};", indent)
            return [array]
        return [summed._replace(shape=shape)]

    def reduce(self, opdef, x, axes, dtype, weak, shape, indent):
        """The reduction `opdef` (Sum, Mean, Max, ...) of x over `axes` (None: all), in numpy's order."""
        if x.shape == ():
            raise Unsupported(f"{opdef.name} of a scalar")
        if size_of(x.shape) == 0:
            raise Unsupported(f"{opdef.name} of an empty array")
        ndim = len(x.shape)
        axes = tuple(range(ndim)) if axes is None else tuple(sorted({a % ndim for a in (
            axes if isinstance(axes, tuple) else (axes,))}))
        combine, averages = opdef.reduce_with, opdef.averages
        if any(isinstance(n, Dim) for n in x.shape):
            if ndim != 1 or x.layout is not None:
                raise Unsupported(f"{opdef.name} of a run-time length other than all of a vector view")
            if averages or getattr(np, REGISTRY[combine].ufunc).identity is None:
                self.bail(f"{x.shape[0]} == 0", indent)  # numpy refuses (max) or warns (mean): Python does
        accumulate = _mean_accumulator(x.dtype, dtype) if averages else dtype
        if not averages and x.dtype.kind == "f" and dtype != x.dtype:
            raise Unsupported(f"a float {opdef.name} in another dtype")
        step = 1
        count_each = size_of([x.shape[a] for a in axes])
        if x.layout == "unknown" or (x.layout is None and not contiguous(x)):
            line = one_dim(x) if x.layout is None else None
            if line is not None and count_each == size_of(x.shape):
                step = line[1]  # a column, a reversed row: numpy's loop reads it with its stride
            elif x.layout is None and c_ordered(x) and len(axes) == 1 and ndim > 1:
                pass  # one axis of a slice in C order: numpy reduces it as it does a C array's
            elif count_each > 1 and (accumulate.kind not in "biu" or averages):
                raise Unsupported(f"a float {opdef.name} of a strided view or a transposed result: numpy "
                                  f"reduces in the order of its memory layout")
        if x.layout is None and (accumulate.kind not in "biu" or averages):
            self.exact(x)
        if step == 1:
            x = self.packed(x, indent)
        result = self.declare(dtype, weak, shape, indent)
        whole = list(axes) == list(range(ndim))
        if step != 1:
            outer, count, inner = 1, count_of(x.shape), 1
        elif whole or len(axes) == 1:
            axis = 0 if whole else axes[0]
            count = count_of(x.shape) if whole else x.shape[axis]
            outer, inner = (1, 1) if whole else (size_of(x.shape[:axis]), size_of(x.shape[axis + 1:]))
        else:  # axes side by side in memory: numpy's iterator merges them into one
            groups = []  # (size, reduced) of runs of adjacent dims (length-1 dims dropped)
            for d, n in enumerate(x.shape):
                if n != 1:
                    if groups and groups[-1][1] == (d in axes):
                        groups[-1] = (groups[-1][0] * n, d in axes)
                    else:
                        groups.append((n, d in axes))
            reduced = [i for i, (_, r) in enumerate(groups) if r]
            if len(reduced) != 1:
                raise Unsupported(f"{opdef.name} over axes {axes}")
            (i,) = reduced
            outer, count, inner = size_of([n for n, _ in groups[:i]]), groups[i][0], size_of([n for n, _ in groups[i + 1:]])
        if accumulate != x.dtype and inner != 1 and (accumulate.kind not in "iu" or averages):
            # (integers add exactly in any order: each element is cast as it is added)
            raise Unsupported(f"{opdef.name} over a leading axis cast to {accumulate}")
        self.worked(count_of(x.shape), indent)
        if accumulate.kind == "f" and inner == 1:
            # a float reduction of contiguous runs: numpy's own loop in reduce mode (its pairwise
            # sum, its SIMD max with its choice between -0.0 and 0.0), so the result is numpy's
            return self.numpy_reduction(REGISTRY[combine].ufunc, x, result, outer, count, accumulate, averages,
                                        indent, step)
        # numpy's order otherwise: out starts at the identity (0 for a sum) or the first row, then
        # adds the rows one by one, element by element
        self.emit(f"for (int64_t o = 0; o < {outer}; o++) for (int64_t j = 0; j < {inner}; j++) {{", indent)
        start = f"({x.expr} + o * {_product([count, inner], 1)} + j)"
        total = self.fold(combine, start, str(inner * step), count, x.dtype, accumulate, indent + 1)
        target = f"{result.expr}[o * {inner} + j]" if result.shape != () else result.expr
        self.emit(f"    {target} = {self.finish(averages, total, count, accumulate, dtype)};", indent)
        self.emit("}", indent)
        return result

    def numpy_reduction(self, ufunc, x, result, runs, count, dtype, averages, indent, step=1):
        """Each of `runs` contiguous runs of `count` elements of x reduced by numpy's `ufunc` loop
        called as numpy's reduce calls it: (out, in, out) with out's step 0, out starting at the
        identity (a sum) or the first element. x is cast to `dtype` first if it differs (a mean of
        integers: numpy casts too, in 8192-element buffers). `step`: the element step of a 1-d view."""
        if x.dtype != dtype:
            if size_of(x.shape) > 8192:
                raise Unsupported(f"a reduction of {size_of(x.shape)} elements cast to {dtype}")
            cast = self.declare(dtype, False, x.shape, indent)
            self.copy(cast, x, indent)
            x, step = cast, 1
        identity = getattr(np, ufunc).identity
        t = self.language.type(dtype)
        acc = self.name()
        self.emit(f"for (int64_t r = 0; r < {runs}; r++) {{", indent)
        start = f"({x.expr} + r * {count})"
        first = cexpr.literal(identity, dtype) if identity is not None else f"{start}[0]"
        skip = 0 if identity is not None else step
        self.emit(f"{t} {acc} = {first};", indent + 1)
        if isinstance(count, str) or count > (skip != 0):  # (a run-time count: a loop of 0 does nothing)
            self.call_numpy_loop(ufunc, 2, [f"&{acc}", f"({start} + {skip})", f"&{acc}"],
                                 [f"{count} - {int(skip != 0)}" if isinstance(count, str) else count - (skip != 0)],
                                 [0, step * dtype.itemsize, 0], dtype, indent + 1)
        target = f"{result.expr}[r]" if result.shape != () else result.expr
        self.emit(f"{target} = {self.finish(averages, acc, count, dtype, result.dtype)};", indent + 1)
        self.emit("}", indent)
        return result

    def fold(self, combine, start, stride, count, x_dtype, dtype, indent):
        """A local folding `count` elements from `start` (every `stride`) with op `combine`, in
        order, from 0 for a sum (numpy starts at the identity: -0.0 sums to 0.0), else from
        the first element; its name."""
        acc = self.name()
        identity = getattr(np, REGISTRY[combine].ufunc).identity  # numpy's reduce starts there if it has one
        first = "0" if identity is not None else "1"
        initial = cexpr.literal(identity, dtype) if identity is not None else \
            self.emitter.cast(cexpr.Value(f"{start}[0]", x_dtype, False), dtype)
        self.emit(f"{self.language.type(dtype)} {acc} = {initial};", indent)
        item = cexpr.Value(f"{start}[m * {stride}]", x_dtype, False)
        step = self.emitter.op(combine, [cexpr.Value(acc, dtype, False),
                                         cexpr.Value(self.emitter.cast(item, dtype), dtype, False)], dtype)
        self.emit(f"for (int64_t m = {first}; m < {count}; m++) {acc} = {step};", indent)
        return acc

    def finish(self, averages, total, count, accumulate, dtype):
        if averages:
            return self.emitter.cast(cexpr.Value(f"({total} / ({self.language.type(accumulate)}){count})",
                                                 accumulate, False), dtype)
        return total

    # --- Python scalars ----------------------------------------------------------------

    def tracked_box(self, node, ins, outs, indent):
        """`outs` of op `node`, some of whose operands have a box known only at run time (`Val.python`),
        with theirs: a Python number where every operand is one and the op keeps Python numbers
        (NEP 50 arithmetic, `OpDef.weak_result`), else a numpy value. Where eager computes on
        Python floats, a result Python would raise on or that is not finite (numpy warns, Python
        does not) jumps to `ag_inexact`: the Python code runs instead."""
        if not node.opdef.weak_result or not all(v.weak or getattr(v, "python", None) for v in ins):
            return outs  # a numpy operand (or a numpy function, a store into an array): a numpy value, as typed
        if len(outs) != 1 or outs[0].shape != ():
            raise Unsupported(f"{node.op} (node '{node.name}') on a value that is a Python number or a numpy "
                              f"one depending on the path")
        flag = self.name()
        self.emit(f"int {flag} = {' && '.join(f'({v.python})' for v in ins if getattr(v, 'python', None))};", indent)
        (out,) = outs
        if out.dtype.kind == "f":
            self.bail(f"{flag} && !isfinite({out.expr})", indent)
        elif out.dtype.kind != "b":
            raise Unsupported(f"{node.op} (node '{node.name}') on a Python number on one path and a numpy "
                              f"value on another: only float64 is carried both ways")
        return [out._replace(python=flag)]

    def numpy_scalar_op(self, op, ins, dtype, indent):
        """Integer op `op` as numpy's scalar math computes it (np.int8(100) + np.int8(100)): where that
        warns (an overflow, x // 0) and C's, as numpy's ufunc, would wrap silently, a jump to `ag_inexact`:
        the Python code runs instead and warns as eager. The result where the check computes it, else
        None (`apply` computes it)."""
        checks = cexpr.numpy_scalar(op)
        if checks is None:
            return None
        a = [self.emitter.cast(_scalar(v), dtype) for v in ins]
        if checks.overflow:
            value = self.declare(dtype, False, (), indent)
            builtin, x, y = checks.overflow
            self.bail(f"__builtin_{builtin}_overflow({x.format(*a)}, {y.format(*a)}, &{value.expr})", indent)
            return value
        if dtype.kind in checks.guard:
            self.bail(checks.guard[dtype.kind].format(*a, min=cexpr.least(dtype) if dtype.kind == "i" else "0"), indent)
        return None

    def weak_op(self, op, ins, dtype, indent):
        """Op `op` on Python scalars: exactly Python's result, or a jump to `ag_inexact`."""
        ins = [_scalar(v) for v in ins]
        kind = dtype.kind
        a = [self.emitter.cast(v, dtype) for v in ins]
        python = cexpr.python_scalars(op)
        if kind in "iu" and python.overflow:  # Python ints do not wrap
            value = self.declare(dtype, True, (), indent)
            builtin, x, y = python.overflow
            self.bail(f"__builtin_{builtin}_overflow({x.format(*a)}, {y.format(*a)}, &{value.expr})", indent)
            return value
        if kind in "iu" and python.int_guard:
            self.bail(python.int_guard.format(*a), indent)
            return self.declare(dtype, True, (), indent, self.emitter.op(op, ins, dtype))
        kinds = {v.dtype.kind for v in ins}
        if cexpr.is_comparison(op) and "f" in kinds and kinds & {"i", "u"}:
            # Python compares an int with a float exactly; C rounds the int to a double
            self.bail(" || ".join(f"({v.expr} > {_EXACT_DOUBLE} || {v.expr} < -{_EXACT_DOUBLE})"
                                  for v in ins if v.dtype.kind in "iu"), indent)
        if python.exact or kind == "b":
            return self.declare(dtype, True, (), indent, self.emitter.op(op, ins, dtype))
        if kind == "f" and python.float_guard == "divisor":  # x / 0 raises; int / int is exact beyond 2**53
            tests = [f"{a[1]} == 0"] + [f"({v.expr} > {_EXACT_DOUBLE} || {v.expr} < -{_EXACT_DOUBLE})"
                                        for v in ins if v.dtype.kind in "iu"]
            self.bail(" || ".join(tests), indent)
            return self.declare(dtype, True, (), indent, self.emitter.op(op, ins, dtype))
        if kind == "f" and python.float_guard == "finite":  # Python raises on overflow, gives complex for (-x) ** 0.5
            value = self.declare(dtype, True, (), indent, self.emitter.op(op, ins, dtype))
            self.bail(f"!isfinite({value.expr})", indent)
            return value
        raise Unsupported(f"{op} on Python scalars")

    def bail_outside(self, value, dtype, indent):
        """Jump to `ag_inexact` where integer scalar `value` lies outside integer `dtype`'s range."""
        have, want = np.iinfo(value.dtype), np.iinfo(dtype)
        suffix = "ULL" if value.dtype.kind == "u" else "LL"  # compared in the value's signedness
        tests = ([f"{value.expr} < {int(want.min)}{suffix}"] if have.min < want.min else []) + (
            [f"{value.expr} > {int(want.max)}{suffix}"] if have.max > want.max else [])
        if tests:
            self.bail(" || ".join(tests), indent)

    def bail(self, test, indent):
        self.inexact = True
        self.emit(f"if ({test}) goto ag_inexact;", indent)

    # --- control flow ------------------------------------------------------------------

    def assign(self, targets, values, indent):
        """targets = values, all read before any is written (`a, b = b, a`)."""
        written = {t.base or t.expr for t, v in zip(targets, values) if v.expr != t.expr}
        staged = []
        for target, value in zip(targets, values):
            if isinstance(value, Lazy):
                value = self.materialize(value, indent)
            if value.expr != target.expr and (value.base or value.expr) in written:  # reads an array written here
                temp = self.declare(target.dtype, target.weak, target.shape, indent)
                self.copy(temp, value, indent)
                value = temp
            staged.append(value)
        for target, value in zip(targets, staged):
            if value.expr != target.expr:
                self.copy(target, value, indent)

    def cond(self, node, ins, indent):
        outs = [self.local(t, indent) for t in node.outputs]
        # an operand whose box is known only at run time, or branches giving a Python number and a
        # numpy value: each output's box is the branch's
        then_outs, else_outs = node.attrs["then_branch"].outputs, node.attrs["else_branch"].outputs
        dynamic = any(getattr(v, "python", None) for v in ins[1:])
        flags = [self.name() if t.shape == () and (dynamic or a.weak != b.weak) else None
                 for t, a, b in zip(node.outputs, then_outs, else_outs)]
        # an operand that may be an argument's object: each 0-d output's origin is the branch's
        passed = any(getattr(v, "origin", None) for v in ins[1:])
        origins = [self.name() if t.shape == () and passed else None for t in node.outputs]
        for flag in filter(None, flags + origins):
            self.emit(f"int {flag};", indent)
        self.emit(f"if ({self.emitter.cast(_scalar(ins[0]), np.bool_)}) {{", indent)
        then_boxes = yield from self.branch(node.attrs["then_branch"], ins[1:], outs, flags, indent + 1, origins)
        self.emit("} else {", indent)
        else_boxes = yield from self.branch(node.attrs["else_branch"], ins[1:], outs, flags, indent + 1, origins)
        self.emit("}", indent)
        # an output both branches box alike, as typed, keeps its static box
        outs = [out if not flag or a == b == box_flag(out) else out._replace(python=flag)
                for out, flag, (a, _), (b, _) in zip(outs, flags, then_boxes, else_boxes)]
        return [out._replace(origin=origin) if origin and not a == b == "-1" else out
                for out, origin, (_, a), (_, b) in zip(outs, origins, then_boxes, else_boxes)]

    def branch(self, graph, ins, outs, flags, indent, origins):
        """Write a Cond branch into `outs` (and the flags of their boxes and origins); per output,
        the C of its box and of its origin. A walk for `iterate`, as `walk` is: it yields the
        branch's walk."""
        values = yield self.walk(graph, ins, indent)
        for value, flag, origin in zip(values, flags, origins):
            if flag is None and getattr(value, "python", None):
                raise Unsupported("an array output of a branch taking a value that is a Python number or a numpy "
                                  "one depending on the path")
            if flag:
                self.emit(f"{flag} = {box_flag(value)};", indent)
            if origin:
                self.emit(f"{origin} = {origin_of(value)};", indent)
            elif getattr(value, "origin", None):
                self.origin_lost = True  # an array output: never 0-d (kept for safety)
        self.assign(outs, values, indent)
        return [(box_flag(v) if isinstance(v, Val) else "0", origin_of(v)) for v in values]

    def while_(self, node, ins, indent, loop_vars=None, pause=None, ran=None):
        """The loop; `loop_vars`: where its variables live if the caller set them up (else
        locals set from `ins`); `pause(loop_vars)`: the statements that save them and return
        PAUSED when the budget is spent, `ran`: a flag set once the body runs (the outermost
        loop only)."""
        cond, body = node.attrs["cond"], node.attrs["body"]
        n = len(body.outputs)
        if loop_vars is None and any(getattr(v, "python", None) for v in ins):
            raise Unsupported("a nested loop taking a value that is a Python number or a numpy one depending on "
                              "the path")
        if loop_vars is None and any(getattr(v, "origin", None) for v in ins):
            # a nested loop does not track which argument its variables hold: the caller's
            # arguments must then be numpy scalars, as before (loops.source renders again)
            self.origin_lost = True
            ins = [v._replace(origin=None) if isinstance(v, Val) else v for v in ins]
        if loop_vars is None:  # a nested loop: an array start value no one reads later is its own buffer
            loop_vars = []
            for i, t in enumerate(node.outputs):
                # two variables with one start that the body updates alike (an array and the memory
                # behind its name) are one array all along: one buffer
                twin = next((j for j in range(i) if node.inputs[j] is node.inputs[i] and
                             body.outputs[j] is body.outputs[i]), None)
                loop_vars.append(loop_vars[twin] if twin is not None else ins[i] if (
                    ins[i].shape == _static_shape(t, local=False) and ins[i].dtype == t.dtype and
                    contiguous(ins[i]) and self.writable(node.inputs[i], ins[i])) else self.local(t, indent))
            for target, value in zip(loop_vars, ins[:n]):
                if target is not value:
                    self.copy(target, value, indent)
        owned = range(n)  # each array loop variable is the loop's own buffer (the outermost's: a copy of its start)
        self.emit("for (;;) {", indent)
        if pause:
            self.emit(f"if (ag_budget <= 0) {{ {pause(loop_vars)} }}", indent + 1)
        work = self.work
        (pred,) = self.graph(cond, loop_vars + ins[n:], indent + 1)
        self.emit(f"if (!{self.emitter.cast(_scalar(pred), np.bool_)}) break;", indent + 1)
        outs = self.graph(body, loop_vars + ins[n:], indent + 1, owned)
        flags = []  # the boxes a tracked loop variable takes for the next iteration, read before any is set
        for i, (target, value) in enumerate(zip(loop_vars, outs)):
            if target.origin:
                flags.append((target.origin, self.name()))
                self.emit(f"int {flags[-1][1]} = {origin_of(value)};", indent + 1)
            elif getattr(value, "origin", None):
                self.origin_lost = True  # a loop variable not tracked may take an argument's object
            if target.python:
                flags.append((target.python, self.name()))
                self.emit(f"int {flags[-1][1]} = {box_flag(value)};", indent + 1)
            elif getattr(value, "python", None):
                raise Unsupported(f"loop variable {i} may become a Python number or a numpy value depending "
                                  f"on the path")
        self.assign(loop_vars, outs, indent + 1)
        for target, flag in flags:
            self.emit(f"{target} = {flag};", indent + 1)
        if ran:
            self.emit(f"{ran} = 1;", indent + 1)
        self.emit(f"ag_budget -= {max(1, self.work - work)};", indent + 1)
        self.emit("}", indent)
        return loop_vars


def origin_of(value):
    """C of the index of the argument whose object `value` is, or -1 (Val.origin)."""
    return getattr(value, "origin", None) or "-1"


def box_flag(value):
    """C of "eager holds `value` as a Python number" (Val.python, or its static box)."""
    return getattr(value, "python", None) or ("1" if value.weak else "0")


# how a structural node is written: Renderer method (self, node, operand Vals, indent) -> its
# output Vals; every other op by its facts (reductions, reshapes, matmul, elementwise: cexpr's
# table) or not at all (`Unsupported`: the region stays Python)
RULES = {CONST: lambda self, node, ins, indent: [self.constant(node, node.outputs[0], indent)],
         COND: Renderer.cond, WHILE: Renderer.while_}
# ops written as views or copies into place, by what they compute (OpDef.primitive); a fused
# node (FusedElementwise, which fused.py builds) by its steps
VIEWS = {"transpose": Renderer.transpose, "identity": Renderer.identity, "broadcast_to": Renderer.broadcast_like,
         "sum_to": Renderer.sum_to_shape, "concatenate": Renderer.concat}
NOT_RENDERED = {PLACEHOLDER: "a graph input: a parameter of the generated function"}


class _Scope:
    """A graph being written: its Vals so far, the node at hand, the arrays it may write."""

    def __init__(self, graph, values, owned):
        self.graph, self.values, self.owned, self.position = graph, values, owned, 0
        self.uses = {}
        for k, node in enumerate(graph.nodes):
            for t in node.inputs:
                self.uses[id(t)] = k
        for t in graph.outputs:
            self.uses[id(t)] = len(graph.nodes)
        self.read_until = {}  # array -> the last position a tensor whose Val holds or reads it is read
        self.hold((t, values[id(t)]) for t in graph.inputs)

    def hold(self, tensors_and_values):
        for t, v in tensors_and_values:
            for base in (v.reads if isinstance(v, Lazy) else (v.base,)):
                if base is not None:
                    self.read_until[base] = max(self.read_until.get(base, -1), self.last_use(t))

    def last_use(self, t):
        """The position of the last node reading `t` (past the end: returned), -1 if none."""
        return self.uses.get(id(t), -1)


# the facts of a reduction `reduce` asks: SumToShape sums as np.sum does
Fold = collections.namedtuple("Fold", "name reduce_with averages")


def placeholder_sources(graph):
    """id(placeholder) -> the tensors whose values it may hold, for every Cond branch and While
    cond/body placeholder nested in `graph` (a While's loop variable: its initial value and the
    body's result)."""
    sources = {}
    for node in graph.walk():
        if node.opdef is COND:
            for key in ("then_branch", "else_branch"):
                for p, t in zip(node.attrs[key].inputs, node.inputs[1:]):
                    sources[id(p)] = [t]
        elif node.opdef is WHILE:
            cond, body = node.attrs["cond"], node.attrs["body"]
            n = len(body.outputs)
            for sub in (cond, body):
                for i, (p, t) in enumerate(zip(sub.inputs, node.inputs)):
                    sources[id(p)] = [t, body.outputs[i]] if i < n else [t]
    return sources


def zero_d_kinds(t, sources):
    """What 0-d tensor `t` holds when the Python plan runs: a set of "scalar" (a numpy scalar:
    numpy's ufuncs and reductions give one), "array" (a 0-d array: `where`, a 0-d array
    constant; `astype` boxes as its input) and "input" (whatever a function argument passed through is). A native region
    returns a 0-d value as one kind, so it takes a value only if its kinds agree. The kinds of
    every value `t` may be, through placeholders, branches and loops, on an explicit stack (a
    chain of 10,000 of them is no deeper than one)."""
    kinds, seen, stack = set(), set(), [t]
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue  # a loop variable's own earlier value: decided by its other sources
        seen.add(id(t))
        kind, more = _zero_d_kind(t, sources)
        kinds |= kind
        stack.extend(more)
    return kinds


def _zero_d_kind(t, sources):
    """({kinds `t` is known to have}, [the tensors whose kinds it also has])."""
    node = t.node
    if node is None or node.opdef is PLACEHOLDER:
        return ({"input"}, []) if id(t) not in sources else (set(), sources[id(t)])
    if node.opdef is CONST:
        return {"array" if isinstance(node.attrs["value"], np.ndarray) else "scalar"}, []
    if node.opdef is COND:
        return set(), [node.attrs[key].outputs[t.index] for key in ("then_branch", "else_branch")]
    if node.opdef is WHILE:
        return set(), [node.inputs[t.index], node.attrs["body"].outputs[t.index]]
    if node.opdef.box == "array":
        return {"array"}, []
    if node.opdef.box == "input":
        return ({"array"}, []) if node.inputs[0].weak else (set(), [node.inputs[0]])
    if node.opdef.box == "scalar" or node.opdef.ufunc is not None or node.opdef.reduce_with is not None:
        return {"scalar"}, []
    if node.op == "StridedSlice" and node.inputs[0].ndim == 0:  # x[()] and x[...] of a 0-d value
        return {"array" if Ellipsis in node.attrs["index"] else "scalar"}, []
    return {"unknown"}, []


class ZeroDArray:
    """Boxes a native region's 0-d result as numpy gives it there: a 0-d array of `dtype`."""

    def __init__(self, dtype):
        self.dtype = dtype

    def __call__(self, value):
        return np.array(value, self.dtype)


def zero_d_box(t, sources, what):
    """(the type a native region returns non-weak 0-d tensor `t` as, whether that needs the
    region's 0-d arguments to be numpy scalars); raises Unsupported where numpy's kind varies."""
    kinds = zero_d_kinds(t, sources)
    if kinds == {"array"}:
        return ZeroDArray(np.dtype(t.dtype)), False
    if kinds and kinds <= {"scalar", "input"}:
        return np.dtype(t.dtype).type, "input" in kinds
    raise Unsupported(f"{what} is a numpy scalar or a 0-d array depending on the path ({sorted(kinds)})")


def _run_time(values):
    """True if a value among `values` has a dim known only at run time (a Dim)."""
    return any(isinstance(n, Dim) for v in values for n in v.shape)


def _scalar(value):
    if value.shape != ():
        raise Unsupported("an array where a scalar is needed")
    return cexpr.Value(value.expr, value.dtype, value.weak)


def _takes_lazy(node):
    """True if the renderer writes `node` with Lazy operands as they are: an elementwise op
    (C of its own, not numpy's loop) or a store."""
    if node.opdef.in_place == "store" or node.op == "FusedElementwise" or node.opdef.primitive in (
            "broadcast_to", "concatenate"):
        return True
    if node.opdef.structural or node.opdef.reduce_with or node.opdef.reshapes or len(node.outputs) != 1:
        return False
    rule = cexpr.rule_for(node.opdef)
    return rule is not None and not getattr(rule, "numpy_loop", False) and not cexpr.needs_numpy_loop(node.op)


def _element(value, shape, names):
    """`value`'s element (a cexpr.Value) broadcast to `shape` at the loop indices `names`."""
    if isinstance(value, Lazy):
        return cexpr.Value(value.element(_broadcast_names(value.shape, shape, names)), value.dtype, value.weak)
    return _at(value, _broadcast_index(value.shape, shape, names, value.strides))


def _broadcast_names(shape, out_shape, names):
    """Per dim of an array of `shape` broadcast to `out_shape`: its index at the loop indices `names`."""
    offset = len(out_shape) - len(shape)
    return ["0" if n == 1 else names[offset + d] for d, n in enumerate(shape)]


def _at(value, index):
    """The element of `value` at `index` as an operand (a scalar is itself)."""
    if value.shape == ():
        return cexpr.Value(value.expr, value.dtype, value.weak)
    return cexpr.Value(f"{value.expr}[{index}]", value.dtype, value.weak)


def _broadcast_index(shape, out_shape, names, strides=None):
    """The flat index into an array of `shape` (C-contiguous, or with element `strides`)
    broadcast to `out_shape`, at the loop indices `names` (one per output dim)."""
    offset = len(out_shape) - len(shape)
    terms = [f"{names[offset + d]} * {stride}" if stride != 1 else names[offset + d]
             for d, (n, stride) in enumerate(zip(shape, strides or strides_of(shape))) if n != 1 and stride != 0]
    return " + ".join(terms) or "0"


def contiguous(value):
    """True if `value`'s elements lie C-contiguous (a scalar's too): a flat index reads them."""
    return value.shape == () or value.strides is None or all(
        s == c for n, s, c in zip(value.shape, value.strides, strides_of(value.shape)) if n != 1)


def c_ordered(value):
    """True if eager numpy lays `value` out with its axes in C order (a slice, a column, a C
    array; not a transpose): numpy's ufuncs then make their results C-contiguous, as here."""
    if value.layout == "unknown":
        return False
    if value.strides is None or value.layout == "c":
        return True
    steps = [abs(s) for n, s in zip(value.shape, value.strides) if n != 1 and s != 0]
    return all(a > b for a, b in zip(steps, steps[1:]))


def _sources(value):
    """The arrays `value` reads: a Lazy value's, an array's base."""
    if isinstance(value, Lazy):
        return frozenset(value.reads or ())
    return frozenset((value.base,)) if value.base is not None else frozenset()


def _transposed(value):
    """A matrix's transpose, as a view of the same elements."""
    return value._replace(shape=value.shape[::-1], strides=(value.strides or strides_of(value.shape))[::-1])


def one_dim(value):
    """(count, element step) of a view with one axis longer than 1, else None."""
    dims = [(n, s) for n, s in zip(value.shape, value.strides or strides_of(value.shape)) if n != 1]
    return dims[0] if len(dims) == 1 else (1, 1) if not dims else None


def _mean_accumulator(x_dtype, out_dtype):
    if x_dtype.kind == "f":
        return x_dtype
    return np.dtype(np.float64) if out_dtype.kind == "f" else out_dtype


def _exact_literal(value, dtype):
    """A C literal for `value` of `dtype`, exact (floats in hexadecimal)."""
    if dtype.kind == "f":
        if math.isfinite(value):
            return float.hex(float(value)) + ("f" if dtype == np.float32 else "")
        return cexpr.literal(value, dtype)
    if dtype.kind == "b":
        return "1" if value else "0"
    return f"{int(value)}" + ("ULL" if dtype.kind == "u" else "LL")
