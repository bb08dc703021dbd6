// Times one benchmark case (backend-test layout) in onnxruntime-node: the
// timing of ../shared/bench/ort_bench.js (3 untimed runs, then the median and
// minimum of the timed ones, one JSON line), with the thread count and an
// output check as options.
// Usage: NODE_PATH=/tmp/ortnode/node_modules node ort_bench.js CASE_DIR [iters]
//          [--threads N] [--bind] [--check DIR]
//   --threads N: intra-op threads (default 2, as the shared script)
//   --bind: preallocate outputs; an output whose shape/type equals an input's is
//           bound to that input's buffer (ORT's in-place path for TensorScatter)
//   --check DIR: compare ORT's outputs with DIR/output_K.pb (onnx-run --output-dir);
//           adds max_abs_err, max_rel_err (against the largest |value|) and mismatches
//           (elements with |a - b| > 1e-3 * max|value| + 1e-5) to the line
const fs = require('fs'), path = require('path');
const ort = require('onnxruntime-node');
const { onnx } = require('onnx-proto');
ort.env.logLevel = 'error';
const DT = {1: 'float32', 7: 'int64', 10: 'float16', 9: 'bool'};
const ARR = {float32: Float32Array, int64: BigInt64Array, float16: Uint16Array, bool: Uint8Array};
function load(file) {
  const t = onnx.TensorProto.decode(fs.readFileSync(file));
  const type = DT[t.dataType];
  const buf = Buffer.from(t.rawData || []);
  const bytes = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length);
  return new ort.Tensor(type, new ARR[type](bytes), t.dims.map(Number));
}
// An element as a number (float16 tensors hold their bits in a Uint16Array).
function half(h) {
  const e = (h >> 10) & 31, m = h & 1023, s = h >> 15 ? -1 : 1;
  return e === 0 ? s * m * 2 ** -24 : e === 31 ? (m ? NaN : s * Infinity) : s * (1024 + m) * 2 ** (e - 25);
}
function values(t) { return t.type === 'float16' ? Array.from(t.data, half) : Array.from(t.data, Number); }
function flag(name, dflt) {
  const i = process.argv.indexOf(name);
  return i < 0 ? dflt : process.argv[i + 1];
}
(async () => {
  const dir = process.argv[2];
  const iters = +(process.argv[3] && !process.argv[3].startsWith('--') ? process.argv[3] : 20);
  const bind = process.argv.includes('--bind'), threads = +flag('--threads', 2), check = flag('--check', null);
  const s = await ort.InferenceSession.create(path.join(dir, 'model.onnx'),
      {intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all'});
  const sd = path.join(dir, 'test_data_set_0'), feeds = {};
  s.inputNames.forEach((n, i) => { feeds[n] = load(path.join(sd, `input_${i}.pb`)); });
  let fetches;
  if (bind) {
    const first = await s.run(feeds); fetches = {};
    const used = new Set();
    for (const o of s.outputNames) {
      const r = first[o];
      const match = s.inputNames.find(n => !used.has(n) && feeds[n].type === r.type &&
          feeds[n].dims.join() === r.dims.join() && /past|pk|pv|cache/.test(n));
      if (match) { used.add(match); fetches[o] = feeds[match]; }
      else fetches[o] = new ort.Tensor(r.type, new ARR[r.type](r.data.length), r.dims);
    }
  }
  const run = () => fetches ? s.run(feeds, fetches) : s.run(feeds);
  const result = {case: path.basename(dir), runtime: 'onnxruntime-1.30' + (bind ? '+bind' : ''), threads};
  if (check) {
    const out = await s.run(feeds);
    let maxAbs = 0, maxRel = 0, bad = 0;
    s.outputNames.forEach((o, k) => {
      const wantT = load(path.join(check, `output_${k}.pb`));
      if (wantT.dims.join() !== out[o].dims.join()) throw new Error(`${o}: shape ${out[o].dims} vs ${wantT.dims}`);
      const want = values(wantT), got = values(out[o]);
      let scale = 0;
      for (let i = 0; i < got.length; i++) scale = Math.max(scale, Math.abs(got[i]));
      for (let i = 0; i < got.length; i++) {
        const d = Math.abs(got[i] - want[i]);
        if (!(d <= 1e-3 * scale + 1e-5)) bad++;
        maxAbs = Math.max(maxAbs, d);
        if (scale > 0) maxRel = Math.max(maxRel, d / scale);
      }
    });
    Object.assign(result, {max_abs_err: +maxAbs.toExponential(3), max_rel_err: +maxRel.toExponential(3), mismatches: bad});
  }
  for (let i = 0; i < 3; i++) await run();
  const t = [];
  for (let i = 0; i < iters; i++) { const t0 = process.hrtime.bigint(); await run(); t.push(Number(process.hrtime.bigint() - t0) / 1e6); }
  t.sort((a, b) => a - b);
  Object.assign(result, {median_ms: +t[t.length >> 1].toFixed(3), min_ms: +t[0].toFixed(3)});
  console.log(JSON.stringify(result));
})().catch(e => { console.log(JSON.stringify({case: path.basename(process.argv[2]), error: String(e.message || e).split('\n')[0]})); });
