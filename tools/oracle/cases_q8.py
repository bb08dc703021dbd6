"""GatherBlockQuantized, MatMulIntegerToFloat, DynamicQuantizeMatMul, FusedMatMul
(com.microsoft) and the q8 spelling (DynamicQuantizeLinear + MatMulInteger + Cast + Mul)."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from oracle import Case, ms_model, value_info


def packed4(codes):
    """Two 4-bit codes a byte (ONNX's order: element 2i low nibble) of a flat int array."""
    c = (np.asarray(codes).reshape(-1) & 0xF).astype(np.uint8)
    if c.size % 2:
        c = np.concatenate([c, np.zeros(1, np.uint8)])
    return (c[0::2] | (c[1::2] << 4)).astype(np.uint8)


def packed2(codes):
    c = (np.asarray(codes).reshape(-1) & 0x3).astype(np.uint8)
    pad = (-c.size) % 4
    c = np.concatenate([c, np.zeros(pad, np.uint8)])
    return (c[0::4] | (c[1::4] << 2) | (c[2::4] << 4) | (c[3::4] << 6)).astype(np.uint8)


def int4_tensor(name, codes, shape, signed):
    """An int4/uint4 initializer (onnx 1.12's helper has no such type: the proto by hand)."""
    t = TensorProto()
    t.name = name
    t.data_type = 22 if signed else 21
    t.dims.extend(shape)
    t.raw_data = packed4(codes).tobytes()
    return t


def gbq_uint8(rng, name, vocab, k, bits, block, scale_dtype, zp, idx, idx_dtype=np.int64):
    per = 8 // bits
    codes = rng.integers(0, 1 << bits, size=(vocab, k))
    if bits == 8:
        data = codes.astype(np.uint8)
    elif bits == 4:
        data = np.stack([packed4(r) for r in codes])
    else:
        data = np.stack([packed2(r) for r in codes])
    blocks = -(-k // block)
    scales = (rng.random((vocab, blocks)) * 0.1 + 0.01).astype(scale_dtype)
    inits = [numpy_helper.from_array(data, "data"), numpy_helper.from_array(scales, "scales")]
    ins = ["data", "indices", "scales"]
    if zp:
        z = rng.integers(0, 1 << bits, size=(vocab, blocks))
        zd = z.astype(np.uint8) if bits == 8 else np.stack([packed4(r) if bits == 4 else packed2(r) for r in z])
        inits.append(numpy_helper.from_array(zd, "zp"))
        ins.append("zp")
    idx = np.asarray(idx, idx_dtype)
    node = helper.make_node("GatherBlockQuantized", ins, ["y"], domain="com.microsoft", gather_axis=0,
                            quantize_axis=1, block_size=block, bits=bits)
    model = ms_model([node], [value_info("indices", idx)], [value_info("y", scale_dtype, None)], inits)
    return Case(name, model, [{"indices": idx}], 1e-3 if scale_dtype == np.float16 else 1e-6, 1e-6,
                "float16 output: one rounding" if scale_dtype == np.float16 else "exact: (q - z) * scale in float")


def gbq_int4(rng, name, shape, gather_axis, quantize_axis, block, signed, zp, idx, scale_dtype=np.float32):
    lo, hi = (-8, 8) if signed else (0, 16)
    codes = rng.integers(lo, hi, size=shape)
    sshape = list(shape)
    sshape[quantize_axis] = -(-shape[quantize_axis] // block)
    scales = (rng.random(sshape) * 0.1 + 0.01).astype(scale_dtype)
    inits = [int4_tensor("data", codes, shape, signed), numpy_helper.from_array(scales, "scales")]
    ins = ["data", "indices", "scales"]
    if zp:
        inits.append(int4_tensor("zp", rng.integers(lo, hi, size=sshape), sshape, signed))
        ins.append("zp")
    idx = np.asarray(idx, np.int64)
    node = helper.make_node("GatherBlockQuantized", ins, ["y"], domain="com.microsoft", gather_axis=gather_axis,
                            quantize_axis=quantize_axis, block_size=block)
    model = ms_model([node], [value_info("indices", idx)], [value_info("y", scale_dtype, None)], inits)
    return Case(name, model, [{"indices": idx}], 1e-6, 1e-6, "exact: (q - z) * scale in float")


def rand_ints(rng, dt, shape):
    """Random uint8 or int8 values over the type's whole range."""
    return rng.integers(0, 256, size=shape).astype(np.uint8) if dt == np.uint8 else \
        rng.integers(-128, 128, size=shape).astype(np.int8)


def b_input(b, b_const, feeds, inputs, inits):
    """B as an initializer (packed at session creation) or fed at run time."""
    if b_const:
        inits.append(numpy_helper.from_array(b, "b"))
    else:
        feeds["b"] = b
        inputs.append(value_info("b", b))


def mmitf(rng, name, a_shape, k, n, a_dtype, b_dtype, b_const, per_column, zps, bias):
    a = rand_ints(rng, a_dtype, a_shape)
    b = rand_ints(rng, b_dtype, (k, n))
    a_scale = np.array(0.02, np.float32)
    b_scale = (rng.random(n if per_column else ()) * 0.05 + 0.01).astype(np.float32)
    feeds = {"a": a}
    inits = [numpy_helper.from_array(a_scale, "a_scale"), numpy_helper.from_array(b_scale, "b_scale")]
    ins = ["a", "b", "a_scale", "b_scale"]
    inputs = [value_info("a", a)]
    b_input(b, b_const, feeds, inputs, inits)
    if zps:
        inits.append(numpy_helper.from_array(rand_ints(rng, a_dtype, ()), "a_zp"))
        inits.append(numpy_helper.from_array(rand_ints(rng, b_dtype, n if per_column else ()), "b_zp"))
        ins += ["a_zp", "b_zp"]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "bias"))
        ins += ([] if zps else ["", ""]) + ["bias"]
    node = helper.make_node("MatMulIntegerToFloat", ins, ["y"], domain="com.microsoft")
    model = ms_model([node], inputs, [value_info("y", np.float32, None)], inits)
    return Case(name, model, [feeds], 1e-5, 1e-5, "exact integer sums, one float product and add")


def dqmm(rng, name, a_shape, b_shape, b_dtype, b_const, per_column, zp, bias):
    n = b_shape[-1]
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rand_ints(rng, b_dtype, b_shape)
    b_scale = (rng.random(n if per_column else ()) * 0.05 + 0.01).astype(np.float32)
    inits = [numpy_helper.from_array(b_scale, "b_scale")]
    feeds = {"a": a}
    inputs = [value_info("a", a)]
    b_input(b, b_const, feeds, inputs, inits)
    ins = ["a", "b", "b_scale"]
    if zp:
        inits.append(numpy_helper.from_array(rand_ints(rng, b_dtype, n if per_column else ()), "b_zp"))
        ins.append("b_zp")
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "bias"))
        ins += ([] if zp else [""]) + ["bias"]
    node = helper.make_node("DynamicQuantizeMatMul", ins, ["y"], domain="com.microsoft")
    model = ms_model([node], inputs, [value_info("y", np.float32, None)], inits)
    return Case(name, model, [feeds], 1e-4, 1e-4, "A quantized to uint8 by both: a code may differ by one "
                "where x / scale falls on a rounding boundary")


def fused(rng, name, a_shape, b_shape, b_const=False, dtype=np.float32, **attrs):
    a = rng.standard_normal(a_shape).astype(dtype)
    b = rng.standard_normal(b_shape).astype(dtype)
    feeds = {"a": a}
    inputs = [value_info("a", a)]
    inits = []
    if b_const:
        inits.append(numpy_helper.from_array(b, "b"))
    else:
        feeds["b"] = b
        inputs.append(value_info("b", b))
    node = helper.make_node("FusedMatMul", ["a", "b"], ["y"], domain="com.microsoft", **attrs)
    model = ms_model([node], inputs, [value_info("y", dtype, None)], inits)
    if dtype == np.float16:
        return Case(name, model, [feeds], 2e-3, 2e-3, "float16 output: sums in float, one rounding each")
    return Case(name, model, [feeds], 1e-4, 1e-5, "float32 sums in another order")


def q8_spelling(rng, name, a_shape, k, outs, w_dtype, per_column, bias):
    """transformers.js q8: one DynamicQuantizeLinear shared by several products."""
    a = rng.standard_normal(a_shape + [k]).astype(np.float32)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["a"], ["aq", "a_scale", "a_zp"])]
    inits, outputs = [], []
    for j, n in enumerate(outs):
        w = (rng.integers(-127, 128, size=(k, n)).astype(np.int8) if w_dtype == np.int8 else
             rng.integers(0, 256, size=(k, n)).astype(np.uint8))
        ws = (rng.random(n if per_column else ()) * 0.02 + 0.005).astype(np.float32)
        wz = (np.zeros(n if per_column else (), np.int8) if w_dtype == np.int8 else
              rng.integers(100, 156, size=n if per_column else ()).astype(np.uint8))
        inits += [numpy_helper.from_array(w, "w%d" % j), numpy_helper.from_array(ws, "ws%d" % j),
                  numpy_helper.from_array(wz, "wz%d" % j)]
        nodes += [helper.make_node("MatMulInteger", ["aq", "w%d" % j, "a_zp", "wz%d" % j], ["mm%d" % j]),
                  helper.make_node("Cast", ["mm%d" % j], ["mf%d" % j], to=TensorProto.FLOAT),
                  helper.make_node("Mul", ["a_scale", "ws%d" % j], ["s%d" % j]),
                  helper.make_node("Mul", ["mf%d" % j, "s%d" % j], ["p%d" % j if bias else "y%d" % j])]
        if bias:
            inits.append(numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "b%d" % j))
            nodes.append(helper.make_node("Add", ["p%d" % j, "b%d" % j], ["y%d" % j]))
        outputs.append(value_info("y%d" % j, np.float32, None))
    model = ms_model(nodes, [value_info("a", a)], outputs, inits)
    return Case(name, model, [{"a": a}], 1e-5, 1e-5, "the same quantization and integer sums")


def cases():
    rng = np.random.default_rng(2508)
    out = []
    # GatherBlockQuantized, uint8 data: 4 bits (packed), 8 and 2 bits; zero points packed per row.
    out.append(gbq_uint8(rng, "gbq_u8_bits4_zp_f32", 10, 64, 4, 16, np.float32, True, [[0, 3, -1], [9, -10, 3]]))
    out.append(gbq_uint8(rng, "gbq_u8_bits4_f16_int32", 7, 96, 4, 32, np.float16, False, [6, -2, 0, 1],
                         np.int32))
    out.append(gbq_uint8(rng, "gbq_u8_bits4_zp_odd_blocks", 5, 48, 4, 16, np.float32, True, [4, 0, -5]))
    out.append(gbq_uint8(rng, "gbq_u8_bits8_zp", 6, 48, 8, 16, np.float32, True, [[1], [5], [-6]]))
    out.append(gbq_uint8(rng, "gbq_u8_bits8_f16", 6, 40, 8, 16, np.float16, False, [[3, -6]]))
    out.append(gbq_uint8(rng, "gbq_u8_bits2_zp", 4, 64, 2, 16, np.float32, True, [3, -4, 1]))
    # int4 / uint4 data: other axes, 3-D.
    out.append(gbq_int4(rng, "gbq_int4_zp", [9, 32], 0, 1, 16, True, True, [[8, -9], [0, 4]]))
    out.append(gbq_int4(rng, "gbq_int4_axes_swapped", [32, 6], 1, 0, 16, True, False, [5, -1, 2]))
    out.append(gbq_int4(rng, "gbq_uint4_3d_zp", [2, 5, 48], 1, 2, 16, False, True, [[4, -5, 2]]))
    out.append(gbq_int4(rng, "gbq_uint4_f16", [7, 20], 0, 1, 16, False, False, [6, 0], np.float16))
    # MatMulIntegerToFloat: B constant (packed) or not, per tensor or per column, zero points, bias.
    out.append(mmitf(rng, "mmitf_u8s8_per_column_zp_bias", [2, 3, 17], 17, 13, np.uint8, np.int8, True, True, True,
                     True))
    out.append(mmitf(rng, "mmitf_u8u8_runtime_b", [5, 9], 9, 21, np.uint8, np.uint8, False, False, True, False))
    out.append(mmitf(rng, "mmitf_u8s8_no_zp_bias", [1, 31], 31, 33, np.uint8, np.int8, True, False, False, True))
    # DynamicQuantizeMatMul.
    out.append(dqmm(rng, "dqmm_s8_per_column_zp_bias", [2, 5, 33], [33, 20], np.int8, True, True, True, True))
    out.append(dqmm(rng, "dqmm_u8_per_tensor", [1, 40], [40, 17], np.uint8, True, False, True, False))
    out.append(dqmm(rng, "dqmm_u8_runtime_b_bias", [3, 16], [16, 8], np.uint8, False, False, False, True))
    out.append(dqmm(rng, "dqmm_s8_batched_b", [3, 4, 16], [3, 16, 8], np.int8, False, False, True, False))
    # FusedMatMul.
    out.append(fused(rng, "fused_trans_a_alpha", [7, 5], [7, 6], alpha=0.5, transA=1))
    out.append(fused(rng, "fused_const_b_trans_b", [2, 3, 9], [11, 9], b_const=True, alpha=2.0, transB=1))
    out.append(fused(rng, "fused_const_b", [4, 9], [9, 70], b_const=True))
    out.append(fused(rng, "fused_trans_batch", [3, 2, 4, 5], [5, 2, 4, 6], transBatchA=1, transBatchB=1))
    out.append(fused(rng, "fused_trans_batch_and_trans", [5, 2, 4, 3], [2, 4, 6, 5], alpha=-1.5, transA=1,
                     transBatchA=1, transB=1))
    out.append(fused(rng, "fused_f16_trans_b", [3, 17], [5, 17], dtype=np.float16, transB=1, alpha=0.25))
    out.append(fused(rng, "fused_broadcast_batch", [2, 1, 3, 4], [4, 1, 5, 2], transBatchB=1))
    # The q8 spelling, rewritten into DynamicQuantizeMatMul (unfused in onnxruntime).
    out.append(q8_spelling(rng, "q8_spelling_shared_int8_per_column", [2, 7], 24, [16, 16, 10], np.int8, True,
                           True))
    out.append(q8_spelling(rng, "q8_spelling_uint8_per_tensor", [3], 20, [9], np.uint8, False, False))
    return out
