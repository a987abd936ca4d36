"""How a compiled function is called: its name and its Python parameters.

A Function, each of its ConcreteFunctions, and a function loaded by `ag.load` with its
signatures share one CallSignature. It binds a call's arguments in parameter order (defaults
filled in) and words the TypeError for arguments that fit no traced signature, so a concrete
function needs nothing from the object that made it.
"""
from .errors import user_location


class CallSignature:
    __slots__ = ("name", "signature", "param_names")

    def __init__(self, name, signature):
        self.name, self.signature = name, signature  # an inspect.Signature
        self.param_names = [p.name for p in signature.parameters.values()]

    def bind(self, args, kwargs):
        """The arguments in parameter order, defaults filled in; Python's TypeError at the caller's line."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.name}(): {e} (called at {user_location()})") from None
        bound.apply_defaults()
        return tuple(bound.arguments.values())

    def mismatch_error(self, found, against):
        """The TypeError for `found`, a (path, spec, problem) from `trace_cache._spec_mismatch`."""
        path, spec, problem = found
        index = int(path[1:].split("]")[0])
        name = self.param_names[index] if index < len(self.param_names) else f"args[{index}]"
        rest = path[path.index("]") + 1:]
        return TypeError(f"{self.name}(): argument '{name}{rest}' does not match {against}: "
                         f"expected {spec!r}, {problem} (called at {user_location()})")
