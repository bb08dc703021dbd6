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
from onnx_mini import _loader

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
    if _loader.resolve("libonnx_mini.so.0"):
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
    assert "is version 1.0.0, but this package needs the C API version 0.x" in r.stderr, r.stderr


def test_missing_function(tmp_path):
    r = python("import onnx_mini", ONNX_MINI_LIBRARY=fake_library(tmp_path, "0.1.0", True))
    assert r.returncode != 0
    assert "has no function om_status_message" in r.stderr, r.stderr


def _onnx_conflicts():
    path = onnx_mini.library_path
    return path and _loader.registers_onnx_in(path) and _loader._onnx_extension_protobuf() == \
        _loader.registers_onnx_in(path)


@pytest.mark.skipif(not _onnx_conflicts(), reason="the library and the onnx package do not clash here")
def test_onnx_imported_first_leaves_the_library_unloaded():
    r = python(
        """
        import onnx
        import onnx_mini
        assert not onnx_mini.available
        print(onnx_mini.unavailable_reason)
        try:
            onnx_mini.InferenceSession(b"")
        except ImportError as e:
            print("ImportError:", e)
        onnx.helper.make_node("Neg", ["x"], ["y"])  # onnx still works
        """
    )
    assert r.returncode == 0, r.stderr
    assert "`onnx` was imported first, so the library was not loaded" in r.stdout
    assert "ImportError: onnx_mini:" in r.stdout


@pytest.mark.skipif(not _onnx_conflicts(), reason="the library and the onnx package do not clash here")
def test_onnx_imported_second_is_refused():
    r = python(
        """
        import numpy as np
        import onnx_mini
        try:
            import onnx
        except ImportError as e:
            print("ImportError:", e)
        s = onnx_mini.InferenceSession(%r)  # onnx_mini still works
        print(s.run(["y_shape"], {"x": np.zeros((2, 4), np.float32)})[0].tolist())
        """
        % str(TESTDATA / "default.onnx")
    )
    assert r.returncode == 0, r.stderr
    assert "onnx_mini was loaded first, so `import onnx` is refused" in r.stdout
    assert "[4, 2]" in r.stdout
