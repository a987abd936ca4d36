"""What the numpy API's graph forms share: numpy's "no value given" marker, refusing keywords by
name, the static shape a form needs, and numpy's check of Python ints stored into a dtype."""
import numpy as np

from ...errors import ConversionError, user_location
from ...runtime.graph import Tensor
from ..core import CHECK_FITS, apply

NO = np._NoValue


def keywords(name, given, **defaults):
    """Refuse, by name, the keywords of `np.<name>` given a value other than numpy's default
    (the defaults are the only values the graph forms here implement)."""
    refused = [k for k, v in given.items() if k not in defaults or not _is_default(v, defaults[k])]
    if refused:
        raise ConversionError(f"np.{name}(..., {', '.join(f'{k}=' for k in refused)}) is not supported on "
                              f"tensors (at {user_location(4)})")


def _is_default(value, default):
    if value is default or value is NO:
        return True
    try:
        return isinstance(default, (str, bool, type(None))) and value == default and type(value) is type(default)
    except Exception:
        return False


def static_dim(x, axis, name):
    """The length of `x` along `axis`, which np.<name> needs while tracing."""
    if x.shape[axis] is None:
        raise ConversionError(f"np.{name} along axis {axis} of {x!r}, whose length there is known only when the "
                              f"graph runs, is not supported (at {user_location(4)})")
    return x.shape[axis]


def dims(x):
    """`x`'s shape with each unknown dim as a scalar tensor read when the graph runs (a shape argument)."""
    from .. import array_ops  # function-local: the op modules import this package's parent
    return tuple(array_ops.shape(x)[i] if d is None else d for i, d in enumerate(x.shape))


def static_shape(x, name):
    if any(d is None for d in x.shape):
        raise ConversionError(f"np.{name} of {x!r}, whose shape is known only when the graph runs, is not "
                              f"supported (at {user_location(4)})")
    return x.shape


def python_ints_fit(value, dtype):
    """numpy's OverflowError where a Python int in `value` (a number or nested lists/tuples) does not
    fit `dtype`, as numpy raises when it stores one into an array of that dtype (`np.full_like(int8_t,
    300)`, `np.array([t, 300], dtype=np.int8)`); a cast of the int's graph value would wrap silently."""
    if type(value) in (list, tuple):
        for item in value:
            python_ints_fit(item, dtype)
    elif isinstance(value, Tensor):
        if value.weak and value.dtype.kind in "iu" and np.dtype(dtype).kind in "iu":
            # a Python int known only when the graph runs (a loop counter): checked then
            apply(CHECK_FITS, (value,), {"dtype": np.dtype(dtype), "location": user_location(2)})
    elif isinstance(value, int) and not isinstance(value, (bool, np.generic)):
        try:
            np.array(value, dtype=dtype)
        except OverflowError as e:
            raise OverflowError(f"{e} (at {user_location(2)})") from None
