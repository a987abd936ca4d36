"""Boxes: a compiled result has eager's Python type (a numpy scalar, a 0-d array or a Python
number), not only its dtype. Each case runs three calls, compared with eager by type, dtype and bits."""
import numpy as np
import pytest

import autograph_lite as ag
from tests.helpers import assert_identical, cpu_only


def _three_calls(fn, argument_tuples):
    compiled = ag.function(fn)
    for args in argument_tuples:
        with ag.device("cpu"):  # boxes are the CPU's: a device has no numpy scalars
            assert_identical(fn(*args), compiled(*args))
    return compiled


ARRAYS = [(np.arange(4.0),), (np.array([-1.5, 2.0, 0.0, 7.25]),), (np.zeros(4),)]


def scalar_times_int(x):
    return np.float64(3.0) * 2


def float32_of_shape(x):
    return np.float32(x.shape[0]) / 2


def mean_of_constant(x):
    return np.mean(np.arange(4.))


def sqrt_of_python_number(x):
    hd = float(x.shape[0])
    return x / np.sqrt(hd), np.sqrt(hd)


def astype_of_reduction(x):
    return np.sum(x).astype(np.float32), x.max().astype(np.int32) + 1


def astype_of_array(x):
    return x.astype(np.float32), ag.where(x[0] > 0, x[1], x[2]).astype(np.float32)


def folded_in_the_graph(x):
    n = ag.cast(ag.shape(x)[0], np.float32)  # the shape is known: the passes fold all of it
    return n / 2, ag.shape(x)[0] * 2, (n > 1) and not (n > 10)


def mixed(x):
    s = np.sum(x)
    return s * np.float32(2), np.float32(2) * 3 + s, x[0] + 1, float(x.shape[0]) * 2


@pytest.mark.parametrize("fn", [scalar_times_int, float32_of_shape, mean_of_constant, sqrt_of_python_number,
                                astype_of_reduction, astype_of_array, folded_in_the_graph, mixed])
def test_numpy_scalar_boxes(fn):
    _three_calls(fn, ARRAYS)


def test_numpy_scalar_boxes_under_native_code(monkeypatch):
    monkeypatch.setenv("AG_NATIVE", "always")
    for fn in (astype_of_reduction, mixed):
        _three_calls(fn, ARRAYS * 2)


def test_numpy_scalar_constants_are_saved_and_loaded(tmp_path):
    f = _three_calls(sqrt_of_python_number, ARRAYS)
    _three_calls(astype_of_reduction, ARRAYS)
    path = str(tmp_path / "f.agz")
    ag.save(f, path)
    loaded = ag.load(path)
    for (x,) in ARRAYS:
        assert_identical(sqrt_of_python_number(x), loaded(x))


# --- boxes decided when the graph runs: `and` / `or` give back the operand eager gives --------

def bool_kinds(a, b, c):
    return (a > 0 or b > 0) and not (c > 0)


def and_python_int(x):
    return x and 1


def or_chain(x, y):
    return (x or 2.5, x and y, (x and True) or y, not (x and 1))


def choice_tested(x):
    y = x and 1
    z = 0.0
    if y:
        z = x * 2
    return z, y


SIGNS = [np.float64(-1.0), np.float64(1.0)]


def test_data_dependent_bool_box():
    _three_calls(bool_kinds, [(a, b, c) for a in SIGNS for b in SIGNS for c in SIGNS])
    _three_calls(bool_kinds, [(np.array(a), b, np.float32(c)) for a in SIGNS for b in SIGNS for c in SIGNS])


@pytest.mark.parametrize("native", ["off", "always"])
def test_data_dependent_number_box(native, monkeypatch):
    monkeypatch.setenv("AG_NATIVE", native)
    _three_calls(and_python_int, [(np.float64(0.0),), (np.float64(2.0),), (np.int32(0),), (np.int32(5),),
                                  (np.bool_(False),), (np.bool_(True),), (np.array(0.0),), (np.array(3.0),)])
    _three_calls(or_chain, [(np.float32(0.0), np.int8(3)), (np.float32(2.0), np.int8(0)),
                            (np.float32(0.0), np.int8(0)), (np.float32(1.0), np.int8(3))])
    _three_calls(choice_tested, [(np.float64(0.0),), (np.float64(2.0),), (np.float64(-1.5),)])


def and_then_arithmetic(x):
    return (x and 3) + np.uint8(1)


def test_arithmetic_on_a_data_dependent_box_is_refused_at_the_line():
    with pytest.raises(ag.ConversionError, match=r"a float64 or a Python int by the value of x") as info:
        ag.function(and_then_arithmetic)(np.float64(2.0))
    assert f"{__file__}:{and_then_arithmetic.__code__.co_firstlineno + 1}" in str(info.value)


def test_data_dependent_boxes_are_saved_and_loaded(tmp_path):
    for fn, calls in ((bool_kinds, [(a, b, c) for a in SIGNS for b in SIGNS for c in SIGNS]),
                      (or_chain, [(np.float32(0.0), np.int8(3)), (np.float32(2.0), np.int8(0))])):
        path = str(tmp_path / f"{fn.__name__}.agz")
        ag.save(_three_calls(fn, calls), path)
        loaded = ag.load(path)
        for args in calls:
            assert_identical(fn(*args), loaded(*args))


# --- isinstance, type, hasattr, callable answer for the value eager code holds ----------------

def add_batch_dim(x):
    if isinstance(x, np.ndarray) and x.ndim == 1:
        x = x[None]
    return x


def type_questions(x):
    s = x.sum()
    return (isinstance(s, np.floating), type(s) is np.float64, isinstance(s, np.ndarray), type(x) is np.ndarray,
            hasattr(s, "shape"), hasattr(x, "weak"), callable(x), callable(np.sum), isinstance(x[0] + 1, float),
            isinstance(ag.where(s > 0, s, s), np.ndarray), isinstance(x[0], np.generic), isinstance(x[0], float),
            isinstance(s.astype(np.float32), np.float32), isinstance(x.shape[0], int), isinstance(x, (list, tuple)))


def type_of_value_called(x):
    s = x.sum()
    return type(s)(x[1]), np.float32(s), np.float64(x), type(s)(2) * x[0], np.bool_(x[0])


def scalar_argument_questions(s):
    kind = 0
    if isinstance(s, np.ndarray):
        kind = 1
    elif isinstance(s, np.floating):
        kind = 2
    return kind, type(s) is np.float64, s * 2


def test_isinstance_ndarray_inside_compiled():
    compiled = _three_calls(add_batch_dim, [(np.arange(6.0),), (np.ones(6),), (np.zeros(6),)])
    assert compiled(np.arange(6.0)).shape == (1, 6)
    _three_calls(add_batch_dim, [(np.ones((2, 3)),), (np.zeros((2, 3)),), (np.arange(6.0).reshape(2, 3),)])
    _three_calls(type_questions, ARRAYS)
    _three_calls(type_of_value_called, ARRAYS)
    _three_calls(scalar_argument_questions, [(np.float64(1.5),), (np.float64(-2.0),), (np.float64(0.0),)])
    _three_calls(scalar_argument_questions, [(np.array(1.5),), (np.array(-2.0),), (np.array(0.0),)])


# --- input_signature with defaulted parameters ----------------------------------------------

def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_input_signature_with_default(tmp_path):
    f = ag.function(softmax, input_signature=[ag.TensorSpec([None, 3], np.float64)])
    _three_calls_of(f, softmax, [(np.arange(6.0).reshape(2, 3),), (np.ones((4, 3)),), (np.zeros((1, 3)),)])
    assert_identical(softmax(np.ones((2, 3))), f(np.ones((2, 3)), axis=-1))  # the default passed: the same trace
    assert f.trace_count == 1
    with pytest.raises(TypeError, match="argument 'axis' is not covered by its input_signature .* default -1; got 0"):
        f(np.ones((2, 3)), axis=0)
    with pytest.raises(TypeError, match="argument 'axis' is not covered"):
        f(np.ones((2, 3)), 0)
    assert f.get_concrete_function().graph is f.get_concrete_function(ag.TensorSpec([None, 3], np.float64)).graph
    path = str(tmp_path / "softmax.agz")
    ag.save(f, path)
    loaded = ag.load(path)
    assert_identical(softmax(np.ones((5, 3))), loaded(np.ones((5, 3))))


def test_input_signature_needs_defaults_for_the_parameters_it_leaves_out():
    f = ag.function(lambda x, y: x + y, input_signature=[ag.TensorSpec([3], np.float64)])
    with pytest.raises(TypeError, match="parameter 'y' has no default"):
        f(np.ones(3), 1.0)


def _three_calls_of(compiled, fn, argument_tuples):
    for args in argument_tuples:
        with ag.device("cpu"):
            assert_identical(fn(*args), compiled(*args))


def prints_choices(x, y):
    print("v", x and 1, (x > 0 or y > 0) and not (y > 0), x or y)
    return x


def test_print_of_a_data_dependent_box_prints_the_operand_picked(capsys):
    compiled = ag.function(prints_choices)
    for args in [(np.float64(0.0), np.int8(2)), (np.float64(2.0), np.int8(0)), (np.float64(0.0), np.int8(0))]:
        prints_choices(*args)
        eager = capsys.readouterr().out
        compiled(*args)
        assert capsys.readouterr().out == eager


def sub_zero_then_astype(n, s):
    return (n - s).astype(np.uint8)


def test_a_simplified_op_keeps_the_box_the_op_gives():
    """`n - 0` of a 0-d array is a numpy scalar: the algebraic pass must not replace it by the array."""
    _three_calls(sub_zero_then_astype, [(np.array(3, np.int32), 0), (np.array(5, np.int32), 0),
                                        (np.array(7, np.int32), 0)])


def range_counter_cast(y, n):
    v = y[-1]
    for i in ag.range(n):
        v = i
    return ag.cast(v, np.float64), v, np.float64(n) <= v, n[()]


def test_cast_of_a_loop_counter_and_empty_index_keep_eager_boxes():
    """ag.range's counter is a numpy int64 eagerly (a Cast of the Python counter); `x[()]` lowers."""
    _three_calls(range_counter_cast, [(np.array([2, -1, 5]), np.array(2, np.int32)),
                                      (np.array([2, -1, 5]), np.array(0, np.int32)),
                                      (np.array([4, 1, 3]), np.array(3, np.int32))])


def list_of_python_bools_through_a_loop(n, s):
    flags = [False]
    i = 0
    while i < 2 and n > s:
        i += 1
        if flags[0]:
            s = s + 1
        flags.append(not (n > 2))
    return flags


def test_a_list_of_python_numbers_carried_by_a_loop_returns_python_numbers(tmp_path):
    f = _three_calls(list_of_python_bools_through_a_loop, [(np.array(2, np.int32), 0), (np.array(3, np.int32), 0),
                                                          (np.array(0, np.int32), 1)])
    path = str(tmp_path / "lists.agz")
    ag.save(f, path)
    for args in [(np.array(2, np.int32), 0), (np.array(3, np.int32), 0)]:
        assert_identical(list_of_python_bools_through_a_loop(*args), ag.load(path)(*args))


def type_by_path(x, n):
    v = np.int32(0)
    if x[0] > 0:
        v = n
    return isinstance(v, np.generic)


def test_a_type_question_whose_answer_depends_on_the_path_is_refused_at_the_line():
    with pytest.raises(ag.ConversionError, match="by the path a tensor `if`") as info:
        ag.function(type_by_path)(np.ones(3), np.array(2, np.int32))
    assert f"{__file__}:{type_by_path.__code__.co_firstlineno + 4}" in str(info.value)


def test_type_query_on_a_loop_variable_whose_box_changes_is_refused():
    # fuzzer seed 24000419: the first iteration sees a numpy scalar, later ones a 0-d array
    def f(x, lst):
        v = ag.minimum(False, len(lst))
        for _ in x:
            v = ag.cast(type(v) is np.ndarray, np.int64)
        return v

    with pytest.raises(ag.ConversionError, match="a loop iteration"):
        ag.function(f)(np.arange(3), [0, 0])


@cpu_only("numpy's boxes: a device has no numpy scalars")
def test_zero_d_array_items_of_a_loop_built_list_stay_arrays():
    # fuzzer seed 124003631: ag.cast of a Python number is a 0-d array eagerly; rows came back as scalars
    def f(x, n):
        items = [ag.cast(0, np.float64)]
        for i in ag.range(n):
            items.append(ag.cast(1, np.float64))
        return items

    eager = f(np.arange(3.0), np.int32(2))
    compiled = ag.function(f)(np.arange(3.0), np.int32(2))
    assert [type(v) for v in compiled] == [type(v) for v in eager] and all(np.ndim(v) == 0 for v in compiled)
    np.testing.assert_array_equal(np.array(eager), np.array(compiled))


def test_a_method_of_a_choice_is_refused_at_the_line():
    # fuzzer seed 224001063: `(n or 2).astype(...)` raised AttributeError from inside the library
    def f(n):
        return (n or 2).astype(np.float32)

    with pytest.raises(ag.ConversionError, match="x and y"):
        ag.function(f)(np.int32(0))


@cpu_only("numpy's boxes: a device has no numpy scalars")
def test_a_zero_d_array_updated_in_place_stays_an_array():
    # fuzzer seeds 424010654, 624004069: `v = ag.cast(n, ...)` is a 0-d array eagerly, and `v *= w`
    # keeps it one; the compiled plan returned the Mul's numpy scalar
    def f(n, w):
        v = ag.cast(n, np.float64)
        v *= w
        u = np.float64(2.0) * n  # a numpy scalar stays one after its update
        u *= w
        return v, u

    for n in (np.array(3, np.int32), np.int32(3)):
        eager, compiled = f(n, 2), ag.function(f)(n, 2)
        assert [type(v) for v in compiled] == [type(v) for v in eager]
        np.testing.assert_array_equal(np.array(eager), np.array(compiled))


def _python_int_or_int32_doubled(x, n):
    if x.sum() > 0:
        v = 3
    else:
        v = n
    return v * 2, v   # eagerly Python ints on one path, int32 numpy scalars on the other


@cpu_only("numpy scalars and Python numbers are the CPU's boxes")
def test_a_merge_of_a_python_number_and_a_numpy_value_saved_and_loaded(tmp_path):
    f = ag.function(_python_int_or_int32_doubled)
    args = [(np.ones(2), np.int32(4)), (-np.ones(2), np.int32(4))]
    for a in args:
        assert_identical(_python_int_or_int32_doubled(*a), f(*a))
    path = str(tmp_path / "merge.agz")
    ag.save(f, path)
    loaded = ag.load(path)
    for a in args:
        assert_identical(_python_int_or_int32_doubled(*a), loaded(*a))


def accumulated_in_a_while(x, n):
    s = 0
    i = 0
    while i < n:
        s += x      # a Python int first: `+=` rebinds it to numpy's scalar of x's dtype
        i += 1
    return s


def summed_in_a_while(x, n):
    s = 0.0
    i = 0
    while i < n:
        s = s + x
        i += 1
    return s, i


def accumulated_in_a_for(x, y):
    s = 0
    for v in y:
        s += x * v
    return s


def found_in_a_for(x, y):
    found = False
    for v in y:
        found = v > x
    return found


TRIPS = [np.array(3), np.array(0), np.array(1)]


@pytest.mark.parametrize("native", ["off", "always"])
def test_a_loop_variable_starting_as_a_python_number_is_boxed_by_the_trip_count(native, monkeypatch):
    # a Python number where the tensor loop ran zero times, the body's numpy scalar where it ran
    monkeypatch.setenv("AG_NATIVE", native)
    for x in (np.array(2.5), np.float32(2.5), np.array(7, np.int64), np.int32(-3), np.array(1.5, np.float32)):
        _three_calls(accumulated_in_a_while, [(x, n) for n in TRIPS])
        _three_calls(summed_in_a_while, [(x, n) for n in TRIPS])
    for y in (np.arange(3.0), np.zeros(0), np.ones(1, np.float32)):
        _three_calls(accumulated_in_a_for, [(np.array(2.5), y), (np.float32(2.5), y)])
        _three_calls(found_in_a_for, [(np.float64(0.5), y), (np.array(-1.0), y)])


def accumulated_then_doubled(x, n):
    s = 0
    while n > s:
        s += x
    return s * 2


def test_arithmetic_on_a_loop_variable_python_on_zero_trips_is_refused_where_dtypes_differ():
    # eagerly `s * 2` is a Python int where the loop ran zero times and a float64 elsewhere
    with pytest.raises(ag.ConversionError, match=r"ran zero times") as info:
        ag.function(accumulated_then_doubled)(np.array(2.5), np.array(3))
    assert f"{__file__}:{accumulated_then_doubled.__code__.co_firstlineno + 4}" in str(info.value)
    ints = [(np.array(2, np.int64), np.array(n)) for n in (3, 0)]   # a Python int and an int64: one number
    _three_calls(accumulated_then_doubled, ints)


def merged_then_accumulated(x, n, m):
    s = 0
    if n > 1:
        s = x           # a Python int or a 0-d array, by a tensor `if`
    while m > 0:
        s = s + x
        m = m - 1
    return s


def test_a_loop_variable_starting_as_an_if_s_python_number_stays_one_where_the_loop_ran_zero_times():
    # the loop carried the numpy value: array(0.) where eager keeps the `if`'s Python 0
    _three_calls(merged_then_accumulated, [(np.array(1.5), np.array(n), np.array(m)) for n in (0, 2) for m in (0, 2)])
