"""OrtValue: ONNX Runtime's value type (a tensor, a sequence of tensors, or an
empty optional) over NumPy memory."""

import numpy as np

from . import _types
from ._errors import OnnxMiniError, StatusCode

__all__ = ["OrtValue"]

_INVALID = StatusCode.INVALID_ARGUMENT
_NOT_IMPLEMENTED = StatusCode.NOT_IMPLEMENTED

_TENSOR, _SEQUENCE, _NONE = "tensor", "sequence", "none"


def _check_device(device_type, device_id):
    if not isinstance(device_type, str) or device_type.lower() != "cpu":
        raise OnnxMiniError(
            "onnx_mini runs on the CPU only: device_type must be 'cpu', not %r" % (device_type,), _NOT_IMPLEMENTED
        )
    if device_id != 0:
        raise OnnxMiniError("device_id must be 0 on the CPU, got %r" % (device_id,), _INVALID)


def is_string_dtype(dtype):
    return dtype.kind in "OUS"


def elem_type_of(element_type):
    """The ONNX element type code of a NumPy type or dtype (np.float32, "float32",
    str, object) or of an ONNX code given as an int (onnx.TensorProto.BFLOAT16)."""
    if isinstance(element_type, (int, np.integer)) and not isinstance(element_type, bool):
        code = int(element_type)
        if code != _types.STRING and code not in _types.NUMPY_DTYPES:
            raise OnnxMiniError(
                "element type %d (%s) cannot cross the Python API" % (code, _types.type_string(code)), _INVALID
            )
        return code
    try:
        dtype = np.dtype(element_type)
    except TypeError:
        raise OnnxMiniError("%r is not a numpy type nor an ONNX element type" % (element_type,), _INVALID) from None
    if is_string_dtype(dtype):
        return _types.STRING
    code = _types.ELEM_TYPES.get(dtype.newbyteorder("="))
    if code is None:
        raise OnnxMiniError("numpy %s has no onnx-mini element type" % dtype, _INVALID)
    return code


def numpy_dtype(elem_type):
    """The dtype of arrays of an element type (object for strings)."""
    if elem_type == _types.STRING:
        return np.dtype(object)
    return _types.NUMPY_DTYPES[elem_type]


class _Memory:
    """Exposes caller memory at an address (IOBinding's buffer_ptr) to NumPy,
    without owning it."""

    __slots__ = ("__array_interface__", "__weakref__")

    def __init__(self, address, shape, dtype):
        self.__array_interface__ = {"version": 3, "shape": tuple(shape), "typestr": dtype.str, "data": (address, False)}


def array_at(address, shape, elem_type, what):
    """An ndarray over `shape` elements of `elem_type` at `address` (not owned:
    the caller keeps the memory alive, as with ONNX Runtime's buffer_ptr)."""
    if elem_type == _types.STRING:
        raise OnnxMiniError("%s: string tensors cannot be bound by address" % what, _NOT_IMPLEMENTED)
    shape = [int(d) for d in shape]
    if any(d < 0 for d in shape):
        raise OnnxMiniError("%s: negative dims in shape %s" % (what, shape), _INVALID)
    if not isinstance(address, (int, np.integer)) or isinstance(address, bool) or address < 0:
        raise TypeError("%s: buffer_ptr must be an address (an int), not %r" % (what, address))
    dtype = _types.NUMPY_DTYPES[elem_type]
    count = 1
    for d in shape:
        count *= d
    if count and not address:
        raise OnnxMiniError("%s: buffer_ptr is NULL" % what, _INVALID)
    if not count:
        return np.empty(shape, dtype)
    return np.asarray(_Memory(int(address), shape, dtype))


class OrtValue:
    """ONNX Runtime's ``OrtValue``: a tensor (over a NumPy array's memory, on
    the CPU), a sequence of tensors, or an optional without a value.

    Made with ``OrtValue.ortvalue_from_numpy(array)`` (shares the array's
    memory when it is C-contiguous and aligned, else copies it),
    ``OrtValue.ortvalue_from_shape_and_type(shape, element_type)`` (new zeroed
    memory), or returned by ``run_with_ort_values`` and
    ``IOBinding.get_outputs()`` (over the runtime's result, no copy).
    ``numpy()`` returns a copy, as ONNX Runtime's does.
    """

    __slots__ = ("_kind", "_array", "_items", "_elem_type", "_numpy_obj")

    def __init__(self, ortvalue, numpy_obj=None):
        if not isinstance(ortvalue, OrtValue):
            raise ValueError(
                "OrtValue(...) takes an OrtValue; make one with OrtValue.ortvalue_from_numpy or "
                "OrtValue.ortvalue_from_shape_and_type"
            )
        self._kind = ortvalue._kind
        self._array = ortvalue._array
        self._items = ortvalue._items
        self._elem_type = ortvalue._elem_type
        self._numpy_obj = numpy_obj if numpy_obj is not None else ortvalue._numpy_obj

    @classmethod
    def _make(cls, kind, elem_type, array=None, items=None, numpy_obj=None):
        self = object.__new__(cls)
        self._kind, self._elem_type = kind, elem_type
        self._array, self._items, self._numpy_obj = array, items, numpy_obj
        return self

    @classmethod
    def _tensor(cls, array, elem_type=None):
        """Over `array` (an ndarray, kept as is)."""
        return cls._make(_TENSOR, elem_type_of(array.dtype) if elem_type is None else elem_type, array)

    @classmethod
    def _from_result(cls, value, elem_type=0):
        """An OrtValue over a run's result: an ndarray, a list of them, or None."""
        if value is None:
            return cls._make(_NONE, elem_type)
        if isinstance(value, list):
            code = elem_type or (elem_type_of(value[0].dtype) if value else 0)
            return cls._make(_SEQUENCE, code, items=value)
        return cls._tensor(value, elem_type or None)

    # ---- ONNX Runtime's factories ----

    @staticmethod
    def ortvalue_from_numpy(numpy_obj, device_type="cpu", device_id=0):
        """An OrtValue over the array's memory (a C-contiguous, aligned array of
        a supported dtype is not copied: writing one writes the other), or a
        copy of it. String arrays (str, bytes, object) are copied."""
        _check_device(device_type, device_id)
        array = numpy_obj if isinstance(numpy_obj, np.ndarray) else np.asarray(numpy_obj)
        elem_type = elem_type_of(array.dtype)
        if elem_type == _types.STRING:
            return OrtValue._tensor(np.array(array, dtype=object), _types.STRING)
        if array.dtype != array.dtype.newbyteorder("="):
            array = array.astype(array.dtype.newbyteorder("="))
        elif not (array.flags.c_contiguous and array.flags.aligned):
            array = array.copy(order="C")
        return OrtValue._make(_TENSOR, elem_type, array, numpy_obj=numpy_obj)

    @staticmethod
    def ortvalue_from_numpy_with_onnx_type(data, onnx_element_type):
        """An OrtValue over the array's memory with an ONNX element type of the
        same item size (uint16 bits as bfloat16, uint8 bits as a float8 type)."""
        array = data if isinstance(data, np.ndarray) else np.asarray(data)
        code = elem_type_of(onnx_element_type)
        if code == _types.STRING or _types.NUMPY_DTYPES[code].itemsize != array.dtype.itemsize:
            raise OnnxMiniError(
                "ortvalue_from_numpy_with_onnx_type: numpy %s cannot hold %s" % (array.dtype, _types.type_string(code)),
                _INVALID,
            )
        if not (array.flags.c_contiguous and array.flags.aligned):
            array = array.copy(order="C")
        return OrtValue._make(_TENSOR, code, array.view(_types.NUMPY_DTYPES[code]), numpy_obj=data)

    @staticmethod
    def ortvalue_from_shape_and_type(shape, element_type, device_type="cpu", device_id=0):
        """A new tensor of `shape` and `element_type` (a NumPy type, or an ONNX
        code such as onnx.TensorProto.BFLOAT16), zero-filled (empty strings)."""
        _check_device(device_type, device_id)
        code = elem_type_of(element_type)
        dims = [int(d) for d in shape]
        if any(d < 0 for d in dims):
            raise OnnxMiniError("ortvalue_from_shape_and_type: negative dims in %s" % dims, _INVALID)
        if code == _types.STRING:
            array = np.empty(dims, dtype=object)
            array.fill("")
        else:
            array = np.zeros(dims, _types.NUMPY_DTYPES[code])
        return OrtValue._make(_TENSOR, code, array)

    @staticmethod
    def ort_value_from_sparse_tensor(sparse_tensor):
        raise OnnxMiniError("not implemented: sparse tensors", _NOT_IMPLEMENTED)

    # ---- what it holds ----

    def _need_tensor(self, what):
        if self._kind != _TENSOR:
            raise OnnxMiniError("%s: the OrtValue holds %s, not a tensor" % (what, self.data_type()), _INVALID)

    def is_tensor(self):
        return self._kind == _TENSOR

    def is_tensor_sequence(self):
        return self._kind == _SEQUENCE

    def is_sparse_tensor(self):
        return False

    def has_value(self):
        """False for an optional without a value."""
        return self._kind != _NONE

    def data_type(self):
        """ONNX Runtime's type string: "tensor(float)", "seq(tensor(int64))"."""
        if self._kind == _SEQUENCE:
            return _types.type_string(self._elem_type, _types.SEQUENCE)
        if self._kind == _NONE:
            return _types.type_string(self._elem_type, _types.OPTIONAL_TENSOR)
        return _types.type_string(self._elem_type)

    def element_type(self):
        """The ONNX element type code (onnx.TensorProto.FLOAT is 1) of the tensor or sequence."""
        if self._kind == _NONE:
            raise OnnxMiniError("element_type: the OrtValue holds no value", _INVALID)
        return self._elem_type

    def shape(self):
        self._need_tensor("shape")
        return list(self._array.shape)

    def device_name(self):
        return "cpu"

    def data_ptr(self):
        """The address of the first element (0 for an empty tensor)."""
        self._need_tensor("data_ptr")
        if self._elem_type == _types.STRING:
            raise OnnxMiniError("data_ptr: a string tensor has no flat memory", _INVALID)
        if self._array.size == 0:
            return 0
        return self._array.__array_interface__["data"][0]

    def numpy(self):
        """A copy of the tensor as a NumPy array (strings: an object array of str)."""
        self._need_tensor("numpy")
        return self._array.copy()

    def update_inplace(self, np_arr):
        """Copies `np_arr` (as many elements, of the tensor's dtype) into the
        tensor's memory, which keeps its address."""
        self._need_tensor("update_inplace")
        source = np.asarray(np_arr)
        if source.size != self._array.size:
            raise OnnxMiniError(
                "update_inplace: %d elements for a tensor of %d" % (source.size, self._array.size), _INVALID
            )
        if self._elem_type == _types.STRING:
            if not is_string_dtype(source.dtype):
                raise OnnxMiniError("update_inplace: a string tensor takes strings, not %s" % source.dtype, _INVALID)
        elif source.dtype.newbyteorder("=") != self._array.dtype:
            raise OnnxMiniError(
                "update_inplace: numpy %s for a tensor of %s" % (source.dtype, _types.describe(self._elem_type)),
                _INVALID,
            )
        if not self._array.flags.writeable:
            raise OnnxMiniError("update_inplace: the tensor's memory is read-only", _INVALID)
        self._array.reshape(-1)[...] = source.reshape(-1)

    def as_sparse_tensor(self):
        raise OnnxMiniError("not implemented: sparse tensors", _NOT_IMPLEMENTED)

    def __repr__(self):
        if self._kind == _TENSOR:
            return "OrtValue(%s, shape=%s)" % (self.data_type(), list(self._array.shape))
        if self._kind == _SEQUENCE:
            return "OrtValue(%s, length=%d)" % (self.data_type(), len(self._items))
        return "OrtValue(%s, no value)" % self.data_type()

    # ---- for the session ----

    def _feed(self):
        """What run() takes for this value: an ndarray, a list of them, or None."""
        if self._kind == _TENSOR:
            return self._array
        if self._kind == _SEQUENCE:
            return list(self._items)
        return None
