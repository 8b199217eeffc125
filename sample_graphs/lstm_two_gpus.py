"""Model parallelism for LSTMs in the manner of TensorFlow's design (one layer per device): a
two-layer LSTM whose first layer runs on /gpu:0 and second on /gpu:1 (DeviceWrapper), trained
to predict the next value of noisy sine waves that the program generates. Every time step
hands the first layer's output from GPU:0 to GPU:1, and the backward pass hands its gradient
back, so the recorded run (--logdir, via tf.summary.FileWriter) shows the Send/Recv cuts of
each step between the two devices. Only the import differs from a TensorFlow 1.x script;
`--virtual-gpus 2` (this engine only, the default here) gives a CPU-only machine two GPUs;
pass `--virtual-gpus 0` to run it on TensorFlow with allow_soft_placement.

With `--rnn dynamic` the layers run in tf.nn.dynamic_rnn's while loop instead: each device
runs its own copy of the loop's control, and the hand-offs cross once per iteration.

Usage: python sample_graphs/lstm_two_gpus.py [--steps 300] [--logdir /tmp/lstm_two_gpus]
                                             [--rnn static|dynamic]"""

from __future__ import annotations

import argparse

import numpy as np

import engine as tf

STEPS_PER_SEQUENCE = 20
NOISE = 0.1


def sine_batch(rng: np.random.RandomState, batch_size: int):
    """Noisy sine waves of random frequency, phase and amplitude: inputs [batch, steps, 1]
    (noisy) and targets [batch, steps] (the clean value one step ahead)."""
    freq = rng.uniform(0.2, 0.6, (batch_size, 1))
    phase = rng.uniform(0, 2 * np.pi, (batch_size, 1))
    amp = rng.uniform(0.5, 1.0, (batch_size, 1))
    t = np.arange(STEPS_PER_SEQUENCE + 1)[None, :]
    clean = amp * np.sin(freq * t + phase)
    noisy = clean + rng.normal(0, NOISE, clean.shape)
    return noisy[:, :-1, None].astype(np.float32), clean[:, 1:].astype(np.float32)


def static_rnn_batch_major(cell, inputs, dtype):
    """tf.nn.static_rnn called as tf.nn.dynamic_rnn is: inputs and outputs [batch, time,
    depth]. The outputs are stacked beside the last step's output (on the last layer's
    device), so only the layers' own hand-offs cross devices."""
    outputs, state = tf.nn.static_rnn(cell, tf.unstack(inputs, axis=1), dtype=dtype)
    with tf.colocate_with(outputs[-1]):
        return tf.stack(outputs, axis=1), state


def build_model(units: int = 32, learning_rate: float = 0.02, rnn: str = "static"):
    """rnn="static" unrolls the 20 steps (static_rnn); "dynamic" runs them in a while loop
    (dynamic_rnn), whose body, and whose gradient loop's body, spans the two devices."""
    inputs = tf.placeholder(tf.float32, [None, STEPS_PER_SEQUENCE, 1], name="inputs")
    targets = tf.placeholder(tf.float32, [None, STEPS_PER_SEQUENCE], name="targets")
    cell = tf.nn.rnn_cell.MultiRNNCell([
        tf.nn.rnn_cell.DeviceWrapper(tf.nn.rnn_cell.LSTMCell(units), "/gpu:0"),
        tf.nn.rnn_cell.DeviceWrapper(tf.nn.rnn_cell.LSTMCell(units), "/gpu:1"),
    ])
    if rnn == "dynamic":
        outputs, _ = tf.nn.dynamic_rnn(cell, inputs, dtype=tf.float32)
    else:
        outputs, _ = static_rnn_batch_major(cell, inputs, dtype=tf.float32)
    with tf.device("/gpu:1"):
        flat = tf.reshape(outputs, [-1, units])
        predictions = tf.reshape(tf.layers.dense(flat, 1, name="readout"),
                                 [-1, STEPS_PER_SEQUENCE])
        loss = tf.reduce_mean(tf.square(predictions - targets), name="loss")
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss, global_step=global_step,
                                                             colocate_gradients_with_ops=True)
    tf.summary.scalar("mse", loss)
    return {"inputs": inputs, "targets": targets, "loss": loss, "train_op": train_op,
            "predictions": predictions, "global_step": global_step,
            "summaries": tf.summary.merge_all()}


def train(logdir: str | None = None, steps: int = 300, batch_size: int = 32, seed: int = 0,
          config=None, rnn: str = "static") -> dict:
    """Trains for `steps` steps; returns the MSE on a fresh test batch before and after, the
    MSE of predicting the last input again (the baseline to beat), and the graph."""
    rng = np.random.RandomState(seed)
    test_x, test_y = sine_batch(np.random.RandomState(seed + 1), 256)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        model = build_model(rnn=rnn)
        test = {model["inputs"]: test_x, model["targets"]: test_y}
        config = config or tf.ConfigProto(allow_soft_placement=True)
        writer = tf.summary.FileWriter(logdir, graph) if logdir else None
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            before = sess.run(model["loss"], test)
            for step in range(1, steps + 1):
                x, y = sine_batch(rng, batch_size)
                feed = {model["inputs"]: x, model["targets"]: y}
                if writer is not None and step % 20 == 0:
                    _, summary = sess.run([model["train_op"], model["summaries"]], feed)
                    writer.add_summary(summary, step)
                else:
                    sess.run(model["train_op"], feed)
            after = sess.run(model["loss"], test)
        if writer is not None:
            writer.close()
    baseline = float(np.mean((test_x[:, :, 0] - test_y) ** 2))
    return {"mse_before": float(before), "mse_after": float(after),
            "copy_last_input_mse": baseline, "graph": graph}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--logdir", default="/tmp/lstm_two_gpus")
    parser.add_argument("--virtual-gpus", type=int, default=2,
                        help="this engine only: give the session N (virtual) GPUs")
    parser.add_argument("--rnn", choices=("static", "dynamic"), default="static",
                        help="unrolled steps (static_rnn) or a while loop (dynamic_rnn)")
    args = parser.parse_args(argv)
    config = tf.ConfigProto(allow_soft_placement=True)
    if args.virtual_gpus:
        config = tf.ConfigProto(allow_soft_placement=True, virtual_gpus=args.virtual_gpus)
    result = train(args.logdir, args.steps, config=config, rnn=args.rnn)
    print(f"test MSE {result['mse_before']:.4f} -> {result['mse_after']:.4f} "
          f"(repeating the last noisy input: {result['copy_last_input_mse']:.4f})")


if __name__ == "__main__":
    main()
