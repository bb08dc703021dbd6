"""com.microsoft GroupQueryAttention against onnxruntime's CPU kernel.

Prompt and decode steps, packed and separate QKV, rotary (both interleavings,
partial rotary_dim, position_ids), batches with ragged seqlens_k and right
padding, local window, softcap, smooth_softmax, head_sink, attention_bias,
scale, float16. onnxruntime-node cannot bind present to past's memory: the
shared-buffer steps are given past buffers of max_len with seqlens_k (the
same arithmetic; the in-place binding itself is tested in
tests/ops/contrib/group_query_attention_test.cc).
"""
import numpy as np
from onnx import TensorProto, helper

from oracle import Case, ms_model, value_info


def rotary_tables(rng, positions, half, dtype):
    inv = 1.0 / (10000 ** (np.arange(half) / half))
    angles = np.arange(positions)[:, None] * inv[None, :]
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


def gqa_case(name, rng, *, B, S, Hq, Hkv, D, packed=False, past_cap=None, seqlens=None, total=None,
             dtype=np.float32, rotary=None, interleaved=0, position_ids=None, bias_shape=None,
             head_sink=False, rtol=1e-4, atol=1e-5, why="", seqlens_2d=False, **attrs):
    f = lambda *shape: rng.standard_normal(shape).astype(dtype)
    feeds = {}
    names = []
    if packed:
        feeds["query"] = f(B, S, (Hq + 2 * Hkv) * D)
        names += ["query", "", ""]
    else:
        feeds["query"], feeds["key"], feeds["value"] = f(B, S, Hq * D), f(B, S, Hkv * D), f(B, S, Hkv * D)
        names += ["query", "key", "value"]
    if past_cap is not None:
        feeds["past_key"], feeds["past_value"] = f(B, Hkv, past_cap, D), f(B, Hkv, past_cap, D)
        names += ["past_key", "past_value"]
    else:
        names += ["", ""]
    if seqlens is None:
        seqlens = [S - 1] * B
    if total is None:
        total = max(seqlens) + 1
    feeds["seqlens_k"] = np.array(seqlens, np.int32).reshape((B, 1) if seqlens_2d else (B,))
    # The (1,) form here; the scalar form is tested in gtest (TotalSequenceLengthAsScalarOrOneElement).
    feeds["total_sequence_length"] = np.array([total], np.int32)
    names += ["seqlens_k", "total_sequence_length"]
    tail = []
    if rotary is not None:  # (positions, rotary_dim / 2)
        feeds["cos_cache"], feeds["sin_cache"] = rotary_tables(rng, rotary[0], rotary[1], dtype)
        tail += ["cos_cache", "sin_cache"]
        attrs["do_rotary"] = 1
        attrs["rotary_interleaved"] = interleaved
    else:
        tail += ["", ""]
    if position_ids is not None:
        feeds["position_ids"] = np.array(position_ids, np.int64).reshape(B, S)
        tail.append("position_ids")
    else:
        tail.append("")
    if bias_shape is not None:
        feeds["attention_bias"] = (rng.standard_normal(bias_shape) * 2).astype(dtype)
        tail.append("attention_bias")
    else:
        tail.append("")
    if head_sink:
        feeds["head_sink"] = rng.standard_normal(Hq).astype(dtype)
        tail.append("head_sink")
    else:
        tail.append("")
    while tail and tail[-1] == "":
        tail.pop()
    names += tail
    node = helper.make_node("GroupQueryAttention", names, ["output", "present_key", "present_value"],
                            domain="com.microsoft", num_heads=Hq, kv_num_heads=Hkv, **attrs)
    elem = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
    inputs = [value_info(n, feeds[n]) for n in names if n]
    outputs = [helper.make_tensor_value_info(o, elem, None) for o in ["output", "present_key", "present_value"]]
    model = ms_model([node], inputs, outputs)
    return Case(name, model, [{n: feeds[n] for n in names if n}], rtol, atol, why)


F16 = dict(dtype=np.float16, rtol=2e-3, atol=2e-3,
           why="float16 inputs and outputs: onnxruntime converts to float for the products and back")


def cases():
    rng = np.random.default_rng(25)
    c = []
    # Prompts (first prompt: sequence == total_sequence_length).
    c.append(gqa_case("prompt_packed", rng, B=1, S=5, Hq=4, Hkv=2, D=16, packed=True))
    c.append(gqa_case("prompt_separate_mha", rng, B=1, S=4, Hq=2, Hkv=2, D=8))
    c.append(gqa_case("prompt_odd_heads_seqlens_2d", rng, B=1, S=3, Hq=3, Hkv=1, D=8, seqlens_2d=True))
    c.append(gqa_case("prompt_right_padded_batch2", rng, B=2, S=6, Hq=4, Hkv=2, D=8, seqlens=[5, 2]))
    c.append(gqa_case("prompt_right_padded_packed_rotary", rng, B=3, S=5, Hq=2, Hkv=1, D=16, packed=True,
                      seqlens=[4, 1, 3], rotary=(8, 8)))
    c.append(gqa_case("prompt_shared_buffer", rng, B=2, S=4, Hq=4, Hkv=2, D=8, past_cap=10, seqlens=[3, 2], total=4))
    c.append(gqa_case("prompt_empty_past", rng, B=1, S=3, Hq=2, Hkv=1, D=8, past_cap=0))
    # Decode steps: a past of its exact length (present one longer), or a
    # max_len buffer (the shared buffer's arithmetic), ragged rows.
    c.append(gqa_case("decode_concat", rng, B=1, S=1, Hq=4, Hkv=2, D=16, past_cap=6, seqlens=[6]))
    c.append(gqa_case("decode_packed_buffer_ragged", rng, B=3, S=1, Hq=4, Hkv=1, D=8, packed=True, past_cap=12,
                      seqlens=[7, 0, 11], total=12))
    c.append(gqa_case("decode_separate_buffer_ragged_total_below_cap", rng, B=2, S=1, Hq=2, Hkv=2, D=8, past_cap=16,
                      seqlens=[3, 9], total=10))
    c.append(gqa_case("continued_prompt", rng, B=1, S=3, Hq=4, Hkv=2, D=8, past_cap=10, seqlens=[7], total=8))
    # Rotary: both interleavings, partial rotary_dim, position_ids.
    c.append(gqa_case("rotary_prompt", rng, B=2, S=4, Hq=4, Hkv=2, D=16, rotary=(10, 8)))
    c.append(gqa_case("rotary_interleaved_prompt_partial", rng, B=1, S=5, Hq=2, Hkv=1, D=32, rotary=(6, 8),
                      interleaved=1))
    c.append(gqa_case("rotary_decode_ragged", rng, B=2, S=1, Hq=4, Hkv=2, D=16, past_cap=12, seqlens=[4, 10],
                      total=11, rotary=(16, 8)))
    c.append(gqa_case("rotary_interleaved_decode_packed", rng, B=2, S=1, Hq=2, Hkv=1, D=16, packed=True,
                      past_cap=9, seqlens=[8, 2], total=9, rotary=(9, 8), interleaved=1))
    c.append(gqa_case("rotary_continued_prompt", rng, B=1, S=2, Hq=2, Hkv=1, D=16, past_cap=8, seqlens=[6], total=7,
                      rotary=(12, 8)))
    c.append(gqa_case("rotary_position_ids", rng, B=2, S=3, Hq=2, Hkv=1, D=16, rotary=(20, 8),
                      position_ids=[[5, 6, 7], [0, 9, 19]]))
    # Window, softcap, smooth softmax, head sink, bias, scale.
    c.append(gqa_case("local_window_prompt", rng, B=2, S=9, Hq=2, Hkv=1, D=8, seqlens=[8, 5], local_window_size=3))
    c.append(gqa_case("local_window_decode", rng, B=2, S=1, Hq=4, Hkv=2, D=8, past_cap=20, seqlens=[15, 2],
                      total=16, local_window_size=4))
    c.append(gqa_case("softcap", rng, B=1, S=6, Hq=2, Hkv=1, D=8, softcap=1.5))
    c.append(gqa_case("softcap_decode_scale", rng, B=2, S=1, Hq=2, Hkv=2, D=8, past_cap=5, seqlens=[5, 3],
                      softcap=2.0, scale=0.7))
    c.append(gqa_case("smooth_softmax", rng, B=2, S=4, Hq=2, Hkv=1, D=8, seqlens=[3, 1], smooth_softmax=1))
    c.append(gqa_case("head_sink_decode", rng, B=2, S=1, Hq=4, Hkv=2, D=8, past_cap=7, seqlens=[6, 4], total=7,
                      head_sink=True))
    c.append(gqa_case("head_sink_window_prompt", rng, B=1, S=7, Hq=2, Hkv=1, D=8, head_sink=True,
                      local_window_size=2))
    c.append(gqa_case("attention_bias_prompt", rng, B=2, S=4, Hq=4, Hkv=2, D=8, bias_shape=(2, 4, 4, 4)))
    c.append(gqa_case("attention_bias_broadcast_decode", rng, B=2, S=1, Hq=4, Hkv=2, D=8, past_cap=6,
                      seqlens=[5, 3], total=6, bias_shape=(1, 1, 1, 6)))
    c.append(gqa_case("scale_prompt", rng, B=1, S=3, Hq=2, Hkv=1, D=8, scale=0.25))
    # Pad queries under a window: onnxruntime's float flash path starts the
    # window at the pad query's own position, its other paths (softcap,
    # float16) at the row's last key.
    c.append(gqa_case("local_window_padded_softcap", rng, B=2, S=8, Hq=2, Hkv=1, D=8, seqlens=[7, 3],
                      local_window_size=3, softcap=5.0))
    c.append(gqa_case("rotary_position_ids_decode", rng, B=2, S=1, Hq=2, Hkv=1, D=16, past_cap=6, seqlens=[5, 2],
                      total=6, rotary=(30, 8), position_ids=[[17], [29]]))
    c.append(gqa_case("long_decode_many_keys", rng, B=1, S=1, Hq=4, Hkv=1, D=16, past_cap=160, seqlens=[150],
                      total=151, rotary=(160, 8)))
    c.append(gqa_case("long_prompt_tiles", rng, B=1, S=40, Hq=4, Hkv=2, D=8, local_window_size=17))
    # float16.
    c.append(gqa_case("f16_local_window_padded", rng, B=2, S=7, Hq=2, Hkv=1, D=8, seqlens=[6, 2], local_window_size=2,
                      **F16))
    c.append(gqa_case("f16_prompt_rotary_padded", rng, B=2, S=5, Hq=4, Hkv=2, D=16, seqlens=[4, 2], rotary=(8, 8),
                      **F16))
    c.append(gqa_case("f16_decode_packed_ragged", rng, B=2, S=1, Hq=4, Hkv=2, D=16, packed=True, past_cap=10,
                      seqlens=[9, 3], total=10, rotary=(10, 8), interleaved=1, **F16))
    c.append(gqa_case("f16_sink_window_softcap_decode", rng, B=1, S=1, Hq=2, Hkv=1, D=8, past_cap=12, seqlens=[11],
                      total=12, head_sink=True, local_window_size=5, softcap=3.0, **F16))
    c.append(gqa_case("f16_bias_smooth_softmax_prompt", rng, B=2, S=4, Hq=2, Hkv=1, D=8, seqlens=[3, 2],
                      bias_shape=(2, 1, 4, 4), smooth_softmax=1, **F16))
    return c
