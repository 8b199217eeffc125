"""The tf.compat.v1 surface: everything `engine` exports."""

from engine.api import *  # noqa: F401,F403
from engine.api import (  # noqa: F401
    __all__,  # noqa: F401
    errors,
    nn,
    summary,
    train,
)


def disable_eager_execution() -> None:
    """Graph mode is the only mode here; kept so ported TF2-era scripts run unchanged."""


def disable_v2_behavior() -> None:
    """Graph mode is the only mode here."""
