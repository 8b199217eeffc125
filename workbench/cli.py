"""The `workbench` command: `serve` a log directory, record the `demo` runs and serve them,
or `export` a run as TensorBoard event files, `view` a graph file (recorded into a
temporary run), `replay` a run folder, or `quantize` a graph file. Binds 127.0.0.1 unless
--host says otherwise."""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8050
EXPORT_FORMATS = ("tensorboard",)


def _add_server_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=DEFAULT_HOST,
                        help=f"address to bind (default {DEFAULT_HOST}: this machine only)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port (default {DEFAULT_PORT})")
    parser.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                        help="also accept requests whose Host header is NAME (a reverse "
                             "proxy's name); repeatable")
    parser.add_argument("--auth-token", default=None,
                        help="require this token on every request (default: the "
                             "WORKBENCH_AUTH_TOKEN environment variable, else none)")
    parser.add_argument("--full-plotly", action="store_true",
                        help="send the browser plotly.js's full bundle (4.8 MB) instead of "
                             "the basic one (1.2 MB: bar, pie and scatter, all the pages draw)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="workbench", description="See what the engine "
                                     "recorded: graphs, placement, scalars.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the runs in a log directory")
    serve.add_argument("--logdir", required=True, help="folder holding one folder per run")
    _add_server_options(serve)
    demo = commands.add_parser("demo", help="record the demo runs, then serve them")
    demo.add_argument("--logdir", default="runs", help="where to record (default: runs)")
    demo.add_argument("--steps", type=int, help="training steps per run (default: the demo's)")
    demo.add_argument("--no-serve", action="store_true", help="record only; do not serve")
    _add_server_options(demo)
    export = commands.add_parser("export", help="write a run's summaries in another format")
    export.add_argument("--format", required=True, choices=EXPORT_FORMATS,
                        help="tensorboard: one event file that TensorBoard opens")
    export.add_argument("run_dir", type=Path, help="the run folder to export")
    export.add_argument("out", type=Path, help="folder to write into (created when absent)")
    view = commands.add_parser("view", help="open a graph file on the Graph page (recorded "
                               "into a temporary run)")
    view.add_argument("graph", help="a graph file written by engine.save_graph "
                                    "(or tf.train.write_graph)")
    view.add_argument("--logdir", default=None, help="record the run here and keep it "
                                                     "(default: a temporary folder)")
    _add_server_options(view)
    replay = commands.add_parser("replay", help="open a run on the Replay page (its parent "
                                 "folder served as the log directory)")
    replay.add_argument("run_dir", type=Path, help="the run folder to replay")
    _add_server_options(replay)
    _add_quantize_parser(commands)
    return parser


def _add_quantize_parser(commands) -> None:
    quantize = commands.add_parser(
        "quantize", help="quantize a graph file to 8 bits (TF's quantize_graph) and report "
                         "accuracy and size against the float graph")
    quantize.add_argument("graph", type=Path, help="a frozen float graph file (engine.save_graph)")
    quantize.add_argument("--mode", required=True, choices=("weights", "eightbit"),
                          help="weights: weights stored as 8 bits, dequantized on load (size "
                               "only); eightbit: 8-bit ops end to end")
    quantize.add_argument("--calibration", type=int, default=None, metavar="N",
                          help="eightbit: take each range from N training samples, stored as "
                               "constants (default: ranges found at run time)")
    quantize.add_argument("--out", type=Path, required=True, help="the quantized graph file")
    quantize.add_argument("--report", type=Path, default=None,
                          help="write a JSON report here (accuracies, bytes, kept_float)")
    quantize.add_argument("--data", default="digits", choices=("digits",),
                          help="the dataset the graph was trained for: calibration samples "
                               "from its training split, accuracy on its held-out split "
                               "(default: digits, the digits MLP and CNN samples; input "
                               "'images', output 'probabilities')")
    _add_fallback_options(quantize)
    _add_record_option(quantize)


def _add_fallback_options(quantize) -> None:
    quantize.add_argument("--fallback-min", type=float, default=None, metavar="LO",
                          help="eightbit, with --fallback-max: a fixed range [LO, HI] every "
                               "Requantize without a calibrated range uses instead of a "
                               "RequantizationRange at run time (TF's "
                               "--quantized_fallback_min/max; coarse)")
    quantize.add_argument("--fallback-max", type=float, default=None, metavar="HI",
                          help="the top of the fallback range (see --fallback-min)")


def fallback_range(args: argparse.Namespace) -> tuple[float, float] | None:
    """(--fallback-min, --fallback-max), None without them; one alone is a mistake."""
    lo, hi = getattr(args, "fallback_min", None), getattr(args, "fallback_max", None)
    if lo is None and hi is None:
        return None
    if lo is None or hi is None:
        raise ValueError("--fallback-min and --fallback-max go together: give both")
    if getattr(args, "record", None) is not None:
        # record_quantize_job quantizes again, without a fallback range: its comparison would
        # be of another graph than the one written.
        raise ValueError("--record does not take --fallback-min/--fallback-max: record the "
                         "graph without them, or drop --record")
    return lo, hi


def _add_record_option(quantize) -> None:
    quantize.add_argument("--record", type=Path, default=None, metavar="LOGDIR",
                          help="also record both graphs, the per-node comparison and the "
                               "cost table into a new run in LOGDIR, for the Quantization page")


def record_quantized(args: argparse.Namespace) -> None:
    """--record LOGDIR: the quantized graph compared with the float one, into a new run."""
    from engine.compression.report import record_quantize_job
    path = record_quantize_job(args.record, args.graph, args.mode, args.calibration,
                               args.data, say=lambda line: print(line, file=sys.stderr,
                                                                 flush=True))
    print(f"recorded the comparison in {path}", flush=True)


def _progress_bar(label: str, stream=None):
    stream = stream or sys.stderr

    def show(done: int, total: int) -> None:
        filled = int(30 * done / max(total, 1))
        stream.write(f"\r  {label} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}")
        if done >= total:
            stream.write("\n")
        stream.flush()
    return show


def quantize(args: argparse.Namespace) -> int:
    """`workbench quantize GRAPH --mode M --out FILE`: stages and progress on stderr, the
    summary on stdout, a failure as one line on stderr with exit status 2."""
    from engine.compression.job import run_quantize
    from engine.errors import OpError

    try:
        body = run_quantize(args.graph, args.mode, args.out, calibration=args.calibration,
                            report=args.report, data=args.data,
                            say=lambda line: print(line, file=sys.stderr, flush=True),
                            bar=_progress_bar, fallback_range=fallback_range(args))
    except (OSError, OpError, ValueError) as exc:
        print(f"workbench: error: {exc}", file=sys.stderr)
        return 2
    print(f"{body['mode']}: accuracy {body['float_accuracy']:.4f} float, "
          f"{body['quantized_accuracy']:.4f} quantized; {body['float_bytes']:,} bytes float, "
          f"{body['quantized_bytes']:,} quantized ({body['size_ratio']:.2f}x)", flush=True)
    if args.record is not None:
        try:
            record_quantized(args)
        except (OSError, OpError) as exc:
            print(f"workbench: error: {exc}", file=sys.stderr)
            return 2
    return 0


def prepare_logdir(logdir: Path) -> str:
    """Creates the folder when absent; returns a line describing what is there."""
    if logdir.exists() and not logdir.is_dir():
        raise NotADirectoryError(f"--logdir {logdir} exists and is not a folder")
    if not logdir.exists():
        logdir.mkdir(parents=True)
        return f"Created {logdir}; it is empty until a run is recorded there."
    count = sum(1 for child in logdir.iterdir() if child.is_dir())
    return f"{logdir}: {count} run folder(s)" if count else f"{logdir} is empty (no runs yet)."


def url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def serve(logdir: Path, host: str, port: int, allowed_hosts=(), token: str | None = None,
          full_plotly: bool = False) -> int:
    try:
        print(prepare_logdir(logdir), flush=True)
    except OSError as exc:
        print(f"workbench: error: {exc}", file=sys.stderr)
        return 2
    from workbench.app import create_app  # dash is imported only when serving
    from workbench.serving import TOKEN_ENV, serve_wsgi

    token = token or os.environ.get(TOKEN_ENV) or None
    app = create_app(logdir, full_plotly)
    from workbench.pages.graph import warm as warm_graph_page
    from workbench.pages.scalars import warm as warm_scalars_page
    threading.Thread(target=warm_graph_page, name="warm-graphs", daemon=True).start()
    threading.Thread(target=warm_scalars_page, name="warm-scalars", daemon=True).start()
    print(f"Workbench: {url(host, port)}{'?token=<your token>' if token else ''}", flush=True)
    serve_wsgi(app.server, host, port, allowed_hosts, token)
    return 0


def demo(args: argparse.Namespace) -> int:
    from workbench.demo import run_demo

    options = {} if args.steps is None else {"steps": args.steps}
    paths = run_demo(logdir=args.logdir, progress=True, **options)
    print(f"Recorded {len(paths)} run(s) in {args.logdir}", flush=True)
    if args.no_serve:
        return 0
    return serve(Path(args.logdir), args.host, args.port, args.allow_host, args.auth_token,
                 args.full_plotly)


def export(args: argparse.Namespace) -> int:
    """`workbench export --format tensorboard RUN_DIR OUT`: progress on stdout, a failure
    as one line on stderr with exit status 2."""
    from engine.record import RunStoreError
    from engine.record.tensorboard_export import export_tensorboard

    try:
        summary = export_tensorboard(args.run_dir, args.out,
                                     progress=lambda line: print(line, flush=True))
    except (RunStoreError, OSError) as exc:
        print(f"workbench: error: {exc}", file=sys.stderr)
        return 2
    print(f"Exported {summary.scalars} scalar points, {summary.histograms} histograms, "
          f"{summary.texts} texts, {summary.images} images and a graph of "
          f"{summary.graph_nodes} nodes; open it with: tensorboard --logdir {args.out}",
          flush=True)
    return 0
def record_graph_file(path: Path, logdir: Path) -> str:
    """Reads a graph file with engine.load_graph and records it (not run) as a new run in
    `logdir`; returns the run's name."""
    import engine
    from engine.record import RunWriter

    graph = engine.load_graph(path)
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", path.stem).strip(".") or "graph"
    with RunWriter(logdir, f"{name}-{int(time.time())}") as writer:
        writer.add_graph(graph)
        return writer.name


def view(args: argparse.Namespace) -> int:
    from engine.errors import OpError

    with tempfile.TemporaryDirectory(prefix="workbench-view-") as scratch:
        logdir = Path(args.logdir) if args.logdir else Path(scratch)
        try:
            logdir.mkdir(parents=True, exist_ok=True)
            run = record_graph_file(Path(args.graph), logdir)
        except (OSError, OpError) as exc:      # missing, unreadable or damaged file
            print(f"workbench: error: {exc}", file=sys.stderr)
            return 2
        print(f"Graph: {url(args.host, args.port)}graph?run={run}", flush=True)
        return serve(logdir, args.host, args.port, args.allow_host, args.auth_token,
                     args.full_plotly)


def replay_target(run_dir: Path) -> tuple[Path, str]:
    """(log directory, run name) for `workbench replay RUN_DIR`; OSError naming the folder
    when it is missing or not a run."""
    from engine.record import event_files
    from engine.record.schema import DATABASE_NAME

    if not run_dir.is_dir():
        raise FileNotFoundError(f"no run folder {run_dir}")
    if not ((run_dir / DATABASE_NAME).is_file() or event_files.is_event_file_run(run_dir)):
        raise FileNotFoundError(f"{run_dir} is not a run (no {DATABASE_NAME} and no "
                                "TensorBoard event file in it)")
    resolved = run_dir.resolve()
    return resolved.parent, resolved.name


def replay(args: argparse.Namespace) -> int:
    """`workbench replay RUN_DIR`: serves the run's parent folder and prints the address that
    opens the run on the Replay page."""
    from urllib.parse import quote

    try:
        logdir, run = replay_target(args.run_dir)
    except OSError as exc:
        print(f"workbench: error: {exc}", file=sys.stderr)
        return 2
    print(f"Replay: {url(args.host, args.port)}replay?run={quote(run)}", flush=True)
    return serve(logdir, args.host, args.port, args.allow_host, args.auth_token,
                 args.full_plotly)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        return serve(Path(args.logdir), args.host, args.port, args.allow_host,
                     args.auth_token, args.full_plotly)
    if args.command == "export":
        return export(args)
    if args.command == "view":
        return view(args)
    if args.command == "replay":
        return replay(args)
    if args.command == "quantize":
        return quantize(args)
    return demo(args)
