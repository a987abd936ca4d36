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
import gast

from ..errors import ConversionError
from ..operators.variables import DO_RETURN, RETURN_VALUE
from ..pyct import templates
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


def _refuse_jumps_in_finally(fn, ctx, returns):
    """A `return` (flagged, when `returns`), `break` or `continue` leaving a `finally` block would
    have to cancel an exception in flight, as Python's does: refused, not emulated."""
    for node in jumps.walk_scope(fn):
        if not isinstance(node, gast.Try):
            continue
        for stmt in node.finalbody:
            for jump, name in ((gast.Return, "return"), (gast.Break, "break"), (gast.Continue, "continue")):
                if jump is gast.Return and not returns:
                    continue
                found = jumps.find(stmt, jump, into_loops=jump is gast.Return)
                if found is not None:
                    raise ConversionError(
                        f"`{name}` inside `finally` cannot be converted (at {ctx.filename}:{found.lineno}): "
                        f"it would cancel an exception in flight; move it after the try statement")


def _convert_function(fn, ctx):
    for child in fn.body:
        _visit_nested_functions(child, ctx)
    rewrite = _needs_rewrite(fn.body)
    _refuse_jumps_in_finally(fn, ctx, returns=rewrite)
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

    ends_in_return = always_returns(fn.body)  # else a tensor may choose between a value and None
    body = jumps.rewrite_block(fn.body, gast.Return, flag, replace, into_loops=True, on_loop=on_loop)
    prologue = templates.replace(f"flag = False\nvalue = ag__.Undefined('{value}')", flag=flag, value=value)
    epilogue = templates.replace("return ag__.return_value(value)" if ends_in_return
                                 else "return ag__.return_value(value, flag)", value=value, flag=flag)
    fn.body = at_line(prologue, fn.body[0]) + body + at_line(epilogue, fn.body[-1])


def _visit_nested_functions(node, ctx):
    for n in gast.walk(node):
        if isinstance(n, gast.FunctionDef):
            _convert_function(n, ctx)


def transform(node, ctx):
    _convert_function(node, ctx)
    return node
