"""Live-variable analysis: for each If/While/For, the names read after it before being rebound.

Runs backwards over statement lists. Loops iterate to a fixed point. Anything it
cannot follow precisely (try with handlers, with, break, continue) is treated
conservatively: names are assumed live rather than dead.
"""
import threading

import gast

from . import activity, anno


class _State(threading.local):
    annotating = False  # inside `annotate`: every statement analysed afresh, its annotations written


_state = _State()


def annotate(function_node):
    """Set anno.LIVE_OUT on every If/While/For of `function_node` (and nested functions)."""
    outer, _state.annotating = _state.annotating, True
    try:
        _block(function_node.body, set())
    finally:
        _state.annotating = outer


def _block(stmts, live_out):
    live = set(live_out)
    for stmt in reversed(stmts):
        live = _stmt(stmt, live)
    return live


def _stmt(node, live_out):
    """The names live before `node`, given those live after it. Inside `annotate` it writes the
    annotations of `node` and of what it holds; asked later (a converter, under `activity.memoized`)
    it only answers, from the memo: an answer is a function of (node, live_out), but a memo hit
    writes nothing, so annotations written under the memo would be those of whichever live_out
    the statement was last analysed for (a loop's fixed point asks its body about several)."""
    table = activity._memo.table
    if table is None or _state.annotating:
        return _live_in(node, live_out)
    key = ("live", id(node), frozenset(live_out))  # asked again for each `if` of an elif chain
    hit = table.get(key)
    if hit is None:
        hit = table[key] = (node, _live_in(node, live_out))
    return set(hit[1])


def _annotate(node, key, value):
    if _state.annotating or activity._memo.table is None:
        anno.set(node, key, value)


def _live_in(node, live_out):
    if isinstance(node, gast.If):
        _annotate(node, anno.LIVE_OUT, frozenset(live_out))
        return activity.reads(node.test) | _block(node.body, live_out) | _block(node.orelse, live_out)
    if isinstance(node, (gast.While, gast.For)):
        _annotate(node, anno.LIVE_OUT, frozenset(live_out))
        after = _block(node.orelse, live_out) | live_out
        is_for = isinstance(node, gast.For)
        # a For reads its break/return flags before each iteration (see converters)
        head_reads = set(anno.get(node, anno.EXTRA_TEST, ())) if is_for else activity.reads(node.test)
        head = after | head_reads
        while True:
            body_in = _block(node.body, head)
            if is_for:
                body_in -= activity.writes(node.target)
            new_head = after | body_in | head_reads
            if new_head == head:
                break
            head = new_head
        _annotate(node, anno.LIVE_IN, frozenset(head | body_in))
        return head | (activity.reads(node.iter) if is_for else set())
    if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)):
        _block(node.body, set())
        return (live_out - {node.name}) | activity.reads(node)
    if isinstance(node, gast.Return):
        return activity.reads(node.value) if node.value is not None else set()
    if isinstance(node, gast.Try) and not node.handlers:
        # try/finally: the finally runs last, on every path; an exception leaves the body
        # through it, so what it reads stays live all through the body
        after = _block(node.finalbody, live_out)
        always = activity.reads(node.finalbody)
        return _block_always(node.body, _block_always(node.orelse, after, always), always)
    if isinstance(node, (gast.Try, gast.With, gast.AsyncWith, gast.Break, gast.Continue)):
        for body in _bodies(node):
            _block(body, live_out | activity.reads(node))
        return live_out | activity.reads(node)
    return (live_out - _definite_writes(node)) | activity.reads(node)


def _block_always(stmts, live_out, always):
    """_block, with names `always` live after each statement."""
    live = set(live_out) | always
    for stmt in reversed(stmts):
        live = _stmt(stmt, live) | always
    return live


def _bodies(node):
    bodies = [getattr(node, f, None) for f in ("body", "orelse", "finalbody")]
    bodies += [h.body for h in getattr(node, "handlers", [])]
    return [b for b in bodies if b]


def _definite_writes(node):
    if isinstance(node, (gast.Assign, gast.AnnAssign)):
        targets = node.targets if isinstance(node, gast.Assign) else [node.target]
        return {t.id for t in targets if isinstance(t, gast.Name)} | {
            n.id for t in targets if isinstance(t, (gast.Tuple, gast.List))
            for n in gast.walk(t) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    return set()
