"""The package's exceptions: OnnxMiniError and ONNX Runtime's exception classes.

ONNX Runtime raises one class per status code (onnxruntime.capi.
onnxruntime_pybind11_state.InvalidArgument, ...), each a RuntimeError. Here
each is a subclass of OnnxMiniError (itself a RuntimeError, with the runtime's
status code as ``.code``), and an OnnxMiniError made from a code is an
instance of that code's class, so ``except InvalidArgument`` and
``except OnnxMiniError`` both catch what the runtime reports.
"""

import enum

__all__ = [
    "StatusCode",
    "OnnxMiniError",
    "Fail",
    "InvalidArgument",
    "NoSuchFile",
    "NoModel",
    "EngineError",
    "RuntimeException",
    "InvalidProtobuf",
    "ModelLoaded",
    "NotImplemented",
    "InvalidGraph",
    "EPFail",
]


class StatusCode(enum.IntEnum):
    """om_status_code: the code of an OnnxMiniError."""

    OK = 0
    INVALID_ARGUMENT = 1  # bad model, input, name, type, shape or value
    NOT_FOUND = 2  # a file that does not exist
    NOT_IMPLEMENTED = 3  # an op, opset or element type onnx-mini lacks
    OUT_OF_MEMORY = 4  # an allocation failed
    INTERNAL = 5  # anything else
    CANCELLED = 6  # a run stopped by its run options (C API 0.4)


class OnnxMiniError(RuntimeError):
    """An error reported by onnx-mini (or by this package before calling it).

    ``str(error)`` is the runtime's message; ``error.code`` is a StatusCode.
    ``OnnxMiniError(message, code)`` makes an instance of the ONNX Runtime
    class of that code (InvalidArgument for INVALID_ARGUMENT, ...).
    """

    _default_code = StatusCode.INTERNAL

    def __new__(cls, message="", code=None, *args, **kwargs):
        if cls is OnnxMiniError and code is not None:
            cls = _CLASS_BY_CODE.get(code, RuntimeException)
        return super().__new__(cls, message)

    def __init__(self, message="", code=None):
        super().__init__(message)
        if code is None:
            code = self._default_code
        try:
            self.code = StatusCode(code)
        except ValueError:  # a code newer than this package
            self.code = int(code)

    @property
    def message(self):
        return self.args[0] if self.args else ""


# ONNX Runtime's classes (its StatusCode names in the comments).
class Fail(OnnxMiniError):
    """FAIL; a run stopped through RunOptions.terminate (CANCELLED) raises it, as in ONNX Runtime."""

    _default_code = StatusCode.CANCELLED


class InvalidArgument(OnnxMiniError):
    """INVALID_ARGUMENT: a bad model, input, name, type, shape or value."""

    _default_code = StatusCode.INVALID_ARGUMENT


class NoSuchFile(OnnxMiniError):
    """NO_SUCHFILE: a model (or external data) file that does not exist."""

    _default_code = StatusCode.NOT_FOUND


class NoModel(OnnxMiniError):
    """NO_MODEL (never raised by onnx-mini; for ``except`` clauses written for ONNX Runtime)."""

    _default_code = StatusCode.INVALID_ARGUMENT


class EngineError(OnnxMiniError):
    """ENGINE_ERROR (never raised by onnx-mini)."""


class RuntimeException(OnnxMiniError):
    """RUNTIME_EXCEPTION: out of memory (a memory limit) or an internal error."""


class InvalidProtobuf(OnnxMiniError):
    """INVALID_PROTOBUF (onnx-mini reports a model that does not parse as InvalidArgument)."""

    _default_code = StatusCode.INVALID_ARGUMENT


class ModelLoaded(OnnxMiniError):
    """MODEL_LOADED (never raised by onnx-mini)."""


class NotImplemented(OnnxMiniError):  # noqa: A001 (ONNX Runtime's name)
    """NOT_IMPLEMENTED: an op, opset, element type or feature onnx-mini lacks."""

    _default_code = StatusCode.NOT_IMPLEMENTED


class InvalidGraph(OnnxMiniError):
    """INVALID_GRAPH (onnx-mini reports an invalid graph as InvalidArgument)."""

    _default_code = StatusCode.INVALID_ARGUMENT


class EPFail(OnnxMiniError):
    """EP_FAIL (never raised by onnx-mini: it has one execution provider, the CPU)."""


_CLASS_BY_CODE = {
    StatusCode.INVALID_ARGUMENT: InvalidArgument,
    StatusCode.NOT_FOUND: NoSuchFile,
    StatusCode.NOT_IMPLEMENTED: NotImplemented,
    StatusCode.OUT_OF_MEMORY: RuntimeException,
    StatusCode.INTERNAL: RuntimeException,
    StatusCode.CANCELLED: Fail,
}
