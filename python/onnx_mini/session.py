"""InferenceSession, IOBinding and ModelMetadata: ONNX Runtime's Python
interface over onnx-mini's C API."""

import ctypes
import os
import threading
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from . import _capi
from . import _types
from ._errors import OnnxMiniError, StatusCode
from .options import RunOptions, SessionOptions
from .ortvalue import OrtValue, _check_device, array_at, elem_type_of, is_string_dtype

__all__ = ["InferenceSession", "IOBinding", "ModelMetadata", "NodeArg"]

PROVIDERS = ["CPUExecutionProvider"]

_INVALID = StatusCode.INVALID_ARGUMENT
_NOT_IMPLEMENTED = StatusCode.NOT_IMPLEMENTED


class NodeArg:
    """A graph input or output, as ONNX Runtime's ``NodeArg``.

    - ``name``: the value's name;
    - ``type``: ONNX Runtime's type string, e.g. ``"tensor(float)"``,
      ``"seq(tensor(float))"``, ``"optional(tensor(int64))"``;
    - ``shape``: a list with an int for each known dim, the symbolic name
      (``dim_param``) for a named dim, ``None`` for an unknown one; ``[]`` when
      even the rank is unknown (as ONNX Runtime; see ``rank``). For a
      sequence or optional, the shape of the tensors it holds.

    onnx-mini additions: ``elem_type`` (the ONNX TensorProto.DataType code),
    ``dtype`` (the NumPy dtype arrays of this value have; ``None`` for types
    that cannot cross the Python API) and ``rank`` (``None`` when unknown).
    """

    __slots__ = ("name", "type", "shape", "elem_type", "dtype", "rank", "kind")

    def __init__(self, name, elem_type, shape, rank, kind=_types.TENSOR):
        self.name = name
        self.elem_type = elem_type
        self.kind = kind  # _types.TENSOR, SEQUENCE, OPTIONAL_TENSOR or OPTIONAL_SEQUENCE
        self.type = _types.type_string(elem_type, kind)
        self.dtype = _types.NUMPY_DTYPES.get(elem_type)
        self.shape = shape
        self.rank = rank

    def __repr__(self):
        return "NodeArg(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)


def _node_arg(info, kind):
    name = info.name.decode("utf-8")
    if info.rank < 0:
        return NodeArg(name, info.elem_type, [], None, kind)
    shape = []
    for d in range(info.rank):
        size = info.dims[d]
        if size >= 0:
            shape.append(int(size))
        else:
            dim_name = info.dim_names[d]
            shape.append(dim_name.decode("utf-8") if dim_name else None)
    return NodeArg(name, info.elem_type, shape, int(info.rank), kind)


class _TensorOwner:
    """Owns an om_tensor allocated by the runtime and exposes its memory to
    NumPy: the ndarray made from it keeps it as its ``base``, so the tensor is
    freed when the last array (or view) over it goes away. No copy."""

    __slots__ = ("_tensor", "__array_interface__", "__weakref__")

    def __init__(self, tensor, shape, dtype, address):
        self._tensor = tensor
        self.__array_interface__ = {
            "version": 3,
            "shape": shape,
            "typestr": dtype.str,
            "data": (address, False),  # writeable
        }

    def __del__(self, _free=_capi.om_tensor_free):
        tensor, self._tensor = self._tensor, None
        if tensor:
            _free(tensor)


def _tensor_to_array(tensor, name):
    """An ndarray over a runtime-allocated om_tensor, which it then owns (also
    on error: the tensor is freed)."""
    owned = False
    try:
        elem_type = ctypes.c_int32()
        _capi.check(_capi.om_tensor_elem_type(tensor, ctypes.byref(elem_type)))
        if elem_type.value == _types.STRING:
            return _strings_to_array(tensor)  # a copy: the tensor is freed below
        dtype = _types.NUMPY_DTYPES.get(elem_type.value)
        if dtype is None:
            raise OnnxMiniError(
                "output '%s' is %s, which the Python API cannot return"
                % (name, _types.type_string(elem_type.value)),
                _NOT_IMPLEMENTED,
            )
        dims = ctypes.POINTER(ctypes.c_int64)()
        rank = ctypes.c_size_t()
        _capi.check(_capi.om_tensor_shape(tensor, ctypes.byref(dims), ctypes.byref(rank)))
        shape = tuple(int(dims[d]) for d in range(rank.value))
        count = 1
        for size in shape:
            count *= size
        if count == 0:
            return np.empty(shape, dtype)
        data = ctypes.c_void_p()
        _capi.check(_capi.om_tensor_data(tensor, ctypes.byref(data)))
        nbytes = ctypes.c_size_t()
        _capi.check(_capi.om_tensor_byte_size(tensor, ctypes.byref(nbytes)))
        if not data.value or nbytes.value != count * dtype.itemsize:
            raise OnnxMiniError(
                "output '%s': the runtime returned %d bytes for %s%s"
                % (name, nbytes.value, dtype.name, list(shape)),
                StatusCode.INTERNAL,
            )
        owner = _TensorOwner(tensor, shape, dtype, data.value)
        owned = True
        return np.asarray(owner)
    finally:
        if not owned:
            _capi.om_tensor_free(tensor)


def _shape_of(tensor):
    dims = ctypes.POINTER(ctypes.c_int64)()
    rank = ctypes.c_size_t()
    _capi.check(_capi.om_tensor_shape(tensor, ctypes.byref(dims), ctypes.byref(rank)))
    return tuple(int(dims[d]) for d in range(rank.value))


def _strings_to_array(tensor):
    """A NumPy object array of str copied from a string om_tensor (UTF-8;
    bytes that are not UTF-8 decode as surrogates, so they encode back to
    the same bytes with errors="surrogateescape")."""
    shape = _shape_of(tensor)
    count = 1
    for size in shape:
        count *= size
    flat = np.empty(count, dtype=object)
    data, length = ctypes.c_void_p(), ctypes.c_size_t()
    for i in range(count):
        _capi.check(_capi.om_tensor_get_string(tensor, i, ctypes.byref(data), ctypes.byref(length)))
        raw = ctypes.string_at(data.value, length.value) if length.value else b""
        flat[i] = raw.decode("utf-8", "surrogateescape")
    return flat.reshape(shape)


def _encode(item, where):
    if isinstance(item, str):
        return item.encode("utf-8", "surrogateescape")
    if isinstance(item, (bytes, bytearray, memoryview)):
        return bytes(item)
    raise OnnxMiniError("%s: a string tensor holds str or bytes, not %s" % (where, type(item).__name__), _INVALID)


def _make_strings(array, where):
    """A new string om_tensor (a copy) from an array of str, bytes or objects."""
    items = [_encode(x, where) for x in array.reshape(-1).tolist()]
    count = len(items)
    dims = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
    pointers = (ctypes.c_void_p * max(count, 1))()
    lengths = (ctypes.c_size_t * max(count, 1))()
    buffers = []  # alive until the call returns
    for i, raw in enumerate(items):
        buf = ctypes.create_string_buffer(raw, len(raw) + 1)
        buffers.append(buf)
        pointers[i] = ctypes.addressof(buf)
        lengths[i] = len(raw)
    tensor = ctypes.c_void_p()
    _capi.check(_capi.om_tensor_create_strings(dims, array.ndim, pointers, lengths, count, ctypes.byref(tensor)))
    return tensor.value


def _address(array):
    return array.__array_interface__["data"][0]


def _overlapping(arrays):
    """For arrays given as (key, array): yields (earlier_key, key) for each
    array whose memory overlaps that of one before it in address order, whose
    key comes first. Arrays that are not yielded are pairwise disjoint.
    Sorted by address: n log n, not a comparison of every pair."""
    spans = sorted(
        (_address(a), _address(a) + a.nbytes, i, key)
        for i, (key, a) in enumerate(arrays)
        if a.nbytes
    )
    end, end_key = None, None
    for start, stop, _, key in spans:
        if end is not None and start < end:
            yield end_key, key
            continue
        end, end_key = stop, key


def _wrap(elem_type, array, name="?"):
    """A new om_tensor over the array's memory (C-contiguous), no copy; a copy
    for strings (`name` for their errors)."""
    if elem_type == _types.STRING:
        return _make_strings(array, "input '%s'" % name)
    dims = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
    tensor = ctypes.c_void_p()
    _capi.check(
        _capi.om_tensor_wrap(
            elem_type, dims, array.ndim, _address(array), array.nbytes, ctypes.byref(tensor)
        )
    )
    return tensor.value


def _elem_type_of_array(array):
    return _types.STRING if is_string_dtype(array.dtype) else _types.ELEM_TYPES[array.dtype]


def _check_run_options(run_options):
    if run_options is not None and not isinstance(run_options, RunOptions):
        raise TypeError(
            "run_options must be an onnx_mini.RunOptions, not %s (bound arrays: outputs={name: array})"
            % type(run_options).__name__
        )


def _check_providers(providers, provider_options):
    """ONNX Runtime's checks of `providers` and `provider_options`; a provider
    other than the CPU's warns (as ONNX Runtime does for one it does not have)
    and is left out. Returns the CPU provider's options."""
    if providers is None:
        if provider_options is not None:
            raise ValueError("'provider_options' needs 'providers'")
        return {}
    if isinstance(providers, str) or not isinstance(providers, Sequence):
        raise ValueError("'providers' should be a sequence.")
    if provider_options is not None:
        if isinstance(provider_options, str) or not isinstance(provider_options, Sequence):
            raise ValueError("'provider_options' should be a sequence.")
        if len(providers) != len(provider_options):
            raise ValueError("'providers' and 'provider_options' should be the same length if both are given.")
        if not all(isinstance(p, str) for p in providers):
            raise ValueError("Only string values for 'providers' are supported if 'provider_options' is given.")
        if not all(isinstance(o, dict) for o in provider_options):
            raise ValueError("'provider_options' values must be dicts.")
        pairs = list(zip(providers, provider_options))
    else:
        pairs = []
        for p in providers:
            if isinstance(p, str):
                pairs.append((p, {}))
            elif isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], dict):
                pairs.append(p)
            else:
                raise ValueError("'providers' values must be either strings or (string, dict) tuples.")
    cpu = {}
    seen = set()
    for name, options in pairs:
        if name in seen:
            warnings.warn("Duplicate provider '%s' encountered, ignoring." % name, stacklevel=3)
            continue
        seen.add(name)
        if name not in PROVIDERS:
            warnings.warn(
                "Specified provider '%s' is not in available provider names. Available providers: '%s' "
                "(onnx_mini runs on the CPU)" % (name, ", ".join(PROVIDERS)),
                stacklevel=3,
            )
            continue
        cpu = {str(k): str(v) for k, v in options.items()}
    return cpu


class ModelMetadata:
    """ONNX Runtime's ``ModelMetadata`` (``InferenceSession.get_modelmeta()``):
    ``producer_name``, ``graph_name``, ``domain``, ``description`` (the model's
    doc_string), ``graph_description`` (the graph's doc_string), ``version``
    (model_version), ``custom_metadata_map`` (metadata_props, a dict); and
    onnx-mini's ``producer_version`` and ``opset_imports`` (domain -> version,
    "" for ai.onnx)."""

    __slots__ = (
        "producer_name",
        "producer_version",
        "graph_name",
        "domain",
        "description",
        "graph_description",
        "version",
        "custom_metadata_map",
        "opset_imports",
    )

    def __init__(self, meta):
        def text(p):
            return p.decode("utf-8", "replace") if p else ""

        self.producer_name = text(meta.producer_name)
        self.producer_version = text(meta.producer_version)
        self.graph_name = text(meta.graph_name)
        self.domain = text(meta.domain)
        self.description = text(meta.description)
        self.graph_description = text(meta.graph_description)
        self.version = int(meta.version)
        self.custom_metadata_map = {
            text(meta.custom_keys[i]): text(meta.custom_values[i]) for i in range(meta.custom_count)
        }
        self.opset_imports = {text(meta.opset_domains[i]): int(meta.opset_versions[i]) for i in range(meta.opset_count)}

    def __repr__(self):
        return "ModelMetadata(producer_name=%r, graph_name=%r, domain=%r, version=%d, custom_metadata_map=%r)" % (
            self.producer_name,
            self.graph_name,
            self.domain,
            self.version,
            self.custom_metadata_map,
        )


class InferenceSession:
    """A loaded, validated and planned model, as ONNX Runtime's ``InferenceSession``.

    ``InferenceSession(path_or_bytes, sess_options=None, providers=None,
    provider_options=None)``:

    - ``path_or_bytes`` is a model file (str or os.PathLike; external data is
      read from the model's folder) or a serialized ModelProto (bytes,
      bytearray, memoryview, or an object with ``SerializeToString()`` such as
      an ``onnx.ModelProto``), whose external data is read from ``base_dir``
      (``None`` refuses external data);
    - ``sess_options``: a ``SessionOptions`` (threads, graph optimization
      level, profiling, config entries), copied;
    - ``providers`` / ``provider_options``: checked as ONNX Runtime checks
      them; ``"CPUExecutionProvider"`` is the only one, others warn and are
      left out (ONNX Runtime's fallback to the CPU).

    onnx-mini's own keywords: ``threads`` (the kernels' threads per run,
    overriding ``sess_options.intra_op_num_threads``; 0 means all cores) and
    ``base_dir``. ONNX Runtime's ``disabled_optimizers`` and
    ``read_config_from_model`` keywords are accepted and ignored.

    One session may run from many threads at once; the GIL is released while
    the model runs. Errors raise ONNX Runtime's exception classes (all
    ``OnnxMiniError``, a ``RuntimeError``).
    """

    _IGNORED_KWARGS = ("disabled_optimizers", "read_config_from_model")

    def __init__(
        self,
        path_or_bytes,
        sess_options=None,
        providers=None,
        provider_options=None,
        *,
        threads=None,
        base_dir=None,
        **kwargs,
    ):
        self._handle = None
        self._lock = threading.Lock()
        self._active = 0
        self._closed = False
        self._metadata = None
        for key in kwargs:
            if key not in self._IGNORED_KWARGS:
                raise TypeError("InferenceSession() got an unexpected keyword argument %r" % key)
        if sess_options is None:
            sess_options = SessionOptions()
        elif not isinstance(sess_options, SessionOptions):
            raise TypeError(
                "sess_options must be an onnx_mini.SessionOptions, not %s (the kernels' threads: threads=N)"
                % type(sess_options).__name__
            )
        self._provider_options = {PROVIDERS[0]: _check_providers(providers, provider_options)}
        if isinstance(path_or_bytes, (str, os.PathLike)):
            if base_dir is not None:
                raise ValueError(
                    "base_dir applies to a model given as bytes; a model file reads its external "
                    "data from its own folder"
                )
            model_path, model_bytes = os.fsencode(os.fspath(path_or_bytes)), None
        elif isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            model_path, model_bytes = None, bytes(path_or_bytes)
        elif callable(getattr(path_or_bytes, "SerializeToString", None)):
            model_path, model_bytes = None, path_or_bytes.SerializeToString()
        else:
            raise TypeError(
                "InferenceSession needs a model path or the model's bytes, not %s"
                % type(path_or_bytes).__name__
            )
        if threads is not None:
            if not isinstance(threads, int) or isinstance(threads, bool):
                raise TypeError("threads must be an int, not %s" % type(threads).__name__)
            if threads < 0 or threads > 2**31 - 1:
                raise OnnxMiniError(
                    "intra-op threads must be >= 0 (0 = all cores), got %d" % threads, _INVALID
                )
        self._sess_options = sess_options._copy()
        if threads is not None:
            self._sess_options.intra_op_num_threads = threads

        options = self._sess_options._make()
        try:
            handle = ctypes.c_void_p()
            if model_path is not None:
                status = _capi.om_session_create(model_path, options, ctypes.byref(handle))
            else:
                folder = None if base_dir is None else os.fsencode(os.fspath(base_dir))
                status = _capi.om_session_create_from_memory(
                    model_bytes, len(model_bytes), folder, options, ctypes.byref(handle)
                )
            _capi.check(status)
            self._handle = handle.value
        finally:
            _capi.om_session_options_free(options)
        self._profiling = self._sess_options.enable_profiling

        self._inputs = self._infos(
            _capi.om_session_input_count, _capi.om_session_input_info, _capi.om_session_input_kind
        )
        self._outputs = self._infos(
            _capi.om_session_output_count, _capi.om_session_output_info, _capi.om_session_output_kind
        )
        # Sequences or optionals anywhere: runs go through om_session_run_values.
        self._values = any(a.kind != _types.TENSOR for a in self._inputs + self._outputs)
        self._input_by_name = {a.name: a for a in self._inputs}
        self._output_by_name = {a.name: a for a in self._outputs}
        self._output_names = [a.name for a in self._outputs]

    def _infos(self, count_fn, info_fn, kind_fn):
        count = ctypes.c_size_t()
        _capi.check(count_fn(self._handle, ctypes.byref(count)))
        result = []
        for i in range(count.value):
            info = _capi.ValueInfo()
            _capi.check(info_fn(self._handle, i, ctypes.byref(info)))
            kind = ctypes.c_int()
            _capi.check(kind_fn(self._handle, i, ctypes.byref(kind)))
            result.append(_node_arg(info, kind.value))
        return result

    # ---- introspection ----

    def get_inputs(self):
        """The graph inputs (initializers excluded), as NodeArgs, in model order."""
        return list(self._inputs)

    def get_outputs(self):
        """The graph outputs, as NodeArgs, in model order."""
        return list(self._outputs)

    def get_overridable_initializers(self):
        """Always empty: onnx-mini treats initializers as constants (it folds
        and packs them at creation), so a run cannot override them."""
        return []

    def get_providers(self):
        return list(PROVIDERS)

    def get_provider_options(self):
        """The options given for the CPU provider (str -> str; unused)."""
        return {k: dict(v) for k, v in self._provider_options.items()}

    def set_providers(self, providers=None, provider_options=None):
        """ONNX Runtime's set_providers: onnx-mini has only the CPU's, so this
        checks the arguments (warning about other providers) and keeps the session."""
        self._provider_options = {PROVIDERS[0]: _check_providers(providers, provider_options)}

    def disable_fallback(self):
        """Accepted (nothing to fall back from)."""

    def enable_fallback(self):
        """Accepted (nothing to fall back from)."""

    def get_session_options(self):
        """A copy of the SessionOptions the session was made with."""
        return self._sess_options._copy()

    def get_modelmeta(self):
        """The model's ModelMetadata (producer, graph name, doc strings,
        custom metadata map). Needs C API 0.6 (om_session_metadata)."""
        if self._metadata is None:
            meta = _capi.ModelMetadata()
            handle = self._acquire()
            try:
                _capi.check(_capi.om_session_metadata(handle, ctypes.byref(meta)))
                self._metadata = ModelMetadata(meta)
            finally:
                self._release()
        return self._metadata

    def end_profiling(self):
        """Writes the trace of the runs since the session was made (or since
        the last end_profiling: unlike ONNX Runtime, recording goes on) as a
        JSON file of Chrome trace events in ONNX Runtime's profile format and
        returns its path; "" when profiling is off (as ONNX Runtime)."""
        if not self._profiling:
            return ""
        path = ctypes.c_char_p()
        handle = self._acquire()
        try:
            _capi.check(_capi.om_session_end_profiling(handle, ctypes.byref(path)))
            return os.fsdecode(path.value) if path.value else ""
        finally:
            self._release()

    def io_binding(self):
        """A new IOBinding over this session (``run_with_iobinding``)."""
        return IOBinding(self)

    # ---- lifetime ----

    def close(self):
        """Frees the session now (it is freed when garbage-collected anyway).
        Runs in progress in other threads finish first; later runs raise."""
        with self._lock:
            self._closed = True
            if self._active or self._handle is None:
                return
            handle, self._handle = self._handle, None
        _capi.om_session_free(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self, _free=_capi.om_session_free):
        handle = getattr(self, "_handle", None)
        if handle:
            self._handle = None
            _free(handle)

    def _acquire(self):
        with self._lock:
            if self._closed:
                raise OnnxMiniError("the session is closed", _INVALID)
            self._active += 1
            return self._handle

    def _release(self):
        with self._lock:
            self._active -= 1
            if not (self._closed and self._active == 0 and self._handle):
                return
            handle, self._handle = self._handle, None
        _capi.om_session_free(handle)

    # ---- running ----

    def _input_arg(self, name):
        """The NodeArg of input `name`; an error naming the inputs if there is none."""
        arg = self._input_by_name.get(name)
        if arg is None:
            raise OnnxMiniError(
                "'%s' is not an input of the model (its inputs: %s)"
                % (name, ", ".join(a.name for a in self._inputs) or "none"),
                _INVALID,
            )
        return arg

    def _input_array(self, arg, value):
        """The array passed for input `arg`: `value` itself when it is a
        C-contiguous, aligned ndarray of the declared dtype; a contiguous copy
        of it when only its layout differs; an error when its dtype differs.
        A string input takes an array of str, bytes or objects (copied when
        the run starts)."""
        if arg.elem_type == _types.STRING or (
            arg.elem_type == 0 and is_string_dtype(np.asarray(value).dtype) and not isinstance(value, list)
        ):
            array = value if isinstance(value, np.ndarray) else np.asarray(value, dtype=object)
            if not is_string_dtype(array.dtype):
                raise OnnxMiniError(
                    "input '%s' must be %s (numpy str, bytes or object), got numpy %s"
                    % (arg.name, _types.type_string(_types.STRING), array.dtype),
                    _INVALID,
                )
            return array
        if arg.elem_type != 0 and arg.dtype is None:
            raise OnnxMiniError(
                "input '%s' is %s, which the Python API cannot pass (packed 4- and 2-bit types)"
                % (arg.name, arg.type),
                _NOT_IMPLEMENTED,
            )
        array = value if isinstance(value, np.ndarray) else np.asarray(value)
        expected = arg.dtype
        if expected is None:  # type unknown before running: any supported dtype
            expected = array.dtype.newbyteorder("=")
            if expected not in _types.ELEM_TYPES:
                raise OnnxMiniError(
                    "input '%s': numpy %s has no onnx-mini element type" % (arg.name, array.dtype),
                    _INVALID,
                )
        if array.dtype != expected:
            if array.dtype.newbyteorder("=") != expected:
                raise OnnxMiniError(
                    "input '%s' must be %s, got numpy %s" % (arg.name, _types.describe(arg.elem_type), array.dtype),
                    _INVALID,
                )
            array = np.ascontiguousarray(array, dtype=expected)  # native byte order: a copy
        elif not (array.flags.c_contiguous and array.flags.aligned):
            # A copy (ascontiguousarray would keep a contiguous array that
            # is not aligned, which the C API refuses).
            array = array.copy(order="C")
        return array

    def run(self, output_names, input_feed, run_options=None, outputs=None):
        """Runs the model and returns a list of NumPy arrays, one per name of
        ``output_names`` (``None`` or empty: every output, in model order).

        ``input_feed`` maps each graph input's name to its value (an array or
        an OrtValue). An ndarray of the declared dtype that is C-contiguous is
        read in place (no copy); one that is not contiguous is copied first. A
        different dtype is an error (as in ONNX Runtime): Python lists and
        scalars become arrays with NumPy's default dtypes (float64, int64,
        bool) and match only inputs of those types. String inputs take arrays
        of str, bytes or objects; string outputs are object arrays of str.

        ``run_options``: a RunOptions (its ``terminate`` stops the run, which
        raises ``Fail``).

        ``outputs`` (onnx-mini's) maps output names (which must be among those
        asked for) to caller arrays that the run writes into; they must be
        C-contiguous, writeable, of the output's exact dtype and shape, and are
        returned as themselves. An array that is also an input's value (a
        static KV cache: ``outputs={"present_key_0": cache}`` with
        ``input_feed["cache_key_0"] is cache``) is updated in place: an op such
        as TensorScatter writes only the new rows. On error nothing is
        written into them.
        """
        names = self._output_list(output_names)
        if not isinstance(input_feed, Mapping):
            raise TypeError("input_feed must be a dict of input name -> array, not %s" % type(input_feed).__name__)
        _check_run_options(run_options)
        if outputs is None:
            outputs = {}
        elif not isinstance(outputs, Mapping):
            raise TypeError("outputs must be a dict of output name -> array, not %s" % type(outputs).__name__)
        feed = {name: (v._feed() if isinstance(v, OrtValue) else v) for name, v in input_feed.items()}
        for name, value in input_feed.items():
            if isinstance(value, OrtValue):
                self._check_ortvalue(name, value)
        return self._run(names, feed, outputs, run_options)

    def run_async(self, output_names, input_feed, callback, user_data, run_options=None):
        """onnxruntime's run_async: runs on another thread, then calls
        ``callback(results, user_data, err)`` there: the list of arrays and
        "" on success, None and the error's message on failure. Arguments
        are checked before it returns."""
        if not callable(callback):
            raise TypeError("callback must be callable")
        names = self._output_list(output_names)
        if not isinstance(input_feed, Mapping):
            raise TypeError("input_feed must be a dict of input name -> array, not %s" % type(input_feed).__name__)
        _check_run_options(run_options)
        feed = dict(input_feed)

        def work():
            try:
                results = self.run(names, feed, run_options)
            except Exception as e:  # reported to the callback, as onnxruntime's status string
                callback(None, user_data, str(e))
                return
            callback(results, user_data, "")

        threading.Thread(target=work, name="onnx_mini.run_async", daemon=True).start()

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None):
        """run() with OrtValues: ``input_dict_ort_values`` maps input names to
        OrtValues (arrays are taken too) and the result is a list of
        OrtValues, over the runtime's results (no copy)."""
        names = self._output_list(output_names)
        if not isinstance(input_dict_ort_values, Mapping):
            raise TypeError(
                "input_dict_ort_values must be a dict of input name -> OrtValue, not %s"
                % type(input_dict_ort_values).__name__
            )
        _check_run_options(run_options)
        feed = {}
        for name, value in input_dict_ort_values.items():
            if isinstance(value, OrtValue):
                self._check_ortvalue(name, value)
                value = value._feed()
            feed[name] = value
        results = self._run(names, feed, {}, run_options)
        return [OrtValue._from_result(r, self._output_by_name[n].elem_type) for n, r in zip(names, results)]

    def run_with_iobinding(self, iobinding, run_options=None):
        """Runs with the inputs and outputs bound in ``iobinding`` (see
        IOBinding); the outputs are then ``iobinding.get_outputs()``."""
        if not isinstance(iobinding, IOBinding):
            raise TypeError("run_with_iobinding takes an IOBinding, not %s" % type(iobinding).__name__)
        if iobinding._session is not self:
            raise OnnxMiniError("the IOBinding belongs to another session", _INVALID)
        _check_run_options(run_options)
        iobinding._run(run_options)

    def _output_list(self, output_names):
        if isinstance(output_names, str):
            raise TypeError("output_names must be a list of names (or None), not a string")
        names = list(output_names) if output_names is not None else []
        for n in names:
            if not isinstance(n, str):
                raise TypeError("output names must be str, not %s" % type(n).__name__)
        return names or list(self._output_names)

    def _check_ortvalue(self, name, value):
        """An OrtValue's element type against the input's (uint16 bits are not bfloat16)."""
        arg = self._input_by_name.get(name)
        if arg is None or not value.has_value() or not arg.elem_type:
            return
        if value._elem_type and value._elem_type != arg.elem_type:
            raise OnnxMiniError(
                "input '%s' is %s, got an OrtValue of %s" % (name, arg.type, value.data_type()), _INVALID
            )

    def _run(self, names, input_feed, outputs, run_options):
        """A run: `names` the outputs asked for, `input_feed` name -> array (a
        list or None for sequences and optionals), `outputs` name -> caller
        array written in place, `run_options` a RunOptions or None."""
        options = run_options._handle if run_options is not None else None
        if self._values:
            if outputs:
                raise OnnxMiniError(
                    "outputs: a model with sequence or optional values makes its own outputs", _INVALID
                )
            return self._run_values(names, input_feed, options)

        # Inputs: (name, array actually passed, element type).
        feeds = []
        for name, value in input_feed.items():
            arg = self._input_arg(name)
            array = self._input_array(arg, value)
            elem_type = arg.elem_type or _elem_type_of_array(array)
            feeds.append((name, array, elem_type))

        # Bound outputs: checked before anything runs.
        asked = set(names)
        bound = {}
        for name, array in outputs.items():
            arg = self._output_by_name.get(name)
            if arg is None:
                raise OnnxMiniError(
                    "outputs: '%s' is not an output of the model (its outputs: %s)"
                    % (name, ", ".join(self._output_names)),
                    _INVALID,
                )
            if name not in asked:
                raise OnnxMiniError(
                    "outputs: '%s' is bound but not among the output names asked for" % name, _INVALID
                )
            bound[name] = (array, self._check_bound(arg, array))
        for a_name, b_name in _overlapping([(name, array) for name, (array, _) in bound.items()]):
            raise OnnxMiniError(
                "outputs '%s' and '%s' are bound to overlapping memory" % (a_name, b_name),
                _INVALID,
            )

        handle = self._acquire()
        wrappers = []  # every om_tensor this call wraps, freed at the end
        try:
            n_in, n_out = len(feeds), len(names)
            in_names = (ctypes.c_char_p * max(n_in, 1))()
            in_tensors = (ctypes.c_void_p * max(n_in, 1))()
            by_memory = {}  # (address, shape, elem type) -> the wrapper of an input
            for i, (name, array, elem_type) in enumerate(feeds):
                tensor = _wrap(elem_type, array, name)
                wrappers.append(tensor)
                in_names[i] = name.encode("utf-8")
                in_tensors[i] = tensor
                if array.nbytes and elem_type != _types.STRING:
                    by_memory.setdefault((_address(array), array.shape, elem_type), tensor)
            out_names = (ctypes.c_char_p * max(n_out, 1))()
            out_tensors = (ctypes.c_void_p * max(n_out, 1))()
            bound_tensor = {}
            for k, name in enumerate(names):
                out_names[k] = name.encode("utf-8")
                if name in bound and name not in bound_tensor:
                    array, elem_type = bound[name]
                    # The very memory of an input (a cache updated in place):
                    # the same om_tensor in both places.
                    tensor = by_memory.get((_address(array), array.shape, elem_type)) if array.nbytes else None
                    if tensor is None:
                        tensor = _wrap(elem_type, array)
                        wrappers.append(tensor)
                    bound_tensor[name] = tensor
                if name in bound:
                    out_tensors[k] = bound_tensor[name]
            status = _capi.om_session_run_with_options(
                handle, options, in_names, in_tensors, n_in, out_names, out_tensors, n_out
            )
            # Take what the runtime allocated before looking at the status.
            fresh = [
                None if name in bound else out_tensors[k] for k, name in enumerate(names)
            ]
            if status is not None:
                for t in fresh:
                    if t:
                        _capi.om_tensor_free(t)
                _capi.check(status)
        finally:
            for t in wrappers:
                _capi.om_tensor_free(t)
            self._release()

        results = []
        try:
            for k, name in enumerate(names):
                if name in bound:
                    results.append(bound[name][0])
                    continue
                tensor, fresh[k] = fresh[k], None
                if not tensor:
                    raise OnnxMiniError("the runtime returned no '%s'" % name, StatusCode.INTERNAL)
                results.append(_tensor_to_array(tensor, name))
        except BaseException:
            for t in fresh:
                if t:
                    _capi.om_tensor_free(t)
            raise
        # Two outputs over one buffer (e.g. y and Identity(y)): give each
        # caller array its own memory, as ONNX Runtime does.
        fresh_arrays = [(k, results[k]) for k, name in enumerate(names) if name not in bound]
        for _, k in list(_overlapping(fresh_arrays)):
            results[k] = results[k].copy()
        return results

    def _value(self, arg, value, wrappers, keep):
        """A new om_value (added to `wrappers`) for input `arg`: an array for a
        tensor, a list of arrays for a sequence, None for an empty optional.
        The arrays wrapped (copies, when the caller's are not contiguous) go
        to `keep`: their memory must outlive the run."""
        kind = arg.kind
        if kind in (_types.OPTIONAL_TENSOR, _types.OPTIONAL_SEQUENCE):
            if value is None:
                handle = ctypes.c_void_p()
                _capi.check(_capi.om_value_create_none(ctypes.byref(handle)))
                wrappers.append((_capi.om_value_free, handle.value))
                return handle.value
            kind = _types.TENSOR if kind == _types.OPTIONAL_TENSOR else _types.SEQUENCE
        handle = ctypes.c_void_p()
        if kind == _types.TENSOR:
            array = self._input_array(arg, value)
            keep.append(array)
            tensor = _wrap(arg.elem_type or _elem_type_of_array(array), array, arg.name)
            wrappers.append((_capi.om_tensor_free, tensor))
            _capi.check(_capi.om_value_create_tensor(tensor, ctypes.byref(handle)))
        else:
            if isinstance(value, np.ndarray) or not isinstance(value, (list, tuple)):
                raise OnnxMiniError(
                    "input '%s' is %s: give a list of arrays, not %s" % (arg.name, arg.type, type(value).__name__),
                    _INVALID,
                )
            arrays = [self._input_array(arg, item) for item in value]
            keep.extend(arrays)
            elem_type = arg.elem_type or (_types.ELEM_TYPES[arrays[0].dtype] if arrays else 1)
            for array in arrays:
                if _types.ELEM_TYPES.get(array.dtype, elem_type) != elem_type:
                    raise OnnxMiniError(
                        "input '%s': the items of a sequence have one dtype, not %s and %s"
                        % (arg.name, arrays[0].dtype, array.dtype),
                        _INVALID,
                    )
            items = (ctypes.c_void_p * max(len(arrays), 1))()
            for i, array in enumerate(arrays):
                items[i] = _wrap(elem_type, array, arg.name)
                wrappers.append((_capi.om_tensor_free, items[i]))
            _capi.check(_capi.om_value_create_sequence(elem_type, items, len(arrays), ctypes.byref(handle)))
        wrappers.append((_capi.om_value_free, handle.value))
        return handle.value

    def _run_values(self, names, input_feed, options=None):
        """run() for models with sequence or optional values: sequences come
        back as lists of arrays, an empty optional as None."""
        feeds = list(input_feed)
        for name in feeds:
            self._input_arg(name)
        handle = self._acquire()
        wrappers = []  # (free function, handle) of everything this call makes
        keep = []  # the input arrays wrapped, alive until the run is over
        try:
            n_in, n_out = len(feeds), len(names)
            in_names = (ctypes.c_char_p * max(n_in, 1))()
            in_values = (ctypes.c_void_p * max(n_in, 1))()
            for i, name in enumerate(feeds):
                in_names[i] = name.encode("utf-8")
                in_values[i] = self._value(self._input_by_name[name], input_feed[name], wrappers, keep)
            out_names = (ctypes.c_char_p * max(n_out, 1))()
            out_values = (ctypes.c_void_p * max(n_out, 1))()
            for k, name in enumerate(names):
                out_names[k] = name.encode("utf-8")
            status = _capi.om_session_run_values_with_options(
                handle, options, in_names, in_values, n_in, out_names, out_values, n_out
            )
            for k in range(n_out):
                if out_values[k]:
                    wrappers.append((_capi.om_value_free, out_values[k]))
            _capi.check(status)
            results = [self._value_to_python(out_values[k], name) for k, name in enumerate(names)]
        finally:
            for free, h in reversed(wrappers):
                free(h)
            self._release()
        # Outputs over one buffer (y and Identity(y)): each gets its own memory,
        # as ONNX Runtime does.
        arrays = []  # ((k, j), array): j the item of a sequence, None for a tensor
        for k, result in enumerate(results):
            if isinstance(result, list):
                arrays.extend(((k, j), array) for j, array in enumerate(result))
            elif result is not None:
                arrays.append(((k, None), result))
        for _, (k, j) in list(_overlapping(arrays)):
            if j is None:
                results[k] = results[k].copy()
            else:
                results[k][j] = results[k][j].copy()
        return results


    @staticmethod
    def _value_to_python(value, name):
        kind, count = ctypes.c_int(), ctypes.c_size_t()
        _capi.check(_capi.om_value_get_kind(value, ctypes.byref(kind)))
        _capi.check(_capi.om_value_tensor_count(value, ctypes.byref(count)))
        arrays = []
        for i in range(count.value):
            tensor = ctypes.c_void_p()
            _capi.check(_capi.om_value_get_tensor(value, i, ctypes.byref(tensor)))
            arrays.append(_tensor_to_array(tensor.value, name))
        if kind.value == _types.VALUE_NONE:
            return None
        return arrays if kind.value == _types.VALUE_SEQUENCE else arrays[0]

    def _check_bound(self, arg, array):
        """Checks a caller's output array; returns its element type."""
        where = "outputs['%s']" % arg.name
        if not isinstance(array, np.ndarray):
            raise TypeError("%s must be a numpy array, not %s" % (where, type(array).__name__))
        if arg.elem_type == _types.STRING or (arg.elem_type != 0 and arg.dtype is None):
            raise OnnxMiniError(
                "%s: %s outputs cannot be bound from Python" % (where, arg.type), _NOT_IMPLEMENTED
            )
        if arg.elem_type == 0:
            elem_type = _types.ELEM_TYPES.get(array.dtype)
            if elem_type is None:
                raise OnnxMiniError("%s: numpy %s has no onnx-mini element type" % (where, array.dtype), _INVALID)
        else:
            elem_type = arg.elem_type
            if array.dtype != arg.dtype:
                raise OnnxMiniError(
                    "%s must be %s, got numpy %s" % (where, _types.describe(arg.elem_type), array.dtype),
                    _INVALID,
                )
        if not array.flags.c_contiguous:
            raise OnnxMiniError("%s must be C-contiguous (the runtime writes it in place)" % where, _INVALID)
        if not array.flags.writeable:
            raise OnnxMiniError("%s is read-only" % where, _INVALID)
        if not array.flags.aligned:
            raise OnnxMiniError("%s is not aligned to its dtype" % where, _INVALID)
        if arg.rank is not None:
            fits = array.ndim == arg.rank and all(
                not isinstance(want, int) or want == got for want, got in zip(arg.shape, array.shape)
            )
            # A declared scalar computed from a scalar input given as [1] is [1] (as in onnxruntime).
            fits = fits or (arg.rank == 0 and array.shape == (1,))
            if not fits:
                raise OnnxMiniError(
                    "%s has shape %s, but the output's shape is %s" % (where, list(array.shape), arg.shape),
                    _INVALID,
                )
        return elem_type


class IOBinding:
    """ONNX Runtime's ``IOBinding`` (``session.io_binding()``): inputs and
    outputs bound once, then ``session.run_with_iobinding(binding)``.

    - ``bind_cpu_input(name, array)``: the array, read in place at each run
      (the binding keeps a reference);
    - ``bind_input(name, device_type, device_id, element_type, shape, buffer_ptr)``:
      memory at an address (``device_type`` "cpu"), which the caller keeps alive;
    - ``bind_ortvalue_input(name, ortvalue)``;
    - ``bind_output(name)`` (or with ``device_type`` "cpu"): the runtime
      allocates the output at each run; ``bind_output(name, "cpu", 0,
      element_type, shape, buffer_ptr)``: the run writes into that memory;
    - ``bind_ortvalue_output(name, ortvalue)``: the run writes into the OrtValue;
    - ``get_outputs()``: the outputs as OrtValues, in the order bound;
      ``copy_outputs_to_cpu()``: copies of them as NumPy arrays.

    An output bound to the very memory of an input (the same address, shape
    and element type: a static KV cache) is updated in place, as with
    ``run(..., outputs=)``. ``synchronize_inputs`` / ``synchronize_outputs``
    do nothing (the CPU needs no synchronization).
    """

    def __init__(self, session):
        if not isinstance(session, InferenceSession):
            raise TypeError("IOBinding takes an InferenceSession, not %s" % type(session).__name__)
        self._session = session
        self._inputs = {}  # name -> array, list or None (what run() takes)
        self._outputs = {}  # name -> OrtValue written into, or None (the runtime allocates)
        self._results = {}  # name -> OrtValue of the last run's result

    def _input_name(self, name):
        if not isinstance(name, str):
            raise TypeError("input names are str, not %s" % type(name).__name__)
        self._session._input_arg(name)
        return name

    def _output_name(self, name):
        if not isinstance(name, str):
            raise TypeError("output names are str, not %s" % type(name).__name__)
        if name not in self._session._output_by_name:
            raise OnnxMiniError(
                "'%s' is not an output of the model (its outputs: %s)"
                % (name, ", ".join(self._session._output_names)),
                _INVALID,
            )
        return name

    # ---- inputs ----

    def bind_cpu_input(self, name, arr_on_cpu):
        self._inputs[self._input_name(name)] = arr_on_cpu

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        _check_device(device_type, device_id)
        name = self._input_name(name)
        self._inputs[name] = array_at(buffer_ptr, shape, elem_type_of(element_type), "bind_input('%s')" % name)

    def bind_ortvalue_input(self, name, ortvalue):
        name = self._input_name(name)
        if not isinstance(ortvalue, OrtValue):
            raise TypeError("bind_ortvalue_input takes an OrtValue, not %s" % type(ortvalue).__name__)
        self._session._check_ortvalue(name, ortvalue)
        self._inputs[name] = ortvalue._feed()

    def synchronize_inputs(self):
        pass

    def clear_binding_inputs(self):
        self._inputs = {}

    # ---- outputs ----

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        _check_device(device_type, device_id)
        name = self._output_name(name)
        if buffer_ptr is None:
            self._outputs[name] = None
        else:
            if element_type is None or shape is None:
                raise ValueError("`element_type` and `shape` are to be provided if pre-allocated memory is provided")
            code = elem_type_of(element_type)
            array = array_at(buffer_ptr, shape, code, "bind_output('%s')" % name)
            self._outputs[name] = OrtValue._tensor(array, code)
        self._results.pop(name, None)

    def bind_ortvalue_output(self, name, ortvalue):
        name = self._output_name(name)
        if not isinstance(ortvalue, OrtValue):
            raise TypeError("bind_ortvalue_output takes an OrtValue, not %s" % type(ortvalue).__name__)
        if not ortvalue.is_tensor():
            raise OnnxMiniError("bind_ortvalue_output('%s'): only a tensor can be written into" % name, _INVALID)
        self._outputs[name] = ortvalue
        self._results.pop(name, None)

    def synchronize_outputs(self):
        pass

    def clear_binding_outputs(self):
        self._outputs = {}
        self._results = {}

    def get_outputs(self):
        """The bound outputs as OrtValues, in the order bound: the last run's
        results (an output bound to memory: that memory's OrtValue)."""
        values = []
        for name, bound in self._outputs.items():
            if bound is not None:
                values.append(bound)
            elif name in self._results:
                values.append(self._results[name])
            else:  # not run yet
                values.append(OrtValue._from_result(None, self._session._output_by_name[name].elem_type))
        return values

    get_outputs_as_ortvaluevector = get_outputs

    def copy_outputs_to_cpu(self):
        """Copies of the outputs as NumPy arrays (lists of arrays for sequences, None for an empty optional)."""
        result = []
        for value in self.get_outputs():
            if value.is_tensor():
                result.append(value.numpy())
            elif value.is_tensor_sequence():
                result.append([a.copy() for a in value._items])
            else:
                result.append(None)
        return result

    def _run(self, run_options):
        if not self._outputs:
            raise OnnxMiniError("run_with_iobinding: no output is bound (bind_output)", _INVALID)
        names = list(self._outputs)
        written = {name: v._array for name, v in self._outputs.items() if v is not None}
        results = self._session._run(names, dict(self._inputs), written, run_options)
        for name, result in zip(names, results):
            if self._outputs[name] is None:
                self._results[name] = OrtValue._from_result(result, self._session._output_by_name[name].elem_type)
