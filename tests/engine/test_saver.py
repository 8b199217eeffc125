"""tf.train.Saver: exact round trips, the checkpoint state file, max_to_keep and
keep_checkpoint_every_n_hours, var_list forms, restores across devices, and the named errors
for checkpoints that do not match the graph."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import engine as tf
from engine import errors
from engine.train import checkpoint_file
from engine.train import saver as saver_module

ROUND_TRIP = {
    "float16": np.array([[1.5, -0.0], [np.inf, 65504.0]], np.float16),
    "float32": np.array([np.pi, -1e-38, np.nan, 3.4e38], np.float32),
    "float64": np.array([np.e, -0.0, 1e-308, np.finfo(np.float64).max]),
    "complex64": np.array([1 + 2j, -3.5j], np.complex64),
    "complex128": np.array([[np.pi + np.e * 1j]], np.complex128),
    "int8": np.array([-128, 127], np.int8),
    "int16": np.array([-32768, 7], np.int16),
    "int32": np.array([2**31 - 1, -(2**31)], np.int32),
    "int64": np.array(2**62 + 3, np.int64),
    "uint8": np.array([255, 0, 1], np.uint8),
    "uint16": np.array([65535], np.uint16),
    "uint32": np.array([2**32 - 1], np.uint32),
    "uint64": np.array([2**64 - 1, 2**63 + 5], np.uint64),
    "bool": np.array([True, False, True]),
}


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def _graph_with(values: dict[str, np.ndarray], device: str | None = None):
    g = tf.Graph()
    with g.as_default(), g.device(device):
        variables = {name: tf.Variable(v, name=name) for name, v in values.items()}
    return g, variables


def _zeros_like(values):
    return {k: np.zeros_like(v) for k, v in values.items()}


def test_every_dtype_round_trips_bit_for_bit(tmp_path):
    g, _ = _graph_with(ROUND_TRIP)
    with g.as_default():
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "model.ckpt"))
    assert path == str(tmp_path / "model.ckpt")
    g2, vs = _graph_with(_zeros_like(ROUND_TRIP))
    with g2.as_default():
        restorer = tf.train.Saver()
        with tf.Session() as sess:
            restorer.restore(sess, path)
            got = sess.run(vs)
    for name, want in ROUND_TRIP.items():
        assert got[name].dtype == want.dtype, name
        assert _bits(got[name]) == _bits(want), name
    reader = tf.train.NewCheckpointReader(path)
    assert reader.get_variable_to_dtype_map()["complex128"] is tf.complex128
    assert _bits(reader.get_tensor("uint64")) == _bits(ROUND_TRIP["uint64"])


def test_bfloat16_values_round_trip_through_the_bundle(tmp_path):
    import torch
    exact = torch.tensor([1.5, -2.25, 3.0e38, float("inf"), -0.0, 1e-40],
                         dtype=torch.bfloat16).float().numpy()
    prefix = str(tmp_path / "bf")
    checkpoint_file.write_checkpoint(prefix, {"w": (exact, tf.bfloat16),
                                              "s": (np.float32(2.5), tf.bfloat16)})
    reader = checkpoint_file.CheckpointReader(prefix)
    assert reader.get_variable_to_dtype_map() == {"w": tf.bfloat16, "s": tf.bfloat16}
    assert reader.get_variable_to_shape_map() == {"w": [6], "s": []}
    assert _bits(reader.get_tensor("w")) == _bits(exact)
    assert reader.get_tensor("s") == np.float32(2.5)


def test_the_files_are_safetensors_and_json(tmp_path):
    import safetensors
    g, _ = _graph_with({"w": np.arange(6, dtype=np.float32).reshape(2, 3)})
    with g.as_default():
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            prefix = saver.save(sess, str(tmp_path / "m"), global_step=7)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m-7.index", "m-7.meta",
                                            "m-7.safetensors"]
    index = json.loads((tmp_path / "m-7.index").read_text())
    assert index["format"] == "engine.checkpoint"
    assert index["data_bytes"] == (tmp_path / "m-7.safetensors").stat().st_size
    assert index["tensors"]["w"]["dtype"] == "float32"
    assert index["tensors"]["w"]["shape"] == [2, 3]
    stored = dict(safetensors.deserialize((tmp_path / "m-7.safetensors").read_bytes()))
    assert stored["w"]["dtype"] == "F32" and stored["w"]["shape"] == [2, 3]
    assert np.frombuffer(bytes(stored["w"]["data"]), np.float32).tolist() == list(range(6))
    assert prefix == str(tmp_path / "m-7")


def test_restore_is_a_session_run_of_tf_named_ops(tmp_path):
    g = tf.Graph()
    with g.as_default():
        a = tf.Variable([1.0, 2.0], name="a")
        b = tf.Variable(3, name="b")
        saver = tf.train.Saver()
        names = [op.name for op in g.get_operations() if op.name.startswith("save/")]
        assert names == ["save/RestoreV2", "save/Assign", "save/RestoreV2_1", "save/Assign_1",
                         "save/restore_all"]
        assert saver.saver_def.restore_op_name == "save/restore_all"
        assert tf.train.Saver().saver_def.restore_op_name == "save_1/restore_all"
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "ckpt"))
            sess.run([tf.assign(a, [0.0, 0.0]), tf.assign(b, 0)])
            sess.run("save/restore_all", {"save/RestoreV2:0": [5.0, 6.0],
                                          "save/RestoreV2_1:0": 9})
            assert sess.run([a, b])[0].tolist() == [5.0, 6.0]
            saver.restore(sess, path)
            got = sess.run([a, b])
    assert got[0].tolist() == [1.0, 2.0] and got[1] == 3


def test_global_step_names_the_file_and_the_state_file_is_tfs_text(tmp_path):
    g = tf.Graph()
    with g.as_default():
        tf.Variable(1.0, name="v")
        step = tf.train.get_or_create_global_step()
        saver = tf.train.Saver(max_to_keep=2)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=np.int64(5))
            second = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
            sess.run(tf.assign(step, 11))
            third = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
    assert [first, second, third] == [str(tmp_path / f"model.ckpt-{n}") for n in (5, 0, 11)]
    assert (tmp_path / "checkpoint").read_text() == (
        f'model_checkpoint_path: "{tmp_path}/model.ckpt-11"\n'
        f'all_model_checkpoint_paths: "{tmp_path}/model.ckpt-0"\n'
        f'all_model_checkpoint_paths: "{tmp_path}/model.ckpt-11"\n')
    assert not tf.train.checkpoint_exists(first)
    assert not (tmp_path / "model.ckpt-5.meta").exists()
    assert not (tmp_path / "model.ckpt-5.safetensors").exists()
    assert tf.train.checkpoint_exists(third)
    assert tf.train.latest_checkpoint(str(tmp_path)) == third
    assert saver.last_checkpoints == [second, third]


def test_relative_save_paths_are_written_relative_to_their_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkdir("rel")
    g, _ = _graph_with({"v": np.float32(1)})
    with g.as_default():
        saver = tf.train.Saver(max_to_keep=None)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            saver.save(sess, "rel/model", global_step=5)
            assert saver.save(sess, "rel/model", global_step=7) == "rel/model-7"
    # TF writes exactly this (checked against tensorflow 2.21's compat.v1 Saver).
    assert (tmp_path / "rel" / "checkpoint").read_text() == (
        'model_checkpoint_path: "model-7"\nall_model_checkpoint_paths: "model-7"\n')
    state = tf.train.get_checkpoint_state("rel")
    assert state.model_checkpoint_path == "rel/model-7"
    assert state.all_model_checkpoint_paths == ["rel/model-7"]
    # max_to_keep=None deletes nothing.
    assert tf.train.checkpoint_exists("rel/model-5")


def test_keep_checkpoint_every_n_hours_spares_one_per_period(tmp_path, monkeypatch):
    clock = {"now": 1000.0}
    monkeypatch.setattr(saver_module.time, "time", lambda: clock["now"])
    g, _ = _graph_with({"v": np.float32(1)})
    with g.as_default():
        saver = tf.train.Saver(max_to_keep=1, keep_checkpoint_every_n_hours=1)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(6):
                # Saves 40 minutes apart: the first checkpoint after each full hour survives.
                clock["now"] = 1000.0 + step * 2400
                saver.save(sess, str(tmp_path / "m"), global_step=step)
    kept = sorted(int(f[2:-6]) for f in os.listdir(tmp_path) if f.endswith(".index"))
    assert kept == [2, 4, 5]


def test_var_list_as_a_map_renames_keys_and_restores_into_another_graph(tmp_path):
    g, vs = _graph_with({"layer/w": np.array([1.0, 2.0], np.float32)})
    with g.as_default():
        saver = tf.train.Saver({"weights": vs["layer/w"]})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "renamed"), write_meta_graph=False)
    assert tf.train.list_variables(path) == [("weights", [2])]
    assert tf.train.load_variable(str(tmp_path), "weights:0").tolist() == [1.0, 2.0]
    g2 = tf.Graph()
    with g2.as_default():
        other = tf.Variable([0.0, 0.0], name="elsewhere")
        tf.Variable(5.0, name="not_restored")
        restorer = tf.train.Saver({"weights": other})
        with tf.Session() as sess:
            restorer.restore(sess, path)
            assert sess.run(other).tolist() == [1.0, 2.0]


def test_var_list_errors_use_tfs_words():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable([1.0], name="v")
        t = tf.constant(3.0)
        with pytest.raises(TypeError, match="Variable to save is not a Variable"):
            tf.train.Saver([t])
        with pytest.raises(ValueError, match="At least two variables have the same name: v"):
            tf.train.Saver([v, v])
        with pytest.raises(ValueError, match="The same saveable will be restored with two "
                                             "names"):
            tf.train.Saver({"a": v, "b": v})
        with pytest.raises(TypeError, match="Not a variable"):
            tf.train.Saver({"a": 3})
        with pytest.raises(ValueError, match="No variables to save"):
            tf.train.Saver([])
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="No variables to save"):
            tf.train.Saver()
        with tf.Session() as sess:
            assert tf.train.Saver(allow_empty=True).save(sess, "/nonexistent/x",
                                                         write_meta_graph=False) is None


def test_save_path_errors(tmp_path):
    g, _ = _graph_with({"v": np.float32(1)})
    with g.as_default():
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(ValueError, match="Parent directory of .* doesn't exist"):
                saver.save(sess, str(tmp_path / "missing" / "model"))
            with pytest.raises(ValueError, match="must not contain path components"):
                saver.save(sess, str(tmp_path / "m"), latest_filename="a/b")
            with pytest.raises(ValueError, match="Can't load save_path when it is None"):
                saver.restore(sess, None)
            with pytest.raises(ValueError, match="not a valid checkpoint: .*nothere"):
                saver.restore(sess, str(tmp_path / "nothere"))


def test_uninitialized_variable_fails_the_save_with_tfs_error(tmp_path):
    g, _ = _graph_with({"v": np.float32(1)})
    with g.as_default():
        saver = tf.train.Saver()
        with tf.Session() as sess:
            with pytest.raises(errors.FailedPreconditionError, match="uninitialized value v"):
                saver.save(sess, str(tmp_path / "m"))
    assert not tf.train.checkpoint_exists(str(tmp_path / "m"))


def _saved(tmp_path, values, name="ckpt"):
    g, _ = _graph_with(values)
    with g.as_default():
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return saver.save(sess, str(tmp_path / name))


def test_shape_mismatch_names_the_variable_and_both_shapes(tmp_path):
    path = _saved(tmp_path, {"v": np.zeros(3, np.float32), "w": np.zeros(2, np.float32)})
    g, _ = _graph_with({"v": np.zeros(4, np.float32), "w": np.zeros(2, np.float32)})
    with g.as_default():
        saver = tf.train.Saver()
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError) as info:
                saver.restore(sess, path)
    message = str(info.value)
    assert message.startswith("Restoring from checkpoint failed. This is most likely due to a "
                              "mismatch between the current graph and the graph from the "
                              "checkpoint.")
    assert "Assign requires shapes of both tensors to match. lhs shape= [4] rhs shape= [3]" \
        in message
    assert "variable 'v' has shape [4] in the graph and [3] in checkpoint" in message
    assert path in message


def test_variable_missing_from_the_checkpoint_is_not_found(tmp_path):
    path = _saved(tmp_path, {"v": np.zeros(3, np.float32)})
    g, _ = _graph_with({"v": np.zeros(3, np.float32), "zz": np.zeros(3, np.float32)})
    with g.as_default():
        saver = tf.train.Saver()
        with tf.Session() as sess:
            with pytest.raises(errors.NotFoundError) as info:
                saver.restore(sess, path)
    assert "due to a Variable name or other graph key that is missing from the checkpoint" \
        in str(info.value)
    assert "Key zz not found in checkpoint" in str(info.value)


def test_dtype_mismatch_is_invalid_argument(tmp_path):
    path = _saved(tmp_path, {"v": np.zeros(3, np.float64)})
    g, _ = _graph_with({"v": np.zeros(3, np.float32)})
    with g.as_default():
        saver = tf.train.Saver()
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError,
                               match="tensor_name = v; expected dtype float does not equal "
                                     "original dtype double"):
                saver.restore(sess, path)


def test_a_failed_restore_assigns_nothing(tmp_path):
    path = _saved(tmp_path, {"a": np.ones(2, np.float32), "b": np.ones(3, np.float32)})
    g, vs = _graph_with({"a": np.zeros(2, np.float32), "b": np.zeros(4, np.float32)})
    with g.as_default():
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(errors.InvalidArgumentError):
                saver.restore(sess, path)
            assert sess.run(vs["a"]).tolist() == [0.0, 0.0]


def test_checkpoint_reader_api(tmp_path):
    path = _saved(tmp_path, {"v": np.array([1.0, 2.0], np.float32), "n": np.int64(4)})
    reader = tf.train.NewCheckpointReader(path)
    assert reader.has_tensor("v") and not reader.has_tensor("nope")
    assert reader.get_variable_to_shape_map() == {"v": [2], "n": []}
    assert reader.debug_string() == b"n (DT_INT64) []\nv (DT_FLOAT) [2]\n"
    with pytest.raises(errors.NotFoundError, match="Key nope not found in checkpoint"):
        reader.get_tensor("nope")
    with pytest.raises(errors.NotFoundError, match="Failed to find any matching files for"):
        tf.train.NewCheckpointReader(str(tmp_path / "absent"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
        tf.train.list_variables(str(tmp_path / "empty"))


def test_saved_on_a_gpu_restores_in_a_cpu_only_session(tmp_path):
    values = {"w": np.arange(4, dtype=np.float32), "step": np.int64(12)}
    g, _ = _graph_with(values, device="/device:GPU:0")
    with g.as_default():
        saver = tf.train.Saver()
        with tf.Session(config=tf.ConfigProto(virtual_gpus=1)) as sess:
            sess.run(tf.global_variables_initializer())
            assert "GPU" in sess.placement.decisions["w"].assigned
            path = saver.save(sess, str(tmp_path / "gpu"))
    g2, vs = _graph_with(_zeros_like(values))
    with g2.as_default():
        restorer = tf.train.Saver()
        with tf.Session(config=tf.ConfigProto(virtual_gpus=0)) as sess:
            restorer.restore(sess, path)
            got = sess.run(vs)
            assert all("CPU" in d.assigned for d in sess.placement.decisions.values())
    assert got["w"].tolist() == [0.0, 1.0, 2.0, 3.0] and got["step"] == 12


def test_restore_reaches_variables_on_a_gpu(tmp_path):
    path = _saved(tmp_path, {"w": np.array([7.0, 8.0], np.float32)})
    g, vs = _graph_with({"w": np.zeros(2, np.float32)}, device="/device:GPU:0")
    with g.as_default():
        restorer = tf.train.Saver()
        with tf.Session(config=tf.ConfigProto(virtual_gpus=1)) as sess:
            restorer.restore(sess, path)
            decisions = sess.placement.decisions
            assert "GPU" in decisions["save/Assign"].assigned
            assert sess.run(vs["w"]).tolist() == [7.0, 8.0]


def test_meta_graph_imports_and_restores_by_tensor_names(tmp_path):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.Variable([[1.0], [2.0]], name="w")
        tf.identity(tf.matmul(x, w), name="y")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(tf.assign(w, [[3.0], [4.0]]))
            path = saver.save(sess, str(tmp_path / "model"))
    g2 = tf.Graph()
    with g2.as_default():
        restorer = tf.train.import_meta_graph(path + ".meta")
        with tf.Session() as sess:
            restorer.restore(sess, path)
            y = sess.run("y:0", {"x:0": [[1.0, 1.0]]})
    assert y.tolist() == [[7.0]]


def test_a_file_that_cannot_be_written_is_a_named_engine_error(tmp_path):
    g, _ = _graph_with({"v": np.zeros(2, np.float32)})
    (tmp_path / "m.safetensors").mkdir()     # in the way of the data file
    with g.as_default():
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(errors.UnknownError, match=r"m\.safetensors: .* \(while writing "
                                                          r"a checkpoint\)"):
                saver.save(sess, str(tmp_path / "m"))
    assert not tf.train.checkpoint_exists(str(tmp_path / "m"))
    assert [p.name for p in tmp_path.iterdir()] == ["m.safetensors"]   # no temporary left
