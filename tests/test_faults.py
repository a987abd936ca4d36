"""Faults a real machine has, each in a fresh process with its own kernel cache: broken or
missing compilers, damaged and foreign cache entries, unusable cache directories,
concurrent builders, Ctrl-C in a long loop. Each run must give eager's results on every
call (before and after the tier-up to C), at most one warning, and never load a library
that is not ours."""
import hashlib
import json
import os
import pathlib
import select
import signal
import subprocess
import sys
import time

import pytest

from autograph_lite.runtime.native import compiler, entry

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAS_CC = compiler.compiler() is not None
needs_cc = pytest.mark.skipif(not HAS_CC, reason="no C compiler on this machine")
HAS_HEADERS = HAS_CC and entry._python_include() is not None

# A tiny scalar loop: its third call builds (or loads) the C loop. Prints a JSON report.
CHILD = r"""
import json, warnings
import numpy as np
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import autograph_lite as ag

    def f(n):
        acc = 0
        i = 0
        while i < n:
            acc = acc + i * i - (i // 3)
            i += 1
        return acc

    g = ag.function(f)
    n = np.int64(1000)
    ok = all(g(n) == f(n) and type(g(n)) is type(f(n)) for _ in range(5))
    loops = g.get_concrete_function(n).plan.native_loops
print(json.dumps({"ok": ok, "native": bool(loops and loops[0].fn),
                  "entry": bool(loops) and type(loops[0].call).__name__ == "Entry",
                  "warnings": [f"{w.category.__name__}: {w.message}" for w in caught]}))
"""


def script(code, directory):
    """`code` as a file (the converter reads a function's source from its file)."""
    path = directory / f"child{abs(hash(code))}.py"
    path.write_text(code)
    return str(path)


def child_env(**changes):
    """The environment of a child testing native code: native code on whatever the suite runs
    under (AG_NATIVE=always kept), PYTHONPATH to this checkout, then `changes`."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("AG_NATIVE_KERNELS", None)
    if env.get("AG_NATIVE") == "off":
        del env["AG_NATIVE"]
    env.update(changes)
    return env


def run_child(env_changes, code=CHILD, cache=None):
    env = child_env()
    if cache is not None:
        env["AG_CACHE_DIR"] = str(cache)
    env.update(env_changes)
    directory = env.get("AG_TEST_SCRIPTS") or os.path.dirname(str(cache))
    done = subprocess.run([sys.executable, script(code, pathlib.Path(directory))], env=env,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def assert_report(report, native, warnings=(0, 1), match=None, entry=None):
    assert report["ok"], report
    assert report["native"] == native, report
    if entry is not None:  # called through the C entry module (runtime/native/entry.py), not ctypes
        assert report["entry"] == entry, report
    assert warnings[0] <= len(report["warnings"]) <= warnings[1], report
    if match is not None:
        assert match in report["warnings"][0], report
    for w in report["warnings"]:  # what failed, how to fix it, how to silence it
        assert w.startswith("NativeKernelWarning") and "AG_NATIVE_KERNELS=0" in w, report


def fake_compiler(tmp_path, body):
    script = tmp_path / "fake-cc"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return str(script)


# --- broken or missing compilers ------------------------------------------------------------

@pytest.mark.parametrize("cc, match", [("/bin/false", "rejected a generated kernel"),
                                       ("/bin/true", "wrote no library")])
def test_a_compiler_that_fails_or_writes_nothing(tmp_path, cc, match):
    assert_report(run_child({"CC": cc}, cache=tmp_path / "cache"), native=False, warnings=(1, 1),
                  match=match)


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads process states from /proc")
def test_a_compiler_past_its_timeout_is_killed_with_the_processes_it_started(tmp_path):
    """A compiler driver that hangs in a child (as gcc waits on cc1) is killed with that child:
    killing the driver alone left cc1 running for 40 minutes."""
    pid_file = tmp_path / "child.pid"
    driver = fake_compiler(tmp_path, f"sleep 600 & echo $! > {pid_file}\nwait\n")
    with pytest.raises(subprocess.TimeoutExpired):
        compiler.run_tool([driver], str(tmp_path), timeout=1)
    child = int(pid_file.read_text())
    deadline = time.time() + 10
    while time.time() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid):
    """Whether `pid` runs (a zombie waiting for its reaper does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_compiler_that_writes_garbage_as_the_library(tmp_path):
    cc = fake_compiler(tmp_path, 'while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done\n'
                                 '[ -n "$out" ] && head -c 4096 /dev/urandom > "$out"\nexit 0\n')
    assert_report(run_child({"CC": cc}, cache=tmp_path / "cache"), native=False, warnings=(1, 1),
                  match="cannot be used")


@needs_cc
def test_a_compiler_that_fails_on_the_entry_module_only(tmp_path):
    """The kernels build, the C entry module does not: calls go through ctypes, one warning."""
    cc = fake_compiler(tmp_path, f'grep -q PyInit_ k.c && exit 1\nexec {compiler.compiler()[0]} "$@"\n')
    assert_report(run_child({"CC": cc}, cache=tmp_path / "cache"), native=True, warnings=(1, 1),
                  match="the C entry module", entry=False)


@needs_cc
@pytest.mark.parametrize("damage", ["truncated", "flipped"])
def test_a_damaged_entry_module_is_rebuilt(tmp_path, damage):
    cache, _, _ = populated_cache(tmp_path)
    [manifest] = kernel_manifests(cache / "kernels", entry_module=True)
    [library] = (cache / "kernels").glob(f"{manifest.stem}-*.so")
    data = library.read_bytes()
    library.write_bytes(data[:len(data) // 2] if damage == "truncated" else data[:-100] + bytes(100))
    assert_report(run_child({}, cache=cache), native=True, warnings=(0, 0), entry=True)
    assert_cache_is_sound(manifest)


@pytest.mark.parametrize("env, match", [({"CC": "no-such-cc-here"}, "was not found"),
                                        ({"PATH": "/nonexistent"}, "no C compiler")])
def test_a_missing_compiler(tmp_path, env, match):
    env = dict(env)
    if "PATH" in env:
        env["CC"] = ""
    assert_report(run_child(env, cache=tmp_path / "cache"), native=False, warnings=(1, 1), match=match)


def test_native_kernels_off_is_silent(tmp_path):
    assert_report(run_child({"AG_NATIVE_KERNELS": "0", "CC": "/bin/false"}, cache=tmp_path),
                  native=False, warnings=(0, 0))


# --- unusable cache directories: a private directory for the process instead -----------------

@needs_cc
def test_a_cache_path_that_is_a_file(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    assert_report(run_child({}, cache=tmp_path / "file"), native=True, warnings=(1, 1),
                  match="cannot be created")


@needs_cc
def test_a_cache_that_cannot_be_created(tmp_path):
    assert_report(run_child({"AG_TEST_SCRIPTS": str(tmp_path)}, cache="/proc/autograph-lite-cache"),
                  native=True, warnings=(1, 1),
                  match="cannot be created")


@needs_cc
def test_a_read_only_cache(tmp_path):
    cache = tmp_path / "cache"
    (cache / "kernels").mkdir(parents=True, mode=0o700)
    (cache / "kernels").chmod(0o500)
    try:  # as root the directory is still writable: then it is simply used
        expected = (0, 0) if os.access(cache / "kernels", os.W_OK) else (1, 1)
        assert_report(run_child({}, cache=cache), native=True, warnings=expected)
    finally:
        (cache / "kernels").chmod(0o700)


# --- damaged cache entries: detected, discarded, rebuilt, silently -----------------------------

def populated_cache(tmp_path):
    cache = tmp_path / "cache"
    assert_report(run_child({}, cache=cache), native=True, warnings=(0, 0), entry=HAS_HEADERS)
    assert (cache / "kernels").stat().st_mode & 0o777 == 0o700
    [manifest] = kernel_manifests(cache / "kernels")
    [library] = (cache / "kernels").glob(f"{manifest.stem}-*.so")
    return cache, manifest, library


def kernel_manifests(directory, entry_module=False):
    """The manifests of the kernels in `directory` (or of the C entry module, runtime/native/entry.py)."""
    return [m for m in directory.glob("*.sha256")
            if any(entry_module == (b"PyInit_autograph_lite_entry" in so.read_bytes())
                   for so in directory.glob(f"{m.stem}-*.so"))]


def assert_cache_is_sound(manifest):
    digest = manifest.read_text().strip()
    [library] = manifest.parent.glob(f"{manifest.stem}-{digest[:16]}.so")
    assert hashlib.sha256(library.read_bytes()).hexdigest() == digest


@needs_cc
@pytest.mark.parametrize("damage", ["truncated", "empty", "random"])
def test_a_damaged_library_is_rebuilt(tmp_path, damage):
    cache, manifest, library = populated_cache(tmp_path)
    data = library.read_bytes()
    library.write_bytes({"truncated": data[:len(data) // 2], "empty": b"",
                         "random": os.urandom(len(data))}[damage])
    assert_report(run_child({}, cache=cache), native=True, warnings=(0, 0))
    assert_cache_is_sound(manifest)


@needs_cc
def test_a_damaged_manifest_is_rebuilt(tmp_path):
    cache, manifest, _ = populated_cache(tmp_path)
    manifest.write_bytes(os.urandom(64))
    assert_report(run_child({}, cache=cache), native=True, warnings=(0, 0))
    assert_cache_is_sound(manifest)


def build_library(tmp_path, source, name):
    (tmp_path / f"{name}.c").write_text(source)
    path = tmp_path / f"{name}.so"
    subprocess.run([compiler.compiler()[0], str(tmp_path / f"{name}.c"), "-shared", "-fPIC",
                    "-o", str(path)], check=True)
    return path


def plant(manifest, library_path, mode=0o644):
    """Make the cache entry of `manifest` name the library at `library_path` (a matching sha256)."""
    data = library_path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    target = manifest.parent / f"{manifest.stem}-{digest[:16]}.so"
    target.write_bytes(data)
    target.chmod(mode)
    manifest.write_text(digest + "\n")
    return target


@needs_cc
def test_a_valid_library_without_the_symbol_is_rebuilt(tmp_path):
    cache, manifest, _ = populated_cache(tmp_path)
    plant(manifest, build_library(tmp_path, "int other(void) { return 1; }\n", "other"))
    assert_report(run_child({}, cache=cache), native=True, warnings=(0, 0))
    assert_cache_is_sound(manifest)


# --- foreign cache entries: never loaded -------------------------------------------------------

def marker_library(tmp_path):
    marker = tmp_path / "MARKER"
    source = ('#include <stdio.h>\n__attribute__((constructor)) static void planted(void) {\n'
              f'    FILE *f = fopen("{marker}", "w"); if (f) fclose(f);\n}}\n'
              "int loop(void) { return 0; }\n")
    return build_library(tmp_path, source, "planted"), marker


@needs_cc
@pytest.mark.parametrize("where", ["group-writable kernels dir", "group-writable cache root"])
def test_a_shared_cache_directory_is_not_loaded_from(tmp_path, where):
    cache, manifest, _ = populated_cache(tmp_path)
    library, marker = marker_library(tmp_path)
    plant(manifest, library)
    shared = cache / "kernels" if where.endswith("kernels dir") else cache
    shared.chmod(0o775)
    assert_report(run_child({}, cache=cache), native=True, warnings=(1, 1),
                  match="another user")
    assert not marker.exists(), "a planted library was loaded"


@needs_cc
def test_a_foreign_library_in_our_cache_is_not_loaded(tmp_path):
    cache, manifest, _ = populated_cache(tmp_path)
    library, marker = marker_library(tmp_path)
    planted = plant(manifest, library, mode=0o666)   # writable by others
    assert_report(run_child({}, cache=cache), native=True, warnings=(0, 0))
    assert not marker.exists(), "a planted library was loaded"
    if os.getuid() == 0:  # owned by another user
        planted = plant(manifest, library)
        os.chown(planted, 65534, 65534)
        assert_report(run_child({}, cache=cache), native=True, warnings=(0, 0))
        assert not marker.exists(), "a planted library was loaded"


@needs_cc
@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to chown")
def test_a_cache_directory_owned_by_another_user_is_not_used(tmp_path):
    cache, manifest, _ = populated_cache(tmp_path)
    library, marker = marker_library(tmp_path)
    plant(manifest, library)
    os.chown(cache / "kernels", 65534, 65534)
    assert_report(run_child({}, cache=cache), native=True, warnings=(1, 1), match="another user")
    assert not marker.exists(), "a planted library was loaded"


# --- concurrent builders ---------------------------------------------------------------------

THREADED = CHILD.replace("""    g = ag.function(f)
    n = np.int64(1000)
    ok = all(g(n) == f(n) and type(g(n)) is type(f(n)) for _ in range(5))
    loops = g.get_concrete_function(n).plan.native_loops
""", """    import threading
    n = np.int64(1000)
    fns = [ag.function(f) for _ in range(4)]
    oks = []
    def work(g):
        oks.append(all(g(n) == f(n) and type(g(n)) is type(f(n)) for _ in range(5)))
    threads = [threading.Thread(target=work, args=(g,)) for g in fns]
    [t.start() for t in threads]
    [t.join() for t in threads]
    ok = len(oks) == 4 and all(oks)
    loops = [l for g in fns for l in g.get_concrete_function(n).plan.native_loops if l.fn]
""")


@needs_cc
def test_concurrent_builders_of_one_kernel(tmp_path):
    env = child_env(AG_CACHE_DIR=str(tmp_path / "cache"))
    children = [subprocess.Popen([sys.executable, script(THREADED, tmp_path)], env=env, cwd=ROOT,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(4)]
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        assert_report(json.loads(out.strip().splitlines()[-1]), native=True, warnings=(0, 0))
    for manifest in (tmp_path / "cache" / "kernels").glob("*.sha256"):  # the kernel and the entry module
        assert_cache_is_sound(manifest)
    assert len(kernel_manifests(tmp_path / "cache" / "kernels")) == 1


# --- Ctrl-C ------------------------------------------------------------------------------------

LONG_LOOP = r"""
import sys
import numpy as np
import autograph_lite as ag

def spin(n):
    acc = 0
    i = np.int64(0)
    while i < n:
        acc = (acc + i) % 1000003
        i += 1
    return acc

g = ag.function(spin)
for _ in range(4):
    g(np.int64(10))
loops = g.get_concrete_function(np.int64(1)).plan.native_loops
print("native" if loops and loops[0].fn else "python", flush=True)
g(np.int64(10 ** 12))
print("finished", flush=True)
"""


NESTED_LOOP = LONG_LOOP.replace("""    while i < n:
        acc = (acc + i) % 1000003
        i += 1
""", """    while i < n:
        j = np.int64(0)
        while j < ag.minimum(n, 20000):   # nested iterations count toward the pause too
            acc = (acc + j) % 1000003
            j += 1
        i += 1
""").replace("g(np.int64(10))", "g(np.int64(1))")


def _as_a_shell_starts_it():
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])


@pytest.mark.parametrize("code, native", [(LONG_LOOP, "1"), (NESTED_LOOP, "1"), (LONG_LOOP, "0")],
                         ids=["C loop", "nested C loops", "AG_NATIVE_KERNELS=0"])
def test_ctrl_c_stops_a_long_loop(tmp_path, code, native):
    if native == "1" and not HAS_CC:
        pytest.skip("no C compiler on this machine")
    env = child_env(AG_CACHE_DIR=str(tmp_path), AG_NATIVE_KERNELS=native)
    inherited = signal.getsignal(signal.SIGINT), signal.pthread_sigmask(signal.SIG_BLOCK, [])
    # a user's Ctrl-C reaches a process whose SIGINT is neither ignored nor blocked: a child
    # inherits both from the process that starts it (pytest's, after the suite's thread pools and
    # clusters), so the child starts as a shell's would
    child = subprocess.Popen([sys.executable, script(code, tmp_path)], env=env, cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=_as_a_shell_starts_it)
    try:
        assert select.select([child.stdout], [], [], 60)[0], "the child did not start its loop"
        assert child.stdout.readline().strip() == ("native" if native == "1" else "python")
        time.sleep(0.3)  # well inside the 10**12 iterations
        assert child.poll() is None
        child.send_signal(signal.SIGINT)
        start = time.monotonic()
        try:
            out, err = child.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the child ran on 10 s after Ctrl-C (SIGINT in the suite's process: {inherited})")
        elapsed = time.monotonic() - start
    finally:
        if child.poll() is None:
            child.kill()
    assert elapsed < 2, f"Ctrl-C took {elapsed:.2f} s (SIGINT here: {inherited})"
    assert "KeyboardInterrupt" in err and "finished" not in out
    assert child.returncode != 0
