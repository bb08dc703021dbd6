#!/usr/bin/env bash
# Checks that a shared library exports exactly the functions its C header declares.
# Usage: symbols_test.sh LIBRARY HEADER
set -euo pipefail
lib=$1 header=$2
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVWi]$/ {sub(/@.*/, "", $3); print $3}' | sort -u)
declared=$(grep -oE '\bom_[a-z0-9_]+\(' "$header" | tr -d '(' | sort -u)
if [ "$exported" != "$declared" ]; then
  echo "exported symbols differ from the header's functions (< exported, > declared):"
  diff <(echo "$exported") <(echo "$declared") || true
  exit 1
fi
echo "$(echo "$exported" | wc -l) symbols, all declared in $(basename "$header")"
headers=$(objdump -p "$lib")  # (not piped into grep -q: with pipefail, its early exit fails the pipe)
grep -q 'SONAME *libonnx_mini.so.0$' <<<"$headers" || { echo "SONAME is not libonnx_mini.so.0"; exit 1; }
