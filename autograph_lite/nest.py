"""Nested structures of values (tuples, lists, dicts, namedtuples): leaves and a TreeDef.

The one structure map of the package (JAX's pytrees are the model):

    leaves, treedef = nest.flatten_with_treedef(({"w": w, "b": b}, 3))
    treedef.unflatten(leaves)      # the same structure again
    treedef.num_leaves             # 3

Tuples, lists, dicts and namedtuples are nodes; anything else (subclasses of list, tuple
and dict included) is a leaf. Dicts flatten in insertion order, and the order is part of
the structure: it is the order the traced function iterates them in. TreeDefs compare
with `==` and hash, so they key caches; `to_json`/`TreeDef.from_json` store them.
"""
import collections
import sys

_MAX_DEPTH = 200  # deeper stored structures are refused by from_json


class Unset:
    """The value an item or attribute has on the runs where a tensor `if` or loop leaves it unset
    (`operators.MaybeUnset`): its dict leaves the key out, its object the attribute."""
    __slots__ = ()

    def __repr__(self):
        return "<unset>"


UNSET = Unset()


class SetOnSomeRuns:
    """A leaf that is `if_true` where the bool tensor `pick` is true and UNSET elsewhere
    (`operators.MaybeUnset`); `effects.py` replays such a value into the caller's state so."""
    __slots__ = ()


def is_namedtuple(value):
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def _identity(key):
    """A dict key as its TreeDef compares it: by type and value, floats by bits (-0.0 is not 0.0, NaN is NaN)."""
    t = type(key)
    if t is float:
        return (float, key.hex())
    if t is complex:
        return (complex, key.real.hex(), key.imag.hex())
    return (t, key)


class TreeDef:
    """The structure of a nested value without its leaves.

    `kind` is None for a leaf, else tuple, list, dict or the namedtuple's class; `keys`
    a dict's keys in order; `children` one TreeDef per item.
    """

    # `_sig`: the whole structure as nested plain tuples, so hashing and comparing run at C speed
    __slots__ = ("kind", "keys", "children", "num_leaves", "_sig")

    def __init__(self, kind, children=(), keys=None):
        children = tuple(children)
        _init(self, kind, children, keys, 1 if kind is None else sum(c.num_leaves for c in children),
              tuple(c._sig for c in children))

    def __eq__(self, other):
        return self is other or (isinstance(other, TreeDef) and self._sig == other._sig)

    def __hash__(self):
        return hash(self._sig)

    def __repr__(self):
        if self.kind is None:
            return "*"
        items = [repr(c) for c in self.children]
        if self.kind is dict:
            return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(self.keys, items)) + "}"
        if self.kind is list:
            return "[" + ", ".join(items) + "]"
        if self.kind is tuple:
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return f"{self.kind.__name__}(" + ", ".join(f"{f}={c}" for f, c in zip(self.kind._fields, items)) + ")"

    @property
    def is_leaf(self):
        return self.kind is None

    def unflatten(self, leaves):
        """The structure rebuilt with `leaves` (in flatten order); ValueError if their count differs."""
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"{self!r} has {self.num_leaves} leaves, got {len(leaves)}")
        return self._build(iter(leaves))

    def _build(self, it):
        kind = self.kind
        if kind is None:
            return next(it)
        items = [next(it) if c is LEAF else c._build(it) for c in self.children]
        if kind is tuple or kind is list:
            return kind(items)
        if kind is dict:
            return dict(zip(self.keys, items))
        return kind(*items)

    def _steps(self):
        """Per node: (child, step) pairs, a step being (index, key): key is the dict key or namedtuple field."""
        kind = self.kind
        if kind is dict:
            return [(c, (i, k)) for i, (k, c) in enumerate(zip(self.keys, self.children))]
        fields = getattr(kind, "_fields", None) if kind is not tuple else None
        return [(c, (i, fields[i] if fields else i)) for i, c in enumerate(self.children)]

    def key_paths(self):
        """Per leaf, the keys that index it from the root: ints for sequences, keys for dicts."""
        out = []

        def walk(node, path):
            if node.kind is None:
                out.append(path)
                return
            for child, (i, key) in node._steps():
                walk(child, path + (key if node.kind is dict else i,))
        walk(self, ())
        return out

    def paths(self, prefix):
        """A readable name per leaf, e.g. 'state[0]', "params['w']"."""
        return [prefix + "".join(f"[{k!r}]" for k in path) for path in self.key_paths()]

    def names(self, prefix):
        """A name per leaf from the path, for identifiers: 'state_0', 'params_w', 'cell_h' (a field)."""
        out = []

        def walk(node, name):
            if node.kind is None:
                out.append(name)
                return
            for child, (_, key) in node._steps():
                walk(child, f"{name}_{key}")
        walk(self, prefix)
        return out

    def flatten_up_to(self, value):
        """`value` cut at this TreeDef's leaves: one subtree of `value` per leaf.

        Raises StructureMismatch (a ValueError) where `value`'s structure differs above them.
        """
        out = []
        self._flatten_up_to(value, out, ())
        return out

    def _flatten_up_to(self, value, out, path):
        kind = self.kind
        if kind is None:
            out.append(value)
            return
        if type(value) is not kind:
            raise StructureMismatch(path, f"got {type(value).__name__} {value!r}, expected a {kind.__name__} "
                                          f"of {len(self.children)}")
        if kind is dict:
            if list(value) != list(self.keys):
                missing = [k for k in self.keys if k not in value]
                extra = [k for k in value if k not in self.keys]
                raise StructureMismatch(path, f"missing key {missing[0]!r}" if missing else
                                        f"unexpected key {extra[0]!r}" if extra else
                                        f"keys in the order {list(value)}, traced in the order {list(self.keys)}")
            items = value.values()
        else:
            if len(value) != len(self.children):
                raise StructureMismatch(path, f"got {type(value).__name__} {value!r}, expected a {kind.__name__} "
                                              f"of {len(self.children)}")
            items = value
        for (child, (i, key)), item in zip(self._steps(), items):
            child._flatten_up_to(item, out, path + (key if kind is dict else i,))

    def to_json(self):
        """A JSON-able description: {"leaf": 1}, {"tuple": [...]}, {"list": [...]},
        {"dict": [...], "keys": [...]}, {"namedtuple": [...], "name": ..., "module": ..., "fields": [...]}.

        Dict keys are stored as [type, value] pairs (str, int, bool, None, float by its hex
        text, tuples of those); any other key is a ValueError."""
        kind = self.kind
        if kind is None:
            return {"leaf": 1}
        children = [c.to_json() for c in self.children]
        if kind is tuple or kind is list:
            return {kind.__name__: children}
        if kind is dict:
            return {"dict": children, "keys": [_key_to_json(k) for k in self.keys]}
        return {"namedtuple": children, "name": kind.__name__, "module": kind.__module__,
                "qualname": kind.__qualname__, "fields": list(kind._fields)}

    @classmethod
    def from_json(cls, obj):
        """The TreeDef `to_json` described; ValueError on anything malformed.

        A namedtuple class is found by module and qualified name among the modules already
        imported (nothing is imported or run); if it is not there, or its fields differ, a
        namedtuple made with collections.namedtuple with the stored name and fields stands in."""
        return _from_json(obj, 0)


class StructureMismatch(ValueError):
    """A value whose structure differs from a TreeDef's; `path` is the keys to the differing node."""

    def __init__(self, path, problem):
        super().__init__(f"at {''.join(f'[{k!r}]' for k in path) or 'the root'}: {problem}")
        self.path, self.problem = path, problem


def flatten_with_treedef(value):
    """(leaves of `value` in a fixed order, its TreeDef)."""
    leaves = []
    return leaves, _flatten(value, leaves)


def _init(treedef, kind, children, keys, num_leaves, child_sigs):
    treedef.kind, treedef.children, treedef.keys, treedef.num_leaves = kind, children, keys, num_leaves
    if kind is None:
        treedef._sig = None
    elif keys is None:
        treedef._sig = (kind, child_sigs)
    else:
        types = tuple(map(type, keys))  # keys by type and value; floats by bits (see _identity)
        meta = tuple(map(_identity, keys)) if float in types or complex in types else keys
        treedef._sig = (kind, child_sigs, types, meta)
    return treedef


def _flatten(value, leaves):
    # written for speed (TreeDefs built without __init__, leaves without a call each): every
    # call of a compiled function with Python arguments flattens them
    t = type(value)
    if t is dict:
        items = value.values()
    elif t is tuple or t is list or (isinstance(value, tuple) and hasattr(t, "_fields")):
        items = value
    else:
        leaves.append(value)
        return LEAF
    children, sigs, start = [], [], len(leaves)
    for item in items:
        ti = type(item)
        if ti is tuple or ti is list or ti is dict or (isinstance(item, tuple) and hasattr(ti, "_fields")):
            child = _flatten(item, leaves)
            children.append(child)
            sigs.append(child._sig)
        else:
            leaves.append(item)
            children.append(LEAF)
            sigs.append(None)
    count = len(leaves) - start
    if t is dict:
        return _init(_new(TreeDef), t, tuple(children), tuple(value), count, tuple(sigs))
    if (t is tuple or t is list) and not any(sigs):
        # flat (most argument lists): one shared TreeDef
        flat = _FLAT.get((t, count))
        if flat is None:
            flat = _FLAT[t, count] = _init(_new(TreeDef), t, tuple(children), None, count, tuple(sigs))
        return flat
    return _init(_new(TreeDef), t, tuple(children), None, count, tuple(sigs))


_FLAT = {}  # (tuple or list, number of leaves) -> the TreeDef of a flat tuple or list of leaves


_new = object.__new__
LEAF = _init(_new(TreeDef), None, (), None, 1, None)


def flatten(structure):
    """The leaves of `structure` in a fixed order (dicts in insertion order)."""
    return flatten_with_treedef(structure)[0]


def pack(template, leaves):
    """Rebuild `template`'s structure with the values of `leaves` (in flatten order)."""
    return structure_of(template).unflatten(leaves)


def structure_of(value):
    """The TreeDef of `value`: its nesting, ignoring the leaves' values."""
    return flatten_with_treedef(value)[1]


def paths(structure, prefix):
    """A readable name per leaf, e.g. 'state[0]', "params['w']"."""
    return structure_of(structure).paths(prefix)


# --- the stored form ----------------------------------------------------------------------

_KEY_TYPES = {"str": str, "int": int, "bool": bool}


def _key_to_json(key):
    t = type(key)
    if t is float:
        return ["float", key.hex()]
    if key is None:
        return ["none", None]
    if t is tuple:
        return ["tuple", [_key_to_json(k) for k in key]]
    for name, kt in _KEY_TYPES.items():
        if t is kt:
            return [name, key]
    raise ValueError(f"a dict key of type {t.__name__} ({key!r}) cannot be stored; "
                     f"keys may be str, int, bool, float, None or tuples of those")


def _key_from_json(obj, depth):
    if type(obj) is not list or len(obj) != 2 or type(obj[0]) is not str:
        raise ValueError(f"a stored dict key must be a [type, value] pair, not {obj!r:.80}")
    name, value = obj
    if name == "float" and type(value) is str:
        try:
            return float.fromhex(value)
        except (ValueError, OverflowError):
            pass
    elif name == "none" and value is None:
        return None
    elif name == "tuple" and type(value) is list and depth < _MAX_DEPTH:
        return tuple(_key_from_json(k, depth + 1) for k in value)
    elif name in _KEY_TYPES and type(value) is _KEY_TYPES[name]:
        return value
    raise ValueError(f"malformed stored dict key {obj!r:.80}")


_NAMEDTUPLES = {}  # (module, qualname, fields) -> the stand-in class, so loads compare equal


def _namedtuple_class(name, module, qualname, fields):
    found = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if isinstance(found, type) and issubclass(found, tuple) and getattr(found, "_fields", None) == fields:
        return found
    key = (module, qualname, fields)
    if key not in _NAMEDTUPLES:
        _NAMEDTUPLES[key] = collections.namedtuple(name, fields)  # ValueError on a bad name or field
    return _NAMEDTUPLES[key]


def _from_json(obj, depth):
    if depth > _MAX_DEPTH:
        raise ValueError(f"stored structure nested deeper than {_MAX_DEPTH} levels")
    if type(obj) is not dict:
        raise ValueError(f"a stored structure node must be an object, not {obj!r:.80}")
    if obj == {"leaf": 1}:
        return LEAF
    kinds = [k for k in ("tuple", "list", "dict", "namedtuple") if k in obj]
    allowed = {"tuple": {"tuple"}, "list": {"list"}, "dict": {"dict", "keys"},
               "namedtuple": {"namedtuple", "name", "module", "qualname", "fields"}}
    if len(kinds) != 1 or set(obj) != allowed[kinds[0]] or type(obj[kinds[0]]) is not list:
        raise ValueError(f"malformed stored structure node {obj!r:.80}")
    kind = kinds[0]
    children = [_from_json(c, depth + 1) for c in obj[kind]]
    if kind == "tuple":
        return TreeDef(tuple, children)
    if kind == "list":
        return TreeDef(list, children)
    if kind == "dict":
        if type(obj["keys"]) is not list or len(obj["keys"]) != len(children):
            raise ValueError("a stored dict needs one key per child")
        keys = tuple(_key_from_json(k, depth + 1) for k in obj["keys"])
        if len(set(map(_identity, keys))) != len(keys):
            raise ValueError(f"a stored dict repeats a key: {list(keys)!r:.80}")
        return TreeDef(dict, children, keys)
    name, module, qualname, fields = obj["name"], obj["module"], obj["qualname"], obj["fields"]
    if not (type(name) is str and type(module) is str and type(qualname) is str and type(fields) is list
            and all(type(f) is str for f in fields) and len(fields) == len(children)):
        raise ValueError(f"malformed stored namedtuple {obj!r:.80}")
    return TreeDef(_namedtuple_class(name, module, qualname, tuple(fields)), children)
