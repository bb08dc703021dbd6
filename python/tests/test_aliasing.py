"""Issue #23 through the Python layer: bound outputs that alias inputs, bool
arrays with bytes other than 0 and 1, unaligned arrays, many outputs."""

import numpy as np
import pytest
from conftest import make_model
from onnx_builder import node
import onnx_builder as T

import onnx_mini
from onnx_mini import OnnxMiniError, StatusCode


def neg_and_identity(neg_first):
    outputs = [("neg", T.FLOAT, ["n"]), ("id", T.FLOAT, ["n"])]
    return onnx_mini.InferenceSession(
        make_model(
            [node("Neg", ["x"], ["neg"]), node("Identity", ["x"], ["id"])],
            [("x", T.FLOAT, ["n"])],
            outputs if neg_first else outputs[::-1],
        ),
        threads=2,
    )


@pytest.mark.parametrize("neg_first", [True, False])
def test_a_view_of_the_input_is_read_before_the_bound_output_overwrites_it(neg_first):
    s = neg_and_identity(neg_first)
    x = np.arange(1, 5, dtype=np.float32)
    neg, ident = s.run(["neg", "id"], {"x": x}, outputs={"neg": x})
    assert neg is x
    assert x.tolist() == [-1, -2, -3, -4]
    assert ident.tolist() == [1, 2, 3, 4]  # x from before the run
    assert not np.shares_memory(ident, x)


@pytest.mark.parametrize("shift", [1, -1])
def test_a_bound_output_over_the_input_shifted_by_one_element(shift):
    s = neg_and_identity(True)
    n = 1 << 20
    memory = np.arange(n + 1, dtype=np.float32)
    x = memory[:-1] if shift > 0 else memory[1:]
    y = memory[1:] if shift > 0 else memory[:-1]
    expected = x.copy()
    s.run(["id"], {"x": x}, outputs={"id": y})
    assert np.count_nonzero(y != expected) == 0


def bool_ops():
    return onnx_mini.InferenceSession(
        make_model(
            [
                node("Not", ["m"], ["not"]),
                node("Equal", ["m", "true"], ["eq"]),
                node("Cast", ["m"], ["f"], to=T.FLOAT),
                node("NonZero", ["m"], ["nz"]),
            ],
            [("m", T.BOOL, ["n"])],
            [("not", T.BOOL, ["n"]), ("eq", T.BOOL, ["n"]), ("f", T.FLOAT, ["n"]), ("nz", T.INT64, [1, None])],
            initializers=[T.tensor("true", np.array(True), T.BOOL)],
        )
    )


def test_bool_bytes_other_than_0_and_1_are_true():
    s = bool_ops()
    raw = np.array([0, 255, 2, 0, 1], np.uint8)
    mask = raw.view(np.bool_)  # a NumPy view of uint8 as bool: bytes 255 and 2
    no, eq, f, nz = s.run(None, {"m": mask})
    assert no.view(np.uint8).tolist() == [1, 0, 0, 1, 0]
    assert eq.view(np.uint8).tolist() == [0, 1, 1, 0, 1]
    assert f.tolist() == [0, 1, 1, 0, 1]
    assert nz.tolist() == [[1, 2, 4]]
    assert raw.tolist() == [0, 255, 2, 0, 1]  # the caller's memory is untouched


def test_unaligned_input_is_copied_and_unaligned_output_refused():
    s = onnx_mini.InferenceSession(
        make_model([node("Neg", ["x"], ["y"])], [("x", T.FLOAT, [4])], [("y", T.FLOAT, [4])])
    )
    x = np.frombuffer(bytearray(17), np.uint8)[1:].view(np.float32)
    assert not x.flags.aligned
    x[...] = [1, 2, 3, 4]
    [y] = s.run(None, {"x": x})
    assert y.tolist() == [-1, -2, -3, -4]
    out = np.frombuffer(bytearray(17), np.uint8)[1:].view(np.float32)
    with pytest.raises(OnnxMiniError, match="not aligned") as e:
        s.run(None, {"x": x}, outputs={"y": out})
    assert e.value.code == StatusCode.INVALID_ARGUMENT


def test_many_outputs_over_one_buffer_each_get_their_own_memory():
    # 5,000 Identity views of one result: every returned array is its own
    # (checked by address order, not every pair against every other).
    count = 5000
    names = ["y%d" % i for i in range(count)]
    s = onnx_mini.InferenceSession(
        make_model(
            [node("Neg", ["x"], ["n"])] + [node("Identity", ["n"], [name]) for name in names],
            [("x", T.FLOAT, [2])],
            [(name, T.FLOAT, [2]) for name in names],
        )
    )
    results = s.run(None, {"x": np.array([1, -2], np.float32)})
    assert len(results) == count
    addresses = {r.__array_interface__["data"][0] for r in results}
    assert len(addresses) == count
    assert all(r.tolist() == [-1, 2] for r in results)
    # Many bound outputs, side by side in one array, are not overlaps.
    slab = np.zeros((count, 2), np.float32)
    bound = {name: slab[i] for i, name in enumerate(names)}
    s.run(None, {"x": np.array([1, -2], np.float32)}, outputs=bound)
    assert (slab == [-1, 2]).all()
    bound["y7"] = slab[3:5].reshape(-1)[1:3]  # straddles y3 and y4
    with pytest.raises(OnnxMiniError, match="overlapping memory"):
        s.run(None, {"x": np.array([1, -2], np.float32)}, outputs=bound)
