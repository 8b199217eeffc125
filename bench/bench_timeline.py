"""Benchmark: viz.timeline on a traced step of 10,000 op executions (CPU:0 and two GPUs,
every 20th op handing its output to the next device through a Send/Recv pair), beside
json.dumps of the same records as the floor any renderer pays to ship them. Prints the figure
build, the figure serialized as Dash sends it, and the Chrome trace export, each as a ratio.
Run: python bench/bench_timeline.py [--ops N] [--repeat R]"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random

import plotly.io as pio
from bench_layout import best_time  # bench/ is on sys.path when a script in it runs

from engine.record.schema import CutEdgeRecord, OpStatRecord, TransferRecord
from viz.timeline import StepTrace, chrome_trace, timeline_figure

PREFIX = "/job:localhost/replica:0/task:0/device:"
DEVICES = (PREFIX + "CPU:0", PREFIX + "GPU:0", PREFIX + "GPU:1")
OPS = ("MatMul", "Add", "Relu", "Mul", "Conv2D", "BiasAdd", "Identity", "Tanh")
HAND_OFF_EVERY = 20


def _hand_off(k: int, src: str, dst: str, at: float, producer: str, rng: random.Random):
    """A Send on src and its Recv on dst, the cut edge that names them, the transfer."""
    key = f"{src};0000000000000001;{dst};edge_{k}_{producer};0:0"
    send = OpStatRecord(1, f"{producer}/_{2 * k}", "_Send", src, at, at + 2.0, 0)
    arrive = at + rng.uniform(5.0, 40.0)
    recv = OpStatRecord(1, f"{producer}/_{2 * k + 1}", "_Recv", dst, arrive, arrive + 1.0, 4096)
    edge = CutEdgeRecord(1, f"{producer}:0", src, dst, send.node, recv.node, key, "float32",
                         (32, 32), (f"after_{k}",), 4096)
    return send, recv, edge, TransferRecord(1, key, f"edge_{k}_{producer}", src, dst, 4096)


def synthetic_step(count: int, seed: int = 0) -> StepTrace:
    """`count` executions, Send/Recv included; a device sometimes runs two ops at once."""
    rng = random.Random(seed)
    stats, edges, transfers = [], [], []
    clock = {device: 0.0 for device in DEVICES}
    device = DEVICES[0]
    k = 0
    while len(stats) < count:
        name = f"block_{len(stats) // 50}/op_{len(stats)}"
        start = clock[device] + rng.uniform(0.5, 3.0)
        end = start + rng.expovariate(1 / 12.0)
        stats.append(OpStatRecord(1, name, rng.choice(OPS), device, start, end, 4096))
        clock[device] = end if rng.random() > 0.1 else start + 1.0     # some overlap
        if len(stats) % HAND_OFF_EVERY == 0 and len(stats) + 2 <= count:
            target = DEVICES[(DEVICES.index(device) + 1) % len(DEVICES)]
            send, recv, edge, moved = _hand_off(k, device, target, end, name, rng)
            stats += [send, recv]
            edges.append(edge)
            transfers.append(moved)
            clock[target] = max(clock[target], recv.end_us)
            device, k = target, k + 1
    return StepTrace("bench", 1, tuple(stats), tuple(transfers), tuple(edges), (), 1.7e9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    trace = synthetic_step(args.ops)
    records = {"stats": [dataclasses.asdict(s) for s in trace.stats],
               "transfers": [dataclasses.asdict(t) for t in trace.transfers],
               "cut_edges": [dataclasses.asdict(e) for e in trace.cut_edges]}
    floor, payload = best_time(lambda: json.dumps(records), args.repeat)
    build, figure = best_time(lambda: timeline_figure(trace), args.repeat)
    shipped, _ = best_time(lambda: pio.to_json(timeline_figure(trace), validate=False),
                           args.repeat)
    exported, _ = best_time(lambda: json.dumps(chrome_trace(trace)), args.repeat)
    bars = sum(len(t.x) for t in figure.data if t.type == "bar")
    print(f"step of {len(trace.stats):,} op executions ({bars:,} bars, "
          f"{len(trace.cut_edges):,} transfers); best of {args.repeat}")
    print(f"  json.dumps of the records (floor) {floor * 1e3:8.1f} ms   "
          f"{len(payload) / 1e6:.1f} MB")
    for label, seconds in (("timeline_figure build", build),
                           ("build + serialize for Dash", shipped),
                           ("chrome_trace + json.dumps", exported)):
        print(f"  {label:<33} {seconds * 1e3:8.1f} ms   {seconds / floor:5.1f}x the floor")


if __name__ == "__main__":
    main()
