"""Knowledge distillation on the digits (Hinton et al. 2015): a 64 -> 16 -> 10 student learns
from the trained 64 -> 64 -> 32 -> 10 teacher's softened outputs (softmax at temperature T,
that loss scaled by T^2 and mixed with the hard-label loss by alpha), beside the same student
trained alone on the labels with the same initial weights, batches and steps. Prints the
three test accuracies; with --logdir records both students as runs (loss, test_accuracy).

Usage: python sample_graphs/distill_digits.py [--logdir DIR] [--temperature 4] [--alpha 0.7]"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import engine as tf

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import build_frozen  # noqa: E402
import digits  # noqa: E402

HIDDEN = 16


def build_student(temperature: float, alpha: float, seed: int = 0,
                  learning_rate: float = 0.01) -> dict:
    """The student graph: images, labels and teacher_logits placeholders; `loss` =
    alpha * T^2 * soft + (1 - alpha) * hard, where soft is the cross entropy between
    softmax(teacher_logits / T) and softmax(student_logits / T)."""
    rng = np.random.RandomState(seed)
    images = tf.placeholder(tf.float32, [None, 8, 8, 1], name="images")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    teacher_logits = tf.placeholder(tf.float32, [None, 10], name="teacher_logits")
    flat = tf.reshape(images, [-1, 64])
    # Explicit numpy initial values, so the distilled and the lone student start equal.
    w1 = tf.Variable(_glorot(rng, 64, HIDDEN), name="student/hidden/kernel")
    b1 = tf.Variable(np.zeros(HIDDEN, np.float32), name="student/hidden/bias")
    w2 = tf.Variable(_glorot(rng, HIDDEN, 10), name="student/logits/kernel")
    b2 = tf.Variable(np.zeros(10, np.float32), name="student/logits/bias")
    logits = tf.matmul(tf.nn.relu(tf.matmul(flat, w1) + b1), w2) + b2
    t = float(temperature)
    soft_targets = tf.nn.softmax(teacher_logits / t)
    soft = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(
        labels=tf.stop_gradient(soft_targets), logits=logits / t), name="soft_loss")
    hard = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits), name="hard_loss")
    loss = tf.add(alpha * t * t * soft, (1.0 - alpha) * hard, name="loss")
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
    train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss)
    return {"images": images, "labels": labels, "teacher_logits": teacher_logits,
            "logits": logits, "soft": soft, "hard": hard, "loss": loss,
            "accuracy": accuracy, "train_op": train_op}


def _glorot(rng, fan_in: int, fan_out: int) -> np.ndarray:
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32)


def train_teacher(steps: int, seed: int):
    """(session, model, test accuracy) of build_frozen's MLP trained `steps` steps."""
    data = digits.read_data_sets(seed)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        model = build_frozen.build_mlp()
        logits = graph.get_tensor_by_name("logits/BiasAdd:0")
        sess = tf.Session(graph=graph)
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            x, y = data.train.next_batch(64)
            sess.run(model["train_op"], {model["images"]: x, model["labels"]: y})
        accuracy = sess.run(model["accuracy"], {model["images"]: data.test.images,
                                                model["labels"]: data.test.labels})
    return sess, model["images"], logits, float(accuracy)


def train_student(teacher, steps: int, temperature: float, alpha: float, seed: int,
                  logdir: str | None = None, run_name: str | None = None) -> dict:
    """Trains one student on the teacher's logits (alpha 0: on the labels alone)."""
    teacher_sess, teacher_images, teacher_logits = teacher
    data = digits.read_data_sets(seed)          # the same batches for every student
    graph = tf.Graph()
    with graph.as_default():
        model = build_student(temperature, alpha, seed)
        session = (tf.Session(graph=graph, logdir=logdir, run_name=run_name) if logdir
                   else tf.Session(graph=graph))
        with session as sess:
            writer = sess.run_writer if logdir else None
            if writer:
                writer.set_config({"model": f"student 64-{HIDDEN}-10", "temperature":
                                   temperature, "alpha": alpha, "steps": steps})
            sess.run(tf.global_variables_initializer())
            losses = []
            for step in range(1, steps + 1):
                x, y = data.train.next_batch(64)
                soft_targets = teacher_sess.run(teacher_logits, {teacher_images: x})
                _, loss = sess.run([model["train_op"], model["loss"]], {
                    model["images"]: x, model["labels"]: y, model["teacher_logits"]:
                    soft_targets})
                losses.append(float(loss))
                if writer:
                    writer.scalar("loss", float(loss), step)
            accuracy = float(sess.run(model["accuracy"], {model["images"]: data.test.images,
                                                          model["labels"]: data.test.labels}))
            if writer:
                writer.scalar("test_accuracy", accuracy, steps)
            path = writer.path if writer else None
    return {"accuracy": accuracy, "losses": losses, "run": path}


def run(teacher_steps: int = 400, steps: int = 600, temperature: float = 4.0,
        alpha: float = 0.7, seed: int = 0, logdir: str | None = None) -> dict:
    sess, images, logits, teacher_accuracy = train_teacher(teacher_steps, seed)
    try:
        teacher = (sess, images, logits)
        distilled = train_student(teacher, steps, temperature, alpha, seed, logdir,
                                  "student-distilled" if logdir else None)
        alone = train_student(teacher, steps, temperature, 0.0, seed, logdir,
                              "student-alone" if logdir else None)
    finally:
        sess.close()
    return {"teacher": teacher_accuracy, "distilled": distilled, "alone": alone}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logdir", help="record both students as runs here")
    parser.add_argument("--teacher-steps", type=int, default=400)
    parser.add_argument("--steps", type=int, default=600, help="student training steps")
    parser.add_argument("--temperature", type=float, default=4.0)
    parser.add_argument("--alpha", type=float, default=0.7,
                        help="weight of the soft (teacher) loss; 1 - alpha on the labels")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    result = run(args.teacher_steps, args.steps, args.temperature, args.alpha, args.seed,
                 args.logdir)
    print(f"teacher 64-64-32-10 test accuracy  {result['teacher']:.4f}")
    print(f"student 64-{HIDDEN}-10 distilled (T={args.temperature}, alpha={args.alpha}) "
          f"{result['distilled']['accuracy']:.4f}")
    print(f"student 64-{HIDDEN}-10 alone, same steps and seed   "
          f"{result['alone']['accuracy']:.4f}")
    for key in ("distilled", "alone"):
        if result[key]["run"]:
            print(f"recorded {key} in {result[key]['run']}")


if __name__ == "__main__":
    main()
