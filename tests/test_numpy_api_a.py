"""numpy's reductions, shape, creation, indexing and sorting functions, ndarray's methods and Python's
builtins on tensors (ops/numpy_api: reductions.py, shape.py, creation.py, indexing.py, sorting.py,
methods.py; operators/py_builtins.py): compiled vs eager, identical (values, dtypes, boxes).

Every entry of those modules' tables has cases here on two dtypes: a plain call, an axis
(negative) or broadcasting case, and an edge case (empty, NaN, 0-d).
"""
import inspect
import math
import os
import warnings

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.errors import ConversionError
from autograph_lite.ops.numpy_api import creation, indexing, methods, reductions, shape, sorting
from helpers import assert_identical, check_grad, cpu_only, identical_both_ways, same_every_call, to_host

DTYPES = [np.float32, np.int64]
both = identical_both_ways


def same_or_raises_alike(fn, x):
    """fn(x) compiled identical to eager; where eager raises, compiled raises its builtin kind
    (numpy's own subclasses, UFuncTypeError or AxisError, are not rebuilt)."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            fn(x)
    except Exception as e:  # noqa: BLE001 - any error numpy raises, compiled must raise alike
        with pytest.raises(next(t for t in type(e).__mro__ if t.__module__ == "builtins")), \
                warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            ag.function(fn)(x)
        return
    both(fn, x)


def data(dtype, shape=(3, 4)):
    values = np.array([3, -1, 4, 1, -5, 9, 2, -6, 5, 3, -5, 8, 9, 7, -9, 3, 2, 3, 8, 4, -6, 2, 6, 4])
    return values[:int(np.prod(shape))].reshape(shape).astype(dtype)


def nans(a):
    """`a` as floats with NaN where it is above 4 (a whole column of row 1 stays finite)."""
    return np.where(a > 4, np.nan, a * 1.0)


FUNCTION_CASES = {  # numpy function -> functions of one array: plain, axis/broadcasting, edge
    # reductions
    "argmin": [lambda a: np.argmin(a), lambda a: np.argmin(a, axis=-1), lambda a: np.argmin(a, 0, keepdims=True),
               lambda a: np.argmin(nans(a), 1), lambda a: np.argmin(a[0, 0])],
    "argmax": [lambda a: np.argmax(a), lambda a: np.argmax(a, -2), lambda a: np.argmax(a, keepdims=True),
               lambda a: np.argmax(a[a[:, 0] > 0], 1, keepdims=True),
               lambda a: np.argmax(nans(a), -1)],
    "cumsum": [lambda a: np.cumsum(a), lambda a: np.cumsum(a, -1), lambda a: np.cumsum(a, 0, dtype=np.float64),
               lambda a: np.cumsum(a.astype(np.int8) * 40, 1), lambda a: np.cumsum(a[:0], 0),
               lambda a: np.cumsum(a[0, 0]), lambda a: np.cumsum(a > 0, 1)],
    "cumprod": [lambda a: np.cumprod(a), lambda a: np.cumprod(a, axis=-2), lambda a: np.cumprod(a, 1, np.float32),
                lambda a: np.cumprod(nans(a), 1), lambda a: np.cumprod(a.astype(np.uint8), 1)],
    "ptp": [lambda a: np.ptp(a), lambda a: np.ptp(a, axis=-1), lambda a: np.ptp(a, 0, keepdims=True),
            lambda a: np.ptp(nans(a), 1)],
    "count_nonzero": [lambda a: np.count_nonzero(a), lambda a: np.count_nonzero(a > 2, axis=-1),
                      lambda a: np.count_nonzero(a, (0, 1), keepdims=True), lambda a: np.count_nonzero(nans(a), 0),
                      lambda a: np.count_nonzero(a[:0], 0)],
    "nansum": [lambda a: np.nansum(a), lambda a: np.nansum(nans(a), axis=-1),
               lambda a: np.nansum(nans(a), 0, keepdims=True), lambda a: np.nansum(nans(a)[:, :0], 1),
               lambda a: np.nansum(nans(a), dtype=np.float32)],
    "nanmean": [lambda a: np.nanmean(a), lambda a: np.nanmean(nans(a), -1), lambda a: np.nanmean(nans(a)),
                lambda a: np.nanmean(nans(a).astype(np.float32), 0, keepdims=True),
                lambda a: np.nanmean(np.where(a > -10, np.nan, a * 1.0), 0)],
    "nanmax": [lambda a: np.nanmax(a), lambda a: np.nanmax(nans(a), axis=-1), lambda a: np.nanmax(nans(a)),
               lambda a: np.nanmax(np.where(a > -10, np.nan, a * 1.0), 0, keepdims=True)],
    "nanmin": [lambda a: np.nanmin(a), lambda a: np.nanmin(nans(a), axis=-2), lambda a: np.nanmin(nans(a)[2]),
               lambda a: np.nanmin(np.where(a > -10, np.nan, a * 1.0), 1)],
    "nanprod": [lambda a: np.nanprod(a), lambda a: np.nanprod(nans(a), axis=-1), lambda a: np.nanprod(nans(a)[:0], 0),
                lambda a: np.nanprod(nans(a), 0, keepdims=True)],
    "nancumsum": [lambda a: np.nancumsum(a), lambda a: np.nancumsum(nans(a), -1), lambda a: np.nancumsum(nans(a)[:0])],
    "nancumprod": [lambda a: np.nancumprod(a, 0), lambda a: np.nancumprod(nans(a), axis=-1),
                   lambda a: np.nancumprod(nans(a), dtype=np.float32)],
    "nanargmin": [lambda a: np.nanargmin(a), lambda a: np.nanargmin(nans(a), -1), lambda a: np.nanargmin(nans(a), 0,
                                                                                                          keepdims=True)],
    "nanargmax": [lambda a: np.nanargmax(a, 0), lambda a: np.nanargmax(nans(a)), lambda a: np.nanargmax(nans(a)[1])],
    "nanvar": [lambda a: np.nanvar(a), lambda a: np.nanvar(nans(a), axis=-1), lambda a: np.nanvar(nans(a), 0, ddof=1),
               lambda a: np.nanvar(nans(a).astype(np.float32), 1, keepdims=True), lambda a: np.nanvar(nans(a)[:, :1], 1, ddof=1),
               lambda a: np.nanvar(nans(a))],
    "nanstd": [lambda a: np.nanstd(a, 0), lambda a: np.nanstd(nans(a), axis=-1, correction=1), lambda a: np.nanstd(nans(a))],
    "average": [lambda a: np.average(a), lambda a: np.average(a, -1), lambda a: np.average(a, 0, returned=True),
                lambda a: np.average(a, axis=1, weights=[1, 2, 0, 1]), lambda a: np.average(a, weights=a * a + 1, returned=True),
                lambda a: np.average(a, (0, 1), keepdims=True), lambda a: np.average(a, 0, weights=a[:, 0] * 1.0),
                lambda a: np.average(a[:0], returned=True), lambda a: np.average(a[:0], 0, returned=True),
                lambda a: np.average(a.astype(np.float32), 1, weights=np.float32([1, 2, 3, 4]), returned=True)],
    "median": [lambda a: np.median(a), lambda a: np.median(a, -1), lambda a: np.median(a, 0, keepdims=True),
               lambda a: np.median(a, (0, 1)), lambda a: np.median(nans(a), 1), lambda a: np.median(a[:, :0], 1),
               lambda a: np.median(a[0, :3]), lambda a: np.median(a.astype(np.float32), axis=-2)],
    "round": [lambda a: np.round(a), lambda a: np.round(a * 1.37, 1), lambda a: np.round(a / 7, 3),
              lambda a: np.round(a * 13, -1), lambda a: np.round(nans(a) / 3, 2), lambda a: np.round(a[0, 0] * 0.25, 1)],
    "around": [lambda a: np.around(a / 3, 2), lambda a: np.around(a, -1), lambda a: np.around(a[:0])],
    # shape
    "transpose": [lambda a: np.transpose(a), lambda a: np.transpose(a, (1, 0)), lambda a: np.transpose(a[0], 0),
                  lambda a: np.transpose(a[0], np.int64(-1))],  # a single axis of a 1-d array: seed 1170015598
    "swapaxes": [lambda a: np.swapaxes(a, 0, 1), lambda a: np.swapaxes(a[None], -1, 0), lambda a: np.swapaxes(a[:0], 0, 1)],
    "moveaxis": [lambda a: np.moveaxis(a, 0, 1), lambda a: np.moveaxis(a[None], 0, -1),
                 lambda a: np.moveaxis(a[None], (0, 1), (-1, 0)), lambda a: np.moveaxis(a[:0], 0, -1)],
    "atleast_1d": [lambda a: np.atleast_1d(a), lambda a: np.atleast_1d(a[0, 0], a[0]), lambda a: np.atleast_1d(a[:0])],
    "atleast_2d": [lambda a: np.atleast_2d(a[0]), lambda a: np.atleast_2d(a[0, 0], a), lambda a: np.atleast_2d(a[0, :0])],
    "atleast_3d": [lambda a: np.atleast_3d(a), lambda a: np.atleast_3d(a[0], a[0, 0]), lambda a: np.atleast_3d(a[:0])],
    "vstack": [lambda a: np.vstack([a, a]), lambda a: np.vstack((a[0], a[1], a)), lambda a: np.vstack([a, np.ones(4)]),
               lambda a: np.vstack([a[:0], a])],
    "hstack": [lambda a: np.hstack([a, a]), lambda a: np.hstack((a[0], a[1, :2])), lambda a: np.hstack([a[0, 0], a[0]]),
               lambda a: np.hstack([a[:, :0], a])],
    "dstack": [lambda a: np.dstack([a, a]), lambda a: np.dstack((a[0], a[1])), lambda a: np.dstack([a[:0], a[:0]])],
    "column_stack": [lambda a: np.column_stack([a[0], a[1]]), lambda a: np.column_stack((a, a[0, :3])),
                     lambda a: np.column_stack([a[0, :0], a[1, :0]])],
    "split": [lambda a: tuple(np.split(a, 3)), lambda a: tuple(np.split(a, 2, axis=-1)),
              lambda a: tuple(np.split(a, [1, 3], 1)), lambda a: tuple(np.split(a, [0, 9]))],
    "array_split": [lambda a: tuple(np.array_split(a, 2)), lambda a: tuple(np.array_split(a, 3, axis=-1)),
                    lambda a: tuple(np.array_split(a[:, :0], 2, 1)), lambda a: tuple(np.array_split(a, [2], 0))],
    "tile": [lambda a: np.tile(a, 2), lambda a: np.tile(a, (2, 1, 3)), lambda a: np.tile(a[0], (2, 2)),
             lambda a: np.tile(a, 0), lambda a: np.tile(a[0, 0], 3)],
    "repeat": [lambda a: np.repeat(a, 2), lambda a: np.repeat(a, 3, axis=-1), lambda a: np.repeat(a, [2, 0, 1], 0),
               lambda a: np.repeat(a, 0, 1), lambda a: np.repeat(a[0, 0], 2)],
    "roll": [lambda a: np.roll(a, 5), lambda a: np.roll(a, -1, axis=-1), lambda a: np.roll(a, (1, 2), (0, 1)),
             lambda a: np.roll(a, 2, (0, 0)), lambda a: np.roll(a[:0], 1, 0), lambda a: np.roll(a, np.argmax(a), 1)],
    "flip": [lambda a: np.flip(a), lambda a: np.flip(a, -1), lambda a: np.flip(a, (0, 1)), lambda a: np.flip(a[0, 0]),
             lambda a: np.flip(a[:0], 0)],
    "fliplr": [lambda a: np.fliplr(a), lambda a: np.fliplr(a[None, 0]), lambda a: np.fliplr(a[:0])],
    "flipud": [lambda a: np.flipud(a), lambda a: np.flipud(a[0]), lambda a: np.flipud(a[:0])],
    "rot90": [lambda a: np.rot90(a), lambda a: np.rot90(a, 2), lambda a: np.rot90(a, -1, (1, 0)),
              lambda a: np.rot90(a[None], 3, (-1, -2)), lambda a: np.rot90(a, 4), lambda a: np.rot90(a[:0])],
    "broadcast_to": [lambda a: np.broadcast_to(a, (2, 3, 4)), lambda a: np.broadcast_to(a[:, :1], (3, 5)),
                     lambda a: np.broadcast_to(a[0, 0], 3), lambda a: np.broadcast_to(a[:0], (2, 0, 4))],
    "pad": [lambda a: np.pad(a, 1), lambda a: np.pad(a, ((1, 0), (2, 3)), constant_values=7),
            lambda a: np.pad(a, 2, "edge"), lambda a: np.pad(a, (1, 2), mode="wrap"), lambda a: np.pad(a, 9, "reflect"),
            lambda a: np.pad(a, ((0, 7), (5, 1)), "symmetric"), lambda a: np.pad(a[:0], 1),
            lambda a: np.pad(a[0], 9, "reflect")],
    "diag": [lambda a: np.diag(a), lambda a: np.diag(a, 1), lambda a: np.diag(a, -2), lambda a: np.diag(a[0]),
             lambda a: np.diag(a[0], -1), lambda a: np.diag(a[0], 2), lambda a: np.diag(a[0, :0])],
    "diagonal": [lambda a: np.diagonal(a), lambda a: np.diagonal(a, 1), lambda a: np.diagonal(a[None], -1, 2, 1),
                 lambda a: np.diagonal(a, 9)],
    "trace": [lambda a: np.trace(a), lambda a: np.trace(a, -1), lambda a: np.trace(a[None], 0, -1, -2),
              lambda a: np.trace(a.astype(np.int8) * 40, dtype=np.int8), lambda a: np.trace(a, 9)],
    "diff": [lambda a: np.diff(a), lambda a: np.diff(a, 2, axis=0), lambda a: np.diff(a, axis=-2, prepend=0, append=a[:1]),
             lambda a: np.diff(a > 2), lambda a: np.diff(a[:, :1]), lambda a: np.diff(a, 0), lambda a: np.diff(nans(a), 1, 0)],
    "append": [lambda a: np.append(a, a[0]), lambda a: np.append(a, a, axis=-1), lambda a: np.append(a[0], 2.5),
               lambda a: np.append(a[:0], a[:0], 0)],
    "delete": [lambda a: np.delete(a, 1), lambda a: np.delete(a, [0, -1], axis=-1), lambda a: np.delete(a, slice(None, None, 2), 0),
               lambda a: np.delete(a, [True, False, True], 0), lambda a: np.delete(a, [], 1)],
    "resize": [lambda a: np.resize(a, (2, 7)), lambda a: np.resize(a, 5), lambda a: np.resize(a[:0], (2, 2)),
               lambda a: np.resize(a, 0)],
    "meshgrid": [lambda a: np.meshgrid(a[0], a[1, :3]), lambda a: np.meshgrid(a[0], a[1, :2], indexing="ij"),
                 lambda a: np.meshgrid(a[0], a[1], a[2, :2], sparse=True), lambda a: np.meshgrid(a[0, :0], a[1])],
    # indexing
    "take": [lambda a: np.take(a, 5), lambda a: np.take(a, [0, -1, 2], axis=-1), lambda a: np.take(a, [[0], [2]], 0),
             lambda a: np.take(a, [5, -7], 1, mode="wrap"), lambda a: np.take(a, [9, -3], mode="clip"),
             lambda a: np.take(a, np.argsort(a[0]), 1), lambda a: np.take(a, [], 0)],
    "take_along_axis": [lambda a: np.take_along_axis(a, np.argsort(a, 1), 1),
                        lambda a: np.take_along_axis(a, np.argmax(a, -1, keepdims=True), axis=-1),
                        lambda a: np.take_along_axis(a, np.array([[2, -1, 0, 0]]), 0),
                        lambda a: np.take_along_axis(a[0], np.argsort(a[0]), None),
                        lambda a: np.take_along_axis(a, np.zeros((3, 0), np.intp), 1),
                        lambda a: np.take_along_axis(a[:, :1], np.array([[2, 0, 2, 1]]), 0)],
    "nonzero": [lambda a: np.nonzero(a > 2), lambda a: np.nonzero(a[0]), lambda a: np.nonzero(a[:0]),
                lambda a: np.nonzero(nans(a))],
    "argwhere": [lambda a: np.argwhere(a), lambda a: np.argwhere(a[0] > 0), lambda a: np.argwhere(a[0, 0]),
                 lambda a: np.argwhere(a[0, 0] > 100), lambda a: np.argwhere(a[:0])],
    "flatnonzero": [lambda a: np.flatnonzero(a), lambda a: np.flatnonzero(a[:, 1] > 0), lambda a: np.flatnonzero(a[:0])],
    "searchsorted": [lambda a: np.searchsorted(np.sort(a[0]), a), lambda a: np.searchsorted(np.sort(a[1]), 3, "right"),
                     lambda a: np.searchsorted(a[0], a[1], sorter=np.argsort(a[0])),
                     lambda a: np.searchsorted(np.sort(nans(a)[1]), np.nan), lambda a: np.searchsorted(a[0, :0], a)],
    "select": [lambda a: np.select([a > 3, a < 0], [a, -a]), lambda a: np.select([a > 3, a[0] < 0], [a * 2, 1.5], -1),
               lambda a: np.select([a > 2], [a[:, :1]], default=a[0]), lambda a: np.select([a[:0] > 0], [a[:0]]),
               lambda a: np.select([a[0, 0] > 0], [a[0, 0]])],
    # sorting
    "sort": [lambda a: np.sort(a), lambda a: np.sort(a, axis=0), lambda a: np.sort(a, None), lambda a: np.sort(-a, -2, "stable"),
             lambda a: np.sort(nans(a), 1), lambda a: np.sort(a[:0]), lambda a: np.sort(a, stable=True)],
    "argsort": [lambda a: np.argsort(a), lambda a: np.argsort(a, axis=-2, kind="stable"), lambda a: np.argsort(a, None),
                lambda a: np.argsort(nans(a), 0), lambda a: np.argsort(a[:0]), lambda a: np.argsort(a, stable=True)],
    # creation (np.linspace dispatches; the C-written ones go through operators/call.py)
    "linspace": [lambda a: np.linspace(a[0, 0], a[1, 1], 7), lambda a: np.linspace(0, a[0], 5, axis=-1),
                 lambda a: np.linspace(a[0, 0], 10, 4, endpoint=False, retstep=True),
                 lambda a: np.linspace(a[0, 0], a[0, 0], 3), lambda a: np.linspace(a[0], 20, 6, dtype=np.int32),
                 lambda a: np.linspace(a[0, 0], 1.5, 1, retstep=True), lambda a: np.linspace(a[0, 0], 1.5, 0)],
}

CALL_CASES = {  # numpy creation functions that take a tensor without dispatching
    "zeros": [lambda a: np.zeros(a.shape[0]), lambda a: np.zeros((len(a), np.argmax(a)), np.int8),
              lambda a: np.zeros(np.argmin(a[0, :1]))],
    "ones": [lambda a: np.ones(np.argmax(a)), lambda a: np.ones((2, np.argmax(a)), dtype=bool),
             lambda a: np.ones((np.argmax(a[0, :1]),))],
    "empty": [lambda a: np.empty(np.argmax(a)).size, lambda a: np.empty((np.argmax(a), 2), np.int32).dtype],
    "full": [lambda a: np.full(3, a[0, 0]), lambda a: np.full((2, 4), a[0]), lambda a: np.full(2, a[0, 0], np.float64),
             lambda a: np.full(np.argmax(a), 1.5), lambda a: np.full(0, a[0, 0])],
    "arange": [lambda a: np.arange(np.argmax(a)), lambda a: np.arange(1, a[0, 0].astype(np.int64), 2),
               lambda a: np.arange(a[0, 0], 7.5), lambda a: np.arange(a[0, 2], -3, -1, dtype=np.float32),
               lambda a: np.arange(np.argmin(a[0, :1]))],
    "eye": [lambda a: np.eye(np.argmax(a)), lambda a: np.eye(3, np.argmax(a), 1), lambda a: np.eye(4, k=np.argmax(a[0])),
            lambda a: np.eye(np.argmin(a[0, :1]), dtype=np.int32)],
    "identity": [lambda a: np.identity(np.argmax(a)), lambda a: np.identity(np.argmin(a), np.int32)],
    "array": [lambda a: np.array([a[0, 0], 1.0]), lambda a: np.array([a[0, 0], a[1, 1]]), lambda a: np.array(a[0, 0]),
              lambda a: np.array([a[0], a[1] * 2]), lambda a: np.array(a, ndmin=3), lambda a: np.array([a[0, 0], 2]),
              lambda a: np.array([[a[0, 0], 2], [3, a[1, 1]]], dtype=np.float32), lambda a: np.array([a[0, :0]])],
    "asarray": [lambda a: np.asarray(a[0, 0]), lambda a: np.asarray([a[0, 0], 2], dtype=np.float64),
                lambda a: np.asarray(a), lambda a: np.asarray(a[:0], np.int8)],
    "asanyarray": [lambda a: np.asanyarray(a[0, 0]), lambda a: np.asanyarray([a[0], a[1]])],
}

METHOD_CASES = {
    "argmin": [lambda a: a.argmin(), lambda a: a.argmin(-1), lambda a: a.argmin(0, keepdims=True)],
    "argmax": [lambda a: a.argmax(), lambda a: a.argmax(axis=-2), lambda a: nans(a).argmax(1)],
    "cumsum": [lambda a: a.cumsum(), lambda a: a.cumsum(-1), lambda a: a[:0].cumsum(0)],
    "cumprod": [lambda a: a.cumprod(), lambda a: a.cumprod(axis=-1, dtype=np.float64), lambda a: a[:0].cumprod()],
    "clip": [lambda a: a.clip(0, 3), lambda a: a.clip(max=2), lambda a: a.clip(min=a[0]), lambda a: a[:0].clip(1, 2)],
    "round": [lambda a: a.round(), lambda a: (a / 7).round(2), lambda a: a.round(-1), lambda a: nans(a).round(1)],
    "ravel": [lambda a: a.ravel(), lambda a: a.T.ravel(), lambda a: a[0, 0].ravel()],
    "flatten": [lambda a: a.flatten(), lambda a: a[None].flatten(), lambda a: a[:0].flatten()],
    "squeeze": [lambda a: a[None].squeeze(), lambda a: a[:, None].squeeze(-2), lambda a: a[:1, :1].squeeze()],
    "dot": [lambda a: a.dot(a.T), lambda a: a[0].dot(a[1]), lambda a: a.dot(2), lambda a: a[:, :0].dot(a[:0])],
    "item": [lambda a: a[0, 0].item(), lambda a: a[0:1, 0:1].item(), lambda a: a.item(3), lambda a: a.item(1, 2),
             lambda a: a.item(-1), lambda a: (a > 0).item(0)],
    "std": [lambda a: a.std(), lambda a: a.std(-1, ddof=1), lambda a: a.std(0, keepdims=True)],
    "var": [lambda a: a.var(), lambda a: a.var(axis=-1), lambda a: a[:, :1].var(1)],
    "nonzero": [lambda a: a.nonzero(), lambda a: (a[0] > 0).nonzero(), lambda a: a[:0].nonzero()],
    "transpose": [lambda a: a.transpose(), lambda a: a.transpose(1, 0), lambda a: a[None].transpose((2, 0, 1)),
                  lambda a: a[None].transpose(-1, 0, -2), lambda a: a[0, 0].transpose()],
    "swapaxes": [lambda a: a.swapaxes(0, 1), lambda a: a[None].swapaxes(-1, 0)],
    "repeat": [lambda a: a.repeat(2), lambda a: a.repeat(2, -1), lambda a: a.repeat([1, 0, 3], axis=0)],
    "take": [lambda a: a.take([1, 0]), lambda a: a.take(2, -1), lambda a: a.take([], 0)],
    "trace": [lambda a: a.trace(), lambda a: a.trace(1), lambda a: a.trace(-1, dtype=np.float32)],
    "diagonal": [lambda a: a.diagonal(), lambda a: a.diagonal(1), lambda a: a[None].diagonal(0, -1, -2)],
    "argsort": [lambda a: a.argsort(), lambda a: a.argsort(-2, kind="stable"), lambda a: a[:0].argsort()],
    "searchsorted": [lambda a: np.sort(a[0]).searchsorted(2), lambda a: np.sort(a[1]).searchsorted(a, "right")],
    "nbytes": [lambda a: (a.nbytes, a.itemsize), lambda a: (a[0, 0].nbytes, a[:0].itemsize)],
}

BUILTIN_CASES = {
    "min": [lambda a: min(a[0, 0], a[0, 1]), lambda a: min(a[0]), lambda a: min(a[0, 0], 2), lambda a: min(a[:, :1]),
            lambda a: min(nans(a)[1]), lambda a: min(nans(a)[0]), lambda a: min(a[:0], default=-1),
            lambda a: min([a[0, 0], a[1, 1], a[2, 2]]), lambda a: min(a[i, i] for i in range(3)),
            lambda a: min(3, 1, 2), lambda a: min((i for i in [4, 2])), lambda a: min([], default=7)],
    "max": [lambda a: max(a[0, 0], a[1, 1], a[2, 2]), lambda a: max(a[:, 1]), lambda a: max(a[0, 0], 2.5),
            lambda a: max(nans(a)[:, 0]), lambda a: max(nans(a)[0])],
    "abs": [lambda a: abs(a), lambda a: abs(a[0, 0]), lambda a: abs(a[:0])],
    "sum": [lambda a: sum(a), lambda a: sum(a[0]), lambda a: sum(a[0], 1.5), lambda a: sum(a[:0]),
            lambda a: sum(a[0] > 0), lambda a: sum(a.astype(np.int8) * 50), lambda a: sum(-0.0 * a[0])],
    "round": [lambda a: round(a[0, 0] / 3), lambda a: round(a[0, 0] / 3, 2), lambda a: round(a[0, 0], -1),
              lambda a: round(a[1, 0] * 0.5), lambda a: round(float(a[0, 0]) / 3, 2), lambda a: round(2.675 * a[0, 0].item(), 2),
              lambda a: round(int(a[0, 0]) * 13, -1)],
    "pow": [lambda a: pow(a, 2), lambda a: pow(a[0, 0], 3), lambda a: pow(2, a[:0])],
    "divmod": [lambda a: divmod(a, 3), lambda a: divmod(7, a[0, 1]), lambda a: divmod(a, a[0])],
    "sorted": [lambda a: sorted(a[0]), lambda a: sorted(a[1], reverse=True), lambda a: sorted(a[:0, 0]),
               lambda a: sorted(-0.0 * a[0], reverse=True)],
    "any": [lambda a: any(a[0] > 8), lambda a: any(a[:, :1] < 0), lambda a: any(a[:0]), lambda a: any(nans(a)[2] * 0),
            lambda a: any([a[0, 0] > 100, False]), lambda a: any([a[0, 0] > 100, 1]), lambda a: any(a[i, 0] > 4 for i in range(3))],
    "all": [lambda a: all(a[0]), lambda a: all(a[:, 1] > -20), lambda a: all(a[:0]), lambda a: all(nans(a)[2]),
            lambda a: all((a[0, 0], 0)), lambda a: all([a[0, :1], a[1, 1] < 0, True])],
    "float": [lambda a: float(a[0, 0]), lambda a: float(a[0, 0]) / 3],
    "int": [lambda a: int(a[0, 0] / 2), lambda a: int(a[1, 0])],
    "math": [lambda a: math.sqrt(abs(a[0, 0])), lambda a: math.floor(a[0, 0] / 2), lambda a: math.log(abs(a[0, 0]), 2),
             lambda a: math.atan2(a[0, 0], a[0, 1]), lambda a: math.isnan(a[0, 0]), lambda a: math.exp(a[0, 1]),
             lambda a: math.hypot(a[0, 0], 2)],
}


@pytest.mark.parametrize("name", FUNCTION_CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_function_matches_eager(name, dtype):
    for fn in FUNCTION_CASES[name]:
        both(fn, data(dtype))


@pytest.mark.parametrize("name", CALL_CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_creation_with_tensor_arguments_matches_eager(name, dtype):
    for fn in CALL_CASES[name]:
        both(fn, data(dtype))


@pytest.mark.parametrize("name", METHOD_CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_ndarray_method_matches_eager(name, dtype):
    for fn in METHOD_CASES[name]:
        both(fn, data(dtype))


@pytest.mark.parametrize("name", BUILTIN_CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_python_builtin_matches_eager(name, dtype):
    for fn in BUILTIN_CASES[name]:
        both(fn, data(dtype))


def test_every_entry_is_tested():
    for area in (reductions, shape, indexing, sorting, creation, methods):
        assert {f.__name__ for f in area.FUNCTIONS} <= set(FUNCTION_CASES), area.__name__
    assert {f.__name__ for f in creation.CALLS} <= set(CALL_CASES)
    assert set(methods.METHODS) <= set(METHOD_CASES)


def test_lists_come_back_as_lists():
    x = data(np.float32)
    for fn in (lambda a: np.split(a, 3), lambda a: np.array_split(a, [1], 1), lambda a: sorted(a[0])):
        compiled = to_host(ag.function(fn)(x))
        assert type(compiled) is list and len(compiled) == len(fn(x))
        for e, c in zip(fn(x), compiled):
            assert type(c) is type(e) and np.array_equal(c, e)


def test_lengths_known_when_the_graph_runs_are_none_dims():
    f = ag.function(lambda a: (np.nonzero(a > 2), np.arange(np.argmax(a)), np.argwhere(a), np.flatnonzero(a)))
    graph = f.get_concrete_function(data(np.float32)).graph
    assert [t.shape for t in graph.outputs] == [(None,), (None,), (None,), (None, 2), (None,)]
    for x in (data(np.float32), -data(np.float32)):  # one trace, other lengths
        both(lambda a: (np.nonzero(a > 2), np.arange(np.argmax(a))), x)


def test_plain_numpy_calls_stay_constants():
    def f(a):
        return a + np.zeros(4) + np.arange(4) + np.array([1.0, 2.0, 3.0, 4.0])
    graph = ag.function(f).get_concrete_function(data(np.float32)).graph
    assert {n.op for n in graph.nodes} <= {"Placeholder", "Const", "Add"}
    both(f, data(np.float32))


@pytest.mark.parametrize("fn", [
    lambda a: np.array([a[0], 300], dtype=np.int8), lambda a: np.asarray([a[0], -1], dtype=np.uint8),
    lambda a: np.array([a, [1, 300]], dtype=np.int8), lambda a: np.array([a[0], 2 ** 70], dtype=np.int64),
    lambda a: np.full(a[0], 300, np.int8), lambda a: np.full(a[:1].sum(), -1, dtype=np.uint16),
    lambda a: np.array([a[0], 300]), lambda a: np.array([a[0], 300], dtype=np.int16)])
def test_python_ints_out_of_the_dtypes_range_raise_numpys_overflow_error(fn):
    # numpy checks a Python int it stores into an array of a given dtype; a cast would wrap
    same_every_call(fn, np.array([1, 2], np.int8))


@pytest.mark.parametrize("fn", [
    lambda a: np.round(a, 1), lambda a: np.round(a), lambda a: a.round(2), lambda a: np.round(a, -1),
    lambda a: np.round(a[0], 1), lambda a: np.round(a.astype(np.complex64), 3), lambda a: np.around(a, 12)])
def test_round_of_complex_rounds_each_part_as_numpy(fn):
    # numpy rounds the real and imaginary parts as float arrays; a complex multiply and divide by
    # 10**decimals rounds 1 ulp off, and re + 1j * im would lose -0.0 and infinities
    same_every_call(fn, np.array([1.234 + 2.468j, -3.702 + 0.617j, complex(-0.0, np.inf), complex(np.nan, -0.04),
                                  complex(-0.04, 1e300)]))


def test_errors_match_eager():
    x = data(np.float64)
    for fn, error in [(lambda a: round(a), TypeError), (lambda a: np.nanmax(a[:0], 0), ValueError),
                      (lambda a: np.split(a, 2), ValueError), (lambda a: np.nonzero(a[0, 0]), ValueError),
                      (lambda a: np.fliplr(a[0]), ValueError), (lambda a: min(a), ValueError),
                      (lambda a: min(a[0], a[1]), ValueError), (lambda a: max([a[0], a[1, :1]]), ValueError),
                      (lambda a: min(a[:0]), ValueError), (lambda a: sum(a[0, 0]), TypeError),
                      (lambda a: np.pad(a, -1), ValueError), (lambda a: math.sqrt(a[0, 1]), ValueError),
                      (lambda a: np.rot90(a, axes=(0, 0)), ValueError), (lambda a: a.item(), ValueError),
                      (lambda a: np.nanargmax(np.where(a[:, :1] > 4, np.nan, a), 1), ValueError),
                      (lambda a: np.average(a, 1, weights=a[0] * 0), ZeroDivisionError),
                      (lambda a: np.average(a, 1, weights=[0, 0, 0, 0]), ZeroDivisionError)]:
        with pytest.raises(error):
            fn(x)
        with pytest.raises(error):
            ag.function(fn)(x)


def test_sorted_of_nan_raises_when_the_graph_runs():
    f = ag.function(lambda a: sorted(a))
    assert f(np.array([2.0, 1.0])) == [1.0, 2.0]
    with pytest.raises(ValueError, match="NaN"):
        f(np.array([2.0, np.nan]))


def _line(fn):
    return inspect.getsourcelines(fn)[1] + 1


def test_refusals_name_the_construct_and_line():
    def sort_in_place(x):
        x.sort()
        return x

    def tolist(x):
        return x.tolist()

    def order(x):
        return np.sort(x, order="f")

    def mode(x):
        return np.pad(x, 1, mode="mean")

    def flat(x):
        return x.flat[0]

    def unknown_method(x):
        return x.partition(1)

    def repeat_by_tensor(x):
        return np.repeat(x, np.argmax(x))

    def python_sum_of_unknown_length(x):
        return sum(x[x > 0])

    for fn, message in [(sort_in_place, r"ndarray\.sort\(\) is not supported on tensors: it sorts the array in place"),
                        (tolist, r"ndarray\.tolist\(\) is not supported on tensors"),
                        (order, r"np\.sort\(\.\.\., order=\) is not supported on tensors"),
                        (mode, r"np\.pad\(\.\.\., mode='mean'\) is not supported on tensors"),
                        (flat, r"ndarray\.flat is not supported on tensors"),
                        (unknown_method, r"ndarray\.partition\(\) is not supported on tensors"),
                        (repeat_by_tensor, r"np\.repeat with repeats given as a tensor"),
                        (python_sum_of_unknown_length, r"sum\(\) of .* known only when the graph runs")]:
        with pytest.raises(ConversionError, match=message + rf".*test_numpy_api_a\.py:{_line(fn)}\)"):
            ag.function(fn)(np.arange(4.0))


def test_an_attribute_ndarray_lacks_is_eagers_attribute_error():
    with pytest.raises(AttributeError, match="'numpy.ndarray' object has no attribute 'ptp'"):
        ag.function(lambda x: x.ptp())(np.arange(4.0))


X = np.random.default_rng(0).uniform(0.5, 2.0, (3, 4))
S = np.sum
GRADIENTS = {
    "cumsum": lambda x: S(np.cumsum(x, 1) ** 2) + S(np.cumsum(x) * 0.5),
    "cumprod": lambda x: S(np.cumprod(x, -1)) + S(np.cumprod(x[0])),
    "sort": lambda x: S(np.sort(x, 0) * np.arange(4.0)) + S(np.sort(x, None) * np.arange(12.0)),
    "median": lambda x: S(np.median(x, 1) ** 2) + np.median(x),
    "take_along_axis": lambda x: S(np.take_along_axis(x, np.array([[0, 0, 3, 1]] * 3), 1) ** 2)
    + S(np.take_along_axis(x.ravel(), np.array([3, 3, 5]), None))
    + S(np.take_along_axis(x[:, :1], np.array([[2, 0, 2, 1], [1, 1, 0, 0]]), 0) * np.arange(4.0)),
    "broadcast_to": lambda x: S(np.broadcast_to(x[:, :1], (3, 5)) * np.arange(5.0)),
    "tile_repeat_roll": lambda x: S(np.tile(x, (2, 1)) ** 2) + S(np.repeat(x, 2, 1) * 0.5) + S(np.roll(x, 1) * X),
    "pad_diag_trace": lambda x: S(np.pad(x, 1, "edge") ** 2) + S(np.diag(x[0]) * 3.0) + np.trace(x) ** 2,
    "nan_reductions": lambda x: np.nansum(x ** 2) + np.nanmax(x) + np.nanmean(x, 0)[1] + np.ptp(x, 1)[0],
}


@pytest.mark.parametrize("name", GRADIENTS)
def test_gradients_match_finite_differences(name):
    check_grad(GRADIENTS[name], X)


@pytest.mark.parametrize("dtype", DTYPES)
def test_ops_with_onnx_rules_export(dtype, tmp_path):
    pytest.importorskip("onnxruntime")
    from test_onnx import assert_matches_eager

    def fn(x):
        return (np.argmin(x, 1), np.argmax(x), np.argmin(x), np.cumsum(x, -1), np.cumsum(x),
                np.broadcast_to(x[:, :1], (2, 3, 5)), np.tile(x, 2), np.repeat(x, 2, 0))
    assert_matches_eager(fn, data(dtype), tmp_path=tmp_path)


def test_ops_without_onnx_rules_name_the_op_and_line(tmp_path):
    def fn(x):
        return np.sort(x)
    with pytest.raises(ConversionError, match=rf"Sort.*test_numpy_api_a\.py:{_line(fn)}"):
        ag.export_onnx(ag.function(fn).get_concrete_function(data(np.float32)), str(tmp_path / "m.onnx"))


ALL_CASES = {**{f"np.{k}": v for k, v in FUNCTION_CASES.items()}, **{f"np.{k}()": v for k, v in CALL_CASES.items()},
             **{f".{k}": v for k, v in METHOD_CASES.items()}, **{f"{k}()": v for k, v in BUILTIN_CASES.items()}}


@pytest.mark.parametrize("dtype", [np.float64, np.int8, np.uint8, np.float16, np.bool_])
def test_other_dtypes_match_eager_or_fail_alike(dtype):
    """Every case on more dtypes: eager's result, or an error of eager's type where eager raises
    (np.round of bools with decimals, cumsum of bools, ...)."""
    x = data(np.int64).astype(dtype)
    for name, fns in ALL_CASES.items():
        if name == "pow()" and dtype == np.bool_ and os.environ.get("AG_TEST_DEVICE", "cpu") != "cpu":
            continue  # a device's `bool_array ** 2` is int64, numpy's int8 (the Pow op, not this area)
        for fn in fns:
            same_or_raises_alike(fn, x)


ZERO_D_CASES = [lambda x: np.cumsum(x), lambda x: np.argmin(x), lambda x: np.argmax(x, keepdims=True), lambda x: np.ptp(x), lambda x: np.count_nonzero(x),
 lambda x: np.nansum(x), lambda x: np.nanmax(x), lambda x: np.nanmean(x), lambda x: np.nanvar(x), lambda x: np.median(x), lambda x: np.round(x, 1),
 lambda x: np.atleast_1d(x), lambda x: np.atleast_3d(x), lambda x: np.flip(x), lambda x: np.broadcast_to(x, 3), lambda x: np.tile(x, 2), lambda x: np.tile(x, ()),
 lambda x: np.repeat(x, 2), lambda x: np.roll(x, 1), lambda x: np.sort(x, None), lambda x: np.argsort(x), lambda x: np.take(x, 0),
 lambda x: np.argwhere(x), lambda x: np.flatnonzero(x), lambda x: np.average(x), lambda x: np.average(x, returned=True), lambda x: np.array(x), lambda x: np.asarray(x),
 lambda x: x.item(), lambda x: x.round(), lambda x: x.ravel(), lambda x: x.flatten(), lambda x: x.transpose(), lambda x: np.full(2, x),
 lambda x: np.select([x > 0], [x]), lambda x: np.append(x, 1), lambda x: np.resize(x, 3), lambda x: float(x), lambda x: round(x), lambda x: min(x, 1.0),
 lambda x: max(x, x * 2), lambda x: math.sqrt(x), lambda x: np.linspace(x, 5, 3), lambda x: np.cumprod(x, dtype=np.float32), lambda x: np.nancumsum(x),
 lambda x: np.nanargmax(x), lambda x: np.nanprod(x), lambda x: np.diff(x), lambda x: np.nonzero(x), lambda x: np.sort(x), lambda x: np.delete(x, 0),
 lambda x: np.trace(x), lambda x: np.searchsorted(np.arange(5.0), x), lambda x: np.clip(x, 0, 1), lambda x: np.array([x, x]), lambda x: divmod(x, 2),
 lambda x: np.eye(3, k=x.astype(int)), lambda x: np.arange(x), lambda x: np.zeros(x.astype(int)), lambda x: np.pad(x, 1), lambda x: np.rot90(x),
 # numpy reduces a 0-d float over an int axis 0 or -1 as over all (an int's or a tuple's is AxisError; fuzzer seed 23001199)
 lambda x: np.nanvar(x, 0), lambda x: np.nanstd(x, -1, ddof=1), lambda x: np.nanvar(x, 0, keepdims=True),
 lambda x: np.nanvar(x, (0,)), lambda x: np.nanstd(x, 1)]


@pytest.mark.parametrize("x", [np.array(3.0), np.float64(3.0), np.array(-2, np.int32), np.float32(np.nan)],
                         ids=["0-d array", "numpy scalar", "0-d int array", "NaN scalar"])
def test_0d_arguments_match_eager_or_fail_alike(x):
    """A 0-d array and a numpy scalar in: numpy's box out (a numpy scalar or a 0-d array), or its error."""
    for fn in ZERO_D_CASES:
        same_or_raises_alike(fn, x)


# known only while tracing as None: `x.shape[0]` itself (np.zeros(x.shape[0])), squeeze without an axis
_NEED_KNOWN_DIMS = {"np.zeros()", ".squeeze"}


@pytest.mark.parametrize("table", ["np.", ".", "builtins"])
def test_unknown_dims_match_eager_or_are_refused_by_name(table):
    """Every case on an array whose first dim is known only when the graph runs (a boolean mask's
    rows): eager's result, or a ConversionError naming the function (an unknown length along the
    axis it works on)."""
    x = data(np.float32)
    cases = {k: v for k, v in ALL_CASES.items() if k not in _NEED_KNOWN_DIMS and (
        k.startswith(table) if table != "builtins" else not k.startswith(("np.", ".")))}
    for fns in cases.values():
        for fn in fns:
            def masked(a, fn=fn):
                return fn(a[a[:, 0] > -100])
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                try:
                    masked(x)
                except Exception as e:  # noqa: BLE001 - any error numpy raises, compiled must raise alike
                    with pytest.raises(next(t for t in type(e).__mro__ if t.__module__ == "builtins")):
                        ag.function(masked)(x)
                    continue
                try:
                    compiled = ag.function(masked)(x)
                except ConversionError as e:
                    assert "known only when the graph runs" in str(e) and "test_numpy_api_a.py" in str(e)
                    continue
                assert_identical(masked(x), compiled)


@pytest.mark.parametrize("fn, message", [
    (lambda a: np.nanmax(np.where(a > 4, np.nan, a), 0), "All-NaN slice encountered"),
    (lambda a: np.nanmin(np.where(a[:, :1] > 4, np.nan, a), 1), "All-NaN slice encountered"),
    (lambda a: np.nanmean(np.where(a > 4, np.nan, a), 0), "Mean of empty slice"),
    (lambda a: np.nanvar(np.where(a > 4, np.nan, a), 0, ddof=1), "Degrees of freedom <= 0 for slice"),
])
def test_numpys_value_warnings_at_the_users_line(fn, message):
    x = data(np.float64)
    x[:, 3] = 9  # one all-NaN column; the others are not
    with pytest.warns(RuntimeWarning, match=message) as eager:
        expected = fn(x)
    compiled = ag.function(fn)
    with pytest.warns(RuntimeWarning, match=message) as got:
        assert_identical(expected, compiled(x))
    assert [(w.filename, w.lineno) for w in got if message in str(w.message)][:1] == \
        [(w.filename, w.lineno) for w in eager if message in str(w.message)][:1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled(data(np.float64) * 0 + 1)  # no NaN slice: no warning


@cpu_only("numpy's floating-point warnings: a GPU raises no flags (cupy never warns)")
def test_floating_point_warnings_name_numpys_loop():
    x = np.array([3e38, 3e38], np.float32)
    for fn in (lambda a: np.cumsum(a), lambda a: np.cumprod(a)):
        with pytest.warns(RuntimeWarning, match="overflow encountered in accumulate"):
            fn(x)
        with pytest.warns(RuntimeWarning, match="overflow encountered in accumulate"):
            ag.function(fn)(x)
