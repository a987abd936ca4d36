"""Methods, static and class methods, and callable objects, converted with their instance."""
import numpy as np
import pytest

import autograph_lite as ag
from helpers import check, f32


class Model:
    scale = 2.0

    def __init__(self, w):
        self.w = w

    def forward(self, x):
        h = ag.matmul(x, self.w)
        if ag.reduce_sum(h) > 0:
            h = self.activate(h)
        return h

    def activate(self, h):
        return ag.tanh(h) * self.scale

    @staticmethod
    def clip(x):
        return ag.where(x > 1.0, 1.0, x)

    @classmethod
    def scaled(cls, x):
        return x * cls.scale

    def loop(self, x, n):
        i = 0
        while i < n:
            x = self.clip(x * 1.5)
            i += 1
        return x

    def __call__(self, x):
        return self.forward(x) + self.scaled(x)


class Counter:
    def __init__(self):
        self.steps = 0

    def count(self, x):
        while ag.reduce_sum(x) > 1:
            x = x * 0.5
        return x


W = np.eye(2, dtype=np.float32)
MODEL = Model(W)
X = f32(1, 2)[None]


def use_model(x):
    return MODEL(x)


def use_static(x):
    return Model.clip(x) + MODEL.clip(x)


def use_class_method(x):
    return Model.scaled(x)


@pytest.mark.parametrize("fn, inputs", [
    (MODEL.forward, [(X,), (-X,)]),
    (MODEL.activate, [(X,)]),
    (Model.clip, [(f32(0.5, 3),)]),
    (Model.scaled, [(X,)]),
    (MODEL.loop, [(X, np.int64(3)), (X, np.int64(0))]),
    (use_model, [(X,), (-X,)]),
    (use_static, [(f32(0.5, 3),)]),
    (use_class_method, [(X,)]),
    (Counter().count, [(f32(4, 4),)]),
])
def test_methods(fn, inputs):
    check(fn, *inputs, traces=1)


def test_decorated_method_traces_per_instance():
    class Layer:
        def __init__(self, k):
            self.k = k

        @ag.function
        def __call__(self, x):
            if x[0] > 0:
                return x * self.k
            return x
    a, b = Layer(2.0), Layer(3.0)
    assert float(a(f32(1))[0]) == 2.0 and float(b(f32(1))[0]) == 3.0
    assert "Cond" in ag.to_code(Layer.__call__) or "if_stmt" in ag.to_code(Layer.__call__)


def ndarray_methods_through_the_class(x):
    y = x * 2
    z = np.ndarray.copy(y)
    z[0] = 9.0
    return y, z, np.ndarray.sum(y, axis=0), np.ndarray.__add__(y, 1), np.ndarray.astype(y, np.int32), \
        np.ndarray.copy(np.ones(2))


def test_ndarray_methods_called_through_the_class_are_the_tensors_own():
    check(ndarray_methods_through_the_class, (np.arange(3.0),), (np.arange(4.0) - 1,))


def test_an_in_place_ndarray_method_through_the_class_is_refused_at_its_line():
    def resizes(x):
        return np.ndarray.resize(x, 4)
    with pytest.raises(ag.ConversionError, match=r"ndarray.resize\(\) is not supported on tensors.*test_methods.py:\d+"):
        ag.function(resizes)(np.arange(3.0))
