"""TF's sliding-window arithmetic for convolution and pooling ops: the attr checks (padding,
data_format, strides/ksize/dilations), the output size and the (before, after) padding of each
spatial dimension. Shape inference and the kernels share it; no torch here."""

from __future__ import annotations

from dataclasses import dataclass

PADDINGS = ("SAME", "VALID", "EXPLICIT")
DATA_FORMATS = ("NHWC", "NCHW")


def check_choice(op_type: str, attr: str, value, allowed) -> None:
    """TF's op-definition check of a string attr (same wording as op_def_library)."""
    if value not in allowed:
        choices = ", ".join(f'"{a}"' for a in allowed)
        raise ValueError(f"Attr '{attr}' of '{op_type}' Op passed string '{value}' not in: "
                         f"{choices}.")


def check_length(op_type: str, attr: str, values, n: int = 4) -> None:
    if values is None or len(values) != n:
        got = 0 if values is None else len(values)
        raise ValueError(f"{op_type} requires the {attr} attribute to contain {n} values, but "
                         f"got: {got}")


def spatial_axes(data_format: str) -> tuple[int, int]:
    return (2, 3) if data_format == "NCHW" else (1, 2)


def channel_axis(data_format: str) -> int:
    return 1 if data_format == "NCHW" else 3


@dataclass(frozen=True)
class Window:
    """One op's window attrs, reduced to the two spatial dimensions (height, width)."""
    strides: tuple[int, int]
    dilations: tuple[int, int]
    padding: str
    explicit: tuple[tuple[int, int], tuple[int, int]]
    data_format: str

    @property
    def nchw(self) -> bool:
        return self.data_format == "NCHW"

    def output_and_pads(self, in_hw, k_hw):
        """[(out, before, after)] for height and width; out is None where the input size is
        unknown. Raises ValueError(detail) when the window does not fit."""
        return [window_output(in_hw[i], k_hw[i], self.strides[i], self.dilations[i],
                              self.padding, self.explicit[i]) for i in range(2)]


def window_of(attrs: dict, op_type: str, *, stride_attr: str = "strides",
              dilations: bool = True) -> Window:
    """Reads and checks strides/dilations/padding/data_format as TF's shape functions do."""
    data_format = attrs.get("data_format", "NHWC")
    check_choice(op_type, "data_format", data_format, DATA_FORMATS)
    padding = attrs["padding"]
    check_choice(op_type, "padding", padding, PADDINGS)
    strides = attrs[stride_attr]
    check_length(op_type, "stride", strides)
    rates = attrs.get("dilations", [1, 1, 1, 1]) if dilations else [1, 1, 1, 1]
    check_length(op_type, "dilations", rates)
    h, w = spatial_axes(data_format)
    if any(int(s) < 1 for s in strides) or any(int(d) < 1 for d in rates):
        raise ValueError(f"{op_type}: strides and dilations must be positive; got "
                         f"strides={list(strides)}, dilations={list(rates)}")
    explicit = ((0, 0), (0, 0))
    if padding == "EXPLICIT":
        pads = [int(p) for p in attrs.get("explicit_paddings", [])]
        if len(pads) != 8:
            raise ValueError(f"{op_type}: explicit_paddings attribute must contain 8 values "
                             f"when padding is EXPLICIT, but got: {len(pads)}")
        pairs = [(pads[2 * i], pads[2 * i + 1]) for i in range(4)]
        if any(p < 0 for p in pads):
            raise ValueError(f"{op_type}: all explicit padding values must be nonnegative, "
                             f"got {pads}")
        if pairs[0] != (0, 0) or pairs[channel_axis(data_format)] != (0, 0):
            raise ValueError(f"{op_type}: nonzero explicit padding in the batch or depth "
                             f"dimensions is not supported; got {pads}")
        explicit = (pairs[h], pairs[w])
    return Window((int(strides[h]), int(strides[w])), (int(rates[h]), int(rates[w])),
                  padding, explicit, data_format)


def non_spatial(values, data_format: str) -> tuple[int, int]:
    """(batch, depth) entries of a 4-value attr such as strides or ksize."""
    return int(values[0]), int(values[channel_axis(data_format)])


def window_output(size: int | None, k: int | None, stride: int, dilation: int, padding: str,
                  explicit: tuple[int, int] = (0, 0)):
    """(output size, pad before, pad after) for one dimension, as TF's
    GetWindowedOutputSizeVerbose computes it; SAME puts the odd pixel after."""
    if size is None or k is None:
        return None, None, None
    effective = (k - 1) * dilation + 1
    if padding == "VALID":
        if size < effective:
            raise ValueError(f"Negative dimension size caused by subtracting {effective} "
                             f"from {size}")
        return (size - effective) // stride + 1, 0, 0
    if padding == "SAME":
        out = (size + stride - 1) // stride
        total = max((out - 1) * stride + effective - size, 0)
        return out, total // 2, total - total // 2
    before, after = explicit
    padded = size + before + after
    if padded < effective:
        raise ValueError(f"Negative dimension size caused by subtracting {effective} from "
                         f"{padded}")
    return (padded - effective) // stride + 1, before, after


def normalize_sequence(value, name: str, data_format: str):
    """tf.nn's `_get_sequence`: an int or 1-, 2- or 4-long list becomes the 4-long attr."""
    if value is None:
        return [1, 1, 1, 1]
    if isinstance(value, int):
        value = [value]
    value = [int(v) for v in value]
    if len(value) == 4:
        return value
    if len(value) == 1:
        value = value * 2
    elif len(value) != 2:
        raise ValueError(f"{name} should be of length 1, 2 or 4. Received: {name}={value} of "
                         f"length {len(value)}")
    return [1, 1] + value if data_format.startswith("NC") else [1] + value + [1]


def convert_padding(padding):
    """tf.nn's `convert_padding`: a list of 4 (before, after) pairs means EXPLICIT."""
    if padding == "EXPLICIT":
        raise ValueError("'EXPLICIT' is not a valid value for `padding`. To use explicit "
                         "padding, `padding` must be a list.")
    if not isinstance(padding, (list, tuple)):
        return padding, []
    flat = []
    for i, pair in enumerate(padding):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError("When `padding` is a list, each element of `padding` must be a "
                             f"list/tuple of size 2. Received: padding={padding} with element "
                             f"at index {i}: {pair!r}")
        flat.extend(int(p) for p in pair)
    if len(padding) != 4:
        raise ValueError(f"When padding is a list, it must be of size 4. Received: "
                         f"padding={padding} of size {len(padding)}")
    return "EXPLICIT", flat
