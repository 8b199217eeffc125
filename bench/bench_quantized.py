"""int8 inference against float on an MLP, one torch thread, medians over repeats: the float
graph in our Session; the int8 graph (QuantizeV2 -> fused QuantizedMatMulWithBias[AndRelu]
AndRequantize per layer -> Dequantize, ranges calibrated on a float run, built by hand with
tf.raw_ops) in our Session, with 8-bit and with 7-bit weights; the pass's graphs through
Session.run and through Session.make_callable (", callable" rows); the same fbgemm calls with
no engine around them (the floor); torch eager float; torch's dynamic quantization of the same
model (the peer). Ratios (of CPU time) above 1: faster than our float / than torch's dynamic
int8.
Also the unfused QuantizedMatMul kernel with each exact int8 product backend.

With --account, only the table of where the time goes: the floor op by op against the
pass's graph through make_callable op by op, and the rest of each step.

Usage: python bench/bench_quantized.py [--repeat 30] [--sizes 1024,1024,1024,10]
       [--batches 1,256] [--skip-kernel] [--account]"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time
import warnings

import numpy as np
import torch

import engine as tf
from engine.compression import quantize
from engine.kernels import quantized as qk
from engine.kernels import quantized_fbgemm as fbgemm

DIGITS_SIZES = (64, 64, 32, 10)       # sample_graphs' digits MLP: 8x8 pixels, two hidden layers


def median_ms(function, repeat: int) -> float:
    return interleaved_medians({"f": function}, repeat)["f"][0]


def interleaved_medians(functions: dict, repeat: int) -> dict:
    """{label: (median wall ms, median CPU ms, min and max CPU ms)}, the functions taking
    turns each repeat so a shared machine's changing load falls on all of them alike. CPU
    time (this process, all threads) is what the ratios use: on a loaded machine wall time
    mostly measures waiting."""
    for function in functions.values():
        function()
    wall = {label: [] for label in functions}
    cpu = {label: [] for label in functions}
    for _ in range(repeat):
        for label, function in functions.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            function()
            cpu[label].append(time.process_time() - start_cpu)
            wall[label].append(time.perf_counter() - start)
    return {label: (statistics.median(wall[label]) * 1e3, statistics.median(cpu[label]) * 1e3,
                    min(cpu[label]) * 1e3, max(cpu[label]) * 1e3) for label in functions}


def make_mlp(sizes, seed: int = 0):
    rng = np.random.default_rng(seed)
    layers = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        w = rng.normal(0.0, np.sqrt(2.0 / fan_in), size=(fan_in, fan_out)).astype(np.float32)
        layers.append((w, rng.normal(0.0, 0.05, size=fan_out).astype(np.float32)))
    return layers


def float_forward(layers, x: np.ndarray) -> list[np.ndarray]:
    """Every layer's output (ReLU on all but the last), for calibration."""
    outs = []
    for i, (w, b) in enumerate(layers):
        x = x @ w + b
        x = np.maximum(x, 0) if i < len(layers) - 1 else x
        outs.append(x)
    return outs


def float_graph(layers, width: int):
    x = tf.placeholder(tf.float32, [None, width])
    h = x
    for i, (w, b) in enumerate(layers):
        h = tf.nn.bias_add(tf.matmul(h, tf.constant(w)), tf.constant(b))
        h = tf.nn.relu(h) if i < len(layers) - 1 else h
    return x, h


def quantized_weights(w: np.ndarray, bits: int):
    """Symmetric qint8 weights in [-(2^(bits-1)), 2^(bits-1)] with the range the fused op
    reads as max|range| / 127 per step: 7 bits declare a range twice the weights' own."""
    top = float(np.abs(w).max())
    levels = (1 << (bits - 1)) - (1 if bits == 8 else 0)
    q = np.clip(np.rint(w / top * levels), -levels, levels).astype(np.int8)
    declared = top * 127.0 / levels
    return q, -declared, declared


def int8_graph(layers, width: int, calibration: np.ndarray, bits: int,
               scaled_input: bool = False):
    """With scaled_input (a non-negative input), QuantizeV2 in SCALED mode with HALF_TO_EVEN
    over [0, max nudged by a few ulps]: one pass of fbgemm's quantize on the CPU instead of
    MIN_FIRST's four float passes and the narrowing one; the same scale and zero point."""
    outs = float_forward(layers, calibration)
    x = tf.placeholder(tf.float32, [None, width])
    if scaled_input:
        q = tf.raw_ops.QuantizeV2(input=x, min_range=0.0,
                                  max_range=qk.one_pass_scaled_max(float(calibration.max())),
                                  T=tf.quint8, mode="SCALED", round_mode="HALF_TO_EVEN")
    else:
        q = tf.raw_ops.QuantizeV2(input=x, min_range=float(calibration.min()),
                                  max_range=float(calibration.max()), T=tf.quint8,
                                  mode="MIN_FIRST")
    h, lo, hi = q.output, q.output_min, q.output_max
    for i, (w, b) in enumerate(layers):
        qw, wlo, whi = quantized_weights(w, bits)
        last = i == len(layers) - 1
        top = float(np.abs(outs[i]).max())
        op = tf.raw_ops.QuantizedMatMulWithBiasAndRequantize if last else \
            tf.raw_ops.QuantizedMatMulWithBiasAndReluAndRequantize
        h, lo, hi = op(a=h, b=tf.constant(qw, dtype=tf.qint8), bias=b, min_a=lo, max_a=hi,
                       min_b=wlo, max_b=whi, min_freezed_output=-top if last else 0.0,
                       max_freezed_output=top, Toutput=tf.qint8 if last else tf.quint8,
                       input_quant_mode="SCALED" if scaled_input and i == 0 else "MIN_FIRST")
    return x, tf.dequantize(h, lo, hi, mode="SCALED")


def pass_graph(layers, width: int, calibration: np.ndarray, mode: str = "eightbit"):
    """The float graph through engine.compression.quantize (eightbit calibrated, or weights):
    what a user gets from the pass, imported into the default graph."""
    with tf.Graph().as_default() as float_g:
        x, out = float_graph(layers, width)
    samples = {x.op.name: calibration} if mode == "eightbit" else None
    result = quantize(float_g.as_graph_def(), mode, calibration_samples=samples,
                      output_names=[out.op.name])
    tf.import_graph_def(result.graph_def, name="")
    graph = tf.get_default_graph()
    return graph.get_tensor_by_name(x.name), graph.get_tensor_by_name(out.name)


def torch_models(layers):
    modules = []
    for i, (w, b) in enumerate(layers):
        linear = torch.nn.Linear(*w.shape)
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(w.T))
            linear.bias.copy_(torch.from_numpy(b))
        modules.append(linear)
        if i < len(layers) - 1:
            modules.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*modules).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")            # torch.ao.quantization is deprecated
        dynamic = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear},
                                                         dtype=torch.qint8)
    return model, dynamic


# Session.run rows that also run through Session.make_callable (TF1's API for a repeated step).
CALLABLE_ROWS = {"our float": "our float, callable",
                 "our int8, 7-bit w, SCALED in": "int8 7-bit SCALED in, callable",
                 "quantize_graph int8": "quantize_graph int8, callable"}


def bare_int8(layers, calibration: np.ndarray):
    """The floor under our int8 graph: the same torch calls with no engine around them
    (quantize_per_tensor of the input, fbgemm linear[_relu] per layer with 7-bit weights and
    calibrated output scales, dequantize), rounding as torch does, not as TF does."""
    outs = float_forward(layers, calibration)
    packed, scales = [], []
    for i, (w, b) in enumerate(layers):
        qw, _, top = quantized_weights(w, 7)
        weight = fbgemm._quantized(torch.from_numpy(np.ascontiguousarray(qw.T)), top / 127, 0)
        packed.append(torch.ops.quantized.linear_prepack(weight, torch.from_numpy(b)))
        scales.append(float(np.abs(outs[i]).max()) / (255 if i < len(layers) - 1 else 127))
    scale_in = float(calibration.max()) / 255

    def run(x: torch.Tensor) -> torch.Tensor:
        q = torch.quantize_per_tensor(x, scale_in, 0, torch.quint8)
        for i, (p, scale) in enumerate(zip(packed, scales)):
            last = i == len(packed) - 1
            op = torch.ops.quantized.linear if last else torch.ops.quantized.linear_relu
            q = op(q, p, scale, 128 if last else 0)
        return q.dequantize()
    return run


def bare_ops(layers, calibration: np.ndarray):
    """bare_int8 as a list of (label, call) steps, each taking the previous one's result, so
    the floor can be timed op by op."""
    outs = float_forward(layers, calibration)
    scale_in = float(calibration.max()) / 255
    steps = [("quantize_per_tensor",
              lambda x: torch.quantize_per_tensor(x, scale_in, 0, torch.quint8))]
    for i, (w, b) in enumerate(layers):
        qw, _, top = quantized_weights(w, 7)
        weight = fbgemm._quantized(torch.from_numpy(np.ascontiguousarray(qw.T)), top / 127, 0)
        packed = torch.ops.quantized.linear_prepack(weight, torch.from_numpy(b))
        last = i == len(layers) - 1
        scale = float(np.abs(outs[i]).max()) / (127 if last else 255)
        op = torch.ops.quantized.linear if last else torch.ops.quantized.linear_relu
        steps.append((f"{'linear' if last else 'linear_relu'} {w.shape[0]}x{w.shape[1]}",
                      lambda q, op=op, p=packed, s=scale, z=128 if last else 0: op(q, p, s, z)))
    steps.append(("dequantize", torch.Tensor.dequantize))
    return steps


def account_rows(layers, sizes, batch: int, repeat: int, calibration) -> None:
    """Where the time goes between the floor (bare fbgemm calls) and the pass's int8 graph
    through make_callable, at one batch: the floor op by op (perf_counter_ns around each
    call), our kernels op by op (a FULL_TRACE step's node stats, the executor's own clock
    around each kernel), and what is left of each whole step once its ops are taken out
    (ours: executor, feed and fetch). Medians of `repeat` interleaved steps, microseconds."""
    rng = np.random.default_rng(batch)
    x_val = rng.uniform(0.0, 1.0, size=(batch, sizes[0])).astype(np.float32)
    tx = torch.from_numpy(x_val)
    config = tf.ConfigProto(inter_op_parallelism_threads=1, intra_op_parallelism_threads=1)
    with tf.Graph().as_default() as g:
        x, out = pass_graph(layers, sizes[0], calibration)
    sess = tf.Session(graph=g, config=config)
    step = sess.make_callable(out, [x])
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    floor = bare_ops(layers, calibration)
    _, dynamic = torch_models(layers)
    ours_ops: dict[str, list] = {}
    floor_ops: dict[str, list] = {i: [] for i in range(len(floor))}
    totals = {"floor": [], "ours": [], "dynamic": []}

    def timed(function, *args):
        start = time.perf_counter_ns()
        value = function(*args)
        return value, (time.perf_counter_ns() - start) / 1e3

    def one_round(keep: bool) -> None:
        metadata = tf.RunMetadata()
        sess.run(out, {x: x_val}, options=options, run_metadata=metadata)
        for dev in metadata.step_stats.dev_stats:
            for n in dev.node_stats:
                if keep:
                    ours_ops.setdefault((n.node_name, n.op), []).append(n.op_end_rel_micros)
        value = tx
        for i, (_, call) in enumerate(floor):
            value, took = timed(call, value)
            if keep:
                floor_ops[i].append(took)
        for label, function, arg in (("ours", step, x_val), ("floor", bare, tx),
                                     ("dynamic", dynamic, tx)):
            took = timed(function, arg)[1]
            if keep:
                totals[label].append(took)

    with torch.no_grad():
        bare = bare_int8(layers, calibration)
        for _ in range(3):
            one_round(False)
        for _ in range(repeat):
            one_round(True)
    sess.close()
    print_account(sizes, batch, repeat, [(floor[i][0], v) for i, v in floor_ops.items()],
                  [(op, v) for (_, op), v in ours_ops.items()], totals)


def print_account(sizes, batch: int, repeat: int, floor_ops, ours_ops, totals) -> None:
    """Each op's median and minimum (the minimum: its cost with the least interference from
    a shared machine), and the rest of each step (the whole step's median less its ops'
    medians)."""
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"\nwhere the time goes, MLP {'-'.join(map(str, sizes))}, batch {batch}: {repeat} "
          f"interleaved steps, us, median / min (load average after: {load})")
    print(f"  {'floor op':<26}{'median':>9}{'min':>8}   {'ours (make_callable)':<45}"
          f"{'median':>9}{'min':>8}{'ours-floor':>16}")

    def row(left, f_times, right, o_times):
        fm, om = statistics.median(f_times), statistics.median(o_times)
        print(f"  {left:<26}{fm:>9.1f}{min(f_times):>8.1f}   {right:<45}{om:>9.1f}"
              f"{min(o_times):>8.1f}{om - fm:>+9.1f} /{min(o_times) - min(f_times):>+6.1f}")
    for (label, f_times), (op, o_times) in zip(floor_ops, ours_ops):
        row(label, f_times, op, o_times)

    def rest(whole, ops) -> float:
        return statistics.median(whole) - sum(statistics.median(times) for _, times in ops)
    f_rest, o_rest = rest(totals["floor"], floor_ops), rest(totals["ours"], ours_ops)
    print(f"  {'rest of the step':<26}{f_rest:>9.1f}{'':>8}   "
          f"{'executor, feed, fetch (untraced)':<45}{o_rest:>9.1f}{'':>8}{o_rest - f_rest:>+9.1f}")
    row("whole step (bare)", totals["floor"], "whole step", totals["ours"])
    dyn, ours, bare = (statistics.median(totals[k]) for k in ("dynamic", "ours", "floor"))
    print(f"  torch dynamic int8 {dyn:.1f} us (min {min(totals['dynamic']):.1f}): ours "
          f"{dyn / ours:.3f}x its speed, the floor {dyn / bare:.3f}x (wall clock medians)")


def peer_settings(dynamic) -> str:
    """What torch's dynamic quantization does, read off the quantized model where it can be."""
    linear = next(m for m in dynamic.modules() if hasattr(m, "_packed_params"))
    weight = linear.weight()
    reduce = torch.backends.quantized.engine in ("fbgemm", "x86")
    return (f"torch dynamic int8: weights {weight.dtype} {weight.qscheme()} (8-bit), "
            f"activations quint8 per-tensor with min/max measured on every call, "
            f"reduce_range={reduce} (7-bit activations), float output and ReLU per layer\n"
            f"ours: weights qint8 per-tensor symmetric in 7 bits ([-64, 64]), activations quint8 "
            f"per-tensor with calibrated (constant) ranges, 8-bit outputs requantized in fbgemm")


def session_row(layers, sizes, batch: int, repeat: int, calibration) -> dict:
    rng = np.random.default_rng(batch)
    x_val = rng.uniform(0.0, 1.0, size=(batch, sizes[0])).astype(np.float32)
    want = float_forward(layers, x_val)[-1]
    config = tf.ConfigProto(inter_op_parallelism_threads=1, intra_op_parallelism_threads=1)
    builds = {"our float": lambda: float_graph(layers, sizes[0]),
              "our int8, 8-bit w": lambda: int8_graph(layers, sizes[0], calibration, 8),
              "our int8, 7-bit w": lambda: int8_graph(layers, sizes[0], calibration, 7),
              "our int8, 7-bit w, SCALED in": lambda: int8_graph(layers, sizes[0],
                                                                 calibration, 7, True),
              "quantize_graph int8": lambda: pass_graph(layers, sizes[0], calibration),
              "quantize_graph weights": lambda: pass_graph(layers, sizes[0], calibration,
                                                           "weights")}
    functions, errors, sessions = {}, {}, []
    for label, build in builds.items():
        with tf.Graph().as_default() as g:
            x, out = build()
        sess = tf.Session(graph=g, config=config)
        sessions.append(sess)
        errors[label] = agreement(sess.run(out, {x: x_val}), want)
        functions[label] = functools.partial(sess.run, out, {x: x_val})
        if label in CALLABLE_ROWS:
            step = sess.make_callable(out, [x])
            errors[CALLABLE_ROWS[label]] = agreement(step(x_val), want)
            functions[CALLABLE_ROWS[label]] = functools.partial(step, x_val)
    model, dynamic = torch_models(layers)
    tx = torch.from_numpy(x_val)
    with torch.no_grad():
        bare = bare_int8(layers, calibration)
        errors["bare fbgemm calls"] = agreement(bare(tx).numpy(), want)
        functions["bare fbgemm calls"] = functools.partial(bare, tx)
        for label, module in (("torch float", model), ("torch dynamic int8", dynamic)):
            errors[label] = agreement(module(tx).numpy(), want)
            functions[label] = functools.partial(module, tx)
        times = interleaved_medians(functions, repeat)
    for sess in sessions:
        sess.close()
    return {"times": times, "errors": errors}


def agreement(got: np.ndarray, want: np.ndarray) -> str:
    """Largest error relative to the float logits' spread, and argmax agreement."""
    spread = float(np.abs(want).max()) or 1.0
    same = float((got.argmax(1) == want.argmax(1)).mean())
    return f"{float(np.abs(got - want).max()) / spread:.3f} / {same:.2f}"


def print_rows(sizes, batch: int, row: dict) -> None:
    times, errors = row["times"], row["errors"]
    base, peer = times["our float"][1], times["torch dynamic int8"][1]
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"\nMLP {'-'.join(map(str, sizes))}, batch {batch} (load average after: {load})")
    print(f"  {'':<31}{'wall ms':>9}{'cpu ms':>9}{'cpu range':>16}{'our float/x':>13}"
          f"{'torch dyn/x':>13}   max err / argmax")
    for label, (wall, cpu, low, high) in times.items():
        print(f"  {label:<31}{wall:>9.3f}{cpu:>9.3f}{f'{low:.2f}-{high:.2f}':>16}"
              f"{base / cpu:>12.2f}x{peer / cpu:>12.2f}x   {errors[label]}")


def kernel_rows(repeat: int) -> None:
    """The unfused QuantizedMatMul's exact int8 product, 256x1024x1024, per backend."""
    rng = np.random.default_rng(0)
    a = torch.from_numpy(rng.integers(0, 256, size=(256, 1024)).astype(np.uint8))
    b = torch.from_numpy(rng.integers(0, 256, size=(1024, 1024)).astype(np.uint8))
    fa, fb = a.to(torch.float32), b.to(torch.float32)
    float_ms = median_ms(functools.partial(torch.mm, fa, fb), repeat)
    print("\nQuantizedMatMul product 256x1024x1024 (quint8 x quint8 -> qint32), torch float32 "
          f"mm {float_ms:.2f} ms")
    for backend in qk.CPU_INT8_BACKENDS:
        ms = median_ms(functools.partial(qk.offset_matmul, a, b, 85, 128, backend=backend),
                       2 if backend == "int_mm" else repeat)
        print(f"  {backend:<22}{ms:>9.2f} ms{float_ms / ms:>8.2f}x float")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--sizes", default="1024,1024,1024,10")
    parser.add_argument("--batches", default="1,256")
    parser.add_argument("--skip-kernel", action="store_true")
    parser.add_argument("--account", action="store_true",
                        help="only the op-by-op table: floor against the pass's graph")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(peer_settings(torch_models(make_mlp(DIGITS_SIZES))[1]))
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, quantized engine "
          f"{torch.backends.quantized.engine}, cpu {torch.backends.cpu.get_cpu_capability()}, "
          f"fbgemm saturates int16 pairs: {fbgemm.pairs_saturate()}; medians of {args.repeat}")
    if args.account:
        sizes = tuple(int(s) for s in args.sizes.split(","))
        calibration = np.random.default_rng(99).uniform(0.0, 1.0, size=(2048, sizes[0])
                                                         ).astype(np.float32)
        for batch in (int(b) for b in args.batches.split(",")):
            account_rows(make_mlp(sizes), sizes, batch, args.repeat, calibration)
        return
    for sizes in (tuple(int(s) for s in args.sizes.split(",")), DIGITS_SIZES):
        layers = make_mlp(sizes)
        calibration = np.random.default_rng(99).uniform(0.0, 1.0, size=(2048, sizes[0])
                                                         ).astype(np.float32)
        for batch in (int(b) for b in args.batches.split(",")):
            print_rows(sizes, batch, session_row(layers, sizes, batch, args.repeat,
                                                 calibration))
    if not args.skip_kernel:
        kernel_rows(args.repeat)


if __name__ == "__main__":
    main()
