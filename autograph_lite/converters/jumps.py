"""Shared by the return, break and continue converters: turn a jump into setting a flag and
guard every statement that would have been skipped with `if not flag:`."""
import gast

from ..pyct import templates
from .base import at_line

_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.Lambda)
_LOOPS = (gast.While, gast.For, gast.AsyncFor)


def contains(node, jump, into_loops):
    """Whether `node` holds a `jump` statement that belongs to the current scope/loop."""
    return find(node, jump, into_loops) is not None


def find(node, jump, into_loops):
    """The first `jump` statement of the current scope/loop inside `node`, or None."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, jump):
            return n
        if not (isinstance(n, _SCOPES) or (not into_loops and isinstance(n, _LOOPS))):
            stack.extend(reversed(list(gast.iter_child_nodes(n))))
    return None


def walk_scope(node):
    """`node` and everything inside it except the bodies of nested functions, classes, lambdas,
    parents before children (an explicit stack: a chain of 1,000 `elif`s is 1,000 deep)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed([c for c in gast.iter_child_nodes(n) if not isinstance(c, _SCOPES)]))


def rewrite_block(stmts, jump, flag, replace, into_loops, on_loop=None):
    """`stmts` with each `jump` replaced by `replace(stmt)` and the statements after a possible
    jump wrapped in `if not flag:`. `on_loop(loop)` is called for loops a jump escapes."""
    out = []
    for i, stmt in enumerate(stmts):
        may_jump = contains(stmt, jump, into_loops)
        out.extend(_rewrite_stmt(stmt, jump, flag, replace, into_loops, on_loop) if may_jump else [stmt])
        rest = stmts[i + 1:]
        if may_jump and rest:
            guarded = rewrite_block(rest, jump, flag, replace, into_loops, on_loop)
            out.extend(at_line(templates.replace("if not flag:\n    rest", flag=flag, rest=guarded), rest[0]))
            break
    return out


def _rewrite_stmt(stmt, jump, flag, replace, into_loops, on_loop):
    if isinstance(stmt, jump):
        return at_line(replace(stmt), stmt)
    # a `try` body that jumped skips the `else` block, as after a real jump
    guard_else = isinstance(stmt, gast.Try) and stmt.orelse and any(
        contains(s, jump, into_loops) for s in stmt.body)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if block:
            setattr(stmt, field, rewrite_block(block, jump, flag, replace, into_loops, on_loop))
    if guard_else:
        stmt.orelse = at_line(templates.replace("if not flag:\n    rest", flag=flag, rest=stmt.orelse),
                              stmt.orelse[0])
    for handler in getattr(stmt, "handlers", []):
        handler.body = rewrite_block(handler.body, jump, flag, replace, into_loops, on_loop)
    if isinstance(stmt, _LOOPS) and on_loop is not None:
        on_loop(stmt)
    return [stmt]
