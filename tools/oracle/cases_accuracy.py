"""Accuracy of every quantized path against a float64 computation (issue #26: "logits within
onnxruntime's own error against a float64 computation of the same dequantized weights").

Each case is a model at realistic magnitudes (activations ~N(0, 1) as after a norm, weights of std
1/sqrt(K) quantized the exporters' way, K 1024 and 2816 for decode, an odd 544 (a partial block of
128) for prefill). Its expected outputs are NOT onnxruntime's: they are the float64 product of the
float activations with the exact dequantized weights ((code - zero point) * scale), rounded once to
float32. Paths that round the activations to int8 (accuracy_level 4, the q8 spellings) are measured
against the product of the float activations too: their error includes that rounding.

The tolerance of each case (rtol 0) is atol = 1.25 x max(onnxruntime 1.30's max abs error on the
case, the float32 floor), where the floor is the max abs error of the textbook float32 loop (A and
W rounded to float32, each product rounded, summed in order of k; for the decoders, numpy's float32
forward of the same graph), and at least one float32 ulp of the largest output: what a correct
float32 kernel summing in any plain order may make. So onnx-mini passes only within onnxruntime's own
error where that error is above float32 noise (the int8-activation paths: 1e-2 relative), and within
float32 noise where onnxruntime is at it (the float paths: onnxruntime's float decode is within a few
ulps, better than the plain loop; accuracy_table.py shows how each runtime compares to it). The 1.25
is slack for a maximum over a few hundred outputs, which moves by ulps between summation orders. make_cases.py writes each case's errors to testdata/oracle/accuracy/
errors.json; tools/oracle/accuracy_table.py prints onnx-mini's error beside them.

Decode cases carry 8 test_data_sets of one row each (8 x N outputs: a max over few outputs says
little); prefill cases 65 rows. Inputs of the same shape are the same values (git stores them once).
"""
import json
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import accuracy_lib as L
from oracle import ROOT, Case, ms_model, value_info

FAMILY_DIR = os.path.join(ROOT, "testdata", "oracle", "accuracy")
ORT_FACTOR = 1.25
DECODE_SETS = 8
PREFILL_ROWS = 65


class Spec:
    """A case before its tolerance: the model, its feeds, the float64 reference and the floor's
    float32 computation per set (dicts keyed by output name), and what it covers."""

    def __init__(self, name, path, model, sets, ref, f32, int8_a):
        self.name, self.path, self.model, self.sets, self.ref, self.f32 = name, path, model, sets, ref, f32
        self.int8_a = int8_a  # the path rounds activations to int8


def activations(rows, k, tag):
    """N(0, 1) activations, the same values for the same (rows, k, tag)."""
    rng = np.random.default_rng([rows, k, tag])
    return rng.standard_normal((rows, k)).astype(np.float32)


def decode_sets(k, name="A"):
    return [{name: activations(1, k, s)} for s in range(DECODE_SETS)]


def prefill_sets(k, name="A"):
    return [{name: activations(PREFILL_ROWS, k, 100)}]


def weights(rng, k, n):
    return rng.standard_normal((k, n)) / np.sqrt(k)


def product_refs(sets, w64, out="Y", a_name="A"):
    """float64 A @ W and the float32 loop's, per set."""
    ref = [{out: s[a_name].astype(np.float64) @ w64} for s in sets]
    f32 = [{out: L.seq_f32_matmul(s[a_name], w64)} for s in sets]
    return ref, f32


# ---------------------------------------------------------------- the paths

def nbits(rng, name, k, n, bits, block, acc, zp, prefill):
    """MatMulNBits (com.microsoft), B, scales and zero points initializers as genai writes them."""
    codes, scales, zps = L.quantize_blocks(weights(rng, k, n), bits, block, symmetric=not zp)
    kb = scales.shape[1]
    inits = [numpy_helper.from_array(L.pack_codes(codes, bits).reshape(n, kb, block * bits // 8), "B"),
             numpy_helper.from_array(scales, "scales")]
    ins = ["A", "B", "scales"]
    if zp:
        inits.append(numpy_helper.from_array(L.pack_codes(zps, bits), "zp"))
        ins.append("zp")
    node = helper.make_node("MatMulNBits", ins, ["Y"], domain="com.microsoft", K=k, N=n, bits=bits,
                            block_size=block, accuracy_level=acc)
    sets = prefill_sets(k) if prefill else decode_sets(k)
    m = sets[0]["A"].shape[0]
    model = ms_model([node], [value_info("A", np.float32, (m, k))], [value_info("Y", np.float32, (m, n))], inits)
    ref, f32 = product_refs(sets, L.dequantize_blocks(codes, scales, zps, k, block))
    path = "MatMulNBits %d-bit block %d acc %d %s, %s" % (bits, block, acc, "zp" if zp else "no zp",
                                                          "prefill %d rows" % m if prefill else "decode")
    return Spec(name, path, model, sets, ref, f32, acc == 4)


def dq_matmul(rng, name, k, n, zp, prefill):
    """The standard spelling: DequantizeLinear-21 (int4, or uint4 with zero points; blocks of 32 along
    K, axis 0) + MatMul."""
    block = 32
    codes, scales, zps = L.quantize_blocks(weights(rng, k, n), 4, block, symmetric=not zp)
    w64 = L.dequantize_blocks(codes, scales, zps, k, block)
    kb = scales.shape[1]
    if zp:  # uint4 codes and zero points as stored
        inits = [L.int4_tensor("x", codes[:, :k].T, (k, n), False), numpy_helper.from_array(scales.T.copy(), "scale"),
                 L.int4_tensor("zero", zps.T, (kb, n), False)]
    else:  # int4: the code minus 8
        inits = [L.int4_tensor("x", codes[:, :k].T - 8, (k, n), True), numpy_helper.from_array(scales.T.copy(), "scale")]
    nodes = [helper.make_node("DequantizeLinear", [i.name for i in inits], ["w"], axis=0, block_size=block),
             helper.make_node("MatMul", ["A", "w"], ["Y"])]
    sets = prefill_sets(k) if prefill else decode_sets(k)
    m = sets[0]["A"].shape[0]
    model = ms_model(nodes, [value_info("A", np.float32, (m, k))], [value_info("Y", np.float32, (m, n))], inits)
    ref, f32 = product_refs(sets, w64)
    path = "DequantizeLinear %s block 32 + MatMul, %s" % ("uint4 zp" if zp else "int4",
                                                           "prefill %d rows" % m if prefill else "decode")
    return Spec(name, path, model, sets, ref, f32, False)


def int8_weights(rng, k, n, per_column, unsigned):
    """quantize_dynamic's weights: int8 symmetric (zero point 0) or uint8 asymmetric, per tensor or
    per column. Returns (codes [K, N], scales, zero points, float64 W)."""
    w = weights(rng, k, n)
    axis = 0 if per_column else None
    if unsigned:
        lo, hi = np.minimum(w.min(axis), 0), np.maximum(w.max(axis), 0)
        scale = ((hi - lo) / 255.0).astype(np.float32)
        zp = np.clip(np.round(-lo / scale), 0, 255).astype(np.uint8)
        q = np.clip(np.round(w / scale) + zp, 0, 255).astype(np.uint8)
    else:
        scale = (np.abs(w).max(axis) / 127.0).astype(np.float32)
        zp = np.zeros(np.shape(scale), np.int8)
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    w64 = (q.astype(np.float64) - zp.astype(np.float64)) * scale.astype(np.float64)
    return q, np.asarray(scale), np.asarray(zp), w64


def q8_spelling(rng, name, k, n, prefill):
    """transformers.js q8 (quantize_dynamic, QInt8 per tensor): DynamicQuantizeLinear + MatMulInteger +
    Cast + Mul(a_scale, w_scale) + Mul."""
    q, scale, zp, w64 = int8_weights(rng, k, n, False, False)
    inits = [numpy_helper.from_array(q, "w"), numpy_helper.from_array(scale, "w_scale"),
             numpy_helper.from_array(zp, "w_zp")]
    nodes = [helper.make_node("DynamicQuantizeLinear", ["A"], ["aq", "a_scale", "a_zp"]),
             helper.make_node("MatMulInteger", ["aq", "w", "a_zp", "w_zp"], ["acc"]),
             helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["a_scale", "w_scale"], ["s"]),
             helper.make_node("Mul", ["accf", "s"], ["Y"])]
    sets = prefill_sets(k) if prefill else decode_sets(k)
    m = sets[0]["A"].shape[0]
    model = ms_model(nodes, [value_info("A", np.float32, (m, k))], [value_info("Y", np.float32, (m, n))], inits)
    ref, f32 = product_refs(sets, w64)
    path = "q8: DynamicQuantizeLinear + MatMulInteger (int8 per tensor) + Mul, %s" % (
        "prefill %d rows" % m if prefill else "decode")
    return Spec(name, path, model, sets, ref, f32, True)


def dqmm(rng, name, k, n, prefill):
    """com.microsoft DynamicQuantizeMatMul: B int8 per column, zero points 0."""
    q, scale, zp, w64 = int8_weights(rng, k, n, True, False)
    inits = [numpy_helper.from_array(q, "b"), numpy_helper.from_array(scale, "b_scale"),
             numpy_helper.from_array(zp, "b_zp")]
    node = helper.make_node("DynamicQuantizeMatMul", ["A", "b", "b_scale", "b_zp"], ["Y"], domain="com.microsoft")
    sets = prefill_sets(k) if prefill else decode_sets(k)
    m = sets[0]["A"].shape[0]
    model = ms_model([node], [value_info("A", np.float32, (m, k))], [value_info("Y", np.float32, (m, n))], inits)
    ref, f32 = product_refs(sets, w64)
    path = "DynamicQuantizeMatMul (int8 per column), %s" % ("prefill %d rows" % m if prefill else "decode")
    return Spec(name, path, model, sets, ref, f32, True)


def mmitf(rng, name, k, n, prefill):
    """DynamicQuantizeLinear + com.microsoft MatMulIntegerToFloat (onnxruntime's fusion of the q8
    spelling): B uint8 per column with zero points."""
    q, scale, zp, w64 = int8_weights(rng, k, n, True, True)
    inits = [numpy_helper.from_array(q, "b"), numpy_helper.from_array(scale, "b_scale"),
             numpy_helper.from_array(zp, "b_zp")]
    nodes = [helper.make_node("DynamicQuantizeLinear", ["A"], ["aq", "a_scale", "a_zp"]),
             helper.make_node("MatMulIntegerToFloat", ["aq", "b", "a_scale", "b_scale", "a_zp", "b_zp"], ["Y"],
                              domain="com.microsoft")]
    sets = prefill_sets(k) if prefill else decode_sets(k)
    m = sets[0]["A"].shape[0]
    model = ms_model(nodes, [value_info("A", np.float32, (m, k))], [value_info("Y", np.float32, (m, n))], inits)
    ref, f32 = product_refs(sets, w64)
    path = "DynamicQuantizeLinear + MatMulIntegerToFloat (uint8 per column, zp), %s" % (
        "prefill %d rows" % m if prefill else "decode")
    return Spec(name, path, model, sets, ref, f32, True)


def gather_bq(rng, name, vocab, k, block):
    """GatherBlockQuantized as genai writes the int4 embedding: uint8 data (4 bits packed), scales
    and packed zero points per block of the row."""
    codes, scales, zps = L.quantize_blocks(rng.standard_normal((k, vocab)), 4, block, symmetric=False)
    kb = scales.shape[1]
    table = L.dequantize_blocks(codes, scales, zps, k, block).T  # [vocab, K]
    inits = [numpy_helper.from_array(L.pack_codes(codes[:, :k], 4), "data"), numpy_helper.from_array(scales, "scales"),
             numpy_helper.from_array(L.pack_codes(zps, 4), "zp")]
    node = helper.make_node("GatherBlockQuantized", ["data", "ids", "scales", "zp"], ["Y"], domain="com.microsoft",
                            gather_axis=0, quantize_axis=1, block_size=block, bits=4)
    ids = np.array([[3, 0, vocab - 1, 17, 3, 20]], np.int64)
    model = ms_model([node], [value_info("ids", ids)], [value_info("Y", np.float32, (1, 6, k))], inits)
    ref = [{"Y": table[ids]}]
    f32 = [{"Y": table[ids].astype(np.float32)}]
    del kb
    return Spec(name, "GatherBlockQuantized 4-bit block %d zp (the embedding)" % block, model, [{"ids": ids}],
                ref, f32, False)


def decoder(name, acc):
    """decoders_lib's genai int4 decoder (MatMulNBits 4-bit block 32 symmetric, GroupQueryAttention,
    2 layers, hidden 64, MLP 80, vocabulary 160) at accuracy_level `acc`: a 20-token prompt (the
    prefill path) and one decode step whose past is the reference's presents."""
    import decoders_lib as D
    w = D.make_weights(7)
    model, _ = D.build_genai(w, "nbits", acc_level=acc)
    deq = L.genai_deq64(D, w)
    c = D.CFG
    rng = np.random.default_rng(26)
    S = 20
    ids = rng.integers(1, c["vocab"], size=(1, S)).astype(np.int64)
    empty = {"past_key_values.%d.%s" % (i, kv): np.zeros((1, c["kv_heads"], 0, c["head_dim"]), np.float32)
             for i in range(c["layers"]) for kv in ("key", "value")}
    ref0 = L.genai_forward(D, w, deq, ids, empty, np.float64)
    f320 = L.genai_forward(D, w, deq, ids, empty, np.float32)
    past = {n.replace("present", "past_key_values"): v.astype(np.float32) for n, v in ref0.items() if n != "logits"}
    nxt = np.array([[int(ref0["logits"][0, -1].argmax())]], np.int64)
    ref1 = L.genai_forward(D, w, deq, nxt, past, np.float64)
    f321 = L.genai_forward(D, w, deq, nxt, past, np.float32)
    sets = [dict(empty, input_ids=ids, attention_mask=np.ones((1, S), np.int64)),
            dict(past, input_ids=nxt, attention_mask=np.ones((1, S + 1), np.int64))]
    return Spec(name, "genai int4 decoder (2 layers) acc %d: logits and presents, prompt 20 + 1 step" % acc,
                model, sets, [ref0, ref1], [f320, f321], acc == 4)


def specs():
    # Each weight configuration has its own seed, so the accuracy_level 0 and 4 twins of a case hold
    # the same weights (a path against the other on one product; git packs them as deltas).
    def rng(*key):
        return np.random.default_rng([2026] + list(key))
    D_K, D_N, D_K2, P_K, P_N = 1024, 24, 2816, 288, 23  # decode K, N (and the long K); prefill K, N
    out = []
    # MatMulNBits 4-bit: blocks 32 and 128, accuracy_level 0 and 4, with and without zero points;
    # decode at K 1024 and 2816, prefill at an odd K (a partial block of 128) and N (a partial panel).
    for acc in (0, 4):
        out.append(nbits(rng(1), "nb4_bs32_acc%d_k1024_decode" % acc, D_K, D_N, 4, 32, acc, False, False))
        out.append(nbits(rng(2), "nb4_bs32_acc%d_zp_k2816_decode" % acc, D_K2, D_N, 4, 32, acc, True, False))
        out.append(nbits(rng(3), "nb4_bs128_acc%d_zp_k1024_decode" % acc, D_K, D_N, 4, 128, acc, True, False))
        for block in (32, 128):
            out.append(nbits(rng(4, block), "nb4_bs%d_acc%d_prefill" % (block, acc), P_K, P_N, 4, block, acc, False,
                             True))
            out.append(nbits(rng(5, block), "nb4_bs%d_acc%d_zp_prefill" % (block, acc), P_K, P_N, 4, block, acc,
                             True, True))
        # 8-bit.
        out.append(nbits(rng(6), "nb8_bs32_acc%d_zp_k1024_decode" % acc, D_K, D_N, 8, 32, acc, True, False))
        out.append(nbits(rng(7), "nb8_bs128_acc%d_prefill" % acc, P_K, P_N, 8, 128, acc, False, True))
    # The standard spelling.
    out.append(dq_matmul(rng(8), "dq_int4_k1024_decode", D_K, D_N, False, False))
    out.append(dq_matmul(rng(9), "dq_uint4_zp_k1024_decode", D_K, D_N, True, False))
    out.append(dq_matmul(rng(10), "dq_int4_prefill", P_K, P_N, False, True))
    out.append(dq_matmul(rng(11), "dq_uint4_zp_prefill", P_K, P_N, True, True))
    # The q8 spellings.
    out.append(q8_spelling(rng(12), "q8_k1024_decode", D_K, D_N, False))
    out.append(q8_spelling(rng(13), "q8_prefill", P_K, P_N, True))
    out.append(dqmm(rng(14), "dqmm_k1024_decode", D_K, D_N, False))
    out.append(dqmm(rng(15), "dqmm_prefill", P_K, P_N, True))
    out.append(mmitf(rng(16), "mmitf_k1024_decode", D_K, D_N, False))
    out.append(mmitf(rng(17), "mmitf_prefill", P_K, P_N, True))
    # The embedding.
    out.append(gather_bq(rng(18), "gbq_4bit_bs32_zp", 32, D_K, 32))
    # A whole decoder.
    out.append(decoder("decoder_genai_int4_acc0", 0))
    out.append(decoder("decoder_genai_int4_acc4", 4))
    return out


def cases():
    sp = specs()
    ort = L.ort_run_many([(s.model, s.sets) for s in sp])
    out, table = [], {}
    for s, got in zip(sp, ort):
        outputs = [o.name for o in s.model.graph.output]
        stored = [{k: r[k].astype(np.float32) for k in outputs} for r in s.ref]
        biggest = L.max_abs(s.ref)
        ort_err = L.max_err(got, stored)
        ort_err64 = L.max_err(got, s.ref)
        f32_err = L.max_err(s.f32, stored)
        floor = max(f32_err, L.F32_ULP * biggest)
        atol = float("%.3g" % (ORT_FACTOR * max(ort_err, floor)))
        table[s.name] = dict(path=s.path, int8_activations=s.int8_a, max_ref=biggest, ort_max_abs=ort_err,
                             ort_max_abs_vs_f64=ort_err64, ort_rel=ort_err / biggest, f32_floor=floor, atol=atol)
        binding = "onnxruntime's" if ort_err >= floor else "the float32 floor's"
        why = ("float64 reference; onnxruntime's max abs error %.3g (%.2g of max |ref| %.3g), float32 floor %.3g: "
               "atol is 1.25 x %s" % (ort_err, ort_err / biggest, biggest, floor, binding))
        out.append(Case(s.name, s.model, s.sets, 0.0, atol, why, expected=stored))
    os.makedirs(FAMILY_DIR, exist_ok=True)
    with open(os.path.join(FAMILY_DIR, "errors.json"), "w") as f:
        json.dump(table, f, indent=1, sort_keys=True)
        f.write("\n")
    return out
