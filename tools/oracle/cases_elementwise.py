"""Elementwise activations and broadcast arithmetic against onnxruntime: Relu,
LeakyRelu, HardSigmoid, HardSwish, Clip (float32 and float16 where
onnxruntime's CPU kernel takes them), Add/Sub/Mul/Div with the broadcast
shapes models use (same shape, scalar either side, per-channel [C,1,1], a row,
both sides broadcast), and the variadic Sum/Mean/Max/Min over 1-3 inputs,
Max/Min with NaN; odd sizes so the vector loops' tails run."""
import numpy as np
from onnx import helper

from oracle import Case, ms_model, value_info

EXACT = dict(rtol=1e-6, atol=0.0, why="one float32 operation (or a compare) per element in both: equal results")
F32 = dict(rtol=1e-5, atol=1e-7, why="a few float32 operations per element in both (the multiply-add may be fused in one)")
F16 = dict(rtol=1e-3, atol=1e-3, why="float16: both compute in float and round once to float16")


def node_case(name, op, feeds, attrs=None, opset=17, initializers=(), **tol):
    ins = list(feeds.keys()) + [t.name for t in initializers]
    node = helper.make_node(op, ins, ["y"], **(attrs or {}))
    first = next(iter(feeds.values()))
    model = ms_model([node], [value_info(k, v) for k, v in feeds.items()], [value_info("y", first.dtype, None)],
                     initializers=initializers, opset=opset)
    if not tol:
        tol = F16 if first.dtype == np.float16 else EXACT
    return Case(name, model, [feeds], **tol)


def cases():
    rng = np.random.default_rng(27)
    out = []

    def r(*shape, dtype=np.float32, scale=3.0):
        x = (rng.standard_normal(shape) * scale).astype(np.float32)
        flat = x.reshape(-1)
        flat[::11] = 0.0  # exact zeros and the clamps' edges
        flat[5::13] = 3.0
        flat[7::17] = -3.0
        return x.astype(dtype)

    # ---- unary activations ----
    for dt, tag in [(np.float32, "f32"), (np.float16, "f16")]:
        for shape in [(2, 3, 37), (1, 515)]:
            s = "x".join(map(str, shape))
            out.append(node_case(f"relu_{tag}_{s}", "Relu", {"x": r(*shape, dtype=dt)}))
            out.append(node_case(f"leaky_relu_{tag}_{s}", "LeakyRelu", {"x": r(*shape, dtype=dt)},
                                 dict(alpha=0.2)))
    out.append(node_case("leaky_relu_f32_default_alpha", "LeakyRelu", {"x": r(3, 65)}))
    for shape in [(2, 3, 37), (1, 515)]:
        s = "x".join(map(str, shape))
        out.append(node_case(f"hard_sigmoid_f32_{s}", "HardSigmoid", {"x": r(*shape)}, dict(alpha=0.25, beta=0.4),
                             **F32))
        out.append(node_case(f"hard_sigmoid_f32_default_{s}", "HardSigmoid", {"x": r(*shape)}, **F32))
        out.append(node_case(f"hard_swish_f32_{s}", "HardSwish", {"x": r(*shape)}, **F32))
    for dt, tag in [(np.float32, "f32"), (np.float16, "f16")]:
        lo = helper.make_tensor("lo", 10 if dt == np.float16 else 1, [], [-1.5])
        hi = helper.make_tensor("hi", 10 if dt == np.float16 else 1, [], [6.0])
        out.append(node_case(f"clip_{tag}_min_max_515", "Clip", {"x": r(1, 515, dtype=dt)}, initializers=[lo, hi]))
        node = helper.make_node("Clip", ["x", "", "hi"], ["y"])
        x = r(2, 3, 37, dtype=dt)
        model = ms_model([node], [value_info("x", x)], [value_info("y", dt, None)], initializers=[hi], opset=17)
        out.append(Case(f"clip_{tag}_max_only", model, [{"x": x}], **(F16 if dt == np.float16 else EXACT)))
    out.append(node_case("clip_f32_opset6_attrs", "Clip", {"x": r(4, 33)}, dict(min=-0.5, max=0.5), opset=6))

    # ---- binary arithmetic with the common broadcasts ----
    shapes = [("same", (2, 3, 37), (2, 3, 37)),
              ("scalar_b", (2, 3, 37), ()),
              ("scalar_a", (1,), (3, 41)),
              ("channel", (2, 5, 4, 7), (5, 1, 1)),
              ("row", (3, 33), (33,)),
              ("both", (4, 1, 9), (1, 6, 1)),
              ("middle", (2, 3, 5, 7), (1, 3, 1, 7))]
    for op in ["Add", "Sub", "Mul", "Div"]:
        for tag, sa, sb in shapes:
            a, b = r(*sa), r(*sb)
            if op == "Div":
                b = np.where(np.abs(b) < 0.1, 0.5, b).astype(np.float32)
            out.append(node_case(f"{op.lower()}_f32_{tag}", op, {"a": a, "b": b}))

    # ---- variadic ----
    nan = np.float32(np.nan)
    for op in ["Sum", "Mean", "Max", "Min"]:
        out.append(node_case(f"{op.lower()}_f32_one_input", op, {"a": r(3, 17)}, opset=13))
        out.append(node_case(f"{op.lower()}_f32_two_same", op, {"a": r(2, 3, 37), "b": r(2, 3, 37)}, opset=13,
                             **F32))
        out.append(node_case(f"{op.lower()}_f32_scalar", op, {"a": r(1, 4, 9, 11), "b": r(1, 1, 1, 1)}, opset=13,
                             **F32))
        out.append(node_case(f"{op.lower()}_f32_three_broadcast", op,
                             {"a": r(2, 1, 7), "b": r(1, 5, 1), "c": r(7)}, opset=13, **F32))
    for op in ["Max", "Min"]:
        a, b = r(5, 19), r(5, 19)
        a[0, ::3] = nan
        b[1, ::4] = nan
        b[2, :] = a[2, :]
        out.append(node_case(f"{op.lower()}_f32_nan", op, {"a": a, "b": b}, opset=13))
        out.append(node_case(f"{op.lower()}_f16_channel", op, {"a": r(2, 5, 9, dtype=np.float16),
                                                               "b": r(5, 1, dtype=np.float16)}, opset=13))
    return out
