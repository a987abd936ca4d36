"""C source -> loaded shared library, through the system C compiler, cached on disk.

The compiler is found once (`$CC`, else `cc`/`gcc`/`clang` on PATH). A library is
keyed by a hash of its source, the flags, the compiler's version and the CPU model
(the code is built with `-march=native`), and kept under `$AG_CACHE_DIR/kernels`
(default `$XDG_CACHE_HOME/autograph_lite/kernels`, i.e. `~/.cache/...`), so a kernel is
compiled once per machine.

The cache is verified, not trusted:
- its directories are created with mode 0700; a directory that is not ours, or that
  group or others can write (or whose parent they can, without the sticky bit), is never
  read: the process builds in a private temporary directory instead (warned);
- `k<key>.sha256` names the library `k<key>-<digest>.so` and holds its sha256; a
  library is loaded only if it is a regular file of ours, not group/other-writable,
  whose bytes match; a missing, damaged or foreign entry, or a library without the
  expected symbol, is discarded and rebuilt;
- writes are atomic (build in a private temporary directory, rename the content-named
  library, then rename the manifest), so processes and threads may build at once.

Builds may run in the background: with `wait=False` a library that must be compiled is
compiled on a worker thread and the call returns PENDING at once (the caller runs its numpy
path meanwhile); a later call loads it from the cache. The worker only compiles: loading,
and any warning, happen on the caller's thread at its line (a failed background build is
compiled once more there, so it warns as a foreground build does). `wait_for_builds()` waits
for every build started; `AG_NATIVE_BUILD=wait` (and `AG_NATIVE=always`) makes every build a
foreground one.

`load(source, symbol)` returns the C function `symbol` of the library, or None when
native kernels are off (`AG_NATIVE_KERNELS=0`) or anything failed (no compiler, a
failed build, a library that cannot be loaded); callers then run their numpy path, with
the same results. Every failure warns once per process (`NativeKernelWarning`) with
what failed, how to fix it and how to silence it; later ones are only logged.
"""
import atexit
import contextlib
import ctypes
import functools
import hashlib
import importlib.machinery
import importlib.util
import logging
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import warnings

from ... import disk_cache
from ...errors import is_internal_file

log = logging.getLogger("autograph_lite.native")

FLAGS = ["-O3", "-march=native", "-fPIC", "-shared", "-std=c11",
         # numpy's results: no FMA contraction, no fast-math reassociation; wrapping ints
         "-ffp-contract=off", "-fwrapv",
         # GCC 12.2's straight-line (SLP) vectorizer at -O3 with AVX2 miscompiled a bool -> int64
         # max reduction here (fuzzer seeds 23001577, 23008348); the loop vectorizer stays on
         "-fno-tree-slp-vectorize",
         # lets loops over libm calls vectorize (we never read errno or trap flags)
         "-fno-math-errno", "-fno-trapping-math"]

_lock = threading.Lock()
_loaded = {}          # key -> the loaded C function, or None after a failure
_usable_dirs = {}     # configured cache directory -> the directory used (it, or a private one)
_private = None       # this process's private build directory, once one is needed
_warned = False
_pending = {}         # key -> the Future of its background build
_workers = None       # the background builders, once one is needed
PENDING = "pending"   # what a wait=False load returns while its library is being built


def background_builds():
    """Whether a build may run on a worker thread: not with AG_NATIVE_BUILD=wait, nor with
    AG_NATIVE=always (native code from the first run: built before it)."""
    return os.environ.get("AG_NATIVE_BUILD", "background") != "wait" and os.environ.get("AG_NATIVE") != "always"


def wait_for_builds():
    """Wait for every background build started so far (benchmarks: time the native code)."""
    with _lock:
        futures = list(_pending.values())
    for future in futures:
        future.exception()


def _forget_workers():  # a forked child has none of its parent's threads
    global _workers
    _workers = None
    _pending.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)

_SILENCE = "Set AG_NATIVE_KERNELS=0 to run on numpy without trying (this also silences the warning)."
_FIX_CC = "Set CC to a working C compiler (gcc or clang)."


# what a library is, and what runs where it cannot be built (in the one warning)
KERNEL = ("a generated kernel", "it runs on numpy instead (same results)")
ENTRY_MODULE = ("the C entry module (runtime/native/entry.c)",
                "native code is called through ctypes instead (same results, slower calls)")


class NativeKernelWarning(RuntimeWarning):
    """A native kernel could not be found, built or loaded; the numpy path runs instead,
    with the same results. Issued once per process."""


def warn_once(what, fix):
    """One NativeKernelWarning per process, at the user's line; later problems are only logged
    (runtime/fused.py's CUDA kernels report through it too)."""
    global _warned
    log.info("native kernels: %s", what)
    if _warned:
        return
    _warned = True
    warnings.warn(f"autograph_lite: {what}. {fix} {_SILENCE}", NativeKernelWarning,
                  stacklevel=_user_stacklevel())


def _user_stacklevel():
    """The `stacklevel` of the innermost caller outside the package (generated plans included)."""
    frame, level = sys._getframe(2), 2
    while frame is not None and (is_internal_file(frame.f_code.co_filename)
                                 or frame.f_code.co_filename.startswith("<autograph_lite")):
        frame, level = frame.f_back, level + 1
    return level if frame is not None else 2


def enabled():
    return os.environ.get("AG_NATIVE_KERNELS", "1") != "0" and os.environ.get("AG_NATIVE") != "off" \
        and compiler() is not None


@functools.lru_cache(maxsize=None)
def compiler():
    """(path, version line) of the C compiler, or None (warned)."""
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
    if os.environ.get("CC"):
        warn_once(f"the C compiler CC={os.environ['CC']!r} was not found or does not run, so native "
              f"kernels are off and everything runs on numpy (same results)", _FIX_CC)
    else:
        warn_once("no C compiler (cc, gcc or clang) was found on PATH, so native kernels are off and "
              "everything runs on numpy (same results)",
              "Install gcc or clang, or set CC to a C compiler, for the faster C kernels.")
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


def load(source, symbol, flags_read=False, wait=True):
    """The C function `symbol` of the library built from `source` (C11), or None (see the
    module docstring). Its `restype`/`argtypes` are the caller's to set. `flags_read`: the
    caller reads the floating-point flags the code raises (runtime/fp_errors.py), so the
    compiler must not compute speculatively what the code may not compute (-ftrapping-math)."""
    functions = load_functions(source, (symbol,), flags_read, wait)
    return functions[0] if isinstance(functions, tuple) else functions


def load_functions(source, symbols, flags_read=False, wait=True):
    """The C functions `symbols` of one library built from `source`, or None (as `load`);
    `wait=False`: PENDING while it is built in the background (see the module docstring)."""
    if not enabled():
        return None
    libs = ["-lmvec", "-lm"] if vector_math() else ["-lm"]
    flags = [f for f in FLAGS if f != "-fno-trapping-math"] if flags_read else FLAGS

    def use(library):
        cdll = ctypes.CDLL(library)
        return tuple(getattr(cdll, symbol) for symbol in symbols)
    return _cached(source, flags + libs, "\0".join(symbols), use, KERNEL, wait=wait)


def load_extension(source, name, include_dirs, build=True, wait=True):
    """The CPython extension module `name` built from `source` (C11, against this interpreter's
    headers and `include_dirs`), or None as `load` (warned once: the callers have a ctypes path).
    `build=False`: only if the cache holds it already (None otherwise, silently); `wait` as
    `load_functions`."""
    if not enabled():
        return None
    flags = ["-O2", "-fPIC", "-shared", "-std=c11", *(f"-I{d}" for d in include_dirs)]
    if sys.platform == "darwin":
        flags.append("-undefined dynamic_lookup")

    def use(library):
        loader = importlib.machinery.ExtensionFileLoader(name, library)
        spec = importlib.util.spec_from_file_location(name, library, loader=loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        return module
    # the interpreter's and numpy's ABI are part of what the library was built for
    return _cached(source, flags, sys.version + importlib.machinery.EXTENSION_SUFFIXES[0], use, ENTRY_MODULE,
                   build, wait)


def _cached(source, flags, what, use, purpose, build=True, wait=True):
    """`use(path)` of the verified library built from `source` with `flags` (`what` names what
    is used of it, and keys it too), or None (warned: `purpose` says what it is and what runs
    instead). `build=False`: a cached library only, else None. `wait=False`: PENDING while
    the library is compiled on a worker thread."""
    path, version = compiler()
    key = hashlib.sha256("\0".join([source, what, *flags, version, _cpu_model()])
                         .encode()).hexdigest()[:24]
    with _lock:
        if key not in _loaded and not build:
            try:
                return _load_cached(_usable_dir(), key, use)
            except OSError:
                return None
        if key not in _loaded and not wait and background_builds():
            future = _pending.get(key)
            if future is None:
                found = _cached_quietly(key, use)
                if found is not None:
                    _loaded[key] = found
                    return found
                _pending[key] = _start(_compile_quietly, path, source, flags, key)
                return PENDING
            if not future.done():
                return PENDING
            del _pending[key]  # built (loaded from the cache below) or failed (built again below, warning)
        if key not in _loaded:
            _loaded[key] = _load_or_build(path, source, flags, key, use, purpose)
        return _loaded[key]


def _load_or_build(path, source, flags, key, use, purpose):
    directory = None
    try:
        directory = _usable_dir()
        return (_load_cached(directory, key, use)
                or _build(directory, path, source, flags, key, use, purpose))
    except (OSError, subprocess.SubprocessError) as e:
        warn_once(f"building {purpose[0]} with {path} failed ({e}); {purpose[1]}", f"Check that {path} works and that "
              f"{directory or 'a temporary directory'} is writable.")
        return None


# --- the verified cache ------------------------------------------------------------------

def cache_dir():
    return os.path.join(disk_cache.root(), "kernels")


def _manifest(directory, key):
    return os.path.join(directory, f"k{key}.sha256")


def _library(directory, key, digest):
    return os.path.join(directory, f"k{key}-{digest[:16]}.so")


def _load_cached(directory, key, use):
    """`use(library)` of a verified cache entry, or None (a missing or bad entry is removed)."""
    manifest, library = _manifest(directory, key), None
    try:
        digest = disk_cache.read_private(manifest).decode("ascii").strip()
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise disk_cache.Untrusted("a malformed manifest")
        library = _library(directory, key, digest)
        if hashlib.sha256(disk_cache.read_private(library)).hexdigest() != digest:
            raise disk_cache.Untrusted("a library whose content does not match its sha256")
        return use(library)
    except FileNotFoundError:
        return None
    except (disk_cache.Untrusted, OSError, AttributeError, ImportError, UnicodeDecodeError) as e:
        log.info("discarding the damaged kernel cache entry %s (%s); rebuilding", manifest, e)
        disk_cache.remove(manifest)
        if library is not None:
            disk_cache.remove(library)
        return None


def _build(directory, path, source, flags, key, use, purpose):
    fix = f"Check that {path} is a working C compiler, or set CC to one."
    try:
        library = _compile(directory, path, source, flags, key)
    except _Rejected as e:
        say, fix, our_bug = e.args
        warn_once(say(*purpose), fix + (" If it works, this is a bug in autograph_lite: please report it." if our_bug else ""))
        return None
    try:
        return use(library)
    except (OSError, AttributeError, ImportError) as e:
        disk_cache.remove(_manifest(directory, key))
        warn_once(f"the library {path} built for {purpose[0]} cannot be used ({e}); {purpose[1]}", fix)
        return None


def run_tool(command, cwd, timeout):
    """subprocess.run(command) with its output captured, the tool and every process it starts
    (a compiler driver's cc1, as, ld; nvcc's cicc, ptxas) in a process group of their own that is
    killed if the tool runs past `timeout` or the caller is interrupted (Ctrl-C): killing only the
    driver left its cc1 running for 40 minutes on an oversized graph."""
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


class _Rejected(Exception):
    """The compiler built no library: (what happened, given what was built and what runs instead;
    the fix; whether a working compiler rejecting it is our bug)."""


def _compile(directory, path, source, flags, key, launcher=()):
    """Compile `source` into the cache entry `key` of `directory`; its library's path.
    `launcher`: words before the compiler's (`nice`, for a background build)."""
    with tempfile.TemporaryDirectory(dir=directory) as tmp:  # mode 0700
        with open(os.path.join(tmp, "k.c"), "w") as f:
            f.write(source)
        # flags after the source file: libraries must follow the objects that use them;
        # relative names, so the library's bytes do not depend on the temporary path
        done = run_tool([*launcher, path, "k.c", "-o", "k.so", *flags], tmp, timeout=120)
        fix = f"Check that {path} is a working C compiler, or set CC to one."
        if done.returncode != 0:
            message, status = (done.stderr or done.stdout).strip()[-2000:], done.returncode
            raise _Rejected(lambda what, instead: f"the C compiler {path} rejected {what} (exit status {status}); "
                            f"{instead}" + (f":\n{message}\n" if message else ""), fix, True)
        try:
            with open(os.path.join(tmp, "k.so"), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise _Rejected(lambda what, instead: f"the C compiler {path} exited with success but wrote no "
                            f"library for {what}; {instead}", fix, False) from None
        digest = hashlib.sha256(data).hexdigest()
        library = _library(directory, key, digest)
        os.replace(os.path.join(tmp, "k.so"), library)   # content-named: readers never see it change
        with open(os.path.join(tmp, "manifest"), "w") as f:
            f.write(digest + "\n")
        os.replace(os.path.join(tmp, "manifest"), _manifest(directory, key))
    return library


# --- background builds ------------------------------------------------------------------

def _start(job, *args):
    global _workers
    if _workers is None:
        import concurrent.futures  # its worker threads are joined at exit: a build is never cut off
        _workers = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="autograph_lite-build")
    return _workers.submit(job, *args)


def _cached_quietly(key, use):
    """`use` of the cache entry `key` if the configured directory is usable and holds it, else None
    (a problem with the directory is left for the foreground load to warn about)."""
    directory = cache_dir()
    if _usable_dirs.get(directory, directory) != directory or disk_cache.prepare(directory) is not None:
        return None
    return _load_cached(directory, key, use)


def _compile_quietly(path, source, flags, key):
    """A background build: into the configured cache directory, or nothing (the foreground load
    builds again and warns)."""
    directory = cache_dir()
    if disk_cache.prepare(directory) is not None:
        return
    nice = shutil.which("nice")  # the calls running meanwhile keep the CPU first
    try:
        _compile(directory, path, source, flags, key, (nice, "-n", "10") if nice else ())
    except (_Rejected, OSError, subprocess.SubprocessError) as e:
        log.info("native kernels: a background build failed (%s)", e)


def _usable_dir():
    """The configured cache directory if it is private to us, else this process's private one."""
    configured = cache_dir()
    if configured not in _usable_dirs:
        problem = disk_cache.prepare(configured)
        if problem is None:
            _usable_dirs[configured] = configured
        else:
            _usable_dirs[configured] = _private_dir()
            warn_once(f"the native kernel cache {configured} {problem}, so it is not used: kernels are "
                  f"built in a private temporary directory for this process (slower start-up)",
                  "Point AG_CACHE_DIR at a directory that only you can write "
                  "(autograph_lite creates it with mode 0700).")
    return _usable_dirs[configured]


def _private_dir():
    global _private
    if _private is None:
        _private = tempfile.mkdtemp(prefix="autograph_lite-kernels-")
        atexit.register(shutil.rmtree, _private, True)
    return _private
