"""Builds Inception-v3-sized sample graphs for the graph page's scale checks, with the engine's
own ops (so engine.load_graph reads what this writes):

  inception_v3   InceptionV3/ with slim's nested, non-repeating scopes (Conv2d_1a_3x3 …
                 Mixed_5b … Mixed_7c, each mixed block its own Branch_0 … Branch_3), AuxLogits,
                 Logits, a loss and a GradientDescent train step: about 10,000 nodes
  towers         the same idea as four identical towers tower_0 … tower_3 (a series)

The files are about 10 MB each, so they are not committed: tests and the bench build them
(a few seconds). Usage: python sample_graphs/inception_like.py [--out DIR] [--which NAME]"""

from __future__ import annotations

import argparse
from pathlib import Path

HERE = Path(__file__).resolve().parent
IMAGE = 35                     # spatial size: small, so building is quick; shapes stay real

# (block, [branch: [(kind, name, filters, kernel)]]) after slim's inception_v3_base.
_A = [[("conv", "Conv2d_0a_1x1", 8, 1)],
      [("conv", "Conv2d_0a_1x1", 6, 1), ("conv", "Conv2d_0b_5x5", 8, 5)],
      [("conv", "Conv2d_0a_1x1", 8, 1), ("conv", "Conv2d_0b_3x3", 12, 3),
       ("conv", "Conv2d_0c_3x3", 12, 3)],
      [("avg", "AvgPool_0a_3x3", 0, 3), ("conv", "Conv2d_0b_1x1", 4, 1)]]
_B = [[("conv", "Conv2d_0a_1x1", 24, 1)],
      [("conv", "Conv2d_0a_1x1", 16, 1), ("conv", "Conv2d_0b_1x7", 16, (1, 7)),
       ("conv", "Conv2d_0c_7x1", 24, (7, 1))],
      [("conv", "Conv2d_0a_1x1", 16, 1), ("conv", "Conv2d_0b_7x1", 16, (7, 1)),
       ("conv", "Conv2d_0c_1x7", 16, (1, 7)), ("conv", "Conv2d_0d_7x1", 16, (7, 1)),
       ("conv", "Conv2d_0e_1x7", 24, (1, 7))],
      [("avg", "AvgPool_0a_3x3", 0, 3), ("conv", "Conv2d_0b_1x1", 24, 1)]]
_C = [[("conv", "Conv2d_0a_1x1", 40, 1)],
      [("conv", "Conv2d_0a_1x1", 48, 1), ("conv", "Conv2d_0b_1x3", 48, (1, 3)),
       ("conv", "Conv2d_0c_3x1", 48, (3, 1))],
      [("conv", "Conv2d_0a_1x1", 56, 1), ("conv", "Conv2d_0b_3x3", 48, 3),
       ("conv", "Conv2d_0c_1x3", 48, (1, 3)), ("conv", "Conv2d_0d_3x1", 48, (3, 1))],
      [("avg", "AvgPool_0a_3x3", 0, 3), ("conv", "Conv2d_0b_1x1", 24, 1)]]
MIXED = [("Mixed_5b", _A), ("Mixed_5c", _A), ("Mixed_5d", _A), ("Mixed_6b", _B),
         ("Mixed_6c", _B), ("Mixed_6d", _B), ("Mixed_6e", _B), ("Mixed_7b", _C),
         ("Mixed_7c", _C)]
STEM = [("Conv2d_1a_3x3", 4, 3), ("Conv2d_2a_3x3", 4, 3), ("Conv2d_2b_3x3", 8, 3),
        ("Conv2d_3b_1x1", 10, 1), ("Conv2d_4a_3x3", 24, 3)]


def _unit(tf, x, name: str, filters: int, kernel):
    """slim's conv2d + batch_norm + relu, under its own scope."""
    with tf.variable_scope(name):
        y = tf.layers.conv2d(x, filters, kernel, padding="same", use_bias=False,
                             name="Conv2D")
        y = tf.layers.batch_normalization(y, training=True, name="BatchNorm")
        return tf.nn.relu(y, name="Relu")


def _block(tf, x, name: str, branches):
    with tf.variable_scope(name):
        outs = []
        for index, branch in enumerate(branches):
            with tf.variable_scope(f"Branch_{index}"):
                y = x
                for kind, part, filters, kernel in branch:
                    if kind == "avg":
                        y = tf.layers.average_pooling2d(y, kernel, 1, padding="same",
                                                        name=part)
                    else:
                        y = _unit(tf, y, part, filters, kernel)
                outs.append(y)
        return tf.concat(outs, axis=3, name="concat")


def _reduction(tf, x, name: str, filters: int):
    """Mixed_6a / Mixed_7a: a strided conv beside a max pool."""
    with tf.variable_scope(name):
        with tf.variable_scope("Branch_0"):
            a = _unit(tf, x, "Conv2d_1a_1x1", filters, 1)
            a = tf.layers.max_pooling2d(a, 3, 2, padding="same", name="MaxPool_1a_3x3")
        with tf.variable_scope("Branch_1"):
            b = tf.layers.max_pooling2d(x, 3, 2, padding="same", name="MaxPool_1a_3x3")
        return tf.concat([a, b], axis=3, name="concat")


def inception_body(tf, images, classes: int = 10):
    """The forward pass: logits and aux logits under InceptionV3/."""
    with tf.variable_scope("InceptionV3"):
        x = images
        for name, filters, kernel in STEM:
            x = _unit(tf, x, name, filters, kernel)
        x = tf.layers.max_pooling2d(x, 3, 1, padding="same", name="MaxPool_5a_3x3")
        for name, branches in MIXED[:3]:
            x = _block(tf, x, name, branches)
        x = _reduction(tf, x, "Mixed_6a", 24)
        for name, branches in MIXED[3:7]:
            x = _block(tf, x, name, branches)
        with tf.variable_scope("AuxLogits"):
            aux = _unit(tf, x, "Conv2d_1b_1x1", 16, 1)
            aux = tf.reduce_mean(aux, axis=[1, 2], name="GlobalPool")
            aux = tf.layers.dense(aux, classes, name="Logits")
        x = _reduction(tf, x, "Mixed_7a", 40)
        for name, branches in MIXED[7:]:
            x = _block(tf, x, name, branches)
        with tf.variable_scope("Logits"):
            x = tf.reduce_mean(x, axis=[1, 2], name="AvgPool_1a")
            logits = tf.layers.dense(x, classes, name="Conv2d_1c_1x1")
        return logits, aux


def _loss(tf, logits, aux, labels):
    with tf.name_scope("loss"):
        main = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits))
        side = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=aux))
        return tf.add(main, 0.4 * side, name="total")


def inception_v3():
    """InceptionV3/ forward, loss, gradients and a train step: about 10,000 nodes."""
    import engine as tf
    g = tf.Graph()
    with g.as_default():
        images = tf.placeholder(tf.float32, [None, IMAGE, IMAGE, 3], name="images")
        labels = tf.placeholder(tf.int32, [None], name="labels")
        logits, aux = inception_body(tf, images)
        loss = _loss(tf, logits, aux, labels)
        with tf.name_scope("regularization"):      # slim's weight decay on every kernel
            decay = tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables()
                              if v.name.endswith("kernel:0")], name="weight_decay")
        total = tf.add(loss, 4e-5 * decay, name="total_loss")
        step = tf.train.MomentumOptimizer(0.01, 0.9).minimize(total)
        with tf.name_scope("summaries"):           # the usual histogram per variable
            for variable in tf.trainable_variables():
                tf.summary.histogram(variable.op.name.replace("/", "_"), variable)
            tf.summary.merge_all()
        ema = tf.train.ExponentialMovingAverage(0.999)
        with tf.control_dependencies([step]):
            tf.group(ema.apply(tf.trainable_variables()), name="train")
    return g


def towers(count: int = 4):
    """tower_0 … tower_{count-1}, each a forward pass with its own variables, and the mean
    of their losses: four copies of one structure, which the graph page shows as a series."""
    import engine as tf
    g = tf.Graph()
    with g.as_default():
        images = tf.placeholder(tf.float32, [None, IMAGE, IMAGE, 3], name="images")
        labels = tf.placeholder(tf.int32, [None], name="labels")
        losses = []
        for index in range(count):
            with tf.variable_scope(f"tower_{index}"):
                logits, aux = inception_body(tf, images)
                losses.append(_loss(tf, logits, aux, labels))
        tf.add_n(losses, name="total_loss")
    return g


BUILDERS = {"inception_v3": inception_v3, "towers": towers}


def write(name: str, out: Path) -> Path:
    from engine.graph_io import save_graph
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    save_graph(BUILDERS[name](), path, strip_prefix=f"{HERE.parent}/")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "generated")
    parser.add_argument("--which", choices=sorted(BUILDERS), action="append")
    args = parser.parse_args()
    for name in args.which or sorted(BUILDERS):
        print(f"wrote {write(name, args.out)}")


if __name__ == "__main__":
    main()
