"""Standard-domain LLM ops against onnxruntime: a check of the oracle itself."""
import numpy as np
from onnx import helper

from oracle import Case, ms_model, value_info


def cases():
    rng = np.random.default_rng(25)
    out = []
    x = rng.standard_normal((2, 3, 16)).astype(np.float32)
    scale = rng.standard_normal(16).astype(np.float32)
    node = helper.make_node("RMSNormalization", ["x", "scale"], ["y"], axis=-1, epsilon=1e-5)
    model = ms_model([node], [value_info("x", x), value_info("scale", scale)],
                     [value_info("y", np.float32, x.shape)], opset=23)
    out.append(Case("rms_normalization_f32", model, [{"x": x, "scale": scale}]))
    return out
