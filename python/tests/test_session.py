"""InferenceSession: introspection, runs, dtypes, inputs handling and errors."""

import gc
import weakref

import numpy as np
import pytest
from conftest import DECODER, TESTDATA, expected_default, make_model, unary_model
from onnx_builder import node
import onnx_builder as T

import onnx_mini
from onnx_mini import OnnxMiniError, StatusCode

X = (np.arange(8, dtype=np.float32) * 0.25 - 1).reshape(2, 4)


def expect_error(code, substring, fn, *args, **kwargs):
    with pytest.raises(OnnxMiniError) as info:
        fn(*args, **kwargs)
    assert info.value.code == code, str(info.value)
    assert substring in str(info.value), str(info.value)
    return info.value


# ---- module ----


def test_module():
    assert onnx_mini.library_version.split(".")[0] == "0"
    assert onnx_mini.__version__
    assert issubclass(OnnxMiniError, RuntimeError)
    assert onnx_mini.get_device() == "CPU"
    assert onnx_mini.get_available_providers() == ["CPUExecutionProvider"]
    e = OnnxMiniError("message", 3)
    assert e.code == StatusCode.NOT_IMPLEMENTED and str(e) == "message" and e.message == "message"


# ---- introspection ----


def test_get_inputs_outputs(default_session):
    [x] = default_session.get_inputs()
    assert (x.name, x.type, x.shape) == ("x", "tensor(float)", [2, 4])
    assert x.elem_type == 1 and x.dtype == np.float32 and x.rank == 2
    assert repr(x) == "NodeArg(name='x', type='tensor(float)', shape=[2, 4])"
    y, y_shape = default_session.get_outputs()
    assert (y.name, y.type, y.shape) == ("y", "tensor(float)", [4, 2])
    assert (y_shape.name, y_shape.type, y_shape.shape) == ("y_shape", "tensor(int64)", [2])
    assert default_session.get_providers() == ["CPUExecutionProvider"]
    # The lists are copies.
    default_session.get_inputs().clear()
    assert len(default_session.get_inputs()) == 1


def test_symbolic_dims():
    s = onnx_mini.InferenceSession(str(TESTDATA / "capi" / "scatter.onnx"))
    assert [(a.name, a.type, a.shape) for a in s.get_inputs()] == [
        ("cache", "tensor(float)", ["batch", "cache", 2]),
        ("update", "tensor(float)", ["batch", 1, 2]),
        ("write_indices", "tensor(int64)", ["batch"]),
    ]
    assert [(a.name, a.shape) for a in s.get_outputs()] == [
        ("present", ["batch", "cache", 2]),
        ("update_neg", ["batch", 1, 2]),
    ]


def test_unknown_dims_and_rank():
    model = make_model(
        [node("Neg", ["x"], ["y"]), node("Neg", ["u"], ["v"])],
        [("x", T.FLOAT, [None, 3]), ("u", T.FLOAT, None)],
        [("y", T.FLOAT, [None, 3]), ("v", T.FLOAT, None)],
    )
    s = onnx_mini.InferenceSession(model)
    x, u = s.get_inputs()
    assert x.shape == [None, 3] and x.rank == 2
    assert u.shape == [] and u.rank is None  # unknown rank: [] as ONNX Runtime, rank None
    y, v = s.run(None, {"x": np.ones((5, 3), np.float32), "u": np.full((2, 2, 2), 2, np.float32)})
    assert y.shape == (5, 3) and (y == -1).all()
    assert v.shape == (2, 2, 2) and (v == -2).all()


def test_decoder_introspection():
    s = onnx_mini.InferenceSession(str(DECODER / "static.onnx"))
    names = [a.name for a in s.get_inputs()]
    assert names[:4] == ["input_ids", "position_ids", "write_indices", "nonpad_kv_seqlen"]
    assert s.get_inputs()[4].shape == ["batch", 2, "cache", 32]
    assert s.get_outputs()[0].shape == ["batch", "seq", 256]
    assert [a.name for a in s.get_outputs()][1:] == [
        "present_key_0",
        "present_value_0",
        "present_key_1",
        "present_value_1",
    ]


# ---- run ----


def test_run_all_outputs(default_session):
    y, y_shape = default_session.run(None, {"x": X})
    assert y.dtype == np.float32 and y.shape == (4, 2)
    np.testing.assert_array_equal(y, expected_default(X))
    assert y_shape.dtype == np.int64 and y_shape.tolist() == [4, 2]
    # An empty list means all outputs too (as ONNX Runtime).
    y2, _ = default_session.run([], {"x": X})
    np.testing.assert_array_equal(y2, y)


def test_run_subset_and_order(default_session):
    y_shape, y = default_session.run(["y_shape", "y"], {"x": X})
    assert y_shape.tolist() == [4, 2] and y.shape == (4, 2)
    [y_shape] = default_session.run(("y_shape",), {"x": X})
    assert y_shape.tolist() == [4, 2]


def test_results_own_their_memory(default_session):
    """Runtime-allocated results are ndarrays over the runtime's tensor (no
    copy), which they keep alive and free with the last view."""
    y, _ = default_session.run(None, {"x": X})
    assert y.flags.c_contiguous and y.flags.writeable and y.flags.aligned
    owner = y.base
    assert type(owner).__name__ == "_TensorOwner"
    ref = weakref.ref(owner)
    del owner
    view = y[1:]
    del y
    gc.collect()
    assert ref() is not None  # the view keeps the tensor alive
    np.testing.assert_array_equal(view, expected_default(X)[1:])
    view[0, 0] = 42  # writeable, the caller's
    del view
    gc.collect()
    assert ref() is None  # freed


def test_outputs_sharing_a_buffer_are_separate_arrays():
    model = make_model(
        [node("Neg", ["x"], ["y"]), node("Identity", ["y"], ["z"])],
        [("x", T.FLOAT, [3])],
        [("y", T.FLOAT, [3]), ("z", T.FLOAT, [3])],
    )
    s = onnx_mini.InferenceSession(model)
    y, z = s.run(None, {"x": np.arange(3, dtype=np.float32)})
    assert not np.shares_memory(y, z)
    y[0] = 7
    assert z.tolist() == [0, -1, -2]


def test_output_never_views_an_input():
    s = onnx_mini.InferenceSession(unary_model("Identity", T.FLOAT))
    x = np.arange(4, dtype=np.float32)
    [y] = s.run(None, {"x": x})
    assert not np.shares_memory(x, y)
    np.testing.assert_array_equal(x, y)


def test_threads_option():
    for threads in (0, 1, 2):
        s = onnx_mini.InferenceSession(str(TESTDATA / "default.onnx"), threads=threads)
        np.testing.assert_array_equal(s.run(["y"], {"x": X})[0], expected_default(X))
    expect_error(StatusCode.INVALID_ARGUMENT, "must be >= 0", onnx_mini.InferenceSession,
                 str(TESTDATA / "default.onnx"), threads=-1)
    with pytest.raises(TypeError):
        onnx_mini.InferenceSession(str(TESTDATA / "default.onnx"), threads=1.5)


def test_providers():
    path = str(TESTDATA / "default.onnx")
    onnx_mini.InferenceSession(path, providers=["CPUExecutionProvider"])
    onnx_mini.InferenceSession(path, providers=[("CPUExecutionProvider", {})])
    # Another provider warns and falls back to the CPU, as onnxruntime does.
    with pytest.warns(UserWarning, match="CUDAExecutionProvider"):
        s = onnx_mini.InferenceSession(path, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert s.get_providers() == ["CPUExecutionProvider"]
    np.testing.assert_array_equal(s.run(["y"], {"x": X})[0], expected_default(X))
    with pytest.raises(ValueError, match="sequence"):
        onnx_mini.InferenceSession(path, providers="CPUExecutionProvider")


def test_path_like_and_close():
    from pathlib import Path

    s = onnx_mini.InferenceSession(Path(TESTDATA) / "default.onnx")
    with s:
        s.run(None, {"x": X})
    expect_error(StatusCode.INVALID_ARGUMENT, "the session is closed", s.run, None, {"x": X})
    s.close()  # twice is fine
    assert s.get_inputs()[0].name == "x"  # the description stays


# ---- loading from bytes ----


def test_load_from_bytes():
    data = (TESTDATA / "default.onnx").read_bytes()
    for model in (data, bytearray(data), memoryview(data)):
        s = onnx_mini.InferenceSession(model)
        np.testing.assert_array_equal(s.run(["y"], {"x": X})[0], expected_default(X))


def test_load_from_model_proto():
    """Anything with SerializeToString(), such as an onnx.ModelProto."""

    class Proto:
        def SerializeToString(self):
            return (TESTDATA / "default.onnx").read_bytes()

    s = onnx_mini.InferenceSession(Proto())
    np.testing.assert_array_equal(s.run(["y"], {"x": X})[0], expected_default(X))


def test_load_from_bytes_with_external_data():
    folder = TESTDATA / "conformance" / "test_mini_external_data"
    data = (folder / "model.onnx").read_bytes()
    expect_error(StatusCode.INVALID_ARGUMENT, "external data", onnx_mini.InferenceSession, data)
    s = onnx_mini.InferenceSession(data, base_dir=str(folder))
    [y] = s.run(["y"], {"x": np.array([1, 2, 3], np.int32)})
    assert y.tolist() == [-9, -18, -27]  # x - [10, 20, 30]
    with pytest.raises(ValueError, match="base_dir"):
        onnx_mini.InferenceSession(str(folder / "model.onnx"), base_dir=str(folder))


def test_load_decoder_from_bytes():
    """The bundled decoder from memory, its weights from base_dir: same logits as from the file."""
    data = (DECODER / "static.onnx").read_bytes()
    from_bytes = onnx_mini.InferenceSession(data, base_dir=str(DECODER))
    from_file = onnx_mini.InferenceSession(str(DECODER / "static.onnx"))
    feeds = {
        "input_ids": np.array([[72, 105]], np.int64),
        "position_ids": np.array([[0, 1]], np.int64),
        "write_indices": np.array([0], np.int64),
        "nonpad_kv_seqlen": np.array([2], np.int64),
    }
    for name in ("cache_key_0", "cache_value_0", "cache_key_1", "cache_value_1"):
        feeds[name] = np.zeros((1, 2, 8, 32), np.float32)
    a = from_bytes.run(["logits"], feeds)[0]
    b = from_file.run(["logits"], feeds)[0]
    np.testing.assert_array_equal(a, b)


# ---- load errors ----


def test_bad_model_path():
    e = expect_error(StatusCode.NOT_FOUND, "cannot open model", onnx_mini.InferenceSession,
                     str(TESTDATA / "no" / "such" / "model.onnx"))
    assert isinstance(e, RuntimeError)


def test_bytes_that_are_not_a_model():
    expect_error(StatusCode.INVALID_ARGUMENT, "", onnx_mini.InferenceSession,
                 b"this is not a protobuf \xff\xff\xff\xff")
    expect_error(StatusCode.INVALID_ARGUMENT, "", onnx_mini.InferenceSession, b"")


def test_unsupported_op():
    expect_error(StatusCode.NOT_IMPLEMENTED, "not implemented: com.example::Affine opset 1",
                 onnx_mini.InferenceSession, str(TESTDATA / "capi" / "custom.onnx"))


def test_not_a_model_argument():
    with pytest.raises(TypeError):
        onnx_mini.InferenceSession(42)


# ---- run errors ----


def test_unknown_input_name(default_session):
    expect_error(StatusCode.INVALID_ARGUMENT, "'z' is not an input of the model (its inputs: x)",
                 default_session.run, None, {"x": X, "z": X})


def test_missing_input(default_session):
    expect_error(StatusCode.INVALID_ARGUMENT, "input 'x' is missing", default_session.run, None, {})


def test_wrong_dtype(default_session):
    """A dtype other than the declared one raises, as in ONNX Runtime (no conversion)."""
    expect_error(StatusCode.INVALID_ARGUMENT, "input 'x' must be tensor(float) (numpy float32), got numpy float64",
                 default_session.run, None, {"x": X.astype(np.float64)})
    expect_error(StatusCode.INVALID_ARGUMENT, "got numpy int32",
                 default_session.run, None, {"x": X.astype(np.int32)})
    # Python lists get NumPy's default dtype (float64): an error for a float input.
    expect_error(StatusCode.INVALID_ARGUMENT, "got numpy float64",
                 default_session.run, None, {"x": X.tolist()})


def test_lists_match_default_dtypes():
    s = onnx_mini.InferenceSession(unary_model("Neg", T.INT64))
    assert s.run(None, {"x": [1, 2, 3]})[0].tolist() == [-1, -2, -3]
    s = onnx_mini.InferenceSession(unary_model("Neg", T.DOUBLE))
    assert s.run(None, {"x": [1.5]})[0].tolist() == [-1.5]
    s = onnx_mini.InferenceSession(unary_model("Not", T.BOOL))
    assert s.run(None, {"x": [True, False]})[0].tolist() == [False, True]


def test_scalar_input():
    s = onnx_mini.InferenceSession(unary_model("Neg", T.FLOAT, shape=()))
    [y] = s.run(None, {"x": np.float32(2.5)})
    assert y.shape == () and y == -2.5


def test_wrong_shape(default_session):
    expect_error(StatusCode.INVALID_ARGUMENT, "input 'x' must have shape float[2,4], got [4,2]",
                 default_session.run, None, {"x": X.reshape(4, 2)})


def test_non_contiguous_input_is_copied(default_session):
    """A non-contiguous array of the right dtype is made contiguous (a copy) and works."""
    big = np.zeros((4, 8), np.float32)
    big[::2, ::2] = X
    view = big[::2, ::2]
    assert not view.flags.c_contiguous
    [y] = default_session.run(["y"], {"x": view})
    np.testing.assert_array_equal(y, expected_default(X))
    fortran = np.asfortranarray(X)
    np.testing.assert_array_equal(default_session.run(["y"], {"x": fortran})[0], expected_default(X))
    # Another byte order with the same values: converted too.
    swapped = X.astype(X.dtype.newbyteorder())
    np.testing.assert_array_equal(default_session.run(["y"], {"x": swapped})[0], expected_default(X))


def test_unknown_output_name(default_session):
    expect_error(StatusCode.INVALID_ARGUMENT, "'w' is not an output of the model",
                 default_session.run, ["w"], {"x": X})
    expect_error(StatusCode.INVALID_ARGUMENT, "output 'y' is asked for twice",
                 default_session.run, ["y", "y"], {"x": X})
    with pytest.raises(TypeError):
        default_session.run("y", {"x": X})
    with pytest.raises(TypeError):
        default_session.run([1], {"x": X})
    with pytest.raises(TypeError):
        default_session.run(None, [X])


def test_session_usable_after_errors(default_session):
    for bad in ({}, {"x": X.reshape(4, 2)}, {"x": X.astype(np.int64)}):
        with pytest.raises(OnnxMiniError):
            default_session.run(None, bad)
    np.testing.assert_array_equal(default_session.run(["y"], {"x": X})[0], expected_default(X))


# ---- bound outputs (the general case; the cache in place is in test_inplace.py) ----


def test_bound_output(default_session):
    y = np.zeros((4, 2), np.float32)
    result, y_shape = default_session.run(["y", "y_shape"], {"x": X}, outputs={"y": y})
    assert result is y
    np.testing.assert_array_equal(y, expected_default(X))
    assert y_shape.tolist() == [4, 2]
    # With output_names None (all outputs).
    y[:] = 0
    result, _ = default_session.run(None, {"x": X}, outputs={"y": y})
    assert result is y and (y == expected_default(X)).all()


def test_bound_output_of_wrong_shape_is_untouched(default_session):
    small = np.full((3, 2), 7, np.float32)
    expect_error(StatusCode.INVALID_ARGUMENT, "outputs['y'] has shape [3, 2], but the output's shape is [4, 2]",
                 default_session.run, ["y"], {"x": X}, outputs={"y": small})
    assert (small == 7).all()
    wide = np.full((4, 2), 7, np.float64)
    expect_error(StatusCode.INVALID_ARGUMENT, "outputs['y'] must be tensor(float) (numpy float32), got numpy float64",
                 default_session.run, ["y"], {"x": X}, outputs={"y": wide})
    assert (wide == 7).all()


def test_bound_output_of_wrong_symbolic_shape_is_untouched():
    """Symbolic dims are checked by the runtime against the inputs, before running."""
    s = onnx_mini.InferenceSession(str(TESTDATA / "capi" / "scatter.onnx"))
    cache = np.arange(16, dtype=np.float32).reshape(2, 4, 2)
    other = np.full((2, 3, 2), 5, np.float32)
    feeds = {"cache": cache, "update": np.ones((2, 1, 2), np.float32), "write_indices": np.array([0, 1])}
    expect_error(StatusCode.INVALID_ARGUMENT, "output 'present': the caller's buffer is float[2,3,2]",
                 s.run, ["present"], feeds, outputs={"present": other})
    assert (other == 5).all()
    assert (cache == np.arange(16).reshape(2, 4, 2)).all()


def test_bound_output_must_be_contiguous_and_writeable(default_session):
    y = np.zeros((2, 4), np.float32).T
    expect_error(StatusCode.INVALID_ARGUMENT, "must be C-contiguous", default_session.run, ["y"], {"x": X},
                 outputs={"y": y})
    y = np.zeros((4, 2), np.float32)
    y.flags.writeable = False
    expect_error(StatusCode.INVALID_ARGUMENT, "is read-only", default_session.run, ["y"], {"x": X},
                 outputs={"y": y})
    with pytest.raises(TypeError):
        default_session.run(["y"], {"x": X}, outputs={"y": [[0.0] * 2] * 4})
    expect_error(StatusCode.INVALID_ARGUMENT, "'w' is not an output of the model", default_session.run,
                 ["y"], {"x": X}, outputs={"w": np.zeros(2, np.float32)})
    expect_error(StatusCode.INVALID_ARGUMENT, "not among the output names asked for", default_session.run,
                 ["y_shape"], {"x": X}, outputs={"y": np.zeros((4, 2), np.float32)})


def test_bound_outputs_must_not_overlap():
    model = make_model(
        [node("Neg", ["x"], ["y"]), node("Abs", ["x"], ["z"])],
        [("x", T.FLOAT, [3])],
        [("y", T.FLOAT, [3]), ("z", T.FLOAT, [3])],
    )
    s = onnx_mini.InferenceSession(model)
    buf = np.zeros(4, np.float32)
    expect_error(StatusCode.INVALID_ARGUMENT, "bound to overlapping memory", s.run, None,
                 {"x": np.ones(3, np.float32)}, outputs={"y": buf[:3], "z": buf[1:]})


# ---- dtypes ----


def test_float16():
    s = onnx_mini.InferenceSession(unary_model("Neg", T.FLOAT16))
    assert s.get_inputs()[0].type == "tensor(float16)" and s.get_inputs()[0].dtype == np.float16
    x = np.array([1.5, -2.25, 65504], np.float16)
    [y] = s.run(None, {"x": x})
    assert y.dtype == np.float16 and y.tolist() == [-1.5, 2.25, -65504]
    expect_error(StatusCode.INVALID_ARGUMENT, "must be tensor(float16)", s.run, None, {"x": x.astype(np.float32)})


def test_bool():
    s = onnx_mini.InferenceSession(unary_model("Not", T.BOOL))
    assert s.get_inputs()[0].type == "tensor(bool)"
    [y] = s.run(None, {"x": np.array([True, False, True])})
    assert y.dtype == np.bool_ and y.tolist() == [False, True, False]


def test_bfloat16_as_uint16_bits():
    cast = onnx_mini.InferenceSession(unary_model("Cast", T.FLOAT, T.BFLOAT16, to=T.BFLOAT16))
    assert cast.get_outputs()[0].type == "tensor(bfloat16)" and cast.get_outputs()[0].dtype == np.uint16
    [bits] = cast.run(None, {"x": np.array([1.0, -2.5, 3.0], np.float32)})
    assert bits.dtype == np.uint16 and bits.tolist() == [0x3F80, 0xC020, 0x4040]
    back = onnx_mini.InferenceSession(unary_model("Cast", T.BFLOAT16, T.FLOAT, to=T.FLOAT))
    [y] = back.run(None, {"x": bits})
    assert y.tolist() == [1.0, -2.5, 3.0]
    # The bits are the high half of a float32: NumPy can decode them.
    assert ((bits.astype(np.uint32) << 16).view(np.float32) == y).all()
    expect_error(StatusCode.INVALID_ARGUMENT, "tensor(bfloat16) (numpy uint16 bits)", back.run, None,
                 {"x": np.ones(3, np.float32)})


@pytest.mark.parametrize(
    "elem_type,dtype",
    [(1, np.float32), (2, np.uint8), (3, np.int8), (4, np.uint16), (5, np.int16), (6, np.int32), (7, np.int64),
     (9, np.bool_), (10, np.float16), (11, np.float64), (12, np.uint32), (13, np.uint64)],
)
def test_identity_round_trip(elem_type, dtype):
    s = onnx_mini.InferenceSession(unary_model("Identity", elem_type))
    x = (np.arange(6) % 2 if dtype is np.bool_ else np.arange(6)).astype(dtype).reshape(6)
    [y] = s.run(None, {"x": x})
    assert y.dtype == dtype
    np.testing.assert_array_equal(x, y)


def test_empty_tensor():
    s = onnx_mini.InferenceSession(unary_model("Neg", T.FLOAT))
    [y] = s.run(None, {"x": np.zeros((0,), np.float32)})
    assert y.shape == (0,) and y.dtype == np.float32


# ---- sequences and optionals (testdata/capi/sequence.onnx) ----
# longer = SequenceInsert(seq, x), count = SequenceLength(longer),
# has = OptionalHasElement(opt), maybe = Identity(opt).


def test_sequence_and_optional_types():
    s = onnx_mini.InferenceSession(str(TESTDATA / "capi" / "sequence.onnx"))
    assert [(a.name, a.type, a.shape) for a in s.get_inputs()] == [
        ("x", "tensor(float)", ["n"]),
        ("seq", "seq(tensor(float))", []),  # onnxruntime: a sequence has no shape
        ("opt", "optional(tensor(float))", [None]),
    ]
    assert [a.type for a in s.get_outputs()] == [
        "seq(tensor(float))", "tensor(int64)", "tensor(bool)", "optional(tensor(float))"
    ]


def test_sequences_are_lists_and_an_empty_optional_is_none():
    s = onnx_mini.InferenceSession(str(TESTDATA / "capi" / "sequence.onnx"))
    a, b, x = np.array([1, 2], np.float32), np.array([3, 4, 5], np.float32), np.array([6, 7], np.float32)
    longer, count, has, maybe = s.run(None, {"x": x, "seq": [a, b], "opt": None})
    assert isinstance(longer, list) and [t.tolist() for t in longer] == [[1, 2], [3, 4, 5], [6, 7]]
    assert count.tolist() == 3 and has.tolist() is False and maybe is None
    has, maybe = s.run(["has", "maybe"], {"x": x, "seq": (), "opt": x[::-1]})
    assert has.tolist() is True and maybe.tolist() == [7, 6]
    [longer] = s.run(["longer"], {"x": x, "seq": [], "opt": None})
    assert [t.tolist() for t in longer] == [[6, 7]]


def test_sequence_errors():
    s = onnx_mini.InferenceSession(str(TESTDATA / "capi" / "sequence.onnx"))
    x = np.array([6, 7], np.float32)
    with pytest.raises(onnx_mini.OnnxMiniError, match="input 'seq' is seq\\(tensor\\(float\\)\\): give a list"):
        s.run(None, {"x": x, "seq": x, "opt": None})
    with pytest.raises(onnx_mini.OnnxMiniError, match="must be tensor\\(float\\)"):
        s.run(None, {"x": x, "seq": [np.zeros(2, np.int64)], "opt": None})
    with pytest.raises(onnx_mini.OnnxMiniError, match="makes its own outputs"):
        s.run(["count"], {"x": x, "seq": [], "opt": None}, outputs={"count": np.zeros((), np.int64)})
    with pytest.raises(onnx_mini.OnnxMiniError, match="'nope' is not an input"):
        s.run(None, {"nope": x})
    with pytest.raises(onnx_mini.OnnxMiniError, match="'opt' is missing"):
        s.run(None, {"x": x, "seq": []})


def test_sequence_inputs_that_are_copies_stay_alive_through_the_run():
    s = onnx_mini.InferenceSession(str(TESTDATA / "capi" / "sequence.onnx"))
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    b = -np.arange(6, dtype=np.float32).reshape(3, 2)
    # Columns are not contiguous: both are copied before the run.
    longer, maybe = s.run(["longer", "maybe"], {"x": a[:2, 1], "seq": [a[:, 0], b[:, 0]], "opt": b[:, 1]})
    assert [t.tolist() for t in longer] == [[0, 2, 4], [0, -2, -4], [1, 3]]
    assert maybe.tolist() == [-1, -3, -5]


def test_sequence_output_kinds_and_duplicates():
    s = onnx_mini.InferenceSession(str(TESTDATA / "capi" / "sequence.onnx"))
    assert [a.kind for a in s.get_inputs()] == [0, 1, 2]
    x = np.array([6, 7], np.float32)
    with pytest.raises(onnx_mini.OnnxMiniError, match="asked for twice"):
        s.run(["has", "has"], {"x": x, "seq": [], "opt": None})
