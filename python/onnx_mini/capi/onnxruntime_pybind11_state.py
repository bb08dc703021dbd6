"""ONNX Runtime's module of exception classes (and of its bound types), for
scripts that import them from here; the same objects as onnx_mini's."""

from .._errors import (  # noqa: F401
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
    RuntimeException,
)
from ..options import ExecutionMode, ExecutionOrder, GraphOptimizationLevel, RunOptions, SessionOptions  # noqa: F401
from ..ortvalue import OrtValue  # noqa: F401
from ..session import ModelMetadata, NodeArg  # noqa: F401


def get_available_providers():
    return ["CPUExecutionProvider"]
