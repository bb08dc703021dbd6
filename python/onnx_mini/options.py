"""SessionOptions and RunOptions, with ONNX Runtime's names and defaults."""

import ctypes
import enum
import warnings

from . import _capi
from ._errors import OnnxMiniError, StatusCode

__all__ = [
    "ExecutionMode",
    "ExecutionOrder",
    "GraphOptimizationLevel",
    "RunOptions",
    "SessionOptions",
    "MEMORY_LIMIT_KEY",
    "TIMEOUT_KEY",
]

_INVALID = StatusCode.INVALID_ARGUMENT

# Our session config key for the session's memory limit (om_session_options_
# set_memory_limit): bytes, a decimal integer ("0": the default, 3/4 of
# physical memory). ONNX Runtime has no such key.
MEMORY_LIMIT_KEY = "session.onnx_mini.memory_limit_bytes"
# Our run config key for a run's deadline (om_run_options_set_timeout_ms):
# milliseconds, a decimal integer ("0": none).
TIMEOUT_KEY = "run.onnx_mini.timeout_ms"


class GraphOptimizationLevel(enum.IntEnum):
    """ONNX Runtime's levels. ORT_DISABLE_ALL runs the graph as written (no
    rewrites); every other level runs onnx-mini's rewrites (fused norms,
    attention, quantized products), which have no levels of their own."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """ONNX Runtime's execution modes. onnx-mini runs the nodes of a graph in
    order (its kernels use the intra-op threads): ORT_PARALLEL is accepted
    and runs as ORT_SEQUENTIAL."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class ExecutionOrder(enum.IntEnum):
    """ONNX Runtime's node orders (accepted; onnx-mini has one order)."""

    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


def _int(name, value, low=None, high=2**31 - 1):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("%s must be an int, not %s" % (name, type(value).__name__))
    if (low is not None and value < low) or value > high:
        raise OnnxMiniError("%s must be in [%s, %d], got %d" % (name, low, high, value), _INVALID)
    return int(value)


def _bool(name, value):
    if not isinstance(value, (bool, int)):
        raise TypeError("%s must be a bool, not %s" % (name, type(value).__name__))
    return bool(value)


def _str(name, value):
    if not isinstance(value, str):
        raise TypeError("%s must be a str, not %s" % (name, type(value).__name__))
    return value


def _nonnegative(name, value):
    return _int(name, value, 0)


def _severity(name, value):
    return _int(name, value, 0, 4)


def _enum(cls):
    """A check that converts to the IntEnum `cls` (TypeError naming its members)."""

    def check(name, value):
        try:
            return cls(value)
        except (ValueError, TypeError):
            members = ", ".join(m.name for m in cls)
            raise TypeError("%s must be a %s (%s), not %r" % (name, cls.__name__, members, value)) from None

    return check


def _checked(name, check, doc=None):
    """A property kept in the slot ``_<name>``, its setter checked by ``check(name, value)``."""
    slot = "_" + name

    def get(self):
        return getattr(self, slot)

    def set_(self, value):
        setattr(self, slot, check(name, value))

    return property(get, set_, doc=doc)


def _entry(key, value):
    if not isinstance(key, str) or not isinstance(value, str):
        raise TypeError("config entries are str -> str, got %s -> %s" % (type(key).__name__, type(value).__name__))
    if "\0" in key or "\0" in value:
        raise OnnxMiniError("config entry %r: a NUL character" % key, _INVALID)


def _memory_limit(value):
    """The bytes of MEMORY_LIMIT_KEY's value."""
    try:
        n = int(value.strip(), 10)
    except ValueError:
        n = -1
    if n < 0 or n >= 2**64:
        raise OnnxMiniError(
            "%s must be a number of bytes (a decimal integer >= 0; 0: the default), got %r" % (MEMORY_LIMIT_KEY, value),
            _INVALID,
        )
    return n


class SessionOptions:
    """ONNX Runtime's ``SessionOptions``: read when a session is made (the
    session keeps a copy; ``InferenceSession.get_session_options()`` returns it).

    What each attribute does in onnx-mini:

    - ``intra_op_num_threads``: the kernels' threads per run (0: all cores);
    - ``inter_op_num_threads``: accepted, unused (nodes run one after another);
    - ``graph_optimization_level``: ``ORT_DISABLE_ALL`` turns the graph
      rewrites off, any other level leaves them on (the default, ``ORT_ENABLE_ALL``);
    - ``execution_mode``: accepted; ``ORT_PARALLEL`` runs as ``ORT_SEQUENTIAL``;
    - ``enable_profiling`` / ``profile_file_prefix``: a Chrome trace of each run's
      nodes, written by ``InferenceSession.end_profiling()`` to
      ``<prefix>_<date>_<time>.json``;
    - ``log_severity_level``, ``log_verbosity_level``, ``logid``: accepted,
      unused (onnx-mini does not log: errors are raised);
    - ``optimized_model_filepath``: saving the optimized graph is not
      supported; a session made with it set warns and writes nothing;
    - ``enable_cpu_mem_arena``, ``enable_mem_pattern``, ``enable_mem_reuse``,
      ``use_deterministic_compute``, ``execution_order``: accepted, unused
      (onnx-mini plans its memory at creation and its kernels are deterministic).

    ``add_session_config_entry(key, value)``: the keys onnx-mini's C API knows
    take effect (``session.qdq_matmulnbits_accuracy_level``, and ours,
    ``session.onnx_mini.memory_limit_bytes``: the session's memory limit in
    bytes); a bad value for them raises InvalidArgument at once. Other keys
    are kept (``get_session_config_entry`` returns them) and ignored, as ONNX
    Runtime ignores keys it does not use.
    """

    __slots__ = (
        "_intra_op_num_threads",
        "_inter_op_num_threads",
        "_graph_optimization_level",
        "_execution_mode",
        "_execution_order",
        "_enable_profiling",
        "_profile_file_prefix",
        "_log_severity_level",
        "_log_verbosity_level",
        "_logid",
        "_optimized_model_filepath",
        "_enable_cpu_mem_arena",
        "_enable_mem_pattern",
        "_enable_mem_reuse",
        "_use_deterministic_compute",
        "_config",
        "_applied",
    )

    def __init__(self):
        self._intra_op_num_threads = 0
        self._inter_op_num_threads = 0
        self._graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self._execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self._execution_order = ExecutionOrder.DEFAULT
        self._enable_profiling = False
        self._profile_file_prefix = "onnxruntime_profile_"
        self._log_severity_level = 2
        self._log_verbosity_level = 0
        self._logid = ""
        self._optimized_model_filepath = ""
        self._enable_cpu_mem_arena = True
        self._enable_mem_pattern = True
        self._enable_mem_reuse = True
        self._use_deterministic_compute = False
        self._config = {}  # key -> value, in the order added
        self._applied = set()  # the keys the C API took

    def _copy(self):
        other = SessionOptions()
        for name in self.__slots__:
            value = getattr(self, name)
            setattr(other, name, dict(value) if isinstance(value, dict) else set(value) if isinstance(value, set) else value)
        return other

    def __repr__(self):
        return "SessionOptions(intra_op_num_threads=%d, graph_optimization_level=%s, enable_profiling=%s, config=%r)" % (
            self._intra_op_num_threads,
            self._graph_optimization_level.name,
            self._enable_profiling,
            self._config,
        )

    # ---- ONNX Runtime's properties ----

    intra_op_num_threads = _checked(
        "intra_op_num_threads", _nonnegative, "Threads each run uses for its kernels; 0 (the default): all cores."
    )
    inter_op_num_threads = _checked(
        "inter_op_num_threads", _nonnegative, "Accepted, unused: onnx-mini runs a graph's nodes one after another."
    )
    graph_optimization_level = _checked(
        "graph_optimization_level",
        _enum(GraphOptimizationLevel),
        "ORT_DISABLE_ALL: no graph rewrites; any other level: the rewrites.",
    )
    execution_mode = _checked("execution_mode", _enum(ExecutionMode), "Accepted; ORT_PARALLEL runs as ORT_SEQUENTIAL.")
    execution_order = _checked("execution_order", _enum(ExecutionOrder))
    enable_profiling = _checked(
        "enable_profiling", _bool, "Record a trace of every run (written by InferenceSession.end_profiling())."
    )
    profile_file_prefix = _checked(
        "profile_file_prefix",
        _str,
        "The trace file's prefix: ``<prefix>_<date>_<time>.json`` (a path relative to the working directory, or absolute).",
    )
    log_severity_level = _checked("log_severity_level", _severity, "Accepted (0-4, as ONNX Runtime), unused.")
    log_verbosity_level = _checked("log_verbosity_level", _nonnegative, "Accepted, unused.")
    logid = _checked("logid", _str)
    optimized_model_filepath = _checked(
        "optimized_model_filepath", _str, "Not supported: a session made with it set warns and writes nothing."
    )
    enable_cpu_mem_arena = _checked("enable_cpu_mem_arena", _bool)
    enable_mem_pattern = _checked("enable_mem_pattern", _bool)
    enable_mem_reuse = _checked("enable_mem_reuse", _bool)
    use_deterministic_compute = _checked("use_deterministic_compute", _bool)

    # ---- config entries ----

    def add_session_config_entry(self, key, value):
        """Sets a session config entry (ONNX Runtime's AddSessionConfigEntry).
        Keys onnx-mini knows are checked now (InvalidArgument for a bad
        value); others are kept and ignored."""
        _entry(key, value)
        if key == MEMORY_LIMIT_KEY:
            _memory_limit(value)
            applied = True
        else:
            applied = _try_config_entry(key, value)
        self._config[key] = value
        if applied:
            self._applied.add(key)
        else:
            self._applied.discard(key)

    def get_session_config_entry(self, key):
        """The value set for `key`; RuntimeException when none was."""
        _str("key", key)
        if key not in self._config:
            raise OnnxMiniError("SessionOptions does not have configuration with key: %s" % key, StatusCode.INTERNAL)
        return self._config[key]

    # ---- not supported ----

    def add_free_dimension_override_by_name(self, dim_name, dim_value):
        raise OnnxMiniError("not implemented: add_free_dimension_override_by_name", StatusCode.NOT_IMPLEMENTED)

    def add_free_dimension_override_by_denotation(self, dim_denotation, dim_value):
        raise OnnxMiniError("not implemented: add_free_dimension_override_by_denotation", StatusCode.NOT_IMPLEMENTED)

    def add_initializer(self, name, ort_value):
        raise OnnxMiniError("not implemented: add_initializer (initializers are the model's)", StatusCode.NOT_IMPLEMENTED)

    def register_custom_ops_library(self, library_path):
        raise OnnxMiniError(
            "not implemented: register_custom_ops_library (onnx-mini's custom ops are registered "
            "through its C API, om_register_custom_op)",
            StatusCode.NOT_IMPLEMENTED,
        )

    # ---- the C options ----

    def _make(self, threads=None):
        """A new om_session_options* for these options (the caller frees it)."""
        options = ctypes.c_void_p()
        _capi.check(_capi.om_session_options_create(ctypes.byref(options)))
        try:
            n = self._intra_op_num_threads if threads is None else threads
            _capi.check(_capi.om_session_options_set_intra_op_threads(options, n))
            rewrites = self._graph_optimization_level != GraphOptimizationLevel.ORT_DISABLE_ALL
            _capi.check(_capi.om_session_options_set_graph_rewrites(options, 1 if rewrites else 0))
            for key, value in self._config.items():
                if key == MEMORY_LIMIT_KEY:
                    _capi.check(_capi.om_session_options_set_memory_limit(options, _memory_limit(value)))
                elif key in self._applied:
                    _capi.check(
                        _capi.om_session_options_add_config_entry(options, key.encode("utf-8"), value.encode("utf-8"))
                    )
            if self._enable_profiling:
                prefix = self._profile_file_prefix or "onnxruntime_profile_"
                _capi.check(_capi.om_session_options_enable_profiling(options, prefix.encode("utf-8")))
            if self._optimized_model_filepath:
                warnings.warn(
                    "onnx_mini does not save optimized models: optimized_model_filepath=%r is not written"
                    % self._optimized_model_filepath,
                    RuntimeWarning,
                    stacklevel=3,
                )
        except BaseException:
            _capi.om_session_options_free(options)
            raise
        return options.value


def _try_config_entry(key, value):
    """Whether the C API takes the entry: True if it does, False if it does
    not know the key (NOT_IMPLEMENTED); raises for a bad value."""
    options = ctypes.c_void_p()
    _capi.check(_capi.om_session_options_create(ctypes.byref(options)))
    try:
        _capi.check(_capi.om_session_options_add_config_entry(options, key.encode("utf-8"), value.encode("utf-8")))
        return True
    except OnnxMiniError as e:
        if e.code == StatusCode.NOT_IMPLEMENTED:
            return False
        raise
    finally:
        _capi.om_session_options_free(options)


class RunOptions:
    """ONNX Runtime's ``RunOptions``, over the C API's om_run_options.

    - ``terminate``: setting it True (from any thread) stops the runs made
      with these options at their next check (before every node, at every
      Loop/Scan iteration); they raise ``Fail``. A run never clears it: set it
      back to False to run again with these options.
    - ``log_severity_level``, ``log_verbosity_level``, ``logid``, ``run_tag``,
      ``only_execute_path_to_fetches``: accepted, unused (onnx-mini only ever
      computes what the outputs asked for need).
    - ``add_run_config_entry(key, value)``: ``run.onnx_mini.timeout_ms`` (ours)
      stops a run after that many milliseconds (raising ``Fail``); other keys
      are kept and ignored.
    """

    __slots__ = (
        "_handle",
        "_terminate",
        "_log_severity_level",
        "_log_verbosity_level",
        "_logid",
        "_run_tag",
        "_only_execute_path_to_fetches",
        "_config",
        "__weakref__",
    )

    def __init__(self):
        self._handle = None
        handle = ctypes.c_void_p()
        _capi.check(_capi.om_run_options_create(ctypes.byref(handle)))
        self._handle = handle.value
        self._terminate = False
        self._log_severity_level = 2
        self._log_verbosity_level = 0
        self._logid = ""
        self._run_tag = ""
        self._only_execute_path_to_fetches = False
        self._config = {}

    def __del__(self, _free=_capi.om_run_options_free):
        handle = getattr(self, "_handle", None)
        if handle:
            self._handle = None
            _free(handle)

    def __repr__(self):
        return "RunOptions(terminate=%s, run_tag=%r)" % (self._terminate, self._run_tag)

    @property
    def terminate(self):
        """Set to True to stop the runs in flight with these options (and any
        later one, until set back to False)."""
        return self._terminate

    @terminate.setter
    def terminate(self, value):
        value = _bool("terminate", value)
        _capi.check(_capi.om_run_options_set_terminate(self._handle, 1 if value else 0))
        self._terminate = value

    log_severity_level = _checked("log_severity_level", _severity)
    log_verbosity_level = _checked("log_verbosity_level", _nonnegative)
    logid = _checked("logid", _str)
    run_tag = _checked("run_tag", _str, "A tag for the run (ONNX Runtime logs it; onnx-mini keeps it).")
    only_execute_path_to_fetches = _checked("only_execute_path_to_fetches", _bool)

    def add_run_config_entry(self, key, value):
        """Sets a run config entry; ``run.onnx_mini.timeout_ms`` is a deadline
        in milliseconds, other keys are kept and ignored."""
        _entry(key, value)
        if key == TIMEOUT_KEY:
            try:
                ms = int(value.strip(), 10)
            except ValueError:
                ms = -1
            if ms < 0 or ms >= 2**63:
                raise OnnxMiniError("%s must be milliseconds (an integer >= 0), got %r" % (TIMEOUT_KEY, value), _INVALID)
            _capi.check(_capi.om_run_options_set_timeout_ms(self._handle, ms))
        self._config[key] = value

    def get_run_config_entry(self, key):
        """The value set for `key`; RuntimeException when none was."""
        _str("key", key)
        if key not in self._config:
            raise OnnxMiniError("RunOptions does not have configuration with key: %s" % key, StatusCode.INTERNAL)
        return self._config[key]
