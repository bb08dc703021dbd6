#!/usr/bin/python3
"""Writes the oracle cases of the named families (default: all) with onnxruntime's outputs.

usage: /usr/bin/python3 tools/oracle/make_cases.py [FAMILY ...] [--only SUBSTRING]
Needs onnxruntime-node 1.30 in $ORT_NODE_MODULES (default /tmp/ortnode/node_modules):
  mkdir -p /tmp/ortnode && cd /tmp/ortnode && npm install --ignore-scripts onnxruntime-node@1.30.0 onnx-proto
"""
import argparse
import glob
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    known = sorted(os.path.basename(p)[len("cases_"):-3] for p in glob.glob(os.path.join(here, "cases_*.py")))
    ap = argparse.ArgumentParser()
    ap.add_argument("families", nargs="*", help="of: " + " ".join(known))
    ap.add_argument("--only", help="only the cases whose name contains this")
    args = ap.parse_args()
    for family in args.families or known:
        if family not in known:
            sys.exit("no family %s (tools/oracle/cases_%s.py)" % (family, family))
        module = importlib.import_module("cases_" + family)
        oracle.write_family(family, module.cases(), args.only)


if __name__ == "__main__":
    main()
