// Runs backend-test case folders (CASE/model.onnx, CASE/test_data_set_N/input_K.pb)
// in onnxruntime-node and writes what it computes as CASE/test_data_set_N/output_K.pb:
// the expected outputs of onnx-mini's oracle cases (see make_cases.py). Dev-time only.
// One thread, graph optimizations off, unless CASE/ort_session.json gives other session
// options (e.g. {"graphOptimizationLevel": "all"}: onnxruntime's default, which fuses the
// standard spelling of 4-bit weights into MatMulNBits at accuracy level 4).
// Usage: NODE_PATH=/tmp/ortnode/node_modules node run_ort.js CASE_DIR...
const fs = require('fs'), path = require('path');
const ort = require('onnxruntime-node');
const { onnx } = require('onnx-proto');
ort.env.logLevel = 'error';
const TYPES = {1: 'float32', 2: 'uint8', 3: 'int8', 5: 'int16', 6: 'int32', 7: 'int64', 9: 'bool',
               10: 'float16', 11: 'float64', 12: 'uint32', 13: 'uint64'};
const CODES = Object.fromEntries(Object.entries(TYPES).map(([k, v]) => [v, +k]));
const ARRAYS = {float32: Float32Array, uint8: Uint8Array, int8: Int8Array, int16: Int16Array,
                int32: Int32Array, int64: BigInt64Array, bool: Uint8Array, float16: Uint16Array,
                float64: Float64Array, uint32: Uint32Array, uint64: BigUint64Array};
function load(file) {
  const t = onnx.TensorProto.decode(fs.readFileSync(file));
  const type = TYPES[t.dataType];
  if (!type) throw new Error(`${file}: element type ${t.dataType} is not one onnxruntime-node takes`);
  const buf = Buffer.from(t.rawData || []);
  const bytes = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length);
  return new ort.Tensor(type, new ARRAYS[type](bytes), t.dims.map(Number));
}
function save(tensor, file) {
  const data = tensor.data;
  const raw = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const proto = onnx.TensorProto.create({dims: tensor.dims, dataType: CODES[tensor.type], rawData: raw});
  fs.writeFileSync(file, onnx.TensorProto.encode(proto).finish());
}
(async () => {
  for (const dir of process.argv.slice(2)) {
    const own = path.join(dir, 'ort_session.json');
    const options = Object.assign({intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'disabled'},
                                  fs.existsSync(own) ? JSON.parse(fs.readFileSync(own, 'utf8')) : {});
    const s = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), options);
    for (const set of fs.readdirSync(dir).filter(n => n.startsWith('test_data_set_')).sort()) {
      const sd = path.join(dir, set), feeds = {};
      s.inputNames.forEach((n, i) => {
        const f = path.join(sd, `input_${i}.pb`);
        if (fs.existsSync(f)) feeds[n] = load(f);
      });
      const out = await s.run(feeds);
      s.outputNames.forEach((o, k) => save(out[o], path.join(sd, `output_${k}.pb`)));
    }
    console.log(`${path.basename(dir)}: ${s.outputNames.length} outputs`);
  }
})().catch(e => { console.error(e.message || e); process.exit(1); });
