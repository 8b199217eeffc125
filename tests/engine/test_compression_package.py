"""engine.compression (the package) must not take tf.quantize's name: once it is imported,
`import engine as tf; tf.quantize(...)` still builds TF's QuantizeV2."""

import numpy as np

import engine as tf
import engine.compression  # noqa: F401 -- importing a package binds its name on engine


def test_tf_quantize_is_still_the_op_after_the_package_is_imported():
    g = tf.Graph()
    with g.as_default():
        q = tf.quantize(tf.constant([0.0, 0.5, 1.0]), 0.0, 1.0, tf.quint8)
    assert q.output.op.type == "QuantizeV2"
    with tf.Session(graph=g) as sess:
        assert np.asarray(sess.run(q.output)).tolist() == [0, 128, 255]
    from engine.compression import quantize, record_comparison
    assert callable(quantize) and callable(record_comparison)
    assert tf.compression.quantize is quantize
