"""Item and slice assignment to a local variable goes through `ag__.set_item`, which hands the
variable back (TensorFlow AutoGraph's `converters/slices.py`):

    out[i] = v        ->  out = ag__.set_item(out, i, v, None, 'out')
    out[i, :] += v    ->  out = ag__.set_item(out, (i, slice(None, None, None)), lambda: v, '+', 'out')

so a numpy array made in the function that receives a tensor can become a tensor under the same
name (operators/item_assignment.py). Inside an `if`, `while` or `for`, constant keys (`d['k'] = v`,
`l[0] = v`) stay Python's statement: the control-flow converter carries those as items with
static keys, and rebinding would make the container a variable the block carries instead.
"""
import gast

from ..pyct import activity, templates
from .base import at_line
from .lists import _as_expression

_OPS = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.FloorDiv: "//", gast.Mod: "%",
        gast.Pow: "**", gast.MatMult: "@", gast.BitAnd: "&", gast.BitOr: "|", gast.BitXor: "^",
        gast.LShift: "<<", gast.RShift: ">>"}


class _ItemAssignment(gast.NodeTransformer):
    def __init__(self, ctx):
        self.ctx = ctx
        self.local_names = set()
        self.blocks = 0  # how many if/while/for/with/try statements enclose the one visited

    def visit_FunctionDef(self, node):
        outer = self.local_names, self.blocks
        a = activity.of(node.body)
        self.local_names, self.blocks = (activity._param_names(node.args) | a.writes) - a.declared, 0
        self.generic_visit(node)
        self.local_names, self.blocks = outer
        return node

    def _block(self, node):
        self.blocks += 1
        self.generic_visit(node)
        self.blocks -= 1
        return node

    visit_If = visit_While = visit_For = visit_With = visit_Try = _block

    def _target(self, target):
        """The variable name of `<local name>[<index>]` (a constant index only outside blocks), else None."""
        if (isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name)
                and target.value.id in self.local_names
                and (self.blocks == 0 or not isinstance(target.slice, gast.Constant))):
            return target.value.id
        return None

    def _rewrite(self, node, target, value, op):
        name = self._target(target)
        if name is None:
            return node
        new = templates.replace("name = ag__.set_item(name, index, value, op, label)", name=name,
                                index=_as_expression(target.slice), value=value,
                                op=gast.Constant(value=op, kind=None), label=gast.Constant(value=name, kind=None))
        return at_line(new, node)

    def _unpacked(self, target):
        """Whether `target` is a flat tuple or list target holding an item assignment (`KE[0], PE[0] = v`)."""
        return (isinstance(target, (gast.Tuple, gast.List)) and any(self._target(e) for e in target.elts)
                and not any(isinstance(e, (gast.Starred, gast.Tuple, gast.List)) for e in target.elts))

    def visit_Assign(self, node):
        if len(node.targets) == 1 and not self._unpacked(node.targets[0]):
            if self._target(node.targets[0]) is None or not (
                    (_calls(node.targets[0].slice) and not _plain(node.value))
                    or (_calls(node.value) and not _plain(node.targets[0].slice))):
                return self._rewrite(node, node.targets[0], node.value, None)
            # Python evaluates the value before the index: where either may run code the other sees
            # (`v[v != draw()] = draw_too()`, `y[y == 0] = helper_writing(y)`), the value first
            value = self.ctx.new_name("value")
            first = at_line(templates.replace("value = v", value=value, v=node.value), node)
            return first + self._assign(node, node.targets[0], value)
        if not any(self._target(t) or self._unpacked(t) for t in node.targets):
            return node
        # `a[i] = b[j] = v`: v once, then each target from the left, as Python assigns them
        value = self.ctx.new_name("value")
        new = at_line(templates.replace("value = v", value=value, v=node.value), node)
        for target in node.targets:
            new.extend(self._assign(node, target, value))
        return new

    def _assign(self, node, target, value):
        """The statements assigning variable `value` to `target`; a flat tuple target is unpacked into
        one new name per item first, then each item assigned from the left (`a[i], i = v` indexes
        with the old i, as Python does)."""
        if not self._unpacked(target):
            one = at_line([gast.Assign(targets=[target], value=templates.name(value), type_comment=None)], node)[0]
            rewritten = self._rewrite(one, target, templates.name(value), None)
            return rewritten if isinstance(rewritten, list) else [rewritten]
        items = [self.ctx.new_name("item") for _ in target.elts]
        unpack = gast.Assign(targets=[type(target)(elts=[templates.name(i, gast.Store()) for i in items],
                                                   ctx=gast.Store())],
                             value=templates.name(value), type_comment=None)
        statements = at_line([unpack], node)
        for element, item in zip(target.elts, items):
            statements.extend(self._assign(node, element, item))
        return statements

    def visit_AugAssign(self, node):
        # Python reads the item before it evaluates the right side (which may change the array):
        # set_item calls the right side, given as a lambda, after its read
        thunk = gast.Lambda(args=gast.arguments(args=[], posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                                kwarg=None, defaults=[]), body=node.value)
        return self._rewrite(node, node.target, thunk, _OPS[type(node.op)])


def _plain(node):
    """Whether expression `node` reads nothing code could change: names, constants, and tuples and
    slices of them (a local name cannot be rebound by a call)."""
    return all(isinstance(n, (gast.Name, gast.Constant, gast.Tuple, gast.Slice, gast.UnaryOp, gast.unaryop,
                              gast.expr_context)) for n in gast.walk(node))


def _calls(node):
    """Whether evaluating expression `node` may run code (a call, `:=`): its order then matters."""
    return any(isinstance(n, (gast.Call, gast.NamedExpr)) for n in gast.walk(node))


def transform(node, ctx):
    return _ItemAssignment(ctx).visit(node)
