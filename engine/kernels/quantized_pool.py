"""The quint8 max pool of QuantizedMaxPool (kernels in engine/kernels/quantized.py): torch's
max_pool2d on the NHWC tensor's channels-last view on the CPU (5x faster than windows + amax
at 256x8x8x16), windows + amax elsewhere (CUDA's max_pool2d takes no uint8)."""

from __future__ import annotations

import torch


def max_pool(x: torch.Tensor, window, k_hw: tuple[int, int]) -> torch.Tensor:
    """x uint8 NHWC. SAME pads with 0, quint8's lowest value: every SAME window holds a real
    pixel, which 0 never exceeds, so the pad changes no maximum (TF ignores padded pixels)."""
    (_, top, bottom), (_, left, right) = window.output_and_pads(list(x.shape[1:3]), k_hw)
    if top or bottom or left or right:
        x = torch.nn.functional.pad(x, (0, 0, left, right, top, bottom))
    if x.device.type == "cpu" and x.numel():
        # The NCHW view of an NHWC tensor is channels-last: no copy either way.
        out = torch.nn.functional.max_pool2d(x.permute(0, 3, 1, 2), k_hw, window.strides)
        return out.permute(0, 2, 3, 1)
    (sh, sw) = window.strides
    return x.unfold(1, k_hw[0], sh).unfold(2, k_hw[1], sw).amax(dim=(-2, -1))
