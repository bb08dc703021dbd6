#!/usr/bin/env bash
# onnx-run on good input and on each kind of bad input: a bad run must end
# with a one-line error, a non-zero exit code and nothing written.
set -u
run=$1
testdata=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
check() {  # NAME EXPECTED_EXIT PATTERN -- command...
  local name=$1 want=$2 pattern=$3
  shift 4
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$want" = 0 ] && [ "$got" != 0 ]; then
    echo "FAIL $name: exit $got: $(cat "$tmp/err")"; failures=$((failures + 1)); return
  fi
  if [ "$want" != 0 ] && [ "$got" = 0 ]; then
    echo "FAIL $name: expected failure"; failures=$((failures + 1)); return
  fi
  if ! grep -qE "$pattern" "$tmp/out" "$tmp/err"; then
    echo "FAIL $name: no '$pattern' in: $(cat "$tmp/out" "$tmp/err")"; failures=$((failures + 1)); return
  fi
  if [ "$want" = 1 ] && [ "$(wc -l <"$tmp/err")" != 1 ]; then
    echo "FAIL $name: error is not one line: $(cat "$tmp/err")"; failures=$((failures + 1)); return
  fi
  echo "ok $name"
}

case_dir=$testdata/conformance/test_mini_default
check default 0 "output y: float \[4,2\]" -- "$run"
check json 0 '"repeat": 3, "warmup": 1, "threads": 0, "median_ms": [0-9.]+, "min_ms"' -- "$run" --json --repeat 3
check warmup 0 'over 2 runs \(after 4 untimed\)' -- "$run" --repeat 2 --warmup 4
check profile 0 'op \(per run, over 3 runs\)' -- "$run" --repeat 3 --profile
# --profile-json: the timed runs' node events (the If's branch and the Loop's
# body at each of its 2 iterations included) as JSON onnxruntime's scripts read.
printf '\x93NUMPY\x01\x00\x76\x00' >"$tmp/trips.npy"
printf "{'descr': '<i8', 'fortran_order': False, 'shape': (), }" | awk '{printf "%-117s\n", $0}' >>"$tmp/trips.npy"
printf '\x02\x00\x00\x00\x00\x00\x00\x00' >>"$tmp/trips.npy"
check profile_json 0 'Loop \(self\)' -- "$run" "$testdata/capi/profile.onnx" --random-inputs --input "trips=$tmp/trips.npy" --repeat 2 --profile --profile-json "$tmp/trace.json"
if ! /usr/bin/python3 -c '
import json, sys
events = json.load(open(sys.argv[1]))
nodes = [e["name"] for e in events if e["cat"] == "Node"]
assert len(nodes) == 2 * (4 + 1 + 2 * 2), nodes
assert nodes.count("loop/body/add_kernel_time") == 4, nodes
assert sum(e["name"] == "model_run" for e in events) == 2
assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
add = [e for e in events if e["name"] == "loop/body/add_kernel_time"][0]["args"]
assert add["op_name"] == "Add" and add["input_type_shape"] == [{"float": [2, 3]}, {"float": [2, 3]}], add
' "$tmp/trace.json"; then echo "FAIL profile_json: the trace does not parse or is wrong"; failures=$((failures + 1)); fi
check profile_json_bad 1 "cannot write the profile to" -- "$run" --profile-json "$tmp/no/such/dir/t.json"
check warmup_bad 2 "warmup takes a number, got 'x'" -- "$run" --warmup x
check input_dir 0 "output y_shape: int64 \[2\] \[4, 2\]" -- "$run" "$case_dir/model.onnx" --input-dir "$case_dir/test_data_set_0" --output-dir "$tmp/outdir"
cmp -s "$tmp/outdir/output_1.pb" "$case_dir/test_data_set_0/output_1.pb" || { echo "FAIL output_dir: output_1.pb differs"; failures=$((failures + 1)); }
check input_flag 0 "output y" -- "$run" "$case_dir/model.onnx" --input "x=$case_dir/test_data_set_0/input_0.pb"
# A .npy input: float32 [2,4] of zeros gives y = b broadcast.
printf '\x93NUMPY\x01\x00\x76\x00' >"$tmp/x.npy"
printf "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }" | awk '{printf "%-117s\n", $0}' >>"$tmp/x.npy"
head -c 32 /dev/zero >>"$tmp/x.npy"
check npy_input 0 "output y: float \[4,2\] \[0.5, 0.5, -0.5" -- "$run" "$case_dir/model.onnx" --input "x=$tmp/x.npy"
check bind 0 "output y: float \[4,2\] \[0.5, 0.5, -0.5" -- "$run" "$case_dir/model.onnx" --input "x=$tmp/x.npy" --repeat 2 --bind

head -c 20 "$case_dir/model.onnx" >"$tmp/truncated.onnx"
check truncated 1 "onnx-run: .*" -- "$run" "$tmp/truncated.onnx" --random-inputs --output-dir "$tmp/bad1"
head -c 3000 /dev/urandom >"$tmp/random.onnx"
check random_bytes 1 "onnx-run: " -- "$run" "$tmp/random.onnx" --random-inputs --output-dir "$tmp/bad2"
mkdir -p "$tmp/escape"
python_free_escape() {  # the external-data model with its location rewritten to ../weights.bin
  sed 's/weights\.bin/..\/ghts.bin/' "$testdata/conformance/test_mini_external_data/model.onnx"
}
python_free_escape >"$tmp/escape/model.onnx"
check external_escape 1 "escapes the model folder" -- "$run" "$tmp/escape/model.onnx" --random-inputs --output-dir "$tmp/bad3"
sed "s/Transpose/Transpoze/g" "$case_dir/model.onnx" >"$tmp/unknown_op.onnx"
check unknown_op 1 "not implemented: ai.onnx::Transpoze opset 17" -- "$run" "$tmp/unknown_op.onnx" --random-inputs --output-dir "$tmp/bad6"
check missing_model 1 "cannot open model" -- "$run" "$tmp/none.onnx"
check wrong_dtype 1 "input 'x' must be float, got int64" -- "$run" "$case_dir/model.onnx" --input "x=$case_dir/test_data_set_0/output_1.pb" --output-dir "$tmp/bad4"
check wrong_shape 1 "input 'x' must have shape float\[2,4\], got \[4,2\]" -- "$run" "$case_dir/model.onnx" --input "x=$case_dir/test_data_set_0/output_0.pb" --output-dir "$tmp/bad5"
check missing_input 1 "no value for input 'x'" -- "$run" "$case_dir/model.onnx"
check bad_flag 2 "unknown option --frob" -- "$run" --frob
# All or nothing: output_1 cannot be written (a folder is in its place), so output_0 is not either.
mkdir -p "$tmp/partial/output_1.pb"
check partial_outputs 1 "cannot write '.*output_1.pb': .*no output was written" -- "$run" "$case_dir/model.onnx" --input-dir "$case_dir/test_data_set_0" --output-dir "$tmp/partial"
if [ "$(ls -A "$tmp/partial")" != "output_1.pb" ]; then echo "FAIL partial_outputs: $(ls -A "$tmp/partial")"; failures=$((failures + 1)); fi
# The session memory limit, from the command line.
check memory_limit 1 "exceed the session's memory limit of 16 bytes" -- "$run" "$case_dir/model.onnx" --input-dir "$case_dir/test_data_set_0" --memory-limit 16 --output-dir "$tmp/bad7"
check memory_limit_ok 0 "output y: float \[4,2\]" -- "$run" "$case_dir/model.onnx" --input-dir "$case_dir/test_data_set_0" --memory-limit 1M
check memory_limit_bad 2 "memory-limit takes a byte count" -- "$run" --memory-limit 12X
# The limit holds for what ops accumulate beyond their planned outputs (issue
# #23, item 5): a Loop whose body makes a 4 KiB row per iteration stacks them
# all; 100,000 of them (400 MB) stop at the iteration that crosses 16M.
loop_model() {  # the model as protobuf text, encoded with protoc (no Python)
  protoc --encode=onnx.ModelProto -I"$(dirname "$0")/../../proto" onnx.proto <<'MODEL'
ir_version: 8
opset_import { domain: "" version: 17 }
graph {
  name: "loop_rows"
  node {
    name: "loop" op_type: "Loop" input: "M" input: "" output: "rows"
    attribute {
      name: "body" type: 5
      g {
        name: "body"
        node { op_type: "Shape" input: "row_shape_of" output: "shape" }
        node { op_type: "ConstantOfShape" input: "shape" output: "row"
               attribute { name: "value" type: 4 t { data_type: 1 dims: 1 float_data: 1.5 } } }
        node { op_type: "Identity" input: "cond" output: "cond_out" }
        input { name: "i" type { tensor_type { elem_type: 7 shape {} } } }
        input { name: "cond" type { tensor_type { elem_type: 9 shape {} } } }
        output { name: "cond_out" type { tensor_type { elem_type: 9 shape {} } } }
        output { name: "row" type { tensor_type { elem_type: 1 shape { dim { dim_value: 1024 } } } } }
      }
    }
  }
  input { name: "M" type { tensor_type { elem_type: 7 shape {} } } }
  input { name: "row_shape_of" type { tensor_type { elem_type: 1 shape { dim { dim_value: 1024 } } } } }
  output { name: "rows" type { tensor_type { elem_type: 1 shape { dim { dim_param: "n" } dim { dim_value: 1024 } } } } }
}
MODEL
}
npy_int64() {  # NAME VALUE_BYTES: an int64 scalar .npy
  printf '\x93NUMPY\x01\x00\x76\x00' >"$tmp/$1.npy"
  printf "{'descr': '<i8', 'fortran_order': False, 'shape': (), }" | awk '{printf "%-117s\n", $0}' >>"$tmp/$1.npy"
  printf "$2" >>"$tmp/$1.npy"
}
if loop_model >"$tmp/loop.onnx"; then
  npy_int64 many '\xa0\x86\x01\x00\x00\x00\x00\x00'  # 100000
  npy_int64 few '\x08\x00\x00\x00\x00\x00\x00\x00'   # 8
  check memory_limit_loop 1 "Loop node 'loop': out of memory for the scan outputs accumulated over the iterations: .* exceed the session's memory limit of 16777216 bytes" -- "$run" "$tmp/loop.onnx" --input "M=$tmp/many.npy" --random-inputs --memory-limit 16M --output-dir "$tmp/bad8"
  check memory_limit_loop_ok 0 "output rows: float \[8,1024\] \[1.5, 1.5" -- "$run" "$tmp/loop.onnx" --input "M=$tmp/few.npy" --random-inputs --memory-limit 16M
else
  echo "FAIL memory_limit_loop: protoc could not encode the model"; failures=$((failures + 2))
fi
# --timeout stops a runaway Loop (2^62 iterations; y = x + trips) with a one-line error.
npy_int64 forever '\x00\x00\x00\x00\x00\x00\x00\x40'
npy_int64 three '\x03\x00\x00\x00\x00\x00\x00\x00'
check timeout 1 "onnx-run: .*run cancelled: deadline of 200 ms exceeded at " -- "$run" "$testdata/capi/loop.onnx" --input "trips=$tmp/forever.npy" --random-inputs --timeout 0.2 --output-dir "$tmp/bad9"
check timeout_in_time 0 "output y: float \[1\]" -- "$run" "$testdata/capi/loop.onnx" --input "trips=$tmp/three.npy" --random-inputs --timeout 30
check timeout_bad 2 "timeout takes a positive number of seconds, got '0'" -- "$run" --timeout 0
for d in bad1 bad2 bad3 bad4 bad5 bad6 bad7 bad8 bad9; do
  if [ -n "$(ls -A "$tmp/$d" 2>/dev/null)" ]; then echo "FAIL $d: files were written"; failures=$((failures + 1)); fi
done
echo "$((30 - failures)) passed, $failures failed"
[ "$failures" = 0 ]
