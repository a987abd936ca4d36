"""Items and attributes a tensor `if` sets in one branch only (issue 24): eagerly the key or the
attribute exists iff that branch ran; the compiled function returns the dict with the key or
without it, and leaves the caller's dict or object so, per run (`MaybeUnset`)."""
import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.errors import ConversionError
from helpers import assert_same, check, on_fresh_arguments

CONDITIONS = [(np.array(v),) for v in (-1, 0, 2, 5)]


def set_in_true_branch(a):
    x = {"a": a}
    if x["a"] > 0:
        x["b"] = a * 2
    return x


def set_in_false_branch(a):
    x = {"a": a}
    if a > 0:
        pass
    else:
        x["b"] = 1.5
    return x


def set_nested(a):
    x = {"a": {"a": a}, "c": 3}
    if x["a"]["a"] > 1:
        x["a"]["b"] = np.arange(3) * a
    return x, x["c"]


def set_by_two_ifs(a):
    x = {"a": a}
    if a > 1:
        x["b"] = a + 1
    if a < 0:
        x["b"] = a - 1
    return x


def set_by_nested_ifs(a):
    x = {}
    if a > 0:
        if a > 2:
            x["b"] = a
        x["c"] = 1
    return x


def set_then_overwritten(a):
    x = {"a": a}
    if a > 0:
        x["b"] = a
    x["b"] = 7
    return x


def set_then_both_branches(a):
    x = {"a": a}
    if a > 0:
        x["b"] = a
    if a > 2:
        x["b"] = a * 3
    else:
        x["b"] = -a
    return x


@pytest.mark.parametrize("fn", [set_in_true_branch, set_in_false_branch, set_nested, set_by_two_ifs,
                                set_by_nested_ifs, set_then_overwritten, set_then_both_branches])
def test_dict_made_in_the_function(fn):
    check(fn, *CONDITIONS, traces=1)


def set_python_value_on_argument(d, a):
    if a > 0:
        d["b"] = 3
    d["a"] = d["a"] + 1


def set_tensor_on_argument(d, a):
    if a > 1:
        d["b"]["x"] = a * 2.0
    return d


@pytest.mark.parametrize("a", [-1, 0, 2])
def test_argument_dict_gets_the_key_on_the_runs_that_set_it(a):
    on_fresh_arguments(set_python_value_on_argument, lambda: {"a": np.float64(1)}, lambda: np.array(a))
    on_fresh_arguments(set_tensor_on_argument, lambda: {"b": {}}, lambda: np.array(a))


class Holder:
    def __init__(self, **attributes):
        vars(self).update(attributes)


def set_attribute(o, a):
    if a > 0:
        o.b = a * 2.0
    return a


def _same_object(eager, compiled):
    if isinstance(eager, Holder):
        assert sorted(vars(eager)) == sorted(vars(compiled))
        for k, v in vars(eager).items():
            assert_same(v, getattr(compiled, k))
    else:
        assert_same(eager, compiled)


@pytest.mark.parametrize("a", [-1, 0, 2])
def test_argument_object_gets_the_attribute_on_the_runs_that_set_it(a):
    on_fresh_arguments(set_attribute, lambda: Holder(c=1), lambda: np.array(a), same=_same_object)


def test_one_object_over_calls_keeps_what_an_earlier_call_set():
    o, eager_o = Holder(), Holder()
    f = ag.function(set_attribute)
    for a in (2, -1, 3, 0):
        set_attribute(eager_o, np.array(a))
        f(o, np.array(a))
        _same_object(eager_o, o)
    assert f.trace_count == 1  # an object is keyed by identity: one trace, its replay sets b or leaves it


def new_key_in_loop_on_argument(d, n):
    for i in ag.range(n):
        d["a"] = i * 2
    return n


@pytest.mark.parametrize("n", [0, 3])
def test_loop_that_may_run_zero_times_on_an_argument_dict(n):
    on_fresh_arguments(new_key_in_loop_on_argument, lambda: {}, lambda: np.array(n))


def reads_it_after(a):
    x = {"a": a}
    if a > 0:
        x["b"] = a
    return x["b"] + 1


def uses_it_in_a_branch_after(a):
    x = {"a": a}
    if a > 0:
        x["b"] = a
    if a > 1:
        x["a"] = x["b"]
    return x


def reads_attribute_after(o, a):
    if a > 0:
        o.b = a
    return o.b * 2


@pytest.mark.parametrize("fn, args", [(reads_it_after, ()), (uses_it_in_a_branch_after, ()),
                                      (reads_attribute_after, (Holder(),))])
def test_using_it_after_is_refused_with_the_users_line(fn, args):
    label = "o.b" if args else r"x\['b'\]"
    with pytest.raises(ConversionError, match=rf"`{label}` is set in only one branch of the `if` on a tensor at "
                                              r".*test_set_on_some_runs.py:\d+, so it is unset on the runs that "
                                              r"take the other.*test_set_on_some_runs.py:\d+"):
        ag.function(fn)(*args, np.array(2))


def asks_for_keys(a):
    x = {"a": a}
    if a > 0:
        x["b"] = a
    return len(x)


def structure_in_one_branch(a):
    x = {"a": a}
    if a > 0:
        x["b"] = [a, a]
    return x


def test_what_stays_refused():
    # the function asks which keys the dict has: the key cannot be left out on some runs
    with pytest.raises(ConversionError, match=r"'x\['b'\]' is assigned in only the true branch"):
        ag.function(asks_for_keys)(np.array(1))
    with pytest.raises(ConversionError, match=r"'x\['b'\]' is set in only one branch .* to list, a structure"):
        ag.function(structure_in_one_branch)(np.array(1))


def written_on_a_python_path_not_taken(n, flag):
    d = {"a": n}
    for i in ag.range(n):
        if flag:
            d["c"] = i
        d["a"] = d["a"] + i
    return d


@pytest.mark.parametrize("n", [0, 3])
def test_a_loop_whose_trace_never_writes_the_item_leaves_it_unset(n):
    # fuzzer (dict_new_key): eagerly `d['c']` stays unset whatever the trip count
    check(written_on_a_python_path_not_taken, (np.array(n), False))


def set_in_one_branch_inside_a_loop(n):
    d = {"a": n}
    for i in ag.range(n):
        if i > 1:
            d["c"] = i
    return d


def test_a_loop_carrying_an_item_set_on_some_runs_is_refused():
    with pytest.raises(ConversionError, match=r"`d\['c'\]` is set in only one branch of the `if` on a tensor at "
                                              r".*, and a loop on a tensor \(at .*test_set_on_some_runs.py:\d+\) "
                                              r"carries it"):
        ag.function(set_in_one_branch_inside_a_loop)(np.array(3))


def attribute_on_a_python_path_not_taken(o, n, flag):
    for i in ag.range(n):
        if flag:
            o.last = i
    return n


@pytest.mark.parametrize("n", [0, 2])
def test_an_attribute_the_loops_trace_never_writes_stays_unset(n):
    # was refused ("a graph loop can only carry numbers and arrays"): eagerly it stays unset
    on_fresh_arguments(attribute_on_a_python_path_not_taken, Holder, lambda: np.array(n), lambda: False,
                       same=_same_object)
