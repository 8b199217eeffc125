"""The kernel-test harness every kernel test module shares: `covers` (declares and checks the
op types a test runs, feeding the registry-wide coverage check), OpRunner (one graph pinned to
CPU or a virtual GPU, run traced), the `runner` fixture and the numeric helpers."""

from __future__ import annotations

import contextlib
import functools
import importlib
import pathlib

import numpy as np

import engine as tf
from engine.shapes import TensorShape

RUNTIME_INTERNAL = {"_Arg", "_Retval"}
# Kernels that return a fixed value are bound once per plan and never show in step stats.
BOUND_ONCE = {"Const", "VariableV2"}
FLOATS = [np.float32, np.float64]
INTS = [np.int32, np.int64]
NUMERIC = FLOATS + INTS
TOLERANCE = {np.float32: {"rtol": 2e-6, "atol": 1e-6}, np.float64: {"rtol": 1e-12, "atol": 1e-12}}

COVERED: set[str] = set()       # op types some test below declares it exercises
_executed: set[str] = set()     # op types the current test actually ran


def covers(*op_types: str):
    """Declares the op types a test exercises and, after it passes, checks that they really ran
    in one of its sessions (so the coverage list cannot drift from the tests). A test
    parametrized by `op_type` must run the one op type of each case."""
    def decorate(fn):
        COVERED.update(op_types)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            _executed.clear()
            fn(*args, **kwargs)
            required = {kwargs["op_type"]} if "op_type" in kwargs else set(op_types)
            missing = required - _executed
            assert not missing, f"{fn.__name__} declares {sorted(missing)} but never ran them"
        return wrapper
    return decorate


class OpRunner:
    """One graph pinned to one device (`cpu` or the virtual `gpu`), run traced; records which
    op types executed and checks every fetched value's dtype and shape against the graph."""

    def __init__(self, device: str):
        self.device = device
        self.graph = tf.Graph()
        self._session: tf.Session | None = None

    @contextlib.contextmanager
    def scope(self):
        with self.graph.as_default(), tf.device(f"/{self.device}:0"):
            yield

    @property
    def session(self) -> tf.Session:
        if self._session is None:
            gpus = 1 if self.device == "gpu" else 0
            self._session = tf.Session(graph=self.graph, config=tf.ConfigProto(virtual_gpus=gpus))
        return self._session

    def run(self, fetches, feeds=None):
        metadata = tf.RunMetadata()
        out = self.session.run(fetches, feeds,
                               options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                               run_metadata=metadata)
        self._record(metadata)
        if isinstance(fetches, list):
            for fetch, value in zip(fetches, out):
                self._check_static(fetch, value)
        else:
            self._check_static(fetches, out)
        return out

    def _record(self, metadata) -> None:
        types = {op.name: op.type for op in self.graph.get_operations()}
        placement = self.session.placement.as_dict()
        want = "/device:GPU:0" if self.device == "gpu" else "/device:CPU:0"
        for name, device in placement.items():
            if name in types:
                assert device.endswith(want), f"{name} ({types[name]}) ran on {device}"
        for dev in metadata.step_stats.dev_stats:
            _executed.update(types[n.node_name] for n in dev.node_stats if n.node_name in types)
        _executed.update(types[n] for n in placement if types.get(n) in BOUND_ONCE)

    @staticmethod
    def _check_static(fetch, value) -> None:
        if not isinstance(fetch, tf.Tensor):
            return
        array = np.asarray(value)
        assert array.dtype == fetch.dtype.base_dtype.numpy_dtype, \
            f"{fetch.name}: kernel gave {array.dtype}, graph says {fetch.dtype.name}"
        assert fetch.shape.is_compatible_with(TensorShape(list(array.shape))), \
            f"{fetch.name}: kernel gave shape {array.shape}, graph says {fetch.shape}"

    def close(self) -> None:
        if self._session is not None:
            self._session.close()


def mark_executed(op_type: str) -> None:
    """For a kernel whose effect is an error raised before any step stats exist."""
    _executed.add(op_type)


def rand(rng, shape, dtype, low=-3.0, high=3.0) -> np.ndarray:
    if np.issubdtype(dtype, np.integer):
        return rng.integers(int(low), int(high) + 1, size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


def away_from_zero(rng, shape, dtype, low=0.5, high=2.0) -> np.ndarray:
    signs = rng.choice([-1.0, 1.0], size=shape)
    return (signs * rng.uniform(low, high, size=shape)).astype(dtype)


def assert_close(got, want, dtype) -> None:
    want = np.asarray(want).astype(dtype)
    assert np.asarray(got).shape == want.shape
    if np.issubdtype(dtype, np.floating):
        np.testing.assert_allclose(got, want, **TOLERANCE[dtype])
    else:
        np.testing.assert_array_equal(got, want)


def tf_dtype(dtype) -> tf.DType:
    return tf.as_dtype(np.dtype(dtype))


def import_every_test_module() -> None:
    """Kernel tests live in several modules (one per op family); the registry-wide coverage
    check must see every module's `covers` declarations, however pytest was invoked."""
    for path in sorted(pathlib.Path(__file__).parent.glob("test_*.py")):
        importlib.import_module(path.stem)
