#!/usr/bin/python3
"""Prints onnx-mini's error on each accuracy case beside onnxruntime's (docs/quantized_accuracy.md).

usage: /usr/bin/python3 tools/oracle/accuracy_table.py [--conformance build/tools/onnx-conformance]
                                                      [--threads N] [--cpu TARGET] [--markdown]
Runs onnx-conformance over testdata/oracle/accuracy with every tolerance opened (so each case runs
all its sets and reports its max abs error against the stored float64 reference), then prints, per
case: onnxruntime 1.30's max abs error (from errors.json, written by make_cases.py accuracy), the
float32 floor, the case's atol, onnx-mini's max abs error, both relative to max |reference|, and
onnx-mini / onnxruntime. A case whose onnx-mini error is above its atol is marked FAIL.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FAMILY = os.path.join(ROOT, "testdata", "oracle", "accuracy")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--conformance", default=os.path.join(ROOT, "build", "tools", "onnx-conformance"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cpu", help="ONNX_MINI_CPU for the run (baseline, avx2, avx512, avx512vnni, ...)")
    ap.add_argument("--markdown", action="store_true", help="a markdown table (default: aligned text)")
    args = ap.parse_args()
    with open(os.path.join(FAMILY, "errors.json")) as f:
        ort = json.load(f)
    with tempfile.TemporaryDirectory() as tmp:
        tol = os.path.join(tmp, "open.txt")
        with open(tol, "w") as f:
            for name in ort:
                f.write("test_%s 0 1e30\n" % name)
        out = os.path.join(tmp, "out.json")
        subprocess.run([args.conformance, FAMILY, "--quiet", "--jobs", "2", "--threads", str(args.threads),
                        "--tolerances", tol, "--json", out], check=False, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, ONNX_MINI_CPU=args.cpu) if args.cpu else None)
        with open(out) as f:
            mini = {c["name"][len("test_"):]: c for c in json.load(f)["cases"]}
    rows = []
    failed = 0
    for name in sorted(ort, key=lambda n: (ort[n]["path"], n)):
        o, m = ort[name], mini.get(name)
        if m is None or m["status"] != "PASS" or m["max_abs_err"] is None:
            rows.append((name, o["path"], "%.3g" % o["ort_max_abs"], "%.2g" % o["ort_rel"], "%.3g" % o["f32_floor"],
                         "%.3g" % o["atol"], m["status"] if m else "missing", "", "", "FAIL"))
            failed += 1
            continue
        err = m["max_abs_err"]
        ok = err <= o["atol"]
        failed += not ok
        ratio = "%.2f" % (err / o["ort_max_abs"]) if o["ort_max_abs"] > 0 else "-"
        rows.append((name, o["path"], "%.3g" % o["ort_max_abs"], "%.2g" % o["ort_rel"], "%.3g" % o["f32_floor"],
                     "%.3g" % o["atol"], "%.3g" % err, "%.2g" % (err / o["max_ref"]), ratio, "pass" if ok else "FAIL"))
    head = ("case", "path", "ort max abs", "ort rel", "f32 floor", "atol", "mini max abs", "mini rel", "mini/ort",
            "")
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
        for r in [head] + rows:
            print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)))
    print("%d cases, %d above their tolerance" % (len(rows), failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
