#!/bin/sh
# pip install of the Python package, offline, into a fresh folder; then its
# tests run against the installed copy (not the source tree) over the library
# the dynamic loader finds by its soname in LIBDIR.
# usage: python_install_test.sh PYTHON PACKAGE_DIR TARGET_DIR LIBDIR
set -eu
python=$1 package=$2 target=$3 libdir=$4
rm -rf "$target"
# The build folders setuptools writes go to a copy, not the source tree.
mkdir -p "$target/src"
cp -r "$package/onnx_mini" "$package/pyproject.toml" "$package/README.md" "$target/src/"
"$python" -m pip install --quiet --no-deps --no-build-isolation --no-index \
  --target "$target/site" "$target/src"
cd "$target"   # nothing of the source tree on the path
PYTHONPATH="$target/site" LD_LIBRARY_PATH="$libdir" ONNX_MINI_LIBRARY= \
  "$python" -c "
import onnx_mini, numpy as np
assert onnx_mini.__file__.startswith('$target/site/'), onnx_mini.__file__
s = onnx_mini.InferenceSession('$package/../testdata/default.onnx')
[shape] = s.run(['y_shape'], {'x': np.zeros((2, 4), np.float32)})
assert shape.tolist() == [4, 2], shape
print('installed', onnx_mini.__version__, 'at', onnx_mini.__file__, 'over', onnx_mini.library_path)
"
