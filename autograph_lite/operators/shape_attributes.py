"""`x.shape` read in converted code (converters/shape_attributes.py)."""
from .. import ops
from ..ops.control_flow import python_int
from ..runtime.graph import Tensor, internal_reads


def shape_attr(value):
    """`value.shape`. Of a Tensor whose shape has dims known only when the graph runs (None while
    tracing: `x[x > 0]`, np.nonzero, a None dim of an input_signature) a tuple holding those dims as
    weak int tensors, as eager's Python ints, so `sel.shape[0] == 0` is decided on each run. Any
    other value's own `.shape` (numpy arrays, a PythonValue's deferred read, a user's object).

    Example: `n, m = x.shape` for a (None, 3) tensor gives n a scalar int tensor and m == 3."""
    if not isinstance(value, Tensor) or None not in value.shape:
        return value.shape
    with internal_reads():  # a shape, which no in-place update changes: read from a stale value too
        dims = ops.shape(value)
        return tuple(python_int(dims[i]) if d is None else d for i, d in enumerate(value.shape))
