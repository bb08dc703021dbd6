"""InferenceSession: ONNX Runtime's Python interface over onnx-mini's C API."""

import ctypes
import os
import threading
from collections.abc import Mapping

import numpy as np

from . import _capi
from . import _types
from ._capi import OnnxMiniError, StatusCode

__all__ = ["InferenceSession", "NodeArg"]

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


def _wrap(elem_type, array):
    """A new om_tensor over the array's memory (C-contiguous), no copy."""
    dims = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
    tensor = ctypes.c_void_p()
    _capi.check(
        _capi.om_tensor_wrap(
            elem_type, dims, array.ndim, _address(array), array.nbytes, ctypes.byref(tensor)
        )
    )
    return tensor.value


def _check_providers(providers):
    for p in providers:
        name = p[0] if isinstance(p, (tuple, list)) else p
        if name != "CPUExecutionProvider":
            raise ValueError(
                "onnx_mini runs on the CPU only: providers may only list 'CPUExecutionProvider', not %r"
                % (name,)
            )


class InferenceSession:
    """A loaded, validated and planned model, as ONNX Runtime's ``InferenceSession``.

    ``path_or_bytes`` is a model file (str or os.PathLike; external data is read
    from the model's folder) or a serialized ModelProto (bytes, bytearray,
    memoryview, or an object with ``SerializeToString()`` such as an
    ``onnx.ModelProto``), whose external data is read from ``base_dir``
    (``None`` refuses external data).

    ``threads`` is the number of threads each run uses for its kernels (ONNX
    Runtime's ``intra_op_num_threads``); 0 means all cores.

    ``providers`` is accepted for ONNX Runtime compatibility and may only name
    ``"CPUExecutionProvider"``.

    One session may run from many threads at once; the GIL is released while
    the model runs. Errors raise ``OnnxMiniError``.
    """

    def __init__(self, path_or_bytes, threads=0, base_dir=None, *, providers=None):
        self._handle = None
        self._lock = threading.Lock()
        self._active = 0
        self._closed = False
        if providers is not None:
            _check_providers(providers)
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
        if not isinstance(threads, int) or isinstance(threads, bool):
            raise TypeError("threads must be an int, not %s" % type(threads).__name__)

        options = ctypes.c_void_p()
        _capi.check(_capi.om_session_options_create(ctypes.byref(options)))
        try:
            if threads < 0 or threads > 2**31 - 1:
                raise OnnxMiniError(
                    "intra-op threads must be >= 0 (0 = all cores), got %d" % threads, _INVALID
                )
            _capi.check(_capi.om_session_options_set_intra_op_threads(options, threads))
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

    def get_providers(self):
        return ["CPUExecutionProvider"]

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
        of it when only its layout differs; an error when its dtype differs."""
        if arg.elem_type == _types.STRING:
            raise OnnxMiniError(
                "input '%s' is a string tensor: string tensors cannot cross onnx-mini's C API"
                % arg.name,
                _NOT_IMPLEMENTED,
            )
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

    def run(self, output_names, input_feed, outputs=None):
        """Runs the model and returns a list of NumPy arrays, one per name of
        ``output_names`` (``None`` or empty: every output, in model order).

        ``input_feed`` maps each graph input's name to its value. An ndarray of
        the declared dtype that is C-contiguous is read in place (no copy); one
        that is not contiguous is copied first. A different dtype is an error
        (as in ONNX Runtime): Python lists and scalars become arrays with
        NumPy's default dtypes (float64, int64, bool) and match only inputs of
        those types.

        ``outputs`` maps output names (which must be among those asked for) to
        caller arrays that the run writes into; they must be C-contiguous,
        writeable, of the output's exact dtype and shape, and are returned as
        themselves. An array that is also an input's value (a static KV
        cache: ``outputs={"present_key_0": cache}`` with
        ``input_feed["cache_key_0"] is cache``) is updated in place: an op such
        as TensorScatter writes only the new rows. On error nothing is
        written into them.
        """
        if isinstance(output_names, str):
            raise TypeError("output_names must be a list of names (or None), not a string")
        names = list(output_names) if output_names is not None else []
        for n in names:
            if not isinstance(n, str):
                raise TypeError("output names must be str, not %s" % type(n).__name__)
        if not names:
            names = self._output_names
        if not isinstance(input_feed, Mapping):
            raise TypeError("input_feed must be a dict of input name -> array, not %s" % type(input_feed).__name__)
        if outputs is None:
            outputs = {}
        elif not isinstance(outputs, Mapping):
            raise TypeError("outputs must be a dict of output name -> array, not %s" % type(outputs).__name__)

        if self._values:
            if outputs:
                raise OnnxMiniError(
                    "outputs: a model with sequence or optional values makes its own outputs", _INVALID
                )
            return self._run_values(names, input_feed)

        # Inputs: (name, array actually passed, element type).
        feeds = []
        for name, value in input_feed.items():
            arg = self._input_arg(name)
            array = self._input_array(arg, value)
            elem_type = arg.elem_type or _types.ELEM_TYPES[array.dtype]
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
                tensor = _wrap(elem_type, array)
                wrappers.append(tensor)
                in_names[i] = name.encode("utf-8")
                in_tensors[i] = tensor
                if array.nbytes:
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
            status = _capi.om_session_run(
                handle, in_names, in_tensors, n_in, out_names, out_tensors, n_out
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
            tensor = _wrap(arg.elem_type or _types.ELEM_TYPES[array.dtype], array)
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
                items[i] = _wrap(elem_type, array)
                wrappers.append((_capi.om_tensor_free, items[i]))
            _capi.check(_capi.om_value_create_sequence(elem_type, items, len(arrays), ctypes.byref(handle)))
        wrappers.append((_capi.om_value_free, handle.value))
        return handle.value

    def _run_values(self, names, input_feed):
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
            status = _capi.om_session_run_values(handle, in_names, in_values, n_in, out_names, out_values, n_out)
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
            if not fits:
                raise OnnxMiniError(
                    "%s has shape %s, but the output's shape is %s" % (where, list(array.shape), arg.shape),
                    _INVALID,
                )
        return elem_type
