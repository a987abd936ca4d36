"""Loop-invariant code motion: nodes of a While body whose inputs do not change between
iterations are computed once, before the loop, and passed in. Row products `X[i] @ W`
of invariant X and W become one batched `X @ W` before the loop.

Only ops that cannot raise are hoisted (elementwise math, matmul, reductions, casts,
transposes, slicing with slices/None): hoisted code runs even when the loop runs zero
times, and must not fail where the eager program would not have.
"""
from ..graph import Node, Slot, Tensor
from ..opdef import lookup
from .util import is_pure, rewire

_SAFE = {"MatMul", "Sum", "Mean", "Max", "Min", "Prod", "Any", "All", "Cast", "Transpose",
         "ExpandDims", "Shape", "Size", "ZerosLike", "OnesLike", "Softmax"}


def _hoistable(node):
    if not is_pure(node):
        return False
    if node.op == "StridedSlice":
        return all(i is None or i is Ellipsis or (isinstance(i, slice) and all(
            b is None or isinstance(b, int) for b in (i.start, i.stop, i.step))) for i in node.attrs["index"])
    return lookup(node.op).elementwise or node.op in _SAFE


def _hoist_from(loop, graph):
    body, cond = loop.attrs["body"], loop.attrs["cond"]
    n = len(body.outputs)
    outer_of = {}  # id(body placeholder) -> the outer tensor it stands for
    for k, ph in enumerate(body.inputs):
        if k >= n or body.outputs[k] is ph:  # captures, and loop variables the body never changes
            outer_of[id(ph)] = loop.inputs[k]
    invariant_values = dict(outer_of)  # id(body tensor) -> outer tensor computing it
    hoisted_nodes, kept = [], []
    for node in body.nodes:
        if node.op == "Const" and not node.inputs:
            kept.append(node)
            continue
        if _hoistable(node) and all(id(i) in invariant_values or i.node.op == "Const" for i in node.inputs):
            outer_inputs = []
            for i in node.inputs:
                if id(i) in invariant_values:
                    outer_inputs.append(invariant_values[id(i)])
                else:  # a constant of the body: copy it out
                    c = Node(graph, "Const", i.node.name, (), dict(i.node.attrs), i.node.location)
                    c.outputs = [Tensor(c, 0, i.shape, i.dtype, i.weak)]
                    hoisted_nodes.append(c)
                    outer_inputs.append(c.outputs[0])
            copy = Node(graph, node.op, node.name, outer_inputs, node.attrs, node.location)
            copy.outputs = [Tensor(copy, o.index, o.shape, o.dtype, o.weak) for o in node.outputs]
            hoisted_nodes.append(copy)
            for o, c in zip(node.outputs, copy.outputs):
                invariant_values[id(o)] = c
            continue
        kept.append(node)
    moved = [id(o) for node in body.nodes if node not in kept for o in node.outputs]
    if not moved:
        return []
    # values computed before the loop enter the body (and cond) as new inputs
    used = {id(i) for node in kept for i in node.inputs} | {id(t) for t in body.outputs}
    replacements = {}
    for node in body.nodes:
        if node in kept:
            continue
        for o in node.outputs:
            if id(o) in used:
                ph = body.placeholder(o.shape, o.dtype, name=f"{o.node.name}_hoisted", weak=o.weak)
                body.inputs.append(ph)
                cond.inputs.append(cond.placeholder(o.shape, o.dtype, name=f"{o.node.name}_hoisted", weak=o.weak))
                loop.inputs = tuple(loop.inputs) + (invariant_values[id(o)],)
                replacements[id(o)] = ph
    body.nodes = kept
    for node in body.nodes:
        node.inputs = tuple(replacements.get(id(t), t) for t in node.inputs)
    body.outputs = [replacements.get(id(t), t) for t in body.outputs]
    return hoisted_nodes


def _batch_row_products(loop, graph):
    """`X[i] @ W` in a loop body, X and W loop-invariant: one `X @ W` before the loop, and
    `(X @ W)[i]` inside it (equal for any i, since matmul broadcasts over leading axes)."""
    body, cond = loop.attrs["body"], loop.attrs["cond"]
    n = len(body.outputs)
    outer_of = {id(ph): loop.inputs[k] for k, ph in enumerate(body.inputs)
                if k >= n or body.outputs[k] is ph}
    new_outer, replacements = [], {}
    for node in body.nodes:
        if node.op != "MatMul":
            continue
        row, w = node.inputs
        picker = row.node
        index = picker.attrs.get("index", ())
        if (picker.op != "StridedSlice" or len(picker.inputs) != 2 or len(index) != 1 or not isinstance(index[0], Slot)
                or id(picker.inputs[0]) not in outer_of or id(w) not in outer_of):
            continue
        x, i = outer_of[id(picker.inputs[0])], picker.inputs[1]
        if x.ndim < 2 or x.shape[0] is None:
            continue
        w_outer = outer_of[id(w)]
        out = node.outputs[0]
        batched = Node(graph, "MatMul", node.name + "_batched", [x, w_outer], {}, node.location)
        batched.outputs = [Tensor(batched, 0, (x.shape[0],) + out.shape, out.dtype, out.weak)]
        new_outer.append(batched)
        ph = body.placeholder(batched.outputs[0].shape, out.dtype, name=f"{node.name}_rows")
        body.inputs.append(ph)
        cond.inputs.append(cond.placeholder(batched.outputs[0].shape, out.dtype, name=f"{node.name}_rows"))
        loop.inputs = tuple(loop.inputs) + (batched.outputs[0],)
        take = Node(body, "StridedSlice", node.name + "_row", [ph, i], {"index": (Slot(0),)}, node.location)
        take.outputs = [Tensor(take, 0, out.shape, out.dtype, out.weak)]
        body.nodes[body.nodes.index(node)] = take
        replacements[id(out)] = take.outputs[0]
    rewire(body, replacements)
    return new_outer


def _visit(graph):
    nodes = []
    for node in graph.nodes:
        for sub in node.subgraphs():
            _visit(sub)
        if node.op == "While":
            nodes.extend(_hoist_from(node, graph))
            nodes.extend(_batch_row_products(node, graph))
        nodes.append(node)
    graph.nodes = nodes


def run(graph):
    _visit(graph)
