"""The bundled decoder (testdata/decoder): the example's static-cache loop
against onnx-decode and against a dynamic-cache loop written here.

static.onnx: input_ids, position_ids [batch, seq], write_indices,
nonpad_kv_seqlen [batch], cache_{key,value}_L [batch, kv_heads, cache, head_dim]
-> logits [batch, seq, vocab], present_{key,value}_L (the caches updated).
dynamic.onnx: input_ids, position_ids, attention_mask [batch, 1, 1, total] (bool),
past_{key,value}_L [batch, kv_heads, past, head_dim] -> logits, present_* [.., total, ..].
"""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import BUILD, DECODER, PYTHON_DIR, read_config

import onnx_mini

EXAMPLE = PYTHON_DIR / "examples" / "decode.py"
ONNX_DECODE = BUILD / "tools" / "onnx-decode"
PROMPTS = ["Hello", "The quick brown fox", "onnx-mini decodes"]


def load_example():
    spec = importlib.util.spec_from_file_location("decode_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def dynamic_decode(prompts, tokens):
    """Greedy decoding with past/present tensors and one left-padded batched
    prefill (the dynamic kind of tools/onnx_decode.cc)."""
    config = read_config()
    layers, kv, hd = config["layers"], config["kv_heads"], config["head_dim"]
    s = onnx_mini.InferenceSession(str(DECODER / "dynamic.onnx"))
    past_names = ["past_%s_%d" % (k, l) for l in range(layers) for k in ("key", "value")]
    present_names = ["present_%s_%d" % (k, l) for l in range(layers) for k in ("key", "value")]
    ids = [list(p.encode()) for p in prompts]
    B, L = len(ids), max(len(i) for i in ids)
    input_ids = np.zeros((B, L), np.int64)
    positions = np.zeros((B, L), np.int64)
    mask = np.zeros((B, L), bool)
    for b, row in enumerate(ids):
        pad = L - len(row)
        input_ids[b, pad:] = row
        positions[b, pad:] = np.arange(len(row))
        mask[b, pad:] = True
    pasts = [np.zeros((B, kv, 0, hd), np.float32) for _ in past_names]

    def step(input_ids, positions, mask):
        feeds = {"input_ids": input_ids, "position_ids": positions, "attention_mask": mask[:, None, None, :]}
        feeds.update(zip(past_names, pasts))
        out = s.run(["logits"] + present_names, feeds)
        pasts[:] = out[1:]
        return out[0]

    logits = step(input_ids, positions, mask)
    generated = [[int(np.argmax(logits[b, -1]))] for b in range(B)]
    lengths = np.array([len(r) for r in ids], np.int64)
    for t in range(1, tokens):
        mask = np.concatenate([mask, np.ones((B, 1), bool)], axis=1)
        logits = step(np.array([[g[-1]] for g in generated], np.int64), (lengths + t - 1)[:, None], mask)
        for b in range(B):
            generated[b].append(int(np.argmax(logits[b, 0])))
    return generated


def onnx_decode_tokens(prompts, tokens, cache_len):
    if not ONNX_DECODE.exists():
        pytest.skip("no build/tools/onnx-decode")
    r = subprocess.run(
        [str(ONNX_DECODE), "--cache", "static", "--quiet", "--model-dir", str(DECODER),
         "--batch-prompts", "|".join(prompts), "--tokens", str(tokens), "--cache-len", str(cache_len)],
        capture_output=True, text=True, timeout=300, check=True,
    )
    rows = re.findall(r'^\[static\] row (\d+): ".*" ->((?: \d+)+)$', r.stdout, re.M)
    assert len(rows) == len(prompts), r.stdout
    return [[int(t) for t in toks.split()] for _, toks in rows]


def test_static_example_matches_onnx_decode():
    generated, _, steps = load_example().generate(str(DECODER), PROMPTS, 16, 64)
    assert len(steps) == 15 and all(len(g) == 16 for g in generated)
    assert generated == onnx_decode_tokens(PROMPTS, 16, 64)


def test_static_matches_dynamic():
    generated, _, _ = load_example().generate(str(DECODER), PROMPTS, 12, 40)
    assert generated == dynamic_decode(PROMPTS, 12)


def test_cache_length_does_not_change_tokens():
    example = load_example()
    a, _, _ = example.generate(str(DECODER), PROMPTS[:2], 10, 32)
    b, _, _ = example.generate(str(DECODER), PROMPTS[:2], 10, 2048)
    assert a == b


def test_step_time_is_flat_in_cache_length():
    """The caches are updated in place: a decode step costs the same with 64
    or 8192 cache rows (copying the 8192-row caches would take several times
    the step)."""
    example = load_example()
    example.generate(str(DECODER), PROMPTS, 4, 64)  # warm up
    medians = {}
    for cache_len in (64, 8192, 64, 8192):
        _, _, steps = example.generate(str(DECODER), PROMPTS, 24, cache_len)
        medians.setdefault(cache_len, []).append(float(np.median(steps)))
    short, long = min(medians[64]), min(medians[8192])
    assert long < 2.0 * short, medians


def test_example_script():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(onnx_mini.__file__).resolve().parent.parent)
    r = subprocess.run([sys.executable, str(EXAMPLE), "--tokens", "6", "--cache-len", "32"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = re.findall(r'^\[static\] row (\d+): "(.*)" ->((?: \d+)+)$', r.stdout, re.M)
    assert [p for _, p, _ in rows] == PROMPTS
    assert re.search(r"^decode: 5 steps x 3 rows in [0-9.]+ ms; per step: first [0-9.]+ ms, last [0-9.]+ ms",
                     r.stdout, re.M), r.stdout
    if ONNX_DECODE.exists():
        assert [[int(t) for t in toks.split()] for _, _, toks in rows] == onnx_decode_tokens(PROMPTS, 6, 32)
    # Too short a cache: an error, exit 1.
    r = subprocess.run([sys.executable, str(EXAMPLE), "--tokens", "20", "--cache-len", "16"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 1 and "exceed the static cache of 16 rows" in r.stderr

