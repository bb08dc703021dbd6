"""RMSNorm and rotary as exporters spell them (runtime/rewrite/norms.cc and
rotary.cc fuse them into RMSNormalization, RotaryEmbedding and RotateHalf) against
onnxruntime running the graph as written: TorchScript's Casts, Pow or Mul,
Reciprocal(Sqrt) or Div, dynamo's ReduceMean axes input and Pow(., -0.5),
float16 wrapped in Casts; HF's rotate_half by constant Slices, Shape-derived
Slice ends, or Split, cos/sin gathered from tables by position_ids (or from
older exports' [1, 1, P, D] tables sliced and squeezed, or computed at run time
from position_ids as Optimum exports them), partial rotary (GPT-NeoX), GPT-J's
rotate_every_two, q and k sharing them, several sequence lengths over one model."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from oracle import Case, ms_model, value_info

F32 = dict(rtol=1e-4, atol=1e-5, why="both in float32; the fused norm keeps its sums in double, a few ulp apart")
F16 = dict(rtol=2e-3, atol=2e-3,
           why="float16 output: the fused op rounds once where the graph rounds the normalized value (or "
               "each product) to float16 first, one or two float16 ulps (2^-10 relative) apart")


def c(name, array):
    return numpy_helper.from_array(array, name)


def i64(*v):
    return np.array(v, dtype=np.int64)


def rms_case(name, dtype, hidden, opset, square="pow", inverse="recip", weight_first=True, casts=True, rows=(2, 5)):
    rng = np.random.default_rng(hidden * 7 + opset)
    x = (rng.standard_normal((*rows, hidden)) * 2).astype(dtype)
    w = rng.uniform(0.5, 1.5, hidden).astype(dtype)
    inits = [c("w", w), c("eps", np.array(1e-6, np.float32)), c("two", np.array(2.0, np.float32)),
             c("minus_half", np.array(-0.5, np.float32)), c("one", np.array(1.0, np.float32))]
    nodes = []
    xf = "x"
    if casts:
        nodes.append(helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT))
        xf = "xf"
    if square == "pow":
        nodes.append(helper.make_node("Pow", [xf, "two"], ["sq"]))
    else:
        nodes.append(helper.make_node("Mul", [xf, xf], ["sq"]))
    if opset >= 18:
        inits.append(c("axes", i64(-1)))
        nodes.append(helper.make_node("ReduceMean", ["sq", "axes"], ["mean"], keepdims=1))
    else:
        nodes.append(helper.make_node("ReduceMean", ["sq"], ["mean"], axes=[-1], keepdims=1))
    nodes.append(helper.make_node("Add", ["mean", "eps"], ["var"]))
    if inverse == "pow":
        nodes.append(helper.make_node("Pow", ["var", "minus_half"], ["inv"]))
        nodes.append(helper.make_node("Mul", [xf, "inv"], ["normed"]))
    else:
        nodes.append(helper.make_node("Sqrt", ["var"], ["std"]))
        if inverse == "recip":
            nodes.append(helper.make_node("Reciprocal", ["std"], ["inv"]))
            nodes.append(helper.make_node("Mul", [xf, "inv"], ["normed"]))
        else:
            nodes.append(helper.make_node("Div", [xf, "std"], ["normed"]))
    normed = "normed"
    if casts:
        to = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
        nodes.append(helper.make_node("Cast", ["normed"], ["normed_c"], to=to))
        normed = "normed_c"
    nodes.append(helper.make_node("Mul", ["w", normed] if weight_first else [normed, "w"], ["y"]))
    shape = ["batch", "seq", hidden]
    model = ms_model(nodes, [value_info("x", dtype, shape)], [value_info("y", dtype, shape)], inits, opset=opset)
    x2 = (rng.standard_normal((1, 3, hidden)) * 0.5).astype(dtype)
    return Case(name, model, [{"x": x}, {"x": x2}], **(F16 if dtype == np.float16 else F32))


def tables(max_pos, d, dtype):
    inv = 10000.0 ** (-np.arange(0, d, 2) / d)
    freqs = np.outer(np.arange(max_pos), inv)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb).astype(dtype), np.sin(emb).astype(dtype)


def rotary_case(name, dtype, halves, opset, heads=(3, 1), d=16, batch=2, seqs=(5, 1), max_pos=24, partial=0,
                old_table=False):
    """q [B, H, S, D] and k [B, KV, S, D] rotated by tables gathered at position_ids [B, S]; `partial`: only the
    first `partial` of each head (GPT-NeoX); `old_table`: tables [1, 1, P, r] sliced to T = S + P rows at run
    time and squeezed before the Gather."""
    rng = np.random.default_rng(d * 13 + opset + len(name))
    r = partial or d
    cos, sin = tables(max_pos, r, dtype)
    if old_table:
        cos, sin = cos.reshape(1, 1, max_pos, r), sin.reshape(1, 1, max_pos, r)
    inits = [c("cos_cached", cos), c("sin_cached", sin), c("zero", i64(0)), c("one", i64(1)), c("last", i64(-1)),
             c("half", i64(r // 2)), c("big", i64(np.iinfo(np.int64).max)), c("three", np.array(3, np.int64)),
             c("two_i", np.array(2, np.int64)), c("halves", i64(r // 2, r // 2)), c("r", i64(r)),
             c("two_1d", i64(2)), c("p_1d", i64(max_pos))]
    nodes = []
    if old_table:
        nodes += [helper.make_node("Shape", ["q"], ["q_shape_t"]),
                  helper.make_node("Gather", ["q_shape_t", "two_1d"], ["q_len"], axis=0),
                  helper.make_node("Add", ["q_len", "p_1d"], ["t_len"])]
    for t in ("cos", "sin"):
        table = t + "_cached"
        if old_table:
            nodes.append(helper.make_node("Slice", [table, "zero", "t_len", "two_1d"], [t + "_t"]))
            if opset >= 13:
                nodes += [helper.make_node("Squeeze", [t + "_t", "one"], [t + "_s1"]),
                          helper.make_node("Squeeze", [t + "_s1", "zero"], [t + "_s0"])]
            else:
                nodes += [helper.make_node("Squeeze", [t + "_t"], [t + "_s1"], axes=[1]),
                          helper.make_node("Squeeze", [t + "_s1"], [t + "_s0"], axes=[0])]
            table = t + "_s0"
        nodes.append(helper.make_node("Gather", [table, "position_ids"], [t + "_3d"]))
        if opset >= 13:
            nodes.append(helper.make_node("Unsqueeze", [t + "_3d", "one"], [t]))
        else:
            nodes.append(helper.make_node("Unsqueeze", [t + "_3d"], [t], axes=[1]))
    for xo in ("q", "k"):
        x = xo
        if partial:
            x = xo + "_r"
            nodes += [helper.make_node("Slice", [xo, "zero", "r", "last"], [x]),
                      helper.make_node("Slice", [xo, "r", "big", "last"], [xo + "_pass"])]
        x1, x2 = x + "_x1", x + "_x2"
        if halves == "slice":
            nodes += [helper.make_node("Slice", [x, "zero", "half", "last"], [x1]),
                      helper.make_node("Slice", [x, "half", "big", "last"], [x2])]
        elif halves == "shape":
            nodes += [helper.make_node("Shape", [x], [x + "_shape"]),
                      helper.make_node("Gather", [x + "_shape", "three"], [x + "_d"], axis=0),
                      helper.make_node("Div", [x + "_d", "two_i"], [x + "_h"])]
            if opset >= 13:
                nodes.append(helper.make_node("Unsqueeze", [x + "_h", "zero"], [x + "_h1"]))
            else:
                nodes.append(helper.make_node("Unsqueeze", [x + "_h"], [x + "_h1"], axes=[0]))
            nodes += [helper.make_node("Slice", [x, "zero", x + "_h1", "last"], [x1]),
                      helper.make_node("Slice", [x, x + "_h1", "big", "last"], [x2])]
        elif opset >= 18:
            nodes.append(helper.make_node("Split", [x], [x1, x2], axis=-1, num_outputs=2))
        else:
            nodes.append(helper.make_node("Split", [x, "halves"], [x1, x2], axis=-1))
        nodes += [helper.make_node("Neg", [x2], [x + "_neg"]),
                  helper.make_node("Concat", [x + "_neg", x1], [x + "_rot"], axis=-1),
                  helper.make_node("Mul", [x, "cos"], [x + "_c"]),
                  helper.make_node("Mul", [x + "_rot", "sin"], [x + "_s"]),
                  helper.make_node("Add", [x + "_c", x + "_s"], [xo + "_embed" if not partial else x + "_embed"])]
        if partial:
            nodes.append(helper.make_node("Concat", [x + "_embed", xo + "_pass"], [xo + "_embed"], axis=-1))
    h, kv = heads
    ins = [value_info("q", dtype, ["batch", h, "seq", d]), value_info("k", dtype, ["batch", kv, "seq", d]),
           value_info("position_ids", np.int64, ["batch", "seq"])]
    outs = [value_info("q_embed", dtype, ["batch", h, "seq", d]), value_info("k_embed", dtype, ["batch", kv, "seq", d])]
    model = ms_model(nodes, ins, outs, inits, opset=opset)
    feeds = []
    for s in seqs:
        start = rng.integers(0, max_pos - s, size=(batch, 1))
        feeds.append({"q": rng.standard_normal((batch, h, s, d)).astype(dtype),
                      "k": rng.standard_normal((batch, kv, s, d)).astype(dtype),
                      "position_ids": (start + np.arange(s)).astype(np.int64)})
    return Case(name, model, feeds, **(F16 if dtype == np.float16 else F32))


def runtime_rotary_case(name, dtype, heads=(4, 2), d=16, batch=2, seqs=(6, 1), opset=17):
    """Optimum's export of HF's rotary since transformers 4.38: cos and sin computed from position_ids
    (MatMul of inv_freq by the positions as float, Transpose, Concat(freqs, freqs), Cos/Sin, Cast to the
    model's type, Unsqueeze) each step, then the same rotate_half."""
    rng = np.random.default_rng(d + opset + len(name))
    inv = (10000.0 ** (-np.arange(0, d, 2) / d)).astype(np.float32).reshape(1, d // 2, 1)
    to = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
    inits = [c("inv_freq", inv), c("zero", i64(0)), c("one", i64(1)), c("last", i64(-1)), c("half", i64(d // 2)),
             c("big", i64(np.iinfo(np.int64).max))]
    nodes = [helper.make_node("Unsqueeze", ["position_ids", "one"], ["pos3"]),
             helper.make_node("Cast", ["pos3"], ["posf"], to=TensorProto.FLOAT),
             helper.make_node("MatMul", ["inv_freq", "posf"], ["freqs_t"]),
             helper.make_node("Transpose", ["freqs_t"], ["freqs"], perm=[0, 2, 1]),
             helper.make_node("Concat", ["freqs", "freqs"], ["emb"], axis=-1)]
    for t, op in (("cos", "Cos"), ("sin", "Sin")):
        nodes += [helper.make_node(op, ["emb"], [t + "_f"]),
                  helper.make_node("Cast", [t + "_f"], [t + "_3d"], to=to),
                  helper.make_node("Unsqueeze", [t + "_3d", "one"], [t])]
    for x in ("q", "k"):
        nodes += [helper.make_node("Slice", [x, "zero", "half", "last"], [x + "_x1"]),
                  helper.make_node("Slice", [x, "half", "big", "last"], [x + "_x2"]),
                  helper.make_node("Neg", [x + "_x2"], [x + "_neg"]),
                  helper.make_node("Concat", [x + "_neg", x + "_x1"], [x + "_rot"], axis=-1),
                  helper.make_node("Mul", [x, "cos"], [x + "_c"]),
                  helper.make_node("Mul", [x + "_rot", "sin"], [x + "_s"]),
                  helper.make_node("Add", [x + "_c", x + "_s"], [x + "_embed"])]
    h, kv = heads
    ins = [value_info("q", dtype, ["batch", h, "seq", d]), value_info("k", dtype, ["batch", kv, "seq", d]),
           value_info("position_ids", np.int64, ["batch", "seq"])]
    outs = [value_info("q_embed", dtype, ["batch", h, "seq", d]), value_info("k_embed", dtype, ["batch", kv, "seq", d])]
    model = ms_model(nodes, ins, outs, inits, opset=opset)
    feeds = []
    for s_ in seqs:
        start = rng.integers(0, 40, size=(batch, 1))
        feeds.append({"q": rng.standard_normal((batch, h, s_, d)).astype(dtype),
                      "k": rng.standard_normal((batch, kv, s_, d)).astype(dtype),
                      "position_ids": (start + np.arange(s_)).astype(np.int64)})
    return Case(name, model, feeds, **(F16 if dtype == np.float16 else F32))


def every_two_case(name, dtype, shape_form, heads=3, d=16, batch=2, seqs=(5, 1), opset=17):
    """GPT-J's rotate_every_two: x[..., ::2], x[..., 1::2], stacked as (-x2, x1) and flattened back (a constant
    shape, or torch's flatten(-2): Concat(Shape(stacked)[:-2], [-1])); cos and sin given per step [B, 1, S, D]."""
    rng = np.random.default_rng(d + opset + len(name))
    inits = [c("zero", i64(0)), c("one", i64(1)), c("last", i64(-1)), c("two", i64(2)), c("minus_two", i64(-2)),
             c("big", i64(np.iinfo(np.int64).max))]
    nodes = [helper.make_node("Slice", ["x", "zero", "big", "last", "two"], ["x1"]),
             helper.make_node("Slice", ["x", "one", "big", "last", "two"], ["x2"]),
             helper.make_node("Neg", ["x2"], ["neg"]),
             helper.make_node("Unsqueeze", ["neg", "last"], ["neg_u"]),
             helper.make_node("Unsqueeze", ["x1", "last"], ["x1_u"]),
             helper.make_node("Concat", ["neg_u", "x1_u"], ["stacked"], axis=-1)]
    if shape_form == "const":
        inits.append(c("shape", i64(0, 0, 0, -1)))
    else:
        nodes += [helper.make_node("Shape", ["stacked"], ["st_shape"]),
                  helper.make_node("Slice", ["st_shape", "zero", "minus_two"], ["lead"]),
                  helper.make_node("Concat", ["lead", "last"], ["shape"], axis=0)]
    nodes += [helper.make_node("Reshape", ["stacked", "shape"], ["rot"]),
              helper.make_node("Mul", ["x", "cos"], ["xc"]),
              helper.make_node("Mul", ["rot", "sin"], ["rs"]),
              helper.make_node("Add", ["xc", "rs"], ["y"])]
    ins = [value_info("x", dtype, ["batch", heads, "seq", d]), value_info("cos", dtype, ["batch", 1, "seq", d]),
           value_info("sin", dtype, ["batch", 1, "seq", d])]
    model = ms_model(nodes, ins, [value_info("y", dtype, ["batch", heads, "seq", d])], inits, opset=opset)
    feeds = []
    for s_ in seqs:
        ang = rng.uniform(0, 6, (batch, 1, s_, d // 2))
        feeds.append({"x": rng.standard_normal((batch, heads, s_, d)).astype(dtype),
                      "cos": np.repeat(np.cos(ang), 2, axis=-1).astype(dtype),
                      "sin": np.repeat(np.sin(ang), 2, axis=-1).astype(dtype)})
    return Case(name, model, feeds, **(F16 if dtype == np.float16 else F32))


def cases():
    f32, f16 = np.float32, np.float16
    return [
        rms_case("rms_torchscript_f32", f32, 64, 17),
        rms_case("rms_torchscript_div_mul_f32_h33", f32, 33, 14, square="mul", inverse="div", weight_first=False),
        rms_case("rms_plain_f32_h24", f32, 24, 17, inverse="div", casts=False),
        rms_case("rms_dynamo_f32", f32, 48, 18, inverse="pow"),
        rms_case("rms_dynamo_recip_f32_h40", f32, 40, 18, square="mul"),
        rms_case("rms_torchscript_f16", f16, 64, 17),
        rms_case("rms_dynamo_f16_h40", f16, 40, 18, inverse="pow", weight_first=False),
        rotary_case("rotary_slice_f32", f32, "slice", 17),
        rotary_case("rotary_shape_slice_f32", f32, "shape", 14, heads=(4, 2), d=32),
        rotary_case("rotary_shape_slice_opset11_f32", f32, "shape", 11, d=8, batch=1, seqs=(7, 1)),
        rotary_case("rotary_split13_f32", f32, "split", 13, heads=(2, 2)),
        rotary_case("rotary_split18_f32", f32, "split", 18, d=64, seqs=(3, 1)),
        rotary_case("rotary_slice_f16", f16, "slice", 17, d=32),
        rotary_case("rotary_partial_f32", f32, "slice", 17, d=32, partial=8),
        rotary_case("rotary_partial_split_f16", f16, "split", 18, d=24, partial=16),
        rotary_case("rotary_old_table_f32", f32, "slice", 14),
        rotary_case("rotary_old_table_opset11_f32", f32, "shape", 11, d=8),
        runtime_rotary_case("rotary_runtime_f32", f32),
        runtime_rotary_case("rotary_runtime_f16", f16, d=32, batch=1, seqs=(4, 1)),
        every_two_case("rotary_every_two_f32", f32, "const"),
        every_two_case("rotary_every_two_flatten_f16", f16, "flatten", d=8),
    ]
