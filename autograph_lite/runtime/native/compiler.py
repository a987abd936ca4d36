"""C source -> loaded shared library, through the system C compiler, cached on disk.

The compiler is found once (`$CC`, else `cc`/`gcc`/`clang` on PATH). A library is
keyed by a hash of its source, the flags, the compiler's version and the CPU model
(the code is built with `-march=native`), and kept under `$AG_CACHE_DIR` (default
`~/.cache/autograph_lite/kernels`), so a kernel is compiled once per machine. Writes
are atomic (build in a temporary file, then rename), so processes may share the cache.

`load(source)` returns the `ctypes.CDLL`, or None when native kernels are off
(`AG_NATIVE_KERNELS=0`), no compiler is found, or the compiler refused the source;
callers then run their numpy path. A refusal is our bug, so it warns once with the
compiler's message; a missing compiler is only logged.
"""
import ctypes
import functools
import hashlib
import logging
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import warnings

log = logging.getLogger("autograph_lite.native")

FLAGS = ["-O3", "-march=native", "-fPIC", "-shared", "-std=c11",
         # numpy's results: no FMA contraction, no fast-math reassociation; wrapping ints
         "-ffp-contract=off", "-fwrapv",
         # lets loops over libm calls vectorize (we never read errno or trap flags)
         "-fno-math-errno", "-fno-trapping-math"]

_lock = threading.Lock()
_loaded = {}


def enabled():
    return os.environ.get("AG_NATIVE_KERNELS", "1") != "0" and compiler() is not None


@functools.lru_cache(maxsize=None)
def compiler():
    """(path, version line) of the C compiler, or None."""
    names = [os.environ["CC"]] if os.environ.get("CC") else ["cc", "gcc", "clang"]
    for name in names:
        path = shutil.which(name)
        if path is None:
            continue
        try:
            version = subprocess.run([path, "--version"], capture_output=True, text=True,
                                     timeout=30).stdout.splitlines()[:1]
        except (OSError, subprocess.SubprocessError):
            continue
        return path, (version or [""])[0]
    log.info("no C compiler found (tried %s): fused kernels run on numpy", ", ".join(names))
    return None


@functools.lru_cache(maxsize=None)
def vector_math():
    """libm functions with SIMD variants this machine can link (glibc's libmvec on x86-64)."""
    if platform.machine() not in ("x86_64", "AMD64") or not sys.platform.startswith("linux"):
        return frozenset()
    libc, version = platform.libc_ver()
    if libc != "glibc":
        return frozenset()
    major_minor = tuple(int(p) for p in version.split(".")[:2])
    names = set()
    if major_minor >= (2, 22):
        names |= {"exp", "log", "pow", "sin", "cos"}
    if major_minor >= (2, 35):
        names |= {"tanh", "expm1", "log1p", "sinh", "cosh"}
    return frozenset(names)


def cache_dir():
    root = os.environ.get("AG_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "autograph_lite")
    return os.path.join(root, "kernels")


@functools.lru_cache(maxsize=None)
def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "flags")):
                    return line
    except OSError:
        pass
    return platform.processor()


def load(source):
    """The shared library built from `source` (C11), or None (see the module docstring)."""
    if not enabled():
        return None
    path, version = compiler()
    libs = ["-lmvec", "-lm"] if vector_math() else ["-lm"]
    key = hashlib.sha256("\0".join([source, *FLAGS, *libs, version, _cpu_model()]).encode()).hexdigest()[:24]
    with _lock:
        if key in _loaded:
            return _loaded[key]
        library = _build(path, source, FLAGS + libs, key)
        _loaded[key] = library
        return library


def _build(path, source, flags, key):
    directory = cache_dir()
    target = os.path.join(directory, f"k{key}.so")
    if not os.path.exists(target):
        try:
            os.makedirs(directory, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=directory) as tmp:
                c_file, so_file = os.path.join(tmp, "k.c"), os.path.join(tmp, "k.so")
                with open(c_file, "w") as f:
                    f.write(source)
                # flags after the source file: libraries must follow the objects that use them
                done = subprocess.run([path, c_file, "-o", so_file, *flags],
                                      capture_output=True, text=True, timeout=120)
                if done.returncode != 0:
                    warnings.warn(f"autograph_lite: the C compiler rejected a generated kernel; "
                                  f"it runs on numpy instead.\n{done.stderr[-2000:]}",
                                  RuntimeWarning, stacklevel=2)
                    return None
                os.replace(so_file, target)
        except (OSError, subprocess.SubprocessError) as e:
            log.info("native kernel build failed (%s): running on numpy", e)
            return None
    return ctypes.CDLL(target)
