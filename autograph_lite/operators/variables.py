"""Placeholders for Python variables that have no value yet, and the compiler's own names."""
import sys

RETURN_VALUE = "retval_"  # holds the value of a converted `return`
DO_RETURN = "do_return"   # set once a converted `return` has run


class Undefined:
    """The value of variable `name` before any assignment to it has run.

    Any use of it raises UnboundLocalError naming the variable, as Python would.
    """

    __slots__ = ("name", "why")

    def __init__(self, name, why=None):
        self.name = name
        self.why = why  # a ConversionError message: a value exists on some runs only

    def __repr__(self):
        return f"<undefined {self.name}>"

    def _fail(self, *args, **kwargs):
        if self.why:
            from ..errors import ConversionError
            raise ConversionError(self.why)
        raise UnboundLocalError(f"local variable '{self.name}' is used before a value was assigned to it")

    __getattr__ = _fail
    __bool__ = __len__ = __iter__ = __call__ = __getitem__ = __array__ = _fail
    for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lt", "le",
                "gt", "ge", "and", "or"):
        locals()[f"__{_op}__"] = locals()[f"__r{_op}__"] = _fail
    __neg__ = __abs__ = __index__ = __float__ = __int__ = _fail
    del _op


def return_value(value, returned=True):
    """What a converted function returns: None if no `return` ran.

    `returned` is the `do_return` flag of a function that may end without `return`. If a
    tensor decides it, some runs return `value` and others fall off the end (None): the result
    is a `MaybeNone`, which the compiled function returns as the one its run took (an op on it
    is refused; `is None` and its truth can be tested). A structure there is refused.
    """
    from ..runtime.graph import Tensor, current_graph
    if current_graph() is not None:  # its caller holds the value as any other (runtime/memory.py's return guards)
        from .. import nest
        from ..runtime import memory
        memory.returned([t for t in nest.flatten(value) if isinstance(t, Tensor)])
    if isinstance(returned, Tensor) and value is not None and not isinstance(value, Undefined):
        from ..errors import ConversionError, user_location
        from .logical import Choice, MaybeNone, _SCALARS
        if not isinstance(value, (Tensor, Choice, *_SCALARS)):
            raise ConversionError(
                f"{_function_name()} returns {type(value).__name__} {_short(value)} on some paths and ends "
                f"without `return` (None) on others, chosen by a tensor condition (at {user_location()}); "
                f"only a number, an array or a tensor can be None on some runs: add a `return` at the end "
                f"so every path returns a value of the same kind")
        return MaybeNone(returned, value, _function_name(), user_location())
    return None if isinstance(value, Undefined) else value


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _function_name():
    import sys
    return f"'{sys._getframe(2).f_code.co_name.removeprefix('ag__converted_')}'"


def check_defined(outputs):
    """Raise, as reading it would, if a function's result holds a variable that has no value."""
    from .. import nest
    for leaf in nest.flatten(outputs):
        if isinstance(leaf, Undefined):
            leaf._fail()


def reraise_trace_failure():
    """At the start of a `finally` that returns: re-raise the compiler's own refusal in flight
    (ConversionError, SymbolicValueError), which the `return` would otherwise swallow."""
    from ..errors import ConversionError, SymbolicValueError
    flying = sys.exc_info()[1]
    if isinstance(flying, (ConversionError, SymbolicValueError)):
        raise flying


def finally_returns(returned, in_flight, cancels=True):
    """Whether a `finally` block whose `return`s are flags returned (`returned`, its own flag), so
    that the converted code returns from it, cancelling any exception in flight as Python does.

    An exception in flight that a tensor flag would cancel on some runs only, or that a `finally`
    inside an `if` or a loop would cancel (`cancels=False`: the code cannot return from there), is
    an error: a traced exception happens on every run.
    """
    from ..runtime.graph import Tensor
    if in_flight and (isinstance(returned, Tensor) or (returned and not cancels)):
        from ..errors import ConversionError, user_location
        how = "on some runs only, chosen by a tensor condition" if isinstance(returned, Tensor) \
            else "inside an `if` or a loop"
        raise ConversionError(f"a `return` inside `finally` would cancel the exception in flight {how} (at "
                              f"{user_location()}); catch the exception with `except` instead")
    return not isinstance(returned, Tensor) and bool(returned) and cancels
