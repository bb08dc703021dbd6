"""A cache updated in place: outputs={"present": cache} with cache also the input.

testdata/capi/scatter.onnx: present = TensorScatter(cache [batch, cache, 2],
update [batch, 1, 2], write_indices [batch]) with axis 1, update_neg =
Neg(update). scatter_read.onnx adds old_neg = Neg(cache), which reads the
cache after the scatter (so the runtime must not update it before that).
"""

import numpy as np
import pytest
from conftest import TESTDATA

import onnx_mini
from onnx_mini import OnnxMiniError, StatusCode

B, M = 2, 4


def session(name):
    return onnx_mini.InferenceSession(str(TESTDATA / "capi" / name))


def fresh_cache():
    return np.arange(B * M * 2, dtype=np.float32).reshape(B, M, 2)


UPDATE = np.array([[[100, 101]], [[200, 201]]], np.float32)


def expected(cache_before, idx):
    want = cache_before.copy()
    for b in range(B):
        want[b, idx[b]] = UPDATE[b, 0]
    return want


@pytest.mark.parametrize("model", ["scatter.onnx", "scatter_read.onnx"])
def test_cache_updated_in_place(model):
    s = session(model)
    cache = fresh_cache()
    before = cache.copy()
    address = cache.__array_interface__["data"][0]
    idx = np.array([1, 3], np.int64)
    names = ["present", "update_neg"] + (["old_neg"] if model == "scatter_read.onnx" else [])
    results = s.run(names, {"cache": cache, "update": UPDATE, "write_indices": idx}, outputs={"present": cache})
    assert results[0] is cache  # the same object back
    assert cache.__array_interface__["data"][0] == address
    np.testing.assert_array_equal(cache, expected(before, idx))  # only rows 1 and 3 changed
    np.testing.assert_array_equal(results[1], -UPDATE)
    if model == "scatter_read.onnx":
        np.testing.assert_array_equal(results[2], -before)  # the later reader saw the old cache

    # Next step: other rows.
    idx2 = np.array([0, 2], np.int64)
    step2 = cache.copy()
    s.run(["present"], {"cache": cache, "update": UPDATE, "write_indices": idx2}, outputs={"present": cache})
    np.testing.assert_array_equal(cache, expected(step2, idx2))


def test_present_into_another_array_leaves_the_cache_alone():
    s = session("scatter.onnx")
    cache = fresh_cache()
    present = np.full_like(cache, -1)
    idx = np.array([0, 1], np.int64)
    [out] = s.run(["present"], {"cache": cache, "update": UPDATE, "write_indices": idx}, outputs={"present": present})
    assert out is present
    np.testing.assert_array_equal(cache, fresh_cache())
    np.testing.assert_array_equal(present, expected(fresh_cache(), idx))


def test_fresh_present_leaves_the_cache_alone():
    s = session("scatter.onnx")
    cache = fresh_cache()
    idx = np.array([2, 2], np.int64)
    [present] = s.run(["present"], {"cache": cache, "update": UPDATE, "write_indices": idx})
    assert not np.shares_memory(present, cache)
    np.testing.assert_array_equal(cache, fresh_cache())
    np.testing.assert_array_equal(present, expected(fresh_cache(), idx))


def test_a_row_view_of_a_larger_cache():
    """cache[b:b+1] is C-contiguous: a row can be updated in place through it
    (the per-row prefill of a static cache); the other rows stay as they are."""
    s = session("scatter.onnx")
    cache = fresh_cache()
    row = cache[1:2]
    assert row.flags.c_contiguous and np.shares_memory(row, cache)
    [out] = s.run(["present"], {"cache": row, "update": UPDATE[1:2], "write_indices": np.array([2])},
                  outputs={"present": row})
    assert out is row
    want = fresh_cache()
    want[1, 2] = UPDATE[1, 0]
    np.testing.assert_array_equal(cache, want)


def test_index_out_of_range_leaves_the_cache_untouched():
    s = session("scatter.onnx")
    cache = fresh_cache()
    with pytest.raises(OnnxMiniError) as info:
        s.run(["present", "update_neg"],
              {"cache": cache, "update": UPDATE, "write_indices": np.array([1, 4], np.int64)},
              outputs={"present": cache})
    assert info.value.code == StatusCode.INVALID_ARGUMENT and "TensorScatter" in str(info.value)
    np.testing.assert_array_equal(cache, fresh_cache())


def test_bound_present_of_wrong_shape_leaves_both_untouched():
    s = session("scatter.onnx")
    cache = fresh_cache()
    other = np.zeros((B, 3, 2), np.float32)
    with pytest.raises(OnnxMiniError, match="the caller's buffer is float\\[2,3,2\\]"):
        s.run(["present"], {"cache": cache, "update": UPDATE, "write_indices": np.array([0, 0])},
              outputs={"present": other})
    np.testing.assert_array_equal(cache, fresh_cache())
    assert not other.any()


def test_bound_present_of_wrong_dtype_raises_before_running():
    s = session("scatter.onnx")
    cache = fresh_cache()
    wrong = cache.astype(np.float64)
    with pytest.raises(OnnxMiniError, match="must be tensor\\(float\\)"):
        s.run(["present"], {"cache": cache, "update": UPDATE, "write_indices": np.array([0, 0])},
              outputs={"present": wrong})
    np.testing.assert_array_equal(wrong, fresh_cache())


def test_a_non_contiguous_cache_input_is_copied_so_not_updated():
    """A non-contiguous cache is copied on the way in: binding it as the
    output is refused (it must be C-contiguous) rather than silently leaving
    it stale."""
    s = session("scatter.onnx")
    big = np.zeros((B, M, 4), np.float32)
    cache = big[:, :, :2]
    assert not cache.flags.c_contiguous
    with pytest.raises(OnnxMiniError, match="must be C-contiguous"):
        s.run(["present"], {"cache": cache, "update": UPDATE, "write_indices": np.array([0, 0])},
              outputs={"present": cache})
    # As a plain input it works (a copy is read).
    [present] = s.run(["present"], {"cache": cache, "update": UPDATE, "write_indices": np.array([0, 0])})
    assert present[0, 0].tolist() == [100, 101] and not big.any()


def test_one_wrapper_for_the_cache_as_input_and_output(monkeypatch):
    """The cache bound as both input and output is passed as one om_tensor
    (what the runtime's in-place path expects)."""
    import onnx_mini.session as session_module

    wrapped = []
    real_wrap = session_module._wrap

    def counting_wrap(elem_type, array, *name):
        tensor = real_wrap(elem_type, array, *name)
        wrapped.append(tensor)
        return tensor

    monkeypatch.setattr(session_module, "_wrap", counting_wrap)
    s = session("scatter.onnx")
    cache = fresh_cache()
    s.run(["present"], {"cache": cache, "update": UPDATE, "write_indices": np.array([0, 1])},
          outputs={"present": cache})
    assert len(wrapped) == 3  # cache, update, write_indices: present reuses the cache's
    wrapped.clear()
    s.run(["present"], {"cache": cache, "update": UPDATE, "write_indices": np.array([0, 1])},
          outputs={"present": np.zeros_like(cache)})
    assert len(wrapped) == 4
