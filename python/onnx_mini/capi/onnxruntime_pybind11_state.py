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
from .. import (  # noqa: F401
    disable_telemetry_events,
    enable_telemetry_events,
    get_all_providers,
    get_available_providers,
    get_build_info,
    get_device,
    set_default_logger_severity,
    set_default_logger_verbosity,
)
