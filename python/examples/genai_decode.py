#!/usr/bin/env python3
"""Greedy decoding over an onnxruntime-genai model folder with onnx_mini.

The same loop as `onnx-decode --model-dir DIR` (tools/onnx_decode.cc) and
tools/oracle/genai_greedy.js (onnxruntime): genai_config.json names the
decoder file, its inputs and outputs (the past and present names have %d for
the layer), the layer and head counts, eos/pad ids and
search.past_present_share_buffer. There is no tokenizer: prompts are token ids,
right-padded with pad_token_id into one prefill; attention_mask has ones over
each row's real tokens (the model derives seqlens_k and total_sequence_length
from it); a row stops at eos_token_id.

With the shared buffer (the default when the config says
past_present_share_buffer) the whole KV cache is ONE NumPy array,
[layers, 2, batch, kv_heads, max_length, head_size]; each layer's key and value
are C-contiguous views of it, fed as past_key_values.L.key/value and bound as
present.L.key/value (`outputs=`), so each run writes only its new rows in
place, at each row's own offset. With --cache dynamic, present (past plus the
new rows) becomes the next past.

    python3 python/examples/genai_decode.py                      # testdata/genai_int4
    python3 python/examples/genai_decode.py --prompt-ids "1 2 3|4 5" --tokens 32
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

import onnx_mini

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "testdata" / "genai_int4"
DEFAULT_PROMPTS = "1 5 6 7 8 9|1 11 12|1 300 200 100 50 25 12 6 3"


def read_config(model_dir):
    config = json.loads((Path(model_dir) / "genai_config.json").read_text())
    model, decoder = config["model"], config["model"]["decoder"]
    eos = model["eos_token_id"]
    return {
        "filename": decoder["filename"],
        "inputs": decoder["inputs"],
        "outputs": decoder["outputs"],
        "layers": decoder["num_hidden_layers"],
        "kv_heads": decoder["num_key_value_heads"],
        "head_size": decoder["head_size"],
        "vocab": model["vocab_size"],
        "eos": eos if isinstance(eos, list) else [eos],
        "pad": model.get("pad_token_id", eos if not isinstance(eos, list) else eos[0]),
        "max_length": config.get("search", {}).get("max_length", model["context_length"]),
        "share_buffer": config.get("search", {}).get("past_present_share_buffer", False),
    }


def generate(model_dir, prompts, tokens, cache="shared", max_length=None, threads=0, session=None):
    """Returns (tokens per row, prefill ms, per-step ms, the shared cache array or None)."""
    c = read_config(model_dir)
    layers, kv, D, V = c["layers"], c["kv_heads"], c["head_size"], c["vocab"]
    M = max_length or c["max_length"]
    names = c["inputs"]
    B, lens = len(prompts), np.array([len(p) for p in prompts], np.int64)
    S = int(lens.max())
    if S + tokens - 1 > M and cache == "shared":
        raise ValueError("%d prompt tokens + %d to generate exceed the shared buffer of %d rows" % (S, tokens, M))
    if session is None:
        session = onnx_mini.InferenceSession(str(Path(model_dir) / c["filename"]), threads=threads)
    past = [names[k] % l for l in range(layers) for k in ("past_key_names", "past_value_names")]
    present = [c["outputs"][k] % l for l in range(layers) for k in ("present_key_names", "present_value_names")]
    fetch = [c["outputs"]["logits"]] + present

    kv_cache = None
    if cache == "shared":
        kv_cache = np.zeros((layers, 2, B, kv, M, D), np.float32)  # the whole cache, one array
        caches = [kv_cache[l, i] for l in range(layers) for i in range(2)]  # C-contiguous views
    else:
        caches = [np.zeros((B, kv, 0, D), np.float32) for _ in past]

    generated, done = [[] for _ in range(B)], [False] * B
    prefill_ms, step_ms = 0.0, []
    for t in range(tokens):
        start = time.perf_counter()
        seq, total = (S, S) if t == 0 else (1, S + t)
        ids = np.full((B, seq), c["pad"], np.int64)
        positions = np.zeros((B, seq), np.int64)
        for b in range(B):
            if t == 0:
                ids[b, : lens[b]] = prompts[b]
                positions[b] = np.arange(S)
            else:
                ids[b, 0] = c["pad"] if done[b] else generated[b][-1]
                positions[b, 0] = lens[b] + t - 1
        mask = (np.arange(total)[None, :] < (lens + t)[:, None]).astype(np.int64)
        feeds = {names["input_ids"]: ids, names["attention_mask"]: mask}
        if "position_ids" in names:
            feeds[names["position_ids"]] = positions
        feeds.update(zip(past, caches))
        if cache == "shared":
            # present.L.* written into its own past's memory: the new rows only.
            results = session.run(fetch, feeds, outputs=dict(zip(present, caches)))
        else:
            results = session.run(fetch, feeds)
            caches = results[1:]
        logits = results[0]
        assert logits.shape == (B, seq, V), logits.shape
        for b in range(B):
            if done[b]:
                continue
            row = logits[b, lens[b] - 1 if t == 0 else 0]
            if np.isnan(row).any():
                raise RuntimeError("the logits of row %d token %d are NaN" % (b, t))
            generated[b].append(int(np.argmax(row)))  # the first maximum: ties to the lowest id
            done[b] = generated[b][-1] in c["eos"]
        elapsed = (time.perf_counter() - start) * 1000
        if t == 0:
            prefill_ms = elapsed
        else:
            step_ms.append(elapsed)
        if all(done):
            break
    return generated, prefill_ms, step_ms, kv_cache


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", default=str(DEFAULT_DIR), help="the folder (default: %(default)s)")
    parser.add_argument("--prompt-ids", default=DEFAULT_PROMPTS, help="token ids, prompts separated by '|'")
    parser.add_argument("--tokens", type=int, default=16, help="tokens to generate per prompt (default 16)")
    parser.add_argument("--cache", choices=("shared", "dynamic"), help="default: shared when the config says so")
    parser.add_argument("--max-length", type=int, help="rows of the shared buffer (default: search.max_length)")
    parser.add_argument("--threads", type=int, default=0, help="threads per run, 0 = all cores")
    args = parser.parse_args(argv)
    try:
        prompts = [[int(t) for t in p.split()] for p in args.prompt_ids.split("|")]
    except ValueError:
        parser.error("--prompt-ids takes token ids separated by spaces, prompts by '|'")
    if any(not p for p in prompts) or args.tokens < 1:
        parser.error("prompts must be non-empty; --tokens at least 1")
    try:
        cache = args.cache or ("shared" if read_config(args.model_dir)["share_buffer"] else "dynamic")
        generated, prefill_ms, step_ms, _ = generate(
            args.model_dir, prompts, args.tokens, cache, args.max_length, args.threads
        )
    except (ValueError, KeyError, OSError, onnx_mini.OnnxMiniError) as e:
        print("genai_decode.py: %s" % e, file=sys.stderr)
        return 1
    for b, (prompt, tokens) in enumerate(zip(prompts, generated)):
        print('[%s] row %d: "%s" -> %s' % (cache, b, " ".join(map(str, prompt)), " ".join(map(str, tokens))))
    print("prefill: %d tokens in %.2f ms" % (sum(len(p) for p in prompts), prefill_ms))
    if step_ms:
        print("decode: %d steps x %d rows in %.2f ms; per step: first %.3f ms, last %.3f ms"
              % (len(step_ms), len(prompts), sum(step_ms), step_ms[0], step_ms[-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
