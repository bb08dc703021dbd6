"""One small Llama/Qwen-style decoder, written the ways the exporters write it (see cases_decoders.py).

Forms:
  genai       onnxruntime-genai's model builder: attention-mask subgraph (ReduceSum, Shape) into
              GroupQueryAttention with rotary inside and packed QKV, SimplifiedLayerNormalization
              (default domain) then SkipSimplifiedLayerNormalization, MatMul or MatMulNBits.
  optimum     an Optimum (torch.onnx) export in standard ops: decomposed RMSNorm, rotary from
              position_ids, Concat KV cache, repeat_kv by Expand, causal mask from attention_mask;
              its MatMuls float, MatMulNBits (transformers.js q4), DynamicQuantizeLinear +
              MatMulInteger (q8, quantize_dynamic) or blocked DequantizeLinear int4 + MatMul (QDQ).
The quantizers are ours (numpy), in the operators' documented formats.
"""
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from oracle import ORT_NODE_MODULES, ROOT, value_info

CFG = dict(hidden=64, heads=4, kv_heads=2, head_dim=16, inter=80, vocab=160, layers=2,
           eps=1e-5, theta=10000.0, max_pos=32)


# ---------------------------------------------------------------- weights

def make_weights(seed, qkv_bias=False):
    """Random fixed weights, in the [K, N] layout a MatMul takes."""
    c = CFG
    rng = np.random.default_rng(seed)
    H, I, V = c["hidden"], c["inter"], c["vocab"]
    q, kv = c["heads"] * c["head_dim"], c["kv_heads"] * c["head_dim"]

    def lin(k, n, gain=1.0):
        return (rng.standard_normal((k, n)) * gain / np.sqrt(k)).astype(np.float32)

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    w = {"embed": rng.standard_normal((V, H)).astype(np.float32), "final_norm": norm(H),
         "lm_head": lin(H, V, 2.5), "layers": []}
    for _ in range(c["layers"]):
        L = {"ln1": norm(H), "wq": lin(H, q, 1.5), "wk": lin(H, kv, 1.5), "wv": lin(H, kv),
             "wo": lin(q, H), "ln2": norm(H), "wg": lin(H, I), "wu": lin(H, I), "wd": lin(I, H)}
        if qkv_bias:
            for n, size in (("bq", q), ("bk", kv), ("bv", kv)):
                L[n] = (0.1 * rng.standard_normal(size)).astype(np.float32)
        w["layers"].append(L)
    return w


def rotary_tables(dim, max_pos, theta):
    inv = 1.0 / theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    f = np.outer(np.arange(max_pos, dtype=np.float64), inv)
    return np.cos(f).astype(np.float32), np.sin(f).astype(np.float32), inv.astype(np.float32)


# ---------------------------------------------------------------- quantizers

def pack_nibbles(q):
    """Pairs of 4-bit values along the last axis, the first in the low nibble."""
    q = q.astype(np.uint8)
    if q.shape[-1] % 2:
        q = np.concatenate([q, np.zeros(q.shape[:-1] + (1,), np.uint8)], axis=-1)
    return (q[..., 0::2] & 0xF) | ((q[..., 1::2] & 0xF) << 4)


def quant_nbits(w, bits=4, block=32, symmetric=True, scales_1d=False):
    """MatMulNBits' format for W [K, N]: B uint8 [N, k_blocks, block*bits/8], scales [N, k_blocks]
    (or flat), zero points packed uint8 [N, ceil(k_blocks*bits/8)] (none when symmetric: 2^(bits-1)).
    Returns (inputs, dequantized W)."""
    assert bits == 4
    K, N = w.shape
    kb = -(-K // block)
    wt = np.zeros((N, kb * block), np.float64)
    wt[:, :K] = w.T
    blocks = wt.reshape(N, kb, block)
    if symmetric:
        amax = np.abs(blocks).max(-1)
        scale = np.where(amax > 0, amax / 7.0, 1.0)
        zp = np.full((N, kb), 8.0)
    else:
        lo, hi = np.minimum(blocks.min(-1), 0), np.maximum(blocks.max(-1), 0)
        scale = np.where(hi > lo, (hi - lo) / 15.0, 1.0)
        zp = np.clip(np.round(-lo / scale), 0, 15)
    scale = scale.astype(np.float32)
    q = np.clip(np.round(blocks / scale[..., None]) + zp[..., None], 0, 15)
    # The padding past K holds the zero point: it dequantizes to 0.
    q.reshape(N, -1)[:, K:] = np.repeat(zp, block, axis=1)[:, K:]
    deq = ((q - zp[..., None]) * scale[..., None]).reshape(N, -1)[:, :K].T.astype(np.float32)
    inputs = [pack_nibbles(q), scale.reshape(-1) if scales_1d else scale]
    if not symmetric:
        inputs.append(pack_nibbles(zp))
    return inputs, deq


def int4_tensor(name, q, dims, signed):
    """An INT4 (22) or UINT4 (21) initializer: raw data two per byte, the first in the low nibble."""
    t = TensorProto()
    t.name = name
    t.data_type = 22 if signed else 21
    t.dims.extend(dims)
    t.raw_data = pack_nibbles(np.asarray(q).reshape(-1).astype(np.int64) & 0xF).tobytes()
    return t


def quant_qdq4(w, block=32, signed=True):
    """Blocked DequantizeLinear-21 along K (axis 0) of W [K, N]: int4 symmetric, or uint4 with zero
    points. Returns (q, scales [k_blocks, N], zero points or None, dequantized W)."""
    K, N = w.shape
    kb = -(-K // block)
    wp = np.zeros((kb * block, N), np.float64)
    wp[:K] = w
    blocks = wp.reshape(kb, block, N)
    if signed:
        amax = np.abs(blocks).max(1)
        scale = np.where(amax > 0, amax / 7.0, 1.0).astype(np.float32)
        zp = np.zeros((kb, N))
        q = np.clip(np.round(blocks / scale[:, None, :]), -8, 7)
    else:
        lo, hi = np.minimum(blocks.min(1), 0), np.maximum(blocks.max(1), 0)
        scale = np.where(hi > lo, (hi - lo) / 15.0, 1.0).astype(np.float32)
        zp = np.clip(np.round(-lo / scale), 0, 15)
        q = np.clip(np.round(blocks / scale[:, None, :]) + zp[:, None, :], 0, 15)
    deq = ((q - zp[:, None, :]) * scale[:, None, :]).reshape(-1, N)[:K].astype(np.float32)
    q = q.reshape(-1, N)[:K]
    return q, scale, (None if signed else zp), deq


def quant_int8(w):
    """quantize_dynamic's QInt8 weights: per tensor, symmetric (zero point 0), scale = max|w| / 127."""
    scale = np.float32(np.abs(w).max() / 127.0)
    q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    return q, scale, (q.astype(np.float32) * scale).astype(np.float32)


# ---------------------------------------------------------------- graph building

class Graph:
    def __init__(self):
        self.nodes, self.inits, self.n, self.names = [], [], 0, set()

    def const(self, name, array):
        if name not in self.names:
            self.names.add(name)
            if isinstance(array, TensorProto):
                self.inits.append(array)
            else:
                self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def i64(self, values):
        v = np.array(values, np.int64)
        return self.const("/const/i64/" + "_".join(str(x) for x in v.reshape(-1)) + ("" if v.ndim else "s"), v)

    def f32(self, value):
        return self.const("/const/f32/%r" % float(value), np.array(value, np.float32))

    def op(self, op_type, inputs, n_out=1, domain=None, outputs=None, **attrs):
        self.n += 1
        name = "/%s_%d" % (op_type, self.n)
        outs = outputs or ["%s/output_%d" % (name, k) for k in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=name, domain=domain, **attrs))
        return outs[0] if len(outs) == 1 else outs


class Linear:
    """Writes x @ W in one of the weight spellings; `deq` is the float W it stands for."""

    def __init__(self, g, mode, acc_level=0, block=32, symmetric=True, scales_1d=False, twin=False):
        self.g, self.mode, self.acc, self.block, self.twin = g, mode, acc_level, block, twin
        self.symmetric, self.scales_1d = symmetric, scales_1d
        self.dq_cache = {}

    def __call__(self, x, w, name, out=None, mode=None, symmetric=None, signed=True):
        g, mode = self.g, mode or self.mode
        symmetric = self.symmetric if symmetric is None else symmetric
        K, N = w.shape
        outputs = [out] if out else None
        if mode == "float":
            return g.op("MatMul", [x, g.const(name + ".weight", w)], outputs=outputs), w
        if self.twin:  # the float twin: the same weights, dequantized, in a float MatMul
            deq = {"nbits": lambda: quant_nbits(w, 4, self.block, symmetric)[1],
                   "qdq4": lambda: quant_qdq4(w, self.block, signed)[3], "q8": lambda: quant_int8(w)[2]}[mode]()
            return g.op("MatMul", [x, g.const(name + ".weight", deq)], outputs=outputs), deq
        if mode == "nbits":
            ins, deq = quant_nbits(w, 4, self.block, symmetric, self.scales_1d)
            names = [g.const(name + s, a) for s, a in zip((".qweight", ".scales", ".qzeros"), ins)]
            y = g.op("MatMulNBits", [x] + names, domain="com.microsoft", outputs=outputs, K=K, N=N, bits=4,
                     block_size=self.block, **({"accuracy_level": self.acc} if self.acc else {}))
            return y, deq
        if mode == "qdq4":
            q, scale, zp, deq = quant_qdq4(w, self.block, signed)
            ins = [g.const(name + ".qweight", int4_tensor(name + ".qweight", q, [K, N], signed)),
                   g.const(name + ".scales", scale)]
            if zp is not None:
                ins.append(g.const(name + ".qzeros", int4_tensor(name + ".qzeros", zp, list(zp.shape), False)))
            wf = g.op("DequantizeLinear", ins, axis=0, block_size=self.block)
            return g.op("MatMul", [x, wf], outputs=outputs), deq
        if mode == "q8":
            q, scale, deq = quant_int8(w)
            if x not in self.dq_cache:  # quantize_dynamic quantizes a shared activation once
                self.dq_cache[x] = g.op("DynamicQuantizeLinear", [x], n_out=3)
            xq, xs, xz = self.dq_cache[x]
            acc = g.op("MatMulInteger", [xq, g.const(name + ".weight_quantized", q), xz,
                                         g.const(name + ".weight_zero_point", np.array(0, np.int8))])
            f = g.op("Cast", [acc], to=TensorProto.FLOAT)
            s = g.op("Mul", [xs, g.const(name + ".weight_scale", np.array(scale, np.float32))])
            return g.op("Mul", [f, s], outputs=outputs), deq
        raise ValueError(mode)


def finish(g, name, inputs, outputs, opsets, ir_version):
    graph = helper.make_graph(g.nodes, name, inputs, outputs, initializer=g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    model.ir_version = ir_version
    return model


def io_decls(past_dim, form):
    c = CFG
    ins = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"]),
           helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch_size", "total_sequence_length"])]
    if form == "optimum":
        ins.append(helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch_size", "sequence_length"]))
    outs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch_size", "sequence_length", c["vocab"]])]
    for i in range(c["layers"]):
        for kv in ("key", "value"):
            ins.append(helper.make_tensor_value_info("past_key_values.%d.%s" % (i, kv), TensorProto.FLOAT,
                                                     ["batch_size", c["kv_heads"], past_dim, c["head_dim"]]))
            outs.append(helper.make_tensor_value_info("present.%d.%s" % (i, kv), TensorProto.FLOAT,
                                                      ["batch_size", c["kv_heads"], "total_sequence_length", c["head_dim"]]))
    return ins, outs


def build_genai(w, mode, acc_level=0, tied=False, twin=False, block=32):
    """onnxruntime-genai's builder graph (Llama/Qwen2) for the CPU EP; mode 'float' or 'nbits'."""
    c, g = CFG, Graph()
    lin = Linear(g, mode, acc_level, block=block, twin=twin)
    H, D = c["hidden"], c["head_dim"]
    # attention_mask -> seqlens_k (row sums - 1, int32) and total_sequence_length (its width, int32)
    s = g.op("ReduceSum", ["attention_mask", g.i64([1])], keepdims=0)
    seqlens_k = g.op("Cast", [g.op("Sub", [s, g.i64(1)])], to=TensorProto.INT32)
    width = g.op("Gather", [g.op("Shape", ["attention_mask"]), g.i64(1)], axis=0)
    total = g.op("Cast", [width], to=TensorProto.INT32)
    cos, sin, _ = rotary_tables(D, c["max_pos"], c["theta"])
    g.const("cos_cache", cos)
    g.const("sin_cache", sin)
    if tied:  # tied float embeddings: Transpose of the lm_head's weight, then Gather
        table = g.op("Transpose", [g.const("lm_head.MatMul.weight", w["lm_head"])], perm=[1, 0])
        x = g.op("Gather", [table, "input_ids"])
    else:
        x = g.op("Gather", [g.const("model.embed_tokens.weight", w["embed"]), "input_ids"])
    deq = {}
    residual = x
    skip = None
    for i, L in enumerate(w["layers"]):
        p = "model.layers.%d." % i
        if skip is None:
            xn = g.op("SimplifiedLayerNormalization", [residual, g.const(p + "input_layernorm.weight", L["ln1"])],
                      axis=-1, epsilon=c["eps"], stash_type=1)
        else:
            xn, _, _, residual = g.op("SkipSimplifiedLayerNormalization",
                                      [residual, skip, g.const(p + "input_layernorm.weight", L["ln1"])],
                                      n_out=4, domain="com.microsoft", epsilon=c["eps"])
        wqkv = np.concatenate([L["wq"], L["wk"], L["wv"]], axis=1)
        qkv, deq[p + "qkv"] = lin(xn, wqkv, p + "attn.qkv_proj.MatMul")
        if "bq" in L:
            qkv = g.op("Add", [qkv, g.const(p + "attn.qkv_proj.Add.bias", np.concatenate([L["bq"], L["bk"], L["bv"]]))])
        attn = g.op("GroupQueryAttention",
                    [qkv, "", "", "past_key_values.%d.key" % i, "past_key_values.%d.value" % i, seqlens_k, total,
                     "cos_cache", "sin_cache"],
                    domain="com.microsoft",
                    outputs=["/model/layers.%d/attn/GroupQueryAttention/output_0" % i, "present.%d.key" % i,
                             "present.%d.value" % i],
                    num_heads=c["heads"], kv_num_heads=c["kv_heads"], scale=float(1.0 / np.sqrt(D)),
                    local_window_size=-1, do_rotary=1, rotary_interleaved=0)[0]
        o, deq[p + "o"] = lin(attn, L["wo"], p + "attn.o_proj.MatMul")
        xn, _, _, residual = g.op("SkipSimplifiedLayerNormalization",
                                  [residual, o, g.const(p + "post_attention_layernorm.weight", L["ln2"])],
                                  n_out=4, domain="com.microsoft", epsilon=c["eps"])
        gate, deq[p + "g"] = lin(xn, L["wg"], p + "mlp.gate_proj.MatMul")
        up, deq[p + "u"] = lin(xn, L["wu"], p + "mlp.up_proj.MatMul")
        act = g.op("Mul", [gate, g.op("Sigmoid", [gate])])
        skip, deq[p + "d"] = lin(g.op("Mul", [act, up]), L["wd"], p + "mlp.down_proj.MatMul")
    xn = g.op("SkipSimplifiedLayerNormalization", [residual, skip, g.const("model.norm.weight", w["final_norm"])],
              domain="com.microsoft", epsilon=c["eps"])
    if tied and mode == "float":
        g.op("MatMul", [xn, "lm_head.MatMul.weight"], outputs=["logits"])
    else:
        _, deq["lm_head"] = lin(xn, w["lm_head"], "lm_head.MatMul", out="logits")
    ins, outs = io_decls("past_sequence_length", "genai")
    return finish(g, "genai", ins, outs, [("", 21), ("com.microsoft", 1)], 8), deq


def build_optimum(w, mode, opset=17, lm_head_mode=None, twin=False, **lin_kw):
    """An Optimum export in standard ops; MatMul weights in `mode` ('float', 'nbits', 'q8', 'qdq4').
    q8 also quantizes the embedding table (Gather on int8, then DequantizeLinear), as quantize_dynamic does."""
    c, g = CFG, Graph()
    lin = Linear(g, mode, twin=twin, **lin_kw)
    H, D, NH, KV = c["hidden"], c["head_dim"], c["heads"], c["kv_heads"]
    deq = {}
    if mode == "q8" and twin:
        x = g.op("Gather", [g.const("model.embed_tokens.weight", quant_int8(w["embed"])[2]), "input_ids"])
    elif mode == "q8":
        q, scale, deq["embed"] = quant_int8(w["embed"])
        e = g.op("Gather", [g.const("model.embed_tokens.weight_quantized", q), "input_ids"])
        x = g.op("DequantizeLinear", [e, g.const("model.embed_tokens.weight_scale", np.array(scale, np.float32)),
                                      g.const("model.embed_tokens.weight_zero_point", np.array(0, np.int8))])
    else:
        x = g.op("Gather", [g.const("model.embed_tokens.weight", w["embed"]), "input_ids"])
    # rotary: cos/sin of position_ids * inv_freq, [B, 1, S, D]
    _, _, inv = rotary_tables(D, c["max_pos"], c["theta"])
    pos = g.op("Unsqueeze", [g.op("Cast", ["position_ids"], to=TensorProto.FLOAT), g.i64([2])])
    freqs = g.op("Mul", [pos, g.const("inv_freq", inv)])
    emb = g.op("Concat", [freqs, freqs], axis=-1)
    cos = g.op("Unsqueeze", [g.op("Cos", [emb]), g.i64([1])])
    sin = g.op("Unsqueeze", [g.op("Sin", [emb]), g.i64([1])])
    # causal mask from attention_mask: key t visible to query s when t <= past + s and mask[b, t] = 1
    total = g.op("Gather", [g.op("Shape", ["attention_mask"]), g.i64(1)], axis=0)
    seq = g.op("Gather", [g.op("Shape", ["input_ids"]), g.i64(1)], axis=0)
    past = g.op("Sub", [total, seq])
    kidx = g.op("Unsqueeze", [g.op("Range", [g.i64(0), total, g.i64(1)]), g.i64([0])])
    qidx = g.op("Unsqueeze", [g.op("Range", [past, total, g.i64(1)]), g.i64([1])])
    causal = g.op("LessOrEqual", [kidx, qidx])
    keep = g.op("Unsqueeze", [g.op("Cast", ["attention_mask"], to=TensorProto.BOOL), g.i64([1, 2])])
    mask = g.op("Where", [g.op("And", [causal, keep]), g.f32(0.0), g.f32(np.finfo(np.float32).min)])

    def rms(x, weight, name):
        var = g.op("ReduceMean", [g.op("Pow", [x, g.f32(2.0)])], axes=[-1], keepdims=1) if opset < 18 else \
            g.op("ReduceMean", [g.op("Pow", [x, g.f32(2.0)]), g.i64([-1])], keepdims=1)
        inv_rms = g.op("Reciprocal", [g.op("Sqrt", [g.op("Add", [var, g.f32(c["eps"])])])])
        return g.op("Mul", [g.const(name, weight), g.op("Mul", [x, inv_rms])])

    def heads(t, n):
        return g.op("Transpose", [g.op("Reshape", [t, g.i64([0, 0, n, D])])], perm=[0, 2, 1, 3])

    def rope(t):
        x1 = g.op("Slice", [t, g.i64([0]), g.i64([D // 2]), g.i64([3])])
        x2 = g.op("Slice", [t, g.i64([D // 2]), g.i64([D]), g.i64([3])])
        rot = g.op("Concat", [g.op("Neg", [x2]), x1], axis=-1)
        return g.op("Add", [g.op("Mul", [t, cos]), g.op("Mul", [rot, sin])])

    def repeat_kv(t):
        e = g.op("Expand", [g.op("Unsqueeze", [t, g.i64([2])]), g.i64([1, 1, NH // KV, 1, 1])])
        return g.op("Reshape", [e, g.i64([0, NH, -1, D])])

    for i, L in enumerate(w["layers"]):
        p = "model.layers.%d." % i
        xn = rms(x, L["ln1"], p + "input_layernorm.weight")
        q, deq[p + "q"] = lin(xn, L["wq"], p + "self_attn.q_proj")
        k, deq[p + "k"] = lin(xn, L["wk"], p + "self_attn.k_proj")
        v, deq[p + "v"] = lin(xn, L["wv"], p + "self_attn.v_proj")
        q, k, v = rope(heads(q, NH)), rope(heads(k, KV)), heads(v, KV)
        k = g.op("Concat", ["past_key_values.%d.key" % i, k], axis=2, outputs=["present.%d.key" % i])
        v = g.op("Concat", ["past_key_values.%d.value" % i, v], axis=2, outputs=["present.%d.value" % i])
        scores = g.op("Mul", [g.op("MatMul", [q, g.op("Transpose", [repeat_kv(k)], perm=[0, 1, 3, 2])]),
                              g.f32(1.0 / np.sqrt(D))])
        probs = g.op("Softmax", [g.op("Add", [scores, mask])], axis=-1)
        ctx = g.op("MatMul", [probs, repeat_kv(v)])
        ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), g.i64([0, 0, NH * D])])
        o, deq[p + "o"] = lin(ctx, L["wo"], p + "self_attn.o_proj")
        x = g.op("Add", [x, o])
        xn = rms(x, L["ln2"], p + "post_attention_layernorm.weight")
        gate, deq[p + "g"] = lin(xn, L["wg"], p + "mlp.gate_proj")
        up, deq[p + "u"] = lin(xn, L["wu"], p + "mlp.up_proj")
        act = g.op("Mul", [gate, g.op("Sigmoid", [gate])])
        d, deq[p + "d"] = lin(g.op("Mul", [act, up]), L["wd"], p + "mlp.down_proj")
        x = g.op("Add", [x, d])
    xn = rms(x, w["final_norm"], "model.norm.weight")
    if lm_head_mode == "qdq4_uint4":  # the QDQ form's head: uint4 with zero points
        _, deq["lm_head"] = lin(xn, w["lm_head"], "lm_head", out="logits", signed=False)
    else:
        _, deq["lm_head"] = lin(xn, w["lm_head"], "lm_head", out="logits")
    ins, outs = io_decls("past_sequence_length", "optimum")
    opsets = [("", opset)] + ([("com.microsoft", 1)] if mode == "nbits" and not twin else [])
    return finish(g, "optimum", ins, outs, opsets, 10 if opset >= 21 else 8), deq


# ---------------------------------------------------------------- running onnxruntime step by step

def run_ort(model, feeds, ort_session=None):
    """onnxruntime-node's outputs for one set of feeds (keyed by input name), by output name
    (ort_session: session options other than run_ort.js's)."""
    d = tempfile.mkdtemp(prefix="decoders_")
    try:
        onnx.save(model, os.path.join(d, "model.onnx"))
        if ort_session:
            with open(os.path.join(d, "ort_session.json"), "w") as f:
                json.dump(ort_session, f)
        sd = os.path.join(d, "test_data_set_0")
        os.makedirs(sd)
        for k, vi in enumerate(model.graph.input):
            with open(os.path.join(sd, "input_%d.pb" % k), "wb") as f:
                f.write(numpy_helper.from_array(np.ascontiguousarray(feeds[vi.name]), vi.name).SerializeToString())
        env = dict(os.environ, NODE_PATH=ORT_NODE_MODULES)
        subprocess.run(["node", os.path.join(ROOT, "tools", "oracle", "run_ort.js"), d], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        out = {}
        for k, vo in enumerate(model.graph.output):
            t = TensorProto()
            with open(os.path.join(sd, "output_%d.pb" % k), "rb") as f:
                t.ParseFromString(f.read())
            out[vo.name] = numpy_helper.to_array(t)
        return out
    finally:
        shutil.rmtree(d, ignore_errors=True)


def prompt(seed, batch=2, seq=6, short=4):
    """Prompt ids [batch, seq]; the last row right-padded to `short` real tokens (pad id 0)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, CFG["vocab"], size=(batch, seq)).astype(np.int64)
    mask = np.ones((batch, seq), np.int64)
    ids[-1, short:] = 0
    mask[-1, short:] = 0
    return ids, mask


def chain(model, form, ids, mask, steps, shared_len=0, ort_session=None):
    """The prompt and `steps` greedy decode steps, each step's past being onnxruntime's presents of
    the step before. Returns the list of feeds and the list of onnxruntime's outputs."""
    c = CFG
    B = ids.shape[0]
    past = {}
    for i in range(c["layers"]):
        for kv in ("key", "value"):
            past["past_key_values.%d.%s" % (i, kv)] = np.zeros((B, c["kv_heads"], shared_len, c["head_dim"]), np.float32)
    sets, outs = [], []
    for step in range(steps + 1):
        feeds = dict(past, input_ids=ids, attention_mask=mask)
        if form == "optimum":  # Hugging Face's rule: cumsum(mask) - 1, pads at 1
            pos = np.cumsum(mask, axis=1) - 1
            pos[mask == 0] = 1
            feeds["position_ids"] = pos[:, -ids.shape[1]:].astype(np.int64)
        out = run_ort(model, feeds, ort_session)
        sets.append(feeds)
        outs.append(out)
        last = mask.sum(1) - 1 if step == 0 else np.zeros(B, np.int64)  # each row's last real token
        nxt = out["logits"][np.arange(B), last if step == 0 else -1].argmax(-1)
        ids = nxt.reshape(B, 1).astype(np.int64)
        mask = np.concatenate([mask, np.ones((B, 1), np.int64)], axis=1)
        past = {n.replace("present", "past_key_values"): v for n, v in out.items() if n.startswith("present")}
    return sets, outs


def top1_margin(logits, rows=None):
    """The smallest gap between the largest and second-largest logit over the given rows."""
    x = logits.reshape(-1, logits.shape[-1]) if rows is None else rows
    s = np.sort(x, axis=-1)
    return float((s[:, -1] - s[:, -2]).min())
