"""The op library. Each op is one registered OpDef (kernel, shape/dtype rule, gradient slot).

Called on arrays an op runs its kernel; called on a symbolic Tensor it adds a node.
"""
from . import overloads as _overloads  # noqa: F401  (installs Tensor operators)
from . import generator_draws as _generator_draws  # noqa: F401  (registers RandomDraw)
from . import python_values as _python_values  # noqa: F401  (registers PythonLoop, PythonItem)
from . import nn, random_ops as random
from .array_ops import (concat, constant, expand_dims, fill, gather, getitem, identity, ones, ones_like,
                        pad, range, reshape, shape, size, squeeze, stack, transpose, zeros, zeros_like)
from .control_flow import cond, while_loop
from .logging_ops import assert_that, print
from .core import convert_to_tensor
from .gradients import gradients
from .math_ops import (abs, add, argmax, cast, divide, equal, exp, floordiv, greater,
                       greater_equal, less, less_equal, log, logical_and, logical_not,
                       logical_or, matmul, maximum, minimum, mod, multiply, negative, not_equal,
                       pow, reduce_all, reduce_any, reduce_max, reduce_mean, reduce_min,
                       reduce_prod, reduce_sum, sqrt, square, subtract, tanh, where)
