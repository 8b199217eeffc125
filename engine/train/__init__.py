"""tf.train: optimizers and the global step (checkpoints and hooks come later)."""

from engine.train.optimizer import (  # noqa: F401
                                    GradientDescentOptimizer,
                                    Optimizer,
                                    create_global_step,
                                    get_global_step,
                                    get_or_create_global_step,
)
