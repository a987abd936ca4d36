"""Generate code from quoted templates: `replace("x = ag__.f(y)", x=..., y=...)`.

A placeholder name in the template is replaced by a gast node, a list of statements,
or a string (a plain name). Contexts (Load/Store/Param) are fixed to fit the place.
"""
import copy
import textwrap

import gast


class _Replacer(gast.NodeTransformer):
    def __init__(self, replacements):
        self.replacements = replacements

    def _value(self, name, ctx):
        value = self.replacements[name]
        if isinstance(value, str):
            return gast.Name(id=value, ctx=ctx, annotation=None, type_comment=None)
        if isinstance(value, (list, tuple)) and ctx is not None and not isinstance(ctx, gast.Load):
            value = gast.Tuple(elts=[self._as_node(v, ctx) for v in value], ctx=ctx)
            return value
        value = copy.deepcopy(value)
        return set_context(value, ctx) if isinstance(value, gast.expr) else value

    def _as_node(self, v, ctx):
        if isinstance(v, str):
            return gast.Name(id=v, ctx=ctx, annotation=None, type_comment=None)
        return set_context(copy.deepcopy(v), ctx)

    def visit_Name(self, node):
        if node.id in self.replacements:
            return self._value(node.id, node.ctx)
        return node

    def visit_Expr(self, node):
        # a bare placeholder statement stands for a list of statements
        if isinstance(node.value, gast.Name) and node.value.id in self.replacements:
            value = self.replacements[node.value.id]
            if isinstance(value, list):
                return copy.deepcopy(value)
        return self.generic_visit(node)

    def visit_FunctionDef(self, node):
        if node.name in self.replacements:
            node.name = self.replacements[node.name]
        return self.generic_visit(node)


def set_context(node, ctx):
    """Give `node` (a Name, Tuple, List, Attribute or Subscript target) the context `ctx`."""
    if ctx is None:
        return node
    if isinstance(node, gast.Name):
        node.ctx = ctx
    elif isinstance(node, (gast.Tuple, gast.List)):
        node.ctx = ctx
        for elt in node.elts:
            set_context(elt, ctx)
    elif isinstance(node, gast.Starred):
        node.ctx = ctx
        set_context(node.value, ctx)
    elif isinstance(node, (gast.Attribute, gast.Subscript)):
        node.ctx = ctx
    return node


def replace(template, **replacements):
    """Statements of `template` with placeholders replaced."""
    tree = gast.parse(textwrap.dedent(template))
    for node in gast.walk(tree):  # generated code takes the position of the code it replaces
        for attr in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
            node.__dict__.pop(attr, None)
    tree = _Replacer(replacements).visit(tree)
    return tree.body


def replace_as_expression(template, **replacements):
    (stmt,) = replace(template, **replacements)
    return stmt.value


def name(id_, ctx=None):
    return gast.Name(id=id_, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


def names_tuple(ids, ctx=None):
    """`(a, b, c)` as a gast Tuple (an empty tuple for no names)."""
    ctx = ctx or gast.Load()
    return gast.Tuple(elts=[name(i, type(ctx)()) for i in ids], ctx=ctx)


def strings_tuple(values):
    return gast.Tuple(elts=[gast.Constant(value=v, kind=None) for v in values], ctx=gast.Load())
