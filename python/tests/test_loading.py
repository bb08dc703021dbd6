"""Finding and loading the library, in fresh interpreters."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import BUILD, TESTDATA

import onnx_mini

PACKAGE_PARENT = str(Path(onnx_mini.__file__).resolve().parent.parent)


def python(code, **env_changes):
    """Runs `code` in a fresh interpreter importing the same onnx_mini package;
    returns the CompletedProcess."""
    env = dict(os.environ)
    env["PYTHONPATH"] = PACKAGE_PARENT
    for k, v in env_changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, timeout=120)


def test_explicit_library_that_does_not_exist():
    r = python("import onnx_mini", ONNX_MINI_LIBRARY="/nonexistent/libonnx_mini.so")
    assert r.returncode != 0
    assert "ImportError: onnx_mini: cannot load the library named by ONNX_MINI_LIBRARY='/nonexistent/libonnx_mini.so'" \
        in r.stderr, r.stderr


def test_library_not_found():
    if python("import ctypes; ctypes.CDLL('libonnx_mini.so.0')", ONNX_MINI_LIBRARY=None,
              LD_LIBRARY_PATH="").returncode == 0:
        pytest.skip("libonnx_mini.so.0 is installed for the loader: it would be found")
    r = python("import onnx_mini", ONNX_MINI_LIBRARY=None, LD_LIBRARY_PATH="")
    assert r.returncode != 0
    assert "cannot find the onnx-mini shared library (tried libonnx_mini.so.0" in r.stderr, r.stderr
    assert "cmake --install build --prefix /usr/local && ldconfig" in r.stderr


@pytest.mark.skipif(not (BUILD / "libonnx_mini.so.0").exists(), reason="no build/libonnx_mini.so.0")
def test_found_by_soname():
    r = python(
        "import onnx_mini; print(onnx_mini.library_path, onnx_mini.library_version)",
        ONNX_MINI_LIBRARY=None,
        LD_LIBRARY_PATH=str(BUILD),
    )
    assert r.returncode == 0, r.stderr
    path, version = r.stdout.split()
    assert path == str(BUILD / "libonnx_mini.so.0") and version.startswith("0.")


def fake_library(tmp_path, version, with_everything):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    source = tmp_path / "fake.c"
    text = 'const char* om_version(void) { return "%s"; }\n' % version
    if with_everything:
        text += "int om_status_get_code(void* s) { return 0; }\n"
    source.write_text(text)
    library = tmp_path / "libfake.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return str(library)


def test_major_version_mismatch(tmp_path):
    r = python("import onnx_mini", ONNX_MINI_LIBRARY=fake_library(tmp_path, "1.0.0", False))
    assert r.returncode != 0
    assert "is version 1.0.0, but this package needs the C API version 0.x, 0.5 or later" in r.stderr, r.stderr


def test_minor_version_too_old(tmp_path):
    r = python("import onnx_mini", ONNX_MINI_LIBRARY=fake_library(tmp_path, "0.4.0", False))
    assert r.returncode != 0
    assert "is version 0.4.0, but this package needs the C API version 0.x, 0.5 or later" in r.stderr, r.stderr


def test_missing_function(tmp_path):
    r = python("import onnx_mini", ONNX_MINI_LIBRARY=fake_library(tmp_path, "0.5.0", True))
    assert r.returncode != 0
    assert "has no function om_status_message" in r.stderr, r.stderr


@pytest.mark.parametrize("first", ["onnx", "onnx_mini"])
def test_shares_the_process_with_onnx(first):
    """libonnx_mini.so compiles onnx.proto as a lite message set (nothing in
    protobuf's process-wide descriptor pool), so Debian's `onnx`, which links
    the same shared libprotobuf and registers package `onnx`, loads beside it
    in either order."""
    pytest.importorskip("onnx")
    second = "onnx_mini" if first == "onnx" else "onnx"
    r = python(
        """
        import numpy as np
        import %s, %s
        import onnx, onnx_mini
        from onnx import helper, TensorProto
        model = helper.make_model(helper.make_graph(
            [helper.make_node("Neg", ["x"], ["y"])], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]))
        s = onnx_mini.InferenceSession(model.SerializeToString())
        print(s.run(None, {"x": np.array([1, -2], np.float32)})[0].tolist())
        print(onnx.load(%r).graph.node[0].op_type)
        """
        % (first, second, str(TESTDATA / "default.onnx"))
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["[-1.0, 2.0]", "Mul"], r.stdout
