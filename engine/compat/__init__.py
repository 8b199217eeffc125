"""tf.compat: `import engine.compat.v1 as tf` gives the same API as `import engine as tf`."""

import importlib


def __getattr__(name: str):
    if name == "v1":
        return importlib.import_module("engine.compat.v1")
    raise AttributeError(f"module 'engine.compat' has no attribute '{name}'")
