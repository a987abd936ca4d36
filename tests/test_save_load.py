"""ag.save / ag.load: a function from each conversion category saved, its source deleted, and
loaded and run in a fresh process whose cwd and sys.path do not hold the source; results
equal the eager run (values, dtypes, structure, prints)."""
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import autograph_lite as ag
from helpers import to_host
from autograph_lite import nest

SOURCE = '''
import collections
import numpy as np
import autograph_lite as ag

Pair = collections.namedtuple("Pair", ["total", "count"])


@ag.function
def branch(x, scale):
    if ag.reduce_sum(x) > 0:
        y = x * scale
    else:
        y = -x
    print("branch", y, f"sum={ag.reduce_sum(y)}")
    return {"y": y, "scale": scale, "first": x[0]}


@ag.function
def halve_until_small(x):
    steps = 0
    while ag.reduce_max(ag.abs(x)) > 1.0:
        x = x / 2.0
        steps += 1
    return x, steps


@ag.function
def row_sums(m):
    total = ag.zeros_like(m[0])
    for row in m:
        total = total + ag.tanh(row)
    return total


@ag.function
def jumps(x):
    acc = 0.0
    for v in x:
        if v < 0:
            continue
        if v > 5:
            break
        acc = acc + v
    i = 0
    while i < 10:
        i += 1
        if acc > 100:
            return acc, i
    return acc * 2.0, i


@ag.function
def stacked(x, n):
    rows = []
    for i in ag.range(n):
        rows.append(x * ag.cast(i, x.dtype))
    squares = []
    for v in x:
        squares.append(v * v)
    return ag.stack(rows), squares


@ag.function
def grows(x, n):
    out = x[:1]
    i = 0
    while i < n:
        out = ag.concat([out, x[i:i + 1] * 2.0], axis=0)
        i += 1
    return out


@ag.function(reduce_retracing=True)
def relaxed(x):
    return Pair(ag.reduce_sum(x * x), ag.shape(x))


@ag.function
def with_gradient(w, x):
    def loss(w):
        h = w
        i = 0
        while i < 3:
            h = ag.tanh(h * x)
            i += 1
        return ag.reduce_sum(h)
    return ag.value_and_grad(loss)(w)


@ag.function
def loop_gradient(w, n):
    def loss(w):
        h = w
        i = 0
        while i < n:  # a tensor loop: its gradient pops per-iteration values from a stack
            h = ag.tanh(h) * 1.5
            i += 1
        return ag.reduce_sum(h * h)
    return ag.grad(loss)(w)


@ag.function
def noisy(x):
    return x + ag.random.normal((3,), dtype=np.float32), ag.random.uniform((2,), 0, 10, dtype=np.int32)


@ag.function(input_signature=[ag.TensorSpec([None, 2], np.float64)])
def signed(x):
    return ag.matmul(x, ag.transpose(x)), ag.pad(x, [[1, 0], [0, 1]])


@ag.function
def updates(x):
    x += 1.0
    return x


def scalar_loss(w):
    return ag.reduce_sum(ag.tanh(w) * w)


traced_loss = ag.function(scalar_loss)
'''

# (function, argument expressions): each is traced, saved, then run eagerly here and loaded elsewhere
CALLS = [
    ("branch", "np.array([1.0, -2.0, 3.0]), 2.0"),
    ("branch", "np.array([-1.0, -2.0, -3.0]), 2.0"),
    ("halve_until_small", "np.array([40.0, -3.0], np.float32)"),
    ("halve_until_small", "np.array([0.5, 0.25], np.float32)"),
    ("row_sums", "np.arange(12.0).reshape(4, 3) / 7"),
    ("jumps", "np.array([1.0, -1.0, 2.0, 9.0, 3.0])"),
    ("jumps", "np.array([60.0, 50.0])"),
    ("stacked", "np.array([1, 2, 3], np.int32), 4"),
    ("grows", "np.arange(6.0), 4"),
    ("relaxed", "np.arange(3.0)"),
    ("relaxed", "np.arange(5.0)"),
    ("relaxed", "np.arange(7.0)"),
    ("with_gradient", "np.array([0.1, 0.2]), np.array([1.5, -0.5])"),
    ("loop_gradient", "np.array([0.1, -0.2, 0.3]), np.int64(4)"),
    ("loop_gradient", "np.array([0.5, 0.5, 0.5]), np.int64(0)"),
    ("noisy", "np.zeros(3, np.float32)"),
    ("signed", "np.arange(6.0).reshape(3, 2)"),
    ("signed", "np.arange(2.0).reshape(1, 2)"),
    ("traced_loss", "np.array([0.3, -0.7])"),
]

RUNNER = '''
import json, sys
import numpy as np
import autograph_lite as ag
from autograph_lite import nest

calls, folder = json.loads(sys.argv[1]), sys.argv[2]
assert not any(p and folder.startswith(p) for p in sys.path[1:]), sys.path
loaded = {}
report = []
for k, (name, args) in enumerate(calls):
    g = loaded.get(name) or loaded.setdefault(name, ag.load(f"{folder}/{name}.agz"))
    ag.random.set_seed(k)
    print(f"--- call {k}", flush=True)
    result = g(*eval(f"({args},)"))
    leaves, treedef = nest.flatten_with_treedef(result)
    np.savez(f"{folder}/out_{k}.npz", *[np.asarray(v) for v in leaves])
    report.append({"tree": repr(treedef), "types": [type(v).__name__ for v in leaves]})
if "traced_loss" in loaded:
    grad = ag.grad(loaded["traced_loss"])(np.array([0.3, -0.7]))
    np.save(f"{folder}/grad.npy", grad)
json.dump(report, open(f"{folder}/report.json", "w"))
'''


def _module(tmp_path):
    """The user's functions in a module file that is deleted after saving."""
    src = tmp_path / "user_source"
    src.mkdir()
    path = src / "user_functions.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("user_functions", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def _eager(module, name, args):
    fn = getattr(module, name)
    fn = getattr(fn, "python_function", fn)
    with ag.device("cpu"):  # the eager oracle: numpy
        return fn(*eval(f"({args},)"))


def _run_elsewhere(tmp_path, calls, env=None):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    root = os.path.dirname(os.path.dirname(os.path.abspath(ag.__file__)))
    env = dict(os.environ, PYTHONPATH=root, **(env or {}))
    done = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(calls), str(tmp_path / "saved")],
                          cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout, json.load(open(tmp_path / "saved" / "report.json"))


def _same(compiled, eager, what):
    compiled, eager = np.asarray(to_host(compiled)), np.asarray(to_host(eager))
    assert compiled.dtype == eager.dtype, f"{what}: {compiled.dtype} != {eager.dtype}"
    assert compiled.shape == eager.shape, what
    np.testing.assert_array_equal(compiled, eager, err_msg=what)


def test_every_category_runs_in_a_fresh_process_without_the_source(tmp_path, capsys):
    module, source = _module(tmp_path)
    (tmp_path / "saved").mkdir()
    for k, (name, args) in enumerate(CALLS):  # trace each signature
        ag.random.set_seed(k)
        getattr(module, name)(*eval(f"({args},)"))
    for name in dict(CALLS):
        ag.save(getattr(module, name), tmp_path / "saved" / f"{name}.agz")
    capsys.readouterr()
    eager, printed = [], []
    for k, (name, args) in enumerate(CALLS):
        ag.random.set_seed(k)
        print(f"--- call {k}", flush=True)
        eager.append(_eager(module, name, args))
    expected_output = capsys.readouterr().out
    source.unlink()
    sys.modules.pop("user_functions", None)

    output, report = _run_elsewhere(tmp_path, CALLS)

    assert output == expected_output
    for k, ((name, args), want) in enumerate(zip(CALLS, eager)):
        leaves, treedef = nest.flatten_with_treedef(want)
        assert report[k]["tree"] == repr(treedef), name
        assert report[k]["types"] == [type(v).__name__ for v in leaves], name
        got = np.load(tmp_path / "saved" / f"out_{k}.npz", allow_pickle=False)
        for j, leaf in enumerate(leaves):
            _same(got[f"arr_{j}"], leaf, f"{name}({args}) leaf {j}")
    expected_grad = ag.grad(module.scalar_loss)(np.array([0.3, -0.7]))
    np.testing.assert_allclose(np.load(tmp_path / "saved" / "grad.npy"), expected_grad, rtol=1e-12)


def test_loaded_function_in_process_keeps_the_call_contract(tmp_path):
    module, _ = _module(tmp_path)
    x = np.arange(6.0).reshape(3, 2)
    module.signed(x)
    ag.save(module.signed, tmp_path / "signed.agz")
    g = ag.load(tmp_path / "signed.agz")
    for want, got in zip(module.signed.python_function(x), g(x=x)):
        _same(got, want, "signed")
    assert len(g.signatures) == 1
    assert "MatMul" in str(g.signatures[0].graph) and "Pad" in str(g.signatures[0].optimized_graph)
    with pytest.raises(TypeError) as e:
        g(x.astype(np.float32))
    line = sys._getframe().f_lineno - 1
    assert str(e.value) == (f"signed(): argument 'x' does not match its saved signature: expected "
                            f"TensorSpec(shape=(None, 2), dtype=float64), got an array of shape (3, 2) and dtype "
                            f"float32: dtype float32 is not float64 (called at {__file__}:{line})")
    with pytest.raises(TypeError, match=r"signed\(\): missing a required argument: 'x'"):
        g()


def test_in_place_update_of_an_argument_is_written_back(tmp_path):
    module, _ = _module(tmp_path)
    a, b = np.arange(3.0), np.arange(3.0)
    module.updates(a)
    ag.save(module.updates, tmp_path / "u.agz")
    g = ag.load(tmp_path / "u.agz")
    result = g(b)
    np.testing.assert_array_equal(b, np.arange(3.0) + 1.0)
    assert result is b


@ag.function
def shifts_and_views(x, n):
    x += 1.0
    return x[n:], x.T[None], x


def test_a_returned_view_of_an_updated_argument_shares_the_callers_memory_after_loading(tmp_path):
    shifts_and_views(np.arange(6.0).reshape(2, 3), np.int64(1))
    ag.save(shifts_and_views, tmp_path / "v.agz")
    loaded = ag.load(tmp_path / "v.agz")
    for fn in (shifts_and_views.python_function, loaded, ag.load(tmp_path / "v.agz")):
        x = np.arange(6.0).reshape(2, 3)
        tail, transposed, whole = fn(x, np.int64(1))
        np.testing.assert_array_equal(tail, [[4.0, 5.0, 6.0]])
        assert whole is x and np.shares_memory(tail, x) and np.shares_memory(transposed, x)
        tail[0, 0] = -1.0  # eagerly the caller's array sees it
        assert x[1, 0] == -1.0 and transposed[0, 0, 1] == -1.0


def test_gradient_of_a_loaded_function_inside_a_function(tmp_path):
    module, _ = _module(tmp_path)
    w = np.array([0.3, -0.7])
    module.traced_loss(w)
    ag.save(module.traced_loss, tmp_path / "loss.agz")
    g = ag.load(tmp_path / "loss.agz")

    @ag.function
    def step(w):
        return w - 0.1 * ag.grad(g)(w)

    np.testing.assert_allclose(step(w), w - 0.1 * to_host(ag.grad(module.scalar_loss)(w)), rtol=1e-12)


def test_saving_refuses_what_a_file_cannot_hold(tmp_path):
    @ag.function
    def keeps(x, obj):
        return x * 2.0

    keeps(np.ones(2), object())
    with pytest.raises(ValueError, match=r"ag.save: a signature of keeps holds an argument a file cannot: a object"):
        ag.save(keeps, tmp_path / "k.agz")

    @ag.function
    def untraced(x):
        return x

    with pytest.raises(ValueError, match="untraced has no traces yet"):
        ag.save(untraced, tmp_path / "u.agz")
    assert not list(tmp_path.glob("*.agz")) and not list(tmp_path.glob(".ag_save_*"))


def test_loading_without_native_kernels(tmp_path):
    module, source = _module(tmp_path)
    (tmp_path / "saved").mkdir()
    calls = [("halve_until_small", "np.array([40.0, -3.0])"), ("row_sums", "np.ones((3, 2))")]
    for name, args in calls:
        getattr(module, name)(*eval(f"({args},)"))
        ag.save(getattr(module, name), tmp_path / "saved" / f"{name}.agz")
    source.unlink()
    _, report = _run_elsewhere(tmp_path, calls, env={"AG_NATIVE_KERNELS": "0", "CC": "/nonexistent/cc"})
    for k, (name, args) in enumerate(calls):
        got = np.load(tmp_path / "saved" / f"out_{k}.npz", allow_pickle=False)
        want = nest.flatten(_eager(module, name, args))
        for j, leaf in enumerate(want):
            _same(got[f"arr_{j}"], leaf, name)


def test_the_file_is_a_zip_of_json_and_npy_only(tmp_path):
    import zipfile
    module, _ = _module(tmp_path)
    module.row_sums(np.ones((2, 2)))
    ag.save(module.row_sums, tmp_path / "r.agz")
    with zipfile.ZipFile(tmp_path / "r.agz") as zf:
        names = zf.namelist()
        manifest = json.loads(zf.read("manifest.json"))
    assert names[:2] == ["manifest.json", "function.json"]
    assert all(n.startswith("arrays/") and n.endswith(".npy") for n in names[2:])
    assert manifest["format"] == "autograph_lite.saved_function" and manifest["version"] == 1
    assert set(manifest["members"]) == set(names) - {"manifest.json"}


def test_a_loaded_function_saves_again(tmp_path):
    module, _ = _module(tmp_path)
    x = np.array([1.0, -2.0, 3.0])
    module.branch(x, 2.0)
    module.branch(x.astype(np.float32), 3.0)
    ag.save(module.branch, tmp_path / "a.agz")
    again = ag.load(tmp_path / "a.agz")
    ag.save(again, tmp_path / "b.agz")
    g = ag.load(tmp_path / "b.agz")
    assert len(g.signatures) == 2
    for args in ((x, 2.0), (x.astype(np.float32), 3.0)):
        want, got = module.branch.python_function(*args), g(*args)
        for leaf_want, leaf_got in zip(nest.flatten(want), nest.flatten(got)):
            _same(leaf_got, leaf_want, "branch")
    with pytest.raises(TypeError, match=r"branch\(\): argument 'scale' does not match any of its 2 saved signatures"):
        g(x, 5.0)


def test_one_concrete_function_saves_alone(tmp_path):
    module, _ = _module(tmp_path)
    small, large = np.array([0.5, 0.25], np.float32), np.array([40.0, -3.0], np.float32)
    module.halve_until_small(small)
    concrete = module.halve_until_small.get_concrete_function(ag.TensorSpec([3], np.float64))
    ag.save(concrete, tmp_path / "one.agz")
    g = ag.load(tmp_path / "one.agz")
    assert [s.input_specs for s in g.signatures] == [(ag.TensorSpec([3], np.float64),)]
    x = np.array([9.0, -30.0, 0.5])
    for got, want in zip(g(x), module.halve_until_small.python_function(x)):
        _same(got, want, "halve_until_small")
    with pytest.raises(TypeError, match=r"argument 'x' does not match its saved signature: expected "
                                        r"TensorSpec\(shape=\(3,\), dtype=float64\), got an array of shape \(2,\)"):
        g(large)


def test_an_updated_argument_sharing_memory_with_another_is_refused(tmp_path):
    @ag.function
    def add_into(x, y):
        x += y
        return x

    a = np.arange(4.0)
    add_into(a.copy(), a.copy())
    ag.save(add_into, tmp_path / "add.agz")
    g = ag.load(tmp_path / "add.agz")
    with pytest.raises(ValueError, match=r"add_into\(\): an argument updated in place shares memory"):
        g(a, a)
    b = np.ones(4)
    g(b, a)
    np.testing.assert_array_equal(b, 1.0 + np.arange(4.0))


def test_repeated_array_calls_pick_the_same_signature(tmp_path):
    module, _ = _module(tmp_path)
    for n in (3, 5, 7):  # the third call relaxes the trace to shape (None,)
        module.relaxed(np.arange(float(n)))
    ag.save(module.relaxed, tmp_path / "r.agz")
    g = ag.load(tmp_path / "r.agz")
    for n in (3, 3, 5, 9, 9, 3):
        x = np.arange(float(n))
        got, want = g(x), module.relaxed.python_function(x)
        _same(got.total, want.total, "total")
        _same(got.count, want.count, "count")
    for _ in range(2):
        with pytest.raises(TypeError, match=r"argument 'x' does not match any of its \d saved signatures"):
            g(np.arange(3, dtype=np.int32))


@ag.function
def boxes_differ(x):
    return x * 2 if isinstance(x, np.ndarray) else x * 3


def test_a_loaded_function_fits_a_numpy_scalar_only_where_it_was_traced_with_one(tmp_path):
    boxes_differ(np.array(1.0))
    ag.save(boxes_differ, tmp_path / "a.agz")
    loaded = ag.load(tmp_path / "a.agz")
    assert loaded(np.array(1.0)) == 2.0
    with pytest.raises(TypeError, match=r"argument 'x' .*got a numpy scalar, but this trace was made for a 0-d array"):
        loaded(np.float64(1.0))
    boxes_differ(np.float64(1.0))
    ag.save(boxes_differ, tmp_path / "b.agz")
    loaded = ag.load(tmp_path / "b.agz")
    assert loaded(np.array(1.0)) == 2.0 and loaded(np.float64(1.0)) == 3.0
