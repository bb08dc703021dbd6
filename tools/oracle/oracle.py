"""Oracle cases: small models whose expected outputs onnxruntime 1.30 computes.

A family's cases live in tools/oracle/cases_<family>.py as a function `cases()`
returning a list of Case. make_cases.py writes each one in the backend-test
layout under testdata/oracle/<family>/test_<name>/ (model.onnx and
test_data_set_N/input_K.pb), runs onnxruntime-node over them (run_ort.js) for
output_K.pb, and writes the family's tolerances.txt. ctest runs every family
with onnx-conformance --require-all, so each case must pass.

Run with /usr/bin/python3 (it has onnx 1.12); do not call onnx.checker on
models past opset 17 or with com.microsoft nodes: it does not know them.
"""
import dataclasses
import json
import os
import shutil
import subprocess
from typing import Dict, List, Optional

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ORT_NODE_MODULES = os.environ.get("ORT_NODE_MODULES", "/tmp/ortnode/node_modules")

NP_TO_ONNX = {
    np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(np.float64): TensorProto.DOUBLE, np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.bool_): TensorProto.BOOL,
}


@dataclasses.dataclass
class Case:
    name: str                      # test_<name> is the folder
    model: onnx.ModelProto
    inputs: List[Dict[str, np.ndarray]]  # one dict per test_data_set, keyed by graph input name
    rtol: float = 1e-3
    atol: float = 1e-5
    why: str = ""                  # the tolerance's reason, when not the default
    # Expected outputs of a case whose reference is not onnxruntime (one dict per test_data_set,
    # keyed by graph output name): written as they are, onnxruntime not run (the accuracy family).
    expected: Optional[List[Dict[str, np.ndarray]]] = None
    # onnxruntime session options of this case (run_ort.js reads them from CASE/ort_session.json).
    ort_session: Optional[Dict] = None


def ms_model(nodes, inputs, outputs, initializers=(), opset=21, ms_opset=1, name="g"):
    """A model importing the default domain at `opset` and com.microsoft at `ms_opset`."""
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset),
                                                     helper.make_opsetid("com.microsoft", ms_opset)])
    model.ir_version = 8
    return model


def default_model(nodes, inputs, outputs, inits, opset=17):
    """A model of the default domain at `opset`, its initializers from a dict name -> array."""
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def add_conv(rand, nodes, inits, x, y, c, m, k, group=1, bias=True, **attrs):
    """Appends Conv(x) -> y of c -> m channels and kernel k, its weights (and bias) drawn by
    `rand(*shape, lo=, hi=)` into inits; pads default to half the kernel on each side."""
    w = y + "_w"
    inits[w] = rand(m, c // group, *k, lo=-0.5, hi=0.5)
    ins = [x, w]
    if bias:
        inits[y + "_b"] = rand(m)
        ins.append(y + "_b")
    pads = attrs.pop("pads", [kk // 2 for kk in k] * 2)
    nodes.append(helper.make_node("Conv", ins, [y], group=group, pads=pads, **attrs))


def value_info(name, array_or_dtype, shape=None):
    """A graph input/output declaration from an array (or a numpy dtype and a shape)."""
    if isinstance(array_or_dtype, np.ndarray):
        return helper.make_tensor_value_info(name, NP_TO_ONNX[array_or_dtype.dtype], array_or_dtype.shape)
    return helper.make_tensor_value_info(name, NP_TO_ONNX[np.dtype(array_or_dtype)], shape)


def write_family(family: str, cases: List[Case], only: Optional[str] = None):
    """Writes the cases of `family` (all, or those whose name contains `only`) and their outputs."""
    base = os.path.join(ROOT, "testdata", "oracle", family)
    os.makedirs(base, exist_ok=True)
    dirs = []
    for case in cases:
        if only and only not in case.name:
            continue
        d = os.path.join(base, "test_" + case.name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        onnx.save(case.model, os.path.join(d, "model.onnx"))
        if case.ort_session:
            with open(os.path.join(d, "ort_session.json"), "w") as f:
                json.dump(case.ort_session, f)
        names = [i.name for i in case.model.graph.input]
        inits = {i.name for i in case.model.graph.initializer}
        for n, feeds in enumerate(case.inputs):
            sd = os.path.join(d, "test_data_set_%d" % n)
            os.makedirs(sd)
            k = 0
            for name in names:
                if name in inits:
                    continue
                if name not in feeds:
                    raise ValueError("%s: no value for input %s" % (case.name, name))
                t = numpy_helper.from_array(np.array(feeds[name], order="C"), name)
                with open(os.path.join(sd, "input_%d.pb" % k), "wb") as f:
                    f.write(t.SerializeToString())
                k += 1
            if case.expected is not None:
                for k, vo in enumerate(case.model.graph.output):
                    t = numpy_helper.from_array(np.array(case.expected[n][vo.name], order="C"), vo.name)
                    with open(os.path.join(sd, "output_%d.pb" % k), "wb") as f:
                        f.write(t.SerializeToString())
        if case.expected is None:
            dirs.append(d)
    env = dict(os.environ, NODE_PATH=ORT_NODE_MODULES)
    if dirs:
        subprocess.run(["node", os.path.join(ROOT, "tools", "oracle", "run_ort.js")] + dirs, check=True, env=env)
    # Tolerances of every case of the family (not only the ones rewritten now).
    lines = ["# Per-case tolerances for onnx-conformance (CASE RTOL ATOL  # why): written by make_cases.py"]
    for case in cases:
        if (case.rtol, case.atol) != (1e-3, 1e-7):
            lines.append("test_%s %g %g  # %s" % (case.name, case.rtol, case.atol, case.why or "onnxruntime's float arithmetic"))
    with open(os.path.join(base, "tolerances.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
