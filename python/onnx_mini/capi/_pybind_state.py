"""ONNX Runtime's onnxruntime.capi._pybind_state, for scripts that import from it."""

from .onnxruntime_pybind11_state import *  # noqa: F401,F403
from .onnxruntime_pybind11_state import NotImplemented  # noqa: F401
