"""docs/numpy.md is generated from the numpy tables (`ops/numpy_api/catalog.py`) and says what they hold."""
import pathlib
import re

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.errors import ConversionError
from autograph_lite.ops.numpy_api import catalog
from autograph_lite.runtime.graph import Tensor

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "numpy.md"
REGENERATE = "regenerate it: python -m autograph_lite.ops.numpy_api.catalog > docs/numpy.md"


def documented():
    """{name: supported} from the doc's tables."""
    return {m.group(1): m.group(2) == "yes" for m in re.finditer(r"^\| `([^`]+)` \| (yes|no) \|", DOC.read_text(), re.M)}


def test_doc_is_the_catalog():
    text = DOC.read_text()
    version = re.search(r"numpy (\S+)'s callables", text).group(1)
    if version == np.__version__:
        assert text == catalog.render(), f"docs/numpy.md differs from the tables: {REGENERATE}"
    else:  # another numpy lists other names: what the tables hold must still match the doc
        rows = {name: ok for _, name, ok, _ in catalog.rows()}
        doc = documented()
        both = rows.keys() & doc.keys()
        assert {n for n in both if rows[n] != doc[n]} == set(), REGENERATE


def test_counted_summary_adds_up():
    tally = catalog.counts()
    doc = documented()
    assert sum(total for _, total in tally.values()) == len(doc)
    assert sum(done for done, _ in tally.values()) == sum(doc.values())


@pytest.mark.parametrize("name", sorted(n for n, ok in documented().items() if not ok and n.startswith("np.")
                                        and not n.startswith(("np.random", "np.fft")))[:400:37])
def test_a_refused_function_names_itself(name):
    """A sample of the refused entries: called on a tensor, each is a ConversionError naming it (or
    the function an alias calls) and the user's line, numpy's own error where numpy refuses the call
    first, or eager's answer where the function asks nothing of the values (`np.iterable`)."""
    f = eval(name, {"np": np})

    def call(x):
        return f(x)

    x = np.arange(6.0).reshape(2, 3)
    try:
        expected = call(x)
    except Exception as e:
        expected = e
    try:
        got = ag.function(call)(x)
    except ConversionError as e:
        assert "test_numpy_catalog.py" in str(e) and re.search(r"np\.\w+.* is not supported on tensors", str(e))
        return
    except (TypeError, ValueError) as e:
        assert type(e) is type(expected)
        return
    np.testing.assert_array_equal(got, expected)


def test_a_supported_method_is_on_tensors():
    for name, ok in documented().items():
        if name.startswith("x.") and ok:
            assert hasattr(Tensor, name[2:]), name


def test_readme_states_the_counted_fraction():
    readme = (DOC.parent.parent / "README.md").read_text()
    done, total = catalog.summary()
    assert f"**{done} of {total}** of numpy's ufuncs" in readme, "README's numpy fraction differs from docs/numpy.md"


@pytest.mark.parametrize("name", sorted(n[2:] for n, ok in documented().items() if n.startswith("x.") and not ok))
def test_a_refused_ndarray_attribute_names_itself(name):
    """`t.flat`, `t.tolist()`, `getattr(t, "base", None)`: a ConversionError naming the attribute and
    the user's line, never an AttributeError from inside the library (or a getattr default where
    eager code gets the array's attribute)."""
    def read(x):
        value = getattr(x, name, "the default")
        return value() if callable(value) else value  # a method refuses when called (`t.sort()`)

    with pytest.raises(ConversionError, match=rf"ndarray\.{name}(\(\))? is not supported on tensors.*\(at .*test_numpy_catalog.py"):
        ag.function(read)(np.arange(3.0))
