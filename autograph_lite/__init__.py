"""autograph_lite: compile eager numerical Python into graphs traced once per signature.

    import autograph_lite as ag

    @ag.function
    def f(x):
        return ag.tanh(x) * 2.0
"""
from . import debug
from . import ops as _ops
from .autodiff import grad, value_and_grad
from .errors import ConversionError, LoadError, SymbolicValueError
from .export import export_onnx
from .function import ConcreteFunction, Function, RetracingWarning, TensorSpec, function
from .loader import to_code, to_graph
from .operators import do_not_convert
from .ops import print
from .ops import (abs, add, argmax, cast, concat, cond, constant, divide, equal, exp, expand_dims,
                  fill, floordiv, gather, greater, greater_equal, identity, less, less_equal, log,
                  logical_and, logical_not, logical_or, matmul, maximum, minimum, mod, multiply,
                  negative, nn, not_equal, ones, ones_like, pad, pow, random, range, reduce_all,
                  reduce_any, reduce_max, reduce_mean, reduce_min, reduce_prod, reduce_sum,
                  reshape, shape, size, sqrt, square, squeeze, stack, subtract, tanh, transpose,
                  where, while_loop, zeros, zeros_like)
from .runtime import devices as _devices  # noqa: F401
from .runtime.devices import device
from .runtime.graph import Graph, Node, Tensor
from .runtime.native.compiler import NativeKernelWarning
from .saving import load, save

__version__ = "0.1.0"


def __getattr__(name):
    if name == "distributed":  # imported on first use: it imports dask (the `distributed` extra)
        import importlib
        return importlib.import_module(".distributed", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
