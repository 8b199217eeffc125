"""A damaged checkpoint set (bytes flipped, files truncated) either restores exactly the saved
values or raises an engine.errors error naming the damaged file; never anything else."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

import engine as tf
from engine import errors

VALUES = {"dense/kernel": np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
          "dense/bias": np.array([1.5, -2.5, 0.0, 3.25], np.float64),
          "global_step": np.int64(42), "flags": np.array([True, False])}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A saved checkpoint, and a graph + session + saver that restore it."""
    directory = tmp_path_factory.mktemp("fuzz")
    g = tf.Graph()
    with g.as_default():
        variables = {k: tf.Variable(v, name=k) for k, v in VALUES.items()}
        saver = tf.train.Saver()
        # Built once: adding ops per attempt would re-place the graph every time.
        reset = tf.group(*[tf.assign(v, np.zeros_like(VALUES[k])) for k, v in variables.items()])
        sess = tf.Session()
        sess.run(tf.global_variables_initializer())
        prefix = saver.save(sess, str(directory / "model.ckpt"), global_step=42)
    originals = {name: open(os.path.join(directory, name), "rb").read()
                 for name in os.listdir(directory)}
    yield directory, prefix, saver, sess, (variables, reset), originals
    sess.close()


def _restore_outcome(directory, prefix, saver, sess, variables, damaged: str) -> str:
    """'restored' (values checked exact), or the error's class name after checking it is one
    of ours and names the damaged file."""
    variables, reset = variables
    sess.run(reset)
    try:
        found = tf.train.latest_checkpoint(str(directory))
        if found is None:
            return "no checkpoint"
        saver.restore(sess, found)
    except errors.OpError as e:
        if damaged != "checkpoint":
            assert os.path.join(directory, damaged) in str(e), str(e)
        return type(e).__name__
    got = sess.run(variables)
    for k, want in VALUES.items():
        assert np.asarray(got[k]).tobytes() == np.asarray(want).tobytes(), k
    return "restored"


def _restore_originals(directory, originals) -> None:
    for name, data in originals.items():
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)


@pytest.mark.parametrize("damaged", ["model.ckpt-42.index", "model.ckpt-42.safetensors",
                                     "checkpoint"])
def test_flipped_bytes_never_raise_foreign_errors(checkpoint, damaged):
    directory, prefix, saver, sess, variables, originals = checkpoint
    rng = random.Random(damaged)
    outcomes = set()
    data = originals[damaged]
    for _ in range(80):
        flipped = bytearray(data)
        for _ in range(rng.choice((1, 1, 2, 8))):
            flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
        _restore_originals(directory, originals)
        with open(os.path.join(directory, damaged), "wb") as f:
            f.write(bytes(flipped))
        outcomes.add(_restore_outcome(directory, prefix, saver, sess, variables, damaged))
    _restore_originals(directory, originals)
    if damaged != "checkpoint":
        assert "DataLossError" in outcomes


@pytest.mark.parametrize("damaged", ["model.ckpt-42.index", "model.ckpt-42.safetensors",
                                     "checkpoint"])
def test_truncated_files_never_raise_foreign_errors(checkpoint, damaged):
    directory, prefix, saver, sess, variables, originals = checkpoint
    data = originals[damaged]
    for length in sorted(set(range(0, len(data), max(1, len(data) // 47))) | {len(data) - 1}):
        _restore_originals(directory, originals)
        with open(os.path.join(directory, damaged), "wb") as f:
            f.write(data[:length])
        outcome = _restore_outcome(directory, prefix, saver, sess, variables, damaged)
        if not data[length:].strip():
            assert outcome == "restored", length     # only a trailing newline went
        elif damaged == "checkpoint":
            assert outcome in ("no checkpoint", "restored"), length
        else:
            assert outcome == "DataLossError", length
    _restore_originals(directory, originals)


def test_a_missing_data_file_is_not_found(checkpoint):
    directory, prefix, saver, sess, variables, originals = checkpoint
    os.remove(prefix + ".safetensors")
    try:
        with pytest.raises(errors.NotFoundError, match="data file of checkpoint"):
            saver.restore(sess, prefix)
    finally:
        _restore_originals(directory, originals)
