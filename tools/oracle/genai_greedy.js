// Greedy generation over an onnxruntime-genai model folder in onnxruntime-node,
// the same loop as `onnx-decode --model-dir DIR --prompt-ids ...` (see
// tools/onnx_decode.cc): prompts right-padded with pad_token_id into one
// prefill, then one token per row per step; attention_mask has ones over each
// row's real tokens; a row stops at eos_token_id (kept as its last token).
//   shared:  past and present are one [B, kv, max_length, D] buffer per cache,
//            bound as both input and output (onnxruntime's in-place path).
//   dynamic: past is the previous step's present (empty at the prefill).
// Prints one line per row ("row B: ids"); --write FILE also writes them, after
// a header naming the prompts and token count, as the folder's expected tokens
// (onnx-decode --expect-tokens FILE compares with them).
// Usage: NODE_PATH=/tmp/ortnode/node_modules node genai_greedy.js DIR
//          --prompt-ids "1 2 3|4 5" [--tokens N] [--cache shared|dynamic] [--threads N] [--max-length M]
//          [--write FILE] [--step-times]
// The bundled folder's file:
//   node tools/oracle/genai_greedy.js testdata/genai_int4 --prompt-ids "1 5 6 7 8 9|1 11 12|1 300 200 100 50 25 12 6 3" \
//     --tokens 16 --write testdata/genai_int4/expected_tokens.txt
const fs = require('fs'), path = require('path');
const ort = require('onnxruntime-node');
ort.env.logLevel = 'error';

function args() {
  const a = process.argv.slice(2), o = {tokens: 16, cache: 'shared', threads: 1};
  o.dir = a.shift();
  while (a.length) {
    const f = a.shift(), v = a.shift();
    if (f === '--prompt-ids') o.prompts = v.split('|').map(p => p.trim().split(/\s+/).map(Number));
    else if (f === '--tokens') o.tokens = +v;
    else if (f === '--cache') o.cache = v;
    else if (f === '--threads') o.threads = +v;
    else if (f === '--max-length') o.maxLength = +v;
    else if (f === '--write') o.write = v;
    else if (f === '--step-times') { o.stepTimes = true; if (v !== undefined) a.unshift(v); }
    else throw new Error('unknown argument ' + f);
  }
  if (!o.dir || !o.prompts) throw new Error('usage: genai_greedy.js DIR --prompt-ids "1 2|3" [--tokens N] [--cache shared|dynamic]');
  return o;
}

(async () => {
  const o = args();
  const cfg = JSON.parse(fs.readFileSync(path.join(o.dir, 'genai_config.json'), 'utf8'));
  const dec = cfg.model.decoder, L = dec.num_hidden_layers, kv = dec.num_key_value_heads, D = dec.head_size;
  const eos = [].concat(cfg.model.eos_token_id), pad = cfg.model.pad_token_id, V = cfg.model.vocab_size;
  const M = o.maxLength || cfg.search.max_length;
  const names = (t, l) => t.replace('%d', l);
  const s = await ort.InferenceSession.create(path.join(o.dir, dec.filename),
      {intraOpNumThreads: o.threads, interOpNumThreads: 1});
  const B = o.prompts.length, lens = o.prompts.map(p => p.length), S = Math.max(...lens);
  const out = o.prompts.map(() => []), done = o.prompts.map(() => false);
  // Cache tensors by layer: [key, value].
  let caches = [];
  for (let l = 0; l < L; ++l)
    caches.push([0, 1].map(() => o.cache === 'shared'
        ? new ort.Tensor('float32', new Float32Array(B * kv * M * D), [B, kv, M, D])
        : new ort.Tensor('float32', new Float32Array(0), [B, kv, 0, D])));
  const argmax = (data, off) => {
    let best = 0;
    for (let v = 1; v < V; ++v) if (data[off + v] > data[off + best]) best = v;
    return best;
  };
  const stepMs = [];
  for (let t = 0; t < o.tokens; ++t) {
    const started = process.hrtime.bigint();
    const seq = t === 0 ? S : 1, total = S + t;
    const ids = new BigInt64Array(B * seq).fill(BigInt(pad)), mask = new BigInt64Array(B * total);
    for (let b = 0; b < B; ++b) {
      if (t === 0) o.prompts[b].forEach((id, j) => { ids[b * S + j] = BigInt(id); });
      else ids[b] = BigInt(done[b] ? pad : out[b][out[b].length - 1]);
      for (let j = 0; j < lens[b] + t; ++j) mask[b * total + j] = 1n;
    }
    const feeds = {[dec.inputs.input_ids]: new ort.Tensor('int64', ids, [B, seq]),
                   [dec.inputs.attention_mask]: new ort.Tensor('int64', mask, [B, total])};
    const fetches = {[dec.outputs.logits]: null};
    for (let l = 0; l < L; ++l) {
      feeds[names(dec.inputs.past_key_names, l)] = caches[l][0];
      feeds[names(dec.inputs.past_value_names, l)] = caches[l][1];
      fetches[names(dec.outputs.present_key_names, l)] = o.cache === 'shared' ? caches[l][0] : null;
      fetches[names(dec.outputs.present_value_names, l)] = o.cache === 'shared' ? caches[l][1] : null;
    }
    const r = await s.run(feeds, fetches);
    const logits = r[dec.outputs.logits].data;
    for (let b = 0; b < B; ++b) {
      if (done[b]) continue;
      const pos = t === 0 ? lens[b] - 1 : 0;
      const tok = argmax(logits, (b * seq + pos) * V);
      out[b].push(tok);
      if (eos.includes(tok)) done[b] = true;
    }
    if (o.cache === 'dynamic')
      for (let l = 0; l < L; ++l)
        caches[l] = [r[names(dec.outputs.present_key_names, l)], r[names(dec.outputs.present_value_names, l)]];
    if (t > 0) stepMs.push(Number(process.hrtime.bigint() - started) / 1e6);
    if (done.every(x => x)) break;
  }
  if (o.stepTimes) {
    const mean = v => v.reduce((x, y) => x + y, 0) / Math.max(1, v.length);
    console.error(`steps ${stepMs.length}: first-8 mean ${mean(stepMs.slice(0, 8)).toFixed(3)} ms, ` +
                  `last-8 mean ${mean(stepMs.slice(-8)).toFixed(3)} ms`);
  }
  const rows = out.map((ids, b) => `row ${b}: ${ids.join(' ')}`);
  rows.forEach(r => console.log(r));
  if (o.write)
    fs.writeFileSync(o.write, [
      `# onnxruntime ${require('onnxruntime-node/package.json').version} greedy tokens (tools/oracle/genai_greedy.js, --cache ${o.cache})`,
      `prompt-ids: ${o.prompts.map(p => p.join(' ')).join('|')}`, `tokens: ${o.tokens}`, ...rows, ''].join('\n'));
})().catch(e => { console.error(e.message || e); process.exit(1); });
