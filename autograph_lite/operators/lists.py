"""Python lists appended to inside graph control flow become TensorLists.

Outside staged control flow a list stays a Python list and `append` is a plain
append. When a staged loop or conditional carries a list, it is carried as a
TensorList: one tensor whose first axis holds the items.
"""
import numpy as np

from .. import ops
from ..runtime.graph import Tensor


class TensorList:
    """Items of one shape and dtype stacked along a first axis of unknown length."""

    __slots__ = ("tensor",)

    def __init__(self, tensor=None):
        self.tensor = tensor  # None: empty, item type not known yet

    @classmethod
    def from_list(cls, items):
        return cls(ops.stack(items) if items else None)

    def append(self, value):
        item = ops.expand_dims(value if isinstance(value, Tensor) else ops.convert_to_tensor(value), 0)
        return TensorList(item if self.tensor is None else ops.concat([self.tensor, item], 0))

    def empty_like(self):
        """An empty list of the same item type (the start of a loop that appends)."""
        if self.tensor is None:
            return TensorList()
        t = self.tensor
        return TensorList(ops.convert_to_tensor(np.zeros((0,) + tuple(d or 0 for d in t.shape[1:]), t.dtype)))

    def stacked(self):
        if self.tensor is None:
            raise ValueError("cannot stack an empty list whose item type is unknown")
        return self.tensor

    def __getitem__(self, index):
        return self.stacked()[index]

    def __len__(self):
        raise TypeError("the length of a list built in a graph loop is a tensor: use len(x) in "
                        "converted code or ag.shape(ag.stack(x))[0]")

    def __repr__(self):
        return f"TensorList({self.tensor!r})"


def list_append(target, value):
    """`target.append(value)`, returning the list (a new TensorList when `target` is one)."""
    if isinstance(target, TensorList):
        return target.append(value)
    target.append(value)
    return target


def stack(values, axis=0):
    """ag.stack that also takes a TensorList."""
    if isinstance(values, TensorList):
        t = values.stacked()
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
