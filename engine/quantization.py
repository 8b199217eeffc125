"""tf.quantization: quantize / dequantize (the QuantizeV2 and Dequantize ops), quantize_v2 under
its TF1 name, and the fake quantization ops; the ops live in engine/ops/quantized_ops.py and
engine/ops/fake_quant_ops.py."""

from engine.ops.fake_quant_ops import *  # noqa: F401,F403
from engine.ops.fake_quant_ops import __all__ as _fake_quant
from engine.ops.quantized_ops import dequantize, quantize, quantize_v2  # noqa: F401

__all__ = ["dequantize", "quantize", "quantize_v2", *_fake_quant]
