"""RunReader.scalar_values and scalar_points: the curve's two reads (every value from the
index, then the steps and wall times of the kept rows) give what scalar_series gives, NaN
and infinities included, in step order with ties in the order written."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.record import RunReader, RunStoreError, RunWriter


@pytest.fixture
def run_dir(tmp_path):
    with RunWriter(tmp_path, "r") as writer:
        for step, value in [(3, 1.5), (0, -2.0), (1, math.nan), (1, math.inf), (2, -math.inf),
                            (5, 7.25), (4, 1e-300)]:
            writer.scalar("loss", value, step)
        writer.scalar("other", 9.0, 0)
    return tmp_path / "r"


def test_values_and_points_are_the_series(run_dir):
    with RunReader(run_dir) as reader:
        steps, values, walls = reader.scalar_series("loss")
        ids, got = reader.scalar_values("loss")
        np.testing.assert_array_equal(got, values)          # NaN where NaN, same order
        assert ids.dtype == np.int64 and len(set(ids.tolist())) == len(ids)
        kept = np.array([0, 2, 5])
        kept_steps, kept_walls = reader.scalar_points(ids[kept])
    np.testing.assert_array_equal(kept_steps, steps[kept])
    np.testing.assert_array_equal(kept_walls, walls[kept])
    assert kept_steps.dtype == np.int64 and kept_walls.dtype == np.float64


def test_points_keep_the_order_asked_and_read_more_than_one_query_holds(tmp_path):
    with RunWriter(tmp_path, "long") as writer:
        for step in range(2500):
            writer.scalar("x", float(step % 7), step)
    with RunReader(tmp_path / "long") as reader:
        ids, _values = reader.scalar_values("x")
        steps, _walls = reader.scalar_points(ids[::-1])
        assert steps.tolist() == list(range(2499, -1, -1))
        with pytest.raises(RunStoreError, match="no scalar row"):
            reader.scalar_points(np.array([10**9]))


def test_an_unknown_tag_is_a_key_error(run_dir):
    with RunReader(run_dir) as reader, pytest.raises(KeyError, match="no scalar tag 'nope'"):
        reader.scalar_values("nope")
