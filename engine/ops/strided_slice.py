"""StridedSlice's index arithmetic (TF's ValidateStridedSliceOp): the sparse spec (begin, end,
strides and the five masks) becomes one range per input dimension plus the output shape. Pure
Python, shared by shape inference, the StridedSlice/StridedSliceGrad kernels and __getitem__."""

from __future__ import annotations

from dataclasses import dataclass

_NEW_AXIS = -1
_SHRINK = -2


class SliceSpecError(ValueError):
    """TF's message only; the caller names the node (shape_error at build time,
    InvalidArgumentError at run time)."""


@dataclass(frozen=True)
class Masks:
    begin: int = 0
    end: int = 0
    ellipsis: int = 0
    new_axis: int = 0
    shrink_axis: int = 0

    @classmethod
    def of(cls, attrs: dict) -> Masks:
        return cls(attrs.get("begin_mask", 0), attrs.get("end_mask", 0),
                   attrs.get("ellipsis_mask", 0), attrs.get("new_axis_mask", 0),
                   attrs.get("shrink_axis_mask", 0))


@dataclass(frozen=True)
class DenseSlice:
    """One entry per input dimension: canonical begin/end/stride (None when not known at build
    time), its element count (`processing`), whether it is shrunk away; and the output dims."""
    begin: tuple
    end: tuple
    strides: tuple
    shrink: tuple
    processing: tuple
    final: tuple

    def torch_index(self) -> tuple[tuple, tuple[int, ...]]:
        """Positive-step Python slices per input dim, plus the dims to flip afterwards: a
        negative-step range is the positive range over the same elements, reversed."""
        slices, flips = [], []
        for i, (b, s, n) in enumerate(zip(self.begin, self.strides, self.processing)):
            if n == 0:
                slices.append(slice(0, 0))
            elif s > 0:
                slices.append(slice(b, b + s * (n - 1) + 1, s))
            else:
                last = b + s * (n - 1)
                slices.append(slice(last, b + 1, -s))
                if n > 1:
                    flips.append(i)
        return tuple(slices), tuple(flips)


def _dense_spec(rank: int, begin, end, strides, masks: Masks):
    """Expands the ellipsis (implicit at the end when absent) and drops new axes, giving the
    per-input-dim spec and where each output dim comes from (TF's BuildDenseSpec)."""
    n = len(strides)
    if masks.ellipsis & (masks.ellipsis - 1):
        raise SliceSpecError("Multiple ellipses in slice spec not allowed")
    ellipsis, after_ellipsis, seen = masks.ellipsis, 0, False
    for i in range(n):
        if seen and (masks.new_axis >> i) & 1:
            after_ellipsis += 1
        if (ellipsis >> i) & 1:
            seen = True
    if not seen:
        ellipsis |= 1 << n
        n += 1
    dense = {"begin": [0] * rank, "end": [0] * rank, "strides": [1] * rank,
             "begin_mask": [False] * rank, "end_mask": [False] * rank, "shrink": [False] * rank}
    gather, full = [], 0
    for i in range(n):
        if (ellipsis >> i) & 1:
            stop = min(rank - (n - i) + 1 + after_ellipsis, rank)
            for j in range(full, stop):
                dense["begin_mask"][j] = dense["end_mask"][j] = True
                gather.append(j)
            full = max(full, stop)
        elif (masks.new_axis >> i) & 1:
            gather.append(_NEW_AXIS)
        else:
            if full == rank:
                raise SliceSpecError(f"Index out of range using input dim {full}; input has "
                                     f"only {rank} dims")
            dense["begin"][full] = None if begin is None else begin[i]
            dense["end"][full] = None if end is None else end[i]
            dense["strides"][full] = strides[i]
            dense["begin_mask"][full] = bool((masks.begin >> i) & 1)
            dense["end_mask"][full] = bool((masks.end >> i) & 1)
            shrink = bool((masks.shrink_axis >> i) & 1)
            dense["shrink"][full] = shrink
            gather.append(_SHRINK if shrink else full)
            full += 1
    return dense, gather


def _canonical(x, c: int, stride: int, dim: int, masked: bool) -> int:
    """TF's clamp of a begin (c=0) or end (c=1) index into the range a stride can reach."""
    lo, hi = (0, dim) if stride > 0 else (-1, dim - 1)
    if masked:
        return (lo, hi)[c] if stride > 0 else (lo, hi)[1 - c]
    x_fwd = dim + x if x < 0 else x
    return lo if x_fwd < lo else hi if x_fwd > hi else x_fwd


def _interval_size(length: int, stride: int) -> int:
    if length == 0 or (length < 0) != (stride < 0):
        return 0
    q, r = divmod(abs(length), abs(stride))
    return q + (1 if r else 0)


def resolve(shape, begin, end, strides, masks: Masks) -> DenseSlice:
    """shape: the input dims (int, or None when unknown); begin/end: lists of ints, or None when
    the tensor's value is not known; strides: list of ints. Raises SliceSpecError."""
    rank = len(shape)
    dense, gather = _dense_spec(rank, begin, end, strides, masks)
    known = begin is not None and end is not None
    out_begin, out_end, processing = [], [], []
    for i in range(rank):
        dim, stride, shrink = shape[i], dense["strides"][i], dense["shrink"][i]
        b, e = dense["begin"][i], dense["end"][i]
        if stride == 0:
            raise SliceSpecError(f"strides[{i}] must be non-zero")
        if dim is None:
            out_begin.append(None)
            out_end.append(None)
            processing.append(1 if shrink else None)
            continue
        if shrink and stride <= 0:
            raise SliceSpecError("only stride 1 allowed on non-range indexing.")
        if known:
            if shrink:
                b = dim + b if b < 0 else b
                e = b + 1
                if b < 0 or b >= dim:
                    raise SliceSpecError(f"slice index {b} of dimension {i} out of bounds.")
            else:
                b = _canonical(b, 0, stride, dim, dense["begin_mask"][i])
                e = _canonical(e, 1, stride, dim, dense["end_mask"][i])
            processing.append(_interval_size(e - b, stride))
        elif shrink:
            processing.append(1)
        elif dense["begin_mask"][i] and dense["end_mask"][i]:
            processing.append(_interval_size(-dim if stride < 0 else dim, stride))
        else:
            processing.append(None)
        out_begin.append(b if known else None)
        out_end.append(e if known else None)
    final = tuple(1 if g == _NEW_AXIS else processing[g] for g in gather if g != _SHRINK)
    return DenseSlice(tuple(out_begin), tuple(out_end), tuple(dense["strides"]),
                      tuple(dense["shrink"]), tuple(processing), final)
