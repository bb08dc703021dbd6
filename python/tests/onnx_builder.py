"""A minimal writer of ONNX models (serialized ModelProto bytes) for the tests.

It writes the few messages the tests need with the official field numbers of
onnx.proto, so that the tests of the package itself need only NumPy (the
`onnx` package is needed by the backend tests alone).
"""

import struct

import numpy as np

# TensorProto.DataType codes.
FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, STRING, BOOL, FLOAT16, DOUBLE = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11
UINT32, UINT64, COMPLEX64, COMPLEX128, BFLOAT16 = 12, 13, 14, 15, 16


def _varint(n):
    n &= (1 << 64) - 1  # negative int64: two's complement, 10 bytes
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field, wire):
    return _varint(field << 3 | wire)


def _int(field, value):
    return _key(field, 0) + _varint(int(value))


def _bytes(field, payload):
    return _key(field, 2) + _varint(len(payload)) + payload


def _str(field, text):
    return _bytes(field, text.encode("utf-8"))


def _float(field, value):
    return _key(field, 5) + struct.pack("<f", value)


def value_info(name, elem_type, shape):
    """ValueInfoProto. shape: None (unknown rank) or a list of int (dim_value),
    str (dim_param) or None (unknown dim)."""
    tensor = _int(1, elem_type)
    if shape is not None:
        dims = b""
        for d in shape:
            if isinstance(d, str):
                dims += _bytes(1, _str(2, d))
            elif d is None:
                dims += _bytes(1, b"")
            else:
                dims += _bytes(1, _int(1, d))
        tensor += _bytes(2, dims)
    return _str(1, name) + _bytes(2, _bytes(1, tensor))


def attribute(name, value):
    """AttributeProto of an int, float, str or list of ints."""
    if isinstance(value, bool) or isinstance(value, int):
        return _str(1, name) + _int(3, value) + _int(20, 2)
    if isinstance(value, float):
        return _str(1, name) + _float(2, value) + _int(20, 1)
    if isinstance(value, str):
        return _str(1, name) + _bytes(4, value.encode("utf-8")) + _int(20, 3)
    return _str(1, name) + b"".join(_int(8, v) for v in value) + _int(20, 7)


def node(op_type, inputs, outputs, domain="", **attrs):
    """NodeProto."""
    out = b"".join(_str(1, i) for i in inputs) + b"".join(_str(2, o) for o in outputs)
    out += _str(4, op_type)
    if domain:
        out += _str(7, domain)
    for k in sorted(attrs):
        out += _bytes(5, attribute(k, attrs[k]))
    return out


def tensor(name, array, elem_type):
    """TensorProto with raw_data."""
    array = np.ascontiguousarray(array)
    out = b"".join(_int(1, d) for d in array.shape) + _int(2, elem_type) + _str(8, name)
    return out + _bytes(9, array.tobytes())


def model(nodes, inputs, outputs, opset=17, initializers=(), ir_version=8):
    """Serialized ModelProto. inputs/outputs: (name, elem_type, shape)."""
    graph = b"".join(_bytes(1, n) for n in nodes) + _str(2, "g")
    graph += b"".join(_bytes(5, t) for t in initializers)
    graph += b"".join(_bytes(11, value_info(*i)) for i in inputs)
    graph += b"".join(_bytes(12, value_info(*o)) for o in outputs)
    return _int(1, ir_version) + _bytes(7, graph) + _bytes(8, _int(2, opset))
