"""benchmarks/npbench.py's machinery on two tiny kernels laid out as in an NPBench checkout (no download)."""
import json
import textwrap

import numpy as np

from benchmarks import npbench

KERNELS = {
    # name: (kernel file body, kernel arguments, array arguments)
    "scaled_sum": ("""
        def scaled_sum(alpha, A, x):
            return alpha * (A @ x) + np.sum(A, axis=0)
        """, ["alpha", "A", "x"], ["A", "x"]),
    "zero_row": ("""
        def zero_row(A):
            v = A.reshape(-1)
            v[0] = 0.0
            return A.sum()
        """, ["A"], ["A"]),
}


def fake_checkout(root):
    """bench_info/<name>.json, npbench/benchmarks/tiny/<name>/<name>.py (the init function) and
    <name>_numpy.py (the kernel), as NPBench lays them out."""
    (root / "bench_info").mkdir()
    (root / "npbench" / "benchmarks").mkdir(parents=True)
    (root / "npbench" / "__init__.py").write_text("")
    for name, (body, input_args, array_args) in KERNELS.items():
        folder = root / "npbench" / "benchmarks" / "tiny" / name
        folder.mkdir(parents=True)
        (folder / f"{name}.py").write_text(textwrap.dedent("""
            import numpy as np

            def initialize(N):
                rng = np.random.default_rng(42)
                return 1.5, rng.random((N, N)), rng.random(N)
            """))
        (folder / f"{name}_numpy.py").write_text("import numpy as np\n" + textwrap.dedent(body))
        info = {"name": name, "short_name": name, "relative_path": f"tiny/{name}", "module_name": name,
                "func_name": name, "parameters": {"S": {"N": 5}, "M": {"N": 50}},
                "init": {"func_name": "initialize", "input_args": ["N"], "output_args": ["alpha", "A", "x"]},
                "input_args": input_args, "array_args": array_args, "output_args": []}
        (root / "bench_info" / f"{name}.json").write_text(json.dumps({"benchmark": info}))


def test_kernels_run_in_their_own_processes_and_are_classified(tmp_path):
    fake_checkout(tmp_path)
    assert list(npbench.kernels(str(tmp_path))) == ["scaled_sum", "zero_row"]
    records = npbench.run_all(str(tmp_path), ["scaled_sum", "zero_row"], timeout=120, jobs=2)
    equal, refused = records
    assert equal["status"] == "equal" and equal["first_call_s"] > 0 and equal["eager_s"] > 0, equal
    assert refused["status"] == "refused", refused
    assert refused["detail"].startswith("zero_row_numpy.py:4: 'v' is updated in place"), refused
    assert npbench.summary(records) == "2 kernels: 1 equal, 0 differs, 1 refused, 0 crashed, 0 timeout, 0 skipped"


def test_main_writes_the_table_and_json(tmp_path, capsys):
    checkout = tmp_path / "npbench"
    checkout.mkdir()
    fake_checkout(checkout)
    assert npbench.main([str(checkout), "--kernels", "zero_row", "--out", str(tmp_path / "out")]) == 0
    assert "1 kernels: 0 equal, 0 differs, 1 refused" in capsys.readouterr().out
    saved = json.loads((tmp_path / "out" / "npbench.json").read_text())
    assert [r["status"] for r in saved["kernels"]] == ["refused"] and saved["preset"] == "S"


def test_without_a_checkout_it_says_where_to_get_one(capsys):
    assert npbench.main([]) != 0
    assert "https://github.com/spcl/npbench" in capsys.readouterr().err


def test_first_difference_names_structure_dtype_and_the_first_differing_element():
    a = np.arange(6.0).reshape(2, 3)
    assert npbench.first_difference((a, 1), (a.copy(), 1)) is None
    assert npbench.first_difference(a, a + 1e-12) is None  # within float64's tolerance
    b = a.copy()
    b[1, 2] += 1
    assert npbench.first_difference(a, b, "argument A") == \
        "argument A[1, 2]: np.float64(6.0) where eager gives np.float64(5.0) (1 elements differ)"
    assert "dtype float32 where eager gives float64" in npbench.first_difference(a, a.astype(np.float32))
    assert "ndarray where eager gives float64" in npbench.first_difference(np.float64(1), np.array(1.0))
    assert "structure" in npbench.first_difference((a,), (a, a))
    f32 = np.ones(3, np.float32)
    assert npbench.first_difference(f32, f32 * np.float32(1 + 1e-6)) is None  # float32's looser rtol


def test_a_refusal_is_reported_at_its_innermost_line_of_the_kernel():
    file = "/x/npbench/benchmarks/k/k_numpy.py"
    exc = TypeError(f"the body of a loop on a tensor (at {file}:9) raised TypeError while it was traced "
                    f"(operator & is supported on bool tensors only (got Tensor(\"S:0\", shape=(), dtype=uint8)), "
                    f"at {file}:11); the body is traced even when the data runs it zero times.")
    assert npbench.classify_error(exc, file) == (
        "refused", "k_numpy.py:11: operator & is supported on bool tensors only (got Tensor)", 11)
    status, detail, line = npbench.classify_error(TypeError("numpy.sin has no autograph_lite op"), file)
    assert status == "crashed" and line is None and detail.startswith("TypeError: numpy.sin")


def test_an_argument_left_different_is_the_difference_when_the_results_agree():
    A, x = np.ones((2, 2)), np.ones(2)
    changed = A.copy()
    changed[0, 1] = 0.0
    assert npbench.call_difference(1.0, [A, x], 1.0, [A.copy(), x.copy()], ["A", "x"]) is None
    assert npbench.call_difference(1.0, [A, x], 1.0, [changed, x], ["A", "x"]).startswith("argument A[0, 1]: ")
    assert npbench.call_difference(1.0, [A], 2.0, [changed], ["A"]).startswith("result: ")


def test_markdown_prints_the_table_docs_npbench_md_holds(tmp_path, capsys):
    checkout = tmp_path / "npbench"
    checkout.mkdir()
    fake_checkout(checkout)
    assert npbench.main([str(checkout), "--kernels", "scaled_sum", "--markdown", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "| kernel | status | first call ms | eager ms | detail |" in printed
    assert "| scaled_sum | equal |" in printed and "**1 kernels: 1 equal" in printed
