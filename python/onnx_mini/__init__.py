"""onnx_mini: Python bindings of onnx-mini, a small ONNX runtime.

A pure ctypes layer over libonnx_mini.so (onnx-mini's C API), with ONNX
Runtime's interface: a script written for onnxruntime runs with
``import onnx_mini as ort``::

    import numpy as np
    import onnx_mini as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    session = ort.InferenceSession("model.onnx", so, providers=["CPUExecutionProvider"])
    [y] = session.run(["y"], {"x": np.ones((2, 4), np.float32)})

The library is found through the ONNX_MINI_LIBRARY environment variable (a
path), else as libonnx_mini.so.0 through the dynamic loader (LD_LIBRARY_PATH,
the ldconfig cache) or ctypes.util.find_library("onnx_mini").
"""

from ._capi import library_path, library_version
from ._errors import (
    EngineError,
    EPFail,
    Fail,
    InvalidArgument,
    InvalidGraph,
    InvalidProtobuf,
    ModelLoaded,
    NoModel,
    NoSuchFile,
    NotImplemented,
    OnnxMiniError,
    RuntimeException,
    StatusCode,
)
from .options import ExecutionMode, ExecutionOrder, GraphOptimizationLevel, RunOptions, SessionOptions
from .ortvalue import OrtValue
from .session import IOBinding, InferenceSession, ModelMetadata, NodeArg
from . import capi  # noqa: F401  (onnx_mini.capi.onnxruntime_pybind11_state, as onnxruntime's)

__version__ = "0.4.0"

# ONNX Runtime's exception classes are attributes of the package, but out of
# __all__: `from onnx_mini import *` must not shadow Python's NotImplemented.
__all__ = [
    "ExecutionMode",
    "ExecutionOrder",
    "GraphOptimizationLevel",
    "IOBinding",
    "InferenceSession",
    "ModelMetadata",
    "NodeArg",
    "OnnxMiniError",
    "OrtValue",
    "RunOptions",
    "SessionOptions",
    "StatusCode",
    "get_all_providers",
    "get_available_providers",
    "get_device",
    "get_version_string",
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


def get_all_providers():
    """ONNX Runtime's get_all_providers(): the providers this build knows (the CPU's)."""
    return ["CPUExecutionProvider"]


def get_version_string():
    """The package's version (ONNX Runtime's get_version_string())."""
    return __version__
