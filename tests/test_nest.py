"""The structure map (nest.flatten_with_treedef / TreeDef): flatten, rebuild, compare, store."""
import collections
import json

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite import nest
from helpers import assert_same

Point = collections.namedtuple("Point", "x y")

STRUCTURES = [
    1.5,
    (),
    [],
    {},
    (1, 2.0, "a"),
    [np.ones(2), (3, [4, {"w": 5, "b": (6,)}])],
    {"z": 1, "a": 2},          # insertion order, not sorted
    {0.5: 1, -0.0: 2, None: 3, (1, "k"): 4, True: 5},
    Point(np.zeros(3), Point(1, [2, 3])),
    ([[[()]]],),
]


@pytest.mark.parametrize("value", STRUCTURES, ids=range(len(STRUCTURES)))
def test_round_trip(value):
    leaves, treedef = nest.flatten_with_treedef(value)
    assert treedef.num_leaves == len(leaves)
    rebuilt = treedef.unflatten(leaves)
    assert repr(rebuilt) == repr(value)
    assert type(rebuilt) is type(value)
    if isinstance(value, dict):
        assert list(rebuilt) == list(value)  # iteration order kept
    assert nest.flatten_with_treedef(rebuilt)[1] == treedef


@pytest.mark.parametrize("value", STRUCTURES, ids=range(len(STRUCTURES)))
def test_json_round_trip(value):
    leaves, treedef = nest.flatten_with_treedef(value)
    stored = json.loads(json.dumps(treedef.to_json(), allow_nan=False))
    loaded = nest.TreeDef.from_json(stored)
    assert loaded == treedef and hash(loaded) == hash(treedef)
    assert repr(loaded.unflatten(leaves)) == repr(value)


def test_leaves_are_everything_but_tuples_lists_dicts_namedtuples():
    class L(list):
        pass
    values = [L([1, 2]), collections.OrderedDict(a=1), np.ones(2), {1, 2}, None, "ab"]
    leaves, treedef = nest.flatten_with_treedef(values)
    assert len(leaves) == len(values) and all(a is b for a, b in zip(leaves, values))


def test_equality_and_hash():
    td = lambda v: nest.flatten_with_treedef(v)[1]  # noqa: E731
    assert td((1, [2, 3])) == td(("a", [np.ones(1), None])) and hash(td((1, [2, 3]))) == hash(td((0, [0, 0])))
    assert td((1, 2)) != td([1, 2])
    assert td((1, (2,))) != td((1, 2))
    assert td({"a": 1, "b": 2}) != td({"b": 2, "a": 1})       # order is part of the structure
    assert td({0.0: 1}) != td({-0.0: 1})                       # float keys by bits
    assert td({1: 0}) != td({True: 0})                         # keys by type too
    assert td({float("nan"): 1}) == td({float("nan"): 1})
    assert td(Point(1, 2)) != td((1, 2))
    Other = collections.namedtuple("Point", "x y")
    assert td(Point(1, 2)) != td(Other(1, 2))                  # namedtuples by class
    assert len({td((1, 2)), td((3, 4)), td([1, 2])}) == 2


def test_unflatten_checks_the_leaf_count():
    _, treedef = nest.flatten_with_treedef((1, [2, 3]))
    with pytest.raises(ValueError, match="has 3 leaves, got 2"):
        treedef.unflatten([1, 2])


def test_paths_names_and_flatten_up_to():
    value = {"w": (1, 2), "cell": Point(3, 4)}
    _, treedef = nest.flatten_with_treedef(value)
    assert treedef.paths("p") == ["p['w'][0]", "p['w'][1]", "p['cell'][0]", "p['cell'][1]"]
    assert treedef.names("p") == ["p_w_0", "p_w_1", "p_cell_x", "p_cell_y"]
    _, prefix = nest.flatten_with_treedef({"w": 0, "cell": Point(0, 0)})
    assert prefix.flatten_up_to(value) == [(1, 2), 3, 4]
    with pytest.raises(nest.StructureMismatch) as e:
        prefix.flatten_up_to({"w": 0, "cell": (3, 4)})
    assert e.value.path == ("cell",) and "expected a Point of 2" in e.value.problem
    with pytest.raises(nest.StructureMismatch, match="missing key 'cell'"):
        prefix.flatten_up_to({"w": 0, "x": 1})
    with pytest.raises(nest.StructureMismatch, match="traced in the order"):
        prefix.flatten_up_to({"cell": Point(0, 0), "w": 0})


def test_namedtuple_of_a_missing_class_loads_as_a_plain_namedtuple():
    _, treedef = nest.flatten_with_treedef(Point(1, 2))
    stored = treedef.to_json()
    assert nest.TreeDef.from_json(stored).kind is Point        # found among imported modules
    stored["module"] = "no_such_module_anywhere"
    loaded = nest.TreeDef.from_json(stored)
    rebuilt = loaded.unflatten([1, 2])
    assert loaded.kind is not Point and loaded.kind._fields == ("x", "y") and type(rebuilt).__name__ == "Point"
    assert rebuilt.x == 1 and rebuilt == (1, 2)
    assert nest.TreeDef.from_json(stored) == loaded            # the same stand-in class each load


def test_unstorable_key_is_a_value_error():
    _, treedef = nest.flatten_with_treedef({object(): 1})
    with pytest.raises(ValueError, match="cannot be stored"):
        treedef.to_json()


@pytest.mark.parametrize("obj", [
    None, [], "leaf", {"leaf": 1, "x": 2}, {"tuple": {}}, {"tuple": [1]}, {"list": [{"leaf": 2}]},
    {"tuple": [], "list": []}, {"dict": [{"leaf": 1}], "keys": []},
    {"dict": [{"leaf": 1}], "keys": [["set", [1]]]}, {"dict": [{"leaf": 1}], "keys": [["float", "zz"]]},
    {"dict": [{"leaf": 1}, {"leaf": 1}], "keys": [["int", 1], ["int", 1]]},
    {"dict": [{"leaf": 1}], "keys": [["int", "1"]]},
    {"namedtuple": [{"leaf": 1}], "name": "P", "module": "m", "qualname": "P", "fields": ["a", "b"]},
    {"namedtuple": [{"leaf": 1}], "name": "1P", "module": "m", "qualname": "P", "fields": ["a"]},
    {"namedtuple": [{"leaf": 1}], "name": "P", "module": "m", "qualname": "P", "fields": ["_a"]},
    {"namedtuple": [{"leaf": 1}], "name": "P", "module": "m", "qualname": "P"},
], ids=str)
def test_malformed_json_is_a_value_error(obj):
    with pytest.raises(ValueError):
        nest.TreeDef.from_json(obj)


def test_deep_json_is_a_value_error_not_a_crash():
    obj = {"leaf": 1}
    for _ in range(5000):
        obj = {"tuple": [obj]}
    with pytest.raises(ValueError, match="deeper"):
        nest.TreeDef.from_json(obj)


# --- the structure map under ag.function: cache key, specs, placeholders, outputs ------------

State = collections.namedtuple("State", "h c")


def test_reduce_retracing_relaxes_through_a_namedtuple():
    def step(s):
        return State(s.h * 2.0, s.c + s.h)
    f = ag.function(step, reduce_retracing=True)
    for n in (2, 3, 4, 5):
        s = State(np.arange(n, dtype=np.float64), np.ones(n))
        out = f(s)
        assert type(out) is State
        assert_same(tuple(step(s)), tuple(out))
    assert f.trace_count == 2   # the second shape retraced with None dims, then that trace fits
    (spec,) = f.get_concrete_function(State(np.ones(6), np.ones(6))).input_specs
    assert type(spec) is State and spec.h.shape == (None,)


def test_dict_order_is_part_of_the_signature_and_of_the_output():
    def f(d):
        return {k: v * 2 for k, v in d.items()}, [k for k in d]
    compiled = ag.function(f)
    x, y = np.ones(2), np.zeros(2)
    for d in ({"a": x, "b": y}, {"b": y, "a": x}):
        eager, got = f(d), compiled(d)
        assert list(got[0]) == list(eager[0]) and got[1] == eager[1]
        assert_same(eager, got)
    assert compiled.trace_count == 2


def test_equal_dict_keys_of_different_types_are_different_signatures():
    def f(d):
        return [type(k).__name__ for k in d], d[1] + 1
    compiled = ag.function(f)
    for d in ({1: np.ones(2)}, {True: np.ones(2)}, {1.0: np.ones(2)}):
        assert_same(f(d), compiled(d))
    assert compiled.trace_count == 3


def test_input_signature_checks_a_dict_in_traced_order():
    f = ag.function(lambda d: d["w"] * d["b"],
                    input_signature=[{"w": ag.TensorSpec([None]), "b": ag.TensorSpec([])}])
    w, b = np.ones(3, np.float32), np.float32(2)
    assert_same(w * b, f({"w": w, "b": b}))
    with pytest.raises(TypeError, match=r"argument 'd' does not match its input_signature: .*traced in the order"
                                        r".*\(called at .*test_nest.py:\d+\)"):
        f({"b": b, "w": w})
    with pytest.raises(TypeError, match=r"argument 'd\['w'\]' does not match its input_signature: .*dtype "
                                        r"float64 is not float32"):
        f({"w": np.ones(3), "b": b})


def test_placeholders_are_named_after_the_leaf_paths():
    f = ag.function(lambda p, s: p["w"] + s.h + s.c)
    graph = f.get_concrete_function({"w": np.ones(2)}, State(np.ones(2), np.ones(2))).graph
    assert [t.node.name for t in graph.inputs] == ["p_w", "s_h", "s_c"]


def test_outputs_rebuild_the_traced_structure_with_python_leaves():
    def f(x):
        return {"y": (x + 1, "tag", None), "n": [State(x, 3)]}
    compiled = ag.function(f)
    x = np.arange(3.0)
    for _ in range(2):
        eager, got = f(x), compiled(x)
        assert repr(got) == repr(eager)
        assert type(got["n"][0]) is State
