"""The op table: every op is one `OpDef` registered by name.

An op is defined once, in `ops/`: how to build its kernel for an array module, how
its output shapes and dtypes follow from its inputs, and (slot for the gradients
work) how to differentiate it. The executor, the printer and the passes read this
table; they never special-case an op they can look up here.
"""
import dataclasses
from typing import Callable, Optional


@dataclasses.dataclass(eq=False)
class OpDef:
    name: str                       # graph op type, e.g. "MatMul"
    kernel: Callable                # kernel(xp, **attrs) -> callable(*arrays)
    infer: Callable                 # infer(*input Tensors, **attrs) -> [(shape, dtype)]
    grad: Optional[Callable] = None # filled by the gradients work
    elementwise: bool = False       # output[i] depends only on inputs[i] (fusion candidate)
    stateful: bool = False          # draws random numbers: never folded, merged or dropped
    weak_result: bool = False       # result of all-weak inputs stays weak (NEP 50 arithmetic)
    # inline(xp, operand_exprs, bind, **attrs) -> a Python expression the plan can use instead of
    # a kernel call (e.g. "v1 + v2"); bind(value) gives the expression for a value it uses (a
    # literal for exact builtin scalars, else a closure variable): never write a value as text
    inline: Optional[Callable] = None
    printed_attrs: Optional[tuple] = None  # the attrs a printed graph shows (None: all)
    # numpy's name for the op in its floating-point warnings ("divide" in "divide by zero
    # encountered in divide"); None: the op raises none (see runtime/fp_errors.py)
    float_errors: Optional[str] = None
    _eager: dict = dataclasses.field(default_factory=dict, repr=False)

    def eager_kernel(self, xp, attrs=None):
        """The kernel for `xp` and `attrs`, built once per distinct (hashable) attrs."""
        try:
            key = (xp, tuple(attrs.items())) if attrs else xp
            fn = self._eager.get(key)
        except TypeError:  # unhashable attrs (an index holding a list): build it each time
            return self.kernel(xp, **attrs)
        if fn is None:
            if len(self._eager) > 256:
                self._eager.clear()
            fn = self._eager[key] = self.kernel(xp, **(attrs or {}))
        return fn


REGISTRY = {}


def register(opdef):
    if opdef.name in REGISTRY:
        raise ValueError(f"op {opdef.name!r} is already registered")
    REGISTRY[opdef.name] = opdef
    return opdef


def lookup(name):
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}: no kernel is registered under that name") from None
