"""RunReader.scalar_series: steps, values and wall times of a tag in one read, in step order
(ties in the order written), NaN kept; the same as scalars() and scalar_wall_times()."""

import math

import numpy as np

from engine.record import RunReader, RunWriter


def test_scalar_series_matches_the_two_separate_reads(tmp_path):
    with RunWriter(tmp_path, "r") as writer:
        for step, value, wall in ((2, 0.5, 10.0), (0, 1.5, 11.0), (2, float("nan"), 12.0),
                                  (1, -3.0, 13.0)):
            writer.scalar("loss", value, step, wall_time=wall)
    with RunReader(tmp_path / "r") as reader:
        steps, values, walls = reader.scalar_series("loss")
        np.testing.assert_array_equal(steps, [0, 1, 2, 2])
        assert values[:3].tolist() == [1.5, -3.0, 0.5] and math.isnan(values[3])
        np.testing.assert_array_equal(walls, [11.0, 13.0, 10.0, 12.0])
        plain_steps, plain_values = reader.scalars("loss")
        np.testing.assert_array_equal(plain_steps, steps)
        np.testing.assert_array_equal(plain_values, values)
        np.testing.assert_array_equal(reader.scalar_wall_times("loss"), walls)
