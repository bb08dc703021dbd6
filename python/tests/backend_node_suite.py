"""Runs onnx's backend node tests (onnx.backend.test.BackendTest, the `node`
cases of the installed onnx) over onnx_mini.backend and writes each case's
outcome to a JSON file: {case: [pass|fail|error|skip, message]}.

    python3 backend_node_suite.py OUT.json [REGEX]

test_backend.py starts it in a process of its own (it patches NumPy for
onnx 1.12's runner).
"""

import json
import sys
import time
import unittest

import numpy as np

if not hasattr(np, "object"):
    # onnx 1.12's runner compares dtypes with np.object, which NumPy 1.24 removed.
    np.object = object

import onnx.backend.test  # noqa: E402

from onnx_mini.backend import OnnxMiniBackend  # noqa: E402


def _first_line(err):
    text = str(err[1]).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    detail = [line.strip() for line in lines if line.strip().startswith(("Mismatched", "Max absolute"))]
    message = "%s: %s" % (err[0].__name__, lines[0] if lines else "")
    if detail:
        message += " (" + "; ".join(detail) + ")"
    return message[:300]


class Outcomes(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.outcomes = {}

    @staticmethod
    def _name(test):
        name = test._testMethodName
        return name[: -len("_cpu")] if name.endswith("_cpu") else name

    def addSuccess(self, test):
        self.outcomes[self._name(test)] = ["pass", ""]

    def addFailure(self, test, err):
        self.outcomes[self._name(test)] = ["fail", _first_line(err)]

    def addError(self, test, err):
        self.outcomes[self._name(test)] = ["error", _first_line(err)]

    def addSkip(self, test, reason):
        if reason == "Not compatible with backend" and OnnxMiniBackend.last_incompatibility:
            reason = OnnxMiniBackend.last_incompatibility
        self.outcomes[self._name(test)] = ["skip", reason[:300]]


def _tests(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _tests(item)
        else:
            yield item


def main():
    out = sys.argv[1]
    backend_test = onnx.backend.test.BackendTest(OnnxMiniBackend, __name__)
    if len(sys.argv) > 2:
        backend_test.include(sys.argv[2])
    case = backend_test.test_cases["OnnxBackendNodeModelTest"]
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(case)
    tests = [t for t in _tests(suite) if t._testMethodName.endswith("_cpu")]
    result = Outcomes()
    start = time.perf_counter()
    for test in tests:
        OnnxMiniBackend.last_incompatibility = None
        test(result)
    seconds = time.perf_counter() - start
    with open(out, "w") as f:
        json.dump({"seconds": seconds, "onnx": onnx.__version__, "outcomes": result.outcomes}, f, indent=0,
                  sort_keys=True)


if __name__ == "__main__":
    main()
