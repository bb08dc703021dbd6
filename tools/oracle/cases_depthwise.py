"""Depthwise convolutions (group == channels), the shapes of silero VAD v4 and
the mobile conv nets, against onnxruntime: 1-D and 2-D, strides, dilations,
no bias, batches > 1, odd channel counts (258, 13, 33), each layout pair our
loop takes (kernels/conv/depthwise.h: NCHW in and out, NCHW in and channels
last out when a conv reads Y, channels last in and out between convs,
channels last in and NCHW out at a chain's end), post-ops (Relu, LeakyRelu,
a residual Add), and X of unknown rank as silero's exporter leaves it
(If(Identity | Identity) with no shape: Conv gives Y W's rank). float32 only:
onnxruntime's CPU Conv takes no float16 or double."""
import numpy as np
from onnx import TensorProto, helper

from oracle import Case, add_conv, default_model as model, value_info

F32 = dict(rtol=1e-4, atol=1e-5,
           why="both convolve in float32 (our loop and MLAS sum the taps in different orders, with and without FMA)")


def cases():
    rng = np.random.default_rng(2729)
    out = []

    def r(*shape, lo=-1.0, hi=1.0):
        return rng.uniform(lo, hi, size=shape).astype(np.float32)

    def conv(*args, **attrs):
        add_conv(r, *args, **attrs)

    def add(name, nodes, inits, x, extra_inputs=()):
        out.append(Case(name, model(nodes, [value_info("x", x)] + [value_info(n, v) for n, v in extra_inputs],
                                    [value_info("y", np.float32, None)], inits),
                        [dict([("x", x)] + list(extra_inputs))], **F32))

    # silero v4's first layer: dw 258 x k5 + Relu, read by a 1x1 conv (NCW in, channels last out).
    nodes, inits = [], {}
    conv(nodes, inits, "x", "d", 258, 258, (5,), group=258)
    nodes.append(helper.make_node("Relu", ["d"], ["dr"]))
    conv(nodes, inits, "dr", "y", 258, 16, (1,))
    add("silero_first_layer", nodes, inits, r(1, 258, 24))

    # A 1-D chain, batch 2: 1x1 -> dw (channels last both sides) -> dw as the output (channels last in, NCW out).
    nodes, inits = [], {}
    conv(nodes, inits, "x", "p", 16, 32, (1,))
    conv(nodes, inits, "p", "d", 32, 32, (5,), group=32)
    nodes.append(helper.make_node("Relu", ["d"], ["dr"]))
    conv(nodes, inits, "dr", "y", 32, 32, (3,), group=32, bias=False, strides=[2])
    add("chain_1d_batch2", nodes, inits, r(2, 16, 13))

    # 1-D, dilation 2, stride 2, 33 channels, a residual Add of another conv's output.
    nodes, inits = [], {}
    conv(nodes, inits, "x", "d", 33, 33, (3,), group=33, dilations=[2], pads=[2, 2])
    conv(nodes, inits, "x", "q", 33, 33, (1,))
    nodes.append(helper.make_node("Add", ["d", "q"], ["y"]))
    add("dilated_residual_1d", nodes, inits, r(3, 33, 19))

    # 2-D 3x3 stride 2, 13 channels, no bias, LeakyRelu, odd sizes, batch 2.
    nodes, inits = [], {}
    conv(nodes, inits, "x", "d", 13, 13, (3, 3), group=13, bias=False, strides=[2, 2])
    nodes.append(helper.make_node("LeakyRelu", ["d"], ["y"], alpha=0.1))
    add("dw2d_stride2_leakyrelu", nodes, inits, r(2, 13, 11, 9))

    # 2-D 5x5 uneven pads, between two 1x1 convs (channels last on both sides).
    nodes, inits = [], {}
    conv(nodes, inits, "x", "p", 8, 24, (1, 1))
    conv(nodes, inits, "p", "d", 24, 24, (5, 5), group=24, pads=[1, 2, 3, 2])
    conv(nodes, inits, "d", "y", 24, 8, (1, 1))
    add("dw2d_5x5_between_1x1", nodes, inits, r(1, 8, 10, 7))

    # X of unknown rank: If(c, Identity, Identity) with no declared shape, then dw + Relu + 1x1.
    nodes, inits = [], {}
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    nodes.append(helper.make_node("If", ["c"], ["xi"], then_branch=then_g, else_branch=else_g))
    conv(nodes, inits, "xi", "d", 40, 40, (5,), group=40)
    nodes.append(helper.make_node("Relu", ["d"], ["dr"]))
    conv(nodes, inits, "dr", "y", 40, 16, (1,))
    add("unknown_rank_if", nodes, inits, r(1, 40, 12), [("c", np.array(True))])
    return out
