"""Random kernels. Each op instance draws from its own torch generator, on the device the
kernel runs on, seeded from its (seed, seed2) attrs and kept per session across steps and
plans, so successive runs give new numbers and a new Session restarts the sequence (TF keeps
stateful kernels in the session's OpSegment the same way). The bits are torch's, not Philox's."""

from __future__ import annotations

import os
import threading
import weakref

import torch

from engine import dtypes, errors
from engine.kernels.registry import ALL_TYPES, CPU_FLOAT, GPU_FLOAT, INDEX_TYPES, kernel

_MASK64 = (1 << 64) - 1
# session resources (its VariableStore) -> {(device, node): generator}
_GENERATORS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
_FLOATS = {"CPU": {"dtype": CPU_FLOAT, "T": INDEX_TYPES},
           "GPU": {"dtype": GPU_FLOAT, "T": INDEX_TYPES}}
_CPU_REAL = tuple(d for d in dtypes.REAL_NUMERIC)
# Draws narrower than float32 are made in float32 and rounded, so every device agrees.
_WIDE = {dtypes.float16: torch.float32, dtypes.bfloat16: torch.float32}


def _mixed_seed(seed: int, seed2: int) -> int:
    """splitmix64 of both seeds: torch's CPU generator keeps only 32 bits of a seed, so the
    pair is mixed first (else seeds differing only in their high bits would collide)."""
    z = ((((seed & 0xFFFFFFFF) << 32) | (seed2 & 0xFFFFFFFF)) + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def generator_for(node, ctx) -> torch.Generator:
    """The op instance's generator in this session; (0, 0) seeds draw a fresh seed."""
    key = (ctx.device.name, node.name)
    with _LOCK:
        per_session = _GENERATORS.setdefault(ctx.variables, {})
        found = per_session.get(key)
        if found is None:
            seed, seed2 = node.attr.get("seed", 0), node.attr.get("seed2", 0)
            value = _mixed_seed(seed, seed2) if (seed, seed2) != (0, 0) else \
                int.from_bytes(os.urandom(8), "little")
            found = torch.Generator(device=ctx.torch_device)
            found.manual_seed(value)
            per_session[key] = found
        return found


def _dims(node, shape: torch.Tensor) -> list[int]:
    dims = [int(d) for d in shape.reshape(-1).tolist()]
    if any(d < 0 for d in dims):
        raise errors.InvalidArgumentError(node, None, f"Shape {dims} has a negative dimension "
                                                      f"in {node.name}; dimensions must be >= 0")
    return dims


def _sampler(draw):
    """A kernel factory from draw(dims, generator, torch dtype, device) -> tensor."""
    def factory(node, ctx):
        gen = generator_for(node, ctx)
        out = node.attr["dtype"]
        wide = _WIDE.get(out, out.torch_dtype)
        device = ctx.torch_device

        def run(shape):
            return draw(_dims(node, shape), gen, wide, device).to(out.torch_dtype)
        return run
    return factory


def _normal(dims, gen, dtype, device):
    return torch.randn(dims, generator=gen, dtype=dtype, device=device)


def _uniform(dims, gen, dtype, device):
    return torch.rand(dims, generator=gen, dtype=dtype, device=device)


def _truncated(dims, gen, dtype, device):
    """Normal draws, each one outside [-2, 2] redrawn (about 4.6% per round), as TF does."""
    out = torch.randn(dims, generator=gen, dtype=dtype, device=device)
    bad = out.abs() > 2
    while bool(bad.any()):
        count = int(bad.sum())
        out[bad] = torch.randn(count, generator=gen, dtype=dtype, device=device)
        bad = out.abs() > 2
    return out


kernel("RandomStandardNormal", host_memory=("shape",), **_FLOATS)(_sampler(_normal))
kernel("RandomUniform", host_memory=("shape",), **_FLOATS)(_sampler(_uniform))
kernel("TruncatedNormal", host_memory=("shape",), **_FLOATS)(_sampler(_truncated))


@kernel("RandomUniformInt", CPU={"Tout": INDEX_TYPES, "T": INDEX_TYPES},
        GPU={"Tout": INDEX_TYPES, "T": INDEX_TYPES},
        host_memory=("shape", "minval", "maxval"))
def random_uniform_int(node, ctx):
    gen = generator_for(node, ctx)
    out = node.attr["Tout"].torch_dtype
    device = ctx.torch_device

    def run(shape, minval, maxval):
        low, high = int(minval), int(maxval)
        if low >= high:
            raise errors.InvalidArgumentError(node, None,
                                              f"Need minval < maxval: {low} >= {high}")
        return torch.randint(low, high, _dims(node, shape), generator=gen, dtype=out,
                             device=device)
    return run


@kernel("RandomShuffle", CPU={"T": ALL_TYPES}, GPU={"T": ALL_TYPES})
def random_shuffle(node, ctx):
    gen = generator_for(node, ctx)
    device = ctx.torch_device

    def run(value):
        if value.dim() == 0 or value.shape[0] <= 1:
            return value
        return value[torch.randperm(value.shape[0], generator=gen, device=device)]
    return run


@kernel("Multinomial", CPU={"T": _CPU_REAL, "output_dtype": INDEX_TYPES},
        GPU={"T": GPU_FLOAT, "output_dtype": INDEX_TYPES}, host_memory=("num_samples",))
def multinomial(node, ctx):
    gen = generator_for(node, ctx)
    out = node.attr["output_dtype"].torch_dtype

    def run(logits, num_samples):
        count = int(num_samples)
        if count < 0:
            raise errors.InvalidArgumentError(node, None, f"num_samples should be nonnegative, "
                                                          f"got {count}")
        batch, classes = logits.shape
        if classes == 0:
            raise errors.InvalidArgumentError(node, None, "num_classes should be positive, "
                                                          "got 0")
        if count == 0 or batch == 0:
            return torch.zeros((batch, count), dtype=out, device=logits.device)
        # float64 softmax: rows whose logits differ by hundreds still give valid probabilities.
        probs = torch.softmax(logits.to(torch.float64), dim=-1)
        return torch.multinomial(probs, count, replacement=True, generator=gen).to(out)
    return run
