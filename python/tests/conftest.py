"""Test setup: which onnx_mini package and library the tests use, and shared helpers.

- With ONNX_MINI_LIBRARY set, the tests import the package from this source
  tree (python/onnx_mini) over that library.
- Without it, they import the installed package (`pip install ./python`) and
  its library found by the loader (`cmake --install build`, `ldconfig`); when
  no package is installed, the source tree over ../../build/libonnx_mini.so.

Test data is found relative to the repository: python/tests/../../testdata.
"""

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np
import pytest

TESTS_DIR = Path(__file__).resolve().parent
PYTHON_DIR = TESTS_DIR.parent
REPO = PYTHON_DIR.parent
TESTDATA = REPO / "testdata"
DECODER = TESTDATA / "decoder"
BUILD = REPO / "build"

if os.environ.get("ONNX_MINI_LIBRARY"):
    sys.path.insert(0, str(PYTHON_DIR))
elif importlib.util.find_spec("onnx_mini") is None:
    sys.path.insert(0, str(PYTHON_DIR))
    if (BUILD / "libonnx_mini.so").exists():
        os.environ["ONNX_MINI_LIBRARY"] = str(BUILD / "libonnx_mini.so")

import onnx_builder  # noqa: E402
import onnx_mini  # noqa: E402


def pytest_report_header(config):
    return "onnx_mini %s from %s; library %s (%s)" % (
        onnx_mini.__version__,
        Path(onnx_mini.__file__).parent,
        onnx_mini.library_path,
        onnx_mini.library_version,
    )


def read_config():
    """testdata/decoder/config.txt as a dict of ints."""
    config = {}
    for line in (DECODER / "config.txt").read_text().splitlines():
        if line.split():
            key, value = line.split()
            config[key] = int(value)
    return config


def make_model(nodes, inputs, outputs, opset=17, initializers=()):
    """Serialized model bytes: nodes from onnx_builder.node, inputs/outputs as
    (name, elem_type, shape)."""
    return onnx_builder.model(nodes, inputs, outputs, opset=opset, initializers=initializers)


def unary_model(op, elem_type, out_type=None, shape=("n",), **attrs):
    """y = op(x), x of elem_type and y of out_type (default elem_type), both of `shape`."""
    return make_model(
        [onnx_builder.node(op, ["x"], ["y"], **attrs)],
        [("x", elem_type, list(shape))],
        [("y", out_type or elem_type, list(shape))],
    )


@pytest.fixture(scope="session")
def default_session():
    return onnx_mini.InferenceSession(str(TESTDATA / "default.onnx"))


# The default model: y = Transpose(x * w + b), x and w [2, 4], b [4]; y_shape = Shape(y).
W = np.arange(1, 9, dtype=np.float32).reshape(2, 4)
B = np.array([0.5, -0.5, 1, -1], dtype=np.float32)


def expected_default(x):
    return (x * W + B).T
