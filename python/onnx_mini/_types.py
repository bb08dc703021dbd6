"""Element types: ONNX codes, ONNX Runtime's type strings, NumPy dtypes."""

import numpy as np

STRING = 8
BFLOAT16 = 16

# ONNX Runtime's NodeArg.type strings, by ONNX TensorProto.DataType code.
TYPE_STRINGS = {
    0: "tensor(undefined)",
    1: "tensor(float)",
    2: "tensor(uint8)",
    3: "tensor(int8)",
    4: "tensor(uint16)",
    5: "tensor(int16)",
    6: "tensor(int32)",
    7: "tensor(int64)",
    8: "tensor(string)",
    9: "tensor(bool)",
    10: "tensor(float16)",
    11: "tensor(double)",
    12: "tensor(uint32)",
    13: "tensor(uint64)",
    14: "tensor(complex64)",
    15: "tensor(complex128)",
    16: "tensor(bfloat16)",
    17: "tensor(float8e4m3fn)",
    18: "tensor(float8e4m3fnuz)",
    19: "tensor(float8e5m2)",
    20: "tensor(float8e5m2fnuz)",
    21: "tensor(uint4)",
    22: "tensor(int4)",
    23: "tensor(float4e2m1)",
    24: "tensor(float8e8m0)",
    25: "tensor(uint2)",
    26: "tensor(int2)",
}

# The NumPy dtype of each element type that crosses the Python API. NumPy has
# no bfloat16 nor float8: their bits travel as uint16 / uint8 arrays. String
# tensors cannot cross the C API; the packed 4- and 2-bit types have no
# one-element-per-item NumPy form.
NUMPY_DTYPES = {
    1: np.dtype(np.float32),
    2: np.dtype(np.uint8),
    3: np.dtype(np.int8),
    4: np.dtype(np.uint16),
    5: np.dtype(np.int16),
    6: np.dtype(np.int32),
    7: np.dtype(np.int64),
    9: np.dtype(np.bool_),
    10: np.dtype(np.float16),
    11: np.dtype(np.float64),
    12: np.dtype(np.uint32),
    13: np.dtype(np.uint64),
    14: np.dtype(np.complex64),
    15: np.dtype(np.complex128),
    16: np.dtype(np.uint16),  # bfloat16 bits
    17: np.dtype(np.uint8),  # float8e4m3fn bits
    18: np.dtype(np.uint8),  # float8e4m3fnuz bits
    19: np.dtype(np.uint8),  # float8e5m2 bits
    20: np.dtype(np.uint8),  # float8e5m2fnuz bits
    24: np.dtype(np.uint8),  # float8e8m0 bits
}

# The element type of a NumPy dtype, for values whose declared type is unknown.
ELEM_TYPES = {}
for _code in (1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15):
    ELEM_TYPES[NUMPY_DTYPES[_code]] = _code
del _code


# om_type_kind: what a graph input or output holds.
TENSOR, SEQUENCE, OPTIONAL_TENSOR, OPTIONAL_SEQUENCE = 0, 1, 2, 3
# om_value_kind
VALUE_TENSOR, VALUE_SEQUENCE, VALUE_NONE = 0, 1, 2


def type_string(elem_type, kind=TENSOR):
    """ONNX Runtime's type string: "tensor(float)", "seq(tensor(float))",
    "optional(tensor(float))", "optional(seq(tensor(float)))"."""
    tensor = TYPE_STRINGS.get(elem_type, "tensor(undefined)")
    if kind == SEQUENCE:
        return "seq(%s)" % tensor
    if kind == OPTIONAL_TENSOR:
        return "optional(%s)" % tensor
    if kind == OPTIONAL_SEQUENCE:
        return "optional(seq(%s))" % tensor
    return tensor


def describe(elem_type):
    """e.g. "tensor(float16) (numpy float16)" or "tensor(bfloat16) (numpy uint16 bits)"."""
    dt = NUMPY_DTYPES.get(elem_type)
    if dt is None:
        return type_string(elem_type)
    bits = elem_type in (16, 17, 18, 19, 20, 24)
    return "%s (numpy %s%s)" % (type_string(elem_type), dt.name, " bits" if bits else "")
