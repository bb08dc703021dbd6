"""onnx_mini: Python bindings of onnx-mini, a small ONNX runtime.

A pure ctypes layer over libonnx_mini.so (onnx-mini's C API), with ONNX
Runtime's interface::

    import numpy as np
    import onnx_mini

    session = onnx_mini.InferenceSession("model.onnx")
    [y] = session.run(["y"], {"x": np.ones((2, 4), np.float32)})

The library is found through the ONNX_MINI_LIBRARY environment variable (a
path), else as libonnx_mini.so.0 through the dynamic loader (LD_LIBRARY_PATH,
the ldconfig cache) or ctypes.util.find_library("onnx_mini").
"""

from ._capi import OnnxMiniError, StatusCode, library_path, library_version
from .session import InferenceSession, NodeArg

__version__ = "0.3.0"

__all__ = [
    "InferenceSession",
    "NodeArg",
    "OnnxMiniError",
    "StatusCode",
    "get_device",
    "get_available_providers",
    "library_path",
    "library_version",
    "__version__",
]


def get_device():
    """ONNX Runtime's get_device(): onnx-mini runs on the CPU."""
    return "CPU"


def get_available_providers():
    """ONNX Runtime's get_available_providers()."""
    return ["CPUExecutionProvider"]
