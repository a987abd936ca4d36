"""Elementwise fusion: a chain of elementwise nodes becomes one FusedElementwise node
(runtime/fused.py: the op and its kernel, which runs the chain as one C loop, one CUDA
kernel or numpy blocks). The pass only rewrites the graph; it knows no backend.
"""
import numpy as np

# (_whole_array_evaluator: the fused kernel's reference evaluation, which tests read here)
from ..fused import BLOCKED_MIN_SIZE, FUSED, _whole_array_evaluator  # noqa: F401
from .util import is_output, subgraphs_first

def _fusible(node):
    """An elementwise node whose result is large, or of a size known only at run time:
    for small arrays a fused kernel saves nothing over calling the ops one by one (a
    ctypes call with its pointer arguments costs a few microseconds on its own)."""
    opdef = node.opdef
    if len(node.outputs) != 1 or not opdef.elementwise or not (opdef.ufunc or opdef.expansion):
        return False
    shape = node.outputs[0].shape
    return None in shape or int(np.prod(shape)) >= BLOCKED_MIN_SIZE


def _fuse(graph):
    group_of, groups = {}, []  # node -> the chain it joins (keyed by the node itself)
    for node in reversed(graph.nodes):
        if not _fusible(node):
            continue
        out = node.outputs[0]
        uses = out.users
        if len(uses) == 1 and uses[0] in group_of and not is_output(graph, out):
            group = group_of[uses[0]]
            group.append(node)
        else:
            group = [node]
            groups.append(group)
        group_of[node] = group
    for group in groups:
        if len(group) > 1:
            root = group[0]  # the last node of the chain in graph order: its result is the chain's
            fused = _fused_node(graph, list(reversed(group)), before=root)
            graph.replace_all_uses(root.outputs[0], fused.outputs[0])
            graph.erase_nodes(group)


def _fused_node(graph, group, before):
    """One node computing `group` (in graph order; the last node's output is the result)."""
    inputs, steps, step_of, exprs = [], [], {}, {}  # step_of, exprs: by the member node

    def operand(t):
        if t.node in step_of:
            return ("t", step_of[t.node]), exprs[t.node]
        k = next((k for k, x in enumerate(inputs) if x is t), None)
        if k is None:
            k = len(inputs)
            inputs.append(t)
        return ("in", k), f"${k}"
    for node in group:
        args, texts = zip(*[operand(t) for t in node.inputs])
        steps.append((node.op, args, node.outputs[0].dtype))
        step_of[node] = len(steps) - 1
        exprs[node] = f"{node.op}({', '.join(texts)})"
    root = group[-1].outputs[0]
    operands = tuple((t.dtype, t.weak, _layout_kind(t, root.shape)) for t in inputs)
    return graph.create_node(FUSED, inputs,
                             {"steps": tuple(steps), "expr": exprs[group[-1]], "operands": operands},
                             [(root.shape, root.dtype, root.weak)], group[-1].location,
                             name=graph.unique_name("Fused"), before=before)


def _layout_kind(t, out_shape):
    """How the C kernel reads input `t`: "scalar", "row" (its shape is the result's trailing
    dims, as a bias is) or "full" (the result's shape; checked when the kernel runs)."""
    if t.shape == ():
        return "scalar"
    k = len(t.shape)
    if k < len(out_shape) and None not in t.shape and tuple(out_shape[-k:]) == tuple(t.shape):
        return "row"
    return "full"


def run(graph):
    subgraphs_first(graph, _fuse)
