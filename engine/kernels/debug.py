"""Debug kernels: CheckNumerics (float types on CPU and GPU; the check runs on the tensor's
own device)."""

from __future__ import annotations

import torch

from engine import errors
from engine.kernels.registry import GPU_FLOAT, kernel
from engine.ops.debug_ops import CHECKED_TYPES


def bad_values(x: torch.Tensor) -> str | None:
    """TF's wording for what a float tensor holds: "NaN", "Inf", "Inf and NaN", or None."""
    # A finite sum proves every element finite, at the cost of one reduction; a sum that
    # overflowed is sorted out by the exact counts below.
    if bool(torch.isfinite(x.sum())):
        return None
    has_nan, has_inf = bool(torch.isnan(x).any()), bool(torch.isinf(x).any())
    if not (has_nan or has_inf):
        return None
    return "Inf and NaN" if has_nan and has_inf else "NaN" if has_nan else "Inf"


@kernel("CheckNumerics", CPU={"T": CHECKED_TYPES}, GPU={"T": GPU_FLOAT})
def check_numerics(node, ctx):
    message = node.attr["message"]

    def run(x):
        found = bad_values(x)
        if found is not None:
            raise errors.InvalidArgumentError(node, None,
                                              f"{message} : Tensor had {found} values")
        return x
    return run
