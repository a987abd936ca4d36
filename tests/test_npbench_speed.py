"""benchmarks/npbench_speed.py (`bench.py --npbench PATH`) on tiny kernels laid out as in an NPBench
checkout: every way is checked against eager before it is timed, and the table and results say so."""
import json

import numpy as np

from benchmarks import npbench_speed
from test_npbench_runner import fake_checkout


def test_ways_are_checked_then_timed_and_written_to_results_json(tmp_path, capsys):
    checkout = tmp_path / "npbench"
    checkout.mkdir()
    fake_checkout(checkout)
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text(json.dumps({"workloads": "kept"}))
    assert npbench_speed.main([str(checkout), "--preset", "S", "--repeats", "3", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    assert results["workloads"] == "kept"  # bench.py's own results stay
    scaled, zero_row = results["npbench"]["kernels"]
    for way in ("numpy", "ag"):
        timing = scaled["ways"][way]
        assert timing["status"] == "ok" and timing["q1_s"] <= timing["median_s"] <= timing["q3_s"], timing
    for way in zero_row["ways"].values():  # only a way that agreed with eager is timed
        assert ("median_s" in way) == (way["status"] == "ok"), way
    assert "geometric mean of ag/numpy over" in printed and "scaled_sum" in printed


def test_a_way_that_differs_is_reported_not_timed(tmp_path):
    checkout = tmp_path / "npbench"
    checkout.mkdir()
    fake_checkout(checkout)
    info = npbench_speed.npbench.bench_info(str(checkout), "scaled_sum")
    eager_args = [1.5, np.ones((2, 2)), np.ones(2)]
    # ag's contract: dtypes exactly; a peer: the values only
    assert npbench_speed._agrees(info, 2.0, eager_args, 2.0, eager_args, peer=False) is None
    assert npbench_speed._agrees(info, 2.0, eager_args, 3.0, eager_args, peer=True) == "values"
    assert npbench_speed._agrees(info, 2.0, eager_args, np.float32(2.0), eager_args, peer=True) is None


def test_without_a_checkout_it_says_where_to_get_one(capsys):
    assert npbench_speed.main([]) != 0
    assert "https://github.com/spcl/npbench" in capsys.readouterr().err
