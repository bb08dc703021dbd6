"""Attention as the exporters spell it, against onnxruntime: what the
attention rewrite (runtime/rewrite/attention.cc) takes in, each graph small.

- torchscript: HF eager attention (opset 17): Div by sqrt(D), the additive mask
  HF's subgraph builds from attention_mask [B, T] (float min where hidden, a
  padded batch row) sliced to key_states.shape[-2] of the repeated keys, a Cast to float before the Softmax (and back after it in
  float16), the KV cache by Concat, repeat_kv with Expand/Reshape shapes from
  Shape/Gather/Unsqueeze/Concat (the Expand's through torch's Where(Equal(s, -1), 1, s));
- sdpa: dynamo-like scaled_dot_product_attention (opset 18): sqrt(scale) times
  Q and times Kᵀ, a boolean mask made additive by Where(mask, 0, -inf), the
  guard Where(IsNaN(P), 0, P) after the Softmax (fully masked rows are zeros),
  repeat shapes from Shape(start, end);
- tile: the older repeat Tile(k, [1, G, 1, 1]) (with one KV head the fused op
  takes it; with two it stays, its head order h mod KV);
- near misses that must stay as written but still run: a per-head scale.
Batches > 1, odd lengths, prefill and decode steps, float32 and float16.
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from oracle import Case, value_info

F32, F16 = np.float32, np.float16


def model(nodes, inputs, outputs, inits, opset):
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def elem(dtype):
    return TensorProto.FLOAT16 if dtype == F16 else TensorProto.FLOAT


def attention_case(name, rng, *, spelling, B, S, P, H, KV, D, dtype=F32, pad=0, hide_row=False,
                   repeat="expand", per_head_scale=False):
    """One attention layer over a cache: q [B, H, S, D], k/v [B, KV, S, D], past [B, KV, P, D]."""
    T = P + S
    G = H // KV
    ts = spelling == "torchscript"
    f = lambda *shape: rng.standard_normal(shape).astype(dtype)
    feeds = {"q": f(B, H, S, D), "k": f(B, KV, S, D), "v": f(B, KV, S, D),
             "past_key": f(B, KV, P, D), "past_value": f(B, KV, P, D)}
    am = np.ones((B, T), np.int64)
    if pad:
        am[-1, :pad] = 0  # the last batch row left-padded
    if hide_row:
        am[0, :] = 0  # batch 0 sees no key at all
    feeds["attention_mask"] = am
    i64 = lambda *v: np.array(v, np.int64)
    inits = {"s0": np.array(0, np.int64), "s1": np.array(1, np.int64), "s2": np.array(2, np.int64), "sm2": np.array(-2, np.int64), "c3": i64(3),
             "c0": i64(0), "c1": i64(1), "c2": i64(2), "c12": i64(1, 2), "c_last": i64(-1),
             "neg5": i64(-1, -1, -1, -1, -1), "ones5": i64(1, 1, 1, 1, 1), "kv": i64(KV), "g": i64(G), "h": i64(H), "d": i64(D), "tile": i64(1, G, 1, 1),
             "zero": np.array(0, dtype), "one": np.array(1, dtype),
             "fmin": np.array(np.finfo(dtype).min, dtype), "ninf": np.array(-np.inf, dtype),
             "sqrt_d": np.array(np.sqrt(D), dtype),
             "sqrt_scale": np.array(np.sqrt(1 / np.sqrt(D)), dtype)}
    if per_head_scale:
        inits["sqrt_scale"] = (np.linspace(0.3, 0.5, H).reshape(H, 1, 1)).astype(dtype)
    n = []
    N = lambda op, ins, outs, **a: n.append(helper.make_node(op, ins, outs, **a))
    N("Concat", ["past_key", "k"], ["present_key"], axis=2)
    N("Concat", ["past_value", "v"], ["present_value"], axis=2)
    # The mask over [B, 1, S, T]: key j visible to query i when j <= P + i and attention_mask[b, j].
    N("Shape", ["q"], ["q_shape"])
    N("Gather", ["q_shape", "s2"], ["seq"])
    N("Shape", ["past_key"], ["past_shape"])
    N("Gather", ["past_shape", "s2"], ["past"])
    N("Add", ["past", "seq"], ["total"])
    N("Range", ["past", "total", "s1"], ["qpos"])
    N("Unsqueeze", ["qpos", "c1"], ["qcol"])
    N("Range", ["s0", "total", "s1"], ["kpos"])
    N("LessOrEqual", ["kpos", "qcol"], ["causal"])
    N("Unsqueeze", ["attention_mask", "c12"], ["am4"])
    if ts:
        N("Where", ["causal", "zero", "fmin"], ["causal_bias"])
        N("Cast", ["am4"], ["am_f"], to=elem(dtype))
        N("Sub", ["one", "am_f"], ["inverted"])
        N("Cast", ["inverted"], ["padding"], to=TensorProto.BOOL)
        N("Where", ["padding", "fmin", "causal_bias"], ["bias"])
    else:
        N("Cast", ["am4"], ["am_b"], to=TensorProto.BOOL)
        N("And", ["causal", "am_b"], ["mask"])
        N("Where", ["mask", "zero", "ninf"], ["bias"])
    reps = {}
    for x in ["present_key", "present_value"]:
        if repeat == "tile":
            N("Tile", [x, "tile"], [x + "_rep"])
        elif repeat == "none":
            reps[x] = x
            continue
        else:
            if ts:
                N("Shape", [x], [x + "_shape"])
                for a in (0, 2):
                    N("Gather", [x + "_shape", "s%d" % a], [x + "_d%d" % a])
                    N("Unsqueeze", [x + "_d%d" % a, "c0"], [x + "_u%d" % a])
            else:
                for a in (0, 2):
                    N("Shape", [x], [x + "_u%d" % a], start=a, end=a + 1)
            if ts:  # torch's expand: stack, view(-1), Where(Equal(s, -1), 1, s)
                N("Concat", [x + "_u0", "kv", "g", x + "_u2", "d"], [x + "_stack"], axis=0)
                N("Reshape", [x + "_stack", "c_last"], [x + "_view"])
                N("Equal", [x + "_view", "neg5"], [x + "_isneg"])
                N("Where", [x + "_isneg", "ones5", x + "_view"], [x + "_eshape"])
            else:
                N("Concat", [x + "_u0", "kv", "g", x + "_u2", "d"], [x + "_eshape"], axis=0)
            N("Concat", [x + "_u0", "h", x + "_u2", "d"], [x + "_rshape"], axis=0)
            N("Unsqueeze", [x, "c2"], [x + "_5d"])
            N("Expand", [x + "_5d", x + "_eshape"], [x + "_x"])
            N("Reshape", [x + "_x", x + "_rshape"], [x + "_rep"])
        reps[x] = x + "_rep"
    N("Transpose", [reps["present_key"]], ["kt"], perm=[0, 1, 3, 2])
    if ts:
        N("MatMul", ["q", "kt"], ["scores"])
        N("Div", ["scores", "sqrt_d"], ["scaled"])
        # attention_mask[:, :, :, :key_states.shape[-2]] of the repeated keys
        N("Shape", [reps["present_key"]], ["krep_shape"])
        N("Gather", ["krep_shape", "sm2"], ["klen"])
        N("Unsqueeze", ["klen", "c0"], ["klen1"])
        N("Slice", ["bias", "c0", "klen1", "c3"], ["layer_bias"])
        N("Add", ["scaled", "layer_bias"], ["masked"])
        # softmax(dtype=float32).to(dtype): in a float16 export a Cast to float and back.
        N("Cast", ["masked"], ["masked_f"], to=TensorProto.FLOAT)
        if dtype == F16:
            N("Softmax", ["masked_f"], ["probs_f"], axis=-1)
            N("Cast", ["probs_f"], ["probs"], to=TensorProto.FLOAT16)
        else:
            N("Softmax", ["masked_f"], ["probs"], axis=-1)
    else:
        N("Mul", ["q", "sqrt_scale"], ["qs"])
        N("Mul", ["kt", "sqrt_scale"], ["kts"])
        N("MatMul", ["qs", "kts"], ["scores"])
        N("Add", ["scores", "bias"], ["masked"])
        N("Softmax", ["masked"], ["softmax"], axis=-1)
        N("IsNaN", ["softmax"], ["nan"])
        N("Where", ["nan", "zero", "softmax"], ["probs"])
    N("MatMul", ["probs", reps["present_value"]], ["y"])
    names = ["q", "k", "v", "past_key", "past_value", "attention_mask"]
    sym = lambda a: value_info(a, feeds[a])
    inputs = [sym(a) for a in names]
    outputs = [helper.make_tensor_value_info(o, elem(dtype), None) for o in ["y", "present_key", "present_value"]]
    m = model(n, inputs, outputs, inits, 17 if ts else 18)
    if dtype == F16:
        return Case(name, m, [feeds], 4e-3, 2e-3, "float16 scores and probabilities rounded in the pattern's steps")
    return Case(name, m, [feeds], 1e-4, 1e-5, "float32 throughout")


def cases():
    rng = np.random.default_rng(27)
    out = []
    for sp in ["torchscript", "sdpa"]:
        out.append(attention_case(sp + "_prefill_b2_padded", rng, spelling=sp, B=2, S=7, P=0, H=4, KV=2, D=16, pad=3))
        out.append(attention_case(sp + "_decode_b3", rng, spelling=sp, B=3, S=1, P=9, H=6, KV=2, D=8, pad=2))
        out.append(attention_case(sp + "_continued_b2", rng, spelling=sp, B=2, S=5, P=4, H=4, KV=1, D=8))
        out.append(attention_case(sp + "_no_repeat", rng, spelling=sp, B=2, S=3, P=2, H=2, KV=2, D=8,
                                  repeat="none"))
        out.append(attention_case(sp + "_f16_decode", rng, spelling=sp, B=2, S=1, P=6, H=4, KV=2, D=8,
                                  dtype=F16, pad=1))
        out.append(attention_case(sp + "_tile_one_kv_head", rng, spelling=sp, B=2, S=3, P=3, H=4, KV=1, D=8,
                                  repeat="tile"))
        out.append(attention_case(sp + "_tile_two_kv_heads", rng, spelling=sp, B=2, S=3, P=3, H=4, KV=2, D=8,
                                  repeat="tile"))
    # The guard: batch 0 sees no key (NaN rows made zeros); and a per-head scale, kept as written.
    out.append(attention_case("sdpa_guard_fully_masked_batch", rng, spelling="sdpa", B=2, S=3, P=2, H=4, KV=2,
                              D=8, hide_row=True))
    out.append(attention_case("sdpa_per_head_scale_kept", rng, spelling="sdpa", B=2, S=3, P=2, H=4, KV=2, D=8,
                              per_head_scale=True))
    # HF's finite mask over a fully padded batch row: the Softmax of (scores + min) rows.
    out.append(attention_case("torchscript_fully_padded_batch", rng, spelling="torchscript", B=2, S=3, P=2, H=4,
                              KV=2, D=8, hide_row=True))
    return out
