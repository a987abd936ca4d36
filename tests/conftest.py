import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


TEST_DEVICE = os.environ.get("AG_TEST_DEVICE", "cpu")
if TEST_DEVICE == "standin":  # tests/standin.py: a strict cupy stand-in, no GPU needed
    import standin
    standin.device()


def _compare_on_the_host():
    """On a device, numpy.testing's comparisons read device results to the host first (the tests
    compare values; where values live is tests/test_standin_device.py's subject)."""
    import functools

    from helpers import to_host
    for name in ("assert_array_equal", "assert_allclose", "assert_equal", "assert_array_almost_equal",
                 "assert_almost_equal"):
        compare = getattr(np.testing, name)
        setattr(np.testing, name, functools.wraps(compare)(
            lambda *args, _compare=compare, **kwargs: _compare(*to_host(list(args)), **kwargs)))


if TEST_DEVICE != "cpu":
    _compare_on_the_host()
# native code is built in the foreground here, so a test knows which run is the first native
# one; tests/test_native_background.py covers the background builds users get
os.environ.setdefault("AG_NATIVE_BUILD", "wait")


@pytest.fixture(autouse=True, scope="session")
def kernel_cache(tmp_path_factory):
    """Native kernels built by the tests go to a temporary cache, not the user's."""
    saved = os.environ.get("AG_CACHE_DIR")
    os.environ["AG_CACHE_DIR"] = str(tmp_path_factory.mktemp("ag-cache"))
    yield
    if saved is None:
        del os.environ["AG_CACHE_DIR"]
    else:
        os.environ["AG_CACHE_DIR"] = saved


@pytest.fixture(autouse=True)
def default_device():
    """AG_TEST_DEVICE=gpu (or standin) runs every test with that device as the default."""
    if TEST_DEVICE == "cpu":
        yield
        return
    import autograph_lite as ag
    try:
        context = ag.device(TEST_DEVICE)
        context.__enter__()
    except RuntimeError as e:
        pytest.skip(f"AG_TEST_DEVICE={TEST_DEVICE}: {e}")
    try:
        yield
    finally:
        context.__exit__(None, None, None)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


# --- the CUDA corpus: every fused elementwise kernel the suite's graphs make ----------------
# tests/test_cuda_kernels.py compiles each with NVRTC (no GPU needed) and checks its C twin
# against numpy; it runs last so the corpus holds the whole run's kernels.

def _record_fused_nodes():
    import cuda_corpus
    from autograph_lite.runtime.passes import fusion
    made = fusion._fused_node

    def recording(graph, group, before):
        node = made(graph, group, before)
        cuda_corpus.record(node)
        return node
    fusion._fused_node = recording


_record_fused_nodes()


def pytest_collection_modifyitems(config, items):
    last = [item for item in items if item.nodeid.startswith("tests/test_cuda_kernels.py::test_suite_kernels")]
    items[:] = [item for item in items if item not in last] + last


def pytest_terminal_summary(terminalreporter):
    import cuda_corpus
    if cuda_corpus.REPORT:
        terminalreporter.write_line(cuda_corpus.REPORT)
