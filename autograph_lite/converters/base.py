"""What every converter shares: the conversion context, fresh names, source positions."""
import gast

from ..pyct import anno

EXTRA_TEST = anno.EXTRA_TEST


class Context:
    """Per-function conversion state: the user's file, and names already taken."""

    def __init__(self, filename, taken):
        self.filename = filename
        self.taken = set(taken)
        self.returned_dicts = frozenset()  # see returned_dict_names

    def new_name(self, base):
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name


def returned_dict_names(node):
    """Names of dicts the function makes (`y = {...}`) and then only indexes with constant keys
    (`y['a']`) or returns (`return y`, `return y, x`): a tensor loop that may run zero times can
    leave one of their items unset, the returned dict without that key on those runs, since
    nothing else in the function asks which keys it has (`'a' in y`, `len(y)`, passing it on)."""
    allowed, bad, made = set(), set(), set()
    for n in gast.walk(node):
        if isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name) and isinstance(n.slice, gast.Constant):
            allowed.add(id(n.value))
        elif isinstance(n, gast.Return) and n.value is not None:
            stack = [n.value]
            while stack:
                v = stack.pop()
                if isinstance(v, gast.Name):
                    allowed.add(id(v))
                elif isinstance(v, (gast.Tuple, gast.List)):
                    stack.extend(v.elts)
                elif isinstance(v, gast.Dict):
                    stack.extend(v.values)
        elif isinstance(n, (gast.Global, gast.Nonlocal)):
            bad.update(n.names)
        elif isinstance(n, gast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], gast.Name) \
                and isinstance(n.value, gast.Dict):
            made.add(id(n.targets[0]))
    names = set()
    for n in gast.walk(node):
        if not isinstance(n, gast.Name):
            continue
        if isinstance(n.ctx, gast.Load) and id(n) not in allowed:
            bad.add(n.id)
        elif isinstance(n.ctx, gast.Store) and id(n) in made:
            names.add(n.id)
        elif not isinstance(n.ctx, gast.Load):  # a parameter, a loop target, `del y`, `y = other`
            bad.add(n.id)
    return frozenset(names - bad)


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
