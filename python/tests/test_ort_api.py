"""onnxruntime's Python API over onnx-mini, name by name: SessionOptions,
RunOptions, InferenceSession's arguments and methods, OrtValue, IOBinding,
run_with_ort_values, ModelMetadata, end_profiling, strings and the exception
classes. (test_ort_script.py runs a whole script written for onnxruntime.)

Strings, metadata and profiling need C API 0.6 functions; their tests skip
only when the library lacks that function.
"""

import json
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import TESTDATA, expected_default, make_model, unary_model
from onnx_builder import node
import onnx_builder as T

import onnx_mini as ort
from onnx_mini import _capi
from onnx_mini.capi import onnxruntime_pybind11_state as pybind_state

X = (np.arange(8, dtype=np.float32) * 0.25 - 1).reshape(2, 4)
DEFAULT = str(TESTDATA / "default.onnx")
CAPI = TESTDATA / "capi"


def needs(function):
    return pytest.mark.skipif(
        not function.available(), reason="the library lacks %s (C API %s)" % (function.name, function.since)
    )


needs_strings = needs(_capi.om_tensor_create_strings)
needs_metadata = needs(_capi.om_session_metadata)
needs_profiling = needs(_capi.om_session_options_enable_profiling)


def silu_model(shape):
    """y = Mul(x, Sigmoid(x)): the rewrites make it one Swish node."""
    return make_model(
        [node("Sigmoid", ["x"], ["s"]), node("Mul", ["x", "s"], ["y"])], [("x", T.FLOAT, shape)], [("y", T.FLOAT, shape)]
    )


def loop_feed(trips):
    """testdata/capi/loop.onnx: y = x + trips, one Loop iteration per unit."""
    return {"trips": np.array(trips, np.int64), "x": np.array([1, 2, 3], np.float32)}


# ---- module and exceptions ----


def test_module_functions():
    assert ort.__version__ == ort.get_version_string()
    assert ort.get_device() == "CPU"
    assert ort.get_available_providers() == ["CPUExecutionProvider"]
    assert ort.get_all_providers() == ["CPUExecutionProvider"]
    assert pybind_state.get_available_providers() == ["CPUExecutionProvider"]
    assert ort.get_build_info().startswith("onnx_mini " + ort.__version__)
    # Called by scripts to quiet onnxruntime: accepted (onnx-mini does not log).
    ort.set_default_logger_severity(3)
    ort.set_default_logger_verbosity(0)
    ort.disable_telemetry_events()
    ort.enable_telemetry_events()
    ort.preload_dlls()
    with pytest.raises(ort.InvalidArgument):
        ort.set_default_logger_severity(5)


NAMES = [
    "Fail", "InvalidArgument", "NoSuchFile", "NoModel", "EngineError", "RuntimeException",
    "InvalidProtobuf", "ModelLoaded", "NotImplemented", "InvalidGraph", "EPFail",
]


def test_exception_classes():
    from onnx_mini.capi import _pybind_state

    for name in NAMES:
        cls = getattr(ort, name)
        assert issubclass(cls, RuntimeError) and issubclass(cls, ort.OnnxMiniError), name
        assert getattr(pybind_state, name) is cls and getattr(_pybind_state, name) is cls
    assert "NotImplemented" not in ort.__all__  # a star import keeps Python's NotImplemented
    # An error made from a status code is that code's class.
    for code, cls in [
        (ort.StatusCode.INVALID_ARGUMENT, ort.InvalidArgument),
        (ort.StatusCode.NOT_FOUND, ort.NoSuchFile),
        (ort.StatusCode.NOT_IMPLEMENTED, ort.NotImplemented),
        (ort.StatusCode.OUT_OF_MEMORY, ort.RuntimeException),
        (ort.StatusCode.INTERNAL, ort.RuntimeException),
        (ort.StatusCode.CANCELLED, ort.Fail),
    ]:
        e = ort.OnnxMiniError("m", code)
        assert type(e) is cls and e.code == code and str(e) == "m"
    assert ort.InvalidArgument("direct").code == ort.StatusCode.INVALID_ARGUMENT


def test_errors_raise_onnxruntimes_classes(tmp_path):
    with pytest.raises(pybind_state.NoSuchFile):
        ort.InferenceSession(str(tmp_path / "absent.onnx"))
    with pytest.raises(pybind_state.InvalidArgument):
        ort.InferenceSession(b"\x08\x07 not a model \xff\xff")
    with pytest.raises(pybind_state.NotImplemented, match="not implemented"):
        ort.InferenceSession(make_model([node("NoSuchOp", ["x"], ["y"])], [("x", T.FLOAT, [2])], [("y", T.FLOAT, [2])]))
    s = ort.InferenceSession(DEFAULT)
    with pytest.raises(pybind_state.InvalidArgument, match="must be tensor\\(float\\)"):
        s.run(None, {"x": X.astype(np.float64)})
    with pytest.raises(RuntimeError):  # as `except RuntimeError` catches onnxruntime's
        s.run(None, {"x": np.zeros((3, 3), np.float32)})


# ---- SessionOptions ----


def test_session_options_defaults():
    so = ort.SessionOptions()
    assert so.intra_op_num_threads == 0 and so.inter_op_num_threads == 0
    assert so.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert so.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL
    assert so.execution_order == ort.ExecutionOrder.DEFAULT
    assert so.enable_profiling is False and so.profile_file_prefix == "onnxruntime_profile_"
    assert so.log_severity_level == 2 and so.log_verbosity_level == 0 and so.logid == ""
    assert so.optimized_model_filepath == ""
    assert so.enable_cpu_mem_arena and so.enable_mem_pattern and so.enable_mem_reuse
    assert so.use_deterministic_compute is False
    assert int(ort.GraphOptimizationLevel.ORT_DISABLE_ALL) == 0 and int(ort.GraphOptimizationLevel.ORT_ENABLE_ALL) == 99
    assert int(ort.ExecutionMode.ORT_PARALLEL) == 1


def test_session_options_are_checked():
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.inter_op_num_threads = 4
    so.execution_mode = ort.ExecutionMode.ORT_PARALLEL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.log_severity_level = 3
    so.log_verbosity_level = 1
    so.logid = "mine"
    so.enable_mem_pattern = False
    with pytest.raises(TypeError):
        so.intra_op_num_threads = 1.5
    with pytest.raises(ort.InvalidArgument):
        so.intra_op_num_threads = -1
    with pytest.raises(TypeError):
        so.graph_optimization_level = 7
    with pytest.raises(ort.InvalidArgument):
        so.log_severity_level = 5
    with pytest.raises(AttributeError):
        so.no_such_option = 1  # as onnxruntime's, no new attributes
    s = ort.InferenceSession(DEFAULT, so)
    np.testing.assert_array_equal(s.run(["y"], {"x": X})[0], expected_default(X))
    got = s.get_session_options()
    assert got is not so and got.intra_op_num_threads == 2 and got.inter_op_num_threads == 4
    assert got.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_BASIC and got.logid == "mine"
    # The session kept a copy: later changes do not reach it.
    so.intra_op_num_threads = 1
    assert s.get_session_options().intra_op_num_threads == 2


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("level", list(ort.GraphOptimizationLevel))
def test_threads_and_levels_compute_the_same(threads, level):
    # Mul(x, Sigmoid(x)) is rewritten into Swish(x) unless ORT_DISABLE_ALL.
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.graph_optimization_level = level
    x = np.linspace(-3, 3, 1001, dtype=np.float32)
    [y] = ort.InferenceSession(silu_model(["n"]), so).run(None, {"x": x})
    np.testing.assert_allclose(y, x / (1 + np.exp(-x.astype(np.float64))), rtol=1e-6, atol=1e-7)


def test_threads_keyword_overrides_session_options():
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    s = ort.InferenceSession(DEFAULT, so, threads=1)
    assert s.get_session_options().intra_op_num_threads == 1 and so.intra_op_num_threads == 2


def test_memory_limit_config_entry():
    so = ort.SessionOptions()
    so.add_session_config_entry("session.onnx_mini.memory_limit_bytes", "65536")
    assert so.get_session_config_entry("session.onnx_mini.memory_limit_bytes") == "65536"
    s = ort.InferenceSession(unary_model("Neg", T.FLOAT), so)
    small = np.ones(1000, np.float32)
    np.testing.assert_array_equal(s.run(None, {"x": small})[0], -small)
    with pytest.raises(ort.RuntimeException, match="memory"):
        s.run(None, {"x": np.ones(1 << 20, np.float32)})  # 4 MiB out of a 64 KiB budget
    np.testing.assert_array_equal(s.run(None, {"x": small})[0], -small)  # still usable
    with pytest.raises(ort.InvalidArgument, match="memory_limit_bytes"):
        so.add_session_config_entry("session.onnx_mini.memory_limit_bytes", "lots")


def test_config_entries_known_and_ignored():
    so = ort.SessionOptions()
    so.add_session_config_entry("session.qdq_matmulnbits_accuracy_level", "0")
    with pytest.raises(ort.InvalidArgument):
        so.add_session_config_entry("session.qdq_matmulnbits_accuracy_level", "9")
    assert so.get_session_config_entry("session.qdq_matmulnbits_accuracy_level") == "0"
    # Keys onnx-mini does not use are kept and ignored, as onnxruntime ignores unused keys.
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.add_session_config_entry("session.set_denormal_as_zero", "1")
    assert so.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    with pytest.raises(RuntimeError, match="does not have configuration with key: nope"):
        so.get_session_config_entry("nope")
    with pytest.raises(TypeError):
        so.add_session_config_entry("key", 1)
    s = ort.InferenceSession(DEFAULT, so)
    np.testing.assert_array_equal(s.run(["y"], {"x": X})[0], expected_default(X))
    assert s.get_session_options().get_session_config_entry("session.set_denormal_as_zero") == "1"


def test_unsupported_session_options():
    so = ort.SessionOptions()
    so.optimized_model_filepath = "/nonexistent/optimized.onnx"
    with pytest.warns(RuntimeWarning, match="does not save optimized models"):
        s = ort.InferenceSession(DEFAULT, so)
    np.testing.assert_array_equal(s.run(["y"], {"x": X})[0], expected_default(X))
    with pytest.raises(ort.NotImplemented):
        ort.SessionOptions().register_custom_ops_library("libx.so")
    with pytest.raises(ort.NotImplemented):
        ort.SessionOptions().add_free_dimension_override_by_name("batch", 1)


# ---- InferenceSession's arguments ----


def test_session_arguments():
    s = ort.InferenceSession(
        Path(DEFAULT), sess_options=None, providers=["CPUExecutionProvider"],
        provider_options=[{"arena_extend_strategy": "kSameAsRequested"}],
    )
    assert s.get_providers() == ["CPUExecutionProvider"]
    assert s.get_provider_options() == {"CPUExecutionProvider": {"arena_extend_strategy": "kSameAsRequested"}}
    assert s.get_overridable_initializers() == []
    ort.InferenceSession(Path(DEFAULT).read_bytes(), disabled_optimizers=["ConstantFolding"])
    with pytest.raises(TypeError, match="sess_options"):
        ort.InferenceSession(DEFAULT, 2)
    with pytest.raises(TypeError, match="unexpected keyword"):
        ort.InferenceSession(DEFAULT, thread=2)
    with pytest.raises(ValueError, match="same length"):
        ort.InferenceSession(DEFAULT, providers=["CPUExecutionProvider"], provider_options=[{}, {}])
    with pytest.raises(ValueError, match="strings or \\(string, dict\\) tuples"):
        ort.InferenceSession(DEFAULT, providers=[42])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = ort.InferenceSession(DEFAULT, providers=[("CUDAExecutionProvider", {"device_id": 0}), "CPUExecutionProvider"])
        s.set_providers(["TensorrtExecutionProvider"])
    assert ["CUDAExecutionProvider" in str(w.message) for w in caught] == [True, False]
    assert "TensorrtExecutionProvider" in str(caught[1].message)
    assert s.get_providers() == ["CPUExecutionProvider"]


def test_run_takes_run_options_third():
    s = ort.InferenceSession(DEFAULT)
    ro = ort.RunOptions()
    [y] = s.run(["y"], {"x": X}, ro)
    np.testing.assert_array_equal(y, expected_default(X))
    with pytest.raises(TypeError, match="run_options must be an onnx_mini.RunOptions"):
        s.run(["y"], {"x": X}, {"y": np.zeros((4, 2), np.float32)})


def test_run_async():
    s = ort.InferenceSession(DEFAULT)
    done = threading.Event()
    got = []

    def callback(results, user_data, err):
        got.append((results, user_data, err))
        done.set()

    s.run_async(["y"], {"x": X}, callback, "mine")
    assert done.wait(60)
    [(results, user_data, err)] = got
    assert user_data == "mine" and err == ""
    np.testing.assert_array_equal(results[0], expected_default(X))
    done.clear()
    got.clear()
    s.run_async(None, {"x": X.astype(np.float64)}, callback, None)
    assert done.wait(60)
    assert got[0][0] is None and "must be tensor(float)" in got[0][2]
    with pytest.raises(TypeError):
        s.run_async(None, {"x": X}, None, None)


# ---- RunOptions ----


def test_run_options_attributes():
    ro = ort.RunOptions()
    assert ro.terminate is False and ro.log_severity_level == 2 and ro.log_verbosity_level == 0
    assert ro.run_tag == "" and ro.logid == "" and ro.only_execute_path_to_fetches is False
    ro.run_tag = "step-1"
    ro.log_severity_level = 0
    ro.only_execute_path_to_fetches = True
    ro.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    assert ro.get_run_config_entry("memory.enable_memory_arena_shrinkage") == "cpu:0"
    with pytest.raises(RuntimeError):
        ro.get_run_config_entry("absent")
    with pytest.raises(TypeError):
        ro.run_tag = 3
    with pytest.raises(AttributeError):
        ro.nope = 1
    s = ort.InferenceSession(DEFAULT)
    np.testing.assert_array_equal(s.run(["y"], {"x": X}, ro)[0], expected_default(X))


def test_terminate_stops_runs_until_cleared():
    s = ort.InferenceSession(str(CAPI / "loop.onnx"))
    ro = ort.RunOptions()
    ro.terminate = True
    assert ro.terminate is True
    with pytest.raises(ort.Fail, match="terminate") as info:
        s.run(None, loop_feed(3), ro)
    assert info.value.code == ort.StatusCode.CANCELLED
    y = np.full(3, -7, np.float32)
    with pytest.raises(ort.Fail):  # nothing written into a bound output
        s.run(None, loop_feed(3), ro, outputs={"y": y})
    assert y.tolist() == [-7, -7, -7]
    ro.terminate = False
    [got] = s.run(None, loop_feed(3), ro, outputs={"y": y})
    assert got is y and y.tolist() == [4, 5, 6]


def test_terminate_from_another_thread():
    s = ort.InferenceSession(str(CAPI / "loop.onnx"))
    ro = ort.RunOptions()
    timer = threading.Timer(0.05, lambda: setattr(ro, "terminate", True))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(ort.Fail, match="run cancelled: terminate flag set"):
            s.run(["y"], loop_feed(1 << 62), ro)  # would take centuries
    finally:
        timer.cancel()
    assert time.monotonic() - start < 60
    ro.terminate = False
    assert s.run(["y"], loop_feed(2), ro)[0].tolist() == [3, 4, 5]


def test_timeout_run_config_entry():
    s = ort.InferenceSession(str(CAPI / "loop.onnx"))
    ro = ort.RunOptions()
    ro.add_run_config_entry("run.onnx_mini.timeout_ms", "50")
    with pytest.raises(ort.Fail, match="deadline of 50 ms"):
        s.run(["y"], loop_feed(1 << 62), ro)
    assert s.run(["y"], loop_feed(5), ro)[0].tolist() == [6, 7, 8]
    with pytest.raises(ort.InvalidArgument):
        ro.add_run_config_entry("run.onnx_mini.timeout_ms", "-1")


# ---- OrtValue ----


def test_ortvalue_from_numpy_shares_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = ort.OrtValue.ortvalue_from_numpy(a)
    assert v.is_tensor() and v.has_value() and not v.is_tensor_sequence() and not v.is_sparse_tensor()
    assert v.shape() == [2, 3] and v.data_type() == "tensor(float)" and v.element_type() == T.FLOAT
    assert v.device_name() == "cpu" and v.data_ptr() == a.__array_interface__["data"][0]
    a[0, 0] = 42  # the same memory
    got = v.numpy()
    assert got[0, 0] == 42 and not np.shares_memory(got, a)  # numpy() is a copy, as onnxruntime's
    v.update_inplace(np.full((2, 3), 5, np.float32))
    assert (a == 5).all()
    with pytest.raises(ort.InvalidArgument, match="4 elements for a tensor of 6"):
        v.update_inplace(np.zeros(4, np.float32))
    with pytest.raises(ort.InvalidArgument, match="numpy float64"):
        v.update_inplace(np.zeros(6))
    # Not contiguous: copied.
    b = np.arange(8, dtype=np.int64)[::2]
    w = ort.OrtValue.ortvalue_from_numpy(b)
    assert w.numpy().tolist() == [0, 2, 4, 6] and w.element_type() == T.INT64 and w.data_type() == "tensor(int64)"
    with pytest.raises(ort.NotImplemented, match="CPU only"):
        ort.OrtValue.ortvalue_from_numpy(a, "cuda", 0)
    assert ort.OrtValue.ortvalue_from_numpy(np.zeros(0, np.float32)).data_ptr() == 0


def test_ortvalue_from_shape_and_type():
    v = ort.OrtValue.ortvalue_from_shape_and_type([2, 5], np.float16)
    assert v.shape() == [2, 5] and v.data_type() == "tensor(float16)" and v.element_type() == T.FLOAT16
    assert (v.numpy() == 0).all()
    bf = ort.OrtValue.ortvalue_from_shape_and_type((3,), T.BFLOAT16)  # an ONNX code, as onnx.TensorProto.BFLOAT16
    assert bf.data_type() == "tensor(bfloat16)" and bf.numpy().dtype == np.uint16
    bits = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(np.array([0x3F80], np.uint16), T.BFLOAT16)
    assert bits.element_type() == T.BFLOAT16
    with pytest.raises(ort.InvalidArgument):
        ort.OrtValue.ortvalue_from_numpy_with_onnx_type(np.zeros(2, np.float32), T.BFLOAT16)
    with pytest.raises(ort.InvalidArgument):
        ort.OrtValue.ortvalue_from_shape_and_type([-1], np.float32)
    with pytest.raises(ValueError):
        ort.OrtValue(np.zeros(2))


def test_run_with_ort_values():
    s = ort.InferenceSession(DEFAULT)
    x = ort.OrtValue.ortvalue_from_numpy(X)
    y, y_shape = s.run_with_ort_values(None, {"x": x})
    assert isinstance(y, ort.OrtValue) and y.shape() == [4, 2] and y.data_type() == "tensor(float)"
    np.testing.assert_array_equal(y.numpy(), expected_default(X))
    assert y_shape.numpy().tolist() == [4, 2] and y_shape.element_type() == T.INT64
    [only] = s.run_with_ort_values(["y_shape"], {"x": x}, ort.RunOptions())
    assert only.numpy().tolist() == [4, 2]
    # OrtValues are taken by run() too.
    np.testing.assert_array_equal(s.run(["y"], {"x": x})[0], expected_default(X))
    with pytest.raises(ort.InvalidArgument, match="OrtValue of tensor\\(int32\\)"):
        s.run_with_ort_values(None, {"x": ort.OrtValue.ortvalue_from_numpy(X.astype(np.int32))})


def test_run_with_ort_values_sequences_and_optionals():
    s = ort.InferenceSession(str(CAPI / "sequence.onnx"))
    x = np.array([6, 7], np.float32)
    longer, count, has, maybe = s.run_with_ort_values(
        None, {"x": ort.OrtValue.ortvalue_from_numpy(x), "seq": [np.array([1], np.float32)], "opt": None}
    )
    assert longer.is_tensor_sequence() and not longer.is_tensor() and longer.data_type() == "seq(tensor(float))"
    assert longer.element_type() == T.FLOAT
    assert count.numpy().tolist() == 2 and has.numpy().tolist() is False
    assert not maybe.has_value() and maybe.data_type() == "optional(tensor(float))"
    with pytest.raises(ort.InvalidArgument):
        maybe.numpy()
    # The IOBinding of a sequence model returns the same kinds.
    binding = s.io_binding()
    binding.bind_cpu_input("x", x)
    binding.bind_cpu_input("seq", [])
    binding.bind_ortvalue_input("opt", ort.OrtValue.ortvalue_from_numpy(x[::-1]))
    binding.bind_output("longer")
    binding.bind_output("maybe")
    s.run_with_iobinding(binding)
    longer, maybe = binding.copy_outputs_to_cpu()
    assert [t.tolist() for t in longer] == [[6, 7]] and maybe.tolist() == [7, 6]


# ---- IOBinding ----


def test_iobinding_cpu_input_and_allocated_outputs():
    s = ort.InferenceSession(DEFAULT)
    binding = s.io_binding()
    binding.bind_cpu_input("x", X)
    binding.bind_output("y")
    binding.bind_output("y_shape", "cpu")
    binding.synchronize_inputs()
    s.run_with_iobinding(binding)
    binding.synchronize_outputs()
    y, y_shape = binding.get_outputs()
    np.testing.assert_array_equal(y.numpy(), expected_default(X))
    assert y_shape.numpy().tolist() == [4, 2]
    copies = binding.copy_outputs_to_cpu()
    np.testing.assert_array_equal(copies[0], expected_default(X))
    # Rebinding the input: the next run reads the new array.
    binding.bind_cpu_input("x", X * 2)
    s.run_with_iobinding(binding, ort.RunOptions())
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], expected_default(X * 2))
    binding.clear_binding_outputs()
    with pytest.raises(ort.InvalidArgument, match="no output is bound"):
        s.run_with_iobinding(binding)
    binding.bind_output("y_shape")
    binding.clear_binding_inputs()
    with pytest.raises(ort.InvalidArgument, match="missing"):
        s.run_with_iobinding(binding)


def test_iobinding_buffer_pointers():
    s = ort.InferenceSession(DEFAULT)
    x = X.copy()
    y = np.full((4, 2), np.nan, np.float32)
    binding = s.io_binding()
    binding.bind_input("x", "cpu", 0, np.float32, list(x.shape), x.__array_interface__["data"][0])
    binding.bind_output("y", "cpu", 0, np.float32, [4, 2], y.__array_interface__["data"][0])
    s.run_with_iobinding(binding)
    np.testing.assert_array_equal(y, expected_default(X))  # written into the caller's memory
    [out] = binding.get_outputs()
    assert out.data_ptr() == y.__array_interface__["data"][0]
    # OrtValues bound.
    yv = ort.OrtValue.ortvalue_from_shape_and_type([4, 2], np.float32)
    binding.bind_ortvalue_input("x", ort.OrtValue.ortvalue_from_numpy(X * 3))
    binding.bind_ortvalue_output("y", yv)
    s.run_with_iobinding(binding)
    np.testing.assert_array_equal(yv.numpy(), expected_default(X * 3))
    assert binding.get_outputs()[0] is yv
    with pytest.raises(ValueError, match="element_type` and `shape`"):
        binding.bind_output("y", "cpu", 0, None, None, y.__array_interface__["data"][0])
    with pytest.raises(ort.InvalidArgument, match="'nope' is not an input"):
        binding.bind_cpu_input("nope", X)
    with pytest.raises(ort.InvalidArgument, match="'nope' is not an output"):
        binding.bind_output("nope")
    with pytest.raises(ort.NotImplemented, match="CPU only"):
        binding.bind_output("y", "cuda", 0)
    with pytest.raises(ort.InvalidArgument, match="shape"):  # a buffer of the wrong shape, checked before the run
        binding.bind_output("y", "cpu", 0, np.float32, [2, 4], y.__array_interface__["data"][0])
        s.run_with_iobinding(binding)


def test_iobinding_cache_updated_in_place():
    """testdata/capi/scatter.onnx: present = TensorScatter(cache, update,
    write_indices); the cache bound as the input and the output by address."""
    s = ort.InferenceSession(str(CAPI / "scatter.onnx"))
    cache = np.arange(16, dtype=np.float32).reshape(2, 4, 2)
    before = cache.copy()
    update = np.array([[[100, 101]], [[200, 201]]], np.float32)
    address = cache.__array_interface__["data"][0]
    binding = s.io_binding()
    binding.bind_input("cache", "cpu", 0, np.float32, [2, 4, 2], address)
    binding.bind_cpu_input("update", update)
    binding.bind_cpu_input("write_indices", np.array([1, 3], np.int64))
    binding.bind_output("present", "cpu", 0, np.float32, [2, 4, 2], address)
    s.run_with_iobinding(binding)
    want = before.copy()
    want[0, 1], want[1, 3] = update[0, 0], update[1, 0]
    np.testing.assert_array_equal(cache, want)
    assert binding.get_outputs()[0].data_ptr() == address


# ---- strings ----


@needs_strings
def test_string_inputs_and_outputs():
    s = ort.InferenceSession(str(CAPI / "strings.onnx"))
    assert s.get_inputs()[0].type == "tensor(string)"
    text = np.array(["abc", "Hello", "x\0y", "été"], dtype=object)
    upper, match, joined, same = s.run(None, {"text": text})
    assert upper.dtype == object and upper.tolist() == ["ABC", "HELLO", "X\0Y", "ÉTÉ"]
    assert match.tolist() == [True, False, False, False]
    assert joined.tolist() == ["abc!", "Hello!", "x\0y!", "été!"]
    assert same.tolist() == text.tolist()
    # numpy str and bytes arrays, and a 2-D shape.
    [same] = s.run(["same"], {"text": np.array(["a", "bc"])})
    assert same.tolist() == ["a", "bc"]
    [same] = s.run(["same"], {"text": np.array([b"a", b"\xff"])})
    assert same[1].encode("utf-8", "surrogateescape") == b"\xff"  # bytes that are not UTF-8 come back as they were
    [v] = s.run_with_ort_values(["upper"], {"text": ort.OrtValue.ortvalue_from_numpy(np.array(["q"]))})
    assert v.data_type() == "tensor(string)" and v.numpy().tolist() == ["Q"]
    with pytest.raises(ort.InvalidArgument, match="tensor\\(string\\)"):
        s.run(None, {"text": np.zeros(2, np.float32)})
    with pytest.raises(ort.InvalidArgument, match="input .text.: a string tensor holds str or bytes, not int"):
        s.run(None, {"text": np.array(["a", 3], dtype=object)})


@needs_strings
def test_string_sequences():
    s = ort.InferenceSession(str(CAPI / "string_sequence.onnx"))
    longer, count = s.run(None, {"text": np.array(["a", "b"]), "seq": [np.array(["q"], dtype=object)]})
    assert [t.tolist() for t in longer] == [["q"], ["a", "b"]] and count.tolist() == 2


# ---- metadata ----


@needs_metadata
def test_modelmeta():
    meta = ort.InferenceSession(str(CAPI / "metadata.onnx")).get_modelmeta()
    assert isinstance(meta, ort.ModelMetadata)
    assert meta.producer_name == "capi-test" and meta.producer_version == "1.2.3"
    assert meta.domain == "org.example" and meta.version == 42
    assert meta.description == "A model with every metadata field."
    assert meta.graph_name == "negate" and meta.graph_description == "Negates x."
    assert meta.custom_metadata_map == {"author": "onnx-mini", "license": "MIT"}
    assert meta.opset_imports == {"": 17, "com.example": 3}
    none = ort.InferenceSession(str(CAPI / "metadata_none.onnx")).get_modelmeta()
    assert (none.producer_name, none.graph_name, none.description, none.custom_metadata_map) == ("", "", "", {})


# ---- profiling ----


def test_end_profiling_without_profiling():
    assert ort.InferenceSession(DEFAULT).end_profiling() == ""  # as onnxruntime


@needs_profiling
def test_profiling_trace(tmp_path):
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "trace")
    s = ort.InferenceSession(DEFAULT, so)
    for _ in range(3):
        s.run(None, {"x": X})
    path = s.end_profiling()
    assert Path(path).name.startswith("trace_") and path.endswith(".json") and Path(path).is_file()
    events = json.loads(Path(path).read_text())
    nodes = [e for e in events if e.get("cat") == "Node"]
    assert all(e["ph"] == "X" and e["name"].endswith("_kernel_time") for e in nodes)
    assert sorted(e["args"]["op_name"] for e in nodes) == sorted(["Mul", "Add", "Transpose", "Shape"] * 3)
    assert [e["args"]["input_type_shape"] for e in nodes if e["args"]["op_name"] == "Transpose"] == [[{"float": [2, 4]}]] * 3
    assert len([e for e in events if e.get("name") == "model_run"]) == 3
    # Unlike onnxruntime (which stops at the first call), each call writes the runs since the one before.
    s.run(["y_shape"], {"x": X})
    second = s.end_profiling()
    assert second != path and Path(second).is_file()
    ops = [e["args"]["op_name"] for e in json.loads(Path(second).read_text()) if e.get("cat") == "Node"]
    assert sorted(ops) == ["Add", "Mul", "Shape", "Transpose"]


@needs_profiling
@pytest.mark.parametrize("level", [ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_ALL])
def test_optimization_level_reaches_the_rewrites(tmp_path, level):
    model = silu_model([3])
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "level")
    s = ort.InferenceSession(model, so)
    s.run(None, {"x": np.array([1, -2, 3], np.float32)})
    ops = {e["args"]["op_name"] for e in json.loads(Path(s.end_profiling()).read_text()) if e.get("cat") == "Node"}
    assert ops == ({"Sigmoid", "Mul"} if level == ort.GraphOptimizationLevel.ORT_DISABLE_ALL else {"Swish"})
