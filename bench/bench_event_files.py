"""Load time of one TensorBoard event file of 3 scalar tags x 100,000 points (300,001 records,
simple_value as torch's SummaryWriter writes them) through our EventFileReader, beside
tensorboard's own EventAccumulator (Reload, then Scalars of each tag) as the peer. Both read
everything cold; the figures are the best and the median of --repeats loads, and the ratio.
Then the TFRecord framing alone (no protobuf decoding): ours beside tensorboard's reader.

Usage: python bench/bench_event_files.py [--points N] [--repeats N]"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from tensorboard.backend.event_processing import event_accumulator, event_file_loader
from tensorboard.compat.proto import event_pb2, summary_pb2

from engine.record import EventFileReader
from engine.record.event_files import clear_memo
from engine.record.tfrecord import RecordFile, write_record

TAGS = ("loss", "accuracy", "learning_rate")


def write_event_file(run_dir: Path, points: int) -> Path:
    """Written with our framing (tensorboard's writer computes CRC-32C in pure Python and
    takes ~40 s for this file); the events are what SummaryWriter.add_scalar makes."""
    run_dir.mkdir(parents=True)
    path = run_dir / "events.out.tfevents.1700000000.bench.0"
    rng = np.random.default_rng(0)
    with open(path, "wb") as handle:
        write_record(handle, event_pb2.Event(wall_time=1.7e9,
                                             file_version="brain.Event:2").SerializeToString())
        for step in range(points):
            for i, tag in enumerate(TAGS):
                value = summary_pb2.Summary.Value(tag=tag, simple_value=float(rng.random() + i))
                event = event_pb2.Event(wall_time=1.7e9 + step * 0.01, step=step,
                                        summary=summary_pb2.Summary(value=[value]))
                write_record(handle, event.SerializeToString())
    return path


def ours(run_dir: Path) -> int:
    clear_memo()     # cold: no parse kept from the previous repeat
    reader = EventFileReader(run_dir)
    total = 0
    for tag in TAGS:
        _steps, values = reader.scalars(tag)
        reader.scalar_wall_times(tag)
        total += len(values)
    return total


def tensorboards(run_dir: Path) -> int:
    accumulator = event_accumulator.EventAccumulator(
        str(run_dir), size_guidance={event_accumulator.SCALARS: 0})   # 0: keep every point
    accumulator.Reload()
    return sum(len(accumulator.Scalars(tag)) for tag in TAGS)


def our_framing(run_dir: Path) -> int:
    (path,) = run_dir.iterdir()
    return sum(1 for _ in RecordFile(path))


def tensorboards_framing(run_dir: Path) -> int:
    (path,) = run_dir.iterdir()
    return sum(1 for _ in event_file_loader.RawEventFileLoader(str(path)).Load())


def timed(load, run_dir: Path, repeats: int) -> tuple[list[float], int]:
    times, count = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        count = load(run_dir)
        times.append(time.perf_counter() - start)
    return times, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100_000, help="points per tag")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        start = time.perf_counter()
        path = write_event_file(run_dir, args.points)
        print(f"event file: {len(TAGS)} tags x {args.points:,} points, "
              f"{path.stat().st_size / 1e6:.1f} MB, written in {time.perf_counter() - start:.1f} s")
        ours_times, ours_count = timed(ours, run_dir, args.repeats)
        peer_times, peer_count = timed(tensorboards, run_dir, args.repeats)
        framing = [(name, timed(load, run_dir, args.repeats)) for name, load in (
            ("framing only: ours (crc32c)", our_framing),
            ("framing only: tensorboard's", tensorboards_framing))]
    expected = len(TAGS) * args.points
    assert ours_count == peer_count == expected, (ours_count, peer_count, expected)
    assert all(count == expected + 1 for _, (_, count) in framing)
    rows = (("EventFileReader (ours)", ours_times),
            ("tensorboard EventAccumulator", peer_times),
            *((name, times) for name, (times, _) in framing))
    print(f"{'loader':32} {'best s':>8} {'median s':>9}")
    for name, times in rows:
        print(f"{name:32} {min(times):8.2f} {statistics.median(times):9.2f}")
    print(f"ratio (EventAccumulator / ours, best): {min(peer_times) / min(ours_times):.1f}x")
    (_, (mine, _)), (_, (theirs, _)) = framing
    print(f"ratio (framing, tensorboard's / ours, best): {min(theirs) / min(mine):.1f}x")


if __name__ == "__main__":
    main()
