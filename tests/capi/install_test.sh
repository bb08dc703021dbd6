#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds a C consumer against it,
# once through find_package(onnx_mini) and once through pkg-config, and runs both.
# Usage: install_test.sh BUILD_DIR CONSUMER_SOURCE_DIR MODEL
set -euo pipefail
build=$1 source=$2 model=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(dirname "$(find "$tmp/prefix" -name 'libonnx_mini.so' | head -1)")

# 1. CMake package.
cmake -S "$source" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/build" >/dev/null
LD_LIBRARY_PATH="$libdir" "$tmp/build/consumer" "$model"

# 2. pkg-config.
PKG_CONFIG_PATH="$libdir/pkgconfig" cc -std=c99 -Wall -Werror -o "$tmp/consumer_pc" "$source/consumer.c" \
  $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs onnx_mini)
LD_LIBRARY_PATH="$libdir" "$tmp/consumer_pc" "$model"

# The installed tools run from the prefix (RPATH $ORIGIN/../lib).
"$tmp/prefix/bin/onnx-run" "$model" --random-inputs >/dev/null
"$tmp/prefix/bin/onnx-decode" --help >/dev/null
echo "installed, consumed through find_package and pkg-config"
