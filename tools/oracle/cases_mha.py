"""com.microsoft attention-family ops against onnxruntime 1.30: RotaryEmbedding,
MultiHeadAttention, Attention (BERT) and EmbedLayerNormalization."""
import numpy as np
from onnx import helper, numpy_helper

from oracle import Case, ms_model, value_info

F16_WHY = "float16 inputs and outputs: onnxruntime rounds each step's result to float16"


def _rotary(rng, name, x_shape, pos, cache_rows, half, dtype=np.float32, **attrs):
    x = rng.standard_normal(x_shape).astype(dtype)
    angles = rng.uniform(0, 6.3, (cache_rows, half))
    cos, sin = np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)
    node = helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain="com.microsoft", **attrs)
    feeds = {"x": x, "pos": pos, "cos": cos, "sin": sin}
    model = ms_model([node], [value_info(n, feeds[n]) for n in feeds], [value_info("y", dtype, x.shape)])
    f16 = dtype == np.float16
    return Case(name, model, [feeds],
                rtol=2e-3 if f16 else 1e-4, atol=2e-3 if f16 else 1e-5, why=F16_WHY if f16 else "float32 throughout")


def rotary_cases(rng):
    ids = np.array([[0, 3, 5], [7, 1, 2]], np.int64)
    return [
        _rotary(rng, "rotary_3d_ids", (2, 3, 16), ids, 8, 4, num_heads=2),
        _rotary(rng, "rotary_3d_ids_no_heads", (2, 3, 24), ids, 8, 4),
        _rotary(rng, "rotary_3d_scalar_start", (2, 3, 16), np.array(4, np.int64), 8, 4, num_heads=2),
        _rotary(rng, "rotary_3d_start_1", (3, 5, 12), np.array([2], np.int64), 9, 3, num_heads=2, interleaved=1),
        _rotary(rng, "rotary_4d_ids", (2, 3, 3, 8), ids, 8, 4, interleaved=1),
        _rotary(rng, "rotary_4d_start", (1, 2, 5, 10), np.array([0], np.int64), 6, 5),
        _rotary(rng, "rotary_partial", (2, 3, 32), ids, 8, 3, num_heads=2, rotary_embedding_dim=6),
        _rotary(rng, "rotary_partial_interleaved_4d", (2, 2, 3, 16), ids, 8, 2, num_heads=2,
                rotary_embedding_dim=4, interleaved=1),
        _rotary(rng, "rotary_f16", (2, 3, 16), ids, 8, 4, np.float16, num_heads=2),
        _rotary(rng, "rotary_f16_4d_interleaved", (2, 2, 3, 8), np.array(1, np.int64), 8, 4, np.float16,
                interleaved=1),
    ]


MHA_INPUTS = ["query", "key", "value", "bias", "key_padding_mask", "attention_bias", "past_key", "past_value"]


def _mha(name, feeds, outputs=("y",), dtype=np.float32, **attrs):
    """A MultiHeadAttention node over `feeds` (absent inputs left out), outputs by name."""
    ins = [n if n in feeds else "" for n in MHA_INPUTS]
    while ins[-1] == "":
        ins.pop()
    outs = list(outputs)
    node = helper.make_node("MultiHeadAttention", ins, outs, domain="com.microsoft", **attrs)
    feeds = {k: (v.astype(dtype) if v.dtype == np.float32 else v) for k, v in feeds.items()}
    model = ms_model([node], [value_info(k, v) for k, v in feeds.items()],
                     [value_info(o, dtype, None) for o in outs if o])
    f16 = dtype == np.float16
    return Case(name, model, [feeds], rtol=5e-3 if f16 else 1e-4, atol=5e-3 if f16 else 2e-5,
                why=F16_WHY if f16 else "float32 throughout")


def mha_cases(rng):
    B, S, L, N, H, P = 2, 3, 5, 2, 4, 4
    D = N * H
    r = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    q, k, v, v6 = r(B, S, D), r(B, L, D), r(B, L, D), r(B, L, 6)
    qs, ks, vs = r(B, S, D), r(B, S, D), r(B, S, D)  # as many keys as queries
    pk, pv = r(B, N, P, H), r(B, N, P, H)
    bias = r(3 * D)
    raw = np.array([[1, 1, 0, 1, 1], [1, 1, 1, 0, 0]], np.int32)
    raw_past = np.ones((B, P + S), np.int32)
    raw_past[1, :2] = 0
    raw3 = rng.integers(0, 2, (B, S, L)).astype(np.int32)
    out = [
        _mha("mha_basic", dict(query=q, key=k, value=v), num_heads=N),
        _mha("mha_bias_scale", dict(query=q, key=k, value=v, bias=bias), num_heads=N, scale=0.3),
        _mha("mha_value_head_6", dict(query=q, key=k, value=v6), num_heads=N),
        _mha("mha_mask_ends", dict(query=q, key=k, value=v, key_padding_mask=np.array([3, 5], np.int32)),
             num_heads=N),
        _mha("mha_mask_3b2", dict(query=q, key=k, value=v,
                                  key_padding_mask=np.array([2, 4, 0, 1, 0, 0, 0, 0], np.int32)), num_heads=N),
        _mha("mha_mask_2d_filter", dict(query=q, key=k, value=v, bias=bias, key_padding_mask=raw), num_heads=N,
             mask_filter_value=-30.0),
        _mha("mha_mask_3d", dict(query=q, key=k, value=v, key_padding_mask=raw3), num_heads=N),
        _mha("mha_attention_bias_heads", dict(query=q, key=k, value=v, attention_bias=r(1, N, S, L)), num_heads=N),
        _mha("mha_attention_bias_batch_mask", dict(query=q, key=k, value=v, attention_bias=r(B, 1, S, L),
                                                   key_padding_mask=raw), num_heads=N),
        _mha("mha_causal", dict(query=qs, key=ks, value=vs, bias=bias), num_heads=N, unidirectional=1),
        _mha("mha_causal_more_keys", dict(query=q, key=k, value=v), num_heads=N, unidirectional=1),
        _mha("mha_past_present_causal", dict(query=qs, key=ks, value=vs, bias=bias, key_padding_mask=raw_past,
                                             past_key=pk, past_value=pv),
             ("y", "present_key", "present_value"), num_heads=N, unidirectional=1),
        _mha("mha_decode_step", dict(query=qs[:, :1], key=ks[:, :1], value=vs[:, :1], past_key=pk, past_value=pv,
                                     key_padding_mask=np.array([5, 3], np.int32)),
             ("y", "present_key", "present_value"), num_heads=N, unidirectional=1),
        _mha("mha_past_without_present", dict(query=q, key=k, value=v, past_key=pk, past_value=pv), num_heads=N),
        _mha("mha_present_no_past", dict(query=q, key=k, value=v6, bias=r(2 * D + 6)),
             ("y", "present_key", "present_value"), num_heads=N),
        _mha("mha_cross_bnsh", dict(query=q, key=r(B, N, L, H), value=r(B, N, L, H), bias=bias),
             ("y", "present_key", "present_value"), num_heads=N),
        _mha("mha_qk_output", dict(query=q, key=k, value=v, key_padding_mask=raw, attention_bias=r(1, N, S, L)),
             ("y", "", "", "qk"), num_heads=N),
        _mha("mha_f16_bias_mask", dict(query=q, key=k, value=v, bias=bias, key_padding_mask=raw), dtype=np.float16,
             num_heads=N),
        _mha("mha_f16_past_causal", dict(query=qs, key=ks, value=vs, past_key=pk, past_value=pv,
                                         attention_bias=r(B, N, S, P + S)),
             ("y", "present_key", "present_value"), dtype=np.float16, num_heads=N, unidirectional=1),
    ]
    return out


ATT_INPUTS = ["input", "weights", "bias", "mask_index", "past", "attention_bias"]


def _attention(name, feeds, outputs=("y",), dtype=np.float32, const_weights=False, **attrs):
    """A BERT Attention node; `const_weights` makes weights and bias initializers (prepared at creation)."""
    ins = [n if n in feeds else "" for n in ATT_INPUTS]
    while ins[-1] == "":
        ins.pop()
    feeds = {k: (v.astype(dtype) if v.dtype == np.float32 else v) for k, v in feeds.items()}
    inits = []
    if const_weights:
        inits = [numpy_helper.from_array(feeds.pop(n), n) for n in ("weights", "bias") if n in feeds]
    node = helper.make_node("Attention", ins, list(outputs), domain="com.microsoft", **attrs)
    model = ms_model([node], [value_info(k, v) for k, v in feeds.items()], [value_info(o, dtype, None) for o in outputs],
                     initializers=inits)
    f16 = dtype == np.float16
    return Case(name, model, [feeds], rtol=1e-2 if f16 else 1e-4, atol=1e-2 if f16 else 5e-5,
                why="float16 inputs: the projection's and attention's float16 roundings" if f16 else
                "float32 throughout (the projection's sums of 7 products in another order)")


def attention_cases(rng):
    B, S, Din, N, H, P = 2, 3, 7, 2, 4, 3
    D = N * H
    r = lambda *shape: (0.5 * rng.standard_normal(shape)).astype(np.float32)
    x, w, b = r(B, S, Din), r(Din, 3 * D), r(3 * D)
    w_sizes, b_sizes = r(Din, 2 * D + 6), r(2 * D + 6)
    past = r(2, B, N, P, H)
    mask3 = np.array([[[1, 1, 0], [0, 1, 0], [0, 1, 1]], [[1, 0, 0], [1, 0, 1], [1, 1, 1]]], np.int32)
    all_masked = _attention("attention_mask_3d_row_all_masked",
                            dict(input=x, weights=w, bias=b, mask_index=mask3 * np.array([1, 0, 1], np.int32)[:, None],
                                 attention_bias=r(1, N, S, S)), num_heads=N)
    all_masked.atol = 2e-3
    all_masked.why = ("a row whose every key is masked: its scores - 10000 keep ~3 digits in float32, and onnxruntime "
                      "adds the mask and the bias in another order")
    return [
        _attention("attention_basic", dict(input=x, weights=w, bias=b), num_heads=N),
        _attention("attention_const_weights", dict(input=x, weights=w, bias=b), const_weights=True, num_heads=N,
                   scale=0.25),
        _attention("attention_qkv_sizes", dict(input=x, weights=w_sizes, bias=b_sizes), num_heads=N,
                   qkv_hidden_sizes=[D, D, 6]),
        _attention("attention_mask_ends", dict(input=x, weights=w, bias=b, mask_index=np.array([2, 3], np.int32)),
                   num_heads=N),
        _attention("attention_mask_ends_starts", dict(input=x, weights=w, bias=b,
                                                      mask_index=np.array([3, 2, 1, 0], np.int32)), num_heads=N),
        _attention("attention_mask_2d_causal", dict(input=x, weights=w, bias=b,
                                                    mask_index=np.array([[1, 1, 0], [0, 1, 1]], np.int32)),
                   num_heads=N, unidirectional=1, mask_filter_value=-100.0),
        _attention("attention_mask_3d_bias", dict(input=x, weights=w, bias=b, mask_index=mask3,
                                                  attention_bias=r(1, N, S, S)), num_heads=N),
        all_masked,
        _attention("attention_past_present", dict(input=x, weights=w, bias=b, past=past,
                                                  mask_index=np.ones((B, P + S), np.int32)),
                   ("y", "present"), num_heads=N, unidirectional=1),
        _attention("attention_decode_step", dict(input=x[:, :1], weights=w, bias=b, past=past,
                                                 mask_index=np.array([4, 2], np.int32)),
                   ("y", "present"), const_weights=True, num_heads=N, unidirectional=1),
        _attention("attention_f16", dict(input=x, weights=w, bias=b, mask_index=np.array([3, 2], np.int32)),
                   dtype=np.float16, num_heads=N),
        _attention("attention_f16_past", dict(input=x, weights=w, bias=b, past=past), ("y", "present"),
                   dtype=np.float16, num_heads=N, unidirectional=1),
    ]


ELN_INPUTS = ["input_ids", "segment_ids", "word_embedding", "position_embedding", "segment_embedding", "gamma",
              "beta", "mask", "position_ids"]


def _embed(name, feeds, outputs=("y", "mask_index"), dtype=np.float32, **attrs):
    ins = [n if n in feeds else "" for n in ELN_INPUTS]
    while ins[-1] == "":
        ins.pop()
    feeds = {k: (v.astype(dtype) if v.dtype == np.float32 else v) for k, v in feeds.items()}
    node = helper.make_node("EmbedLayerNormalization", ins, list(outputs), domain="com.microsoft", **attrs)
    outs = [value_info(o, np.int32 if o == "mask_index" else dtype, None) for o in outputs]
    model = ms_model([node], [value_info(k, v) for k, v in feeds.items()], outs)
    f16 = dtype == np.float16
    return Case(name, model, [feeds], rtol=5e-3 if f16 else 1e-4, atol=5e-3 if f16 else 1e-5,
                why=F16_WHY if f16 else "float32 throughout")


def embed_cases(rng):
    B, S, V, P, G, H = 2, 5, 11, 7, 3, 12
    r = lambda *shape: rng.standard_normal(shape).astype(np.float32)
    ids = rng.integers(0, V, (B, S)).astype(np.int32)
    seg = rng.integers(0, G, (B, S)).astype(np.int32)
    tables = dict(word_embedding=r(V, H), position_embedding=r(P, H), gamma=r(H), beta=r(H))
    mask = np.array([[1, 1, 1, 0, 0], [1, 2, 1, 1, 0]], np.int32)  # mask_index counts the 1s
    return [
        _embed("embed_segments_mask_sum", dict(tables, input_ids=ids, segment_ids=seg, segment_embedding=r(G, H),
                                               mask=mask), ("y", "mask_index", "sum")),
        _embed("embed_no_segments_no_mask", dict(tables, input_ids=ids), epsilon=1e-3),
        _embed("embed_position_ids", dict(tables, input_ids=ids, segment_ids=seg, segment_embedding=r(G, H),
                                          position_ids=rng.integers(0, P, (B, S)).astype(np.int32))),
        _embed("embed_position_ids_1s", dict(tables, input_ids=ids, mask=mask,
                                             position_ids=np.array([[6, 5, 0, 1, 2]], np.int32))),
        _embed("embed_f16", dict(tables, input_ids=ids, segment_ids=seg, segment_embedding=r(G, H), mask=mask),
               ("y", "mask_index", "sum"), dtype=np.float16),
    ]


def cases():
    rng = np.random.default_rng(2025)
    return rotary_cases(rng) + mha_cases(rng) + attention_cases(rng) + embed_cases(rng)
