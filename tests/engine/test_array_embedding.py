"""tf.nn.embedding_lookup: one table or a list of shards split "mod" or "div" (TF's id
assignment, e.g. 13 ids over 5 shards), max_norm clipping, gradients into every shard
against torch, gathers placed with their shard, and the errors for bad arguments."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from grad_harness import check_gradients, grad_test

import engine as tf

TABLE = np.arange(13 * 3, dtype=np.float64).reshape(13, 3)
# TF's documented assignment of 13 ids to 5 shards.
MOD = [[0, 5, 10], [1, 6, 11], [2, 7, 12], [3, 8], [4, 9]]
DIV = [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10], [11, 12]]
IDS = np.array([[12, 0, 7], [3, 3, 11]])


def _shards(assignment):
    return [TABLE[ids] for ids in assignment]


def _run(out, feeds=None):
    with tf.Session(graph=out.graph) as s:
        return s.run(out, feeds)


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_sharded_lookup_reads_rows_as_tf_assigns_them(strategy):
    g = tf.Graph()
    with g.as_default():
        shards = [tf.constant(s) for s in _shards(MOD if strategy == "mod" else DIV)]
        out = tf.nn.embedding_lookup(shards, IDS, partition_strategy=strategy)
        assert out.shape.as_list() == [2, 3, 3]
        np.testing.assert_array_equal(_run(out), TABLE[IDS])


def test_single_table_is_a_gather_named_embedding_lookup():
    g = tf.Graph()
    with g.as_default():
        out = tf.nn.embedding_lookup(tf.constant(TABLE), IDS)
        assert out.op.type == "Identity"
        assert g.get_operation_by_name("embedding_lookup").type == "GatherV2"
        np.testing.assert_array_equal(_run(out), TABLE[IDS])


@pytest.mark.parametrize("shards", [1, 3])
def test_max_norm_clips_each_embedding(shards):
    g = tf.Graph()
    with g.as_default():
        params = [tf.constant(TABLE[p::shards]) for p in range(shards)]
        out = tf.nn.embedding_lookup(params if shards > 1 else params[0], IDS, max_norm=10.0)
        rows = TABLE[IDS]
        norms = np.linalg.norm(rows, axis=-1, keepdims=True)
        np.testing.assert_allclose(_run(out), rows * 10.0 / np.maximum(norms, 10.0))


@grad_test("GatherV2", "SelectV2")
@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_gradients_reach_every_shard(strategy):
    assignment = MOD if strategy == "mod" else DIV
    rng = np.random.default_rng(3)
    shards = [rng.uniform(-2, 2, (len(a), 3)) for a in assignment]

    def torch_fn(*parts):
        table = torch.zeros(13, 3, dtype=torch.float64)
        for rows, part in zip(assignment, parts):
            table = table.index_add(0, torch.tensor(rows), part)
        return table[torch.from_numpy(IDS)]
    check_gradients(lambda *ps: tf.nn.embedding_lookup(list(ps), IDS,
                                                        partition_strategy=strategy),
                    torch_fn, shards)


def test_variable_shards_gather_on_their_own_devices():
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            a = tf.Variable(TABLE[0::2])
        with tf.device("/gpu:0"):
            b = tf.Variable(TABLE[1::2])
        out = tf.nn.embedding_lookup([a, b], IDS)
        gathers = [op for op in g.get_operations() if op.type == "GatherV2"
                   and op.inputs[0].op.type == "Identity"]
        assert sorted(op.device for op in gathers) == ["/device:CPU:0", "/device:GPU:0"]
        with tf.Session(graph=g, config=tf.ConfigProto(virtual_gpus=1)) as s:
            s.run([a.initializer, b.initializer])
            np.testing.assert_array_equal(s.run(out), TABLE[IDS])


@pytest.mark.parametrize("call, pattern", [
    (lambda: tf.nn.embedding_lookup([], [0]), "Need at least one param"),
    (lambda: tf.nn.embedding_lookup(None, [0]), "params must be specified"),
    (lambda: tf.nn.embedding_lookup([tf.zeros([2, 1])] * 2, [0], partition_strategy="x"),
     "Unrecognized partition strategy: x"),
    (lambda: tf.nn.embedding_lookup([tf.zeros([4, 1]), tf.zeros([2, 1])], [0]),
     "Shard 0 of embedding_lookup has 4 rows, but partition_strategy 'mod' over 6 ids gives "
     "it 3"),
    (lambda: tf.nn.embedding_lookup([tf.placeholder(tf.float32, [None, 2])] * 2, [0]),
     "needs the first dimension of every shard"),
])
def test_bad_arguments(call, pattern):
    with tf.Graph().as_default(), pytest.raises(ValueError, match=pattern):
        call()


def test_out_of_range_id_names_the_lookup():
    g = tf.Graph()
    with g.as_default():
        out = tf.nn.embedding_lookup([tf.constant(s) for s in _shards(MOD)], [13])
        with tf.Session(graph=g) as s, pytest.raises(tf.errors.InvalidArgumentError,
                                                     match=r"indices\[0\] = 13 is not in "
                                                           r"\[0, 13\)") as info:
            s.run(out)
    assert "embedding_lookup/" in str(info.value)
