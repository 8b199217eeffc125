"""tf.compat: `import engine.compat.v1 as tf` gives the same API as `import engine as tf`."""
