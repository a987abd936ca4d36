"""The backprop engine: reverse-mode gradients built as graph nodes.

`gradients(ys, xs, dys)` walks the graph being built backwards from `ys`, calling each
op's registered rule, and adds the backward nodes to the same graph, so the optimizer
and executor see forward and backward together. The user-facing `ag.grad` and
`ag.value_and_grad`, which trace and compile, are in autograph_lite/autodiff.py.

Control flow:
- Cond: a backward Cond on the same predicate; each branch recomputes its forward
  branch and backpropagates through it, so only the branch that ran contributes.
- While: the forward loop pushes, each iteration, the values of the loop variables that
  change (never loop-invariant ones) onto a per-run stack; the backward loop pops them
  in reverse, recomputes that iteration's body and backpropagates through it. Memory is
  one entry per iteration; the trip count is whatever the data made it.
"""
from ..runtime.graph import Graph, backward_of, copy_graph, current_graph, internal_reads
from ..runtime.passes.util import has_effects
from . import stack_ops
from .core import GRADIENTS, convert_to_tensor
from .control_flow import cond, stage_while
from .gradient_ops import float_dtype
from .math_ops import add
from .array_ops import zeros_like
from ..runtime.opdef import COND, WHILE


@internal_reads()  # the backward pass reads forward values that user code replaced in place
def gradients(ys, xs, dys):
    """Cotangents of `xs` given cotangents `dys` of `ys` (None where nothing flows)."""
    graph = current_graph()
    ys = [None if y is None else graph.capture(y) for y in ys]
    xs = [graph.capture(x) for x in xs]
    needed = _between(graph, xs, [y for y in ys if y is not None])
    grads = {}
    for y, dy in zip(ys, dys):
        if y is not None and dy is not None:
            _accumulate(grads, y, convert_to_tensor(dy, graph))
    for node in reversed(list(graph.nodes)):
        if id(node) not in needed:
            continue
        out_grads = [grads.get(id(o)) for o in node.outputs]
        if all(g is None for g in out_grads):
            continue
        rule = _rule(node)
        with backward_of(node):  # the nodes it builds remember `node` (Node.forward), for ag.debug
            in_grads = rule(node, *out_grads)
        for inp, g in zip(node.inputs, in_grads):
            if g is not None and float_dtype(inp):
                _accumulate(grads, inp, g)
    return [grads.get(id(x)) for x in xs]


def _accumulate(grads, tensor, g):
    previous = grads.get(id(tensor))
    grads[id(tensor)] = g if previous is None else add(previous, g)


def _rule(node):
    rule = GRADIENTS.get(node.opdef)
    if rule is None:
        raise NotImplementedError(f"no gradient is defined for op {node.op} "
                                  f"(node '{node.name}' created at {node.location})")
    return rule


def _between(graph, xs, ys):
    """ids of nodes of `graph` that depend on some x and that some y depends on."""
    from_x = {id(x) for x in xs}
    forward = set()
    for node in graph.nodes:
        if any(id(i) in from_x for i in node.inputs):
            forward.add(id(node))
            from_x.update(id(o) for o in node.outputs)
    members = {id(n) for n in graph.nodes}
    backward, stack = set(), [y.node for y in ys]
    while stack:
        node = stack.pop()
        if id(node) in backward or id(node) not in members:
            continue
        backward.add(id(node))
        stack.extend(i.node for i in node.inputs)
    return forward & backward


# --- re-running a sub-graph ---------------------------------------------------------------

def inline(sub, inputs):
    """Add copies of `sub`'s nodes to the current graph, fed with `inputs`; returns its outputs.

    Side-effect-only nodes (print, assert) are not copied: recomputing a step must not
    print or check twice.
    """
    graph = current_graph()
    values = {id(p): convert_to_tensor(v, graph) for p, v in zip(sub.inputs, inputs)}
    for node in sub.nodes:
        if _effect_only(node):
            continue
        ins = [values[id(i)] for i in node.inputs]
        attrs = {k: _quiet(v) if isinstance(v, Graph) else v for k, v in node.attrs.items()}
        copy = graph.add_node(node.op, ins, attrs, [(o.shape, o.dtype) for o in node.outputs],
                              location=node.location)
        for old, new in zip(node.outputs, copy.outputs):
            new.weak = old.weak
            values[id(old)] = new
    return [values[id(o)] for o in sub.outputs]


def _effect_only(node):
    return not node.outputs and has_effects(node)


def _quiet(sub):
    """A Cond branch or loop body the recomputation runs: `sub`, or a copy of it without its
    side-effect-only nodes at any depth (a loop in a branch printed each iteration twice: fuzzer
    seed 1204005142)."""
    if not any(_effect_only(n) for n in sub.walk()):
        return sub
    copy = copy_graph(sub, parent=sub.parent, outer={})  # captures still name the same outer values
    graphs = [copy]
    while graphs:
        g = graphs.pop()
        g.erase_nodes([n for n in g.nodes if _effect_only(n)])
        graphs.extend(s for n in g.nodes for s in n.subgraphs())
    return copy


# --- Cond -------------------------------------------------------------------------------

def _cond_grad(node, *dys):
    pred, captures = node.inputs[0], list(node.inputs[1:])
    wanted = [float_dtype(c) for c in captures]
    dys = [dy if dy is not None else (zeros_like(o) if float_dtype(o) else None) for o, dy in zip(node.outputs, dys)]

    def branch(sub):
        def backward():
            outs = inline(sub, captures)
            local = [convert_to_tensor(c) for c in captures]
            grads = gradients(outs, local, dys)
            return tuple((g if g is not None else zeros_like(c)) if w else None
                         for g, c, w in zip(grads, local, wanted))
        return backward

    grads = cond(pred, branch(node.attrs["then_branch"]), branch(node.attrs["else_branch"]))
    return [None, *grads]


# --- While ------------------------------------------------------------------------------

def _while_grad(node, *dys):
    cond_g, body_g = node.attrs["cond"], node.attrs["body"]
    if any(n.opdef in (stack_ops.POP, stack_ops.SIZE) for g in (cond_g, body_g) for n in g.walk()):
        GRADIENTS[stack_ops.POP](node)  # a backward loop: second order through While is not supported
    n = len(body_g.outputs)
    captures = list(node.inputs[n:])
    inits = list(node.inputs[:n])
    variant = [k for k in range(n) if body_g.outputs[k] is not body_g.inputs[k]]
    stack = _record_iterations(node, variant)

    var_idx = [k for k in range(n) if float_dtype(node.outputs[k])]
    cap_idx = [j for j, c in enumerate(captures) if float_dtype(c)]
    start = [dys[k] if dys[k] is not None else zeros_like(node.outputs[k]) for k in var_idx]
    start += [zeros_like(captures[j]) for j in cap_idx]
    specs = [(body_g.inputs[k].shape, body_g.inputs[k].dtype) for k in variant]

    def more(*state):
        return stack_ops.size(stack) > 0

    def step(state):
        d_vars, d_caps = list(state[:len(var_idx)]), list(state[len(var_idx):])
        popped = stack_ops.pop(stack, specs)
        values = list(inits)
        for k, v in zip(variant, popped):
            values[k] = v
        values = [convert_to_tensor(v) for v in values]
        local_caps = [convert_to_tensor(c) for c in captures]
        outs = inline(body_g, values + local_caps)
        xs = [values[k] for k in var_idx] + [local_caps[j] for j in cap_idx]
        grads = gradients([outs[k] for k in var_idx], xs, d_vars)
        new_vars = [g if g is not None else zeros_like(x) for g, x in zip(grads[:len(var_idx)], xs)]
        new_caps = [d if g is None else add(d, g) for d, g in zip(d_caps, grads[len(var_idx):])]
        return tuple(new_vars + new_caps)

    names = [f"d_{body_g.inputs[k].node.name}" for k in var_idx] + [f"d_capture_{j}" for j in cap_idx]
    result = stage_while(more, step, tuple(start), names, node.location)
    grads = [None] * len(node.inputs)
    for k, g in zip(var_idx, result[:len(var_idx)]):
        grads[k] = g
    for j, g in zip(cap_idx, result[len(var_idx):]):
        grads[n + j] = g
    return grads


def _record_iterations(node, variant):
    """Make `node` push its changing loop variables at the start of every iteration.

    The While gets a fresh stack as an extra loop-invariant input and a copy of its body
    that pushes; the original body graph is left untouched (other nodes may share it).
    """
    graph = node.graph
    stack = graph.create_node(stack_ops.NEW.name, [], {}, [((), stack_ops.HANDLE, False)], node.location,
                              before=node).outputs[0]
    body, cond_g = node.attrs["body"], node.attrs["cond"]
    new_body, new_cond = _with_input(body, stack), _with_input(cond_g, stack)
    handle = new_body.inputs[-1]
    new_body.create_node(stack_ops.PUSH.name, [handle] + [new_body.inputs[k] for k in variant], {}, [],
                         node.location, name=f"{node.name}_push", before=new_body.nodes[0] if new_body.nodes else None)
    node.inputs = tuple(node.inputs) + (stack,)
    node.attrs = dict(node.attrs, body=new_body, cond=new_cond)
    return stack


def _with_input(sub, stack):
    """A copy of graph `sub` (same nodes) with one more input placeholder for `stack`."""
    copy = Graph(sub.name, parent=sub.parent)
    copy.nodes, copy.outputs = list(sub.nodes), list(sub.outputs)
    copy.captures = list(sub.captures)
    handle = copy.placeholder((), stack_ops.HANDLE, name="stack")
    copy.inputs = list(sub.inputs) + [handle]
    return copy


# the gradient rules of the node kinds that hold sub-graphs; every other op's is registered
# beside the op (`@grad_rule`)
GRADIENTS.update({COND: _cond_grad, WHILE: _while_grad})

# ops with no gradient rule, and why none is needed (tests/test_op_facts.py checks every op is in
# GRADIENTS or here)
_NO_OUTPUTS = "it has no outputs: no cotangent reaches it"
_RANDOM = "its values are drawn, not computed from its inputs: nothing flows back"
NOT_DIFFERENTIABLE = {
    "Placeholder": "a graph input: where gradients are read",
    "UfuncAt": "no rule yet: numpy's ufunc.at (np.add.at) applied once per occurrence of an index",
    "Const": "a constant: gradients stop there",
    "Assert": _NO_OUTPUTS, "Warn": _NO_OUTPUTS, "Print": _NO_OUTPUTS, "Raise": _NO_OUTPUTS, "CheckFits": _NO_OUTPUTS,
    "CheckShape": _NO_OUTPUTS,
    "Not": "its result is a Python bool: no cotangent reaches it",
    "PythonInt": "its result is a Python int: no cotangent reaches it",
    "PythonCall": "its result is a Python number (math.sqrt(t), float(t)): no cotangent reaches it",
    "RandomDraw": _RANDOM, "RandomNormal": _RANDOM, "RandomUniform": _RANDOM,
    # their outputs are Python objects (ops/python_values.py): `ag.grad` refuses to differentiate them
    "PythonLoop": "its outputs are Python objects a loop run as Python gives: no cotangent is defined",
    "DeferredCall": "its output is a Python object computed from one a loop run as Python gives: no cotangent "
                    "is defined",
    "PythonTruth": "its result is a bool: no cotangent reaches it",
    "FusedElementwise": "made only by optimization passes; gradients are taken of the traced graph",
    # gaps, not reasons (docs/ARCHITECTURE.md)
    **{op: f"no rule yet: {what}" for op, what in (
        ("Cross", "np.cross"), ("PseudoInverse", "np.linalg.pinv"),
        
        ("Interp", "np.interp"),
        ("BinCount", "np.bincount (its weights)"), ("Histogram", "np.histogram (its weights)"),
        ("SvdVals", "np.linalg.svdvals"), ("ConditionNumber", "np.linalg.cond"), ("MultiDot", "np.linalg.multi_dot"),
        ("MatrixNorm", "np.linalg.matrix_norm"), ("VectorNorm", "np.linalg.vector_norm"),
        ("LinalgOuter", "np.linalg.outer"), ("LinalgCross", "np.linalg.cross"), ("LinalgTrace", "np.linalg.trace"),
        ("LinalgDiagonal", "np.linalg.diagonal"), ("VecDot", "np.linalg.vecdot"))},
    "MatrixRank": "its result is an integer count",
    "Unique": "its values are a subset of its input's, found by sorting: piecewise constant",
}
