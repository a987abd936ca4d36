"""What every converter shares: the conversion context, fresh names, source positions."""
import gast

from ..pyct import anno

EXTRA_TEST = anno.EXTRA_TEST


class Context:
    """Per-function conversion state: the user's file, and names already taken."""

    def __init__(self, filename, taken):
        self.filename = filename
        self.taken = set(taken)

    def new_name(self, base):
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name


def all_names(node):
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)} | {
        n.name for n in gast.walk(node) if isinstance(n, (gast.FunctionDef, gast.ClassDef))}


def at_line(nodes, origin):
    """Give generated `nodes` (and their children) the source line of `origin` where unset."""
    line = getattr(origin, "lineno", None) or 1
    for root in nodes if isinstance(nodes, list) else [nodes]:
        for n in gast.walk(root):
            if isinstance(n, (gast.stmt, gast.expr)) and getattr(n, "lineno", None) is None:
                n.lineno, n.col_offset = line, 0
                n.end_lineno, n.end_col_offset = line, 0
    return nodes


def add_extra_test(loop, flag):
    anno.set(loop, EXTRA_TEST, anno.get(loop, EXTRA_TEST, ()) + (flag,))


def not_flags_expr(flags):
    """`ag__.not_(f1)`, or `ag__.and_(lambda: ag__.not_(f1), lambda: ...)` for several flags.

    Written with ag__ calls directly: it may be generated after the logical converter ran.
    """
    from ..pyct import templates
    tests = [templates.replace_as_expression("ag__.not_(flag)", flag=f) for f in flags]
    result = tests[-1]
    for test in reversed(tests[:-1]):
        result = templates.replace_as_expression("ag__.and_(lambda: a, lambda: b, truth=True)", a=test, b=result)
    return result


def always_returns(stmts):
    """Whether every path through `stmts` ends in `return` or `raise` (as far as the syntax shows)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (gast.Return, gast.Raise)):
        return True
    if isinstance(last, gast.If):
        return always_returns(last.body) and always_returns(last.orelse)
    if isinstance(last, gast.While):  # `while True:` without a break leaves only by return or raise
        from . import jumps
        forever = isinstance(last.test, gast.Constant) and last.test.value is True
        return forever and not any(jumps.contains(s, gast.Break, into_loops=False) for s in last.body)
    if isinstance(last, (gast.With, gast.AsyncWith)):
        return always_returns(last.body)
    if isinstance(last, gast.Try):
        return (always_returns(last.finalbody) or
                (always_returns(last.orelse or last.body) and all(always_returns(h.body) for h in last.handlers)))
    return False
