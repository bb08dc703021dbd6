"""Layer normalizations and GELUs against onnxruntime: the default-domain
SimplifiedLayerNormalization and LayerNormalization-1..16 rows, com.microsoft
SkipLayerNormalization, SkipSimplifiedLayerNormalization, Gelu, BiasGelu,
FastGelu and QuickGelu, across attributes, dtypes, odd row lengths, optional
inputs and outputs, and broadcast skip."""
import numpy as np
from onnx import helper

from oracle import Case, ms_model, value_info

F16_WHY = "float16 output: onnxruntime rounds its float result once as we do, but its float arithmetic (sequential float sums, MLAS erf/tanh) can land the rounding one float16 ulp (2^-10 relative) away"
F32 = dict(rtol=1e-4, atol=1e-6, why="both compute in float32 (we keep the moments in double): a few ulp apart")
F64 = dict(rtol=1e-6, atol=1e-9, why="double rows (the statistics are float): both compute in double")
GELU32 = dict(rtol=1e-4, atol=1e-6, why="MLAS's erf/tanh/logistic and ours are a few ulp apart; atol for the cancellation of 1 + erf (1 + tanh) at large negative inputs")


def node_case(name, op, feeds, outputs, attrs=None, domain="com.microsoft", opset=21, out_types=None, **tol):
    """One node over `feeds` (dict name -> array, '' for an absent input); outputs '' are not requested."""
    ins = list(feeds.keys())
    node = helper.make_node(op, [("" if k.startswith("_none") else k) for k in ins], outputs, domain=domain,
                            **(attrs or {}))
    real = {k: v for k, v in feeds.items() if not k.startswith("_none")}
    out_types = out_types or {}
    first = next(iter(real.values()))
    outs = [value_info(o, out_types.get(o, first.dtype), None) for o in outputs if o]
    model = ms_model([node], [value_info(k, v) for k, v in real.items()], outs, opset=opset)
    if not tol:
        tol = {np.dtype(np.float32): GELU32 if "Gelu" in op else F32,
               np.dtype(np.float64): F64}.get(first.dtype, dict(rtol=2e-3, atol=1e-3, why=F16_WHY))
    return Case(name, model, [real], **tol)


def cases():
    rng = np.random.default_rng(2025)
    out = []

    def r(*shape, dtype=np.float32, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(dtype)

    f32 = np.float32
    # ---- SimplifiedLayerNormalization (default domain, opset 1: any model opset) ----
    for name, shape, axis, sshape, dt in [
            ("sln_f32_h33", (2, 3, 33), -1, (33,), np.float32),
            ("sln_f32_h1", (4, 1), -1, (1,), np.float32),
            ("sln_f32_h257_2d", (5, 257), 1, (257,), np.float32),
            ("sln_f32_axis1_scale2d", (3, 7, 9), 1, (7, 9), np.float32),
            ("sln_f32_axis1_scale_bcast", (3, 7, 9), 1, (9,), np.float32),
            ("sln_f16_h65", (2, 5, 65), -1, (65,), np.float16),
            ("sln_f64_h17", (3, 17), -1, (17,), np.float64)]:
        x, g = r(*shape, dtype=dt, scale=2.0), r(*sshape, dtype=dt)
        out.append(node_case(name, "SimplifiedLayerNormalization", {"x": x, "scale": g}, ["y", "inv_std_var"],
                             dict(axis=axis, epsilon=1e-5), domain="", out_types={"inv_std_var": f32}))
    # X and scale of different types: Y takes the scale's.
    for name, xt, st in [("sln_x16_scale32", np.float16, np.float32), ("sln_x32_scale16", np.float32, np.float16)]:
        out.append(node_case(name, "SimplifiedLayerNormalization", {"x": r(3, 2, 24, dtype=xt, scale=2.0),
                                                                     "scale": r(24, dtype=st)},
                             ["y", "inv_std_var"], dict(epsilon=1e-5), domain="",
                             out_types={"y": st, "inv_std_var": f32},
                             **(F32 if st == np.float32 else dict(rtol=2e-3, atol=1e-3, why=F16_WHY))))
    out.append(node_case("sln_f32_y_only_eps1e-2", "SimplifiedLayerNormalization",
                         {"x": r(2, 2, 16, scale=0.05), "scale": r(16)}, ["y"], dict(epsilon=1e-2), domain="",
                         opset=14))
    # ---- LayerNormalization-1..16 (onnxruntime's contrib row in the default domain) ----
    for name, shape, axis, bias, dt in [("ln1_f32_bias_h33", (2, 3, 33), -1, True, np.float32),
                                        ("ln1_f32_nobias_h7", (4, 7), -1, False, np.float32),
                                        ("ln1_f32_axis1", (2, 3, 5), 1, True, np.float32),
                                        ("ln1_f16_h40", (3, 40), -1, True, np.float16)]:
        x = (r(*shape, dtype=np.float32, scale=3.0) + 1.5).astype(dt)
        feeds = {"x": x, "scale": r(*shape[axis:], dtype=dt)}
        if bias:
            feeds["bias"] = r(*shape[axis:], dtype=dt)
        out.append(node_case(name, "LayerNormalization", feeds, ["y", "mean", "inv_std_var"],
                             dict(axis=axis, epsilon=1e-5), domain="", opset=16,
                             out_types={"mean": f32, "inv_std_var": f32}))
    # ---- SkipLayerNormalization / SkipSimplifiedLayerNormalization ----
    stats = {"mean": f32, "inv_std_var": f32}
    for simplified in (False, True):
        op = "SkipSimplifiedLayerNormalization" if simplified else "SkipLayerNormalization"
        tag = "sskip" if simplified else "skip"
        for name, xs, ss, beta, bias, dt, outs in [
                ("f32_all_h33", (2, 3, 33), (2, 3, 33), True, True, np.float32, ["y", "mean", "inv_std_var", "sum"]),
                ("f32_nobias_h64", (2, 4, 64), (2, 4, 64), True, False, np.float32, ["y"]),
                ("f32_bare_h7", (3, 5, 7), (3, 5, 7), False, False, np.float32, ["y", "mean", "inv_std_var"]),
                ("f32_skip_sh_h67", (3, 5, 67), (5, 67), True, True, np.float32, ["y", "", "", "sum"]),
                ("f32_skip_1sh_h9", (2, 3, 9), (1, 3, 9), False, True, np.float32, ["y", "", "inv_std_var", "sum"]),
                ("f32_2d_h1", (6, 1), (6, 1), True, True, np.float32, ["y", "mean", "inv_std_var", "sum"]),
                ("f32_2d_h129", (3, 129), (3, 129), True, True, np.float32, ["y", "", "", "sum"]),
                ("f16_all_h40", (2, 3, 40), (2, 3, 40), True, True, np.float16, ["y", "mean", "inv_std_var", "sum"]),
                ("f16_skip_sh_h17", (2, 3, 17), (3, 17), False, True, np.float16, ["y", "", "", "sum"])]:
            feeds = {"input": r(*xs, dtype=dt, scale=1.5), "skip": r(*ss, dtype=dt), "gamma": r(xs[-1], dtype=dt)}
            if not simplified:
                feeds["beta" if beta else "_none_beta"] = r(xs[-1], dtype=dt)
            if bias:
                feeds["bias"] = r(xs[-1], dtype=dt)
            # onnx 1.12's helper drops trailing empty names poorly: trim them.
            while outs and outs[-1] == "":
                outs = outs[:-1]
            out.append(node_case("%s_%s" % (tag, name), op, feeds, outs, dict(epsilon=1e-6 if bias else 1e-5),
                                 out_types=stats))
    # ---- the GELUs ----
    wide = lambda *s, dt=np.float32: np.concatenate([r(int(np.prod(s)) - 6, scale=3.0),
                                                     np.array([-9.0, -5.5, 0.0, 1e-3, 5.5, 9.0])]).reshape(s).astype(dt)
    for dt, sfx in ((np.float32, "f32"), (np.float16, "f16")):
        out.append(node_case("gelu_%s" % sfx, "Gelu", {"x": wide(3, 5, 37, dt=dt)}, ["y"]))
        out.append(node_case("bias_gelu_%s" % sfx, "BiasGelu", {"x": wide(2, 4, 33, dt=dt), "bias": r(33, dtype=dt)},
                             ["y"]))
        out.append(node_case("fast_gelu_%s" % sfx, "FastGelu", {"x": wide(3, 7, 19, dt=dt)}, ["y"]))
        out.append(node_case("fast_gelu_bias_%s" % sfx, "FastGelu",
                             {"x": wide(2, 3, 65, dt=dt), "bias": r(65, dtype=dt)}, ["y"]))
        out.append(node_case("quick_gelu_%s" % sfx, "QuickGelu", {"x": wide(4, 129, dt=dt)}, ["y"]))
    out.append(node_case("quick_gelu_alpha1_f32", "QuickGelu", {"x": wide(5, 31)}, ["y"], dict(alpha=1.0)))
    out.append(node_case("quick_gelu_alpha_neg_f32", "QuickGelu", {"x": wide(2, 600)}, ["y"], dict(alpha=-0.75)))
    out.append(node_case("gelu_1d_f32", "Gelu", {"x": wide(1029)}, ["y"]))
    return out
