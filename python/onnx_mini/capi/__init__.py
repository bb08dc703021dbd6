"""onnx_mini.capi: where scripts written for onnxruntime import its exception
classes from (``from onnxruntime.capi.onnxruntime_pybind11_state import
InvalidArgument``): ``onnx_mini.capi.onnxruntime_pybind11_state`` and
``onnx_mini.capi._pybind_state`` hold the same classes as ``onnx_mini``."""

from . import _pybind_state, onnxruntime_pybind11_state  # noqa: F401
