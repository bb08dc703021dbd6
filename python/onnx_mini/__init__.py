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
    "disable_telemetry_events",
    "enable_telemetry_events",
    "get_all_providers",
    "get_available_providers",
    "get_build_info",
    "get_device",
    "get_version_string",
    "preload_dlls",
    "set_default_logger_severity",
    "set_default_logger_verbosity",
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


def get_build_info():
    """A line about this build (ONNX Runtime's get_build_info())."""
    return "onnx_mini %s over %s (C API %s), CPU" % (__version__, library_path, library_version)


def _level(name, value, high):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("%s must be an int, not %s" % (name, type(value).__name__))
    if value < 0 or value > high:
        raise InvalidArgument("%s must be in [0, %d], got %d" % (name, high, value))


def set_default_logger_severity(severity):
    """Accepted (0-4, as ONNX Runtime's), unused: onnx-mini does not log."""
    _level("severity", severity, 4)


def set_default_logger_verbosity(verbosity):
    """Accepted, unused: onnx-mini does not log."""
    _level("verbosity", verbosity, 2**31 - 1)


def disable_telemetry_events():
    """Accepted: onnx-mini sends no telemetry."""


def enable_telemetry_events():
    """Accepted: onnx-mini sends no telemetry."""


def preload_dlls(cuda=True, cudnn=True, msvc=True, directory=None):
    """Accepted: onnx-mini loads no GPU libraries."""


# Last: it re-exports the functions above.
from . import capi  # noqa: E402,F401  (onnx_mini.capi.onnxruntime_pybind11_state, as onnxruntime's)
