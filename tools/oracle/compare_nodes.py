#!/usr/bin/python3
"""Finds the first node where onnx-mini and onnxruntime part, in an oracle case.

usage: /usr/bin/python3 tools/oracle/compare_nodes.py CASE_DIR [--set N] [--rtol R] [--atol A]
                        [--onnx-run build/tools/onnx-run] [--all] [--no-rewrites]
Every node output of CASE_DIR/model.onnx becomes a graph output; onnxruntime-node (run_ort.js) and
onnx-run (--output-dir) run the set's inputs; the outputs are compared in node order with
|a - e| <= atol + rtol * |e|. Prints each node's worst error (--all) or the nodes up to the first
that fails, then that node's inputs' errors. Exposing every value may stop onnx-mini's rewrites
from fusing what they would fuse: the first failing node is where the values part, not
necessarily the kernel that runs it in the unexposed model.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import ORT_NODE_MODULES, ROOT  # noqa: E402


def read_pb(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--set", type=int, default=0)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--onnx-run", default=os.path.join(ROOT, "build", "tools", "onnx-run"))
    ap.add_argument("--all", action="store_true", help="print every node, not only up to the first failure")
    ap.add_argument("--no-rewrites", action="store_true")
    args = ap.parse_args()

    model = onnx.load(os.path.join(args.case, "model.onnx"))
    declared = {o.name for o in model.graph.output}
    order = []  # (node, output name) in node order
    for node in model.graph.node:
        for o in node.output:
            if o:
                order.append((node, o))
                if o not in declared:
                    model.graph.output.append(helper.make_empty_tensor_value_info(o))
                    declared.add(o)
    names = [o.name for o in model.graph.output]

    d = tempfile.mkdtemp(prefix="compare_nodes_")
    try:
        onnx.save(model, os.path.join(d, "model.onnx"))
        src = os.path.join(args.case, "test_data_set_%d" % args.set)
        sd = os.path.join(d, "test_data_set_0")
        os.makedirs(sd)
        for f in os.listdir(src):
            if f.startswith("input_"):
                shutil.copy(os.path.join(src, f), sd)
        env = dict(os.environ, NODE_PATH=ORT_NODE_MODULES)
        subprocess.run(["node", os.path.join(ROOT, "tools", "oracle", "run_ort.js"), d], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        expected = {n: read_pb(os.path.join(sd, "output_%d.pb" % k)) for k, n in enumerate(names)}
        # onnx-mini wants each graph output typed: the element types onnxruntime produced
        del model.graph.output[:]
        for n in names:
            model.graph.output.append(helper.make_tensor_value_info(
                n, helper.np_dtype_to_tensor_dtype(expected[n].dtype) if hasattr(helper, "np_dtype_to_tensor_dtype")
                else onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[expected[n].dtype], None))
        onnx.save(model, os.path.join(d, "model.onnx"))
        mini = os.path.join(d, "mini")
        cmd = [args.onnx_run, os.path.join(d, "model.onnx"), "--input-dir", sd, "--output-dir", mini]
        if args.no_rewrites:
            cmd.append("--no-rewrites")
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode:
            sys.exit(r.stderr.strip())
        actual = {}
        for k, n in enumerate(names):
            p = os.path.join(mini, "output_%d" % k)
            actual[n] = np.load(p + ".npy") if os.path.exists(p + ".npy") else read_pb(p + ".pb")
    finally:
        shutil.rmtree(d, ignore_errors=True)

    def err(n):
        e, a = expected[n], actual[n]
        if e.shape != a.shape:
            return None, "shape %s, expected %s" % (list(a.shape), list(e.shape))
        if e.size == 0:
            return 0.0, "empty"
        e64, a64 = e.astype(np.float64), a.astype(np.float64)
        diff = np.abs(a64 - e64)
        excess = diff - (args.atol + args.rtol * np.abs(e64))
        k = int(np.argmax(excess))
        return float(excess.reshape(-1)[k]), "max abs err %.3g (at flat %d: got %.6g, expected %.6g)" % (
            float(diff.max()), k, a64.reshape(-1)[k], e64.reshape(-1)[k])

    failed = None
    for node, o in order:
        x, msg = err(o)
        bad = x is None or x > 0
        if args.all or bad or failed is None:
            print("%s %-28s %-40s %s" % ("FAIL" if bad else "ok  ", node.op_type, o[:40], msg))
        if bad and failed is None:
            failed = node
            if not args.all:
                break
    if failed is not None:
        print("\nfirst failing node: %s (%s), inputs:" % (failed.name, failed.op_type))
        for i in failed.input:
            if i in expected:
                print("  %-40s %s" % (i[:40], err(i)[1]))
            elif i:
                print("  %-40s (graph input or initializer)" % i[:40])
        return 1
    print("all %d node outputs within rtol %g atol %g" % (len(order), args.rtol, args.atol))
    return 0


if __name__ == "__main__":
    sys.exit(main())
