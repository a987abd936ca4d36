"""Converted functions kept in the disk cache (loader.py): a later process compiles the
stored conversion instead of converting again, and gets the same function: the same
results, the same `to_code`, errors at the same user lines. A damaged, forged or foreign
entry is never used (the function is converted again, silently), and an edited source is
converted again. Each case runs in fresh processes sharing one cache directory."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

USER = '''
import numpy as np

def f(x, n):
    total = x * 0
    i = 0
    while i < n:
        if x[i % 4] > 0:
            total = total + x / (i + 1)
        else:
            total = total - 1
        i += 1
    return total

def g(x, i):
    y = x + 1
    return y[i] * 2.0  # line 17: an index out of range fails here
'''

CHILD = r'''
import json, sys
import numpy as np
import autograph_lite as ag
from autograph_lite import loader
import user

converted = []
convert = loader._convert
loader._convert = lambda *a: converted.append(a[1]) or convert(*a)
x = np.arange(-2.0, 2.0)
out = ag.function(user.f)(x, np.int64(7))
try:
    ag.function(user.g)(np.ones(3), np.int64(5))
    error = None
except IndexError as e:
    error = "\n".join(getattr(e, "__notes__", []))
print(json.dumps({"out": out.tolist(), "eager": user.f(x, np.int64(7)).tolist(), "converted": converted,
                  "code": ag.to_code(user.f), "error": error}))
'''


def run(tmp_path):
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]), AG_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, str(child)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def entries(tmp_path):
    return sorted((tmp_path / "cache" / "converted").glob("c*.json"))


def first_and_second(tmp_path):
    (tmp_path / "user.py").write_text(USER)
    return run(tmp_path), run(tmp_path)


def test_a_later_process_uses_the_stored_conversion_and_gets_the_same_function(tmp_path):
    first, second = first_and_second(tmp_path)
    assert first["converted"] == ["ag__converted_f", "ag__converted_g"] and second["converted"] == []
    assert first["out"] == first["eager"] and second["out"] == first["out"]
    assert second["code"] == first["code"]
    assert "user.py:17" in first["error"] and second["error"] == first["error"]  # the line map is kept
    assert len(entries(tmp_path)) == 2
    assert all(oct(p.stat().st_mode & 0o777) == "0o600" for p in entries(tmp_path))


def test_an_edited_source_is_converted_again(tmp_path):
    first_and_second(tmp_path)
    (tmp_path / "user.py").write_text(USER.replace("total - 1", "total - 2"))
    third = run(tmp_path)
    assert third["converted"] == ["ag__converted_f", "ag__converted_g"] and third["out"] == third["eager"]
    assert "total - 2" in third["code"]


def test_a_damaged_forged_or_foreign_entry_is_never_used(tmp_path):
    first_and_second(tmp_path)
    f_entry = next(p for p in entries(tmp_path) if b"ag__converted_f" in p.read_bytes())
    good = f_entry.read_bytes()
    digest, payload = good.split(b"\n", 1)
    forged = json.loads(payload)
    forged["source"] = forged["source"].replace("total - 1", "total - 100")
    forged_payload = json.dumps(forged).encode()
    import hashlib
    damaged_ways = {
        "truncated": good[:len(good) // 2],
        "a flipped byte": good.replace(b"total - 1", b"total - 7"),  # the checksum no longer matches
        "another function's entry": hashlib.sha256(forged_payload).hexdigest().encode() + b"\n"
        + forged_payload.replace(forged["key"].encode(), b"0" * 32),
    }
    for why, data in damaged_ways.items():
        f_entry.write_bytes(data)
        report = run(tmp_path)
        assert report["converted"] == ["ag__converted_f"], why
        assert report["out"] == report["eager"], why
        assert f_entry.read_bytes() == good, why  # removed, then stored again
    f_entry.chmod(0o666)  # writable by others: not ours to trust
    report = run(tmp_path)
    assert report["converted"] == ["ag__converted_f"] and report["out"] == report["eager"]
