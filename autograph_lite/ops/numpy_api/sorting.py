"""numpy's sorting on tensors: `np.sort`, `np.argsort` (kind, stable, axis; None sorts the
flattened array). Sorting in place (`t.sort()`) is refused in methods.py."""
import numpy as np

from .. import array_ops
from .common import keywords


def _sorter(name, op):
    def sort(a, axis=-1, kind=None, order=None, *, stable=None):
        keywords(name, dict(order=order), order=None)
        return op(a, axis, kind, stable)
    sort.__name__ = name
    return sort


FUNCTIONS = {np.sort: _sorter("sort", array_ops.sort), np.argsort: _sorter("argsort", array_ops.argsort)}
