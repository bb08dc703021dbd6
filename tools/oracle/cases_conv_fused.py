"""Convolutions as the rewrites fuse them (runtime/rewrite/conv.cc), against
onnxruntime: Conv followed by BatchNormalization (with and without the conv's
bias), a per-channel Mul/Add, each activation FusedConv takes (Relu,
LeakyRelu, Clip/Relu6, HardSigmoid, HardSwish and its spelled-out form,
Sigmoid, x*sigmoid(x), Tanh, Max/Min with a constant) and a residual Add on either side; grouped,
depthwise, strided, dilated and 1-D convs, batches > 1, odd sizes; and the
near misses the rewrites leave as written (an intermediate read twice or a
graph output, a broadcast residual). float32 only: onnxruntime's CPU Conv
takes no float16 or double."""
import numpy as np
from onnx import helper

from oracle import Case, add_conv, default_model as model, value_info

F32 = dict(rtol=1e-4, atol=1e-5,
           why="both convolve in float32 (oneDNN and MLAS sum in different orders; BN folded into the weights in double here, in float there)")


def cases():
    rng = np.random.default_rng(27)
    out = []

    def r(*shape, lo=-1.0, hi=1.0):
        return rng.uniform(lo, hi, size=shape).astype(np.float32)

    def conv(*args, **attrs):
        add_conv(r, *args, **attrs)

    def bn(nodes, inits, x, y, m):
        for s, lo, hi in (("s", 0.5, 2), ("b", -1, 1), ("m", -1, 1), ("v", 0.1, 3)):
            inits[y + "_" + s] = r(m, lo=lo, hi=hi)
        nodes.append(helper.make_node("BatchNormalization", [x] + [y + "_" + s for s in "sbmv"], [y],
                                      epsilon=1e-3))

    def act(nodes, inits, kind, x, y):
        if kind == "Relu6":
            inits[y + "_lo"] = np.array(0, np.float32)
            inits[y + "_hi"] = np.array(6, np.float32)
            nodes.append(helper.make_node("Clip", [x, y + "_lo", y + "_hi"], [y]))
        elif kind == "Clip":
            inits[y + "_lo"] = np.array(-0.5, np.float32)
            inits[y + "_hi"] = np.array(0.75, np.float32)
            nodes.append(helper.make_node("Clip", [x, y + "_lo", y + "_hi"], [y]))
        elif kind == "SiLU":
            nodes.append(helper.make_node("Sigmoid", [x], [y + "_sig"]))
            nodes.append(helper.make_node("Mul", [x, y + "_sig"], [y]))
        elif kind == "HardSwishSpelled":  # PaddleOCR's export: x * Clip(x + 3, 0, 6) / 6
            for n, v in (("3", 3), ("0", 0), ("6", 6)):
                inits[y + "_c" + n] = np.array(v, np.float32)
            nodes.append(helper.make_node("Add", [x, y + "_c3"], [y + "_a"]))
            nodes.append(helper.make_node("Clip", [y + "_a", y + "_c0", y + "_c6"], [y + "_cl"]))
            nodes.append(helper.make_node("Mul", [x, y + "_cl"], [y + "_m"]))
            nodes.append(helper.make_node("Div", [y + "_m", y + "_c6"], [y]))
        elif kind in ("Max", "Min"):  # openWakeWord's Max(LeakyRelu(conv), -0.4)
            inits[y + "_c"] = np.array([[[[-0.4 if kind == "Max" else 0.3]]]], np.float32)
            nodes.append(helper.make_node(kind, [x, y + "_c"] if kind == "Max" else [y + "_c", x], [y]))
        elif kind == "LeakyRelu":
            nodes.append(helper.make_node("LeakyRelu", [x], [y], alpha=0.1))
        elif kind == "HardSigmoid":
            nodes.append(helper.make_node("HardSigmoid", [x], [y], alpha=0.25, beta=0.4))
        else:
            nodes.append(helper.make_node(kind, [x], [y]))

    # Conv + BN + each activation, 2-D, batch 2, odd sizes.
    for kind in ("Relu", "LeakyRelu", "Relu6", "Clip", "HardSigmoid", "HardSwish", "HardSwishSpelled",
                 "Sigmoid", "SiLU", "Tanh", "Max", "Min"):
        nodes, inits = [], {}
        conv(nodes, inits, "x", "c", 5, 7, (3, 3))
        bn(nodes, inits, "c", "n", 7)
        act(nodes, inits, kind, "n", "y")
        x = r(2, 5, 6, 7, lo=-3, hi=3)
        out.append(Case("bn_" + kind.lower(), model(nodes, [value_info("x", x)], [value_info("y", np.float32, None)],
                                                    inits), [{"x": x}], **F32))

    # BN over a conv without bias, grouped and depthwise, strided and dilated.
    for name, c, m, k, group, bias, attrs in [
            ("grouped_nobias", 6, 9, (3, 3), 3, False, dict(strides=[2, 1])),
            ("depthwise", 8, 8, (5, 5), 8, True, dict(strides=[2, 2])),
            ("depthwise_dilated", 8, 8, (3, 3), 8, False, dict(dilations=[2, 2], pads=[2, 2, 2, 2])),
            ("pointwise", 16, 24, (1, 1), 1, True, {})]:
        nodes, inits = [], {}
        conv(nodes, inits, "x", "c", c, m, k, group=group, bias=bias, **attrs)
        bn(nodes, inits, "c", "n", m)
        act(nodes, inits, "HardSwish", "n", "y")
        x = r(2, c, 7, 6, lo=-3, hi=3)
        out.append(Case(name, model(nodes, [value_info("x", x)], [value_info("y", np.float32, None)], inits),
                        [{"x": x}], **F32))

    # openWakeWord's block: Conv (pads on one axis) + LeakyRelu + Max with a constant, batch of 3.
    nodes, inits = [], {}
    conv(nodes, inits, "x", "c", 3, 5, (1, 3), pads=[0, 1, 0, 1])
    act(nodes, inits, "LeakyRelu", "c", "l")
    act(nodes, inits, "Max", "l", "y")
    x = r(3, 3, 11, 8, lo=-3, hi=3)
    out.append(Case("leakyrelu_max", model(nodes, [value_info("x", x)], [value_info("y", np.float32, None)], inits),
                    [{"x": x}], **F32))

    # 1-D: Conv + Relu (the audio nets' form), batch 3.
    nodes, inits = [], {}
    conv(nodes, inits, "x", "c", 4, 6, (5,), strides=[2])
    act(nodes, inits, "Relu", "c", "y")
    x = r(3, 4, 37)
    out.append(Case("conv1d_relu", model(nodes, [value_info("x", x)], [value_info("y", np.float32, None)], inits),
                    [{"x": x}], **F32))

    # Residual blocks: Relu(BN(Conv(x)) + x) with the Add either way round, and a
    # second conv's HardSwish output added to the first block's.
    for conv_first in (True, False):
        nodes, inits = [], {}
        conv(nodes, inits, "x", "c", 8, 8, (3, 3), group=2)
        bn(nodes, inits, "c", "n", 8)
        nodes.append(helper.make_node("Add", ["n", "x"] if conv_first else ["x", "n"], ["a"]))
        act(nodes, inits, "Relu", "a", "r")
        conv(nodes, inits, "r", "d", 8, 8, (1, 1))
        act(nodes, inits, "HardSwish", "d", "h")
        nodes.append(helper.make_node("Add", ["h", "r"] if conv_first else ["r", "h"], ["y"]))
        x = r(2, 8, 7, 9, lo=-2, hi=2)
        out.append(Case("residual_" + ("conv_first" if conv_first else "conv_second"),
                        model(nodes, [value_info("x", x)], [value_info("y", np.float32, None)], inits),
                        [{"x": x}], **F32))

    # PaddleOCR's per-channel scale and shift after a conv, then the spelled-out HardSwish.
    nodes, inits = [], {}
    conv(nodes, inits, "x", "c", 6, 6, (3, 3), group=6, bias=False)
    inits["s"] = r(1, 6, 1, 1, lo=0.5, hi=2)
    inits["k"] = r(1, 6, 1, 1)
    nodes.append(helper.make_node("Mul", ["s", "c"], ["p"]))
    nodes.append(helper.make_node("Add", ["p", "k"], ["a"]))
    act(nodes, inits, "HardSwishSpelled", "a", "y")
    x = r(1, 6, 9, 8, lo=-3, hi=3)
    out.append(Case("scale_shift_hardswish", model(nodes, [value_info("x", x)], [value_info("y", np.float32, None)],
                                                   inits), [{"x": x}], **F32))

    # PP-LCNetV3's learnable affine blocks: Conv -> * s + k -> HardSwish (spelled out) -> * a + b -> Conv.
    nodes, inits = [], {}
    conv(nodes, inits, "x", "c", 4, 8, (3, 3), group=4)
    inits["sc"] = np.array([0.8], np.float32)
    inits["kc"] = np.array([0.3], np.float32)
    nodes.append(helper.make_node("Mul", ["sc", "c"], ["cs"]))
    nodes.append(helper.make_node("Add", ["cs", "kc"], ["ck"]))
    act(nodes, inits, "HardSwishSpelled", "ck", "h")
    inits["a"] = np.array([1.3], np.float32)
    inits["b"] = np.array([-0.2], np.float32)
    nodes.append(helper.make_node("Mul", ["a", "h"], ["s"]))
    nodes.append(helper.make_node("Add", ["s", "b"], ["t"]))
    conv(nodes, inits, "t", "y", 8, 6, (1, 1))
    x = r(2, 4, 7, 6, lo=-3, hi=3)
    out.append(Case("affine_block", model(nodes, [value_info("x", x)], [value_info("y", np.float32, None)], inits),
                    [{"x": x}], **F32))

    # ConvTranspose whose windows do not overlap (stride = kernel: PaddleOCR's
    # detector upsamples so), 2-D with and without bias, 1-D, batch 2.
    for name, c, m, k, shape, bias in [("deconv_k2_24to1", 24, 1, (2, 2), (1, 24, 6, 8), True),
                                        ("deconv_k2x3_nobias", 5, 7, (2, 3), (2, 5, 4, 3), False),
                                        ("deconv1d_k4", 3, 4, (4,), (2, 3, 9), True)]:
        inits = {"w": r(c, m, *k, lo=-0.5, hi=0.5)}
        ins = ["x", "w"]
        if bias:
            inits["b"] = r(m)
            ins.append("b")
        nodes = [helper.make_node("ConvTranspose", ins, ["y"], strides=list(k), kernel_shape=list(k))]
        x = r(*shape)
        out.append(Case(name, model(nodes, [value_info("x", x)], [value_info("y", np.float32, None)], inits),
                        [{"x": x}], **F32))

    # Near misses: the conv's output also a graph output; read twice; a broadcast residual.
    nodes, inits = [], {}
    conv(nodes, inits, "x", "c", 4, 6, (3, 3))
    bn(nodes, inits, "c", "n", 6)
    act(nodes, inits, "Relu", "n", "y")
    nodes.append(helper.make_node("Tanh", ["n"], ["t"]))
    conv(nodes, inits, "x", "d", 4, 6, (3, 3))
    nodes.append(helper.make_node("Add", ["d", "z"], ["u"]))
    x, z = r(2, 4, 6, 5), r(1, 6, 1, 1)
    out.append(Case("near_misses", model(nodes, [value_info("x", x), value_info("z", z)],
                                         [value_info(o, np.float32, None) for o in ("c", "y", "t", "u")], inits),
                    [{"x": x, "z": z}], **F32))
    # MobileNetV3 blocks as PaddleOCR's exports write them, batch 2: a stem, then two
    # residual blocks (1x1 expand + HardSwish, depthwise + HardSwish, squeeze-excite:
    # GlobalAveragePool -> Conv -> Relu -> Conv -> HardSigmoid -> Mul, 1x1 project + BN,
    # the block's input added). The block inputs stay channels last as a conv's X and
    # the adder's Z; the 3x3 and 1x1 convs are large enough to run split in parts at 2
    # threads (the _2threads ctest runs this family so).
    nodes, inits = [], {}
    conv(nodes, inits, "x", "c0", 3, 16, (3, 3))
    bn(nodes, inits, "c0", "n0", 16)
    act(nodes, inits, "HardSwish", "n0", "s0")
    conv(nodes, inits, "s0", "c1", 16, 16, (3, 3), bias=False)
    bn(nodes, inits, "c1", "n1", 16)
    act(nodes, inits, "Relu", "n1", "s1")
    prev = "s1"
    for blk in ("a", "b"):
        conv(nodes, inits, prev, blk + "e", 16, 48, (1, 1), bias=False)
        bn(nodes, inits, blk + "e", blk + "en", 48)
        act(nodes, inits, "HardSwish", blk + "en", blk + "eh")
        conv(nodes, inits, blk + "eh", blk + "d", 48, 48, (3, 3), group=48, bias=False)
        bn(nodes, inits, blk + "d", blk + "dn", 48)
        act(nodes, inits, "HardSwish", blk + "dn", blk + "dh")
        nodes.append(helper.make_node("GlobalAveragePool", [blk + "dh"], [blk + "g"]))
        conv(nodes, inits, blk + "g", blk + "q", 48, 12, (1, 1))
        act(nodes, inits, "Relu", blk + "q", blk + "qr")
        conv(nodes, inits, blk + "qr", blk + "u", 12, 48, (1, 1))
        nodes.append(helper.make_node("HardSigmoid", [blk + "u"], [blk + "us"], alpha=0.2, beta=0.5))
        nodes.append(helper.make_node("Mul", [blk + "dh", blk + "us"], [blk + "m"]))
        conv(nodes, inits, blk + "m", blk + "p", 48, 16, (1, 1), bias=False)
        bn(nodes, inits, blk + "p", blk + "pn", 16)
        nodes.append(helper.make_node("Add", [blk + "pn", prev], [blk + "o"]))
        prev = blk + "o"
    conv(nodes, inits, prev, "y", 16, 8, (1, 1))
    x = r(2, 3, 24, 30, lo=-2, hi=2)
    out.append(Case("mbv3_blocks", model(nodes, [value_info("x", x)], [value_info("y", np.float32, None)], inits),
                    [{"x": x}], rtol=1e-4, atol=1e-4,
                    why="thirteen convs deep, outputs up to ~65: float32 sums in other orders (oneDNN, MLAS) differ by "
                        "~5e-5 absolute, which values near 0 show as relative"))
    return out
