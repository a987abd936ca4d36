"""`return` inside control flow -> set `retval_`/`do_return`, skip the rest, return at the end.

    def f(x):                          def f(x):
        if x > 0:                          do_return = False
            return x          ==>          retval_ = ag__.Undefined('retval_')
        return -x                          if x > 0:
                                               do_return = True
                                               retval_ = x
                                           if not do_return:
                                               do_return = True
                                               retval_ = -x
                                           return ag__.return_value(retval_)

Loops that a `return` escapes stop when `do_return` is set. A function whose only
`return` is its last statement is left as it is.
"""
import copy

import gast

from ..errors import ConversionError
from ..operators.variables import DO_RETURN, RETURN_VALUE
from ..pyct import anno, templates
from . import jumps
from .base import add_extra_test, always_returns, at_line, not_flags_expr


def _needs_rewrite(stmts):
    """Whether a `return` sits inside an `if` or a loop (which become functions). A `return`
    reached through `try`/`with` blocks only stays a native return: Python's own semantics
    (`finally` runs after it, and may override it) then hold exactly."""
    for stmt in stmts:
        if isinstance(stmt, gast.Try):
            if any(_needs_rewrite(block) for block in
                   (stmt.body, stmt.orelse, stmt.finalbody, *(h.body for h in stmt.handlers))):
                return True
        elif isinstance(stmt, gast.With):
            if _needs_rewrite(stmt.body):
                return True
        elif not isinstance(stmt, gast.Return) and jumps.contains(stmt, gast.Return, into_loops=True):
            return True
    return False


def _refuse_jumps_in_finally(fn, ctx):
    """A `break` or `continue` leaving a `finally` block would have to cancel an exception in
    flight, as Python's does: refused, not emulated (a `return` there is `_finally_returns`)."""
    for node in jumps.walk_scope(fn):
        if not isinstance(node, gast.Try):
            continue
        for stmt in node.finalbody:
            for jump, name in ((gast.Break, "break"), (gast.Continue, "continue")):
                found = jumps.find(stmt, jump, into_loops=False)
                if found is not None:
                    raise ConversionError(
                        f"`{name}` inside `finally` cannot be converted (at {ctx.filename}:{found.lineno}): "
                        f"it would cancel an exception in flight; move it after the try statement")


def _finally_returns(tries, ctx, body, epilogue):
    """Give each `try` whose `finally` returns (its returns already flags, in `body`) Python's
    semantics (`tries`: those statements): the finally's own returns override the try's value and cancel an exception in flight.

        try:                                   the try body (its `else`, if any) and each
            in_flight = True                   handler end with `in_flight = False`, so the
            body; in_flight = False            finally knows whether an exception is passing
        finally:
            outer = do_return
            do_return = False
            finalbody
            if ag__.finally_returns(do_return, in_flight):
                return ag__.return_value(...)  a Python `return` cancels it as Python's does
            do_return = do_return or outer

    A `try` inside an `if` or a loop (which become functions) cannot return from there: its
    finally raises instead if it would have to cancel an exception (`cancels=False`).
    """
    top = set(map(id, _top_level_tries(body)))
    for node in tries:
        in_flight, outer = ctx.new_name("in_flight"), ctx.new_name("outer_return")
        node.body = at_line(templates.replace(f"{in_flight} = True"), node) + node.body
        last = node.orelse or node.body
        last.extend(at_line(templates.replace(f"{in_flight} = False"), last[-1]))
        for handler in node.handlers:
            handler.body.extend(at_line(templates.replace(f"{in_flight} = False"), handler.body[-1]))
        if id(node) in top:
            end = templates.replace(f"if ag__.finally_returns({DO_RETURN}, {in_flight}):\n    pass")
            end[0].body = copy.deepcopy(epilogue)
            anno.set(end[0], anno.PYTHON_IF, True)
        else:
            end = templates.replace(f"ag__.finally_returns({DO_RETURN}, {in_flight}, cancels=False)")
        node.finalbody = (at_line(templates.replace(f"{outer} = {DO_RETURN}\n{DO_RETURN} = False"), node.finalbody[0])
                          + node.finalbody
                          + at_line(end + templates.replace(f"{DO_RETURN} = {DO_RETURN} or {outer}"),
                                    node.finalbody[-1]))


def _keep_trace_failures(fn):
    """A `return` in `finally` cancels the exception in flight, as Python's does; but the compiler
    refusing something inside the `try` (a ConversionError while tracing) is no exception of the
    program's, which its eager run never raised: each such `finally` re-raises those first."""
    for node in jumps.walk_scope(fn):
        if isinstance(node, gast.Try) and any(jumps.contains(stmt, gast.Return, into_loops=True)
                                              for stmt in node.finalbody):
            node.finalbody = at_line(templates.replace("ag__.reraise_trace_failure()"),
                                     node.finalbody[0]) + node.finalbody


def _top_level_tries(stmts):
    """The `try` statements reached from `stmts` through `try` and `with` blocks only."""
    for stmt in stmts:
        if isinstance(stmt, gast.Try):
            yield stmt
            for block in (stmt.body, stmt.orelse, stmt.finalbody, *(h.body for h in stmt.handlers)):
                yield from _top_level_tries(block)
        elif isinstance(stmt, gast.With):
            yield from _top_level_tries(stmt.body)


def _convert_function(fn, ctx):
    for child in fn.body:
        _visit_nested_functions(child, ctx)
    rewrite = _needs_rewrite(fn.body)
    _refuse_jumps_in_finally(fn, ctx)
    _keep_trace_failures(fn)
    if not rewrite:
        return
    flag, value = DO_RETURN, RETURN_VALUE

    def replace(ret):
        if ret.value is None:
            return templates.replace("flag = True\nvalue = None", flag=flag, value=value)
        # the value first: if computing it raises, no return has happened (an `except` may go on)
        return templates.replace("value = result\nflag = True", flag=flag, value=value, result=ret.value)

    def on_loop(loop):
        if isinstance(loop, gast.While):
            loop.test = gast.BoolOp(op=gast.And(), values=[not_flags_expr([flag]), loop.test])
        else:
            add_extra_test(loop, flag)

    for node in jumps.walk_scope(fn):
        if isinstance(node, gast.Try) and any(jumps.contains(stmt, gast.Return, into_loops=True)
                                              for stmt in node.finalbody):
            anno.set(node, anno.FINALLY_RETURNS, True)
    ends_in_return = always_returns(fn.body)  # else a tensor may choose between a value and None
    body = jumps.rewrite_block(fn.body, gast.Return, flag, replace, into_loops=True, on_loop=on_loop)
    # found in the rewritten body: the statements after a `return` are copies there, inside its guard
    # (fuzzer seed 724006345: a try after a tensor-decided return lost its finally's semantics)
    tries = [node for stmt in body for node in jumps.walk_scope(stmt)
             if isinstance(node, gast.Try) and anno.get(node, anno.FINALLY_RETURNS)]
    prologue = templates.replace(f"flag = False\nvalue = ag__.Undefined('{value}')", flag=flag, value=value)
    epilogue = templates.replace("return ag__.return_value(value)" if ends_in_return
                                 else "return ag__.return_value(value, flag)", value=value, flag=flag)
    _mark_guards(body)
    _finally_returns(tries, ctx, body, epilogue)
    fn.body = at_line(prologue, fn.body[0]) + body + at_line(epilogue, fn.body[-1])


def _mark_guards(body):
    """Mark the guards `if not do_return:` of `body` (anno.RETURN_GUARD) except those in a `finally`
    block, where the flag starts False again (`_finally_returns`)."""
    in_finally = {id(n) for stmt in body for t in jumps.walk_scope(stmt) if isinstance(t, gast.Try)
                  for s in t.finalbody for n in jumps.walk_scope(s)}
    for stmt in body:
        for node in jumps.walk_scope(stmt):
            test = getattr(node, "test", None)
            if (isinstance(node, gast.If) and id(node) not in in_finally and isinstance(test, gast.UnaryOp)
                    and isinstance(test.op, gast.Not) and isinstance(test.operand, gast.Name)
                    and test.operand.id == DO_RETURN):
                anno.set(node, anno.RETURN_GUARD, True)


def _visit_nested_functions(node, ctx):
    for n in gast.walk(node):
        if isinstance(n, gast.FunctionDef):
            _convert_function(n, ctx)


def transform(node, ctx):
    _convert_function(node, ctx)
    return node
