"""MatMulNBits (com.microsoft) and the blocked DequantizeLinear + MatMul spelling against onnxruntime.

Weights are random codes with random scales and zero points (the op's semantics do not care how
they were quantized); B, scales, zero points, g_idx and bias are initializers, as exporters write
them, so onnx-mini's Prepare path runs. A is a graph input.
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from accuracy_lib import pack_codes
from oracle import Case, ms_model, value_info

F32_WHY = "float32 both; sums of K products in another order (the codes' dot products, then the zero point)"
F16_WHY = "A, scales and Y in float16: onnxruntime and onnx-mini compute in float and round Y to float16"
ACC4_WHY = ("accuracy_level 4: both round A to int8 per block (max |a| / 127); onnxruntime multiplies the "
            "integers, onnx-mini the rounded values in float (a tie may round to the other code)")


def nbits_case(name, rng, k, n, bits, block, a_shape, dtype=np.float32, zp="none", bias=False, g_idx=None,
               acc=0, flat_scales=False, flat_zp=False):
    kb = (k + block - 1) // block
    blob = block * bits // 8
    codes = rng.integers(0, 1 << bits, size=(n, kb * block))
    b = pack_codes(codes, bits).reshape(n, kb, blob)
    scales = (0.01 + 0.04 * rng.random((n, kb))).astype(dtype)
    inits = [numpy_helper.from_array(b, "B"),
             numpy_helper.from_array(scales.reshape(-1) if flat_scales else scales, "scales")]
    inputs = ["A", "B", "scales", "", "", ""]
    if zp == "packed":
        z = pack_codes(rng.integers(0, 1 << bits, size=(n, kb)), bits)
        inits.append(numpy_helper.from_array(z.reshape(-1) if flat_zp else z, "zp"))
        inputs[3] = "zp"
    elif zp == "float":
        z = ((1 << (bits - 1)) + rng.standard_normal((n, kb))).astype(dtype)
        inits.append(numpy_helper.from_array(z.reshape(-1) if flat_zp else z, "zp"))
        inputs[3] = "zp"
    if g_idx is not None:
        inits.append(numpy_helper.from_array(np.asarray(g_idx, np.int32), "g_idx"))
        inputs[4] = "g_idx"
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(n).astype(dtype), "bias"))
        inputs[5] = "bias"
    while inputs[-1] == "":
        inputs.pop()
    node = helper.make_node("MatMulNBits", inputs, ["Y"], domain="com.microsoft", K=k, N=n, bits=bits,
                            block_size=block, accuracy_level=acc)
    a = rng.standard_normal(tuple(a_shape) + (k,)).astype(dtype)
    model = ms_model([node], [value_info("A", a)], [value_info("Y", dtype, tuple(a_shape) + (n,))], inits)
    if dtype == np.float16:
        return Case(name, model, [{"A": a}], 2e-3, 2e-3, F16_WHY)
    if acc == 4:
        return Case(name, model, [{"A": a}], 1e-3, 1e-4, ACC4_WHY)
    return Case(name, model, [{"A": a}], 1e-4, 1e-4, F32_WHY)


def packed_tensor(name, data_type, dims, values, bits):
    """An int4/uint4 initializer (onnx 1.12 has no helper for them): two's-complement codes, packed."""
    t = TensorProto()
    t.name = name
    t.data_type = data_type
    t.dims.extend(dims)
    codes = (np.asarray(values).reshape(-1) & ((1 << bits) - 1)).astype(np.uint8)
    t.raw_data = pack_codes(codes, bits).tobytes()
    return t


INT4, UINT4 = 22, 21


def dq_case(name, rng, k, n, block, qtype, zp, a_shape, dtype=np.float32):
    """MatMul(A, DequantizeLinear(x [K, N], scale [K/block, N], zp; axis 0, block_size)), opset 21."""
    kb = (k + block - 1) // block
    lo, hi = {"int4": (-8, 8), "uint4": (0, 16), "int8": (-128, 128), "uint8": (0, 256)}[qtype]
    x = rng.integers(lo, hi, size=(k, n))
    z = rng.integers(lo, hi, size=(kb, n))
    if qtype in ("int4", "uint4"):
        code = INT4 if qtype == "int4" else UINT4
        inits = [packed_tensor("x", code, (k, n), x, 4)]
        zinit = packed_tensor("zp", code, (kb, n), z, 4)
    else:
        np_t = np.int8 if qtype == "int8" else np.uint8
        inits = [numpy_helper.from_array(x.astype(np_t), "x")]
        zinit = numpy_helper.from_array(z.astype(np_t), "zp")
    inits.append(numpy_helper.from_array((0.005 + 0.02 * rng.random((kb, n))).astype(dtype), "scale"))
    dq_inputs = ["x", "scale"]
    if zp:
        inits.append(zinit)
        dq_inputs.append("zp")
    nodes = [helper.make_node("DequantizeLinear", dq_inputs, ["w"], axis=0, block_size=block),
             helper.make_node("MatMul", ["A", "w"], ["Y"])]
    a = rng.standard_normal(tuple(a_shape) + (k,)).astype(dtype)
    model = ms_model(nodes, [value_info("A", a)], [value_info("Y", dtype, tuple(a_shape) + (n,))], inits, opset=21)
    # onnxruntime as its users run it: its default optimizations fuse 4-bit pairs into MatMulNBits
    # at accuracy level 4 (A rounded to int8 per block), as onnx-mini's rewrite does.
    ort = {"graphOptimizationLevel": "all"}
    fused = ("onnxruntime's default optimizations fuse the pair into MatMulNBits at accuracy level 4, as "
             "onnx-mini's rewrite does: A rounded to int8 per block in both, then ")
    if dtype == np.float16:
        return Case(name, model, [{"A": a}], 2e-3, 2e-3, fused + F16_WHY, ort_session=ort)
    return Case(name, model, [{"A": a}], 1e-4, 1e-4, fused + F32_WHY, ort_session=ort)


def cases():
    rng = np.random.default_rng(2025)
    out = []
    # Bits, block sizes, zero-point forms, odd K and N, M = 1 and M > 1 (the few-rows and many-rows paths).
    out.append(nbits_case("b4_bs32_m1", rng, 64, 48, 4, 32, (1, 1)))
    out.append(nbits_case("b4_bs16_zp_batch", rng, 40, 17, 4, 16, (2, 3), zp="packed"))
    out.append(nbits_case("b4_bs128_zpfloat", rng, 300, 33, 4, 128, (1,), zp="float"))
    out.append(nbits_case("b4_bs64_zp_bias_m7", rng, 129, 70, 4, 64, (7,), zp="packed", bias=True))
    out.append(nbits_case("b4_flat_scales_zp", rng, 96, 24, 4, 32, (2, 1), zp="packed", flat_scales=True,
                          flat_zp=True))
    out.append(nbits_case("b8_bs64_zp_m5", rng, 96, 31, 8, 64, (5,), zp="packed"))
    out.append(nbits_case("b8_bs16_bias_m1", rng, 50, 9, 8, 16, (1, 1), bias=True))
    out.append(nbits_case("b2_bs32_zp_m2", rng, 70, 19, 2, 32, (2,), zp="packed"))
    out.append(nbits_case("b2_bs16_m6", rng, 48, 21, 2, 16, (1, 6)))
    out.append(nbits_case("b4_lm_head", rng, 32, 1000, 4, 32, (1, 1), zp="packed"))
    # float16 A (onnxruntime's CPU kernel computes in float and rounds Y).
    out.append(nbits_case("f16_b4_bs32_zp_bias", rng, 64, 40, 4, 32, (2, 3), np.float16, zp="packed", bias=True))
    out.append(nbits_case("f16_b8_bs16_m1", rng, 48, 20, 8, 16, (1,), np.float16))
    out.append(nbits_case("f16_b4_zpfloat_m1", rng, 64, 12, 4, 32, (1,), np.float16, zp="float"))
    # g_idx: k / block_size, and a permutation of whole blocks (each block's entries one value: where
    # onnxruntime's reordering kernel and the documented meaning agree, docs/contrib_ops.md).
    k = 64
    out.append(nbits_case("b4_gidx_trivial", rng, k, 10, 4, 16, (2,), zp="packed",
                          g_idx=[i // 16 for i in range(k)]))
    perm = [2, 0, 3, 1]
    out.append(nbits_case("b4_gidx_blocks_permuted", rng, k, 10, 4, 16, (1,), zp="packed",
                          g_idx=[perm[i // 16] for i in range(k)]))
    # Per-element blocks; unpacked zero points with g_idx (honored; packed ones are ignored, as
    # onnxruntime's kernel does: the two cases above have them).
    rnd = [int(v) for v in rng.integers(0, 4, size=k)]
    out.append(nbits_case("b4_gidx_random", rng, k, 10, 4, 16, (2,), g_idx=rnd))
    out.append(nbits_case("b4_gidx_random_zpfloat", rng, k, 10, 4, 16, (1,), zp="float", g_idx=rnd))
    out.append(nbits_case("f16_b4_gidx_random", rng, k, 10, 4, 16, (1,), np.float16, g_idx=rnd))
    out.append(nbits_case("b4_gidx_permuted_m5_bias", rng, k, 10, 4, 16, (5,), g_idx=[perm[i // 16] for i in range(k)],
                          bias=True))
    # accuracy_level 4 (onnxruntime: A in int8 per block).
    out.append(nbits_case("acc4_b4_bs32_m1", rng, 128, 40, 4, 32, (1,), zp="packed", acc=4))
    out.append(nbits_case("acc4_b4_bs32_m4", rng, 128, 40, 4, 32, (4,), acc=4))
    out.append(nbits_case("acc4_b8_bs64_m3", rng, 128, 24, 8, 64, (3,), zp="packed", acc=4))
    out.append(nbits_case("acc4_b2_bs16_kodd", rng, 100, 16, 2, 16, (2,), zp="packed", acc=4))
    out.append(nbits_case("acc4_f16_b4_bs128", rng, 256, 16, 4, 128, (2,), np.float16, zp="packed", acc=4))
    # ... but not with unpacked zero points or g_idx: onnxruntime's float path.
    out.append(nbits_case("acc4_zpfloat", rng, 128, 16, 4, 32, (2,), zp="float", acc=4))
    out.append(nbits_case("acc4_gidx", rng, 64, 16, 4, 16, (2,), g_idx=[i // 16 for i in range(64)], acc=4))
    out.append(nbits_case("f16_b2_bs16", rng, 64, 10, 2, 16, (1,), np.float16))
    # The standard spelling: blocked DequantizeLinear (opset 21) + MatMul.
    out.append(dq_case("dq_int4_zp", rng, 64, 24, 32, "int4", True, (1, 2)))
    out.append(dq_case("dq_int4_nozp", rng, 70, 13, 16, "int4", False, (1,)))
    out.append(dq_case("dq_uint4_zp_m6", rng, 96, 20, 32, "uint4", True, (2, 3)))
    out.append(dq_case("dq_int8_nozp", rng, 64, 16, 64, "int8", False, (1, 1)))
    out.append(dq_case("dq_uint8_zp", rng, 80, 11, 16, "uint8", True, (5,)))
    out.append(dq_case("dq_f16_int4_zp", rng, 64, 24, 32, "int4", True, (1,), np.float16))
    # More rows than the decode passes take (16): panels dequantized for the GEMM.
    out.append(nbits_case("b4_bs32_zp_bias_m20", rng, 72, 33, 4, 32, (4, 5), zp="packed", bias=True))
    out.append(nbits_case("b8_bs16_m17", rng, 48, 20, 8, 16, (17,)))
    out.append(dq_case("dq_uint4_m18", rng, 64, 24, 32, "uint4", True, (18,)))
    return out
