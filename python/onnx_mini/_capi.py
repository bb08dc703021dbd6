"""The ctypes binding of onnx-mini's C API (runtime/onnx_mini.h).

Only this module touches the shared library. It finds and loads
libonnx_mini.so, checks its version, declares the prototypes of the functions
the package uses, and turns an om_status* into an OnnxMiniError.

ctypes.CDLL releases the GIL around every foreign call, so a long
om_session_run lets other Python threads run.
"""

import ctypes
import ctypes.util
import os

from ._errors import OnnxMiniError, StatusCode

# The C API this package is written against: its major version, and the
# oldest minor version that has every function it declares (0.5: run options
# and session config entries). Within one major version the C API only grows;
# the functions of later versions (strings, metadata, profiling: 0.6) are
# resolved when first used (`optional`), so the package loads without them.
API_MAJOR = 0
API_MINOR = 5

SONAME = "libonnx_mini.so.0"
ENV = "ONNX_MINI_LIBRARY"

_HOW_TO = (
    "Build onnx-mini (cmake -S . -B build && cmake --build build) and either set "
    + ENV
    + "=/path/to/build/libonnx_mini.so, or install it with "
    "`cmake --install build --prefix /usr/local && ldconfig`."
)


def _candidates():
    """The names to load, in order (lazily): ONNX_MINI_LIBRARY alone when set,
    else the SONAME (found through LD_LIBRARY_PATH and the ldconfig cache, as
    after `cmake --install build --prefix /usr/local` and `ldconfig`), then
    what ctypes.util.find_library finds."""
    explicit = os.environ.get(ENV)
    if explicit:
        yield explicit
        return
    yield SONAME
    found = ctypes.util.find_library("onnx_mini")
    if found and found != SONAME:
        yield found


def _set_omp_wait_default():
    """libgomp reads its wait policy once, when it is loaded: unless the user
    chose one, ask for a short spin before waiting threads sleep (the default
    spins for milliseconds and collapses parallel regions when another busy
    process shares the cores; the README's "Threads under contention"). No
    effect if libgomp is already loaded in this process."""
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = "1000"


def _load():
    """Returns (CDLL, name loaded). Raises ImportError when no library can be loaded."""
    explicit = os.environ.get(ENV)
    _set_omp_wait_default()
    tried = []
    for name in _candidates():
        tried.append(name)
        try:
            return ctypes.CDLL(name), name
        except OSError as e:
            if explicit:
                raise ImportError(
                    "onnx_mini: cannot load the library named by %s=%r: %s. "
                    "Point it at libonnx_mini.so (e.g. build/libonnx_mini.so in an onnx-mini build)."
                    % (ENV, name, e)
                ) from None
    raise ImportError(
        "onnx_mini: cannot find the onnx-mini shared library (tried %s; %s is not set). %s"
        % (", ".join(tried), ENV, _HOW_TO)
    )


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


def _loaded_file(cdll, symbol):
    """The file the dynamic loader took for a loaded library (dladdr of `symbol`), or None."""
    try:
        dladdr = ctypes.CDLL(None).dladdr
        address = ctypes.cast(getattr(cdll, symbol), ctypes.c_void_p).value
    except AttributeError:
        return None
    dladdr.restype = ctypes.c_int
    dladdr.argtypes = (ctypes.c_void_p, ctypes.POINTER(_DlInfo))
    info = _DlInfo()
    if not dladdr(address, ctypes.byref(info)) or not info.dli_fname:
        return None
    name = os.fsdecode(info.dli_fname)
    return os.path.abspath(name) if os.sep in name else name


lib, _loaded_as = _load()
library_path = _loaded_file(lib, "om_version") or _loaded_as
library_version = None  # known once om_version is declared


_c = ctypes
_VP = _c.c_void_p  # every handle: om_status*, om_tensor*, om_session*, om_session_options*
_P_VP = _c.POINTER(_c.c_void_p)
_SIZE = _c.c_size_t
_P_SIZE = _c.POINTER(_c.c_size_t)
_P_I64 = _c.POINTER(_c.c_int64)


class ValueInfo(_c.Structure):
    """om_value_info."""

    _fields_ = [
        ("name", _c.c_char_p),
        ("elem_type", _c.c_int32),
        ("rank", _c.c_int64),
        ("dims", _P_I64),
        ("dim_names", _c.POINTER(_c.c_char_p)),
    ]


def _declare(name, restype, *argtypes):
    try:
        f = getattr(lib, name)
    except AttributeError:
        raise ImportError(
            "onnx_mini: %s (%s) has no function %s: it is older than the C API this package needs "
            "(%d.%d or later). %s" % (library_path, library_version, name, API_MAJOR, API_MINOR, _HOW_TO)
        ) from None
    f.restype = restype
    f.argtypes = argtypes
    return f


om_version = _declare("om_version", _c.c_char_p)
library_version = om_version().decode("ascii", "replace")
try:
    _major, _minor = (int(part) for part in library_version.split(".")[:2])
except ValueError:
    _major, _minor = -1, -1
if _major != API_MAJOR or _minor < API_MINOR:
    raise ImportError(
        "onnx_mini: %s is version %s, but this package needs the C API version %d.x, %d.%d or later. "
        "Install a matching onnx-mini (or the package that goes with this library)."
        % (library_path, library_version, API_MAJOR, API_MAJOR, API_MINOR)
    )

om_status_get_code = _declare("om_status_get_code", _c.c_int, _VP)
om_status_message = _declare("om_status_message", _c.c_char_p, _VP)
om_status_free = _declare("om_status_free", None, _VP)
om_elem_type_name = _declare("om_elem_type_name", _c.c_char_p, _c.c_int32)

om_tensor_create = _declare("om_tensor_create", _VP, _c.c_int32, _P_I64, _SIZE, _P_VP)
om_tensor_wrap = _declare("om_tensor_wrap", _VP, _c.c_int32, _P_I64, _SIZE, _VP, _SIZE, _P_VP)
om_tensor_free = _declare("om_tensor_free", None, _VP)
om_tensor_elem_type = _declare("om_tensor_elem_type", _VP, _VP, _c.POINTER(_c.c_int32))
om_tensor_shape = _declare("om_tensor_shape", _VP, _VP, _c.POINTER(_P_I64), _P_SIZE)
om_tensor_data = _declare("om_tensor_data", _VP, _VP, _P_VP)
om_tensor_byte_size = _declare("om_tensor_byte_size", _VP, _VP, _P_SIZE)

om_session_options_create = _declare("om_session_options_create", _VP, _P_VP)
om_session_options_set_intra_op_threads = _declare(
    "om_session_options_set_intra_op_threads", _VP, _VP, _c.c_int
)
om_session_options_set_memory_limit = _declare(
    "om_session_options_set_memory_limit", _VP, _VP, _c.c_uint64
)
om_session_options_set_graph_rewrites = _declare(
    "om_session_options_set_graph_rewrites", _VP, _VP, _c.c_int
)
om_session_options_add_config_entry = _declare(
    "om_session_options_add_config_entry", _VP, _VP, _c.c_char_p, _c.c_char_p
)
om_session_options_free = _declare("om_session_options_free", None, _VP)

om_run_options_create = _declare("om_run_options_create", _VP, _P_VP)
om_run_options_set_terminate = _declare("om_run_options_set_terminate", _VP, _VP, _c.c_int)
om_run_options_set_timeout_ms = _declare("om_run_options_set_timeout_ms", _VP, _VP, _c.c_int64)
om_run_options_free = _declare("om_run_options_free", None, _VP)

om_session_create = _declare("om_session_create", _VP, _c.c_char_p, _VP, _P_VP)
om_session_create_from_memory = _declare(
    "om_session_create_from_memory", _VP, _VP, _SIZE, _c.c_char_p, _VP, _P_VP
)
om_session_free = _declare("om_session_free", None, _VP)
om_session_input_count = _declare("om_session_input_count", _VP, _VP, _P_SIZE)
om_session_output_count = _declare("om_session_output_count", _VP, _VP, _P_SIZE)
om_session_input_info = _declare("om_session_input_info", _VP, _VP, _SIZE, _c.POINTER(ValueInfo))
om_session_output_info = _declare("om_session_output_info", _VP, _VP, _SIZE, _c.POINTER(ValueInfo))
om_session_input_kind = _declare("om_session_input_kind", _VP, _VP, _SIZE, _c.POINTER(_c.c_int32))
om_session_output_kind = _declare("om_session_output_kind", _VP, _VP, _SIZE, _c.POINTER(_c.c_int32))
om_value_create_tensor = _declare("om_value_create_tensor", _VP, _VP, _P_VP)
om_value_create_sequence = _declare("om_value_create_sequence", _VP, _c.c_int32, _P_VP, _SIZE, _P_VP)
om_value_create_none = _declare("om_value_create_none", _VP, _P_VP)
om_value_free = _declare("om_value_free", None, _VP)
om_value_get_kind = _declare("om_value_get_kind", _VP, _VP, _c.POINTER(_c.c_int32))
om_value_tensor_count = _declare("om_value_tensor_count", _VP, _VP, _P_SIZE)
om_value_get_tensor = _declare("om_value_get_tensor", _VP, _VP, _SIZE, _P_VP)
om_session_run_values = _declare(
    "om_session_run_values", _VP, _VP, _c.POINTER(_c.c_char_p), _P_VP, _SIZE, _c.POINTER(_c.c_char_p), _P_VP, _SIZE
)
om_session_run = _declare(
    "om_session_run",
    _VP,
    _VP,
    _c.POINTER(_c.c_char_p),
    _P_VP,
    _SIZE,
    _c.POINTER(_c.c_char_p),
    _P_VP,
    _SIZE,
)
om_session_run_with_options = _declare(
    "om_session_run_with_options",
    _VP,
    _VP,
    _VP,
    _c.POINTER(_c.c_char_p),
    _P_VP,
    _SIZE,
    _c.POINTER(_c.c_char_p),
    _P_VP,
    _SIZE,
)
om_session_run_values_with_options = _declare(
    "om_session_run_values_with_options",
    _VP,
    _VP,
    _VP,
    _c.POINTER(_c.c_char_p),
    _P_VP,
    _SIZE,
    _c.POINTER(_c.c_char_p),
    _P_VP,
    _SIZE,
)


class ModelMetadata(_c.Structure):
    """om_model_metadata (C API 0.6)."""

    _fields_ = [
        ("producer_name", _c.c_char_p),
        ("producer_version", _c.c_char_p),
        ("domain", _c.c_char_p),
        ("description", _c.c_char_p),
        ("graph_name", _c.c_char_p),
        ("graph_description", _c.c_char_p),
        ("version", _c.c_int64),
        ("custom_count", _SIZE),
        ("custom_keys", _c.POINTER(_c.c_char_p)),
        ("custom_values", _c.POINTER(_c.c_char_p)),
        ("opset_count", _SIZE),
        ("opset_domains", _c.POINTER(_c.c_char_p)),
        ("opset_versions", _P_I64),
    ]


class optional:
    """A C API function newer than API_MINOR, looked up when first used:
    calling it on a library without it raises NotImplemented (an
    OnnxMiniError) naming the function; ``available()`` says whether it is
    there."""

    _MISSING = object()

    def __init__(self, name, since, restype, *argtypes):
        self.name, self.since = name, since
        self._restype, self._argtypes = restype, argtypes
        self._f = None

    def _resolve(self):
        if self._f is None:
            f = getattr(lib, self.name, None)
            if f is None:
                self._f = self._MISSING
            else:
                f.restype, f.argtypes = self._restype, self._argtypes
                self._f = f
        return self._f

    def available(self):
        return self._resolve() is not self._MISSING

    def __call__(self, *args):
        f = self._resolve()
        if f is self._MISSING:
            raise OnnxMiniError(
                "not implemented: %s (the library %s is version %s; the C API has it since %s)"
                % (self.name, library_path, library_version, self.since),
                StatusCode.NOT_IMPLEMENTED,
            )
        return f(*args)


# Strings (0.6): the string pointers are passed as void* so that an element
# with NUL bytes keeps its length.
om_tensor_create_strings = optional(
    "om_tensor_create_strings", "0.6", _VP, _P_I64, _SIZE, _P_VP, _P_SIZE, _SIZE, _P_VP
)
om_tensor_get_string = optional("om_tensor_get_string", "0.6", _VP, _VP, _c.c_int64, _P_VP, _P_SIZE)
om_tensor_set_string = optional("om_tensor_set_string", "0.6", _VP, _VP, _c.c_int64, _VP, _SIZE)
# Metadata (0.6).
om_session_metadata = optional("om_session_metadata", "0.6", _VP, _VP, _c.POINTER(ModelMetadata))
# Profiling (0.6).
om_session_options_enable_profiling = optional(
    "om_session_options_enable_profiling", "0.6", _VP, _VP, _c.c_char_p
)
om_session_end_profiling = optional("om_session_end_profiling", "0.6", _VP, _VP, _c.POINTER(_c.c_char_p))


def check(status):
    """Raises OnnxMiniError for a non-NULL om_status* (and frees it): an
    instance of ONNX Runtime's class for its code (InvalidArgument, ...)."""
    if status is None:
        return
    try:
        code = om_status_get_code(status)
        message = om_status_message(status).decode("utf-8", "replace")
    finally:
        om_status_free(status)
    raise OnnxMiniError(message, code)


def elem_type_name(elem_type):
    """The ONNX name of an element type code ("FLOAT16"), or "UNDEFINED"."""
    return om_elem_type_name(elem_type).decode("ascii", "replace")

