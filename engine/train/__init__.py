"""tf.train: optimizers, learning-rate schedules, moving averages, the global step, Saver,
MonitoredTrainingSession and the SessionRunHooks. Each module lists its names in __all__."""

from engine.train.checkpoint_file import *  # noqa: F401,F403
from engine.train.checkpoint_state import *  # noqa: F401,F403
from engine.train.coordinator import *  # noqa: F401,F403
from engine.train.hooks import *  # noqa: F401,F403
from engine.train.learning_rate_decay import *  # noqa: F401,F403
from engine.train.meta_graph import *  # noqa: F401,F403
from engine.train.monitored_session import *  # noqa: F401,F403
from engine.train.moving_averages import *  # noqa: F401,F403
from engine.train.optimizer import (  # noqa: F401
    GradientDescentOptimizer,
    Optimizer,
    create_global_step,
    get_global_step,
    get_or_create_global_step,
)
from engine.train.optimizers import *  # noqa: F401,F403
from engine.train.saver import *  # noqa: F401,F403
from engine.train.saving_hooks import *  # noqa: F401,F403
from engine.train.session_manager import *  # noqa: F401,F403
from engine.train.session_run_hook import *  # noqa: F401,F403


def __getattr__(name: str):
    # SummarySaverHook lives with the summaries and builds on the hooks above; it resolves on
    # first use, so importing engine.summary.hook first never meets a half-made package.
    if name == "SummarySaverHook":
        from engine.summary.hook import SummarySaverHook
        return SummarySaverHook
    raise AttributeError(f"module 'engine.train' has no attribute '{name}'")
