"""A damaged, foreign, future or malicious saved file raises ag.LoadError saying what is wrong:
never a crash, never a half-loaded function, never wrong numbers."""
import hashlib
import io
import json
import random
import zipfile

import numpy as np
import pytest

import autograph_lite as ag


@ag.function
def model(x, w):
    h = ag.tanh(ag.matmul(x, w)) + np.array([0.5, -0.25, 0.0, 1.0])
    i = 0
    while ag.reduce_sum(h) < 10.0 and i < 5:
        h = h * 2.0 + 1.0
        i += 1
    if ag.reduce_max(h) > 3.0:
        h = h - 3.0
    return h, ag.reduce_sum(h, axis=1), h[:, i]


X = np.arange(6.0).reshape(2, 3) / 10
W = np.linspace(-1, 1, 12).reshape(3, 4)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    model(X, W)
    path = tmp_path_factory.mktemp("saved") / "model.agz"
    ag.save(model, path)
    return path.read_bytes()


def _load_bytes(tmp_path, data, name="bad.agz"):
    path = tmp_path / name
    path.write_bytes(data)
    return ag.load(path)


def _expect_same_or_load_error(tmp_path, data, name):
    """Loading `data` raises LoadError with a message, or gives a function equal to the original."""
    try:
        g = _load_bytes(tmp_path, data, name)
    except ag.LoadError as e:
        assert str(e).startswith(str(tmp_path / name)) and len(str(e)) > len(str(tmp_path / name)) + 10
        return "refused"
    for got, want in zip(g(X, W), model.python_function(X, W)):
        np.testing.assert_array_equal(got, want)
    return "loaded"


def test_the_intact_file_loads(tmp_path, saved):
    assert _expect_same_or_load_error(tmp_path, saved, "ok.agz") == "loaded"


def test_truncated_at_20_offsets(tmp_path, saved):
    offsets = sorted(random.Random(1).sample(range(1, len(saved)), 18)) + [0, len(saved) - 1]
    for k, n in enumerate(offsets):
        assert _expect_same_or_load_error(tmp_path, saved[:n], f"cut{k}.agz") == "refused", n


def test_bytes_flipped_at_20_places(tmp_path, saved):
    rng = random.Random(2)
    places = rng.sample(range(len(saved)), 20)
    outcomes = []
    for k, i in enumerate(places):
        data = bytearray(saved)
        data[i] ^= 1 << rng.randrange(8)
        outcomes.append(_expect_same_or_load_error(tmp_path, bytes(data), f"flip{k}.agz"))
    assert outcomes.count("refused") >= 15  # a flip in zip padding or an unused header field may be harmless


def test_a_flip_inside_an_array_payload_is_caught_by_its_checksum(tmp_path, saved):
    with zipfile.ZipFile(io.BytesIO(saved)) as zf:
        info = next(i for i in zf.infolist() if i.filename.startswith("arrays/"))
    offset = info.header_offset + 30 + len(info.filename) + len(info.extra) + info.compress_size - 1
    data = bytearray(saved)
    data[offset] ^= 0x10
    with pytest.raises(ag.LoadError, match="corrupt"):
        _load_bytes(tmp_path, bytes(data))


def _rewrite(saved, change_manifest=None, change_function=None, extra=None, rehash=True):
    """The saved file with its JSON members changed (checksums recomputed, as a forger would)."""
    with zipfile.ZipFile(io.BytesIO(saved)) as zf:
        members = {i.filename: zf.read(i) for i in zf.infolist()}
    function = json.loads(members["function.json"])
    if change_function:
        change_function(function)
        members["function.json"] = json.dumps(function).encode()
    members.update(extra or {})
    manifest = json.loads(members["manifest.json"])
    if rehash:
        manifest["members"] = {n: hashlib.sha256(d).hexdigest() for n, d in members.items() if n != "manifest.json"}
    if change_manifest:
        change_manifest(manifest)
    members["manifest.json"] = json.dumps(manifest).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return out.getvalue()


def test_a_future_version_says_to_upgrade(tmp_path, saved):
    data = _rewrite(saved, change_manifest=lambda m: m.update(version=2))
    with pytest.raises(ag.LoadError, match=r"saved in format version 2 by a newer autograph_lite; this version "
                                           r"reads format versions up to 1"):
        _load_bytes(tmp_path, data)


def _nodes(function):
    return function["signatures"][0]["graph"]["nodes"]


def test_an_unknown_op_is_named(tmp_path, saved):
    def rename(function):
        next(n for n in _nodes(function) if n["op"] == "Tanh")["op"] = "Tanh2"
    with pytest.raises(ag.LoadError, match=r"node 'Tanh' \(Tanh2\) of graph 'model': unknown op 'Tanh2'"):
        _load_bytes(tmp_path, _rewrite(saved, change_function=rename))


@pytest.mark.parametrize("change, message", [
    (lambda f: _nodes(f)[0]["attrs"].update(bogus=1), r"op MatMul has no attr 'bogus'"),
    (lambda f: next(n for n in _nodes(f) if n["op"] == "Sum")["attrs"].update(axis={"float": "0x1p+0"}),
     r"attr 'axis' of op Sum must be int \| tuple\[int, \.\.\.\] \| None, got float 1\.0"),
    (lambda f: _nodes(f)[1]["inputs"].__setitem__(0, [7, 0]), r"reference \[7, 0\] is out of range"),
    (lambda f: _nodes(f)[0]["outputs"][0].update(dtype="float32"),
     r"output 0 is stored as \(2, 4\) float32 but the op gives \(2, 4\) float64"),
    (lambda f: f["signatures"][0]["graph"]["inputs"][0].update(dtype="object"), r"dtype 'object' is not one"),
    (lambda f: f["signatures"][0]["graph"]["inputs"][0].update(shape=[2, "3"]), r"shape \[2, '3'\] is not a list of sizes"),
    (lambda f: _nodes(f)[2]["attrs"].update(value={"pickle": "cos\nsystem"}), r"is not a saved value"),
    (lambda f: f["signatures"][0].update(write_backs=[[0, 99]]), r"write_backs must be \[input, output\] pairs in range"),
    (lambda f: next(n for n in _nodes(f) if n["op"] == "StridedSlice")["attrs"].update(index=[{"slot": 5}]),
     r"an attr names input \$5, the node has 2 inputs"),
    (lambda f: f.update(parameters=[{"name": "import os", "kind": "POSITIONAL_OR_KEYWORD"}]), r"is not a parameter"),
])
def test_a_forged_graph_is_refused(tmp_path, saved, change, message):
    with pytest.raises(ag.LoadError, match=message):
        _load_bytes(tmp_path, _rewrite(saved, change_function=change))


def test_a_changed_member_without_a_new_checksum_is_corrupt(tmp_path, saved):
    def scale(function):
        next(n for n in _nodes(function) if n["op"] == "Sum")["attrs"]["axis"] = 0
    with pytest.raises(ag.LoadError, match=r"member 'function.json' is corrupt \(its sha256 differs"):
        _load_bytes(tmp_path, _rewrite(saved, change_function=scale, rehash=False))


def test_a_zip_bomb_is_refused_before_it_is_inflated(tmp_path, saved):
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", b"{}")
        zf.writestr("arrays/0.npy", b"\0" * (64 << 20))
    with pytest.raises(ag.LoadError, match=r"member 'arrays/0.npy' would inflate \d+ bytes to 67108864 .*zip bomb"):
        _load_bytes(tmp_path, bomb.getvalue())


def test_a_lying_size_header_is_refused(tmp_path, saved):
    # the central directory says a member is small; its data inflates to more
    data = bytearray(_rewrite(saved))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        info = zf.getinfo("function.json")
    start = bytes(data).index(b"PK\x01\x02")
    while True:  # find function.json's central directory entry
        name_len = int.from_bytes(data[start + 28:start + 30], "little")
        if data[start + 46:start + 46 + name_len] == b"function.json":
            break
        extra, comment = (int.from_bytes(data[start + k:start + k + 2], "little") for k in (30, 32))
        start += 46 + name_len + extra + comment
    data[start + 24:start + 28] = (info.file_size // 2).to_bytes(4, "little")
    with pytest.raises(ag.LoadError):
        _load_bytes(tmp_path, bytes(data))


@pytest.mark.parametrize("data, message", [
    (b"", "not a readable saved function"),
    (b"PK\x03\x04 not really a zip", "not a readable saved function"),
    (b"\x80\x04\x95pickle", "not a readable saved function"),
])
def test_foreign_files_are_refused(tmp_path, data, message):
    with pytest.raises(ag.LoadError, match=message):
        _load_bytes(tmp_path, data)


def test_a_foreign_zip_is_refused(tmp_path):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("data.pkl", b"\x80\x04")
    with pytest.raises(ag.LoadError, match=r"unexpected member 'data.pkl'; not a saved autograph_lite function"):
        _load_bytes(tmp_path, out.getvalue())
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("manifest.json", json.dumps({"format": "something_else", "version": 1}))
    with pytest.raises(ag.LoadError, match=r"does not name the format 'autograph_lite.saved_function'"):
        _load_bytes(tmp_path, out.getvalue())


def test_a_missing_file(tmp_path):
    with pytest.raises(ag.LoadError, match="no such file"):
        ag.load(tmp_path / "nothing.agz")


@ag.function
def _updates_and_views(x):
    x += 1.0
    return x[1:]


@pytest.mark.parametrize("change, message", [
    (lambda step: step.update(op="Tanh"), r"view step 0: 'Tanh' is not a view op"),
    (lambda step: step.update(inputs=[99]), r"view step 0: inputs must be graph outputs in range"),
    (lambda step: step["attrs"].update(bogus=1), r"view step 0: op StridedSlice has no attr 'bogus'"),
    (lambda step: step["attrs"].update(index=[{"slot": 3}]), r"view step 0: an attr names input \$3, the step has 0"),
])
def test_a_forged_returned_view_is_refused(tmp_path, change, message):
    _updates_and_views(np.arange(3.0))
    path = tmp_path / "v.agz"
    ag.save(_updates_and_views, path)
    def forge(function):
        change(function["signatures"][0]["outputs"][0]["view"][0])
    with pytest.raises(ag.LoadError, match=message):
        _load_bytes(tmp_path, _rewrite(path.read_bytes(), change_function=forge))
