"""tf.variable_scope / tf.get_variable: names, reuse, scope re-entry, default names, scope
defaults, regularizers, collections and TF's error messages. Expected names and messages
were printed by tensorflow 2.21's compat.v1 for the same programs."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from engine.graph import _default_graph_stack


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def _init_and_run(fetches):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(fetches)


# ---- TF's errors, word for word ----

def test_creating_an_existing_variable_is_disallowed(graph):
    with tf.variable_scope("x"):
        tf.get_variable("w", [3, 4])
    with pytest.raises(ValueError) as info, tf.variable_scope("x"):
        tf.get_variable("w", [3, 4])
    message = str(info.value)
    assert message.startswith("Variable x/w already exists, disallowed. Did you mean to set "
                              "reuse=True or reuse=tf.AUTO_REUSE in VarScope? Originally "
                              "defined at:\n\n")
    assert "test_variable_scope.py" in message     # where the first one was made


def test_reusing_a_missing_variable(graph):
    with pytest.raises(ValueError) as info, tf.variable_scope("x", reuse=True):
        tf.get_variable("v", [3, 4])
    assert str(info.value) == ("Variable x/v does not exist, or was not created with "
                               "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                               "VarScope?")


def test_sharing_with_another_shape_or_dtype(graph):
    with tf.variable_scope("x"):
        tf.get_variable("w", [3, 4])
    with tf.variable_scope("x", reuse=True):
        with pytest.raises(ValueError) as info:
            tf.get_variable("w", [3, 5])
        assert str(info.value) == ("Trying to share variable x/w, but specified shape (3, 5) "
                                   "and found shape (3, 4).")
        with pytest.raises(ValueError) as info:
            tf.get_variable("w", [3, 4], dtype=tf.float64)
        assert str(info.value) == ("Trying to share variable x/w, but specified dtype float64 "
                                   "and found dtype float32_ref.")


@pytest.mark.parametrize("call, error, message", [
    (lambda: tf.get_variable("c", [2], initializer=tf.constant([1., 2.])), ValueError,
     "If initializer is a constant, do not specify shape."),
    (lambda: tf.get_variable("c", initializer=tf.constant([1., 2.]), dtype=tf.int32),
     ValueError, "Initializer type '<dtype: 'float32'>' and explicit dtype '<dtype: 'int32'>' "
                 "don't match."),
    (lambda: tf.get_variable("c", dtype=tf.complex64, shape=[2]), ValueError,
     "An initializer for variable c of <dtype: 'complex64'> is required"),
    (lambda: tf.variable_scope(None), TypeError,
     "If default_name is None then name_or_scope is required"),
    (lambda: tf.variable_scope(None, default_name="d", reuse=True).__enter__(), ValueError,
     "reuse=True cannot be used without a name_or_scope"),
    (lambda: tf.variable_scope("q", reuse=5), ValueError,
     "The reuse parameter must be True or False or None."),
    (lambda: tf.get_variable("c"), ValueError,
     "Variable c did not get an initializer, so its `shape` argument must be specified."),
])
def test_argument_errors(graph, call, error, message):
    with pytest.raises(error) as info:
        call()
    assert str(info.value) == message
    assert tf.get_variable_scope().name == ""      # a failed entry leaves no scope behind


def test_unsupported_options_raise(graph):
    with pytest.raises(NotImplementedError, match="partitioned variables"):
        tf.get_variable("p", [4, 2], partitioner=lambda shape, dtype: [2, 1])
    with pytest.raises(NotImplementedError, match="use_resource=True"):
        tf.get_variable("r", [2], use_resource=True)


# ---- names, reuse and re-entry ----

def test_reentering_a_scope_opens_a_new_name_scope_but_keeps_variable_names(graph):
    with tf.variable_scope("s") as s:
        a = tf.get_variable("a", [1])
        assert (s.name, s.original_name_scope, tf.add(a, 1.0).name) == ("s", "s/", "s/Add:0")
    with tf.variable_scope(s):
        assert tf.add(a, 1.0).name == "s_1/Add:0"
        assert tf.get_variable("b", [1]).name == "s/b:0"
        current = tf.get_variable_scope()
        assert (current.name, current.original_name_scope) == ("s", "s/")
    with tf.variable_scope("s"):
        assert tf.add(a, 1.0).name == "s_2/Add:0"
        assert tf.get_variable("c", [1]).name == "s/c:0"
    assert [v.name for v in tf.trainable_variables("s")] == ["s/a:0", "s/b:0", "s/c:0"]


def test_reuse_is_inherited_except_by_a_scope_object(graph):
    with tf.variable_scope("s") as s:
        pass
    with tf.variable_scope("s", reuse=True):
        with tf.variable_scope("inner"):
            assert tf.get_variable_scope().reuse is True
    with tf.variable_scope("outer", reuse=True), tf.variable_scope(s):
        assert tf.get_variable_scope().reuse is False   # a scope object keeps its own


def test_reuse_true_auto_reuse_and_reuse_variables(graph):
    with tf.variable_scope("m"):
        w = tf.get_variable("w", [2, 2])
    with tf.variable_scope("m", reuse=True):
        assert tf.get_variable("w", [2, 2]) is w
        assert tf.get_variable("w") is w           # no shape: any shape matches
    with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
        first = tf.get_variable("v", [1])
    with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
        assert tf.get_variable("v", [1]) is first
    assert str(tf.AUTO_REUSE) == "_ReuseMode.AUTO_REUSE"
    with tf.variable_scope("ru") as scope:
        v1 = tf.get_variable("v", [1])
        scope.reuse_variables()
        assert tf.get_variable("v", [1]) is v1 and scope.reuse is True


def test_default_names_are_made_unique(graph):
    got = []
    for _ in range(3):
        with tf.variable_scope(None, default_name="dflt") as d:
            v = tf.get_variable("v", [1])
            got.append((d.name, d.original_name_scope, v.name, tf.add(v, 1.).name))
    assert got == [("dflt", "dflt/", "dflt/v:0", "dflt/Add:0"),
                   ("dflt_1", "dflt_1/", "dflt_1/v:0", "dflt_1/Add:0"),
                   ("dflt_2", "dflt_2/", "dflt_2/v:0", "dflt_2/Add:0")]
    assert [v.name for v in tf.global_variables("dflt_1")] == ["dflt_1/v:0"]


def test_default_names_restart_inside_each_reentered_scope(graph):
    names = []
    for _ in range(2):
        with tf.variable_scope("tower"):
            with tf.variable_scope(None, default_name="layer") as inner:
                names.append(inner.name)
    assert names == ["tower/layer", "tower/layer"]


def test_name_scopes_and_variable_scopes_nest_differently(graph):
    with tf.name_scope("ns"), tf.variable_scope("vs"):
        v = tf.get_variable("v", [1])
        assert (v.name, tf.add(v, 1.).name) == ("vs/v:0", "ns/vs/Add:0")
        assert tf.get_variable_scope().original_name_scope == "ns/vs/"
    with tf.variable_scope("a/b"):
        assert tf.get_variable("v", [1]).name == "a/b/v:0"
        assert tf.add(1., 2.).name == "a/b/Add:0"
    with tf.variable_scope("ctx") as ctx:
        pass
    with tf.variable_scope(ctx, auxiliary_name_scope=False) as again:
        assert tf.add(1., 2.).name == "Add:0" and again.original_name_scope == "ctx/"


def test_improper_nesting_is_an_error(graph):
    outer = tf.variable_scope("o")
    inner = tf.variable_scope("i")
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(RuntimeError, match="Improper nesting of variable_scope"):
        outer.__exit__(None, None, None)
    inner.__exit__(None, None, None)
    assert _default_graph_stack() == [graph]      # every graph context entered was left


# ---- scope defaults and variable options ----

def test_default_initializers(graph):
    w = tf.get_variable("w", [300, 500])
    n = tf.get_variable("n", [4], dtype=tf.int32)
    init_types = {op.type for op in graph.get_operations() if op.name.startswith("w/Init")}
    assert "RandomUniform" in init_types               # glorot_uniform
    w_val, n_val = _init_and_run([w, n])
    assert np.abs(w_val).max() <= np.sqrt(6 / 800) and w_val.std() > 0.03
    np.testing.assert_array_equal(n_val, [0, 0, 0, 0])


def test_scope_initializer_and_dtype_defaults_inherit(graph):
    with tf.variable_scope("it", initializer=tf.constant_initializer(3.0), dtype=tf.float64):
        v = tf.get_variable("v", [2])
        with tf.variable_scope("deeper"):
            u = tf.get_variable("u", [1])
            own = tf.get_variable("own", [1], initializer=tf.ones_initializer())
    assert v.dtype == tf.float64._as_ref and u.dtype == tf.float64._as_ref
    assert [op.name for op in graph.get_operations() if op.name.startswith("it/v")] == \
        ["it/v/Initializer/Const", "it/v", "it/v/Assign", "it/v/read"]
    v_val, u_val, own_val = _init_and_run([v, u, own])
    np.testing.assert_array_equal(v_val, [3.0, 3.0])
    assert u_val.tolist() == [3.0] and own_val.tolist() == [1.0]


def test_initializer_ops_are_colocated_with_their_variable(graph):
    with tf.device("/gpu:0"):
        z = tf.get_variable("z", [2])
    for op in graph.get_operations():
        if op.name.startswith("z/Initializer/"):
            assert op.attrs["_class"] == ["loc:@z"] and op.device == ""
    assert z.device == "/device:GPU:0"
    with tf.Session(config=tf.ConfigProto(virtual_gpus=1)) as s:
        s.run(z.initializer)
        placement = s.placement.as_dict()
    assert placement["z/Initializer/random_uniform/RandomUniform"].endswith("GPU:0")


def test_variables_ignore_surrounding_control_dependencies(graph):
    first = tf.get_variable("first", [1])
    with tf.control_dependencies([first.initializer]):
        second = tf.get_variable("second", [1])
    assert second.op.control_inputs == [] and second.initializer.control_inputs == []


def test_initializer_from_a_value_and_from_a_callable(graph):
    c = tf.get_variable("c", initializer=tf.constant([1., 2.]))
    d = tf.get_variable("d", initializer=lambda: tf.ones([3]))
    e = tf.get_variable("e", [2], initializer=tf.zeros_initializer)   # a class is instantiated
    assert c.shape.as_list() == [2] and d.shape.as_list() == [3]
    values = _init_and_run([c, d, e])
    assert [v.tolist() for v in values] == [[1., 2.], [1., 1., 1.], [0., 0.]]


def test_trainable_and_collections(graph):
    tv = tf.get_variable("v", [1], trainable=False, collections=["mine"])
    assert tv not in tf.global_variables() and tv not in tf.trainable_variables()
    assert tf.get_collection("mine") == [tv]
    nt = tf.get_variable("nt", [1], trainable=False)
    assert nt in tf.global_variables() and nt not in tf.trainable_variables()
    local = tf.get_local_variable("loc", [1])
    assert local in tf.local_variables() and local not in tf.global_variables()
    keys = tf.GraphKeys
    assert (keys.REGULARIZATION_LOSSES, keys.MODEL_VARIABLES, keys.MOVING_AVERAGE_VARIABLES,
            keys.UPDATE_OPS) == ("regularization_losses", "model_variables",
                                 "moving_average_variables", "update_ops")


def test_custom_getters_wrap_outer_ones(graph):
    calls = []

    def outer(getter, name, *args, **kwargs):
        calls.append(("outer", name))
        return getter(name, *args, **kwargs)

    def inner(getter, name, *args, **kwargs):
        calls.append(("inner", name))
        kwargs["trainable"] = False
        return getter(name, *args, **kwargs)

    with tf.variable_scope("g", custom_getter=outer), tf.variable_scope("h",
                                                                          custom_getter=inner):
        v = tf.get_variable("v", [1])
    assert calls == [("inner", "g/h/v"), ("outer", "g/h/v")]
    assert v.name == "g/h/v:0" and v not in tf.trainable_variables()


# ---- regularizers ----

def test_scope_regularizer_builds_the_loss_beside_the_variable(graph):
    with tf.variable_scope("rg", regularizer=lambda w: tf.reduce_sum(w) * 0.5):
        v = tf.get_variable("v", [2], initializer=tf.constant_initializer(3.0))
    (loss,) = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert loss.name == "rg/v/Regularizer/mul:0"
    assert loss.op.attrs["_class"] == ["loc:@rg/v"]
    assert _init_and_run(loss) == pytest.approx(3.0)
    with tf.variable_scope("rg", reuse=True):
        assert tf.get_variable("v", [2]) is v
    assert len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)) == 1  # not re-added


def test_contrib_regularizers_give_tf_values(graph):
    w_val = np.array([[1.0, -2.0], [3.0, -4.0]], np.float32)
    init = tf.constant_initializer(w_val)
    l1 = tf.get_variable("l1", [2, 2], initializer=init,
                         regularizer=tf.contrib.layers.l1_regularizer(0.1))
    tf.get_variable("l2", [2, 2], initializer=init,
                    regularizer=tf.contrib.layers.l2_regularizer(0.1))
    tf.get_variable("both", [2, 2], initializer=init,
                    regularizer=tf.contrib.layers.l1_l2_regularizer(0.1, 0.2))
    tf.get_variable("off", [2, 2], regularizer=tf.contrib.layers.l2_regularizer(0.0))
    tf.get_variable("none", [2, 2], regularizer=tf.no_regularizer)
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert [t.name for t in losses] == ["l1/Regularizer/l1_regularizer:0",
                                        "l2/Regularizer/l2_regularizer:0",
                                        "both/Regularizer/l1_l2_regularizer:0"]
    got = _init_and_run(losses)
    np.testing.assert_allclose(got, [0.1 * 10, 0.1 * 30 / 2, 0.1 * 10 + 0.2 * 30 / 2],
                               rtol=1e-6)
    total = tf.contrib.layers.apply_regularization(tf.contrib.layers.l1_regularizer(1.0), [l1])
    assert total in tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert _init_and_run(total) == pytest.approx(10.0)


def test_regularizer_arguments_are_checked():
    with pytest.raises(ValueError, match="scale cannot be an integer: 1"):
        tf.contrib.layers.l2_regularizer(1)
    with pytest.raises(ValueError, match="Setting a scale less than 0 on a regularizer: -0.5"):
        tf.contrib.layers.l1_regularizer(-0.5)


def test_contrib_xavier_initializer(graph):
    w = tf.get_variable("w", [300, 500], initializer=tf.contrib.layers.xavier_initializer())
    value = _init_and_run(w)
    assert np.abs(value).max() <= np.sqrt(6 / 800) and abs(value.std() - np.sqrt(2 / 800)) < 1e-3
