"""Helpers of the accuracy family (cases_accuracy.py): quantizers, float64 references, the float32
floor, and onnxruntime run over many cases at once.

Every expected output of the family is a float64 computation with the same dequantized weights
(and, where a path rounds the activations to int8, with the float activations): the point is each
runtime's error against the exact product. Each case's tolerance comes from onnxruntime's own
error on it (see cases_accuracy.py).
"""
import os
import shutil
import subprocess
import tempfile

import numpy as np
from onnx import TensorProto, numpy_helper

from oracle import ORT_NODE_MODULES, ROOT

F32_ULP = 2.0 ** -23  # float32's unit roundoff times 2: one ulp at 1.0


# ---------------------------------------------------------------- quantizers

def quantize_blocks(w, bits, block, symmetric):
    """Blockwise quantization of W [K, N] along K, as the exporters write it (symmetric: scale
    max|w| / (2^(bits-1) - 1), zero point 2^(bits-1); else (max - min) / (2^bits - 1) with the
    range holding 0). Returns codes [N, kb * block] (the padding past K holds the zero point),
    scales float32 [N, kb], zero points int [N, kb]."""
    K, N = w.shape
    kb = -(-K // block)
    wt = np.zeros((N, kb * block), np.float64)
    wt[:, :K] = w.T
    blocks = wt.reshape(N, kb, block)
    top = (1 << bits) - 1
    if symmetric:
        amax = np.abs(blocks).max(-1)
        scale = np.where(amax > 0, amax / ((1 << (bits - 1)) - 1), 1.0).astype(np.float32)
        zp = np.full((N, kb), 1 << (bits - 1), np.int64)
    else:
        lo, hi = np.minimum(blocks.min(-1), 0), np.maximum(blocks.max(-1), 0)
        scale = np.where(hi > lo, (hi - lo) / top, 1.0).astype(np.float32)
        zp = np.clip(np.round(-lo / scale), 0, top).astype(np.int64)
    q = np.clip(np.round(blocks / scale[..., None]) + zp[..., None], 0, top).astype(np.int64)
    q = q.reshape(N, -1)
    q[:, K:] = np.repeat(zp, block, axis=1)[:, K:]
    return q, scale, zp


def dequantize_blocks(codes, scales, zp, k, block):
    """The exact dequantized W [K, N] in float64: (code - zero point) * scale."""
    n = codes.shape[0]
    kb = scales.shape[1]
    d = (codes.reshape(n, kb, block) - zp[..., None]) * scales.astype(np.float64)[..., None]
    return d.reshape(n, -1)[:, :k].T.copy()


def pack_codes(codes, bits):
    """Codes packed low bits first along the last axis, into bytes (MatMulNBits' B and zero points)."""
    per = 8 // bits
    codes = np.asarray(codes, dtype=np.uint8)
    pad = (-codes.shape[-1]) % per
    if pad:
        codes = np.concatenate([codes, np.zeros(codes.shape[:-1] + (pad,), np.uint8)], axis=-1)
    codes = codes.reshape(codes.shape[:-1] + (-1, per))
    out = np.zeros(codes.shape[:-1], np.uint8)
    for s in range(per):
        out |= (codes[..., s] << (s * bits)).astype(np.uint8)
    return out


def int4_tensor(name, values, dims, signed):
    """An INT4 (22) or UINT4 (21) initializer (onnx 1.12 has no helper for them)."""
    t = TensorProto()
    t.name = name
    t.data_type = 22 if signed else 21
    t.dims.extend(dims)
    t.raw_data = pack_codes(np.asarray(values).reshape(-1) & 0xF, 4).tobytes()
    return t


# ---------------------------------------------------------------- errors

def seq_f32_matmul(a, w):
    """The textbook float32 loop: A and W rounded to float32, each product rounded, summed in
    order of k. Its error against float64 is the floor a correct float32 kernel is held to."""
    a32 = a.astype(np.float32).reshape(-1, a.shape[-1])
    w32 = w.astype(np.float32)
    acc = np.zeros((a32.shape[0], w32.shape[1]), np.float32)
    for k in range(a32.shape[1]):
        acc += a32[:, k:k + 1] * w32[k:k + 1, :]
    return acc.reshape(a.shape[:-1] + (w.shape[1],))


def max_err(got_sets, want_sets):
    """The largest |got - want| over every set and output (dicts keyed by output name)."""
    e = 0.0
    for got, want in zip(got_sets, want_sets):
        for k in want:
            e = max(e, float(np.abs(np.asarray(got[k], np.float64) - np.asarray(want[k], np.float64)).max()))
    return e


def max_abs(sets):
    return max(float(np.abs(np.asarray(v, np.float64)).max()) for s in sets for v in s.values())


# ---------------------------------------------------------------- onnxruntime

def ort_run_many(jobs):
    """jobs: [(model, [feeds dict by input name, ...]), ...]. Runs onnxruntime-node once over all
    of them (run_ort.js: one thread, graph optimizations off) and returns, per job, its outputs per
    set as dicts keyed by output name."""
    import onnx
    root = tempfile.mkdtemp(prefix="accuracy_")
    try:
        dirs = []
        for j, (model, sets) in enumerate(jobs):
            d = os.path.join(root, "case_%03d" % j)
            os.makedirs(d)
            onnx.save(model, os.path.join(d, "model.onnx"))
            inits = {i.name for i in model.graph.initializer}
            for s, feeds in enumerate(sets):
                sd = os.path.join(d, "test_data_set_%d" % s)
                os.makedirs(sd)
                k = 0
                for vi in model.graph.input:
                    if vi.name in inits:
                        continue
                    t = numpy_helper.from_array(np.ascontiguousarray(feeds[vi.name]), vi.name)
                    with open(os.path.join(sd, "input_%d.pb" % k), "wb") as f:
                        f.write(t.SerializeToString())
                    k += 1
            dirs.append(d)
        env = dict(os.environ, NODE_PATH=ORT_NODE_MODULES)
        subprocess.run(["node", os.path.join(ROOT, "tools", "oracle", "run_ort.js")] + dirs, check=True, env=env,
                       stdout=subprocess.DEVNULL)
        results = []
        for (model, sets), d in zip(jobs, dirs):
            per_set = []
            for s in range(len(sets)):
                out = {}
                for k, vo in enumerate(model.graph.output):
                    t = TensorProto()
                    with open(os.path.join(d, "test_data_set_%d" % s, "output_%d.pb" % k), "rb") as f:
                        t.ParseFromString(f.read())
                    out[vo.name] = numpy_helper.to_array(t)
                per_set.append(out)
            results.append(per_set)
        return results
    finally:
        shutil.rmtree(root, ignore_errors=True)


# ---------------------------------------------------------------- a whole decoder in numpy

def unpack_nbits4(packed, n, kb, block):
    """Codes [N, kb * block] from MatMulNBits' B [N, kb, block / 2] (4 bits, low nibble first)."""
    p = np.asarray(packed, np.uint8).reshape(n, -1)
    codes = np.stack([p & 0xF, p >> 4], axis=-1).reshape(n, -1)
    return codes[:, :kb * block].astype(np.int64)


def genai_deq64(D, w, block=32):
    """The exact dequantized weights of decoders_lib.build_genai's MatMulNBits (4 bits, symmetric),
    in float64, keyed as build_genai keys them."""
    def deq(m):
        k, n = m.shape
        kb = -(-k // block)
        ins, _ = D.quant_nbits(m, 4, block, True)
        codes = unpack_nbits4(ins[0], n, kb, block)
        return dequantize_blocks(codes, np.asarray(ins[1]).reshape(n, kb), np.full((n, kb), 8), k, block)
    out = {}
    for i, L in enumerate(w["layers"]):
        p = "model.layers.%d." % i
        out[p + "qkv"] = deq(np.concatenate([L["wq"], L["wk"], L["wv"]], axis=1))
        out[p + "o"], out[p + "g"], out[p + "u"], out[p + "d"] = deq(L["wo"]), deq(L["wg"]), deq(L["wu"]), deq(L["wd"])
    out["lm_head"] = deq(w["lm_head"])
    return out


def genai_forward(D, w, deq, ids, past, dtype):
    """build_genai's graph (batch 1, no padding, the cache growing) in numpy at `dtype`: logits and
    presents, keyed as the model's outputs. float64 is the reference, float32 a plain float32 run."""
    c = D.CFG
    H, NH, KV, Dh, eps = c["hidden"], c["heads"], c["kv_heads"], c["head_dim"], c["eps"]
    f = lambda a: np.asarray(a).astype(dtype)  # noqa: E731
    cos, sin, _ = D.rotary_tables(Dh, c["max_pos"], c["theta"])
    cos, sin = f(cos), f(sin)
    S = ids.shape[1]
    P = past["past_key_values.0.key"].shape[2]
    pos = np.arange(P, P + S)

    def rms(x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + f(eps)) * f(g)

    def rope(t):  # t [heads, S, Dh], rotate-half
        h = Dh // 2
        c_, s_ = cos[pos][None], sin[pos][None]
        x1, x2 = t[..., :h], t[..., h:]
        return np.concatenate([x1 * c_ - x2 * s_, x2 * c_ + x1 * s_], axis=-1)

    out = {}
    x = f(w["embed"])[ids[0]]
    residual, skip = x, None
    for i, L in enumerate(w["layers"]):
        p = "model.layers.%d." % i
        if skip is not None:
            residual = residual + skip
        xn = rms(residual, L["ln1"])
        qkv = xn @ f(deq[p + "qkv"])
        q = qkv[:, :NH * Dh].reshape(S, NH, Dh).transpose(1, 0, 2)
        k = qkv[:, NH * Dh:(NH + KV) * Dh].reshape(S, KV, Dh).transpose(1, 0, 2)
        v = qkv[:, (NH + KV) * Dh:].reshape(S, KV, Dh).transpose(1, 0, 2)
        q, k = rope(q), rope(k)
        pk = np.concatenate([f(past["past_key_values.%d.key" % i][0]), k], axis=1)
        pv = np.concatenate([f(past["past_key_values.%d.value" % i][0]), v], axis=1)
        out["present.%d.key" % i], out["present.%d.value" % i] = pk[None], pv[None]
        ctx = np.zeros((NH, S, Dh), dtype)
        T = P + S
        causal = np.arange(T)[None, :] <= pos[:, None]
        for h in range(NH):
            kh = h // (NH // KV)
            s_ = (q[h] @ pk[kh].T) * f(1.0 / np.sqrt(Dh))
            s_ = np.where(causal, s_, -np.inf)
            e = np.exp(s_ - s_.max(-1, keepdims=True))
            ctx[h] = (e / e.sum(-1, keepdims=True)) @ pv[kh]
        o = ctx.transpose(1, 0, 2).reshape(S, NH * Dh) @ f(deq[p + "o"])
        residual = residual + o
        xn = rms(residual, L["ln2"])
        gate, up = xn @ f(deq[p + "g"]), xn @ f(deq[p + "u"])
        act = gate / (1 + np.exp(-gate))
        skip = (act * up) @ f(deq[p + "d"])
    xn = rms(residual + skip, w["final_norm"])
    out["logits"] = (xn @ f(deq["lm_head"]))[None]
    return out
