"""A script written for onnxruntime's Python API, run over onnx-mini with its
imports changed and nothing else:

    import onnxruntime as ort      ->      import onnx_mini as ort
    from onnxruntime.capi.onnxruntime_pybind11_state import ...
                                   ->      from onnx_mini.capi.onnxruntime_pybind11_state import ...

It uses the API the way onnxruntime's documentation and Optimum's ORTModel
classes do: threads and the optimization level through SessionOptions, a
greedy decode whose KV cache is bound through io_binding() by address (the
past buffers of one step are the present buffers of the step before, as
Optimum's ORTModelForCausalLM binds them; and a static cache bound as input
and output at once, updated in place), outputs as OrtValues fed back as the
next inputs, a long run cancelled from another thread through
RunOptions.terminate, a profile ended and its JSON loaded, the model's
metadata, string tensors, and errors caught by onnxruntime's exception
classes. Every way of decoding must give the tokens of plain run() calls.

Only the `needs(...)` marks below are not onnxruntime's: they skip a test
while the C library lacks the function it needs (C API 0.6).
"""

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import onnx_mini as ort  # was: import onnxruntime as ort

TESTDATA = Path(__file__).resolve().parents[2] / "testdata"
DECODER = TESTDATA / "decoder"
LAYERS, KV_HEADS, HEAD_DIM, VOCAB = 2, 2, 32, 256  # testdata/decoder/config.txt
PROMPT = list(b"Hello")
NEW_TOKENS = 6


def needs(function_name):  # the harness, not the script: skip while the library lacks it
    from onnx_mini import _capi

    f = getattr(_capi, function_name)
    return pytest.mark.skipif(not f.available(), reason="the library lacks %s" % f.name)


# Optimum's TypeHelper.ort_type_to_numpy_type.
ORT_TO_NUMPY = {
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(bool)": np.bool_,
}


def session_options(threads=1, level=ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = level
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    return so


def load(path, so=None):
    return ort.InferenceSession(str(path), sess_options=so or session_options(), providers=["CPUExecutionProvider"])


PAST = ["past_%s_%d" % (kind, layer) for layer in range(LAYERS) for kind in ("key", "value")]
PRESENT = ["present_%s_%d" % (kind, layer) for layer in range(LAYERS) for kind in ("key", "value")]
CACHE = ["cache_%s_%d" % (kind, layer) for layer in range(LAYERS) for kind in ("key", "value")]


def dynamic_feeds(ids, start):
    total = start + len(ids)
    return {
        "input_ids": np.array([ids], np.int64),
        "position_ids": np.arange(start, total, dtype=np.int64)[None, :],
        "attention_mask": np.ones((1, 1, 1, total), np.bool_),
    }


def decode_with_run(session):
    """Plain run(): each present fed back as the next past."""
    pasts = [np.zeros((1, KV_HEADS, 0, HEAD_DIM), np.float32) for _ in PAST]
    ids, start, tokens = PROMPT, 0, []
    for _ in range(NEW_TOKENS):
        feeds = dynamic_feeds(ids, start)
        feeds.update(zip(PAST, pasts))
        logits, *pasts = session.run(["logits"] + PRESENT, feeds)
        tokens.append(int(np.argmax(logits[0, -1])))
        start += len(ids)
        ids = tokens[-1:]
    return tokens


def test_threads_and_optimization_levels_agree():
    reference = decode_with_run(load(DECODER / "dynamic.onnx"))
    assert len(reference) == NEW_TOKENS and all(0 <= t < VOCAB for t in reference)
    for threads in (1, 2):
        for level in (ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED):
            session = load(DECODER / "dynamic.onnx", session_options(threads, level))
            assert decode_with_run(session) == reference, (threads, level)
    feeds = dynamic_feeds(PROMPT, 0)
    feeds.update((name, np.zeros((1, KV_HEADS, 0, HEAD_DIM), np.float32)) for name in PAST)
    plain = load(DECODER / "dynamic.onnx", session_options(1, ort.GraphOptimizationLevel.ORT_DISABLE_ALL))
    fused = load(DECODER / "dynamic.onnx", session_options(2))
    np.testing.assert_allclose(fused.run(["logits"], feeds)[0], plain.run(["logits"], feeds)[0], rtol=1e-4, atol=1e-4)


def test_kv_cache_through_io_binding_as_optimum_binds_it():
    """ORTModelForCausalLM with use_io_binding: every input bound by address
    with its type from get_inputs(), the outputs bound to buffers allocated
    for their shapes; the presents of a step are the pasts of the next."""
    session = load(DECODER / "dynamic.onnx")
    reference = decode_with_run(load(DECODER / "dynamic.onnx"))
    input_types = {i.name: ORT_TO_NUMPY[i.type] for i in session.get_inputs()}
    output_types = {o.name: ORT_TO_NUMPY[o.type] for o in session.get_outputs()}
    assert set(PAST) <= set(input_types) and set(PRESENT) <= set(output_types)

    io_binding = session.io_binding()
    pasts = [np.zeros((1, KV_HEADS, 0, HEAD_DIM), np.float32) for _ in PAST]
    ids, start, tokens = PROMPT, 0, []
    for _ in range(NEW_TOKENS):
        feeds = dynamic_feeds(ids, start)
        feeds.update(zip(PAST, pasts))
        for name, array in feeds.items():
            array = np.ascontiguousarray(array)
            feeds[name] = array  # kept alive: the binding holds only the address
            io_binding.bind_input(name, "cpu", 0, input_types[name], list(array.shape), array.ctypes.data)
        total = start + len(ids)
        logits = np.empty((1, len(ids), VOCAB), output_types["logits"])
        io_binding.bind_output("logits", "cpu", 0, output_types["logits"], list(logits.shape), logits.ctypes.data)
        presents = [np.empty((1, KV_HEADS, total, HEAD_DIM), np.float32) for _ in PRESENT]
        for name, buffer in zip(PRESENT, presents):
            io_binding.bind_output(name, "cpu", 0, output_types[name], list(buffer.shape), buffer.ctypes.data)
        io_binding.synchronize_inputs()
        session.run_with_iobinding(io_binding)
        io_binding.synchronize_outputs()
        outputs = io_binding.get_outputs()
        assert outputs[0].data_ptr() == logits.ctypes.data  # written where it was bound
        tokens.append(int(np.argmax(logits[0, -1])))
        pasts = presents
        start, ids = total, tokens[-1:]
    assert tokens == reference


def test_static_cache_bound_as_input_and_output_is_updated_in_place():
    """static.onnx: cache_* [batch, kv_heads, max_len, head_dim] in,
    present_* the same out (TensorScatter). Each cache buffer is bound as
    both, by address, so a step writes only its new rows into it."""
    session = load(DECODER / "static.onnx")
    reference = decode_with_run(load(DECODER / "dynamic.onnx"))
    max_len = 32
    caches = [np.zeros((1, KV_HEADS, max_len, HEAD_DIM), np.float32) for _ in CACHE]
    io_binding = session.io_binding()
    for name, present, cache in zip(CACHE, PRESENT, caches):
        io_binding.bind_input(name, "cpu", 0, np.float32, list(cache.shape), cache.ctypes.data)
        io_binding.bind_output(present, "cpu", 0, np.float32, list(cache.shape), cache.ctypes.data)
    ids, start, tokens = PROMPT, 0, []
    for step in range(NEW_TOKENS):
        total = start + len(ids)
        io_binding.bind_cpu_input("input_ids", np.array([ids], np.int64))
        io_binding.bind_cpu_input("position_ids", np.arange(start, total, dtype=np.int64)[None, :])
        io_binding.bind_cpu_input("write_indices", np.array([start], np.int64))
        io_binding.bind_cpu_input("nonpad_kv_seqlen", np.array([total], np.int64))
        if step == 0:
            io_binding.bind_output("logits")  # the runtime allocates it at each run
        session.run_with_iobinding(io_binding)
        logits = io_binding.copy_outputs_to_cpu()[-1]
        tokens.append(int(np.argmax(logits[0, -1])))
        start, ids = total, tokens[-1:]
    assert tokens == reference
    # The rows written are exactly those of the tokens seen; the rest are untouched zeros.
    for cache in caches:
        assert np.abs(cache[:, :, : start]).sum() > 0 and not cache[:, :, start:].any()


def test_outputs_as_ort_values_fed_back():
    session = load(DECODER / "dynamic.onnx")
    reference = decode_with_run(load(DECODER / "dynamic.onnx"))
    pasts = [ort.OrtValue.ortvalue_from_numpy(np.zeros((1, KV_HEADS, 0, HEAD_DIM), np.float32)) for _ in PAST]
    ids, start, tokens = PROMPT, 0, []
    for _ in range(NEW_TOKENS):
        feeds = {k: ort.OrtValue.ortvalue_from_numpy(v) for k, v in dynamic_feeds(ids, start).items()}
        feeds.update(zip(PAST, pasts))
        logits, *pasts = session.run_with_ort_values(["logits"] + PRESENT, feeds)
        assert logits.data_type() == "tensor(float)" and logits.device_name() == "cpu"
        assert logits.shape() == [1, len(ids), VOCAB] and pasts[0].shape() == [1, KV_HEADS, start + len(ids), HEAD_DIM]
        tokens.append(int(np.argmax(logits.numpy()[0, -1])))
        start, ids = start + len(ids), tokens[-1:]
    assert tokens == reference


def test_cancel_a_long_run_from_another_thread():
    # loop.onnx: y = x + trips, one Loop iteration per unit.
    session = load(TESTDATA / "capi" / "loop.onnx")
    feeds = {"trips": np.array(1 << 62, np.int64), "x": np.array([1, 2, 3], np.float32)}
    run_options = ort.RunOptions()
    run_options.run_tag = "long-loop"
    run_options.log_severity_level = 3

    def stop():
        time.sleep(0.1)
        run_options.terminate = True

    thread = threading.Thread(target=stop)
    start = time.monotonic()
    thread.start()
    try:
        session.run(None, feeds, run_options)
        raise AssertionError("the run was not cancelled")
    except ort.capi.onnxruntime_pybind11_state.Fail as e:
        assert "terminate flag" in str(e)
    thread.join()
    assert time.monotonic() - start >= 0.1  # it was running when the flag was set
    run_options.terminate = False
    feeds["trips"] = np.array(4, np.int64)
    assert session.run(["y"], feeds, run_options)[0].tolist() == [5, 6, 7]


@needs("om_session_options_enable_profiling")
def test_profile_ended_and_loaded(tmp_path):
    so = session_options()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "ort_profile")
    session = ort.InferenceSession(str(TESTDATA / "default.onnx"), so, providers=["CPUExecutionProvider"])
    for _ in range(5):
        session.run(None, {"x": np.ones((2, 4), np.float32)})
    profile_file = session.end_profiling()
    with open(profile_file) as f:
        trace = json.load(f)
    by_op = {}
    for event in trace:
        if event["cat"] == "Node" and event["name"].endswith("_kernel_time"):
            by_op[event["args"]["op_name"]] = by_op.get(event["args"]["op_name"], 0) + event["dur"]
            assert event["ph"] == "X" and event["ts"] >= 0 and event["dur"] >= 0
    assert set(by_op) == {"Mul", "Add", "Transpose", "Shape"}


@needs("om_session_metadata")
def test_model_metadata():
    meta = load(TESTDATA / "capi" / "metadata.onnx").get_modelmeta()
    assert (meta.producer_name, meta.graph_name, meta.domain, meta.version) == ("capi-test", "negate", "org.example", 42)
    assert meta.description == "A model with every metadata field." and meta.graph_description == "Negates x."
    assert meta.custom_metadata_map["author"] == "onnx-mini"


@needs("om_tensor_create_strings")
def test_strings():
    session = load(TESTDATA / "capi" / "strings.onnx")
    upper, match = session.run(["upper", "match"], {"text": np.array(["onnx", "Mini"])})
    assert upper.tolist() == ["ONNX", "MINI"] and match.tolist() == [True, False]


def test_a_declared_scalar_fed_as_shape_one():
    # scalar.onnx: y = x * s, id = Identity(s), s a declared scalar; fed as
    # [1], the way the JavaScript front ends of silero VAD feed its `sr`.
    session = load(TESTDATA / "capi" / "scalar.onnx")
    assert session.get_inputs()[1].shape == []
    x = np.array([1, 2, 3], np.float32)
    y, scalar = session.run(None, {"x": x, "s": np.array([2], np.float32)})
    # onnxruntime 1.30 runs it as given (warning that {} was expected): [1].
    assert y.tolist() == [2, 4, 6] and scalar.shape == (1,) and scalar.tolist() == [2]
    y, scalar = session.run(None, {"x": x, "s": np.array(3, np.float32)})
    assert y.tolist() == [3, 6, 9] and scalar.shape == ()
    # An output array of the shape it then has is written in place.
    binding = session.io_binding()
    binding.bind_cpu_input("x", x)
    binding.bind_cpu_input("s", np.array([4], np.float32))
    out = np.zeros([1], np.float32)
    binding.bind_output("id", "cpu", 0, np.float32, [1], out.ctypes.data)
    session.run_with_iobinding(binding)
    assert out.tolist() == [4]
    # Given as a scalar, the result is one: the [1] array is refused, not written.
    binding.bind_cpu_input("s", np.array(5, np.float32))
    refused = ort.capi.onnxruntime_pybind11_state.InvalidArgument
    with pytest.raises(refused, match="float\\[1\\] but the result is float\\[\\]"):
        session.run_with_iobinding(binding)
    assert out.tolist() == [4]


def test_errors_by_onnxruntime_class():
    from onnx_mini.capi.onnxruntime_pybind11_state import InvalidArgument, NoSuchFile  # was: from onnxruntime.capi...

    with pytest.raises(NoSuchFile):
        ort.InferenceSession(str(TESTDATA / "no_such_model.onnx"), providers=["CPUExecutionProvider"])
    session = load(TESTDATA / "default.onnx")
    with pytest.raises(InvalidArgument):
        session.run(None, {"x": np.ones((2, 4), np.float64)})
    with pytest.warns(UserWarning, match="CUDAExecutionProvider"):
        session = ort.InferenceSession(
            str(TESTDATA / "default.onnx"), providers=["CUDAExecutionProvider", "CPUExecutionProvider"]
        )
    assert session.get_providers() == ["CPUExecutionProvider"]
    assert "CPUExecutionProvider" in ort.get_available_providers() and ort.get_device() == "CPU"
