"""What the numpy API's graph forms share: numpy's "no value given" marker, refusing keywords by
name, and the static shape a form needs."""
import numpy as np

from ...errors import ConversionError, user_location

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


def static_shape(x, name):
    if any(d is None for d in x.shape):
        raise ConversionError(f"np.{name} of {x!r}, whose shape is known only when the graph runs, is not "
                              f"supported (at {user_location(4)})")
    return x.shape
