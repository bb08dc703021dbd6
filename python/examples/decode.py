#!/usr/bin/env python3
"""Greedy decoding over the bundled decoder with a static KV cache in NumPy.

The same scheme as `onnx-decode --cache static` (tools/onnx_decode.cc):
testdata/decoder/static.onnx takes the caches cache_{key,value}_L
[batch, kv_heads, M, head_dim] and returns present_{key,value}_L of the same
shape. The caches are NumPy arrays allocated once and bound as both the input
and the output (`outputs={"present_key_0": cache}`), so each run writes only
its new rows into them (TensorScatter in place) and attends over the rows
filled so far (nonpad_kv_seqlen): a step costs the same whatever M is.

- Prefill: each prompt alone, through the one-row views `cache[b:b+1]`
  (C-contiguous, so they are passed without a copy), written from row 0.
- Decode: one token per row per step for the whole batch; row b's new token
  goes to cache position len_b + step - 1 (write_indices).

Tokens are bytes (token id = byte value).

    python3 python/examples/decode.py --cache-len 64
    python3 python/examples/decode.py --cache-len 1024   # same step times
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import onnx_mini

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "testdata" / "decoder"
DEFAULT_PROMPTS = "Hello|The quick brown fox|onnx-mini decodes"


def read_config(model_dir):
    config = {}
    for line in (Path(model_dir) / "config.txt").read_text().splitlines():
        fields = line.split()
        if fields:
            config[fields[0]] = int(fields[1])
    return config


def argmax(logits, row, token):
    """Greedy choice: the highest logit, ties to the lowest id."""
    if np.isnan(logits).any():
        raise RuntimeError("the logits of row %d token %d are NaN" % (row, token))
    return int(np.argmax(logits))  # the first maximum: the lowest id


def generate(model_dir, prompts, tokens, cache_len, threads=0):
    """Returns (tokens per row, prefill ms, per-step ms)."""
    config = read_config(model_dir)
    layers, kv, hd = config["layers"], config["kv_heads"], config["head_dim"]
    prompt_ids = [list(p.encode("utf-8")) for p in prompts]
    B = len(prompt_ids)
    for b, ids in enumerate(prompt_ids):
        if len(ids) + tokens > cache_len:
            raise ValueError(
                "row %d: %d prompt tokens + %d to generate exceed the static cache of %d rows; "
                "pass a larger --cache-len" % (b, len(ids), tokens, cache_len)
            )
    session = onnx_mini.InferenceSession(str(Path(model_dir) / "static.onnx"), threads=threads)

    cache_names, present_names = [], []
    for layer in range(layers):
        for kind in ("key", "value"):
            cache_names.append("cache_%s_%d" % (kind, layer))
            present_names.append("present_%s_%d" % (kind, layer))
    caches = [np.zeros((B, kv, cache_len, hd), np.float32) for _ in cache_names]
    fetch = ["logits"] + present_names

    def run(feeds, cache_arrays):
        feeds = dict(feeds)
        feeds.update(zip(cache_names, cache_arrays))
        # Each present_* written into its own cache array: an update in place.
        results = session.run(fetch, feeds, outputs=dict(zip(present_names, cache_arrays)))
        return results[0]

    generated = [[] for _ in range(B)]
    start = time.perf_counter()
    for b, ids in enumerate(prompt_ids):
        S = len(ids)
        rows = [c[b : b + 1] for c in caches]  # one-row views: C-contiguous, no copy
        logits = run(
            {
                "input_ids": np.array([ids], np.int64),
                "position_ids": np.arange(S, dtype=np.int64)[None, :],
                "write_indices": np.zeros(1, np.int64),
                "nonpad_kv_seqlen": np.array([S], np.int64),
            },
            rows,
        )
        generated[b].append(argmax(logits[0, S - 1], b, 0))
    prefill_ms = (time.perf_counter() - start) * 1000

    lengths = np.array([len(ids) for ids in prompt_ids], np.int64)
    step_ms = []
    for step in range(1, tokens):
        start = time.perf_counter()
        positions = lengths + step - 1  # of the token fed; also the row's length so far
        logits = run(
            {
                "input_ids": np.array([[g[-1]] for g in generated], np.int64),
                "position_ids": positions[:, None].copy(),
                "write_indices": positions,
                "nonpad_kv_seqlen": positions + 1,
            },
            caches,
        )
        for b in range(B):
            generated[b].append(argmax(logits[b, 0], b, step))
        step_ms.append((time.perf_counter() - start) * 1000)
    return generated, prefill_ms, step_ms


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", default=str(DEFAULT_DIR), help="the decoder's folder (default: %(default)s)")
    parser.add_argument("--batch-prompts", default=DEFAULT_PROMPTS, help="prompts separated by '|'")
    parser.add_argument("--tokens", type=int, default=16, help="tokens to generate per prompt (default 16)")
    parser.add_argument("--cache-len", type=int, default=256, help="rows of the static cache (default 256)")
    parser.add_argument("--threads", type=int, default=0, help="threads per run, 0 = all cores")
    parser.add_argument("--step-times", action="store_true", help="print every decode step's time")
    args = parser.parse_args(argv)
    prompts = args.batch_prompts.split("|")
    if any(not p for p in prompts) or args.tokens < 1 or args.cache_len < 1:
        parser.error("prompts must be non-empty; --tokens and --cache-len at least 1")

    try:
        generated, prefill_ms, step_ms = generate(
            args.model_dir, prompts, args.tokens, args.cache_len, args.threads
        )
    except (ValueError, onnx_mini.OnnxMiniError) as e:
        print("decode.py: %s" % e, file=sys.stderr)
        return 1
    for b, (prompt, tokens) in enumerate(zip(prompts, generated)):
        print('[static] row %d: "%s" -> %s' % (b, prompt, " ".join(str(t) for t in tokens)))
    n_prefill = sum(len(p.encode("utf-8")) for p in prompts)
    print("prefill: %d tokens in %.2f ms; cache-len %d" % (n_prefill, prefill_ms, args.cache_len))
    if step_ms:
        k = min(8, len(step_ms))
        print(
            "decode: %d steps x %d rows in %.2f ms; per step: first %.3f ms, last %.3f ms; "
            "first-%d mean %.3f ms, last-%d mean %.3f ms"
            % (len(step_ms), len(prompts), sum(step_ms), step_ms[0], step_ms[-1],
               k, np.mean(step_ms[:k]), k, np.mean(step_ms[-k:]))
        )
        if args.step_times:
            for s, ms in enumerate(step_ms, 1):
                print("step %d: %.3f ms" % (s, ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
