"""`if`, `while` and `for` -> functions over the variables they carry, passed to ag__.

    if x > 0:                      def if_body(y):
        y = x * 2                      y = x * 2
    else:              ==>             return (y,)
        y = -x                     def else_body(y):
                                       y = -x
                                       return (y,)
                                   y = ag__.Undefined('y')
                                   (y,) = ag__.if_stmt(x > 0, if_body, else_body, (y,), ('y',))

A statement's inputs are the variables it assigns that are read before being
reassigned (or are live after it); its outputs are those it assigns that are live
after it (liveness annotations). Variables with no value yet start as
`ag__.Undefined`. Names declared global/nonlocal are redeclared in the generated
functions and reported to the operator, which refuses to stage them.

Two kinds of state are not passed as parameters, so that every piece of code keeps
seeing the binding Python gives it:
- cell variables (locals a nested function or lambda reads): the generated functions
  declare them `nonlocal`, and the operator reads and sets them through a getter and a
  setter (`opts['cells']`) when it stages the statement;
- items and attributes the statement writes (`d['k'] = ...`, `o.a = ...`), "composite
  names": the operator carries those with static keys like variables and refuses the
  others when it stages (`opts['composites']`).
"""
import ast
import copy

import gast

from ..pyct import activity, anno, liveness, templates
from .base import EXTRA_TEST, at_line, not_flags_expr


def _params(args):
    return activity._param_names(args)


class _ControlFlow:
    def __init__(self, ctx, declared, cells):
        self.ctx = ctx
        self.declared = declared  # names declared global/nonlocal in this function
        self.cells = cells        # locals that nested functions or lambdas see (Python's cell variables)
        self.in_try = None
        self.in_finally = False  # inside the body of a `try` with `finally`
        self.contexts = []        # names holding the context managers of the enclosing `with` statements

    def block(self, stmts, defined):
        out, defined = [], set(defined)
        for stmt in stmts:
            out.extend(self.stmt(stmt, defined))
            defined |= activity.writes(stmt)
        return out

    def stmt(self, node, defined):
        if isinstance(node, gast.If) and anno.get(node, anno.PYTHON_IF):
            node.body = self.block(node.body, defined)
            return [node]
        if isinstance(node, gast.If):
            return self.if_(node, defined)
        if isinstance(node, gast.While):
            return self.while_(node, defined)
        if isinstance(node, gast.For):
            return self.for_(node, defined)
        if isinstance(node, gast.FunctionDef):
            convert_function(node, self.ctx)
            return [node]
        if isinstance(node, gast.With):
            return self.with_(node, defined)
        if isinstance(node, gast.Try):
            return self.try_(node, defined)
        return [node]

    def try_(self, node, defined):
        """Control flow in a `try` body is staged unless the `try` has `except` handlers (an error
        the graph raises when it runs would not reach them); `else` and `finally` run where Python
        runs them, as Python code around the staged statements."""
        outer = self.in_try, self.in_finally
        if node.handlers:
            self.in_try = "try"
        self.in_finally = self.in_finally or bool(node.finalbody)
        node.body = self.block(node.body, defined)
        self.in_try, self.in_finally = outer
        for field in ("orelse", "finalbody"):
            if getattr(node, field, None):
                setattr(node, field, self.block(getattr(node, field), defined))
        for handler in node.handlers:
            handler.body = self.block(handler.body, defined)
        return [node]

    def _unbound_after(self, opts, carried, defined, live_out):
        """Add `opts['unbound_after']`: variables a loop first assigns that may be read after it
        (Python raises UnboundLocalError there when the loop ran zero times)."""
        names = [n for n in carried if n not in defined and n in live_out]
        if not names:
            return opts
        opts = opts or gast.Dict(keys=[], values=[])
        opts.keys.append(gast.Constant(value="unbound_after", kind=None))
        opts.values.append(templates.strings_tuple(names))
        return opts

    def _walrus_setters(self, loop):
        """Replace each `(v := e)` of a while test by `set_v(e)`, a function that rebinds cell `v`:
        the test runs in a function of its own, and for a staged loop again in the body."""
        setters = {}

        class Rewrite(gast.NodeTransformer):
            def visit_NamedExpr(inner, node):
                inner.generic_visit(node)
                name = node.target.id
                if name not in setters:
                    setters[name] = self.ctx.new_name(f"set_{name}")
                return templates.replace_as_expression("setter(value)", setter=setters[name], value=node.value)

            def visit_Lambda(inner, node):
                return inner.generic_visit(node) if _called_at_once(node, loop.test) else node
        loop.test = Rewrite().visit(loop.test)
        out = []
        for name, setter in setters.items():
            out.extend(templates.replace(f"def {setter}(value):\n    nonlocal {name}\n    {name} = value\n"
                                         f"    return value"))
        return at_line(out, loop)

    def with_(self, node, defined):
        """`with a as x, b:` -> `context = a` / `with context as x:` / `context_1 = b` / ...

        The statements inside learn the context managers they run under (`opts['contexts']`):
        the operator stages control flow only under ones that do nothing the graph would
        have to repeat when it runs.
        """
        item, rest = node.items[0], node.items[1:]
        name = self.ctx.new_name("context")
        inner = [gast.With(items=rest, body=node.body, type_comment=None)] if rest else node.body
        defined = defined | {name} | activity.writes(item.optional_vars or [])
        self.contexts.append(name)
        body = self.block(inner, defined)
        self.contexts.pop()
        hoisted = at_line(templates.replace("name = manager", name=name, manager=item.context_expr), node)
        item.context_expr = templates.name(name)
        return hoisted + [at_line(gast.With(items=[item], body=body, type_comment=None), node)]

    # --- helpers ----------------------------------------------------------------------

    def _defined_inside(self, defined, written, params):
        """Names with a value where a generated function's body starts: its parameters, and
        outer names it does not assign (those it assigns are its own locals until it does),
        except cells and global/nonlocal names, which it shares with the outer scope."""
        return (defined - set(self._local(written))) | set(params)

    def _local(self, names):
        return sorted(n for n in names if n not in self.declared and n not in self.cells)

    def _opts(self, written, stmts, origin):
        """(opts dict or None, statements that must come before the call) for a statement that
        writes names `written` and whose code is `stmts`."""
        rebinds = sorted(written & self.declared)
        # a call in the block may run a nested function that rebinds a cell: carry those too
        cells = sorted((written | self.rebound_cells) & self.cells)
        composites, droppable = self._composites(stmts, written)
        keys, values, pre = [], [], []
        if self.in_try:
            keys.append("in_try")
            values.append(gast.Constant(value=self.in_try, kind=None))
        if self.in_finally:  # an error the graph raises would not run the `finally` (operators: if_stmt)
            keys.append("in_finally")
            values.append(gast.Constant(value=True, kind=None))
        if self.contexts:
            keys.append("contexts")
            values.append(templates.names_tuple(self.contexts))
        if rebinds:
            keys.append("nonlocal_writes")
            values.append(templates.strings_tuple(rebinds))
        if cells:
            setter = self.ctx.new_name("set_state")
            pre.extend(at_line(templates.replace(
                f"def {setter}(values):\n    nonlocal {', '.join(cells)}\n    targets = values",
                targets=templates.names_tuple(cells, gast.Store())), origin))
            keys.append("cells")
            values.append(templates.replace_as_expression(
                "(names, lambda: state, setter)", names=templates.strings_tuple(cells),
                state=templates.names_tuple(cells), setter=setter))
        if composites:
            keys.append("composites")
            values.append(gast.Tuple(elts=composites, ctx=gast.Load()))
        if droppable:
            keys.append("droppable")
            values.append(templates.strings_tuple(droppable))
        if not keys:
            return None, pre
        return gast.Dict(keys=[gast.Constant(value=k, kind=None) for k in keys], values=values), pre

    def _composites(self, stmts, written):
        """One `(label, kind, lambda: base, lambda: key, static)` per item/attribute target in `stmts`.

        `static`: the target names the same place all through the statement (its root
        variable is not rebound there and every key is a constant or a name not rebound
        there).
        """
        entries, seen, droppable = [], set(), []
        for target in activity.composite_writes(stmts):
            label = ast.unparse(gast.gast_to_ast(copy.deepcopy(target)))
            if label in seen:
                continue
            seen.add(label)
            if label in self.ctx.droppable:
                droppable.append(label)  # may be left unset by a loop that runs zero times or one branch
            static = self._static_place(target, written)
            kind = "attr" if isinstance(target, gast.Attribute) else "item"
            key = (gast.Constant(value=target.attr, kind=None) if kind == "attr"
                   else copy.deepcopy(target.slice) if static else gast.Constant(value=None, kind=None))
            base = templates.set_context(copy.deepcopy(target.value), gast.Load())
            for n in gast.walk(base):
                if hasattr(n, "ctx"):
                    n.ctx = gast.Load()
            entries.append(templates.replace_as_expression(
                "(label, kind, lambda: base, lambda: key, static)", label=gast.Constant(value=label, kind=None),
                kind=gast.Constant(value=kind, kind=None), base=base, key=key,
                static=gast.Constant(value=static, kind=None)))
        return entries, droppable

    def _static_place(self, target, written):
        node = target
        while isinstance(node, (gast.Attribute, gast.Subscript)):
            if isinstance(node, gast.Subscript) and not _static_key(node.slice, written):
                return False
            node = node.value
        return isinstance(node, gast.Name) and node.id not in written

    def _declarations(self, written):
        """global/nonlocal statements a generated function needs to rebind the same names."""
        rebinds = sorted(written & (self.declared | self.cells))
        out = []
        for name in rebinds:
            kind = self.declared_kind.get(name, "nonlocal")
            out.extend(templates.replace(f"{kind} {name}"))
        return out

    def _function(self, name, params, body, returns, written, origin):
        ret = templates.replace("return outputs", outputs=templates.names_tuple(returns))
        fn = templates.replace("def fn(params):\n    body", fn=name, body=self._declarations(written) + body + ret)[0]
        fn.args.args = [templates.name(p, gast.Param()) for p in params]
        return at_line(fn, origin)

    def _undefined(self, names, defined, origin):
        stmts = []
        for n in names:
            if n not in defined:
                stmts.extend(templates.replace(f"{n} = ag__.Undefined('{n}')"))
        return at_line(stmts, origin)

    def _call(self, template, outputs, origin, **parts):
        if outputs:
            stmts = templates.replace(f"outputs = {template}", outputs=templates.names_tuple(outputs, gast.Store()), **parts)
        else:
            stmts = templates.replace(template, **parts)
        return at_line(stmts, origin)

    def _with_opts(self, call_text, opts):
        return call_text[:-1] + ", opts)" if opts is not None else call_text

    # --- statements -------------------------------------------------------------------

    def if_(self, node, defined):
        live_out = anno.get(node, anno.LIVE_OUT, frozenset())
        written = activity.writes(node.body) | activity.writes(node.orelse)
        outputs = self._local(written & live_out)
        read_first = liveness._block(node.body, set(live_out)) | liveness._block(node.orelse, set(live_out))
        inputs = outputs + self._local((written & read_first) - set(outputs))
        opts, pre = self._opts(written, node.body + node.orelse, node)
        if anno.get(node, anno.RETURN_GUARD):
            opts = opts or gast.Dict(keys=[], values=[])
            opts.keys.append(gast.Constant(value="return_guard", kind=None))
            opts.values.append(gast.Constant(value=True, kind=None))
        body = self.block(node.body, self._defined_inside(defined, written, inputs))
        orelse = self.block(node.orelse, self._defined_inside(defined, written, inputs))
        hoisted, body = _hoisted(node.body, body)
        more, orelse = _hoisted(node.orelse, orelse)
        then_name, else_name = self.ctx.new_name("if_body"), self.ctx.new_name("else_body")
        call = self._with_opts("ag__.if_stmt(test, then_fn, else_fn, state, names)", opts)
        return (self._undefined(inputs, defined, node) + pre + hoisted + more
                + [self._function(then_name, inputs, body, outputs, written, node),
                   self._function(else_name, inputs, orelse, outputs, written, node)]
                + self._call(call, outputs, node, test=node.test, then_fn=then_name, else_fn=else_name,
                             state=templates.names_tuple(inputs), names=templates.strings_tuple(outputs),
                             opts=opts))

    def while_(self, node, defined):
        head = anno.get(node, anno.LIVE_IN, frozenset())
        live_out = anno.get(node, anno.LIVE_OUT, frozenset())
        bound_by_test = set(_walrus_targets(node.test))  # cells (see convert_function)
        written = activity.writes(node.body) | bound_by_test
        carried = self._local(written & (head | live_out))
        opts, pre = self._opts(written, node.body, node)
        opts = self._unbound_after(opts, carried, defined, live_out)
        if bound_by_test:
            pre = self._walrus_setters(node) + pre
            opts = opts or gast.Dict(keys=[], values=[])
            opts.keys.append(gast.Constant(value="test_binds", kind=None))
            opts.values.append(gast.Constant(value=True, kind=None))
        body = self.block(node.body, self._defined_inside(defined, written, carried))
        test_name, body_name = self.ctx.new_name("loop_test"), self.ctx.new_name("loop_body")
        test_fn = at_line(templates.replace("def fn(params):\n    return test", fn=test_name, test=node.test)[0], node)
        test_fn.args.args = [templates.name(p, gast.Param()) for p in carried]
        call = self._with_opts("ag__.while_stmt(test_fn, body_fn, state, names)", opts)
        return (self._undefined(carried, defined, node) + pre
                + [test_fn, self._function(body_name, carried, body, carried, written, node)]
                + self._call(call, carried, node, test_fn=test_name, body_fn=body_name,
                             state=templates.names_tuple(carried), names=templates.strings_tuple(carried),
                             opts=opts)
                + self.block(node.orelse, defined | set(carried)))

    def for_(self, node, defined):
        head = anno.get(node, anno.LIVE_IN, frozenset())
        live_out = anno.get(node, anno.LIVE_OUT, frozenset())
        written = activity.writes(node.body) | activity.writes(node.target)
        flags = anno.get(node, EXTRA_TEST, ())
        carried = self._local(written & (head | live_out | set(flags)))
        item = self.ctx.new_name("itr")
        assign = templates.replace("target = item", target=node.target, item=item)
        opts, pre = self._opts(written, assign + node.body, node)
        opts = self._unbound_after(opts, carried, defined, live_out)
        body = self.block(assign + node.body, self._defined_inside(defined, written, carried))
        body_name = self.ctx.new_name("loop_body")
        body_fn = self._function(body_name, [item] + carried, body, carried, written, node)
        extra = gast.Constant(value=None, kind=None)
        if flags:
            test_name = self.ctx.new_name("extra_test")
            test_fn = templates.replace("def fn(params):\n    return test", fn=test_name, test=not_flags_expr(flags))[0]
            test_fn.args.args = [templates.name(p, gast.Param()) for p in carried]
            pre.append(at_line(test_fn, node))
            extra = templates.name(test_name)
        call = self._with_opts("ag__.for_stmt(iterable, extra, body_fn, state, names)", opts)
        return (self._undefined(carried, defined, node) + pre + [body_fn]
                + self._call(call, carried, node, iterable=node.iter, extra=extra, body_fn=body_name,
                             state=templates.names_tuple(carried), names=templates.strings_tuple(carried),
                             opts=opts)
                + self.block(node.orelse, defined | set(carried)))


def _hoisted(branch, converted):
    """(function definitions moved out, the rest) of a branch's converted statements: where the
    branch is one `if` alone (an `elif`, or `if a: if b:`), the branch functions of that inner `if`
    are defined beside the outer ones instead of inside its branch function. The inner ones read
    the same values either way (the outer branch function runs nothing before them, and its
    parameters hold the variables' values when the `if` starts), and the generated code stays
    flat: a chain of 100 `elif`s no longer nests 200 levels deep (Python's parser stops at 100)."""
    if len(branch) != 1 or not isinstance(branch[0], gast.If) or anno.get(branch[0], anno.PYTHON_IF):
        return [], converted
    return ([s for s in converted if isinstance(s, gast.FunctionDef)],
            [s for s in converted if not isinstance(s, gast.FunctionDef)])


def _walrus_targets(test):
    """Names that `:=` binds in a while condition (lambdas the converters made are part of it)."""
    names = []

    def walk(n):
        if isinstance(n, gast.NamedExpr):
            names.append(n.target.id)
        if isinstance(n, (gast.FunctionDef, gast.ClassDef)) or (isinstance(n, gast.Lambda)
                                                                 and not _called_at_once(n, test)):
            return
        for child in gast.iter_child_nodes(n):
            walk(child)
    walk(test)
    return names


def _called_at_once(lam, root):
    """Whether lambda `lam` is an argument of an ag__ operator that calls it on the spot."""
    for n in gast.walk(root):
        if isinstance(n, gast.Call) and lam in n.args and isinstance(n.func, gast.Attribute) \
                and isinstance(n.func.value, gast.Name) and n.func.value.id == "ag__" \
                and n.func.attr in activity._CALLED_AT_ONCE:
            return True
    return False


def _static_key(key, written):
    if isinstance(key, gast.Constant):
        return isinstance(key.value, (int, str)) and not isinstance(key.value, bool)
    if isinstance(key, gast.UnaryOp) and isinstance(key.op, gast.USub):
        return isinstance(key.operand, gast.Constant) and type(key.operand.value) is int
    return isinstance(key, gast.Name) and key.id not in written


def _own_nodes(fn, kind):
    """Nodes of type `kind` in the body of `fn` (not in nested functions or classes)."""
    found = []

    def walk(n):
        if isinstance(n, kind):
            found.append(n)
        for child in gast.iter_child_nodes(n):
            if not isinstance(child, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.Lambda)):
                walk(child)
    for stmt in fn.body:
        walk(stmt)
    return found


def _declared(fn):
    """{name: 'global' | 'nonlocal'} for the declarations of `fn` itself (not nested functions)."""
    kinds = {}

    def walk(node):
        for child in gast.iter_child_nodes(node):
            if isinstance(child, gast.Global):
                kinds.update({n: "global" for n in child.names})
            elif isinstance(child, gast.Nonlocal):
                kinds.update({n: "nonlocal" for n in child.names})
            elif not isinstance(child, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
                walk(child)
    walk(fn)
    return kinds


def convert_function(fn, ctx):
    kinds = _declared(fn)
    cells = activity.captured_locals(fn) | {name for loop in _own_nodes(fn, gast.While)
                                            for name in _walrus_targets(loop.test)}
    converter = _ControlFlow(ctx, set(kinds), cells)
    converter.declared_kind = kinds
    converter.rebound_cells = activity.captured_locals(fn, rebound_only=True)
    fn.body = converter.block(fn.body, _params(fn.args))
    # generated functions rebind cells with `nonlocal`: the function itself must bind them
    unbound = sorted(cells - _params(fn.args))
    if unbound:
        fn.body = at_line(templates.replace("\n".join(f"{n} = ag__.Undefined('{n}')" for n in unbound)),
                          fn.body[0]) + fn.body


def transform(node, ctx):
    with activity.memoized():  # each `if` asks about all it holds: an elif chain would be quadratic
        liveness.annotate(node)
        convert_function(node, ctx)
    return node
