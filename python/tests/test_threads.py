"""One session run from many Python threads; the GIL is released while a model runs."""

import threading
import time

import numpy as np
from conftest import DECODER, TESTDATA, expected_default, read_config

import onnx_mini

CONFIG = read_config()
LAYERS, KV, HD, VOCAB = CONFIG["layers"], CONFIG["kv_heads"], CONFIG["head_dim"], CONFIG["vocab"]
PAST = ["past_%s_%d" % (k, l) for l in range(LAYERS) for k in ("key", "value")]
CACHE = ["cache_%s_%d" % (k, l) for l in range(LAYERS) for k in ("key", "value")]
PRESENT = ["present_%s_%d" % (k, l) for l in range(LAYERS) for k in ("key", "value")]


def prefill_feeds(seed, batch=2, seq=24):
    rng = np.random.default_rng(seed)
    feeds = {
        "input_ids": rng.integers(0, VOCAB, (batch, seq), dtype=np.int64),
        "position_ids": np.tile(np.arange(seq, dtype=np.int64), (batch, 1)),
        "attention_mask": np.ones((batch, 1, 1, seq), bool),
    }
    for name in PAST:
        feeds[name] = np.zeros((batch, KV, 0, HD), np.float32)
    return feeds


def run_in_threads(n, fn):
    """Runs fn(i) in n threads started together; returns the results, re-raises errors."""
    results, errors = [None] * n, []
    barrier = threading.Barrier(n)

    def body(i):
        try:
            barrier.wait()
            results[i] = fn(i)
        except BaseException as e:  # noqa: B902 - reported below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def test_concurrent_runs_match_serial_default_model():
    s = onnx_mini.InferenceSession(str(TESTDATA / "default.onnx"))
    xs = [np.random.default_rng(i).standard_normal((2, 4)).astype(np.float32) for i in range(8)]

    def job(i):
        out = []
        for _ in range(200):
            out.append(s.run(["y"], {"x": xs[i]})[0])
        return out

    for i, outs in enumerate(run_in_threads(8, job)):
        for y in outs:
            np.testing.assert_array_equal(y, expected_default(xs[i]))


def test_concurrent_runs_match_serial_decoder():
    s = onnx_mini.InferenceSession(str(DECODER / "dynamic.onnx"), threads=1)
    feeds = [prefill_feeds(seed) for seed in range(8)]
    serial = [s.run(None, f) for f in feeds]

    def job(i):
        return [s.run(None, feeds[i]) for _ in range(3)]

    for i, repeats in enumerate(run_in_threads(8, job)):
        for outputs in repeats:
            assert len(outputs) == len(serial[i])
            for got, want in zip(outputs, serial[i]):
                np.testing.assert_array_equal(got, want)


def test_concurrent_in_place_caches():
    """8 threads, each with its own static cache bound in place, on one session."""
    s = onnx_mini.InferenceSession(str(DECODER / "static.onnx"), threads=1)
    M = 32

    def decode(seed):
        rng = np.random.default_rng(seed)
        prompt = rng.integers(0, VOCAB, 5).astype(np.int64)
        caches = [np.zeros((1, KV, M, HD), np.float32) for _ in CACHE]
        tokens = []
        length = 0
        ids = prompt
        for _ in range(6):
            S = len(ids)
            feeds = {
                "input_ids": ids[None, :],
                "position_ids": np.arange(length, length + S, dtype=np.int64)[None, :],
                "write_indices": np.array([length], np.int64),
                "nonpad_kv_seqlen": np.array([length + S], np.int64),
            }
            feeds.update(zip(CACHE, caches))
            logits = s.run(["logits"] + PRESENT, feeds, outputs=dict(zip(PRESENT, caches)))[0]
            length += S
            tokens.append(int(np.argmax(logits[0, -1])))
            ids = np.array([tokens[-1]], np.int64)
        return tokens, caches

    serial = [decode(seed) for seed in range(8)]
    for (tokens, caches), (want_tokens, want_caches) in zip(run_in_threads(8, decode), serial):
        assert tokens == want_tokens
        for got, want in zip(caches, want_caches):
            np.testing.assert_array_equal(got, want)


def test_gil_is_released_while_running():
    """A pure-Python thread keeps counting while the model runs. (Measured:
    the counting rate during the run is about that of a sleeping main
    thread when the GIL is released, a few % of it when it is held. Other
    busy processes on a 2-core machine take the counter's core at times,
    down to ~30% of the rate: the best of three tries counts, against 15%.)"""
    s = onnx_mini.InferenceSession(str(DECODER / "dynamic.onnx"), threads=1)
    feeds = prefill_feeds(0, batch=4, seq=640)
    s.run(["logits"], feeds)  # warm up

    def measure():
        count = [0]
        stop = threading.Event()

        def counter():
            while not stop.is_set():
                count[0] += 1

        t = threading.Thread(target=counter)
        t.start()
        try:
            time.sleep(0.05)
            # The counting rate while this thread sleeps (GIL free)...
            c0, t0 = count[0], time.perf_counter()
            time.sleep(0.1)
            rate = (count[0] - c0) / (time.perf_counter() - t0)
            # ...and during runs of the model (0.1 s of them at least: one run
            # can be shorter on a fast machine).
            c0, t0 = count[0], time.perf_counter()
            while time.perf_counter() - t0 < 0.1:
                s.run(["logits"], feeds)
            seconds = time.perf_counter() - t0
            during = (count[0] - c0) / seconds
        finally:
            stop.set()
            t.join()
        assert rate > 0 and seconds > 0.05, (rate, seconds)
        return during / rate

    ratios = []
    for _ in range(3):
        ratios.append(measure())
        if ratios[-1] > 0.15:
            break
    # With the GIL held during the call the counter would (nearly) stand still.
    assert max(ratios) > 0.15, ratios


def test_close_waits_for_runs_in_progress():
    """close() while another thread runs: that run finishes (or, if it had not
    started yet, raises "closed"); the session is freed after it, never under it."""
    for _ in range(5):
        s = onnx_mini.InferenceSession(str(DECODER / "dynamic.onnx"), threads=1)
        feeds = prefill_feeds(1, batch=2, seq=128)
        started = threading.Event()
        result = []

        def job():
            started.set()
            try:
                result.append(s.run(["logits"], feeds)[0])
            except onnx_mini.OnnxMiniError as e:
                result.append(e)

        t = threading.Thread(target=job)
        t.start()
        started.wait()
        time.sleep(0.001)
        s.close()
        t.join()
        [r] = result
        if isinstance(r, onnx_mini.OnnxMiniError):
            assert "closed" in str(r)
        else:
            assert r.shape == (2, 128, VOCAB) and np.isfinite(r).all()
