"""engine.quantize (the package) shares its name with tf.quantize (the op): once the package
is imported, `import engine as tf; tf.quantize(...)` must still build TF's QuantizeV2."""

import numpy as np

import engine as tf
import engine.quantize  # noqa: F401 -- the import that rebinds tf.quantize to the package


def test_tf_quantize_is_still_the_op_after_the_package_is_imported():
    g = tf.Graph()
    with g.as_default():
        q = tf.quantize(tf.constant([0.0, 0.5, 1.0]), 0.0, 1.0, tf.quint8)
    assert q.output.op.type == "QuantizeV2"
    with tf.Session(graph=g) as sess:
        assert np.asarray(sess.run(q.output)).tolist() == [0, 128, 255]
    from engine.quantize import quantize, record_comparison
    assert callable(quantize) and callable(record_comparison)
