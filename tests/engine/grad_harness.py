"""The gradient-test harness every gradient test module shares: `grad_test` (declares and
checks the rules a test differentiates, feeding the table-wide coverage check) and
`check_gradients` (tf.gradients against torch.autograd on the same random inputs)."""

from __future__ import annotations

import collections
import functools
import importlib
import pathlib

import numpy as np
import pytest
import torch

import engine as tf

TIGHT = {"rtol": 1e-10, "atol": 1e-12}          # float64 end to end
FLOAT32 = {"rtol": 2e-5, "atol": 2e-6}

GRAD_TESTED: set[str] = set()    # op types whose gradient rule some test below checks
_differentiated: set[str] = set()   # op types the current test took the gradient of


def grad_test(*op_types: str):
    """Declares the gradient rules a test checks, and after it passes verifies that ops of
    those types did sit between its xs and ys (a test parametrized by `op_type` must
    differentiate the one op type of each case)."""
    def decorate(fn):
        GRAD_TESTED.update(op_types)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            _differentiated.clear()
            fn(*args, **kwargs)
            required = {kwargs["op_type"]} if "op_type" in kwargs else set(op_types)
            missing = required - _differentiated
            assert not missing, f"{fn.__name__} declares {sorted(missing)} but never "\
                                f"differentiated them"
        return wrapper
    return decorate


def _downstream_types(graph, xs, ops) -> set[str]:
    """Types of `ops` that depend on some x (so tf.gradients had to run their rule)."""
    consumers = collections.defaultdict(list)
    for op in graph.get_operations():
        for t in op.inputs:
            consumers[t.op].append(op)
    reached, queue = set(), collections.deque(x.op for x in xs)
    while queue:
        op = queue.popleft()
        if op not in reached:
            reached.add(op)
            queue.extend(consumers[op])
    return {op.type for op in ops if op in reached}


def placeholder_for(value: np.ndarray, dynamic: bool):
    shape = list(value.shape)
    if dynamic and shape:
        shape[0] = None
    return tf.placeholder(tf.as_dtype(value.dtype), shape)


def check_gradients(tf_fn, torch_fn, inputs, *, dynamic=False, seed=0, tol=TIGHT):
    """Builds tf_fn on placeholders for `inputs`, takes tf.gradients of sum(out * w) for a
    random w, and compares with torch.autograd.grad of the same sum. Returns the graph and
    the engine's gradients."""
    rng = np.random.default_rng(seed)
    ts = [torch.from_numpy(v.copy()).requires_grad_(v.dtype.kind == "f") for v in inputs]
    out_t = torch_fn(*ts)
    weights = rng.uniform(-2, 2, size=tuple(out_t.shape)).astype(out_t.detach().numpy().dtype)
    want = torch.autograd.grad((out_t * torch.from_numpy(weights)).sum(),
                               [t for t in ts if t.requires_grad], allow_unused=True)
    g = tf.Graph()
    with g.as_default():
        xs = [placeholder_for(v, dynamic) for v in inputs]
        before = len(g.get_operations())
        out = tf_fn(*xs)
        _differentiated.update(_downstream_types(g, xs, g.get_operations()[before:]))
        loss = tf.reduce_sum(out * tf.constant(weights))
        grads = tf.gradients(loss, xs)
        float_grads = [gr for x, gr in zip(xs, grads) if x.dtype.is_floating]
        assert all(gr is not None for gr in float_grads)
        with tf.Session(graph=g) as s:
            got = s.run(float_grads, dict(zip(xs, inputs)))
    for i, (gv, wv) in enumerate(zip(got, want)):
        expected = np.zeros_like(gv) if wv is None else wv.numpy()
        assert gv.shape == expected.shape, f"input {i}"
        np.testing.assert_allclose(gv, expected, **tol, err_msg=f"input {i}")
    return g, grads


def rand(rng, shape, low=-2.0, high=2.0, dtype=np.float64) -> np.ndarray:
    return rng.uniform(low, high, size=shape).astype(dtype)


def away_from_zero(rng, shape, low=0.5, high=2.0) -> np.ndarray:
    return rng.choice([-1.0, 1.0], size=shape) * rng.uniform(low, high, size=shape)


DYNAMIC = pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])



def import_every_test_module() -> None:
    """Gradient tests live in several modules (one per op family); the table-wide coverage
    check must see every module's `grad_test` declarations, however pytest was invoked."""
    for path in sorted(pathlib.Path(__file__).parent.glob("test_*.py")):
        importlib.import_module(path.stem)
