"""Graph optimization passes, run in the order listed here (and only here) before a graph's
first execution. Each module has `run(graph)`, rewriting the graph (and its sub-graphs) in
place; `optimize` runs them on a copy, so the traced graph stays as it was traced.

Turn passes off with `AG_DISABLE_PASSES=fusion,cse` (names as in ORDER, or `all`).
"""
import os

from ..graph import copy_graph
from . import (algebraic, buffer_reuse, constant_folding, cse, dce, fusion, loop_invariant, loop_variables,
               sibling_slices)

ORDER = (
    ("constant_folding", constant_folding),  # ops on constants -> constants
    ("algebraic", algebraic),                # x*1, x+0, -(-x), transpose(transpose(x)), ...
    ("cse", cse),                            # one node per distinct computation
    ("sibling_slices", sibling_slices),      # op(x[:, a:b]), op(x[:, b:c]) -> op(x[:, a:c]) sliced
    ("loop_invariant", loop_invariant),      # hoist what a While body recomputes unchanged
    ("loop_variables", loop_variables),  # a While's duplicate loop variables (an array and its memory) -> one
    ("dce", dce),                            # drop what no output or side effect needs
    ("fusion", fusion),                      # elementwise chains -> one blocked kernel
    ("buffer_reuse", buffer_reuse),          # ops write into a dead input's buffer
)


def disabled():
    names = {n.strip() for n in os.environ.get("AG_DISABLE_PASSES", "").split(",") if n.strip()}
    if "all" in names:
        return {name for name, _ in ORDER}
    unknown = names - {name for name, _ in ORDER}
    if unknown:
        raise ValueError(f"AG_DISABLE_PASSES names unknown passes {sorted(unknown)}; "
                         f"known: {[name for name, _ in ORDER]}")
    return names


def optimize(graph):
    """An optimized copy of `graph`."""
    graph = copy_graph(graph)
    off = disabled()
    for name, module in ORDER:
        if name not in off:
            module.run(graph)
    return graph
