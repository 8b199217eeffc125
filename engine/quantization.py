"""tf.quantization: quantize / dequantize (the QuantizeV2 and Dequantize ops) and
quantize_v2 under its TF1 name; the ops themselves live in engine/ops/quantized_ops.py."""

from engine.ops.quantized_ops import dequantize, quantize, quantize_v2  # noqa: F401

__all__ = ["dequantize", "quantize", "quantize_v2"]
