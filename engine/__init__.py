"""`import engine as tf` gives the tf.compat.v1 names this engine implements. They live in
engine/api.py and load on first attribute access, so the run store (`engine.record`) and the
workbench that reads it never import torch."""

from __future__ import annotations

import importlib
import importlib.util


def _api():
    return importlib.import_module("engine.api")


def __getattr__(name: str):
    if name.startswith("__") and name != "__all__":
        raise AttributeError(name)
    # `from engine import dtypes` asks for the attribute before importing the submodule;
    # answer with the submodule alone so light imports stay light (and acyclic).
    if importlib.util.find_spec(f"engine.{name}") is not None:
        return importlib.import_module(f"engine.{name}")
    try:
        value = getattr(_api(), name)
    except AttributeError:
        raise AttributeError(f"module 'engine' has no attribute '{name}'") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_api().__all__))
