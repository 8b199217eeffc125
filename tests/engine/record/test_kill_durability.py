"""kill -9 at random moments of a heavily logging training process: every step it reported
finished is readable, but possibly the last (the step whose commit was in flight), and the
run still opens. bench/bench_durability.py runs many more trials for the figure."""

from __future__ import annotations

import random

import pytest
from kill_trials import Zygote

TRIALS = 12


@pytest.fixture(scope="module")
def zygote():
    zygote = Zygote()
    yield zygote
    zygote.close()


def test_sigkill_at_random_moments_loses_at_most_the_step_in_flight(zygote, tmp_path):
    rng = random.Random(20261201)
    results = [zygote.trial(tmp_path, f"victim-{trial}", rng) for trial in range(TRIALS)]
    for trial, result in enumerate(results):
        assert result.exit_code == -9, f"trial {trial}: {result}"
        assert not result.problems, f"trial {trial}: {result.problems[:3]}"
        assert result.steps_lost <= 1, f"trial {trial}: {result}"
    assert max(r.reported for r in results) >= 30   # the kills landed at varied depths
