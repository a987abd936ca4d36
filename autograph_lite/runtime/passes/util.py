"""Helpers the passes share: walking sub-graphs, what has side effects."""
from ..opdef import CONTROL_FLOW


def subgraphs_first(graph, fn):
    """Apply `fn` to every sub-graph (innermost first), then to `graph` (an explicit stack: Conds
    nest 1,000 deep in an `elif` chain)."""
    stack = [(graph, _subgraphs_of(graph))]
    while stack:
        sub = next(stack[-1][1], None)
        if sub is not None:
            stack.append((sub, _subgraphs_of(sub)))
            continue
        fn(stack.pop()[0])


def _subgraphs_of(graph):
    return (sub for node in graph.nodes for sub in node.subgraphs())


def _nested(node):
    """The nodes inside Cond or While `node`, at any depth, but for the Conds and Whiles themselves."""
    return (n for sub in node.subgraphs() for n in sub.walk() if n.opdef not in CONTROL_FLOW)


def has_effects(node):
    """True if running `node` does more than compute its outputs (random draws, prints, stacks)."""
    if node.opdef in CONTROL_FLOW:
        return any(n.opdef.stateful for n in _nested(node))
    return node.opdef.stateful


def raises(node):
    """True if running `node` can raise where eager code would (`OpDef.raises`; for a Cond or While,
    a node of its sub-graphs): such a node is kept though nothing uses its outputs."""
    if node.opdef in CONTROL_FLOW:
        return any(n.opdef.raises(n) for n in _nested(node))
    return node.opdef.raises(node)


def is_pure(node):
    return not node.opdef.structural and not node.opdef.stateful


def is_output(graph, t):
    """True if `graph` returns tensor `t` (eager returns a distinct array there)."""
    return any(o is t for o in graph.outputs)


def returned_through_views(graph):
    """Ids of the tensors `graph` returns, or returns a view of (through ops whose result may share
    its input's memory, `OpDef.fresh` false): replacing one by an argument or a constant would
    make the returned array share their memory, where eager's is a fresh array (or a view of one:
    `np.squeeze((y - 0)[None])`, fuzzer seed 1193008156). An output only copied into the caller's
    array it updates (`graph.write_back_outputs`) is not returned: `A[:] = v` may write v there."""
    written_back = {k for _, k in graph.write_back_outputs}
    found = {id(o) for k, o in enumerate(graph.outputs) if k not in written_back}
    for node in reversed(graph.nodes):
        if not node.opdef.fresh and any(id(o) in found for o in node.outputs):
            found.update(id(t) for t in node.inputs)
    return found
