"""The on-disk cache's ground rules, shared by what caches there (native kernels in
`runtime/native/compiler.py`, converted functions in `loader.py`): where it lives, and
that nothing in it is read unless it is private to us.

The root is `$AG_CACHE_DIR`, else `$XDG_CACHE_HOME/autograph_lite` (`~/.cache/...`). Its
directories are created with mode 0700; one that is not ours, or that group or others can
write (or whose parent they can, without the sticky bit), is not used. A file is read only
if it is a regular file of ours that group and others cannot write; writers write a private
temporary file and rename it, so readers never see a file change.
"""
import os
import stat
import tempfile


class Untrusted(Exception):
    """A cache entry that must not be loaded: not ours, writable by others, or damaged."""


def root():
    configured = os.environ.get("AG_CACHE_DIR")
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "autograph_lite")


def prepare(directory):
    """Create `directory` (and its parent) with mode 0700; None if it is safe to use, else why not."""
    parent = os.path.dirname(directory)
    try:
        os.makedirs(parent, mode=0o700, exist_ok=True)
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass
        st, parent_st = os.stat(directory), os.stat(parent)
    except OSError as e:
        return f"cannot be created ({e.strerror or e})"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if not private_mode(st):
        return "is owned by another user or writable by group or others"
    sticky = parent_st.st_mode & stat.S_ISVTX
    if hasattr(os, "getuid") and parent_st.st_uid not in (0, os.getuid()) or (
            parent_st.st_mode & 0o022 and not sticky):
        return f"is inside {parent}, which another user can change"
    if not os.access(directory, os.W_OK | os.X_OK):
        return "is not writable"
    return None


def read_private(path):
    """The bytes of `path` if it is a regular file of ours that group and others cannot write."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or not private_mode(st):
            raise Untrusted(f"{path} is not a private regular file of ours")
        return f.read()


def write_private(path, data):
    """Write `data` (bytes) to `path` atomically, as a file only we can read and write."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        remove(tmp)
        raise


def private_mode(st):
    return (not hasattr(os, "getuid") or st.st_uid == os.getuid()) and not st.st_mode & 0o022


def remove(path):
    try:
        os.unlink(path)
    except OSError:
        pass
