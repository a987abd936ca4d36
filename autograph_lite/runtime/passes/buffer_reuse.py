"""Buffer reuse: an elementwise op writes its result into a dead input's buffer.

`v3 = v1 + v2` becomes `v1 += v2` (v3 is v1) when the op can run in place (`OpDef.in_place`;
`v2 = SetItem(v1, ...)` becomes `v1[...] = ...`, so a fill loop stores instead of copying)
and v1 is an array this graph computed itself as a new array (`OpDef.fresh`: not an input, a
constant or a view of either), nothing reads it after the op, and it has the result's static
shape and dtype. Saves an allocation per op, which matters for the small arrays of recurrent
cells. The mark is the node's `in_place_input`, which the lowering reads.

A store may also write a buffer that other nodes read, where each of them runs before it: the
unrolled `y[:, j] = a * x[:, j] + b * y[:, j - 1]` reads the old array through a view and then
stores into it (NPBench's deriche copied its 1500 x 1000 array 2,500 times a call). "Runs
before" is by position in the graph (the plan's order), followed through what may alias the
buffer (a view, any op not `fresh`) and through what the plan may write inside a later
expression (a value read once is inlined where it is read: `_single_use` in the lowering).

In a While's body, a loop variable whose next value is a new array of the body's own (no other
variable's) is the loop's to write (`_loop_owned`) where the body reads it only to store into it
or to compute that next value (`P0 = P0 + X`): the plan copies its start value once, on entering
the loop, and each iteration writes in place rather than making a new array (NPBench's
correlation copied its 1400 x 1400 table twice an iteration once the rest of its Python loop ran
as a graph loop; contour_integral made a 200 x 400 complex array an iteration).

A tensor `if`'s branch may store into an array from outside it in place where that array is the
graph's own (a new array, a loop's own variable, or a Cond result that is one on every branch)
and the `if` is its last reader (`_donated`): on the runs taking the branch nobody reads the old
contents again, on the others the array passes through unchanged. A loop variable whose next
value is such a Cond result is the loop's own too (NPBench's scattering_self_energies copied its
38 KB Sigma on each of 21,600 `if E - w >= 0: Sigma[k, E, a] += ...`). Stores only: the branch
of NPBench's contour_integral negating its 1.3 MB `X` in place changed how glibc's heap grew and
shrank between iterations, 6,000-12,000 page faults a call becoming 17,000-19,000 (1.03 -> 1.22).
"""
import numpy as np

from ..opdef import COND, PLACEHOLDER, WHILE
from .util import is_output, subgraphs_first


def _targets(opdef):
    """Which inputs the op may write into, in order of preference: where(c, x, y) keeps y and
    copies x in where c holds; a binary op may write into either operand (`a - b` into b is
    numpy's `subtract(a, b, out=b)`: NPBench's fdtd_2d allocated each `ey[1:] - 0.5 * (...)`)."""
    if opdef.in_place == "copyto":
        return (2,)
    if opdef.in_place == "store":
        return (0,)
    return (0, 1) if opdef.in_place.endswith("=") else (0,)


def _read_before(graph, a, node, position):
    """Whether every node reading `a`'s buffer, other than `node`, runs before `node` (see the
    module docstring)."""
    here, seen, todo = position[id(node)], set(), [a]
    while todo:
        t = todo.pop()
        for user in t.users:
            if user is node:
                continue
            if position.get(id(user), here) >= here:
                return False  # runs after the store, or inside another graph
            for out in user.outputs:
                if id(out) in seen:
                    continue
                seen.add(id(out))
                returned = sum(o is out for o in graph.outputs)
                if returned and (not user.opdef.fresh or returned + len(out.users) == 1):
                    return False  # returned as a view of the buffer, or computed in the return statement
                if not user.opdef.fresh or returned + len(out.users) == 1:  # may alias `a`, or may be inlined later
                    todo.append(out)
    return True


def _loop_owned(body, owned):
    """{id: position} of the body's loop-variable placeholders it may write into (see the module
    docstring): the largest set where each one's next value is a new array of the body's, or a
    Cond or While result that is one given the set (`owned`: those of the loops inside), passing
    on at most the variable's own array (another variable's would be that one's start value,
    which the plan copies only for a variable written itself: a reviewer's `j = p` in a branch),
    and whose next value no other variable may view (a branch's `p = p + 1.0` written in place
    would change the `v = p[1:]` the last iteration left)."""
    outs = body.outputs
    mine = {id(p): k for k, (p, out) in enumerate(zip(body.inputs, outs))
            if out is not p and out.node.graph is body and sum(o is out for o in outs) == 1
            and (out.node.opdef.fresh or out.node.opdef in (COND, WHILE)) and not _held_elsewhere(body, out, k)}
    while True:
        trial = {**owned, **mine}
        lost = [key for key, k in mine.items()
                if outs[k].node.opdef in (COND, WHILE) and not _own_array(outs[k], trial, body.inputs[k])]
        if not lost:
            return mine
        for key in lost:
            del mine[key]


def _own_array(t, owned, home=None):
    """Whether `t` is an array its graph may write without another value seeing it: a new array
    (`OpDef.fresh`), a donated branch input or an owned loop variable (`owned`; only `home`, where
    given), a Cond result that is, on every branch, a new array of the branch or an outside array
    of its own that the Cond reads last, or a While result that is a new array of the body's or
    its start value, an array of its own that the loop reads last. A result another output of the
    branch or body may hold (the same tensor or a view of it) is not."""
    todo = [(t, home)]
    while todo:
        t, home = todo.pop()
        node = t.node
        if node.opdef.fresh:
            continue
        if id(t) in owned:
            if owned[id(t)] is None or home is None or t is home:
                continue
            return False
        if node.opdef is WHILE:
            body, k = node.attrs["body"], t.index
            out = body.outputs[k]
            if sum(o is out for o in body.outputs) != 1 or _held_elsewhere(body, out, k) \
                    or not _last_read_by(node.inputs[k], node):
                return False
            todo.append((node.inputs[k], home))  # its value after no iteration
            if out is not body.inputs[k]:
                if out.node.opdef is PLACEHOLDER:  # another variable's array: its start, uncopied (`a, b = b, a`)
                    return False
                todo.append((out, body.inputs[k]))
            continue
        if node.opdef is not COND:
            return False
        for branch in node.subgraphs():
            out = branch.outputs[t.index]
            if sum(o is out for o in branch.outputs) != 1 or _held_elsewhere(branch, out, t.index):
                return False
            if out.node.graph is branch and out.node.opdef.fresh:
                continue
            i = next((i for i, p in enumerate(branch.inputs) if p is out), None)
            if i is None or not _last_read_by(node.inputs[1 + i], node):
                return False
            todo.append((node.inputs[1 + i], home))
    return True


def _last_read_by(t, block):
    """Whether `block` (a Cond or While) is the one reader of `t` in their graph, which does not
    return it."""
    return t.node.graph is block.graph and t.users == [block] and not is_output(block.graph, t)


def _donated(cond, owned):
    """{id: None} of a Cond's branch placeholders for outside arrays the branch may write (see the
    module docstring); `owned`: the loops' own variables, and the arrays donated to branches around."""
    found = {}
    for i, t in enumerate(cond.inputs[1:]):
        if _last_read_by(t, cond) and None not in t.shape and _own_array(t, owned):
            for branch in cond.subgraphs():
                found[id(branch.inputs[i])] = None
    return found


def _held_elsewhere(body, out, k):
    """Whether a body output other than the k-th may hold `out`'s array (a view or reshape of it):
    written in place on the next iteration, that variable would change with it, where eagerly it
    keeps the array `p + x` made (a store, eagerly in place too, shows through such views alike)."""
    seen, todo = {id(out)}, [out]
    while todo:
        t = todo.pop()
        if any(o is t for j, o in enumerate(body.outputs) if j != k):
            return True
        for user in t.users:
            if not user.opdef.fresh:
                for o in user.outputs:
                    if id(o) not in seen:
                        seen.add(id(o))
                        todo.append(o)
    return False


def written_loop_variables(node):
    """The positions of a While's loop variables its body stores into in place, directly or in a
    tensor `if`'s branch it gives them to: the plan copies their start values on entering the loop."""
    body = node.attrs["body"]
    return [k for k, p in enumerate(body.inputs[:len(body.outputs)]) if _written_in_place(p)]


def _written_in_place(t):
    """Whether an op writes `t`'s array in place: directly, in a branch of a tensor `if` given it,
    or through what a Cond or While hands it on as (a branch passing it through, a loop's start)."""
    todo, seen = [t], set()
    while todo:
        t = todo.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        for u in t.users:
            if u.in_place_input is not None and u.inputs[u.in_place_input] is t:
                return True
            if u.opdef is COND:
                for i, x in enumerate(u.inputs[1:]):
                    if x is t:
                        for branch in u.subgraphs():
                            todo.append(branch.inputs[i])
                            todo += [u.outputs[j] for j, o in enumerate(branch.outputs) if o is branch.inputs[i]]
            elif u.opdef is WHILE:
                body = u.attrs["body"]
                for k, x in enumerate(u.inputs[:len(body.outputs)]):
                    if x is t:
                        todo += [body.inputs[k], u.outputs[k]]
    return False


def _mark(graph, owned):
    position = None
    for node in graph.nodes:
        opdef = node.opdef
        if opdef.in_place is None or not node.inputs:
            continue
        if opdef.in_place == "copyto" and (node.inputs[0].dtype != np.bool_ or node.inputs[1].weak):
            # copyto(where=c) needs a bool mask (where() takes any condition's truth), and it refuses a
            # Python int out of the target's range that where() wraps (fuzzer seed 5011349)
            continue
        out = node.outputs[0]
        for k in _targets(opdef):
            a = node.inputs[k]
            maker = a.node.opdef
            if id(a) in owned and owned[id(a)] is not None:
                # a loop variable: only its one reader, a store or the op making its next value
                # (`_loop_owned` took only those whose next value no other variable may view)
                if a.users != [node] or (opdef.in_place != "store" and graph.outputs[owned[id(a)]] is not out):
                    continue
            elif id(a) in owned and opdef.in_place != "store":
                continue  # a branch's array from outside takes stores only (see the module docstring)
            elif id(a) not in owned and not maker.fresh:  # (or a branch's array from outside: `_donated`)
                continue
            if not (a.node.graph is graph and not is_output(graph, a) and a.shape == out.shape
                    and None not in a.shape and len(a.shape) >= 1 and a.dtype == out.dtype and not a.weak):
                continue
            if a.users != [node]:
                if opdef.in_place != "store" or not all(u.graph is graph for u in a.users):
                    continue
                if position is None:
                    position = {id(n): i for i, n in enumerate(graph.nodes)}
                if not _read_before(graph, a, node, position):
                    continue
            node.in_place_input = k
            break


def run(graph):
    owned = {}  # id -> position: a loop's own variable; -> None: a branch's array from outside (`_donated`)
    for node in reversed(list(graph.walk())):  # inner loops first
        if node.opdef is WHILE:
            owned.update(_loop_owned(node.attrs["body"], owned))
    for node in graph.walk():  # parents first: what a branch may write follows what its graph owns
        if node.opdef is COND:
            owned.update(_donated(node, owned))
    subgraphs_first(graph, lambda g: _mark(g, owned))
