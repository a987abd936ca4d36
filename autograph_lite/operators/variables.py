"""Placeholders for Python variables that have no value yet, and the compiler's own names."""

RETURN_VALUE = "retval_"  # holds the value of a converted `return`
DO_RETURN = "do_return"   # set once a converted `return` has run


class Undefined:
    """The value of variable `name` before any assignment to it has run.

    Any use of it raises UnboundLocalError naming the variable, as Python would.
    """

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<undefined {self.name}>"

    def _fail(self, *args, **kwargs):
        raise UnboundLocalError(f"local variable '{self.name}' is used before a value was assigned to it")

    __getattr__ = _fail
    __bool__ = __len__ = __iter__ = __call__ = __getitem__ = __array__ = _fail
    for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lt", "le",
                "gt", "ge", "and", "or"):
        locals()[f"__{_op}__"] = locals()[f"__r{_op}__"] = _fail
    __neg__ = __abs__ = __index__ = __float__ = __int__ = _fail
    del _op


def return_value(value):
    """What a converted function returns: None if no `return` ran."""
    return None if isinstance(value, Undefined) else value
