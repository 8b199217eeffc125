"""Element types: the TF names (`float32`, `int32`, `float32_ref`, ...), their proto
spellings (`DT_FLOAT`) and their torch / numpy counterparts. `string` has no torch
counterpart: string values travel as numpy object arrays of bytes, in host memory.
Quantized types (quint8, qint8, qint32, ...) travel as plain integer tensors, as in TF."""

from __future__ import annotations

import numpy as np
import torch


class DType:
    """An element type. Ref types (`float32_ref`) mark a variable's mutable output; they share
    everything with their base type but the name."""

    __slots__ = ("name", "proto_name", "torch_dtype", "numpy_dtype", "size", "kind", "_is_ref",
                 "_base", "_ref")

    def __init__(self, name: str, proto_name: str, torch_dtype, numpy_dtype, size: int,
                 kind: str, base: DType | None = None):
        self.name = name
        self.proto_name = proto_name
        self.torch_dtype = torch_dtype
        self.numpy_dtype = numpy_dtype
        self.size = size
        # "float" | "complex" | "int" | "uint" | "bool" | "quantized" | "string" | "resource"
        self.kind = kind
        self._is_ref = base is not None
        self._base = base if base is not None else self
        self._ref = None

    @property
    def base_dtype(self) -> DType:
        return self._base

    @property
    def is_ref(self) -> bool:
        return self._is_ref

    @property
    def _as_ref(self) -> DType:
        base = self._base
        if base._ref is None:
            base._ref = DType(base.name + "_ref", base.proto_name + "_REF", base.torch_dtype,
                              base.numpy_dtype, base.size, base.kind, base=base)
        return base._ref

    @property
    def tf_string(self) -> str:
        """TF's C++ DataTypeString, used in runtime messages: float, double, int32, half."""
        return self.proto_name[3:].lower()

    @property
    def is_floating(self) -> bool:
        return self.kind == "float"

    @property
    def is_complex(self) -> bool:
        return self.kind == "complex"

    @property
    def is_integer(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_quantized(self) -> bool:
        return self.kind == "quantized"

    @property
    def is_string(self) -> bool:
        return self.kind == "string"

    @property
    def is_resource(self) -> bool:
        return self.kind == "resource"

    @property
    def is_differentiable(self) -> bool:
        return self.kind in ("float", "complex")

    @property
    def as_numpy_dtype(self):
        """TF's numpy type: quantized types are one-field structured dtypes
        (`[('quint8', 'u1')]`); their values still travel as the plain integer array."""
        if self.kind == "quantized":
            return _STRUCTURED[self._base.name]
        return self.numpy_dtype

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __str__(self) -> str:
        return f"<dtype: '{self.name}'>"

    def __reduce__(self):
        raise TypeError("dtypes are not picklable")


def _make(name, proto, torch_dtype, numpy_dtype, size, kind) -> DType:
    return DType(name, proto, torch_dtype, numpy_dtype, size, kind)


float16 = half = _make("float16", "DT_HALF", torch.float16, np.float16, 2, "float")
bfloat16 = _make("bfloat16", "DT_BFLOAT16", torch.bfloat16, None, 2, "float")
float32 = _make("float32", "DT_FLOAT", torch.float32, np.float32, 4, "float")
float64 = double = _make("float64", "DT_DOUBLE", torch.float64, np.float64, 8, "float")
complex64 = _make("complex64", "DT_COMPLEX64", torch.complex64, np.complex64, 8, "complex")
complex128 = _make("complex128", "DT_COMPLEX128", torch.complex128, np.complex128, 16, "complex")
int8 = _make("int8", "DT_INT8", torch.int8, np.int8, 1, "int")
int16 = _make("int16", "DT_INT16", torch.int16, np.int16, 2, "int")
int32 = _make("int32", "DT_INT32", torch.int32, np.int32, 4, "int")
int64 = _make("int64", "DT_INT64", torch.int64, np.int64, 8, "int")
uint8 = _make("uint8", "DT_UINT8", torch.uint8, np.uint8, 1, "uint")
uint16 = _make("uint16", "DT_UINT16", torch.uint16, np.uint16, 2, "uint")
uint32 = _make("uint32", "DT_UINT32", torch.uint32, np.uint32, 4, "uint")
uint64 = _make("uint64", "DT_UINT64", torch.uint64, np.uint64, 8, "uint")
bool = _make("bool", "DT_BOOL", torch.bool, np.bool_, 1, "bool")  # noqa: A001 - TF's name
# Quantized values are held as the plain integers TF stores (torch's affine quantized types
# are refused by most torch ops); their float range travels as separate tensors.
quint8 = _make("quint8", "DT_QUINT8", torch.uint8, np.uint8, 1, "quantized")
qint8 = _make("qint8", "DT_QINT8", torch.int8, np.int8, 1, "quantized")
quint16 = _make("quint16", "DT_QUINT16", torch.uint16, np.uint16, 2, "quantized")
qint16 = _make("qint16", "DT_QINT16", torch.int16, np.int16, 2, "quantized")
qint32 = _make("qint32", "DT_QINT32", torch.int32, np.int32, 4, "quantized")
# Not in ALL: kernels registered "for every type" must not claim strings (no torch dtype).
string = _make("string", "DT_STRING", None, np.object_, 0, "string")
# A handle to a runtime resource (a TensorArray's storage): an opaque host-side object.
resource = _make("resource", "DT_RESOURCE", None, None, 0, "resource")

ALL = (float16, bfloat16, float32, float64, complex64, complex128, int8, int16, int32, int64,
       uint8, uint16, uint32, uint64, bool, quint8, qint8, quint16, qint16, qint32)
QUANTIZED = (qint8, quint8, qint16, quint16, qint32)
FLOATS = (float16, bfloat16, float32, float64)
NUMERIC = FLOATS + (complex64, complex128, int8, int16, int32, int64, uint8)
REAL_NUMERIC = FLOATS + (int8, int16, int32, int64, uint8)

_BY_NAME = {d.name: d for d in ALL + (string, resource)}
_BY_NAME.update({"half": float16, "float": float32, "double": float64})
_BY_PROTO = {d.proto_name: d for d in ALL + (string, resource)}
_STRUCTURED = {d.name: np.dtype([(d.name, d.numpy_dtype)]) for d in QUANTIZED}
# A torch or numpy integer type names the plain integer type, never its quantized twin.
_UNQUANTIZED = tuple(d for d in ALL if d.kind != "quantized")
_BY_TORCH = {d.torch_dtype: d for d in _UNQUANTIZED}
_BY_NUMPY = {np.dtype(d.numpy_dtype): d for d in _UNQUANTIZED + (string,)
             if d.numpy_dtype is not None}
_BY_NUMPY.update({_STRUCTURED[d.name]: d for d in QUANTIZED})


def as_dtype(value) -> DType:
    """Converts a DType, name, proto name, numpy or torch dtype into a DType."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        if value.endswith("_ref") and value[:-4] in _BY_NAME:
            return _BY_NAME[value[:-4]]._as_ref
        found = _BY_NAME.get(value) or _BY_PROTO.get(value)
        if found is not None:
            return found
    elif isinstance(value, torch.dtype):
        if value in _BY_TORCH:
            return _BY_TORCH[value]
    else:
        try:
            found = np.dtype(value)
        except TypeError:
            found = None
        if found is not None and found.kind in "SU":   # numpy bytes / str arrays, as TF
            return string
        if found in _BY_NUMPY:
            return _BY_NUMPY[found]
    raise TypeError(f"Cannot convert value {value!r} to a dtype; known dtypes: "
                    f"{', '.join(sorted(_BY_NAME))}")
