#!/usr/bin/env bash
# Seed corpora for the fuzz targets: the models and tensor files of testdata/
# and, when given, of the upstream backend node suite. Not testdata/fuzz/: those
# regression cases are replayed by ctest, and the hostile ones (functions that
# expand to the limit) would make most mutants slow.
# usage: fuzz/make_corpus.sh OUT_DIR [UPSTREAM_NODE_DIR]
set -euo pipefail
out=$1
upstream=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/load_model" "$out/run" "$out/tensor_file" "$out/rewrite"
# Content-named copies: re-running adds nothing twice.
add() {  # add FILE TARGET...
  local f=$1 name
  shift
  name=$(sha1sum "$f" | cut -c1-16)
  for t in "$@"; do cp "$f" "$out/$t/$name"; done
}
dirs=("$root/testdata")
if [ -n "$upstream" ] && [ -d "$upstream" ]; then dirs+=("$upstream"); fi
while IFS= read -r -d '' f; do add "$f" load_model run; done \
  < <(find "${dirs[@]}" -path "$root/testdata/fuzz" -prune -o -name '*.onnx' -size -256k -print0)
while IFS= read -r -d '' f; do add "$f" tensor_file; done \
  < <(find "${dirs[@]}" -path "$root/testdata/fuzz" -prune -o \( -name '*.pb' -o -name '*.npy' \) -size -64k -print0)
# fuzz_rewrite reads choices, not a file format: its seeds are its own cases.
for f in "$root"/testdata/fuzz/rewrite/*; do add "$f" rewrite; done
echo "corpus: $(ls "$out/load_model" | wc -l) models, $(ls "$out/tensor_file" | wc -l) tensor files"
