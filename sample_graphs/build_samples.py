"""Builds the sample graph files in this folder (JSON GraphDef, engine.graphdef v1):

  classic_add.json   TF's `c = a + b` example
  cross_device.json  a and b pinned to /cpu:0, the add to /gpu:1 (needs virtual_gpus=2)
  mlp_train.json     the demo MLP with its backward pass and optimizer
  scale_<n>.json     (with --scale N) a deep, scoped graph of about N nodes for layout tests

Usage: python sample_graphs/build_samples.py [--scale 10000]"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def classic_add():
    import engine as tf
    g = tf.Graph()
    with g.as_default():
        a = tf.constant([1.0, 2.0, 3.0], shape=[3], name="a")
        b = tf.constant([1.0, 2.0, 3.0], shape=[3], name="b")
        tf.add(a, b, name="add")
    return g


def cross_device():
    import engine as tf
    g = tf.Graph()
    with g.as_default():
        with tf.device("/cpu:0"):
            a = tf.constant([1.0, 2.0, 3.0], shape=[3], name="a")
            b = tf.constant([1.0, 2.0, 3.0], shape=[3], name="b")
        with tf.device("/gpu:1"):
            tf.add(a, b, name="add")
    return g


def mlp_train():
    from workbench.demo import build_mlp
    return build_mlp(0.5).graph


def scale(nodes: int, width: int = 8):
    """Blocks of `width` parallel branches under scopes block_<i>/branch_<j>, joined by
    an AddN per block, until about `nodes` nodes exist."""
    import engine as tf
    g = tf.Graph()
    rng = np.random.RandomState(0)
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 16], name="x")
        block = 0
        while len(g.get_operations()) < nodes:
            with tf.name_scope(f"block_{block}"):
                outs = []
                for j in range(width):
                    with tf.name_scope(f"branch_{j}"):
                        w = tf.constant(rng.randn(16, 16).astype(np.float32) * 0.1, name="w")
                        outs.append(tf.tanh(tf.matmul(x, w)))
                x = tf.add_n(outs, name="join")
            block += 1
    return g


def write(graph, name: str) -> Path:
    from engine.graph_def import graph_def_to_json
    path = HERE / name
    path.write_text(graph_def_to_json(graph.as_graph_def(), strip_prefix=f"{HERE.parent}/"))
    return path


SAMPLES = {"classic_add.json": classic_add, "cross_device.json": cross_device,
           "mlp_train.json": mlp_train}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=0, help="also write scale_<N>.json")
    args = parser.parse_args()
    for name, build in SAMPLES.items():
        print(f"wrote {write(build(), name)}")
    if args.scale:
        print(f"wrote {write(scale(args.scale), f'scale_{args.scale}.json')}")


if __name__ == "__main__":
    main()
