"""Differential test helpers: the eager run is the oracle for the compiled run."""
import os
import warnings

import numpy as np
import autograph_lite as ag
from autograph_lite.runtime import devices

TEST_DEVICE = os.environ.get("AG_TEST_DEVICE", "cpu")


def to_host(value):
    """numpy copy of a value that may live on a device (cupy, the stand-in), containers too; a
    0-d device array (a device has no scalars) as the numpy scalar eager numpy gives."""
    if type(value) in (tuple, list):
        return type(value)(to_host(v) for v in value)
    if type(value) is dict:
        return {k: to_host(v) for k, v in value.items()}
    if not devices.is_device_array(value):
        return value
    value = value.get()
    return value[()] if value.ndim == 0 else value


def assert_identical(eager, compiled):
    """Same structure, Python/numpy types, dtypes, shapes and bits (NaN where NaN). A device has no
    scalars: its 0-d array stands for eager's 0-d ndarray as for a numpy scalar."""
    eager = to_host(eager)
    if isinstance(eager, tuple):
        assert type(compiled) is type(eager) and len(compiled) == len(eager)  # a namedtuple (QRResult) too
        for e, c in zip(eager, compiled):
            assert_identical(e, c)
        return
    if type(eager) is np.ndarray and eager.ndim == 0 and devices.is_device_array(compiled):
        compiled = compiled.get()
    compiled = to_host(compiled)
    assert type(compiled) is type(eager), f"{type(compiled)} != eager {type(eager)}"
    e, c = np.asarray(eager), np.asarray(compiled)
    assert c.dtype == e.dtype and c.shape == e.shape
    if TEST_DEVICE == "gpu" and e.dtype.kind in "fc":
        _within_device_ulps(e, c)
        return
    assert np.array_equal(c, e, equal_nan=e.dtype.kind in "fc"), f"{c} != eager {e}"


def _within_device_ulps(e, c):
    """A GPU's math library (cupy's sin, exp, pow, ...) rounds some results 1-2 ulp from numpy's:
    the same NaNs, infinities and signs of zero where numpy has them, the other values within 4 ulp
    (the step of the larger of the two)."""
    for part in ((np.real, np.imag) if e.dtype.kind == "c" else (lambda a: a,)):
        pe, pc = part(e), part(c)
        special = ~np.isfinite(pe) | ~np.isfinite(pc)
        assert np.array_equal(pe[special], pc[special], equal_nan=True), f"{c} != eager {e}"
        finite_e, finite_c = pe[~special], pc[~special]
        step = np.spacing(np.maximum(np.abs(finite_e), np.abs(finite_c)))
        assert np.all(np.abs(finite_e - finite_c) <= 4 * step), f"{c} != eager {e} (beyond 4 ulp)"


def assert_same(eager, compiled):
    """Compiled output equals the eager oracle: structure, values, dtypes, shapes."""
    eager, compiled = to_host(eager), to_host(compiled)
    if isinstance(eager, (tuple, list, dict)):
        assert type(compiled) is type(eager), f"structure: {type(compiled)} vs {type(eager)}"
        assert len(compiled) == len(eager)
        items = eager.items() if isinstance(eager, dict) else enumerate(eager)
        for k, v in items:
            assert_same(v, compiled[k])
        return
    if eager is None or isinstance(eager, str):
        assert compiled == eager
        return
    e, c = np.asarray(eager), np.asarray(compiled)
    if type(eager) in (bool, int, float):
        # a Python scalar is weak (NEP 50): the graph may carry it with the dtype it meets
        kinds = {bool: "b", int: "biu", float: "f"}[type(eager)]
        assert c.dtype.kind in kinds, f"dtype {c.dtype} for eager Python {type(eager).__name__}"
    else:
        assert c.dtype == e.dtype, f"dtype {c.dtype} != eager {e.dtype}"
    assert c.shape == e.shape, f"shape {c.shape} != eager {e.shape}"
    np.testing.assert_allclose(c, e, rtol=1e-6, atol=1e-6, equal_nan=True)


def identical_both_ways(fn, *args):
    """fn's eager result and its compiled one, identical (types, dtypes, shapes, bits); numpy's
    floating-point warnings are not compared here. Returns the compiled result."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        eager = fn(*args)
        compiled = ag.function(fn)(*args)
    if TEST_DEVICE == "gpu" and _same_as_device_eager(fn, args, compiled):
        return compiled
    assert_identical(eager, compiled)
    return compiled


def _same_as_device_eager(fn, args, compiled):
    """On a GPU: whether `compiled` is identical to `fn` run eagerly on the device's arrays (cupy's
    own numerics: its complex functions at infinities, its rounding), where cupy has what `fn` calls."""
    xp = devices.current().xp
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            device_eager = fn(*(xp.asarray(a) if type(a) is np.ndarray else a for a in args))
        assert_identical(device_eager, compiled)
    except Exception:  # noqa: BLE001 - cupy lacks it, or answers otherwise: numpy's eager is the oracle
        return False
    return True


def _outcome(fn, args):
    """fn's result (or the exception it raised, as its type and text) and numpy's warnings (type, text)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn(*args)
        except Exception as e:  # noqa: BLE001 - the exception is part of what is compared
            result = (type(e), str(e).split(" (at ")[0])
    return result, [(w.category, str(w.message)) for w in caught]


def _bits(value):
    """A result's floats as their bit patterns (-0.0 and NaN's sign told apart), containers too."""
    if type(value) in (tuple, list):
        return [_bits(v) for v in value]
    if isinstance(value, (float, np.floating, np.complexfloating, np.ndarray)) and np.asarray(value).dtype.kind in "fc":
        floats = np.ascontiguousarray(value)
        return floats.view(f"u{floats.dtype.itemsize // (2 if floats.dtype.kind == 'c' else 1)}").tolist()
    return None  # not floats: assert_identical compared them


def same_every_call(fn, *args, calls=4):
    """`fn` compiled, called `calls` times under AG_NATIVE=off and again under AG_NATIVE=always: each
    call gives eager's result (identical, floats bit for bit), warnings (category and text, in order; on the CPU) or
    exception (type and text, less the location the compiled one adds). Returns eager's result."""
    eager, eager_warnings = _outcome(fn, args)
    saved = os.environ.get("AG_NATIVE")
    try:
        for native in ("off", "always"):
            os.environ["AG_NATIVE"] = native
            compiled_fn = ag.function(fn)
            for call in range(calls):
                compiled, compiled_warnings = _outcome(compiled_fn, args)
                where = f"AG_NATIVE={native}, call {call + 1}"
                if isinstance(eager, tuple) and len(eager) == 2 and isinstance(eager[0], type) \
                        and issubclass(eager[0], Exception):
                    assert type(compiled) is tuple and compiled[0] is eager[0], (where, compiled, eager)
                    assert compiled[1] == eager[1], (where, compiled, eager)
                else:
                    assert_identical(eager, compiled)
                    if TEST_DEVICE == "cpu":
                        assert _bits(compiled) == _bits(eager), (where, compiled, eager)
                if TEST_DEVICE == "cpu":  # a GPU raises no floating-point flags
                    assert compiled_warnings == eager_warnings, (where, compiled_warnings, eager_warnings)
    finally:
        if saved is None:
            os.environ.pop("AG_NATIVE", None)
        else:
            os.environ["AG_NATIVE"] = saved
    return eager


def on_fresh_arguments(fn, *make_args, same=assert_same):
    """`fn` eagerly and compiled (twice, the second from the cache), each on fresh arguments from
    `make_args`: results and the arguments afterwards compared with `same`. Returns (eager result,
    eager arguments, last compiled result, its arguments)."""
    eager_args = [a() for a in make_args]
    eager = fn(*eager_args)
    compiled_fn = ag.function(fn)
    for _ in range(2):
        args = [a() for a in make_args]
        compiled = compiled_fn(*args)
        same(eager, compiled)
        for e, c in zip(eager_args, args):
            same(e, c)
    return eager, eager_args, compiled, args


def run_both(fn, *args, **kwargs):
    """Run `fn` eagerly (on the CPU: the oracle is numpy) and under @ag.function (on the test
    device); assert equal; return (eager, compiled, Function)."""
    with ag.device("cpu"):
        eager = fn(*args, **kwargs)
    compiled_fn = ag.function(fn)
    compiled = compiled_fn(*args, **kwargs)
    assert_same(eager, compiled)
    return eager, compiled, compiled_fn


def check(fn, *inputs, traces=None):
    """`fn` compiled once gives its eager results for every argument tuple in `inputs`."""
    compiled = ag.function(fn)
    for args in inputs:
        assert_same(fn(*args), compiled(*args))
    if traces is not None:
        assert compiled.trace_count == traces, f"traced {compiled.trace_count} times, expected {traces}"
    return compiled


def f32(*values):
    return np.array(values, dtype=np.float32)


def numeric_grad(fn, args, argnum, eps=1e-6):
    """Central differences of scalar `fn` with respect to float64 array `args[argnum]`."""
    args = list(args)
    x = np.asarray(args[argnum], dtype=np.float64)
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        for sign in (1, -1):
            moved = x.copy()
            moved[idx] += sign * eps
            args[argnum] = moved
            grad[idx] += sign * float(fn(*args)) / (2 * eps)
    return grad


def check_grad(fn, *args, argnums=0, rtol=1e-5, atol=1e-7):
    """ag.grad of `fn` (eagerly and inside @ag.function) equals central differences."""
    positions = (argnums,) if isinstance(argnums, int) else argnums
    expected = [numeric_grad(fn, args, p) for p in positions]
    eager = ag.grad(fn, argnums)(*args)
    compiled = ag.function(lambda *a: ag.grad(fn, argnums)(*a))(*args)
    for got in (eager, compiled):
        got = to_host((got,) if isinstance(argnums, int) else got)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
    return eager


def force_native(monkeypatch):
    """Native code on for a test of native code, whatever the suite runs under (AG_NATIVE=off
    and AG_NATIVE_KERNELS=0 turn it off; AG_NATIVE=always is kept: it only tiers up sooner),
    and on the CPU, whatever the suite's device: native code is the CPU's backend."""
    monkeypatch.setattr(devices._placement, "device", devices.CPU)
    monkeypatch.delenv("AG_NATIVE_KERNELS", raising=False)
    if os.environ.get("AG_NATIVE") == "off":
        monkeypatch.delenv("AG_NATIVE")


def plan_after_tier_up(fn, *args):
    """Call compiled fn past its native tier-up (TIER_UP_AFTER + 2 calls), each checked identical to
    eager (RuntimeWarnings ignored both ways); the plan of its trace, for what runs native."""
    from autograph_lite.runtime.native import loops
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        eager = fn(*args)
        compiled = ag.function(fn)
        for _ in range(loops.TIER_UP_AFTER + 2):
            assert_identical(eager, compiled(*args))
    return compiled.get_concrete_function(*args).plan


def native_regions(fn, *args, exact=True):
    """Call compiled fn past its native tier-up, each call on fresh copies of `args` against eager's
    call on its own: the results and the arguments after the call must agree (bit for bit where
    `exact`, else within NPBench's tolerance). Returns (the compiled function, its plan's regions)."""
    from autograph_lite.runtime.native import loops
    compiled = ag.function(fn)
    for _ in range(loops.TIER_UP_AFTER + 2):
        eager_args = [np.copy(a) for a in args]
        compiled_args = [np.copy(a) for a in args]
        eager = fn(*eager_args)
        result = compiled(*compiled_args)
        for e, c in zip([eager, *eager_args], [result, *compiled_args]):
            if exact:
                assert_identical(e, c)
            elif e is not None:
                for e_item, c_item in zip(e if isinstance(e, tuple) else (e,), c if isinstance(c, tuple) else (c,)):
                    np.testing.assert_allclose(c_item, e_item, rtol=1e-6, atol=1e-8)
    return compiled, compiled.get_concrete_function(*compiled_args).plan.native  # (np.copy: 0-d arrays)


def cpu_only(reason):
    """Skips a test under AG_TEST_DEVICE=gpu/standin: it tests something only the CPU has."""
    import pytest
    return pytest.mark.skipif(TEST_DEVICE != "cpu", reason=f"AG_TEST_DEVICE={TEST_DEVICE}: {reason}")


def fill_and_scan(x):
    """numpy's API and item assignment as a user writes them (the device tests run it on their arrays)."""
    out = np.zeros_like(x)
    for i in range(1, x.shape[0]):
        out[i] = out[i - 1] + np.sin(x[i])
    out[::2] *= 2
    return np.cumsum(out) + np.clip(x, -1, 1).argmax()
