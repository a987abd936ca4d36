"""The saved-function file: a zip of JSON and .npy members, read without running code from it.

    manifest.json    {"format": "autograph_lite.saved_function", "version": 1,
                      "members": {member name: sha256 hex}}   every other member, checked on load
    function.json    the function: parameters, signatures, graphs (saving/graphs.py)
    arrays/<k>.npy   constants, numpy's .npy format (never pickled, stored uncompressed)

Reading checks the container before it trusts any of it: member names, count, declared sizes
and compression ratios (a zip bomb is refused before anything is inflated), the format name
and version, and each member's sha256 against the manifest (a flipped bit anywhere is
refused, not loaded as a wrong number). docs/saved_format.md documents the whole format.
"""
import hashlib
import io
import json
import os
import re
import struct
import tempfile
import zipfile
import zlib

import numpy as np

from ..errors import LoadError

FORMAT = "autograph_lite.saved_function"
VERSION = 1                  # what this version writes; it reads versions 1..VERSION
MAX_MEMBERS = 100_000
MAX_JSON_BYTES = 256 << 20   # function.json and manifest.json, inflated
MAX_TOTAL_BYTES = int(os.environ.get("AG_LOAD_MAX_BYTES", 4 << 30))  # all members, inflated
MAX_RATIO = 100              # inflated size / compressed size of one deflated member
_ARRAY_NAME = re.compile(r"arrays/(0|[1-9][0-9]{0,8})\.npy\Z")
# dtypes a saved graph may hold (constants, tensors, attrs): numbers and bools, never objects
DTYPES = {name: np.dtype(name) for name in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128")}


class Writer:
    """Collects the constants of a function being saved, then writes the file."""

    def __init__(self):
        self.arrays = {}  # member name -> .npy bytes

    def array(self, value):
        """Store numpy array `value`; returns its member name."""
        if value.dtype.name not in DTYPES or value.dtype.byteorder == ">":
            raise ValueError(f"cannot save a constant array of dtype {value.dtype}")
        buffer = io.BytesIO()
        np.save(buffer, value, allow_pickle=False)
        name = f"arrays/{len(self.arrays)}.npy"
        self.arrays[name] = buffer.getvalue()
        return name

    def to_bytes(self, document):
        """The file's bytes: `document` (JSON-able) and the arrays, as `write` would store them."""
        buffer = io.BytesIO()
        self._zip(buffer, document)
        return buffer.getvalue()

    def write(self, path, document):
        """Write `document` (JSON-able) and the arrays to `path`, atomically (a temp file renamed)."""
        path = os.fspath(path)
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".ag_save_", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                self._zip(f, document)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def _zip(self, f, document):
        text = json.dumps(document, separators=(",", ":"), allow_nan=False).encode("utf-8")
        members = {"function.json": text, **self.arrays}
        manifest = {"format": FORMAT, "version": VERSION,
                    "members": {name: hashlib.sha256(data).hexdigest() for name, data in members.items()}}
        with zipfile.ZipFile(f, "w") as zf:
            # a fixed date on every member, so the same function saves to the same bytes (and sha256)
            def put(name, data, method):
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                info.external_attr = 0o600 << 16
                zf.writestr(info, data, compress_type=method)
            put("manifest.json", json.dumps(manifest, indent=1).encode("utf-8"), zipfile.ZIP_DEFLATED)
            put("function.json", text, zipfile.ZIP_DEFLATED)
            for name, data in self.arrays.items():
                put(name, data, zipfile.ZIP_STORED)


# what reading a damaged zip, JSON or .npy can raise; each becomes a LoadError
_READ_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError, KeyError,
                IndexError, TypeError, UnicodeDecodeError, zlib.error, struct.error, OverflowError,
                NotImplementedError, RecursionError, MemoryError)


def read(path):
    """(document, arrays) of the file at `path` (or of a file's bytes): the parsed function.json and
    {member name: array}.

    Raises LoadError saying what is wrong with the file."""
    where = "<bytes>" if isinstance(path, (bytes, bytearray, memoryview)) else os.fspath(path)
    source = io.BytesIO(path) if where == "<bytes>" else where
    try:
        with zipfile.ZipFile(source) as zf:
            return _read(zf, where)
    except LoadError as e:
        if str(e).startswith(f"{where}: "):
            raise
        raise LoadError(f"{where}: {e}") from None  # every message names the file
    except FileNotFoundError:
        raise LoadError(f"{where}: no such file") from None
    except _READ_ERRORS as e:
        raise LoadError(f"{where}: not a readable saved function (corrupt or truncated zip: "
                        f"{type(e).__name__}: {e})") from None


def _read(zf, where):
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise LoadError(f"{where}: {len(infos)} members, more than a saved function has ({MAX_MEMBERS})")
    names = [i.filename for i in infos]
    if len(set(names)) != len(names):
        raise LoadError(f"{where}: a member name appears twice")
    total = 0
    for info in infos:
        name = info.filename
        if name not in ("manifest.json", "function.json") and not _ARRAY_NAME.match(name):
            raise LoadError(f"{where}: unexpected member {name!r}; not a saved autograph_lite function")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise LoadError(f"{where}: member {name!r} uses compression method {info.compress_type}; "
                            f"saved functions use stored or deflated members only")
        if info.flag_bits & 0x1:
            raise LoadError(f"{where}: member {name!r} is encrypted")
        limit = MAX_JSON_BYTES if name.endswith(".json") else MAX_TOTAL_BYTES
        if info.file_size > limit:
            raise LoadError(f"{where}: member {name!r} declares {info.file_size} bytes, over the limit "
                            f"of {limit} (set AG_LOAD_MAX_BYTES to raise it)")
        if info.compress_type == zipfile.ZIP_DEFLATED and info.file_size > MAX_RATIO * max(info.compress_size, 1) + 4096:
            raise LoadError(f"{where}: member {name!r} would inflate {info.compress_size} bytes to "
                            f"{info.file_size} (ratio over {MAX_RATIO}): refused as a zip bomb")
        total += info.file_size
    if total > MAX_TOTAL_BYTES:
        raise LoadError(f"{where}: the members declare {total} bytes in all, over the limit of "
                        f"{MAX_TOTAL_BYTES} (set AG_LOAD_MAX_BYTES to raise it)")
    if "manifest.json" not in names:
        raise LoadError(f"{where}: no manifest.json; not a saved autograph_lite function")
    by_name = {i.filename: i for i in infos}
    manifest = _json(_member(zf, by_name["manifest.json"]), where, "manifest.json")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise LoadError(f"{where}: manifest.json does not name the format {FORMAT!r}; "
                        f"not a saved autograph_lite function")
    version = manifest.get("version")
    if type(version) is not int or version < 1:
        raise LoadError(f"{where}: manifest.json has no valid format version ({version!r})")
    if version > VERSION:
        raise LoadError(f"{where}: saved in format version {version} by a newer autograph_lite; this "
                        f"version reads format versions up to {VERSION}. Upgrade autograph_lite to load it")
    digests = manifest.get("members")
    if not isinstance(digests, dict) or set(digests) != set(names) - {"manifest.json"} \
            or not all(isinstance(d, str) for d in digests.values()):
        raise LoadError(f"{where}: the manifest's member list does not match the members of the file")
    contents = {}
    for name, digest in digests.items():
        data = _member(zf, by_name[name])
        if hashlib.sha256(data).hexdigest() != digest:
            raise LoadError(f"{where}: member {name!r} is corrupt (its sha256 differs from the manifest's)")
        contents[name] = data
    if "function.json" not in contents:
        raise LoadError(f"{where}: no function.json")
    document = _json(contents.pop("function.json"), where, "function.json")
    arrays = {name: _array(data, where, name) for name, data in contents.items()}
    return document, arrays


def _member(zf, info):
    """The bytes of one member: never more than it declares (a lying header is refused)."""
    with zf.open(info) as f:
        data = f.read(info.file_size + 1)
    if len(data) != info.file_size:
        raise LoadError(f"member {info.filename!r} holds {len(data)} bytes, its header says {info.file_size}")
    return data


def _reject_constant(token):
    raise ValueError(f"{token} is not allowed in a saved function")


def _json(data, where, name):
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError) as e:
        raise LoadError(f"{where}: {name} is not valid JSON ({e})") from None


def _array(data, where, name):
    try:
        value = np.load(io.BytesIO(data), allow_pickle=False)
    except _READ_ERRORS as e:
        raise LoadError(f"{where}: {name} is not a valid .npy array ({type(e).__name__}: {e})") from None
    if not isinstance(value, np.ndarray) or value.dtype.name not in DTYPES or value.dtype.byteorder == ">":
        raise LoadError(f"{where}: {name} has dtype {getattr(value, 'dtype', '?')}, not one a saved graph may hold")
    return value
