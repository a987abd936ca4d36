"""Nested structures of values (tuples, lists, dicts, namedtuples): flatten and rebuild.

Shared by every stage that passes structured values through a graph boundary.
"""


def _is_namedtuple(value):
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def flatten(structure):
    """The leaves of `structure` in a fixed order (dicts in insertion order)."""
    leaves = []
    _flatten(structure, leaves)
    return leaves


def _flatten(s, leaves):
    t = type(s)
    if t is tuple or t is list or _is_namedtuple(s):
        for item in s:
            _flatten(item, leaves)
    elif t is dict:
        for item in s.values():
            _flatten(item, leaves)
    else:
        leaves.append(s)


def pack(template, leaves):
    """Rebuild `template`'s structure with the values of `leaves` (in flatten order)."""
    it = iter(leaves)
    return _pack(template, it)


def _pack(s, it):
    t = type(s)
    if t is tuple or t is list:
        return t(_pack(item, it) for item in s)
    if _is_namedtuple(s):
        return t(*(_pack(item, it) for item in s))
    if t is dict:
        return {k: _pack(v, it) for k, v in s.items()}
    return next(it)


def structure_of(s):
    """A hashable description of `s`'s nesting, ignoring the leaves' values."""
    t = type(s)
    if t is tuple or t is list or _is_namedtuple(s):
        return (t, tuple(structure_of(item) for item in s))
    if t is dict:
        return (dict, tuple((k, structure_of(v)) for k, v in s.items()))
    return None


def paths(structure, prefix):
    """A readable name per leaf, e.g. 'state[0]', "params['w']"."""
    out = []

    def walk(s, name):
        t = type(s)
        if t is tuple or t is list or _is_namedtuple(s):
            for i, item in enumerate(s):
                walk(item, f"{name}[{i}]")
        elif t is dict:
            for k, v in s.items():
                walk(v, f"{name}[{k!r}]")
        else:
            out.append(name)
    walk(structure, prefix)
    return out
