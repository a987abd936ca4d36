"""An `axis=` out of range raises numpy's AxisError (a ValueError and an IndexError) with numpy's
words, compiled as eagerly; where the op's shape rule finds it, the user's line follows."""
import numpy as np
import pytest

import autograph_lite as ag
from helpers import same_every_call

OUT_OF_RANGE = {
    "sort": lambda x: np.sort(x, axis=2),
    "sort_0d": lambda x: np.sort(x[0], axis=0),
    "cumsum": lambda x: np.cumsum(x, axis=2),
    "cumprod_negative": lambda x: np.cumprod(x, axis=-2),
    "expand_dims": lambda x: np.expand_dims(x, 3),
    "concatenate": lambda x: np.concatenate([x], axis=1),
    "take": lambda x: np.take(x, [0], axis=1),
    "moveaxis": lambda x: np.moveaxis(x, 2, 0),
    "swapaxes": lambda x: np.swapaxes(x, 0, 3),
    "flip": lambda x: np.flip(x, 2),
    "argmax": lambda x: np.argmax(x, axis=1),
    "stack": lambda x: np.stack([x, x], axis=3),
    "sum": lambda x: np.sum(x, axis=2),
    "max": lambda x: np.max(x, axis=2),
    "squeeze": lambda x: np.squeeze(x, axis=3),
    "argsort": lambda x: np.argsort(x, axis=2),
}


@pytest.mark.parametrize("name", sorted(OUT_OF_RANGE))
def test_out_of_range_axis_is_numpys_axis_error(name):
    fn = OUT_OF_RANGE[name]
    same_every_call(fn, np.arange(3.0), calls=2)
    with pytest.raises(np.exceptions.AxisError) as info:
        ag.function(fn)(np.arange(3.0))
    assert isinstance(info.value, ValueError) and isinstance(info.value, IndexError)


def test_the_shape_rules_error_names_the_users_line():
    def fn(x):
        return np.cumsum(x, axis=2)
    with pytest.raises(np.exceptions.AxisError, match=r"^axis 2 is out of bounds for array of dimension 1 "
                                                       r"\(at .*test_axis_errors\.py:\d+\)$"):
        ag.function(fn)(np.arange(3.0))
