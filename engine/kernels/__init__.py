"""Torch kernels, registered per (op type, device type, dtypes). Each family is imported
explicitly so the registry is complete as soon as this package is."""

from engine.kernels import (  # noqa: F401
    array,
    control_flow,
    debug,
    fake_quant,
    math,
    nn,
    quantized,
    quantized_conv,
    random,
    state,
    summary,
    tensor_array,
    training,
)
from engine.kernels.registry import (  # noqa: F401
                                     Constant,
                                     KernelContext,
                                     find_kernel,
                                     registered_kernels_text,
                                     supported_device_types,
)
