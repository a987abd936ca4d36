"""Lower a Graph, once, into an executable plan: generated straight-line Python.

Kernels and constants are bound as closure variables, so each step of the plan is a
bare call such as `v3 = k3(v1, v2)`; `Cond` becomes a native `if`, `While` a native
`while`. No user value is written as text: only exact builtin scalars become literals,
and comments are escaped onto one line. A failure while the plan runs is traced back to the node, and so to the
user's `file:line`, through the line map kept here.
"""
import ast
import itertools
import linecache
import math
import weakref

import numpy as np

from ..errors import printable, short_location
from ..recursion import iterate
from . import fp_errors
from .devices import is_device_array
from .graph import Graph
from .native.functions import tier_up_after
from .native.graphs import NativeGraph
from .native.loops import NativeLoop, Restart, restarting
from .opdef import COND, CONST, PLACEHOLDER, WHILE
from .passes.buffer_reuse import written_loop_variables

_plan_ids = itertools.count()
MAX_INLINE_DEPTH = 32  # operators nested in one plan expression before it is stored in a variable
# plan indentation past which a Cond's branches are written flat, each under a guard of its own at
# one level: Python's parser stops at 100 levels (an `elif` chain of 1,000 tensor conditions)
MAX_NESTED_INDENT = 24


class Plan:
    """A graph lowered for one device: `plan.fn(*arrays)` returns the tuple of outputs."""

    def __init__(self, graph, device):
        lowering = _Lowering(device)
        self.source, self.fn, self._line_nodes = lowering.run(graph)
        self._spans = lowering.spans  # plan line -> [(node, first column, end column)] of inlined nodes
        self.native_loops = lowering.native_loops  # While loops that run as C once hot
        self.native = lowering.native  # per While loop: whether it runs as C, and if not, why
        self.filename = lowering.filename
        self.graph, self.device = graph, device
        if lowering.donating:  # a loop given its start array stopped INEXACT: the plan runs again
            self.fn = _restarting(self.fn)
        if device.xp is np and fp_errors.may_raise(graph):  # numpy's warnings name the user's line
            self.fn = fp_errors.plan_reporter(self).wrap(self.fn)
        self.on_direct = []  # called with `direct` when it is made or bound (ConcreteFunction's fast path)
        self.direct = self._direct(lowering.direct, len(graph.inputs))
        # the source stays in linecache (for tracebacks) while the plan lives, not after
        weakref.finalize(self, linecache.cache.pop, self.filename, None)

    def _direct(self, found, n_params):
        """The plan as a C Direct (entry.c) where it is one native loop: once the loop's Entry is
        bound, a call runs it without the plan's Python frame (a call it does not finish cleanly
        runs `fn`). Made now if the C entry module is loaded, else when the Entry is bound; each
        of `on_direct` is then given it. None otherwise."""
        if found is None:
            return None
        from .native import entry
        native, sources, constants, outputs = found
        plan, fn = weakref.ref(self), self.fn

        def make(module):
            return module.Direct(fn, tuple(sources), tuple(constants), tuple(outputs))

        def bound(c_entry):
            this = plan()
            if this is None:
                return
            if this.direct is None:
                this.direct = make(entry.loaded())
            this.direct.bind(c_entry, n_params)
            for hook in this.on_direct:
                hook(this.direct)
        native.on_entry.append(bound)
        return make(entry.loaded()) if entry.loaded() is not None else None

    def nodes_at(self, lineno, col=None, end_col=None):
        """The nodes computed on line `lineno` of the plan's source; given the columns of the
        expression running there, only the innermost node whose expression holds it."""
        nodes = self._line_nodes.get(lineno, [])
        if col is not None and end_col is not None and len(nodes) > 1:
            holding = [(end - start, node) for node, start, end in self._spans.get(lineno, ())
                       if start <= col and end_col <= end]
            if holding:
                return [min(holding, key=lambda h: h[0])[1]]
        return nodes

    def failing_nodes(self, exc):
        """The nodes computed on the plan line that raised `exc` (empty if it came from elsewhere)."""
        tb, nodes = exc.__traceback__, []
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.filename:
                nodes = self._line_nodes.get(tb.tb_lineno, nodes)
            tb = tb.tb_next
        return nodes


def _restarting(fn):
    """`fn`, run again from its inputs with the loops that update a start array in place on
    their Python path when one of them stops INEXACT (loops.Restart): the graph is pure, so
    running it again is running it once."""
    def plan(*arrays):
        try:
            return fn(*arrays)
        except Restart:
            restarting.active = True
            try:
                return fn(*arrays)
            finally:
                restarting.active = False
    return plan


def _made_after(t, start=None):
    """True if array `t` is `start` or an array made after it, by the plan: a fresh op's result or
    what a loop gives from such arrays; never an input's, a constant's or a view's array. (Loops
    after loops: a worklist, not recursion.)"""
    pending = [(t, start)]
    while pending:
        t, start = pending.pop()
        if t is start:
            continue
        node = t.node
        if node.opdef is WHILE:
            body = node.attrs["body"]
            pending += [(node.inputs[t.index], start), (body.outputs[t.index], body.inputs[t.index])]
        elif not (node.opdef.fresh and node.opdef not in (PLACEHOLDER, CONST)):
            return False
    return True


def _may_warn(node):
    """True if `node`, inside a loop, may make numpy warn: a float op, or an integer division (an
    integer overflow warns only on numpy scalars, which a C loop does not report either)."""
    return fp_errors.float_errors_of(node) and (
        any(t.dtype.kind in "fc" for t in (*node.inputs, *node.outputs)) or
        node.opdef.ufunc in ("floor_divide", "remainder", "divide", "true_divide", "power", "fmod", "divmod"))


def _given_up(node, root):
    """The loop variables of top-level While `node` whose start arrays the plan may give to the loop
    to update in place: made by the plan, read by nothing else and not returned; none where running
    the plan again would show (effects; numpy's warnings from the nodes before the loop)."""
    if node.graph is not root or any(n.opdef.stateful for n in root.walk()):
        return []
    before = root.nodes[:root.nodes.index(node)]
    if any(fp_errors.float_errors_of(n) for n in before) or any(
            _may_warn(n) for m in before for sub in m.subgraphs() for n in sub.walk()):
        return []
    n = len(node.attrs["body"].outputs)
    return [i for i, t in enumerate(node.inputs[:n]) if t.shape and t.users == [node] and _made_after(t)
            and sum(x is t for x in node.inputs) == 1 and not any(o is t for o in root.outputs)]


class RegionReport:
    """One region the lowering considered for native code (the whole graph, or a While loop):
    `native` (a NativeGraph or NativeLoop) when it runs as C once hot, else None and `why` it
    stays on numpy. Prints as one line."""

    def __init__(self, region, native, why):
        self.region, self.native, self.why = region, native, why

    @property
    def loop(self):  # the NativeLoop of a While region
        return self.native

    def __repr__(self):
        r = self.region
        where = f"graph '{r.name}'" if isinstance(r, Graph) else \
            f"{r.op} '{r.name}' at {short_location(r.location)}"
        if self.native is not None:
            return f"{where}: native C (built at its run {tier_up_after()})"
        return f"{where}: numpy ({self.why})"


def literal(value):
    """`value` as Python source text, when that text can only mean this value; else None.

    Only exact builtin types qualify (a subclass's `__repr__` is the user's code), finite
    floats (nan and inf have no literal), and ints whose text is short. Negative numbers
    are parenthesized, so `(-2) ** x` is not read as `-(2 ** x)`.
    """
    t = type(value)
    if value is None or t is bool or t is str:
        return repr(value)
    if (t is int and -2 ** 63 <= value < 2 ** 64) or (t is float and math.isfinite(value)):
        text = repr(value)
        return f"({text})" if text.startswith("-") else text
    if t is tuple:
        parts = [literal(v) for v in value]
        if None not in parts:
            return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
    return None


def _single_use(graph, t):
    """True if tensor `t` is read exactly once, by a plain node or as an output of `graph`.

    Its expression can be written at the use. Values read by a Cond or While are not
    (a branch or loop body may read them many times), nor buffers written in place.
    """
    users = t.users
    reads = len(users) + sum(o is t for o in graph.outputs)
    if reads != 1 or not users:
        return reads == 1
    (user,) = users
    if user.opdef is WHILE or (user.opdef is COND and user.inputs[0] is not t):  # a Cond's predicate is read once
        return False
    return user.in_place_input is None or user.inputs[user.in_place_input] is not t  # written in place: a variable


class _Lowering:
    def __init__(self, device):
        self.device, self.xp = device, device.xp
        self.env = {}        # closure name -> kernel or constant
        self.names = {}      # id(Tensor) -> variable (or inlined expression) holding its value
        self.inlined = {}    # id(Tensor) -> nodes whose expressions its name contains
        self.depths = {}     # id(Tensor) -> how deeply its inlined expression nests
        self.exprs = {}      # id(node) -> the expression it was inlined as
        self.spans = {}      # plan line -> [(inlined node, start, end column)]
        self.lines, self.line_nodes = [], {}
        self.native_loops = []
        self.native = []     # a NativeRegion per While: native C, or numpy and why
        self.donating = False  # a native loop updates a start array the plan gave up (Restart)
        self.loops = []      # (While node, NativeLoop, operand expressions) of each native loop, for `direct`
        self.direct = None   # (NativeLoop, sources, constants, outputs) where the plan is that one loop (Plan._direct)
        self.counter = itertools.count()
        self.segments = []   # where each open guarded segment of a flat Cond starts (its first line)
        self.filename = f"<autograph_lite plan {next(_plan_ids)}>"
        # freeing what is dead, in the graph's top level and in the body of a loop the plan runs: a
        # variable whose value no later line of its block reads is given to the next result, so
        # rebinding it frees the array, as CPython frees a local (a body's arrays no longer outlive their
        # iteration: NPBench's contour_integral page-faulted in 45 MB a call)
        self.root = None
        self.freeing = []    # the graphs whose nodes free what is dead: the top level, the loop bodies being written
        self.uses = {}       # id(Tensor) -> reads of it not yet written into a line
        self.reads = {}      # id(Tensor) -> the variables its inlined expression reads, once per read
        self.variable = {}   # id(Tensor) -> its variable, where that is a `v` variable of a freeing block
        self.holders = {}    # variable -> how many live tensors it holds (an in-place result keeps its input's)
        self.spare = []      # variables whose value is dead, to be given to the next results

    def run(self, graph):
        self.root = graph
        self.count_uses(graph)
        params = [self.fresh(t, "a") for t in graph.inputs]
        self.emit(f"def plan({', '.join(params)}):", 1)
        native, why = NativeGraph.for_graph(graph) if self.xp is np and graph.nodes else (None, None)
        if why is not None and not why.startswith("a graph with a while loop"):
            self.native.append(RegionReport(graph, native, why))
        if native is not None:  # the whole graph as one C function once hot; this Python until then
            self.native.append(RegionReport(graph, native, None))
            result = f"r{next(self.counter)}"  # (it reruns through the plan when numpy would warn)
            self.emit(f"{result} = {self.bind('k', native)}.call({', '.join(params)})", 2)
            self.emit(f"if {result} is not None:", 2)
            self.emit(f"return {result}", 3)
        outs = iterate(self.body(graph, 2))
        if native is None:
            self.direct = self._one_loop(graph, params)
        returned = [f"{o}.copy()" if self._is_const_array(o) else o for o in outs]
        self.emit(f"return ({', '.join(returned)}{',' if len(returned) == 1 else ''})", 2, reads=graph.outputs)
        closure = list(self.env)
        header = f"def make_plan({', '.join(closure)}):"
        source = "\n".join([header, *self.lines, "    return plan", ""])
        linecache.cache[self.filename] = (len(source), None, source.splitlines(True), self.filename)
        namespace = {}
        exec(compile(source, self.filename, "exec"), namespace)
        fn = namespace["make_plan"](*self.env.values())
        # line numbers: the header is line 1, self.lines[i] is line i + 2
        line_nodes = {i + 2: node for i, node in self.line_nodes.items()}
        self.spans = {i + 2: spans for i, spans in self.spans.items()}
        return source, fn, line_nodes

    def _one_loop(self, graph, params):
        """(NativeLoop, per loop input its plan parameter or -1, per loop input the constant the
        plan passes or None, per output the loop variable or -1 - its parameter) where `graph` is
        constants, parameters and one native While at its top level, and its outputs are the loop's
        variables or parameters; else None."""
        whiles = [n for n in graph.nodes if n.opdef is WHILE]
        if len(self.loops) != 1 or len(whiles) != 1 or any(n.opdef not in (CONST, WHILE) for n in graph.nodes):
            return None
        node, native, ins = self.loops[0]
        if node is not whiles[0] or native.donated:
            return None
        sources, constants = [], []
        for expr in ins:
            if expr in params:
                sources.append(params.index(expr))
                constants.append(None)
            elif expr in self.env:
                sources.append(-1)
                constants.append(self.env[expr])
            else:
                try:
                    value = ast.literal_eval(expr)  # a literal() of a Python scalar
                except (ValueError, SyntaxError):
                    return None
                if type(value) not in (int, float, bool) or literal(value) != expr:
                    return None
                sources.append(-1)
                constants.append(value)
        outputs = []
        n = len(node.attrs["body"].outputs)
        for t in graph.outputs:
            if t.node is node and t.index < n:
                outputs.append(t.index)
            elif any(t is p for p in graph.inputs):
                outputs.append(-1 - next(i for i, p in enumerate(graph.inputs) if p is t))
            else:
                return None
        return native, sources, constants, outputs

    def _is_const_array(self, name):
        value = self.env.get(name)
        return name.startswith("c") and (isinstance(value, np.ndarray) or is_device_array(value))

    def count_uses(self, graph):
        """Start freeing what is dead in `graph`: its nodes' reads and its outputs counted."""
        self.freeing.append(graph)
        for t in [t for node in graph.nodes for t in node.inputs] + list(graph.outputs):
            self.uses[id(t)] = self.uses.get(id(t), 0) + 1

    def fresh(self, tensor, prefix="v"):
        if prefix == "v" and any(tensor.node.graph is g for g in self.freeing):
            name = self.spare.pop() if self.spare else f"v{next(self.counter)}"
            self.hold(tensor, name)
        else:
            name = f"{prefix}{next(self.counter)}"
        self.names[id(tensor)] = name
        return name

    def hold(self, tensor, name):
        self.variable[id(tensor)] = name
        self.holders[name] = self.holders.get(name, 0) + 1

    def release(self, node, indent=None):
        """After `node`, of a freeing block, is lowered: the variables no later line reads are spare,
        and deleted at `indent` (a loop body's: `del vN`) unless None (the top level: rebinding one
        frees it). An inlined node's reads move into its expression, read where that is written."""
        if any(id(t) in self.depths for t in node.outputs):
            self.reads[id(node.outputs[0])] = [v for t in node.inputs for v in self.reads.get(id(t), [id(t)])]
            return
        for v in [v for t in node.inputs for v in self.reads.get(id(t), [id(t)])] + \
                [id(t) for t in node.outputs if self.uses.get(id(t), 0) == 0]:
            self.uses[v] = self.uses.get(v, 0) - 1
            name = self.variable.get(v)
            if self.uses[v] <= 0 and name is not None:
                del self.variable[v]
                self.holders[name] -= 1
                if self.holders[name] == 0:
                    self.spare.append(name)
                    if indent is not None:
                        self.emit(f"del {name}", indent)

    def bind(self, prefix, value):
        name = f"{prefix}{next(self.counter)}"
        self.env[name] = value
        return name

    def value(self, value):
        """An expression for `value` in the plan: its literal when that is exact, else a closure variable."""
        text = literal(value)
        return text if text is not None else self.bind("k", value)

    def emit(self, text, indent, node=None, reads=()):
        nodes = [node] if node is not None else []
        for t in reads:
            nodes = self.inlined.get(id(t), []) + nodes
        line = "    " * indent + text
        if nodes:
            self.line_nodes[len(self.lines)] = nodes
            spans = [(n, line.find(self.exprs[id(n)])) for n in nodes if id(n) in self.exprs]
            self.spans[len(self.lines)] = [(n, i, i + len(self.exprs[id(n)])) for n, i in spans if i >= 0] + \
                ([(node, 0, len(line))] if node is not None else [])
        self.lines.append(line)

    def body(self, graph, indent):
        """Lower `graph`'s nodes at `indent`; returns the names of its outputs. A walk for `iterate`:
        it yields the walks of the blocks nested in it (Cond branches, While bodies)."""
        freeing = any(graph is g for g in self.freeing)
        for node in graph.nodes:
            yield self.node(node, indent)
            if freeing:
                self.release(node, None if graph is self.root else indent)
        return [self.names[id(t)] for t in graph.outputs]

    def alias(self, placeholders, values):
        for t, v in zip(placeholders, values):
            self.names[id(t)] = v

    def node(self, node, indent):
        ins = [self.names[id(t)] for t in node.inputs]
        rule = RULES.get(node.opdef)
        if rule is not None:
            yield from rule(self, node, ins, indent)
        elif node.in_place_input is not None:
            self.in_place(node, ins, indent)
        elif node.opdef in STORE_SPELLINGS and _zeros_constant(node.inputs[0]):
            self.store_into_zeros(node, ins, indent)
        else:
            opdef = node.opdef
            spell = spelling(opdef)
            expr = spell(self.xp, ins, self.value, **node.attrs) if spell else None
            if expr is not None:
                out = node.outputs[0]
                depth = 1 + max((self.depths.get(id(t), 0) for t in node.inputs), default=0)
                if _single_use(node.graph, out) and depth <= MAX_INLINE_DEPTH:
                    # written where it is used, saving a store and a load; a deep chain (a sum unrolled
                    # from a long Python loop) is cut into statements: Python's parser nests 200 levels
                    self.names[id(out)] = expr
                    self.depths[id(out)] = depth
                    self.inlined[id(out)] = [n for t in node.inputs for n in self.inlined.get(id(t), [])] + [node]
                    self.exprs[id(node)] = expr
                else:
                    self.emit(f"{self.fresh(out)} = {expr}", indent, node, reads=node.inputs)
                return
            kernel = self.bind("k", opdef.kernel(self.xp, **node.attrs))
            outs = [self.fresh(t) for t in node.outputs]
            target = f"{', '.join(outs)} = " if outs else ""
            self.emit(f"{target}{kernel}({', '.join(ins)})", indent, node, reads=node.inputs)

    def const(self, node, ins, indent):
        value = node.attrs["value"]
        text = literal(value) if type(value) in (int, float, bool) else None
        if text is not None:
            self.names[id(node.outputs[0])] = text  # a Python scalar: written as a literal
            return
        if isinstance(value, np.ndarray):
            value = self.device.put(value)
        self.names[id(node.outputs[0])] = self.bind("c", value)
        yield from ()

    def in_place(self, node, ins, indent):
        """The node's result written into a dead input's buffer (see passes/buffer_reuse.py)."""
        k, opdef = node.in_place_input, node.opdef
        how, target = opdef.in_place, ins[k]
        if how.endswith("=") and (k == 0 or opdef.commutative):  # a binary op written into an operand
            self.emit(f"{target} {how} {ins[1 - k]}", indent, node, node.inputs)
        elif how.endswith("="):  # `a - b` into b: the op's ufunc with out=
            ufunc = getattr(self.xp, opdef.ufunc)
            self.emit(f"{self.bind('k', ufunc)}({ins[0]}, {target}, out={target})", indent, node, node.inputs)
        elif how == "store" and opdef in STORE_SPELLINGS:  # `x[i, j] = v`, as Python writes it
            self.spelled_store(node, target, ins, indent, node.inputs)
        elif how == "store":  # the kernel writes into input 0's buffer (SetItem)
            kernel = self.bind("k", opdef.kernel(self.xp, copy=False, **node.attrs))
            self.emit(f"{kernel}({', '.join(ins)})", indent, node, node.inputs)
        elif how == "copyto":  # where(c, x, y) into y's buffer
            self.emit(f"{self.bind('k', self.xp.copyto)}({target}, {ins[1]}, where={ins[0]})", indent, node,
                      node.inputs)
        else:  # "ufunc": the op's ufunc with out=
            ufunc = getattr(self.xp, opdef.ufunc)
            self.emit(f"{self.bind('k', ufunc)}({target}, out={target})", indent, node, node.inputs)
        self.names[id(node.outputs[0])] = target
        if id(node.inputs[k]) in self.variable:  # the result lives in its input's variable
            self.hold(node.outputs[0], target)

    def store_into_zeros(self, node, ins, indent):
        """A store into a constant array of zeros (`out = np.zeros(n)` or `np.empty(n)` filled in a
        loop): a new array of zeros, as numpy makes one (pages the system zeroes as they are first
        written), stored into in place, rather than a copy of the constant touching every page
        (NPBench's vadv copied three 12 MB arrays a call that eager only allocates)."""
        zeros, out = node.inputs[0].node.attrs["value"], node.outputs[0]
        target = self.fresh(out)
        self.emit(f"{target} = {self.bind('k', self.xp.zeros)}({zeros.shape!r}, {self.value(zeros.dtype)})",
                  indent, node)
        self.spelled_store(node, target, ins, indent, node.inputs[1:])

    def spelled_store(self, node, target, ins, indent, reads):
        """`target[index] = value` for store `node` (its `STORE_SPELLINGS` rule): into `target`'s array."""
        place = STORE_SPELLINGS[node.opdef](self.xp, [target, *ins[1:]], self.value, **node.attrs)
        self.emit(f"{place} = {ins[1]}", indent, node, reads)

    def assign(self, targets, values, indent, node=None, reads=()):
        if targets:
            self.emit(f"{', '.join(targets)} = {', '.join(values)}", indent, node, reads)

    def host_bool(self, pred):
        """The condition as the host sees it: on a GPU, read (and counted) by the device layer."""
        if self.xp is np:
            return pred
        return f"{self.bind('k', self.device.read_predicate)}({pred})"

    def cond(self, node, ins, indent):
        pred, captured = self.host_bool(ins[0]), ins[1:]
        outs = [self.fresh(t) for t in node.outputs]
        if indent >= MAX_NESTED_INDENT:
            yield from self.flat_cond(node, pred, captured, outs, indent, None)
            return
        self.emit(f"if {pred}:  # {printable(f'{node.name} at {short_location(node.location)}')}", indent, node,
                  node.inputs[:1])
        for i, key in enumerate(("then_branch", "else_branch")):
            if i == 1:
                self.emit("else:", indent, node)
            branch = node.attrs[key]
            self.alias(branch.inputs, captured)
            start = len(self.lines)
            self.assign(outs, (yield self.body(branch, indent + 1)), indent + 1, node, branch.outputs)
            if len(self.lines) == start:
                self.emit("pass", indent + 1)

    def flat_cond(self, node, pred, captured, outs, indent, guard):
        """A Cond written at `indent` without nesting: each branch's nodes under `if <its guard>:`,
        a Cond inside a branch flat beside it with guards of its own (`guard`: the enclosing
        branch's, None at the first level). Its branches' values are plain variables of the plan."""
        where = printable(f"{node.name} at {short_location(node.location)}")
        guards = [f"g{next(self.counter)}", f"g{next(self.counter)}"]
        self.emit(f"{guards[0]} = {guards[1]} = False  # {where}", indent, node)
        inner = indent if guard is None else indent + 1
        if guard is not None:
            self.emit(f"if {guard}:", indent, node)
        self.emit(f"if {pred}:", inner, node, node.inputs[:1])
        self.emit(f"{guards[0]} = True", inner + 1, node)
        self.emit("else:", inner, node)
        self.emit(f"{guards[1]} = True", inner + 1, node)
        for key, branch_guard in zip(("then_branch", "else_branch"), guards):
            branch = node.attrs[key]
            self.alias(branch.inputs, captured)
            names = yield self.flat_body(branch, indent, branch_guard)
            self.segment(branch_guard, indent)
            self.assign(outs, names, indent + 1, node, branch.outputs)
            self.end_segment(indent)

    def flat_body(self, graph, indent, guard):
        """`body` for a branch written flat at `indent`: its nodes at `indent + 1` in segments
        under `if guard:`, a Cond among them written flat between two segments."""
        self.segment(guard, indent)
        for node in graph.nodes:
            if node.opdef is COND:
                self.end_segment(indent)
                pred, captured = self.host_bool(self.names[id(node.inputs[0])]), \
                    [self.names[id(t)] for t in node.inputs[1:]]
                outs = [self.fresh(t) for t in node.outputs]
                yield from self.flat_cond(node, pred, captured, outs, indent, guard)
                self.segment(guard, indent)
            else:
                yield self.node(node, indent + 1)
        self.end_segment(indent)
        return [self.names[id(t)] for t in graph.outputs]

    def segment(self, guard, indent):
        self.emit(f"if {guard}:", indent)
        self.segments.append(len(self.lines))

    def end_segment(self, indent):
        if len(self.lines) == self.segments.pop():  # nothing under the guard
            del self.lines[-1]

    def while_(self, node, ins, indent):
        cond, body = node.attrs["cond"], node.attrs["body"]
        n = len(body.outputs)
        loop_vars = [self.fresh(t, "l") for t in node.outputs]
        native, why = NativeLoop.for_node(node, _given_up(node, self.root)) if self.xp is np else \
            (None, f"runs on {self.device.name}")
        self.native.append(RegionReport(node, native, why))
        if native is not None:  # a loop over scalars: C once it is hot, this Python loop until then
            self.native_loops.append(native)
            self.loops.append((node, native, list(ins)))
            result = f"r{next(self.counter)}"
            run = native  # it reports the floating-point errors it raised itself
            call = f"{self.bind('k', run)}.call({', '.join(ins)})"
            if native.donated:  # run again after a Restart: the Python loop
                self.donating = True
                call = f"None if {self.bind('k', restarting)}.active else {call}"
            self.emit(f"{result} = {call}", indent, node, node.inputs)
            self.emit(f"if {result} is not None:", indent, node)
            self.emit(f"{', '.join(loop_vars)}, = {result}", indent + 1, node)
            self.emit("else:", indent, node)
            indent += 1
        self.assign(loop_vars, ins[:n], indent, node, node.inputs[:n])
        for k in written_loop_variables(node):  # the loop's own array, which its body stores into
            self.emit(f"{loop_vars[k]} = {loop_vars[k]}.copy()", indent, node)
        self.alias(cond.inputs, loop_vars + ins[n:])
        where = f"  # {printable(f'{node.name} at {short_location(node.location)}')}"
        header = len(self.lines)
        self.emit(f"while True:{where}", indent, node)
        (pred,) = yield self.body(cond, indent + 1)
        pred = self.host_bool(pred)
        if len(self.lines) == header + 1:  # the condition is one expression: a plain `while`
            del self.lines[header]
            self.emit(f"while {pred}:{where}", indent, node, cond.outputs)
        else:
            self.emit(f"if not {pred}:", indent + 1, node, cond.outputs)
            self.emit("break", indent + 2, node)
        self.alias(body.inputs, loop_vars + ins[n:])
        start = len(self.lines)
        spare, self.spare = self.spare, []  # the body's own variables
        self.count_uses(body)
        self.assign(loop_vars, (yield self.body(body, indent + 1)), indent + 1, node, body.outputs)
        self.freeing.pop()
        self.spare = spare
        if len(self.lines) == start:
            self.emit("pass", indent + 1)


# how a structural node becomes plan lines: _Lowering method (self, node, operand names, indent);
# every other op is a kernel call, or its Python spelling (`spelling(opdef)`) written in place
RULES = {CONST: _Lowering.const, COND: _Lowering.cond, WHILE: _Lowering.while_}
NOT_LOWERED = {PLACEHOLDER: "a graph input: a parameter of the plan"}


# --- how an op is written as Python in the plan ----------------------------------------------
# SPELLINGS[opdef] = spell(xp, operand expressions, bind, **attrs) -> a Python expression the plan
# uses instead of a kernel call ("(v1 + v2)"), or None (a kernel call there); bind(value) gives
# the expression for a value it uses (a literal for exact builtin scalars, else a closure
# variable): never write a value as text. `ops/` adds the ops its facts do not spell (a subscript,
# `not`, a reduction); every other op is spelled from its facts (`_from_facts`) or not at all.
SPELLINGS = {}
# STORE_SPELLINGS[opdef] = spell(xp, operand expressions, bind, **attrs) -> the place a store written
# in place assigns to ("v1[0, v3]", from operands (target, value, *index values)): the plan writes
# `place = value`, Python's own item assignment, instead of calling the op's kernel
STORE_SPELLINGS = {}

# ufuncs that are a Python operator on arrays and numpy scalars alike (numpy's scalar fast path)
_INFIX = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "floor_divide": "//",
          "remainder": "%", "power": "**", "equal": "==", "not_equal": "!=", "less": "<",
          "less_equal": "<=", "greater": ">", "greater_equal": ">="}
_PREFIX = {"negative": "-"}


def _zeros_constant(t, at_least=1 << 16):
    """Whether `t` is a constant array of at least `at_least` bytes, every byte zero (-0.0 is not)."""
    value = t.node.attrs.get("value") if t.node.opdef is CONST else None
    return isinstance(value, np.ndarray) and value.nbytes >= at_least and value.dtype.kind in "biufc" \
        and value.flags.c_contiguous and not value.view(np.uint8).any()


def spelling(opdef):
    """The op's Python spelling in the plan (a `SPELLINGS` rule), or None: a kernel call."""
    rule = SPELLINGS.get(opdef)
    return rule if rule is not None else _from_facts(opdef)


def _from_facts(opdef):
    if opdef.ufunc in _INFIX:
        symbol = _INFIX[opdef.ufunc]
        return lambda xp, a, bind: f"({a[0]} {symbol} {a[1]})"
    if opdef.ufunc in _PREFIX:
        symbol = _PREFIX[opdef.ufunc]
        return lambda xp, a, bind: f"({symbol}{a[0]})"
    if opdef.expansion is not None and len(opdef.expansion) == 1:  # one ufunc call (relu: maximum(x, 0))
        ((ufunc, args),) = opdef.expansion
        return lambda xp, a, bind: (f"{bind(getattr(xp, ufunc))}"
                                    f"({', '.join(a[0] if o == 'x' else bind(o) for o in args)})")
    return None
