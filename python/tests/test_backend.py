"""onnx_mini.backend (an onnx.backend.base.Backend) and onnx's backend node
suite over it (run in a process of its own: backend_node_suite.py)."""

import collections
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import BUILD, TESTDATA, TESTS_DIR

import onnx_mini

PACKAGE_PARENT = str(Path(onnx_mini.__file__).resolve().parent.parent)
SUITE = TESTS_DIR / "backend_node_suite.py"
EXPECT = TESTS_DIR / "backend_node_expect.txt"
# Sequences of scalars: onnx 1.12's assert_similar_outputs takes len() of each item.
RUNNER_CANNOT_COMPARE = {"test_loop16_seq_none"}


def _onnx_spec():
    return importlib.util.find_spec("onnx")


def _node_data():
    spec = _onnx_spec()
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        node = Path(folder) / "backend" / "test" / "data" / "node"
        if node.is_dir():
            return node
    return None


pytestmark = pytest.mark.skipif(_onnx_spec() is None, reason="the onnx package is not installed")


def run_python(args, timeout):
    env = dict(os.environ)
    env["PYTHONPATH"] = PACKAGE_PARENT
    return subprocess.run([sys.executable] + args, capture_output=True, text=True, env=env, timeout=timeout)


def test_backend_api():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    import onnx_mini.backend as backend
    from onnx_mini.backend import OnnxMiniBackend

    assert backend.supports_device("CPU") and not backend.supports_device("CUDA")
    assert not backend.supports_device("TPU")

    model = onnx.load(str(TESTDATA / "default.onnx"))
    rep = backend.prepare(model)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    y, y_shape = rep.run([x])
    assert y.shape == (4, 2) and y_shape.tolist() == [4, 2]
    assert rep.run({"x": x})["y"].shape == (4, 2)  # a dict of inputs; outputs by name
    assert rep.run(x).y_shape.tolist() == [4, 2]  # one array
    np.testing.assert_array_equal(backend.run_model(model, [x])[0], y)
    np.testing.assert_array_equal(OnnxMiniBackend.prepare(model.SerializeToString()).run([x])[0], y)
    with pytest.raises(ValueError):
        backend.prepare(model, "CUDA")

    # is_compatible: False for what onnx-mini lacks (NOT_IMPLEMENTED), True otherwise.
    assert backend.is_compatible(model)
    assert not backend.is_compatible(onnx.load(str(TESTDATA / "capi" / "custom.onnx")))
    assert "com.example::Affine" in OnnxMiniBackend.last_incompatibility

    # run_node: output types from onnx's shape inference; empty input names skipped.
    node = helper.make_node("Add", ["a", "b"], ["c"])
    [c] = backend.run_node(node, [np.ones(3, np.float32), np.arange(3, dtype=np.float32)])
    assert c.tolist() == [1, 2, 3]
    node = helper.make_node("Gemm", ["a", "b"], ["c"], transB=1)
    [c] = backend.run_node(node, [np.ones((2, 3), np.float32), np.ones((4, 3), np.float32)])
    assert c.shape == (2, 4) and (c == 3).all()
    [z] = backend.run_node(helper.make_node("Neg", ["x"], ["y"]), [np.array([1, -2], np.int64)],
                           outputs_info=[(np.int64, (2,))])
    assert z.tolist() == [-1, 2]

    # bfloat16: uint16 bits out; float32 values in are rounded to bfloat16 first.
    to_bf16 = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.BFLOAT16)
    [bits] = backend.run_node(to_bf16, [np.array([1.0, -2.5, 3.14159], np.float32)])
    assert bits.dtype == np.uint16 and bits.tolist() == [0x3F80, 0xC020, 0x4049]
    from_bf16 = helper.make_model(helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)], "g",
        [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])]))
    [y] = backend.run_model(from_bf16, [np.array([1.0, 3.14159, np.nan], np.float32)])
    assert y[0] == 1.0 and y[1] == 3.140625 and np.isnan(y[2])
    [y] = backend.run_model(from_bf16, [bits])
    assert y.tolist() == [1.0, -2.5, 3.140625]


@pytest.mark.skipif(_node_data() is None, reason="onnx's backend test data is not installed (libonnx-testdata)")
def test_onnx_backend_node_suite(tmp_path):
    """onnx.backend.test.BackendTest's node cases over onnx_mini.backend: every
    case of backend_node_expect.txt passes. Prints the counts."""
    out = tmp_path / "node.json"
    r = run_python([str(SUITE), str(out)], timeout=600)
    assert r.returncode == 0, r.stderr
    report = json.loads(out.read_text())
    outcomes = report["outcomes"]
    counts = collections.Counter(v[0] for v in outcomes.values())
    expected = [line.strip() for line in EXPECT.read_text().splitlines() if line.strip() and not line.startswith("#")]
    print(
        "\nonnx %s backend node suite over onnx_mini.backend: %d cases in %.1f s: %d pass, %d skipped "
        "(not implemented), %d fail, %d errors"
        % (report["onnx"], len(outcomes), report["seconds"], counts["pass"], counts["skip"], counts["fail"],
           counts["error"])
    )
    for name, (outcome, message) in sorted(outcomes.items()):
        if outcome in ("fail", "error"):
            print("  %s %s: %s" % (outcome.upper(), name, message))
    newly = sorted(n for n, (o, _) in outcomes.items() if o == "pass" and n not in set(expected))
    if newly:
        print("newly passing (add them to %s): %s" % (EXPECT.name, " ".join(newly)))
    regressions = ["%s: %s" % (n, outcomes.get(n, ["missing", ""])) for n in expected
                   if outcomes.get(n, ["missing"])[0] != "pass"]
    assert not regressions, "\n".join(regressions)

    # The C++ runner over the same data: every case it passes passes here too,
    # but for those onnx 1.12's runner cannot compare.
    runner = BUILD / "tools" / "onnx-conformance"
    if runner.exists():
        cpp_json = tmp_path / "cpp.json"
        subprocess.run([str(runner), str(_node_data()), "--quiet", "--jobs", "2", "--json", str(cpp_json)],
                       capture_output=True, timeout=600)
        # Outputs of random ops: the C++ runner compares their type and shape
        # (its message says so); onnx's runner compares values, which no
        # runtime reproduces.
        cpp = {c["name"] for c in json.loads(cpp_json.read_text())["cases"]
               if c["status"] == "PASS" and " is random" not in c["message"]}
        ours = {n for n, (o, _) in outcomes.items() if o == "pass"}
        print("onnx-conformance passes %d of the same cases" % len(cpp))
        # String tensors do not cross the C API (README, "The C API").
        no_strings = {n for n, (o, message) in outcomes.items()
                      if o == "error" and ("string tensors cannot cross" in message or "cannot return" in message)}
        assert cpp - ours <= RUNNER_CANNOT_COMPARE | no_strings, sorted(cpp - ours)
