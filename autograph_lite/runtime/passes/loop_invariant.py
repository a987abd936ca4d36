"""Loop-invariant code motion: nodes of a While body whose inputs do not change between
iterations are computed once, before the loop, and passed in. Row products `X[i] @ W`
of invariant X and W become one batched `X @ W` before the loop.

Only ops that cannot raise (`not OpDef.raises(node)`: elementwise math, matmul, reductions,
casts, transposes; not arithmetic of a Python int with an array, which raises when the int
does not fit the array's dtype) and slicing with slices/None are hoisted: hoisted code runs even when
the loop runs zero times, and must not fail where the eager program would not have.
"""
from ...recursion import iterate
from ..graph import Slot
from ..opdef import CONST, WHILE
from .util import is_pure


def _hoistable(node):
    if not is_pure(node):
        return False
    if node.op == "StridedSlice":
        return all(i is None or i is Ellipsis or (isinstance(i, slice) and all(
            b is None or isinstance(b, int) for b in (i.start, i.stop, i.step))) for i in node.attrs["index"])
    if any(t.weak and t.dtype.kind in "iu" for t in node.inputs) and not all(t.weak for t in node.inputs):
        return False  # a Python int out of the other operand's range raises (NEP 50): seed 7011806
    return not node.opdef.raises(node)


def _outer_value(loop, t, among=None):
    """The outer tensor that body placeholder `t` (one of the first `among`) always holds (a
    capture, or a loop variable the body passes through unchanged), else None."""
    body = loop.attrs["body"]
    n = len(body.outputs)
    for k, ph in enumerate(body.inputs[:among]):
        if ph is t:
            return loop.inputs[k] if k >= n or body.outputs[k] is ph else None
    return None


def _add_loop_input(loop, value, name):
    """Pass outer tensor `value` into the loop as a new input; returns the body's placeholder for it."""
    body, cond = loop.attrs["body"], loop.attrs["cond"]
    ph = body.placeholder(value.shape, value.dtype, name=name, weak=value.weak)
    body.inputs.append(ph)
    cond.inputs.append(cond.placeholder(value.shape, value.dtype, name=name, weak=value.weak))
    loop.inputs = tuple(loop.inputs) + (value,)
    return ph


def _hoist_from(loop, graph):
    """Move the body's invariant nodes before the loop, in the enclosing `graph`."""
    body = loop.attrs["body"]
    moved = []
    for node in list(body.nodes):
        if node.opdef is CONST or not _hoistable(node) or not all(
                i.node.graph is graph or i.node.opdef is CONST or _outer_value(loop, i) is not None
                for i in node.inputs):
            continue
        outer_inputs = []
        for i in node.inputs:
            if i.node.graph is graph:  # computed by a node hoisted already
                outer_inputs.append(i)
            elif i.node.opdef is CONST:  # a constant of the body: copy it out
                outer_inputs.append(graph.create_node(CONST, (), dict(i.node.attrs), [(i.shape, i.dtype, i.weak)],
                                                      i.node.location, name=i.node.name, before=loop).outputs[0])
            else:
                outer_inputs.append(_outer_value(loop, i))
        node.inputs = outer_inputs
        graph.move_node(node, before=loop)
        moved.append(node)
    # values computed before the loop enter the body (and cond) as new inputs
    for node in moved:
        for o in node.outputs:
            if any(user.graph is body for user in o.users) or any(t is o for t in body.outputs):
                body.replace_all_uses(o, _add_loop_input(loop, o, f"{node.name}_hoisted"))


def _batch_row_products(loop, graph):
    """`X[i] @ W` in a loop body, X and W loop-invariant: one `X @ W` before the loop, and
    `(X @ W)[i]` inside it (equal for any i, since matmul broadcasts over leading axes)."""
    body = loop.attrs["body"]
    among = len(body.inputs)  # the rows this pass passes in are not batched again
    for node in list(body.nodes):
        if node.op != "MatMul":
            continue
        row, w = node.inputs
        picker = row.node
        index = picker.attrs.get("index", ())
        if picker.op != "StridedSlice" or len(picker.inputs) != 2 or len(index) != 1 or not isinstance(index[0], Slot):
            continue
        x, w_outer, i = _outer_value(loop, picker.inputs[0], among), _outer_value(loop, w, among), picker.inputs[1]
        if x is None or w_outer is None or x.ndim < 2 or x.shape[0] is None:
            continue
        out = node.outputs[0]
        batched = graph.create_node("MatMul", [x, w_outer], {}, [((x.shape[0],) + out.shape, out.dtype, out.weak)],
                                    node.location, name=node.name + "_batched", before=loop)
        ph = _add_loop_input(loop, batched.outputs[0], f"{node.name}_rows")
        take = body.create_node("StridedSlice", [ph, i], {"index": (Slot(0),)}, [(out.shape, out.dtype, out.weak)],
                                node.location, name=node.name + "_row", before=node)
        body.replace_all_uses(out, take.outputs[0])
        body.erase_nodes([node])


def _visit(graph):  # a walk for `iterate`: Conds nest 1,000 deep in an `elif` chain
    for node in list(graph.nodes):
        for sub in node.subgraphs():
            yield _visit(sub)
        if node.opdef is WHILE:
            _hoist_from(node, graph)
            _batch_row_products(node, graph)


def run(graph):
    iterate(_visit(graph))
