"""`workbench demo`: trains an MLP on sklearn's bundled digits on the engine, its layers
pinned to CPU and two virtual GPUs so the partition cuts are visible, records each run into
the log directory and reports test accuracy. Two learning rates give the Scalars page two
curves to compare; an int32 step counter pinned to a GPU shows a soft-placement fallback.
Every step is recorded; per-op stats only on the first and every 100th (TRACE_EVERY_N_STEPS).
The last, deliberately broken run (the naive cross entropy at a learning rate it cannot take,
check_numerics on) stops at its first NaN/Inf and leaves an alert for the Alerts page; before
it, a pruned run (train_pruned_mlp) fills the Pruning page, and the sample digits MLP quantized
to eightbit (calibrated on 100 images) records its per-node comparison and cost table for the
Quantization page.
Where CUDA has a GPU, GPU:0 is that GPU and GPU:1 stays virtual."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np

DEMO_LEARNING_RATES = (0.5, 0.1)
TRACE_EVERY_N_STEPS = 100


@dataclass
class MlpGraph:
    graph: object
    x: object
    y: object
    loss: object
    accuracy: object
    train_op: object
    counter: object
    init: object
    weights: dict


def load_digits_split(seed: int = 0):
    """(x_train, y_train, x_test, y_test): pixels scaled to [0, 1], labels one-hot."""
    from sklearn.datasets import load_digits
    data = load_digits()
    x = (data.data / 16.0).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[data.target]
    order = np.random.RandomState(seed).permutation(len(x))
    x, y = x[order], y[order]
    split = int(len(x) * 0.8)
    return x[:split], y[:split], x[split:], y[split:]


def _dense(tf, inputs, fan_in: int, fan_out: int, rng, activation):
    w = tf.Variable((rng.randn(fan_in, fan_out) * np.sqrt(2.0 / fan_in)).astype(np.float32),
                    name="weights")
    b = tf.Variable(np.zeros(fan_out, np.float32), name="biases")
    pre = tf.matmul(inputs, w) + b
    return (activation(pre) if activation else pre), w


def build_mlp(learning_rate: float, hidden=(64, 32), seed: int = 0,
              naive_xent: bool = False) -> MlpGraph:
    """64 -> hidden[0] (CPU:0, relu) -> hidden[1] (GPU:0, tanh) -> 10 (GPU:1) -> softmax xent.
    `naive_xent` writes the cross entropy as early TF1 tutorials did, -sum(y * log(softmax)),
    which turns into NaN once a softmax output underflows to 0 (the demo's broken run)."""
    import engine as tf
    rng = np.random.RandomState(seed)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 64], name="pixels")
        y = tf.placeholder(tf.float32, [None, 10], name="labels")
        with tf.device("/cpu:0"), tf.name_scope("layer1"):
            h1, w1 = _dense(tf, x, 64, hidden[0], rng, tf.nn.relu)
        with tf.device("/gpu:0"), tf.name_scope("layer2"):
            h2, w2 = _dense(tf, h1, hidden[0], hidden[1], rng, tf.tanh)
        with tf.device("/gpu:1"), tf.name_scope("logits"):
            logits, w3 = _dense(tf, h2, hidden[1], 10, rng, None)
        with tf.name_scope("loss"):
            if naive_xent:
                xent = -tf.reduce_sum(y * tf.log(tf.nn.softmax(logits)), 1)
            else:
                xent = tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits)
            loss = tf.reduce_mean(xent, name="mean")
        with tf.name_scope("accuracy"):
            correct = tf.equal(tf.argmax(logits, 1), tf.argmax(y, 1))
            accuracy = tf.reduce_mean(tf.cast(correct, tf.float32), name="mean")
        # No GPU kernel holds an int32 variable: with soft placement it falls back to CPU.
        with tf.device("/gpu:1"), tf.name_scope("counter"):
            counter = tf.Variable(0, name="steps_seen")
            bump = tf.assign_add(counter, 1)
        minimize = tf.train.GradientDescentOptimizer(learning_rate).minimize(loss)
        train_op = tf.group(minimize, bump, name="train")
        init = tf.global_variables_initializer()
    return MlpGraph(graph, x, y, loss, accuracy, train_op, counter, init,
                    {"layer1/weights": w1, "layer2/weights": w2, "logits/weights": w3})


def _full_trace_of_last(tf, step: int, steps: int):
    """RunOptions tracing the last training step, so the Timeline page always has a traced
    forward and backward pass across the three devices (the periodic traces may fall on an
    initializer or accuracy run)."""
    return tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE) if step == steps else None


def train_mlp(logdir: str, run_name: str, learning_rate: float, steps: int, batch: int = 64,
              seed: int = 0, progress=None) -> tuple[str, float]:
    """Trains one MLP and records it; returns (run folder, test accuracy)."""
    import engine as tf
    x_train, y_train, x_test, y_test = load_digits_split(seed)
    model = build_mlp(learning_rate, seed=seed)
    config = tf.ConfigProto(virtual_gpus=2, allow_soft_placement=True,
                            trace_every_n_steps=TRACE_EVERY_N_STEPS)
    rng = np.random.RandomState(seed + 1)
    with tf.Session(graph=model.graph, config=config, logdir=logdir, run_name=run_name) as sess:
        writer = sess.run_writer
        run_config = {"model": "mlp 64-64-32-10", "learning_rate": learning_rate,
                      "batch": batch, "steps": steps, "data": "sklearn digits"}
        writer.set_config(run_config)
        record_config_text(writer, run_config)
        sess.run(model.init)
        for step in range(1, steps + 1):
            idx = rng.randint(0, len(x_train), batch)
            _, loss = sess.run([model.train_op, model.loss],
                               {model.x: x_train[idx], model.y: y_train[idx]},
                               options=_full_trace_of_last(tf, step, steps))
            writer.scalar("loss", float(loss), step)
            if step % 25 == 0 or step == steps:
                acc = sess.run(model.accuracy, {model.x: x_test, model.y: y_test})
                writer.scalar("test_accuracy", float(acc), step)
            if progress:
                progress(step, steps, float(loss))
        accuracy = float(sess.run(model.accuracy, {model.x: x_test, model.y: y_test}))
        weights = {tag: sess.run(w) for tag, w in model.weights.items()}
        for tag, w in weights.items():
            writer.histogram(tag, w, steps)
        record_weight_table(writer, weights, steps)
        writer.image("test_digits", digit_tiles(x_test[:32]), steps)
        writer.image("layer1/weights", weight_image(sess.run(model.weights["layer1/weights"])),
                     steps)
        writer.text("summary", f"test accuracy {accuracy:.4f} after {steps} steps "
                               f"(learning rate {learning_rate})", steps)
        path = writer.path
    return str(path), accuracy


def record_config_text(writer, config: dict, step: int = 0) -> None:
    """The run's settings as a markdown table under the text tag "config" (the Text page
    draws it as TensorBoard would)."""
    rows = "\n".join(f"| {key} | `{value}` |" for key, value in config.items())
    writer.text("config", f"**Settings of this run**\n\n| setting | value |\n|---|---|\n{rows}",
                step)


def record_weight_table(writer, weights: dict, step: int) -> None:
    """Each layer's weights as one row of a 2-D text table (a string tensor, as
    tf.summary.text records one) under the tag "weights": the Text page draws it as a table
    of markdown cells, as TensorBoard does."""
    rows = [["**layer**", "**shape**", "**mean abs**", "**max abs**"]]
    rows += [[f"`{tag}`", " x ".join(str(d) for d in w.shape), f"{np.abs(w).mean():.4f}",
              f"{np.abs(w).max():.4f}"] for tag, w in weights.items()]
    writer.text("weights", rows, step)


def digit_tiles(images: np.ndarray, per_row: int = 8) -> np.ndarray:
    """8x8 digit images ([n, 64] in 0..1) side by side with a 1-pixel gap: uint8 [h, w]."""
    rows = -(-len(images) // per_row)
    out = np.zeros((rows * 9 - 1, per_row * 9 - 1), np.uint8)
    for k, image in enumerate(images):
        r, c = divmod(k, per_row)
        out[r * 9:r * 9 + 8, c * 9:c * 9 + 8] = np.clip(image.reshape(8, 8) * 255, 0, 255)
    return out


def weight_image(weights: np.ndarray) -> np.ndarray:
    """A weight matrix scaled to 0..255 (its own min to max), as an image."""
    low, high = float(weights.min()), float(weights.max())
    scaled = (weights - low) / (high - low) if high > low else np.zeros_like(weights)
    return (scaled * 255).astype(np.uint8)


def train_broken_mlp(logdir: str, run_name: str, steps: int, learning_rate: float = 5.0,
                     seed: int = 0) -> tuple[str, int | None]:
    """The demo's deliberately broken run: the naive cross entropy at a learning rate it
    cannot take, with check_numerics on, so the session records a NaN/Inf alert (the first op
    that made one, with its inputs) and stops. Returns (run folder, the step that failed)."""
    import engine as tf
    x_train, y_train, _, _ = load_digits_split(seed)
    model = build_mlp(learning_rate, seed=seed, naive_xent=True)
    config = tf.ConfigProto(virtual_gpus=2, allow_soft_placement=True, check_numerics=True,
                            trace_every_n_steps=TRACE_EVERY_N_STEPS)
    rng = np.random.RandomState(seed + 1)
    failed = None
    with tf.Session(graph=model.graph, config=config, logdir=logdir, run_name=run_name) as sess:
        writer = sess.run_writer
        writer.set_config({"model": "mlp with -sum(y * log(softmax))", "steps": steps,
                           "learning_rate": learning_rate, "check_numerics": True})
        sess.run(model.init)
        for step in range(1, steps + 1):
            idx = rng.randint(0, len(x_train), 64)
            try:
                _, loss = sess.run([model.train_op, model.loss],
                                   {model.x: x_train[idx], model.y: y_train[idx]})
            except tf.errors.InvalidArgumentError as e:
                failed = step
                writer.text("summary", f"stopped at step {step}: {str(e).splitlines()[0]}",
                            step)
                break
            writer.scalar("loss", float(loss), step)
        path = writer.path
    return str(path), failed


def train_pruned_mlp(logdir: str, run_name: str, steps: int, learning_rate: float = 0.5,
                     batch: int = 64, seed: int = 0) -> tuple[str, float]:
    """Trains the MLP, then records a small magnitude-pruning analysis for the Pruning page:
    sensitivity curves, three prune-retrain stages to 80% sparsity, compression figures.
    Returns (run folder, stored-values compression ratio)."""
    import engine as tf
    from engine.compression import pruning
    x_train, y_train, x_test, y_test = load_digits_split(seed)
    model = build_mlp(learning_rate, seed=seed)
    with model.graph.as_default():
        pruner = pruning.MagnitudePruning(list(model.weights.values()))
        train_op = pruner.train_op(model.train_op)
        init = tf.global_variables_initializer()
    config = tf.ConfigProto(virtual_gpus=2, allow_soft_placement=True,
                            trace_every_n_steps=TRACE_EVERY_N_STEPS)
    rng = np.random.RandomState(seed + 1)
    with tf.Session(graph=model.graph, config=config, logdir=logdir, run_name=run_name) as sess:
        writer = sess.run_writer
        writer.set_config({"model": "mlp 64-64-32-10", "pruning": "magnitude to 80%",
                           "learning_rate": learning_rate, "steps": steps})
        sess.run(init)

        step = 0

        def train() -> None:
            nonlocal step
            step += 1
            idx = rng.randint(0, len(x_train), batch)
            _, loss = sess.run([train_op, model.loss], {model.x: x_train[idx],
                                                        model.y: y_train[idx]})
            writer.scalar("loss", float(loss), step)

        def evaluate() -> float:
            return float(sess.run(model.accuracy, {model.x: x_test, model.y: y_test}))

        for _ in range(steps):
            train()
        curves = pruning.sensitivity_analysis(sess, pruner, evaluate, (0.0, 0.5, 0.8, 0.9, 0.95))
        history = pruning.prune_and_retrain(sess, pruner, train, evaluate, 0.8, stages=3,
                                            steps_per_stage=max(5, steps // 10))
        figures = pruning.compression(pruner.weights(sess))
        pruning.record_pruning(writer, curves, history, figures)
        path = writer.path
    return str(path), figures.ratio


QUANTIZED_CALIBRATION = 100
SAMPLE_MLP = "digits_mlp_frozen.json"


def record_quantized_mlp(logdir: str, run_name: str, seed: int = 0) -> str | None:
    """The demo's quantized run, for the Quantization page: the sample digits MLP quantized
    to eightbit calibrated on QUANTIZED_CALIBRATION training images, compared node by node
    on 256 test images, and its cost table (float, weights-only, eightbit with run-time and
    calibrated ranges). None when the sample graph is not beside the package."""
    from pathlib import Path

    from engine.compression import quantize
    from engine.compression.report import Timing, cost_table, record_comparison
    from engine.graph_io import load_graph_def
    from engine.record import RunWriter
    path = Path(__file__).resolve().parent.parent / "sample_graphs" / SAMPLE_MLP
    if not path.is_file():
        return None
    x_train, _, x_test, y_test = load_digits_split(seed)
    train, test = x_train.reshape(-1, 8, 8, 1), x_test.reshape(-1, 8, 8, 1)
    graph_def = load_graph_def(path)
    quantized = quantize(graph_def, "eightbit",
                         calibration_samples={"images": train[:QUANTIZED_CALIBRATION]})
    with RunWriter(logdir, run_name, config={
            "model": "sample digits MLP", "quantized": "eightbit",
            "calibration_samples": QUANTIZED_CALIBRATION}) as writer:
        record_comparison(writer, graph_def, quantized, {"images": test[:256]},
                          name=f"digits_mlp eightbit, calibrated on {QUANTIZED_CALIBRATION}")
        writer.quantization_costs(cost_table(
            "digits_mlp", graph_def, train, test, np.argmax(y_test, axis=1),
            calibration_sizes=(10, QUANTIZED_CALIBRATION, 1000),
            timing=Timing(repeats=5, warmup=1)))
        return writer.path


def _progress_printer(label: str, stream=sys.stderr):
    started = None

    def show(step: int, total: int, loss: float) -> None:
        nonlocal started
        started = started or time.time()
        if step == total or step % max(1, total // 20) == 0:
            done = int(30 * step / total)
            stream.write(f"\r  {label} [{'#' * done}{'.' * (30 - done)}] step {step}/{total} "
                         f"loss {loss:.4f} ({time.time() - started:.1f} s)")
            if step == total:
                stream.write("\n")
            stream.flush()
    return show


def run_demo(logdir: str = "runs", steps: int = 300, progress: bool = True) -> list[str]:
    """Records the demo runs into `logdir` and returns their folders."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    paths = []
    for lr in DEMO_LEARNING_RATES:
        name = f"mlp-lr{lr}-{stamp}"
        if progress:
            print(f"Training {name} on CPU:0 + 2 virtual GPUs ({steps} steps)", flush=True)
        path, accuracy = train_mlp(logdir, name, lr, steps,
                                   progress=_progress_printer(name) if progress else None)
        if progress:
            print(f"  test accuracy {accuracy:.4f}; recorded in {path}", flush=True)
        paths.append(path)
    name = f"mlp-pruned-{stamp}"
    if progress:
        print(f"Pruning {name}: sensitivity per layer, 3 prune-retrain stages", flush=True)
    path, ratio = train_pruned_mlp(logdir, name, steps)
    if progress:
        print(f"  {ratio:.1f}x fewer stored weights; recorded in {path}", flush=True)
    paths.append(path)
    name = f"mlp-quantized-{stamp}"
    if progress:
        print(f"Quantizing the sample digits MLP ({name}): eightbit, calibrated on "
              f"{QUANTIZED_CALIBRATION} images, compared node by node", flush=True)
    path = record_quantized_mlp(logdir, name)
    if progress:
        print(f"  recorded in {path}" if path else "  skipped: sample_graphs/ is not here",
              flush=True)
    if path:
        paths.append(path)
    name = f"mlp-broken-{stamp}"
    if progress:
        print(f"Training {name}: the naive cross entropy at learning rate 5, with "
              "check_numerics", flush=True)
    path, failed = train_broken_mlp(logdir, name, steps)
    if progress:
        print(f"  stopped by a NaN/Inf alert at step {failed}; recorded in {path}", flush=True)
    paths.append(path)
    return paths
