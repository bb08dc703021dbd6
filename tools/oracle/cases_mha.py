"""com.microsoft attention-family ops against onnxruntime 1.30: RotaryEmbedding,
MultiHeadAttention, Attention (BERT) and EmbedLayerNormalization."""
import numpy as np
from onnx import helper, numpy_helper

from oracle import Case, ms_model, value_info

F16_WHY = "float16 inputs and outputs: onnxruntime rounds each step's result to float16"


def _rotary(rng, name, x_shape, pos, cache_rows, half, dtype=np.float32, **attrs):
    x = rng.standard_normal(x_shape).astype(dtype)
    angles = rng.uniform(0, 6.3, (cache_rows, half))
    cos, sin = np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)
    node = helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain="com.microsoft", **attrs)
    feeds = {"x": x, "pos": pos, "cos": cos, "sin": sin}
    # A scalar start is an initializer: write_family's input files make 0-d arrays 1-d.
    scalar = [numpy_helper.from_array(feeds.pop("pos"), "pos")] if pos.ndim == 0 else []
    model = ms_model([node], [value_info(n, feeds[n]) for n in feeds], [value_info("y", dtype, x.shape)],
                     initializers=scalar)
    f16 = dtype == np.float16
    return Case(name, model, [feeds],
                rtol=2e-3 if f16 else 1e-4, atol=2e-3 if f16 else 1e-5, why=F16_WHY if f16 else "float32 throughout")


def rotary_cases(rng):
    ids = np.array([[0, 3, 5], [7, 1, 2]], np.int64)
    return [
        _rotary(rng, "rotary_3d_ids", (2, 3, 16), ids, 8, 4, num_heads=2),
        _rotary(rng, "rotary_3d_ids_no_heads", (2, 3, 24), ids, 8, 4),
        _rotary(rng, "rotary_3d_scalar_start", (2, 3, 16), np.array(4, np.int64), 8, 4, num_heads=2),
        _rotary(rng, "rotary_3d_start_1", (3, 5, 12), np.array([2], np.int64), 9, 3, num_heads=2, interleaved=1),
        _rotary(rng, "rotary_4d_ids", (2, 3, 3, 8), ids, 8, 4, interleaved=1),
        _rotary(rng, "rotary_4d_start", (1, 2, 5, 10), np.array([0], np.int64), 6, 5),
        _rotary(rng, "rotary_partial", (2, 3, 32), ids, 8, 3, num_heads=2, rotary_embedding_dim=6),
        _rotary(rng, "rotary_partial_interleaved_4d", (2, 2, 3, 16), ids, 8, 2, num_heads=2,
                rotary_embedding_dim=4, interleaved=1),
        _rotary(rng, "rotary_f16", (2, 3, 16), ids, 8, 4, np.float16, num_heads=2),
        _rotary(rng, "rotary_f16_4d_interleaved", (2, 2, 3, 8), np.array(1, np.int64), 8, 4, np.float16,
                interleaved=1),
    ]


def cases():
    rng = np.random.default_rng(2025)
    return rotary_cases(rng)
