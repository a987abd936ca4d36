"""Arrays are memory (issue 26): item and slice assignment, in-place updates through views, and
what the caller's arrays hold afterwards. Each compiled run is compared with the eager run on
fresh copies of the arguments: results and the arguments' final contents."""
import inspect

import numpy as np
import pytest

import autograph_lite as ag
from helpers import assert_identical, check_grad, cpu_only, on_fresh_arguments


def line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def both(fn, *make_args):
    """`fn` eagerly and compiled on fresh arguments: results and arguments afterwards identical;
    returns the last compiled result and its arguments."""
    return on_fresh_arguments(fn, *make_args, same=assert_identical)[2:]


def arange(*shape, dtype=np.float64):
    return lambda: np.arange(int(np.prod(shape))).astype(dtype).reshape(shape)


# --- straight-line writes ---------------------------------------------------------------------

def writes_into_a_new_array(x):
    y = x * 2
    y[0] = 5
    y[1:3] += 1
    y[-1] = y[0] * 10
    return y


def writes_into_an_argument(x):
    x[0] = 7
    x[2:] -= 1.5
    return x.sum()


def writes_rows_and_columns(A):
    A[1] = 0
    A[:, 2] = A[:, 0] + 1
    A[0, 1:] *= 3
    return A.mean()


def test_item_and_slice_assignment_equal_eager():
    both(writes_into_a_new_array, arange(5))
    both(writes_into_an_argument, arange(5))
    both(writes_rows_and_columns, arange(3, 4))


def assigns_with_numpy_casts(a, f):
    a[0] = 1.7           # float into int: numpy truncates
    a[1:3] = f[:2]       # and casts a whole slice
    f[0] = True
    return a, f


def test_assignment_casts_as_numpy_does():
    both(assigns_with_numpy_casts, arange(4, dtype=np.int32), lambda: np.array([2.9, -3.5, 1.0]))


def broadcasts_the_value(A, row):
    A[1:] = row          # a row into every row
    A[:, 0] = 9          # a number into a column
    A[0] = np.array([[1, 2, 3]])  # numpy drops the value's leading 1s
    return A


def test_the_value_broadcasts_as_numpy_does():
    both(broadcasts_the_value, arange(3, 3), lambda: np.array([4.0, 5.0, 6.0]))


def repeated_indices(a, v):
    a[[0, 0, 2]] = v            # the last write wins
    a[[1, 1]] += 1              # buffered: once, not twice
    return a


@cpu_only("numpy's rule for a repeated index in `a[idx] += v` (cupy's scatter differs)")
def test_repeated_array_indices_as_numpy():
    both(repeated_indices, arange(4), lambda: np.array([1.0, 2.0, 3.0]))


def numpy_scalar_element(x):
    s = x[0]             # a numpy scalar, a copy
    s += 0.5
    x[1] += 0.5          # x[1] is read, added to and stored back (truncated in an int array)
    return s, x


def test_an_element_is_a_copy_and_its_update_rebinds():
    both(numpy_scalar_element, arange(3, dtype=np.int64))


def same_kind_refused(x):
    row = x[0]
    row += 0.5           # numpy: UFuncTypeError (same_kind), an int view cannot hold floats
    return x


def test_an_in_place_update_of_a_view_keeps_numpy_casting_rule():
    with pytest.raises(TypeError):
        same_kind_refused(arange(2, 2, dtype=np.int64)())
    with pytest.raises(TypeError, match="same_kind"):
        ag.function(same_kind_refused)(arange(2, 2, dtype=np.int64)())


def out_of_range(x, i):
    x[i] = 1.0
    return x


@cpu_only("numpy raises for an index out of range; cupy's indexing does not check")
def test_an_index_out_of_range_raises_index_error_when_the_graph_runs():
    with pytest.raises(IndexError):
        out_of_range(np.zeros(3), 5)
    f = ag.function(out_of_range, input_signature=[ag.TensorSpec((3,), np.float64), ag.TensorSpec((), np.int64)])
    x = np.zeros(3)
    f(x, np.int64(2))
    np.testing.assert_array_equal(x, [0, 0, 1])
    with pytest.raises(IndexError):
        f(np.zeros(3), np.int64(5))


def too_long_a_value(x):
    x[:2] = np.ones(3)
    return x


def test_a_value_that_does_not_fit_is_numpys_value_error():
    with pytest.raises(ValueError):
        too_long_a_value(np.zeros(4))
    with pytest.raises(ValueError, match="could not broadcast"):
        ag.function(too_long_a_value)(np.zeros(4))


# --- views share memory ----------------------------------------------------------------------

def view_written_then_base_read(x):
    row = x[1]
    row[0] = 9
    col = x.T[:, 2]
    col += 100
    return x * 1


def base_written_then_view_read(x):
    y = x + 0
    row, t = y[0], y.T
    y[0, 0] = -1
    y += 1
    return row * 1, t * 1, y


def view_of_a_view(x):
    v = x[1:][:, ::2]
    v[0] = 0
    v = x[None][0, 1]    # expand_dims-like and back
    v[1:] = -5
    return x


def test_views_and_their_arrays_see_each_others_writes():
    both(view_written_then_base_read, arange(3, 3))
    both(base_written_then_view_read, arange(2, 3))
    both(view_of_a_view, arange(3, 4))


def scaled_lower_triangle(C, beta):
    for i in range(C.shape[0]):   # a Python loop: unrolled while tracing
        C[i, :i + 1] *= beta
    return C


def test_polybench_style_updates_of_an_argument_through_slices():
    compiled, args = both(scaled_lower_triangle, arange(4, 4), lambda: 2.0)
    assert compiled is args[0]   # `return C` is the caller's array, as eagerly


def build_up(b, u):
    b[1:-1, 1:-1] = u[2:, 1:-1] - u[:-2, 1:-1]


def calls_a_helper_that_writes(b, u):
    build_up(b, u)
    return b.sum() + u[1, 1]


def test_a_helper_writes_the_callers_array():
    both(calls_a_helper_that_writes, lambda: np.zeros((4, 4)), arange(4, 4))


def reshape_view_written(x):
    v = x.reshape(-1)
    v[0] = 1
    return x


def test_a_write_through_a_reshape_is_refused_naming_the_line():
    with pytest.raises(ag.ConversionError, match=rf"'v' is updated in place .* at .*test_item_assignment.py:"
                                                 rf"{line_of(reshape_view_written, 'v[0] = 1')}.*Reshape"):
        ag.function(reshape_view_written)(np.zeros((2, 2)))


def write_in_tensor_if(x):
    y = x * 1
    if x.sum() > 0:
        y[0] = 5
    return y


def test_a_write_inside_a_tensor_if_to_an_array_from_before_it():
    both(write_in_tensor_if, lambda: np.ones(3))
    both(write_in_tensor_if, lambda: -np.ones(3))


def write_local_to_tensor_loop(x, n):
    total = x * 0
    for i in ag.range(n):
        t = x * i
        t[0] = 1           # an array made in the iteration: its own memory
        total = total + t
    return total


def test_a_write_to_an_array_made_inside_a_tensor_loop():
    both(write_local_to_tensor_loop, arange(3), lambda: np.int64(3))


# --- tensor loops and branches carry the memory they write -----------------------------------------

def fills_an_argument_in_a_tensor_loop(x, n):
    for i in ag.range(n):
        x[i] = i * 2.0
    return x


def writes_through_views_in_a_while(x, n):
    y = x * 1
    row = y[0]
    i = 0
    while i < n:
        row[i] += 1
        y[1, i] = row[i] * 3
        i += 1
    return y, row * 1


def dp_table_in_nested_tensor_loops(x, n):
    out = x * 0
    for i in ag.range(n):
        for j in ag.range(n):
            out[i, j] = x[i, j] + out[i - 1, j]
    return out


def data_dependent_stop(x, n):
    i = 0
    while x[i] < 10:
        x[i] = 10
        i += 1
    return i


def writes_in_branches_in_a_loop(x, n):
    for i in ag.range(n):
        if x[i] > 2:
            x[i] = -x[i]
        else:
            x[i - 1] += 1
    return x.sum()


def test_tensor_loops_carry_the_memory_they_write():
    compiled, args = both(fills_an_argument_in_a_tensor_loop, lambda: np.zeros(4), lambda: np.int64(3))
    assert compiled is args[0]
    both(writes_through_views_in_a_while, arange(2, 3), lambda: np.int64(3))
    both(dp_table_in_nested_tensor_loops, arange(3, 3), lambda: np.int64(3))
    both(data_dependent_stop, arange(12), lambda: np.int64(0))
    both(writes_in_branches_in_a_loop, arange(5), lambda: np.int64(5))


def view_updated_by_augmented_assignment_in_a_loop(x, y, n):
    v = y[:]           # a view of the argument, written before and inside a tensor loop
    v += x
    i = 0
    while i < n:
        i += 1
        v -= i
    return v * 1


def test_a_loop_variable_that_is_a_view_updated_by_augmented_assignment():
    # fuzzer seed 2626008174: `v -= ...` in the loop went through the whole-array path and the
    # caller's y kept only the update from before the loop
    both(view_updated_by_augmented_assignment_in_a_loop, arange(4), arange(4), lambda: np.int64(3))


def swaps_buffers(a, b, n):
    for t in ag.range(n):
        b[1:-1] = 0.5 * (a[2:] + a[:-2])
        a, b = b, a
    return a


def swaps_buffers_in_a_python_for(x, n):
    a = x.copy()
    b = np.zeros_like(x)
    for t in range(n):          # a tensor loop: n is a tensor
        b[1:-1] = 0.5 * (a[2:] + a[:-2])
        a, b = b, a
    return a, b


def rotates_three_buffers(a, b, c, n):
    for t in ag.range(n):
        c[:] = a + b
        a, b, c = b, c, a
    return a


def test_loop_variables_written_and_swapped_equal_eager():
    # the loop carries the variables' contents, each iteration owning the arrays they hold, and an
    # iteration count says which array each ends in: the caller's a and b get those contents
    for n in (0, 1, 2, 3, 4):
        both(swaps_buffers, arange(6), lambda: np.zeros(6), lambda: np.int64(n))
        both(swaps_buffers_in_a_python_for, arange(6), lambda: np.int64(n))
        both(rotates_three_buffers, arange(4), arange(4), lambda: np.ones(4), lambda: np.int64(n))


def writes_a_swapped_buffer_after_the_loop(a, b, n):
    for t in ag.range(n):
        b[1:-1] = 0.5 * (a[2:] + a[:-2])
        a, b = b, a
    a[0] = 5          # a is the caller's a or b, by the parity of n
    return a


def reads_a_swapped_buffer_under_another_name(a, b, n):
    old = a
    for t in ag.range(n):
        b[1:-1] = 0.5 * (a[2:] + old[:-2])   # eagerly `old` is written on the odd iterations
        a, b = b, a
    return a


def replaces_a_written_buffer(a, b, n):
    for t in ag.range(n):
        b[1:-1] = 0.5 * (a[2:] + a[:-2])
        a, b = b, a * 2     # b a new array: which array the caller's memory ends in varies
    return a


@pytest.mark.parametrize("fn, message", [
    (writes_a_swapped_buffer_after_the_loop, r"'a' is updated in place .* swaps the arrays of 'a' and 'b'"),
    (reads_a_swapped_buffer_under_another_name, r"loop variable 'a' is swapped with another array .* reads its "
                                                r"array under another name"),
    (replaces_a_written_buffer, r"loop variable '[ab]' is written in place.* in a loop on a tensor .*new array"),
])
def test_what_a_swap_of_buffers_cannot_follow_is_refused(fn, message):
    with pytest.raises(ag.ConversionError, match=message):
        ag.function(fn)(arange(6)(), np.zeros(6), np.int64(3))


def fills_a_numpy_array_in_a_tensor_loop(x, n):
    out = np.zeros(4)
    for i in ag.range(n):
        out[i] = x[i]
    return out


def test_a_numpy_array_from_before_a_tensor_loop_is_filled_by_it():
    both(fills_a_numpy_array_in_a_tensor_loop, arange(4), lambda: np.int64(3))


def accumulates_into_a_numpy_array(x, n):
    acc = np.zeros(3)
    acc += x            # numpy's `+=` with a tensor: the array becomes a tensor holding its contents
    for i in ag.range(n):
        acc += x * i
    return acc


def test_augmented_assignment_of_a_tensor_into_a_numpy_array_made_in_the_function():
    # NPBench contour_integral: `Tz = np.zeros(...); Tz += zz * Ham[n]`
    both(accumulates_into_a_numpy_array, arange(3), lambda: np.int64(3))


def accumulates_into_an_aliased_numpy_array(x, n):
    acc = np.zeros(3)
    alias = acc
    for i in ag.range(n):
        acc += x
    return alias


def fills_a_viewed_numpy_array_in_a_tensor_loop(x, n):
    out = np.zeros(4)
    row = out[:2]
    for i in ag.range(n):
        out[i] = x[i]
    return row


@pytest.mark.parametrize("fn, line", [(accumulates_into_an_aliased_numpy_array, "acc += x"),
                                      (fills_a_viewed_numpy_array_in_a_tensor_loop, "out[i] = x[i]")])
def test_a_numpy_array_something_else_holds_updated_in_a_tensor_loop_is_refused(fn, line):
    # before issue 26 the aliased accumulation returned zeros where eager returns the sums
    with pytest.raises(ag.ConversionError, match=rf"at .*test_item_assignment.py:{line_of(fn, line)} inside a loop "
                                                 rf"on a tensor, and its numpy array from before the loop is also"):
        ag.function(fn)(arange(4)(), np.int64(2))


# --- lowering: stores where the buffer is owned ---------------------------------------------------

def fill_loop(x):
    out = x * 0
    for i in range(x.shape[0]):   # unrolled: a chain of SetItems
        out[i] = x[i] * 2.0
    total = out.sum()            # the filled array is read, then written: that SetItem copies
    out[0] = -1.0
    return out, total


def test_a_fill_loop_stores_into_its_own_buffer_instead_of_copying():
    both(fill_loop, arange(6))
    graph = ag.function(fill_loop).get_concrete_function(arange(6)()).optimized_graph
    stores = [n for n in graph.nodes if n.op == "SetItem"]
    assert len(stores) == 7
    assert [n.in_place_input for n in stores] == [0] * 6 + [None]  # the last one's input is also summed


# --- gradients, saving --------------------------------------------------------------------------

def loss_with_assignment(x):
    y = x * x
    y[1] = 3 * x[0]      # y[1]'s own gradient is cut; x[0] gets 3 from it
    y[2:] *= 2.0
    return y.sum()


def test_gradient_of_item_assignment():
    check_grad(loss_with_assignment, np.array([1.0, 2.0, 3.0, 4.0]))


def test_save_and_load_a_function_with_item_assignment(tmp_path):
    f = ag.function(writes_rows_and_columns)
    x = arange(3, 4)()
    f(x)
    ag.save(f, tmp_path / "f.agz")
    g = ag.load(tmp_path / "f.agz")
    eager_x, loaded_x = arange(3, 4)(), arange(3, 4)()
    assert_identical(writes_rows_and_columns(eager_x), g(loaded_x))
    assert_identical(eager_x, loaded_x)


def read_then_written(x):
    y = x * x            # reads x before the write: its gradient is of the old x
    row = x[0:2]
    row[0] = 0.0
    return (y * x).sum()


def test_gradient_through_values_read_before_a_write():
    check_grad(read_then_written, np.array([1.5, 2.0, 3.0]))


# --- numpy arrays made in the function receive tensors -------------------------------------------

def preallocate_and_fill(x):
    n = x.shape[0]
    out = np.zeros(n)
    table = np.zeros((n, 2), dtype=np.int64)
    for i in range(n):          # a Python loop: unrolled
        out[i] = x[i] * 2
        table[i, 1] = i
        table[i] += table[i - 1]
    out[0] += x.sum()
    return out, table


def test_a_numpy_array_made_in_the_function_becomes_a_tensor_when_it_receives_one():
    both(preallocate_and_fill, arange(4))
    assert "out = ag__.set_item(out, i, x[i] * 2, None, 'out')" in ag.to_code(preallocate_and_fill)


def constant_code_stays_numpy(x):
    lut = np.zeros(3)
    lut[1] = 2.0                # no tensor: numpy's own assignment, while tracing
    return x * lut


def test_a_numpy_array_with_numpy_values_stays_numpy():
    both(constant_code_stays_numpy, arange(3))


def viewed_before_the_write(x):
    out = np.zeros(3)
    row = out[0:2]
    out[1] = x[0]
    return row


def held_by_a_list(x):
    out = np.zeros(3)
    held = [out]
    out[1] = x[0]
    return held[0]


def held_by_two_names(x):
    out = np.zeros(3)
    other = out
    out[1] = x[0]
    return other


def fills_its_argument(out, x):
    out[1:] = x[0]


def passes_a_numpy_array_to_a_helper(x):
    out = np.zeros(3)
    fills_its_argument(out, x)   # eagerly the helper fills the caller's array
    return out


def test_a_numpy_array_a_caller_holds_is_refused_where_a_helper_stores_a_tensor_into_it():
    with pytest.raises(ag.ConversionError, match=rf"'out' is a numpy array made in the function, held by a variable "
                                                 rf"of the function that called this one, .* at .*test_item_assignment.py:"
                                                 rf"{line_of(fills_its_argument, 'out[1:] = x[0]')}"):
        ag.function(passes_a_numpy_array_to_a_helper)(np.ones(3))


@pytest.mark.parametrize("fn", [viewed_before_the_write, held_by_a_list, held_by_two_names])
def test_a_numpy_array_another_name_holds_is_refused_where_it_receives_a_tensor(fn):
    with pytest.raises(ag.ConversionError, match=rf"'out' is a numpy array made in the function, .* at "
                                                 rf".*test_item_assignment.py:{line_of(fn, 'out[1] = x[0]')}"):
        ag.function(fn)(np.ones(3))


def numpy_array_read_then_written(x):
    p = np.ones(3)
    y = x + p[0:2]    # the view's values become a constant of the graph
    p[0] = 5.0        # then numpy writes the array: the constant keeps what it read
    return y, x + p[0:2]


def test_a_constant_keeps_the_values_a_numpy_array_had_when_it_was_read():
    # NPBench adi: constants held views of np.empty arrays the kernel wrote afterwards
    both(numpy_array_read_then_written, arange(2))


def chained_assignment(data):
    M = data.shape[1]
    c = np.eye(M)
    for i in range(M - 1):   # polybench correlation: both triangles from one product
        c[i + 1:M, i] = c[i, i + 1:M] = data[:, i] @ data[:, i + 1:M]
    k = j = 1
    return c, k + j


def test_chained_assignment_stores_one_value_into_each_target_from_the_left():
    both(chained_assignment, lambda: np.random.default_rng(0).random((4, 3)))


def recurrence_in_a_tensor_loop(x):
    y = x * 1.0
    for i in ag.range(1, 4):    # the loop carries y's memory; its gradient runs the loop backwards
        y[i] = y[i - 1] * x[i]
    return y.sum()


def test_gradient_through_memory_a_tensor_loop_carries():
    check_grad(recurrence_in_a_tensor_loop, np.array([1.5, 2.0, 0.5, 3.0]))


# --- item assignments as targets of tuple unpacking -------------------------------------------

def _energy(x):
    return (x ** 2).sum(), x.sum()


def unpacked_into_items(x, n):
    """NPBench nbody: `KE[i], PE[i] = energy(...)` into arrays made in the function."""
    KE = np.zeros(n + 1)
    PE = np.zeros(n + 1)
    KE[0], PE[0] = _energy(x)
    i = 1
    for _ in range(n):
        x = x * 0.5
        KE[i], PE[i] = _energy(x)
        KE[i], i = KE[i] * 2, i + 1   # the item is stored with the old i, as Python assigns from the left
    [KE[0], y] = KE[1], 7.0       # a list target too
    return KE, PE, i, x, y


def test_item_assignments_inside_tuple_targets_equal_eager():
    both(lambda x: unpacked_into_items(x, 3), arange(3))
    both(unpacked_into_items, arange(3), lambda: np.int64(3))  # a tensor loop: the items carried by it


# --- the fuzzer's finds (tests/fuzz, flag item_assign) ----------------------------------------

def aug_into_a_numpy_array_at_a_tensor_index(x, n, s):
    """Fuzz seed 21000093: `v[n % 4] -= t` on a numpy array made in the function read the item
    with the tensor index before promoting the array (a SymbolicValueError)."""
    v = np.ones(4, np.uint8)
    v[n % 4] -= (s != n)
    v += np.any(v)
    w = np.zeros(4)
    w[n % 4] += x[0]
    return v, w


def test_an_aug_assignment_at_a_tensor_index_promotes_the_numpy_array_first():
    for n in (0, 3):
        both(aug_into_a_numpy_array_at_a_tensor_index, arange(4), lambda: np.array(n, np.int32), lambda: 1)


def returns_the_array_a_branch_wrote(x, n):
    """Fuzz seed 22001258: a tensor `if` whose branch writes `x` and returns it (or binds `r = x`)
    gave x's contents from before the branch (the output captured after the block had put the
    storage's outer base back)."""
    if n > 0:
        x[1] = -1
    if n < 5:
        x[1] = 0
        r = x
    else:
        r = x * 1
    return r


def rebinds_in_a_loop_to_the_array_it_writes(x, n):
    r = x * 0
    for i in ag.range(n):
        x[1] = i
        r = x
    return r


def test_a_branch_output_that_is_the_array_it_wrote_has_its_new_contents():
    for n in (0, 1, 4, 6):
        both(returns_the_array_a_branch_wrote, arange(4), lambda: np.int32(n))
        both(rebinds_in_a_loop_to_the_array_it_writes, arange(4), lambda: np.int32(n))


def merges_the_array_after_a_view_wrote_it(x, y, n):
    """Fuzz seed 2057 (on the stand-in and the CPU): y written through a view, then `v` is y or x
    by a tensor `if`, then y written again: eager's v (when it is y) sees the second write; the
    compiled v was the merged contents from before it. Refused, as without the first write."""
    m = y[:-1]
    m[1] *= 2
    v = x
    if n > 1:
        v = y
    y[3] = 1
    return v


def test_a_merged_alias_of_an_array_written_before_is_refused_after_the_next_write():
    with pytest.raises(ag.ConversionError, match=r"'y' \(on some runs the same array\).*returned"):
        ag.function(merges_the_array_after_a_view_wrote_it)(np.arange(4.0), np.arange(4.0), np.int32(2))


def merges_a_written_array_then_a_branch_writes_it(x, n):
    """As above, the second write inside a tensor `if`: the block carrying x's memory saw only its
    own copy of the contents, not the merge `v` made from them before it (fuzzer seed 1153011008)."""
    x[1] = 1
    v = np.zeros(4)
    if n > 0:
        v = x
    if n > 5:
        x[2:] = 7
    return v


def merges_a_written_array_then_a_loop_writes_it(x, n):
    x[1] = 1
    v = np.zeros(4)
    if n > 0:
        v = x
    for i in ag.range(n):
        x[2:] = i
    return v


def returns_in_try_then_finally_writes(x, n):
    """Fuzzer seed 1153011008: `return {'r1': x}` in the `try` (a tensor `if`), then the `finally`
    writes x under a tensor `if` (the converter's own: a `return` the finally may take): the result
    read x's contents from before the write in the branch of a later `if`, which counted as the other
    side of the writing `if` (a sibling), not as after it."""
    try:
        x[1] = 1
        if n > 0:
            return {'r1': x}
    finally:
        if n > 9:
            return {'r1': x * 0}
        x[2:] = 7
    return {'r1': x + 1}


def merges_then_a_loop_in_a_branch_writes_it(x, n):
    """Fuzzer seed 1202007273: the loop's write made the `if` trace again carrying x, and the mark
    its first attempt left on `v` (scoped to a loop body thrown away) covered no later read."""
    v = x if n != 3 else x * 2
    if n > -5:
        i = 0
        while i < n:
            i += 1
            x[[0, 2]] = 7
        return v + 1
    return x


@pytest.mark.parametrize("fn, text", [(merges_a_written_array_then_a_branch_writes_it, "x[2:] = 7"),
                                      (merges_a_written_array_then_a_loop_writes_it, "x[2:] = i"),
                                      (returns_in_try_then_finally_writes, "x[2:] = 7"),
                                      (merges_then_a_loop_in_a_branch_writes_it, "x[[0, 2]] = 7")])
def test_a_merged_alias_of_a_written_array_is_refused_after_a_block_writes_it(fn, text):
    for n in (-1, 0, 6):
        eager = fn(np.arange(4.0), np.int32(n))  # eagerly the result is (on some runs) x, written after
        assert isinstance(eager, (np.ndarray, dict))
        with pytest.raises(ag.ConversionError, match=rf"'x' \(on some runs the same array\) was updated in place "
                           rf"\(`\[\.\.\.\] =`\) at .*test_item_assignment.py:{line_of(fn, text)}\b"):
            ag.function(fn)(np.arange(4.0), np.int32(n))


def returns_early_from_a_loop_that_writes_the_array(x, n):
    """`return x` in a tensor loop, then the body writes x under the converter's `not do_return`
    guard: the write and the returned value are runs apart, and this stays compiled."""
    for i in ag.range(n):
        if x[i] > 2:
            return x
        x[i] = 10
    return x * 2


def test_an_early_return_of_an_array_a_tensor_loop_then_writes_equals_eager():
    for n in (0, 2, 4):
        both(returns_early_from_a_loop_that_writes_the_array, arange(4), lambda: np.int32(n))


def returns_early_from_a_nested_if_of_a_loop_that_writes_the_array(x, n):
    for i in ag.range(n):
        if x[i] > 1:
            if x[i] > 2:
                return x
        x[i] = 10
    return x * 2


def returns_early_from_a_while_loop_that_writes_the_array(x, n):
    i = 0
    while i < n:
        if x[i] > 2:
            return x[1:], 1.0
        x[i] = 10
        i += 1
    return x * 2, 2.0


def returns_early_from_an_inner_loop_then_the_outer_writes_the_array(x, n):
    for j in ag.range(n):
        for i in ag.range(n):
            if x[i] > 2:
                return x
        x[j] = 10
    return x * 2


@pytest.mark.parametrize("fn", [returns_early_from_a_nested_if_of_a_loop_that_writes_the_array,
                                returns_early_from_a_while_loop_that_writes_the_array,
                                returns_early_from_an_inner_loop_then_the_outer_writes_the_array])
def test_a_return_value_is_spared_by_the_writes_its_return_guards(fn):
    """The return converter's guards (`if not do_return:`) are marked (runtime/memory.py): a write
    under one cannot run where a `return` of the function has set `retval_`, which stays compiled."""
    for n in (0, 2, 4):
        both(fn, arange(4), lambda: np.int32(n))


def merges_the_loop_variable_then_a_branch_writes_it(x, z, n):
    """`v` is x on some runs (a tensor `if`), then an `if` in the same loop body writes x: eagerly
    v.sum() sees the write (21.0 for n = 2); the merge was spared as a loop body's own variable (so
    that `return x` then `x[i] = 10` stayed compiled) and read x's contents from before (12.0)."""
    t = 0.0
    for i in ag.range(n):
        v = x if n > 1 else z
        if i > 0:
            x[2:] = 7
        t += v.sum()
    return t


def returns_early_then_merges_the_loop_variable(x, z, n):
    """The same under the guard of an early `return`: only the function's return values are spared."""
    t = 0.0
    for i in ag.range(n):
        if x[i] > 5:
            return t
        v = x if n > 1 else z
        if i > 0:
            x[2:] = 7
        t += v.sum()
    return t


def returns_the_array_from_a_callee(x, c):
    if c > 0:
        return x
    return x * 0


def a_callees_return_value_then_a_guarded_write(x, z, n):
    """A callee's return value is the caller's value (`ag__.return_value` ends its pending state)."""
    t = 0.0
    for i in ag.range(n):
        v = returns_the_array_from_a_callee(x, n - 1)
        if x[i] > 50:
            return t
        x[2:] = 7
        t += v.sum()
    return t


@pytest.mark.parametrize("fn, text", [(merges_the_loop_variable_then_a_branch_writes_it, "x[2:] = 7"),
                                      (returns_early_then_merges_the_loop_variable, "x[2:] = 7"),
                                      (a_callees_return_value_then_a_guarded_write, "x[2:] = 7")])
def test_a_merged_loop_variable_is_refused_after_a_branch_of_the_body_writes_it(fn, text):
    with pytest.raises(ag.ConversionError, match=rf"'x' \(on some runs the same array\) was updated in place "
                       rf"\(`\[\.\.\.\] =`\) at .*test_item_assignment.py:{line_of(fn, text)}\b.*"
                       rf"test_item_assignment.py:{line_of(fn, 't += v.sum()')}\b"):
        ag.function(fn)(np.arange(4.0), np.zeros(4), np.int32(2))


def writes_what_an_inner_loop_passed_on(y, n):
    """Fuzz seed 23000869: the outer loop's variable (the argument y) passed through an inner tensor
    loop and written after it: the write stayed on the inner loop's result and y was never written
    back. A loop that hands a variable on untouched gives its start value (y itself) now."""
    v = y
    for i in ag.range(n):
        for r in ag.range(n):
            v = v
        v[0] = i
    return v


def test_a_write_through_an_inner_loops_result_reaches_the_outer_loop_or_is_refused():
    for n in (0, 2):
        both(writes_what_an_inner_loop_passed_on, arange(4), lambda: np.int32(n))
    both(lambda y, n: writes_what_an_inner_loop_passed_on(y * 2, n), arange(4), lambda: np.int32(2))


def merges_the_written_argument_with_its_view(x, y, n):
    """Fuzz seed 23001280: y written, then `v` is y on some runs and its view y[::-1] on others (a
    tensor `if`), then written through v: whether y[0] or y[3] changes depends on the data. The
    merge held y's written contents (not its placeholder), so the argument went unseen: refused now."""
    v = y[::-1]
    v[0] = 0.5
    if np.sum(x) <= 100:
        v = y
    v[0] = 0
    return v


def test_a_merge_of_an_argument_written_before_is_still_that_argument():
    with pytest.raises(ag.ConversionError, match="argument 'y'"):
        ag.function(merges_the_written_argument_with_its_view)(np.arange(4.0), np.arange(4.0), np.int32(2))


def writes_through_a_view_of_a_same_handle_merge(x, y, n, s):
    """Fuzz seed 23000299: `v = x if c else x` (a tensor c) after x was written gave x's written
    contents as a plain value, so a write through a view of v in a tensor loop missed x."""
    x[-1] -= y[1]
    v = x if ag.reduce_all(x * 0) else x
    if x[1]:
        for i in ag.range(n):
            m = v[::-1]
            m[s % 4] = 0
    return y, x


def test_a_merge_of_one_handle_in_both_branches_stays_that_handle():
    for n in (0, 2):
        both(writes_through_a_view_of_a_same_handle_merge, arange(4), arange(4), lambda: np.int32(n), lambda: 1)


def whole_array_update_in_a_block_that_writes_items(y, n):
    """Fuzz seed 26000129: `v *= y` (the old whole-array path) in a tensor `if` that also writes
    v's items lost both updates. `v *= y` writes v's memory as `v[...] *= y` does now."""
    v = y * 1
    v[0] = 2
    if n > 0:
        v[1:3] = n
        v *= y
    return v


def test_a_whole_array_update_in_a_block_writing_items_keeps_both():
    for n in (0, 1):
        both(whole_array_update_in_a_block_that_writes_items, arange(4), lambda: np.int32(n))


def _unused_store_of_infinity(x, n):
    v = np.ones(4, np.int64)
    v[n % 4] = x[2] / 0.0     # inf into an int64 array: numpy's OverflowError, though v is never read
    return x


@cpu_only("numpy range-checks a Python int stored into an int array; cupy does not")
def test_an_unused_store_that_raises_still_raises():
    # fuzzer seed 1127005423: the SetItem was dropped as dead code
    with pytest.raises(OverflowError):
        with np.errstate(divide="ignore"):
            _unused_store_of_infinity(np.ones(4), np.int64(1))
    with pytest.raises(OverflowError), np.errstate(divide="ignore"):
        ag.function(_unused_store_of_infinity)(np.ones(4), np.int64(1))


def _aliases_read_after_a_whole_array_update(x, y, n):
    """Fuzz seed 1127004462 (reduced): `v1 = x` before a tensor loop that hands x on untouched and
    item writes into x, `v11 = x` after them, then `v1 += 1` (the old whole-array path) in a tensor
    loop reading v11: v11 gave x's contents from before the update. `v1 += 1` writes x's memory now."""
    v1 = x
    w = 0
    while w < n:
        w += 1
        x = x
    for i in ag.range(n):
        x[i % 4] += 1.0
    v11 = x
    total = 0.0
    for r in y:
        total = total + v11.sum()
        v1 += 1
    return total, v11


def _names_of_one_array_updated_whole(x, n):
    a = x
    b = a
    a *= 2            # b and x are the same array: they see it
    if n > 0:
        b += a[0]     # and a sees this
    c = x[1:]
    c -= 1            # a view: x, a and b see it
    return a + 0, b, x.sum()


def test_a_whole_array_update_writes_the_memory_every_name_reads():
    for n in (0, 3):
        both(_aliases_read_after_a_whole_array_update, arange(4), arange(3), lambda: np.int32(n))
        both(_names_of_one_array_updated_whole, arange(4), lambda: np.int32(n))


def _imaginary_part_updated(x, n):
    v = np.imag(n)   # of a real array: a new read-only array
    v *= 2
    return v


def _imaginary_part_stored_into(x, n):
    v = np.imag(x)
    v[1:3] = 2
    return v


def _broadcast_view_updated(x, n):
    v = np.broadcast_to(x, (2, 4))
    w = v[0]
    w += 1
    return v


def _diagonal_stored_into(x, n):
    v = np.diag(np.outer(x, x))   # numpy's diagonal of a 2-d array: a read-only view (seed 1180015732)
    v[v == 1] = 3
    return v


def _diagonal_method_updated(x, n):
    v = np.outer(x, x).diagonal()
    v += 1
    return v


@pytest.mark.parametrize("fn, message", [(_imaginary_part_updated, "output array is read-only"),
                                         (_imaginary_part_stored_into, "assignment destination is read-only"),
                                         (_broadcast_view_updated, "output array is read-only"),
                                         (_diagonal_stored_into, "assignment destination is read-only"),
                                         (_diagonal_method_updated, "output array is read-only")])
def test_writing_an_array_numpy_makes_read_only_raises_as_eagerly(fn, message):
    # fuzzer seed 26002074: `v = np.imag(n); v *= ...` raised eagerly and ran compiled
    for call in (fn, ag.function(fn)):
        with pytest.raises(ValueError, match=message):
            call(np.arange(4.0), np.array(3, np.int32))


def _list_holding_an_argument_through_a_tensor_if(x, y, n):
    L1 = [x]
    if n > 0:
        L1.append(y)
    x[1:-1] = 7
    return L1


def test_a_list_a_tensor_if_stacked_holding_a_written_argument_is_refused():
    # fuzzer seed 26000590: the stacked list held x's contents from before the write (eagerly the
    # list holds x itself): refused where the list is read after the write, naming both lines
    with pytest.raises(ag.ConversionError, match=r"'x' \(a list holding it\) was updated in place \(`\[\.\.\.\] =`\) "
                                                 r"at .*test_item_assignment.py:\d+"):
        ag.function(_list_holding_an_argument_through_a_tensor_if)(np.arange(4.0), np.ones(4), np.array(1))


def _list_a_loop_stacked_appended_to_after_it(x, y):
    L1 = [x]
    for r in y:
        L1.append(x * r)
    L1.append(y)            # a new stack, which still holds x as its first item
    x[2:] = 0
    return L1[0]


def test_a_list_appended_to_after_a_loop_stacked_it_still_holds_the_written_argument():
    # fuzzer seed 1181008174: the append after the loop made a new stack that no longer counted as
    # holding x, so `L1[0]` gave x's contents from before the write where eagerly it is x itself
    with pytest.raises(ag.ConversionError, match=r"'x' \(a list holding it\) was updated in place \(`\[\.\.\.\] =`\) "
                                                 r"at .*test_item_assignment.py:\d+"):
        ag.function(_list_a_loop_stacked_appended_to_after_it)(np.arange(4.0), np.ones(4))


def _list_a_tensor_if_appends_to_then_writes_the_array(x, y, n):
    L1 = [y]
    if n > 0:
        L1.append(x)
        w = 0
        while w < n:          # as the fuzzer's program: the write in a tensor loop in the branch
            w += 1
            x[n % 4] = 1
            v = L1[0]
    return L1


def _list_a_tensor_if_appends_views_and_writes_to(x, y, n):
    L1 = []
    if n > 0:
        L1.append(x[::-1])
        x[1] = 5
        L1.append(x)
        x += 1
    else:
        L1.append(y)
    return L1


def _list_a_tensor_if_appends_a_local_array_to(x, y, n):
    L1 = []
    z = x * 2
    if n > 0:
        L1.append(z)
        z[0] = -1
    return L1, z


@pytest.mark.parametrize("fn", [_list_a_tensor_if_appends_to_then_writes_the_array,
                                _list_a_tensor_if_appends_views_and_writes_to,
                                _list_a_tensor_if_appends_a_local_array_to])
@pytest.mark.parametrize("n", [0, 2])
def test_a_list_a_tensor_if_stacks_shows_the_writes_of_its_branch(fn, n):
    # fuzzer seed 1193023577: a branch appended x to a list (`[y]`, or `[]` and nothing in the other
    # branch: a stacked list once the branch ends) and then wrote x; the stack was made after the
    # branch was traced, from x's contents from before the branch (eagerly the list holds x itself)
    both(fn, arange(4), lambda: np.full(4, 9.0), lambda: np.array(n))


def _list_a_tensor_if_appends_a_view_to_then_the_array_written(x, n):
    L1 = [x * 0]
    if n > 0:
        L1.append(x[::-1])      # a view the branch takes of x
    x[0] = 100
    return L1


def test_a_list_holding_a_view_a_tensor_if_took_of_a_written_argument_is_refused():
    # the merged list held only arrays from outside the branch, not x through the branch's view of
    # it: the returned list silently kept x's contents from before the write
    with pytest.raises(ag.ConversionError, match=r"'x' \(a list holding it\) was updated in place \(`\[\.\.\.\] =`\) "
                                                 r"at .*test_item_assignment.py:\d+"):
        ag.function(_list_a_tensor_if_appends_a_view_to_then_the_array_written)(np.arange(4.0), np.array(1))


def _python_bool_item_of_a_list_a_loop_hands_on(y, n):
    L1 = [False]
    w = 0
    while w < 2 and y[1]:
        w += 1
        if ag.cast(False, np.int8):
            L1.append(L1[0])    # never runs: the loop hands the list's stack on untouched
    return L1[0]


def test_a_list_a_loop_hands_on_untouched_keeps_its_python_items():
    # fuzzer seed 32001910: handing back a loop variable's start value (the stack numpy made of the
    # list) gave its item as np.False_ where eager's list holds the Python bool
    both(_python_bool_item_of_a_list_a_loop_hands_on, arange(4), lambda: np.int32(1))


def _independent_inner_while(a, b):
    p = 0
    while a > 0:
        tmp = b                 # the argument's array under another name
        while tmp > 0:
            p += 1
            tmp -= 1            # eagerly: decrements b itself, in place
        a -= 1
    return p


def _inner_while_on_an_argument(a, b):
    p = 0
    while a > 0:
        while b > 0:
            p += 1
            b -= 1
        a -= 1
    return p


def _dependent_inner_while(a, b):
    r = 1
    while a > 0:
        r += 1
        tmp = b
        while tmp > 0:
            a -= 1
            tmp -= 1
        a -= 1
    return r


_NESTED_WHILES = [_independent_inner_while, _inner_while_on_an_argument, _dependent_inner_while]


def _int(v):
    return lambda: v


def _zero_d(v):
    return lambda: np.array(v)


@pytest.mark.parametrize("fn", _NESTED_WHILES)
@pytest.mark.parametrize("a, b", [(0, 0), (1, 0), (2, 2), (3, 1), (1, 3)])
def test_an_inner_tensor_loop_writing_an_argument_of_the_outer_loop_equals_eager(fn, a, b):
    # TF AutoGraph's loop tests (translated): the inner loop wrote its own copy of the outer loop's
    # memory (p=4, the caller's b unchanged: silently wrong), or `b -= 1` on the 0-d memory rebound
    # ("rebound to another array" refused); results and the arguments' final contents as eagerly
    both(fn, _zero_d(a), _zero_d(b))
    both(fn, _int(a), _int(b))
    both(fn, _zero_d(a), _int(b))


@pytest.mark.parametrize("fn", _NESTED_WHILES[:2])
@pytest.mark.parametrize("a, b", [(0, 0), (1, 0), (2, 2), (3, 1)])
def test_an_inner_tensor_loop_in_a_python_loop_writing_an_argument_equals_eager(fn, a, b):
    both(fn, _int(a), _zero_d(b))


def writes_through_a_view_one_branch_kept_after_writing_its_base(y, n):
    """Fuzz seed 1141004447: `v = y[::-1]`, one branch of a tensor `if` writes y and keeps v, the
    other rebinds v, then `v += n`: eagerly y changes on the first runs only. The branch's v was
    its memory's contents at the branch's end, which no alias check saw: y was left unchanged."""
    v = y[::-1]
    if n:
        y[0] = -y[1]
    else:
        v = ag.minimum(False, y)
    v += n
    return v


def writes_through_a_view_of_a_local_one_branch_kept(y, n):
    a = y * 1.0
    v = a[::-1]
    if n:
        a[0] = -a[1]
    else:
        v = ag.minimum(False, a)
    v += n
    return a


def reads_a_view_one_branch_kept_after_writing_its_base(y, n):
    a = y * 1.0
    v = a[::-1]
    if n:
        a[0] = -a[1]
    else:
        v = ag.minimum(False, a)
    return v * 2, a


def test_an_update_through_a_view_a_writing_branch_kept_is_refused():
    for fn, name in ((writes_through_a_view_one_branch_kept_after_writing_its_base, r"a slice or view of argument 'y'"),
                     (writes_through_a_view_of_a_local_one_branch_kept, r"'v' .*on some runs the same array")):
        with pytest.raises(ag.ConversionError, match=name):
            ag.function(fn)(np.arange(4.0), np.int32(2))
    for n in (0, 2):
        both(reads_a_view_one_branch_kept_after_writing_its_base, arange(4), lambda: np.int32(n))


# --- a returned view of an argument written in place shares the caller's memory -------------

def returns_a_slice_of_a_written_argument(x, n):
    x += 1
    return x[n:]


def returns_views_after_an_item_write(x, n):
    x[0, 1] = -5.0
    return x.T, x[None, :, 1], x[1:][::-1], x[..., 0]


def returns_a_view_taken_before_the_write(x, n):
    row = x[1]
    x *= 2
    return row, {"col": x[:, n]}


def returns_a_view_after_a_loop_wrote_the_argument(x, n):
    i = 0
    while i < n:
        x[i] += 10.0
        i += 1
    return x[i:]


@pytest.mark.parametrize("fn", [returns_a_slice_of_a_written_argument, returns_views_after_an_item_write,
                                returns_a_view_taken_before_the_write,
                                returns_a_view_after_a_loop_wrote_the_argument])
def test_a_returned_view_of_a_written_argument_shares_the_callers_memory(fn, monkeypatch):
    for native in ("off", "always"):
        monkeypatch.setenv("AG_NATIVE", native)
        compiled = ag.function(fn)
        for _ in range(4):  # the traced call, the plan, and the C the plan tiers up to
            eager_x, x = arange(3, 4)(), arange(3, 4)()
            eager = ag.nest.flatten(fn(eager_x, np.int64(1)))
            got = ag.nest.flatten(compiled(x, np.int64(1)))
            assert len(eager) == len(got)
            assert_identical(eager_x, x)
            for e, c in zip(eager, got):
                assert_identical(e, c)  # a write through the result reaches the argument, as eagerly
                assert np.shares_memory(c, x) == np.shares_memory(e, eager_x)
                e[...] = -1.0
                c[...] = -1.0
            assert_identical(eager_x, x)
