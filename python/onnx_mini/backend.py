"""onnx_mini as an ONNX backend (onnx.backend.base.Backend), for onnx's
backend test suite:

    import onnx.backend.test
    import onnx_mini.backend
    tests = onnx.backend.test.BackendTest(onnx_mini.backend.OnnxMiniBackend, __name__)

- prepare(model) makes a session and returns a BackendRep whose run(inputs)
  takes the inputs in the order of the graph's inputs (or a dict by name);
- run_model(model, inputs) is prepare + run; run_node(node, inputs) runs one
  node, wrapped in a model typed from the input arrays;
- supports_device: "CPU" only; is_compatible: False when onnx-mini lacks an op,
  opset or type of the model (NOT_IMPLEMENTED at session creation), so that
  such cases are skipped rather than failed.

bfloat16 values are uint16 arrays of their bits, as in InferenceSession (and
in onnx's test data); a float32 array given for a bfloat16 input (what
onnx.numpy_helper.to_array makes of a BFLOAT16 TensorProto) is rounded to
bfloat16 (to nearest even) first.
"""

import numpy as np
import onnx
from onnx import helper
from onnx.backend.base import Backend, BackendRep, Device, DeviceType, namedtupledict

from . import _types
from ._capi import OnnxMiniError, StatusCode
from .session import InferenceSession

_BFLOAT16 = 16


def float_to_bfloat16_bits(values):
    """float32 -> bfloat16 bits (uint16), rounding to nearest even; NaN stays NaN."""
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(values, np.float32))
    return np.where(nan, ((bits >> 16) | 0x0040).astype(np.uint16), rounded)


def bfloat16_bits_to_float(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


class OnnxMiniRep(BackendRep):
    """A prepared model."""

    def __init__(self, session, graph_inputs):
        self.session = session
        self._inputs = session.get_inputs()
        self._input_names = {a.name for a in self._inputs}
        self._outputs = session.get_outputs()
        # graph.input order, initializers included: the positions of run()'s inputs.
        self._graph_inputs = graph_inputs

    def run(self, inputs, **kwargs):
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            feeds = {}
            for name, value in zip(self._graph_inputs, inputs):
                if name in self._input_names:  # an initializer's default is not overridden
                    feeds[name] = value
        for arg in self._inputs:
            value = feeds.get(arg.name)
            if arg.kind != _types.TENSOR and isinstance(value, np.ndarray) and value.dtype == object and value.ndim == 0:
                feeds[arg.name] = value.item()  # onnx's runner wraps an absent optional as array(None)
            elif (arg.kind == _types.TENSOR and arg.elem_type == _BFLOAT16 and value is not None
                  and np.asarray(value).dtype != np.uint16):
                feeds[arg.name] = float_to_bfloat16_bits(value)
        results = self.session.run(None, feeds)
        return namedtupledict("Outputs", [a.name for a in self._outputs])(*results)


def _serialize(model):
    return model if isinstance(model, (bytes, bytearray)) else model.SerializeToString()


def _infer_output_types(model):
    """Gives the untyped graph outputs of `model` the types onnx's shape
    inference finds (onnx-mini needs every graph output's element type)."""
    untyped = [o for o in model.graph.output if not o.type.tensor_type.elem_type]
    if not untyped:
        return
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - leave them untyped: the session will say so
        return
    found = {v.name: v.type for v in list(inferred.graph.output) + list(inferred.graph.value_info)}
    for output in untyped:
        t = found.get(output.name)
        if t is not None and t.tensor_type.elem_type:
            output.type.CopyFrom(t)


class OnnxMiniBackend(Backend):
    # The last model is_compatible prepared, handed to the prepare() that follows.
    _last = (None, None)
    # Why is_compatible last said False (the NOT_IMPLEMENTED message).
    last_incompatibility = None

    @classmethod
    def supports_device(cls, device):
        try:
            return Device(device).type == DeviceType.CPU
        except Exception:  # noqa: BLE001 - an unknown device name
            return False

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        """A BackendRep of `model` (a ModelProto or its bytes). kwargs: threads
        (0 = all cores), base_dir (external data of a model given as bytes)."""
        if not cls.supports_device(device):
            raise ValueError("onnx_mini runs on the CPU only, not %r" % (device,))
        data = _serialize(model)
        key, rep = cls._last
        cls._last = (None, None)
        if key is not None and key == (data, repr(sorted(kwargs.items()))):
            return rep
        if isinstance(model, (bytes, bytearray)):
            model = onnx.load_model_from_string(bytes(model))
        session = InferenceSession(data, threads=kwargs.get("threads", 0), base_dir=kwargs.get("base_dir"))
        return OnnxMiniRep(session, [i.name for i in model.graph.input])

    @classmethod
    def is_compatible(cls, model, device="CPU", **kwargs):
        """False when onnx-mini cannot make a session of the model because it
        lacks an op, opset or element type."""
        if not cls.supports_device(device):
            return False
        try:
            rep = cls.prepare(model, device, **kwargs)
        except OnnxMiniError as e:
            if e.code == StatusCode.NOT_IMPLEMENTED:
                cls.last_incompatibility = str(e)
                return False
            return True  # another error: prepare() will raise it
        cls._last = ((_serialize(model), repr(sorted(kwargs.items()))), rep)
        return True

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device="CPU", outputs_info=None, **kwargs):
        """Runs one NodeProto on `inputs` (arrays, in the order of node.input;
        empty names are skipped). outputs_info: optional (dtype, shape) per
        output. kwargs: opset_version (default: onnx's newest)."""
        opset = kwargs.pop("opset_version", None) or onnx.defs.onnx_opset_version()
        if isinstance(inputs, dict):
            inputs = [inputs[name] for name in node.input if name]
        arrays = [np.asarray(v) for v in inputs]
        names = [name for name in node.input if name]
        if len(names) != len(arrays):
            raise ValueError("node %s has %d inputs, %d arrays given" % (node.op_type, len(names), len(arrays)))
        graph_inputs = []
        for name, a in zip(names, arrays):
            elem_type = onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype]
            graph_inputs.append(helper.make_tensor_value_info(name, elem_type, a.shape))
        graph_outputs = []
        for i, name in enumerate(o for o in node.output if o):
            if outputs_info and i < len(outputs_info):
                dtype, shape = outputs_info[i]
                elem_type = onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)]
                graph_outputs.append(helper.make_tensor_value_info(name, elem_type, shape))
            else:
                graph_outputs.append(helper.make_empty_tensor_value_info(name))
        opsets = [helper.make_opsetid("", opset)]
        if node.domain not in ("", "ai.onnx"):
            opsets.append(helper.make_opsetid(node.domain, 1))
        model = helper.make_model(
            helper.make_graph([node], "run_node_" + node.op_type, graph_inputs, graph_outputs),
            opset_imports=opsets,
        )
        _infer_output_types(model)
        return cls.prepare(model, device, **kwargs).run(arrays)


# Module-level functions, as onnx.backend and onnxruntime.backend offer them.
prepare = OnnxMiniBackend.prepare
run_model = OnnxMiniBackend.run_model
run_node = OnnxMiniBackend.run_node
supports_device = OnnxMiniBackend.supports_device
is_compatible = OnnxMiniBackend.is_compatible
