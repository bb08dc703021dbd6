"""The onnxruntime-genai folder testdata/genai_int4 through python/examples/genai_decode.py:
the shared buffer (one NumPy array bound as both past and present) gives
onnxruntime 1.30's tokens (expected_tokens.txt, from tools/oracle/genai_greedy.js),
the dynamic past/present loop the same, and onnx-decode the same."""

import importlib.util
import re
import subprocess

import numpy as np
import pytest
from conftest import BUILD, PYTHON_DIR, TESTDATA

EXAMPLE = PYTHON_DIR / "examples" / "genai_decode.py"
FOLDER = TESTDATA / "genai_int4"
ONNX_DECODE = BUILD / "tools" / "onnx-decode"


def load_example():
    spec = importlib.util.spec_from_file_location("genai_decode_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def expected():
    """(prompts, tokens, rows) of expected_tokens.txt."""
    prompts, tokens, rows = None, None, []
    for line in (FOLDER / "expected_tokens.txt").read_text().splitlines():
        if line.startswith("prompt-ids: "):
            prompts = [[int(t) for t in p.split()] for p in line[len("prompt-ids: "):].split("|")]
        elif line.startswith("tokens: "):
            tokens = int(line[len("tokens: "):])
        elif line.startswith("row "):
            rows.append([int(t) for t in line.split(":", 1)[1].split()])
    return prompts, tokens, rows


def test_shared_buffer_gives_onnxruntimes_tokens():
    prompts, tokens, rows = expected()
    generated, _, steps, kv_cache = load_example().generate(str(FOLDER), prompts, tokens, "shared", max_length=64)
    assert generated == rows
    assert len(steps) == tokens - 1
    # A row stopped at eos: its list is shorter than the others.
    assert min(len(r) for r in rows) < tokens
    # The buffer was written in place: every row's attended positions hold
    # keys and values; positions no run wrote are still zero.
    S = max(len(p) for p in prompts)
    assert kv_cache.shape[4] == 64
    for b, p in enumerate(prompts):
        attended = len(p) + tokens - 1
        assert np.all(np.abs(kv_cache[:, :, b, :, :attended, :]).sum(axis=-1) > 0)
        assert np.all(kv_cache[:, :, b, :, max(S, attended):, :] == 0)


def test_dynamic_matches_shared():
    prompts, tokens, rows = expected()
    generated, _, _, kv_cache = load_example().generate(str(FOLDER), prompts, tokens, "dynamic")
    assert kv_cache is None and generated == rows


def test_buffer_length_does_not_change_tokens():
    example = load_example()
    prompts, tokens, rows = expected()
    a, _, _, _ = example.generate(str(FOLDER), prompts[:2], 10, "shared", max_length=32)
    b, _, _, _ = example.generate(str(FOLDER), prompts[:2], 10, "shared", max_length=512)
    assert a == b == [r[:10] for r in rows[:2]]


def test_onnx_decode_gives_the_same_tokens():
    if not ONNX_DECODE.exists():
        pytest.skip("no build/tools/onnx-decode")
    prompts, tokens, rows = expected()
    r = subprocess.run([str(ONNX_DECODE), "--quiet", "--threads", "2", "--model-dir", str(FOLDER)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    for mode in ("shared", "dynamic"):
        got = re.findall(r'^\[%s\] row (\d+): ".*" ->((?: \d+)+)$' % mode, r.stdout, re.M)
        assert [[int(t) for t in toks.split()] for _, toks in got] == rows
    assert "modes agree: yes" in r.stdout
    assert "onnxruntime's tokens (%s/expected_tokens.txt): the same" % FOLDER in r.stdout
