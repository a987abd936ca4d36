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

from ..operators.variables import DO_RETURN, RETURN_VALUE
from ..pyct import templates
from . import jumps
from .base import add_extra_test, at_line, not_flags_expr

_NESTED = (gast.If, gast.While, gast.For, gast.Try, gast.With)


def _needs_rewrite(fn):
    body = fn.body
    for i, stmt in enumerate(body):
        if isinstance(stmt, gast.Return):
            if i != len(body) - 1:
                return True
        elif jumps.contains(stmt, gast.Return, into_loops=True):
            return True
    return False


def _convert_function(fn, ctx):
    for child in fn.body:
        _visit_nested_functions(child, ctx)
    if not _needs_rewrite(fn):
        return
    flag, value = DO_RETURN, RETURN_VALUE

    def replace(ret):
        if ret.value is None:
            return templates.replace("flag = True\nvalue = None", flag=flag, value=value)
        return templates.replace("flag = True\nvalue = result", flag=flag, value=value, result=ret.value)

    def on_loop(loop):
        if isinstance(loop, gast.While):
            loop.test = gast.BoolOp(op=gast.And(), values=[not_flags_expr([flag]), loop.test])
        else:
            add_extra_test(loop, flag)

    body = jumps.rewrite_block(fn.body, gast.Return, flag, replace, into_loops=True, on_loop=on_loop)
    prologue = templates.replace(f"flag = False\nvalue = ag__.Undefined('{value}')", flag=flag, value=value)
    epilogue = templates.replace("return ag__.return_value(value)", value=value)
    fn.body = at_line(prologue, fn.body[0]) + body + at_line(epilogue, fn.body[-1])


def _visit_nested_functions(node, ctx):
    for n in gast.walk(node):
        if isinstance(n, gast.FunctionDef):
            _convert_function(n, ctx)


def transform(node, ctx):
    _convert_function(node, ctx)
    return node
