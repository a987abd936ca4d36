"""Python lists appended to inside graph control flow become TensorLists.

Outside staged control flow a list stays a Python list and `append` is a plain
append. When a staged loop or conditional carries a list, it is carried as a
TensorList: one tensor whose first axis holds the items.
"""
import numpy as np

from .. import ops
from ..errors import ConversionError, SymbolicValueError, user_location
from ..ops.control_flow import python_scalar
from ..ops.core import apply
from ..ops.logging_ops import ASSERT
from ..runtime.boxes import ARRAY, SCALAR, box_of
from ..runtime.graph import Tensor, current_graph, holds


_PY_NUMBERS = (bool, int, float, complex)


def item_kind(value):
    """What an item is, for reading it back eagerly-typed: the name of its Python number type
    ("int", "float", "bool", "complex": a weak scalar, NEP 50), "arrays0" (0-d arrays, which eager
    keeps as arrays) or "arrays" (numpy scalars and arrays of a fixed dtype)."""
    if type(value) in _PY_NUMBERS:
        return type(value).__name__
    if isinstance(value, Tensor) and value.weak:
        return {"b": "bool", "i": "int", "u": "int", "f": "float", "c": "complex"}[value.dtype.kind]
    if isinstance(value, Tensor) and value.shape == ():  # a numpy scalar or a 0-d array, as eager holds it
        box = box_of(value)
        return "arrays" if box == SCALAR else "arrays0" if box == ARRAY else "mixed"
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return "arrays0"
    return "arrays"


def join_kinds(a, b):
    """The kind of a list holding items of kinds `a` and `b` (None: no items yet)."""
    return b if a is None or a == b else a if b is None else "mixed"


def _rows_like(stacked, items):
    """`stacked`, to be joined with `items` along axis 0. A loop carrying a list whose items' shape
    is not known until the graph runs starts it with zero rows of size 0 ((0, 0): the empty list of
    a nested fill); while it has no rows it takes the items' shape, so the first append joins."""
    if stacked.ndim != items.ndim or stacked.shape[0] not in (0, None) \
            or not any(None in (a, b) or a == 0 for a, b in zip(stacked.shape[1:], items.shape[1:])):
        return stacked
    own, theirs = ops.shape(stacked), ops.shape(items)
    target = ops.where(ops.equal(own[0], 0), ops.concat([own[:1], theirs[1:]], 0), own)
    return ops.reshape(stacked, target)


class TensorList:
    """Items of one shape and dtype stacked along a first axis of unknown length.

    `kind` says what the items were (see item_kind; "mixed": Python numbers and arrays,
    None: no items yet): eagerly a list keeps each item's own type, so an item read back
    is a weak Python number again when all items were of one Python number type, and a
    read from a mixed list is refused (it cannot tell which an item was)."""

    __slots__ = ("tensor", "kind")

    def __init__(self, tensor=None, kind="arrays"):
        self.tensor = tensor  # None: empty, item type not known yet
        self.kind = None if tensor is None else kind

    @classmethod
    def from_list(cls, items, contents=None):
        """The stacked list of Python list `items`. `contents`: what to stack, where the items' arrays
        hold other contents now than the handles show (a tensor `if`'s branch ended with them written:
        control_flow.py's `_stack_lists_of_other_lengths`); the list still holds the items' arrays."""
        kind = None
        for item in items:
            kind = join_kinds(kind, item_kind(item))
        if not items:
            return cls()
        stacked = ops.stack(items if contents is None else contents)
        for item in items:
            if isinstance(item, Tensor):
                # as for an append: the list holds the array itself, and a later in-place update of
                # it changes the item (fuzzer seed 25002913: `L = [v]` before a loop doing `v += i`)
                holds(stacked, item)
        return cls(stacked, kind)

    def append(self, value):
        kind = join_kinds(self.kind, item_kind(value))
        item = ops.expand_dims(value if isinstance(value, Tensor) else ops.convert_to_tensor(value), 0)
        stacked = item if self.tensor is None else ops.concat([_rows_like(self.tensor, item), item], 0)
        if isinstance(value, Tensor):
            # eagerly the list holds the array itself: an in-place update of it after the append
            # changes the list's item too, so the list may no longer be read (fuzzer seed 7014487)
            holds(stacked, value)
        return self._grown(stacked, kind)

    def _grown(self, stacked, kind):
        """The list whose stacked tensor `stacked` keeps this list's items: it holds the arrays
        this list holds (fuzzer seed 1181008174: `L = [x]`, appends in a loop and after it, then
        `x[2:] = 0` and `L[0]` read)."""
        if isinstance(self.tensor, Tensor) and stacked is not self.tensor:  # (a stack of constants is an ndarray)
            holds(stacked, self.tensor)
        return TensorList(stacked, kind)

    def item(self, value, depth=3):
        """`value` (an item read from the stacked tensor) typed as eagerly."""
        if self.kind in ("arrays", None):
            return value
        if self.kind == "arrays0":  # a row of the stack is a numpy scalar; eager's item is a 0-d array
            return ops.where(True, value, value)  # Select boxes its result as an array (a reshape would not)
        if self.kind == "mixed":
            raise ConversionError(
                f"reading an item of a list that a graph loop carries and that holds both Python numbers "
                f"and arrays is not supported (at {user_location(depth)}): eagerly each item keeps its own "
                f"type, which the stacked list cannot tell apart. Make the items all arrays (e.g. "
                f"np.int64(0) instead of 0) or all Python numbers of one type")
        return python_scalar(value)

    def extend(self, values):
        if isinstance(values, TensorList):
            if values.tensor is None:
                return self
            if self.tensor is None:
                return values
            grown = values._grown(ops.concat([self.tensor, values.tensor], 0), join_kinds(self.kind, values.kind))
            return self._grown(grown.tensor, grown.kind)
        if isinstance(values, Tensor):
            if values.ndim == 0:
                raise TypeError(f"cannot extend a list with a scalar {values!r} (at {user_location(3)})")
            return self._grown(values if self.tensor is None else
                               ops.concat([_rows_like(self.tensor, values), values], 0),
                               join_kinds(self.kind, "arrays"))
        result = self
        for value in values:
            result = result.append(value)
        return result

    def pop(self, index):
        """(the list without item `index`, that item); `index` a Python int (default last)."""
        if self.tensor is None:
            raise IndexError(f"pop from empty list (at {user_location(3)})")
        index = -1 if index is None else index
        if isinstance(index, Tensor) or not isinstance(index, int):
            raise ConversionError(f"list.pop(i) on a list carried by a graph loop needs a Python int i, got "
                                  f"{index!r} (at {user_location(3)})")
        t = self.tensor
        if index == -1:
            return self._grown(t[:-1], self.kind), self.item(t[-1], 4)
        if index == 0:
            return self._grown(t[1:], self.kind), self.item(t[0], 4)
        raise ConversionError(f"list.pop({index}) on a list carried by a graph loop: only pop() and pop(0) "
                              f"are supported (at {user_location(3)})")

    def empty_like(self):
        """An empty list of the same item type (the start of a loop that appends)."""
        if self.tensor is None:
            return TensorList()
        t = self.tensor
        return TensorList(ops.convert_to_tensor(np.zeros((0,) + tuple(d or 0 for d in t.shape[1:]), t.dtype)),
                          self.kind)

    def stacked(self):
        if self.tensor is None:
            raise ValueError("cannot stack an empty list whose item type is unknown")
        return self.tensor

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self.stacked()[index]
        return self.item(self.stacked()[index])

    def __len__(self):
        raise TypeError("the length of a list built in a graph loop is a tensor: use len(x) in "
                        "converted code or ag.shape(ag.stack(x))[0]")

    def __iter__(self):  # (without it, Python iterates by __getitem__ and never meets the end)
        raise ConversionError(
            f"a list built in a graph loop is iterated outside the converted code (by a library, or a builtin "
            f"such as sum/min/max): its length is known only when the graph runs. Give numpy functions the "
            f"list itself (np.stack(items), np.mean(items)), or iterate it in a `for` of your function "
            f"(at {user_location(2)})")

    def __repr__(self):
        return f"TensorList({self.tensor!r}, {self.kind!r})"

    def __add__(self, other):
        if not isinstance(other, (list, tuple, TensorList)):
            return NotImplemented
        return self.extend(other)

    def __radd__(self, other):
        if not isinstance(other, (list, tuple)):
            return NotImplemented
        return TensorList.from_list(list(other)).extend(self)

    def __setitem__(self, index, value):
        raise ConversionError(f"item assignment to a list that a graph loop carries is not supported "
                              f"(at {user_location(2)}); build the new list with append, or use a tensor and "
                              f"ag.where")

    def with_item(self, index, value, depth=3):
        """The list with item `index` (a Python int or an integer tensor; negative from the end)
        replaced by `value`, which must be of the items' dtype and shape (eagerly the list would
        hold an item of another type, which the stacked tensor cannot)."""
        from ..ops.array_ops import OPS, _index_template
        where = user_location(depth)
        if self.tensor is None:
            raise IndexError(f"list assignment index out of range (at {where})")
        if isinstance(index, slice) or not (isinstance(index, (int, np.integer)) or (
                isinstance(index, Tensor) and index.shape == () and index.dtype.kind in "iu")):
            raise ConversionError(f"item assignment to a list that a graph loop carries needs one integer "
                                  f"index, got {index!r} (at {where}); build the new list with append")
        stacked = self.tensor
        item = value if isinstance(value, Tensor) else ops.convert_to_tensor(value)
        if item.dtype != stacked.dtype or item.shape != stacked.shape[1:] or None in item.shape:
            raise ConversionError(
                f"item assignment to a list that a graph loop carries: the list's items are "
                f"{stacked.dtype.name}{list(stacked.shape[1:])} and the new item is "
                f"{item.dtype.name}{list(item.shape)} (at {where}); eagerly the list would hold items of "
                f"different types, which its stacked tensor cannot: store a value of the items' type")
        template, extra = _index_template(index)
        updated = apply(OPS["setitem"], (stacked, item, *extra), {"index": template})
        if isinstance(value, Tensor):
            holds(updated, value)
        return self._grown(updated, join_kinds(self.kind, item_kind(value)))

    def __delitem__(self, index):
        raise ConversionError(f"`del items[i]` on a list that a graph loop carries is not supported "
                              f"(at {user_location(2)}); only pop() and pop(0) are")

    def __str__(self):
        raise SymbolicValueError(f"the text of a list built in a graph loop exists only when the graph runs; print "
                        f"ag.stack(items) instead (at {user_location(2)})")

    def __format__(self, spec):
        return self.__str__()


def list_append(target, value):
    """`target.append(value)`, returning the list (a new TensorList when `target` is one)."""
    if isinstance(target, TensorList):
        return target.append(value)
    target.append(value)
    return target


def list_extend(target, values):
    """`target.extend(values)`, returning the list (a new TensorList when `target` is one)."""
    if isinstance(target, TensorList):
        return target.extend(values)
    target.extend(values)
    return target


def list_pop(target, index=None):
    """`target.pop(index)` as `(target, item)` (a new TensorList when `target` is one)."""
    if isinstance(target, TensorList):
        return target.pop(index)
    return target, (target.pop() if index is None else target.pop(index))


def list_del(target, index):
    """`del target[index]`, returning the container (a new TensorList when `target` is one)."""
    if isinstance(target, TensorList):
        if type(index) is int and index in (0, -1):
            return target.pop(index)[0]
        raise ConversionError(f"`del items[{index!r}]` on a list that a graph loop carries is not supported "
                              f"(at {user_location(2)}); only del items[0] and del items[-1] (or pop) are")
    if type(target) is not list:
        graph = current_graph()
        if graph is not None and graph.parent is not None:
            raise ConversionError(
                f"`del x[...]` on a {type(target).__name__} inside an `if`/`while`/`for` on a tensor (at "
                f"{user_location(2)}) would change it once, while tracing, not each time the graph runs "
                f"the block")
    del target[index]
    return target


def list_method(target, method, *args):
    """`target.<method>(*args)` for list methods with no graph form; refused on a TensorList."""
    if isinstance(target, TensorList):
        raise ConversionError(
            f"list.{method}() on a list that a graph loop carries is not supported (at {user_location(2)}); "
            f"only append, extend, pop() and pop(0) are: build the list with those, or outside the loop")
    if isinstance(target, Tensor):  # `x.sort()` on an array: ndarray's method (refused by name there)
        return getattr(target, method)(*args)
    if method in ("sort", "remove") and any(isinstance(v, Tensor) for v in list(target) + list(args)):
        raise ConversionError(
            f"list.{method}() of a list holding tensors compares values known only when the graph runs "
            f"(at {user_location(2)}); use ag ops (e.g. ag.where, ag.argmax) on a stacked tensor")
    getattr(target, method)(*args)
    return target


def stack(values, axis=0):
    """ag.stack that also takes a TensorList."""
    if isinstance(values, TensorList):
        t = values.stacked()
        if t.shape[0] is None or t.shape[0] == 0:
            # eagerly an empty list cannot be stacked: a loop that appended zero times raises as numpy does
            apply(ASSERT, (ops.greater(ops.shape(t)[0], 0),), {"message": "need at least one array to stack",
                                                               "location": user_location(), "error": "ValueError"})
        return t if axis == 0 else ops.transpose(t, _move_first(t.ndim, axis))
    return ops.stack(values, axis)


def _move_first(ndim, axis):
    axis = axis % ndim
    perm = list(range(1, ndim))
    perm.insert(axis, 0)
    return tuple(perm)


def concat(values, axis=0):
    """ag.concat that also takes a TensorList (its items joined along axis 0)."""
    if isinstance(values, TensorList):
        t = values.stacked()
        if axis != 0:
            raise ValueError("ag.concat of a list built in a graph loop supports axis=0 only; "
                             "use ag.stack(items, axis) and ag.reshape for other axes")
        rest = tuple(d if d is not None else ops.shape(t)[i + 2] for i, d in enumerate(t.shape[2:]))
        return ops.reshape(t, (-1,) + rest)
    return ops.concat(values, axis)


def vstack(values):
    """np.vstack of a TensorList: each item made 2-D (np.atleast_2d) and joined along axis 0."""
    items = values.stacked().ndim - 1
    if items == 0:
        return ops.reshape(stack(values), (-1, 1))
    return stack(values) if items == 1 else concat(values)


def numpy_call(f, args, kwargs):
    """numpy function `f` called with a TensorList among its arguments: numpy makes an array of a list,
    so it gets the list's stack; a function of a sequence of arrays (np.stack, np.concatenate,
    np.vstack) joins the list's items as it would."""
    joins = {np.stack: stack, np.concatenate: concat, np.vstack: vstack}
    if f in joins and args and isinstance(args[0], TensorList):
        return joins[f](*args, **kwargs)
    if f in (np.hstack, np.dstack, np.column_stack, np.block):
        raise ConversionError(f"np.{f.__name__} of a list built in a graph loop is not supported; np.stack, "
                              f"np.concatenate and np.vstack are (at {user_location(3)})")
    args = [stack(a) if isinstance(a, TensorList) else a for a in args]
    kwargs = {k: stack(a) if isinstance(a, TensorList) else a for k, a in kwargs.items()}
    return f(*args, **kwargs)
