"""numpy functions on tensors (`np.zeros_like(t)`, NEP 18): compiled vs eager, bit for bit.

Every call goes through ops/numpy_api `ARRAY_FUNCTIONS`; a numpy function with no entry is
a ConversionError naming it and the user's line.
"""
import inspect

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.errors import ConversionError
from autograph_lite.ops.numpy_api import ARRAY_FUNCTIONS, functions
from helpers import check_grad, identical_both_ways, same_every_call

DTYPES = [np.float32, np.int64]


both = identical_both_ways  # compiled vs eager, identical


def data(dtype, shape=(3, 4)):
    values = np.array([3, -1, 4, 1, -5, 9, 2, -6, 5, 3, -5, 8, 9, 7, -9, 3, 2, 3, 8, 4, -6, 2, 6, 4])
    return values[:int(np.prod(shape))].reshape(shape).astype(dtype)


CASES = {  # name -> functions of one array: a plain call, an axis or broadcasting case, an edge case
    "zeros_like": [lambda a: np.zeros_like(a), lambda a: np.zeros_like(a, dtype=np.int8),
                   lambda a: np.zeros_like(a, shape=(2, 5)), lambda a: np.zeros_like(a[:0]),
                   lambda a: np.zeros_like(a[0, 0])],
    "ones_like": [lambda a: np.ones_like(a), lambda a: np.ones_like(a, np.float64),
                  lambda a: np.ones_like(a, shape=3), lambda a: np.ones_like(a[:, :0])],
    "empty_like": [lambda a: np.empty_like(a) * 0, lambda a: np.empty_like(a, dtype=bool).shape],
    "full_like": [lambda a: np.full_like(a, 7), lambda a: np.full_like(a, 2.7, dtype=np.int32),
                  lambda a: np.full_like(a, 1.5), lambda a: np.full_like(a, a[0, 0]),
                  lambda a: np.full_like(a[:0], 3)],
    "reshape": [lambda a: np.reshape(a, (4, 3)), lambda a: np.reshape(a, -1), lambda a: np.reshape(a, (2, -1, 2)),
                lambda a: np.reshape(a[:0], (0, 5))],
    "transpose": [lambda a: np.transpose(a), lambda a: np.transpose(a[None], (2, 0, 1)),
                  lambda a: np.transpose(a[None], (-1, 0, -2)), lambda a: np.transpose(a[0, 0])],
    "ravel": [lambda a: np.ravel(a), lambda a: np.ravel(a.T), lambda a: np.ravel(a[0, 0]), lambda a: np.ravel(a[:0])],
    "squeeze": [lambda a: np.squeeze(a[None, :, None]), lambda a: np.squeeze(a[None, :, None], axis=-2),
                lambda a: np.squeeze(a[:1, :1]), lambda a: np.squeeze(a[:0, None], axis=(1,)),
                lambda a: np.squeeze(a[0, 0], 0), lambda a: np.squeeze(a.sum() - 1, -1)],
    "expand_dims": [lambda a: np.expand_dims(a, 0), lambda a: np.expand_dims(a, -1),
                    lambda a: np.expand_dims(a, (0, 3)), lambda a: np.expand_dims(a[0, 0], 0)],
    "where": [lambda a: np.where(a > 2, a, -a), lambda a: np.where(a > 2, a, 0), lambda a: np.where(a > 2, 1.5, a),
              lambda a: np.where(a[0] > 2, a, a[:, :1]), lambda a: np.where(a[:0] > 2, a[:0], 0)],
    "dot": [lambda a: np.dot(a[0], a[1]), lambda a: np.dot(a, a.T), lambda a: np.dot(a, a[0]),
            lambda a: np.dot(a, 2), lambda a: np.dot(a[:, :0], a[:0])],
    "outer": [lambda a: np.outer(a[0], a[1]), lambda a: np.outer(a, a[0]), lambda a: np.outer(a[0], [1.5, 2.0]),
              lambda a: np.outer(a[:0], a)],
    "clip": [lambda a: np.clip(a, -2, 5), lambda a: np.clip(a, None, 3), lambda a: np.clip(a, a[0], None),
             lambda a: np.clip(a, 0.5, 2), lambda a: np.clip(a, min=1), lambda a: np.clip(a[:0], 1, 2),
             lambda a: np.clip(a[0, 0], 1, 2), lambda a: np.clip(a), lambda a: np.clip(a[0, 0])],
    "var": [lambda a: np.var(a), lambda a: np.var(a, axis=0), lambda a: np.var(a, axis=-1, ddof=1, keepdims=True),
            lambda a: np.var(a, axis=(0, 1), dtype=np.float64), lambda a: np.var(a, 1, correction=1)],
    "std": [lambda a: np.std(a), lambda a: np.std(a, axis=-1), lambda a: np.std(a, 0, ddof=2, keepdims=True),
            lambda a: np.std(a[0, 0])],
    "sum": [lambda a: np.sum(a), lambda a: np.sum(a, axis=-1), lambda a: np.sum(a, 0, keepdims=True),
            lambda a: np.sum(a[:0])],
    "mean": [lambda a: np.mean(a), lambda a: np.mean(a, axis=(0, -1)), lambda a: np.mean(a, -2, keepdims=True)],
    "max": [lambda a: np.max(a), lambda a: np.max(a, axis=-1), lambda a: np.amax(a, 0, keepdims=True)],
    "min": [lambda a: np.min(a), lambda a: np.min(a, axis=-1), lambda a: np.amin(a, 0)],
    "prod": [lambda a: np.prod(a), lambda a: np.prod(a, axis=-1), lambda a: np.prod(a[:0], 0)],
    "any": [lambda a: np.any(a > 8), lambda a: np.any(a > 8, axis=-1), lambda a: np.any(a[:0] > 0, 0)],
    "all": [lambda a: np.all(a > -9), lambda a: np.all(a > 0, axis=-1, keepdims=True), lambda a: np.all(a[:0] > 0)],
    "copy": [lambda a: np.copy(a), lambda a: np.copy(a[0, 0]), lambda a: np.copy(a[:0])],
    "concatenate": [lambda a: np.concatenate([a, a]), lambda a: np.concatenate([a, a * 2, a[:, :1]], axis=-1),
                    lambda a: np.concatenate([a, np.ones((1, 4), a.dtype)]), lambda a: np.concatenate([a, a[0]], None),
                    lambda a: np.concatenate([a[:0], a[:0]])],
    "stack": [lambda a: np.stack([a, a]), lambda a: np.stack([a, -a], axis=-1), lambda a: np.stack((a[0], a[1]), 1),
              lambda a: np.stack([a[:0], a[:0]])],
    "triu": [lambda a: np.triu(a), lambda a: np.triu(a, 1), lambda a: np.triu(a, -1), lambda a: np.triu(a[0])],
    "tril": [lambda a: np.tril(a), lambda a: np.tril(a, -2), lambda a: np.tril(a[None], 1), lambda a: np.tril(a[:0])],
    "shape": [lambda a: (np.ndim(a), np.shape(a), np.size(a), np.size(a, -1))],
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_function_matches_eager(name, dtype):
    for fn in CASES[name]:
        both(fn, data(dtype))


def test_every_entry_is_tested():  # of functions.py; each area module's test file checks its own
    tested = {"amax", "amin", "ndim", "size"} | set(CASES)
    assert {f.__name__ for f in functions.FUNCTIONS} <= tested
    assert set(functions.FUNCTIONS) <= set(ARRAY_FUNCTIONS)


def test_weak_scalars_keep_the_tensor_dtype():
    x = data(np.float32)
    assert both(lambda a: np.where(a > 0, a, 0.5), x).dtype == np.float32
    assert both(lambda a: np.clip(a, 0.5, 2.0), x).dtype == np.float32
    assert both(lambda a: np.full_like(a, 2), data(np.int8)).dtype == np.int8


def test_var_of_float32_sums_in_float32():
    x = (np.arange(24, dtype=np.float32) * np.float32(0.1)).reshape(4, 6)
    both(lambda a: np.var(a, axis=0), x)
    both(lambda a: np.std(a, axis=1, ddof=1), x)
    both(lambda a: np.var(a), x)


COMPLEX = np.array([[1 + 2j, -3 + 0.5j, -1j], [2 + 0j, 0.25 - 1j, 0.5 + 0.5j]])


@pytest.mark.parametrize("fn", [
    lambda a: (np.var(a), np.std(a)), lambda a: a.var(ddof=1), lambda a: a.std(axis=0),
    lambda a: np.var(a.astype(np.complex64), axis=1, keepdims=True), lambda a: np.std(a, dtype=np.complex128),
    lambda a: np.nanvar(np.where(a.real > 1.5, np.nan, a)), lambda a: np.nanstd(a, axis=1, ddof=1)])
def test_variance_of_complex_is_the_mean_squared_magnitude(fn):
    # numpy: mean(|x - mean|**2), a float (its parts squared and added; nanvar's (d * conj(d)).real)
    same_every_call(fn, COMPLEX)


def fill_with_counter(x, n):
    out = x
    for i in range(n):  # i: a Python int known only when the graph runs
        out = np.full_like(x, i * 100)
    return out


@pytest.mark.parametrize("fn", [lambda a: np.full_like(a, 300), lambda a: np.full_like(a, -129),
                                lambda a: np.full_like(a, -1, dtype=np.uint8), lambda a: np.full_like(a, 2 ** 64),
                                lambda a: np.full_like(a, 127), lambda a: np.full_like(a, 300.0)])
def test_full_like_of_a_python_int_out_of_the_dtypes_range_raises_numpys_overflow_error(fn):
    same_every_call(fn, np.array([1, 2], np.int8))


def test_full_like_of_a_run_time_python_int_checks_it_when_the_graph_runs():
    x = np.array([1, 2], np.int8)
    same_every_call(fill_with_counter, x, 2)
    same_every_call(fill_with_counter, x, 3)  # 200: numpy's OverflowError


EDGES = np.array([-0.0, 0.0, np.nan, -np.nan, -1.0, 1.0, 0.5, np.inf, -np.inf, 2.0])
CLIPPED, LOWS, HIGHS = np.array(np.meshgrid(EDGES, EDGES, EDGES)).reshape(3, 1, -1)  # every triple


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("fn", [
    lambda x, lo, hi: np.clip(x, 0.0, 1.0), lambda x, lo, hi: np.clip(x, -0.0, -0.0),
    lambda x, lo, hi: np.clip(x, np.float64(-0.0), np.float64(0.0)),
    lambda x, lo, hi: np.clip(x, lo[0, 0], hi[0, 2]), lambda x, lo, hi: np.clip(x[0, 5], 0.0, hi[0, 3]),
    lambda x, lo, hi: np.clip(x, lo, hi), lambda x, lo, hi: np.clip(x.reshape(100, 10), lo[0, :100, None], 0.5),
    lambda x, lo, hi: np.clip(x.reshape(10, 100), lo[0, :100], hi[0, :100]),
    lambda x, lo, hi: np.clip(x, lo[:, :1], hi[:, 3:4]), lambda x, lo, hi: np.clip(x[:, :1], lo[:, :1], hi[:, 3:4]),
    lambda x, lo, hi: np.clip(x[:, :1], lo[0, 0], hi[0, 3]), lambda x, lo, hi: np.clip(np.arange(5) - 2, -0.0, 0.5)])
def test_clip_keeps_numpys_signed_zeros_and_nans(fn, dtype):
    # numpy's clip loop with bounds constant over it keeps x at a tie (-0.0 in [0, 1] stays -0.0)
    # and gives a NaN bound itself; with bounds that step it is minimum(maximum(x, lo), hi)
    same_every_call(fn, *(v.astype(dtype) for v in (CLIPPED, LOWS, HIGHS)))


def clip_to_counter(x, n):
    out = x
    for i in range(n):  # i: a Python int known only when the graph runs
        out = np.clip(x, i * 100 - 150, 10)
    return out


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("fn", [
    lambda a: np.clip(a, -1, 10), lambda a: np.clip(a, -200, 200), lambda a: np.clip(a, 300, 400),
    lambda a: np.clip(a, 3, -300), lambda a: np.clip(a, -1, None), lambda a: np.clip(a, min=5, max=255),
    lambda a: np.clip(a[0], -1000, 1000), lambda a: np.clip(a, np.int64(-1), 10)])
def test_clip_of_integers_drops_python_int_bounds_beyond_the_dtype(fn, dtype):
    # numpy's `_clip`: a Python int bound at or past the dtype's end is no bound; past the other
    # end it is NEP 50's OverflowError
    same_every_call(fn, np.array([100, 3, 127], dtype))


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_clip_to_a_run_time_python_int_drops_or_checks_it_when_the_graph_runs(n):
    same_every_call(clip_to_counter, np.array([100, 3, 127], np.int8), n)


@pytest.mark.parametrize("fn", [
    lambda x: np.std(x, ddof=5), lambda x: np.var(x[:0]), lambda x: np.std(x[:0]), lambda x: x.var(ddof=3),
    lambda x: np.var(x.reshape(3, 1), axis=1, ddof=1), lambda x: np.var(x.astype(int)[:0]), lambda x: np.var(x, ddof=2)])
def test_var_warns_of_no_degrees_of_freedom_as_numpy(fn):
    # numpy's "Degrees of freedom <= 0 for slice" comes first, then its division's warnings
    same_every_call(fn, np.array([1.0, 2.0, 3.0]))


def test_unknown_function_names_numpy_function_and_line():
    def f(x):
        return np.histogramdd(x)
    line = inspect.getsourcelines(f)[1] + 1
    with pytest.raises(ConversionError, match=rf"np\.histogramdd is not supported on tensors \(at .*"
                                              rf"test_numpy_functions\.py:{line}\)"):
        ag.function(f)(np.arange(4.0))


def test_unsupported_keyword_names_it():
    def f(x):
        return np.zeros_like(x, order="F")
    line = inspect.getsourcelines(f)[1] + 1
    with pytest.raises(ConversionError, match=rf"np\.zeros_like\(\.\.\., order=\) is not supported on tensors "
                                              rf"\(at .*test_numpy_functions\.py:{line}\)"):
        ag.function(f)(np.arange(4.0))
    with pytest.raises(ConversionError, match=r"np\.var\(\.\.\., where=\)"):
        ag.function(lambda x: np.var(x, where=x > 0))(np.arange(4.0))
    with pytest.raises(ConversionError, match=r"np\.dot\(\.\.\., out=\)"):
        ag.function(lambda x: np.dot(x, x, out=x))(np.ones((2, 2)))


def test_not_the_generic_array_conversion_message():
    with pytest.raises(ConversionError) as info:
        ag.function(lambda x: np.fft.fft(x))(np.arange(4.0))
    assert "np.fft" in str(info.value) and "converted to a numpy array" not in str(info.value)


def clips_numbers_between_tensor_bounds(x, s):
    return np.clip(s, x, None), np.clip(2.5, x, None), np.clip(np.int8(2), x, 5), np.clip(s, 0, x[0])


def test_clip_of_a_number_by_tensor_bounds_clips_np_asarray_of_it():
    """Fuzzer seed 1230005907: `np.clip(s, x, None)` of a Python int raised AttributeError; numpy
    clips np.asarray(s), an int64 (a float64, the numpy scalar's own dtype) array."""
    same_every_call(clips_numbers_between_tensor_bounds, np.array([4, 8, 2, 2], np.uint8), 2)


A3 = np.arange(60.0).reshape(3, 4, 5)
PROBS = np.arange(1.0, 13.0).reshape(4, 3) / 13


@pytest.mark.parametrize("fn, args", [
    (lambda p, r, c: p[r, c], (PROBS, np.arange(4), np.array([0, 2, 1, -1]))),   # softmax's picked entries
    (lambda a, i: a[0, :, i], (A3, np.array([0, 1]))),   # split by a slice: the index's dims lead (numpy's rule)
    (lambda a, i: a[i, :, i], (A3, np.array([0, 1]))),
    (lambda a, i: a[:, i, i], (A3, np.array([0, 1]))),   # together: in place
    (lambda a, i: a[i[:, None], i[None, :]], (A3, np.array([0, 2]))),   # broadcast index shapes
    (lambda a, i: a[i, None, i], (A3, np.array([0, 1]))),
    (lambda a, i: a[..., i, 1], (A3, np.array([0, 3]))),
    (lambda a, i: (a[0, :, i] + np.arange(4.0)).shape, (A3, np.array([0, 1]))),  # the trace's shape is numpy's
])
def test_several_array_indices_and_integers_index_as_numpy(fn, args):
    """numpy's advanced indexing: integers beside an array index are advanced too, and the indices'
    broadcast shape stands where they stand together, else first. `a[0, :, i]` was traced as
    (4, 2) where numpy gives (2, 4); two array indices were refused."""
    same_every_call(fn, *args)


def test_the_gradient_through_two_array_indices_matches_differences():
    check_grad(lambda p, r, c: -np.log(p[r, c]).mean(), PROBS, np.arange(4), np.array([0, 2, 1, 2]))
