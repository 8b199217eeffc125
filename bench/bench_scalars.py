"""Scalars at scale (issue 8's goals): 3 runs x 5 tags x 100,000 points drawn within 1 s, and a
log directory of 500 runs listed within 1 s. Each figure is printed beside a peer measured in
the same run:

  1. the Scalars callback for the 15 series (server side, cold cache), beside the naive peer:
     the same figures with every point (no min/max downsampling), built and serialized;
  2. headless Chromium (chromium-driver, as the browser tests use): navigation to
     `/scalars?run=...&tag=...` until all 15 curves are drawn (the page's own clock), on a
     `workbench serve` started fresh for each of --servers rounds: a new browser profile
     as soon as the server answers ("server just started": its warming thread may still be
     reading), another new profile after that ("fresh browser, server warm"), then more
     navigations in that one ("browser cache warm"); each for this checkout (the basic
     plotly.js bundle) and, in turn, the same with --full-plotly (Dash's full bundle: the
     peer of the fresh-browser figures), medians and ranges; beside plotly.js drawing the
     un-downsampled figures on a bare page (the peer of the warm ones);
  3. listing 500 runs (`list_runs` cold and on a refresh through its ListingCache, then the
     Runs page's table callback, cold and on a refresh), beside a bare `sqlite3.connect` +
     one SELECT per run folder (the floor any listing pays); then the Runs page in a fresh
     browser (navigation until its first page of rows is drawn; server just started and
     warm, as above), beside a fresh browser opening a bare HTML table of every run's row
     (the same cells and links, no framework).
The 1-minute load average is printed beside each figure.

The runs hold the scalar blocks RunWriter commits (the curves are drawn from them); with
--without-blocks they are stores as written before blocks (schema 4: every value is read),
the before figure on this checkout. With --against DIR the browser part also runs DIR's
`workbench serve` (another checkout, say main), in turn with this one's, each on the same
store at the same time, for the Scalars and the Runs page (a checkout older than schema 5
needs --without-blocks).

With --million, also one run with a 1,000,000-point tag: a curve with a cold cache (data.curve,
1,200 and 544 points) drawn from its blocks, beside the same store without blocks (every value
read: the peer); and the Scalars zoom callback (scalars.zoom_curves: a relayout's x range
fetched at full resolution, 1,200 points) on ranges of 500,000 to 500 steps, the whole view
drawn already and each zoom a new range, beside the same zoom on the store without blocks
with a cold cache (every value read, then the range cut out: the peer).

Usage: python bench/bench_scalars.py [--points N] [--runs N] [--servers N] [--no-browser]
       [--against DIR] [--without-blocks] [--million]"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
from bench_layout import best_time  # noqa: E402
from bench_workbench_robust import Server  # noqa: E402  (workbench serve in a subprocess)

from engine.record import RunWriter, list_runs, store  # noqa: E402

RUNS, TAGS = ("lr-0.1", "lr-0.01", "lr-0.001"), tuple(f"metric_{k}" for k in range(5))


def load() -> str:
    """The 1-minute load average, printed beside each figure (the machine is shared)."""
    return f"load {Path('/proc/loadavg').read_text().split()[0]}"


def write_run(logdir: Path, name: str, points: int, seed: int, blocks: bool = True) -> None:
    """A run with TAGS, `points` each: one RunWriter point per tag, then the rest by one
    executemany in the store's row format (RunWriter.scalar a million times takes minutes),
    and the blocks RunWriter would have committed with them (store.scalar_blocks of each
    tag's rows); without `blocks`, a store as written before blocks (schema 4)."""
    with RunWriter(logdir, name) as run:
        for tag in TAGS:
            run.scalar(tag, 1.0, 0)
        path = Path(run.path)
    conn = sqlite3.connect(path / "run.sqlite")
    (seq,) = conn.execute("SELECT MAX(seq) FROM scalars").fetchone()
    rng = np.random.default_rng(seed)
    with conn:
        for t, tag in enumerate(TAGS):
            (tag_id,) = conn.execute("SELECT id FROM tags WHERE tag = ?", (tag,)).fetchone()
            values = rng.normal(size=points).cumsum() + 100.0
            base = seq + 1 + t * points
            conn.executemany(
                "INSERT INTO scalars (seq, wall_time, tag_id, step, value) VALUES (?,?,?,?,?)",
                ((base + i, 1.7e9 + i, tag_id, i, float(values[i])) for i in range(1, points)))
        if blocks:
            _write_blocks(conn)
        else:
            conn.execute("DROP TABLE scalar_blocks")
            conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    conn.close()


def _write_blocks(conn: sqlite3.Connection) -> None:
    """Each tag's blocks of its rows in the order written, as the committer makes them."""
    (seq,) = conn.execute("SELECT MAX(seq) FROM scalars").fetchone()
    for (tag_id,) in conn.execute("SELECT id FROM tags WHERE kind = 'scalar'").fetchall():
        rows = np.array(conn.execute("SELECT seq, step, value, wall_time FROM scalars WHERE "
                                     "tag_id = ? ORDER BY seq", (tag_id,)).fetchall())
        bodies = store.scalar_blocks(rows[:, 1], rows[:, 2], rows[:, 3]).astype("<f8")
        size = store.SCALAR_BLOCK_POINTS
        conn.executemany(
            "INSERT INTO scalar_blocks (seq, wall_time, tag_id, first_seq, last_seq, body) "
            "VALUES (?,?,?,?,?,?)",
            ((seq + 1 + k, rows[k * size + size - 1, 3], tag_id, int(rows[k * size, 0]),
              int(rows[k * size + size - 1, 0]), bodies[k].tobytes())
             for k in range(len(bodies))))
        seq += len(bodies)


def every_point_figures(logdir: Path) -> list:
    """The peer's figures: the same curves with every point (no min/max downsampling)."""
    from viz.scalars import curves_figure, scalar_curve
    from workbench import data

    data.set_logdir(logdir)
    figures = []
    for tag in TAGS:
        curves = {}
        for run in RUNS:
            steps, values = data.scalars(run, tag)
            curves[run] = scalar_curve(steps, values, 0.6, max_points=len(values) + 1)
        figures.append(curves_figure(curves, tag))
    return figures


def server_side(logdir: Path) -> tuple[float, float, int, int, int]:
    """(ours s, peer s, our payload bytes, peer payload bytes, our points per trace)."""
    import plotly.io

    from workbench import data
    from workbench.pages import scalars

    data.set_logdir(logdir)

    def ours():
        data.clear_cache()
        return scalars.curves(list(RUNS), list(TAGS), 0.6)

    def peer():
        data.clear_cache()      # both sides read the store: the peer is cold too
        return [plotly.io.to_json(figure) for figure in every_point_figures(logdir)]

    ours_s, peer_s = best_time(ours, 3)[0], best_time(peer, 3)[0]
    graphs = ours()
    our_bytes = sum(len(plotly.io.to_json(g.figure)) for g in graphs)
    peer_bytes = sum(len(text) for text in peer())
    points = max(len(trace.y) for g in graphs for trace in g.figure.data)
    return ours_s, peer_s, our_bytes, peer_bytes, points


def drawn_clock(selector: str, count: int) -> str:
    """Installed in every page before its own scripts: the page's clock (ms since navigation)
    when the first and when `count` of `selector` are in the document, checked every 4 ms in
    the page itself (no WebDriver round trip in the way)."""
    return f"""
window.__drawn = {{}};
const check = () => {{
  const n = document.querySelectorAll({json.dumps(selector)}).length;
  if (n > 0 && window.__drawn.first === undefined) window.__drawn.first = performance.now();
  if (n >= {count}) {{ window.__drawn.all = performance.now(); return; }}
  setTimeout(check, 4);
}};
setTimeout(check, 4);
"""


# The 30 traces of the 15 curves (raw and smoothed).
CURVES_DRAWN = drawn_clock("#scalars-curves-div .js-plotly-plot .scatterlayer .trace", 30)
# The end of the largest Dash response: the page's layout with its curves (the Runs page's
# table), from the router's callback or, since workbench/first_page.py, the first layout.
CURVES_ARRIVED = ("return Math.max(...performance.getEntriesByType('resource')"
                  ".filter(e => e.name.includes('_dash-update-component')"
                  " || e.name.endsWith('/_dash-layout'))"
                  ".sort((a, b) => b.encodedBodySize - a.encodedBodySize).slice(0, 1)"
                  ".map(e => e.responseEnd))")


@dataclass
class Navigation:
    """One navigation's page-clock times in seconds and the load average when it ended."""
    curves_arrived: float
    drawn: float
    load: str


@dataclass(frozen=True)
class Variant:
    """A `workbench serve` to navigate on: a checkout and more serve options."""
    label: str
    tree: Path
    args: tuple[str, ...] = ()


def _chromium(clock: str = CURVES_DRAWN):
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,800"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options)      # a new profile: the browser cache cold
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": clock})
    return driver


def _navigate(driver, url: str) -> Navigation:
    from selenium.webdriver.support.wait import WebDriverWait

    driver.get(url)
    drawn = WebDriverWait(driver, 120, poll_frequency=0.05).until(
        lambda d: d.execute_script("return window.__drawn.all"))
    arrived = driver.execute_script(CURVES_ARRIVED)
    return Navigation((arrived or 0) / 1000, drawn / 1000, load())


def _fresh(clock: str, url: str, again: int = 0) -> list[Navigation]:
    """A new browser profile's first navigation to `url`, then `again` more (its cache
    warm)."""
    driver = _chromium(clock)
    try:
        return [_navigate(driver, url)] + [_navigate(driver, f"{url}{'&' if '?' in url else '?'}"
                                                             f"n={n}") for n in range(again)]
    finally:
        driver.quit()


def browser(logdir: Path, variants: tuple[Variant, ...], servers: int = 3, again: int = 3
            ) -> tuple[dict, float] | None:
    """({label: {"started", "fresh", "later": navigations}}, peer s), or None without a
    driver. Each of `servers` times, for each variant (alternating which goes first, so each
    meets the same machine state), its `workbench serve` started fresh and:
    "started": a new browser profile's navigation as soon as the server answers (its warming
    thread may still be reading); "fresh": another new profile's (the browser cold, the
    server has drawn the view once); "later": `again` more in that profile (plotly.js and
    Dash's bundles in its cache). The peer: plotly.js drawing the un-downsampled figures on a
    bare page."""
    import shutil

    if not shutil.which("chromedriver"):
        return None
    found = {v.label: {"started": [], "fresh": [], "later": []} for v in variants}
    for k in range(servers):
        for variant in (variants if k % 2 == 0 else variants[::-1]):
            with Server(variant.tree, logdir, args=variant.args) as server:
                url = (f"http://127.0.0.1:{server.port}/scalars?run={','.join(RUNS)}"
                       f"&tag={','.join(TAGS)}&x=step")
                found[variant.label]["started"] += _fresh(CURVES_DRAWN, url)
                fresh, *later = _fresh(CURVES_DRAWN, url, again)
                found[variant.label]["fresh"].append(fresh)
                found[variant.label]["later"] += later
    driver = _chromium()
    try:
        peer = _peer_in_browser(driver, logdir)
    finally:
        driver.quit()
    return found, peer


def spread(navigations: list[Navigation], what: str = "curves") -> str:
    """Median and range of navigation -> drawn, of the data's arrival, and the loads."""
    drawn = [n.drawn for n in navigations]
    arrived = [n.curves_arrived for n in navigations]
    return (f"median {statistics.median(drawn):5.3f} s (range {min(drawn):5.3f}-"
            f"{max(drawn):5.3f}; {what} arrived at {statistics.median(arrived):5.3f} s, drawn "
            f"{statistics.median(d - a for d, a in zip(drawn, arrived)):5.3f} s after) over "
            f"{len(navigations)}   loads {' '.join(n.load.split()[1] for n in navigations)}")


def _peer_in_browser(driver, logdir: Path) -> float:
    """The same 15 curves with every point, handed to plotly.js on a blank page."""
    import plotly.io
    from selenium.webdriver.support.wait import WebDriverWait


    figures = [json.loads(plotly.io.to_json(figure)) for figure in every_point_figures(logdir)]
    plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    page = Path(tempfile.mkdtemp()) / "peer.html"
    page.write_text(f"<html><body><script src='file://{plotly_js}'></script></body></html>")
    driver.get(f"file://{page}")
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return !!window.Plotly"))
    start = time.perf_counter()
    driver.execute_script("""
        const figures = arguments[0];
        window.drawnAll = Promise.all(figures.map(f => {
            const div = document.createElement('div'); document.body.appendChild(div);
            return Plotly.newPlot(div, f.data, f.layout);
        })).then(() => { window.done = true; });""", figures)
    WebDriverWait(driver, 300, poll_frequency=0.01).until(
        lambda d: d.execute_script("return window.done === true"))
    return time.perf_counter() - start


RUN_ROWS = ".runs-table .run-row"


def runs_browser(logdir: Path, servers: int = 3, trees: tuple[Path, ...] = (ROOT,)
                 ) -> tuple[dict, list[Navigation]] | None:
    """({tree: {"started", "fresh": navigations to the Runs page until its first page of
    rows is drawn}}, peer navigations), or None without a driver; "started" and "fresh" as
    in browser(), each of `trees`' servers in turn. The peer: a new browser profile opening
    a bare HTML page with every run's row (the same cells and links, no framework): the
    floor of drawing the listing."""
    import shutil

    from workbench.pages import runs as runs_page

    if not shutil.which("chromedriver"):
        return None
    infos = list_runs(logdir)
    clock = drawn_clock(RUN_ROWS, min(len(infos), runs_page.PAGE_ROWS))
    found = {tree: {"started": [], "fresh": []} for tree in trees}
    peer = []
    page = Path(tempfile.mkdtemp()) / "runs.html"
    page.write_text(_bare_runs_table(infos))
    for k in range(servers):
        for tree in (trees if k % 2 == 0 else trees[::-1]):
            with Server(tree, logdir) as server:
                url = f"http://127.0.0.1:{server.port}/"
                found[tree]["started"] += _fresh(clock, url)
                found[tree]["fresh"] += _fresh(clock, url)
        peer += _fresh(drawn_clock(RUN_ROWS, len(infos)), f"file://{page}")
    return found, peer


def _bare_runs_table(infos) -> str:
    from html import escape
    from urllib.parse import quote

    pages = ("graph", "placement", "scalars", "alerts", "histograms", "images", "replay")
    rows = "".join(
        f"<tr class='run-row'><td>{escape(info.name)}</td><td>{escape(info.status)}</td>"
        f"<td>{info.num_steps}</td><td>{escape(', '.join(info.tags[:6]))}</td><td></td><td>"
        + " · ".join(f"<a href='/{p}?run={quote(info.name)}'>{p}</a>" for p in pages)
        + "</td></tr>" for info in infos)
    return (f"<html><body><table class='runs-table'><thead><tr><th>Run</th><th>Status</th>"
            f"<th>Steps</th><th>Scalar tags</th><th>Started</th><th>Open</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></body></html>")


def listing(logdir: Path) -> dict[str, float]:
    """Seconds of: list_runs with nothing cached; a refresh through a ListingCache that has
    seen every run (nothing changed); the Runs page's table callback cold (data cache
    cleared) and on a refresh; and the bare-sqlite floor (open + one SELECT per folder)."""
    from engine.record.reader import ListingCache
    from workbench import data
    from workbench.pages import runs as runs_page

    def floor():
        for folder in sorted(logdir.iterdir()):
            conn = sqlite3.connect(f"file:{folder / 'run.sqlite'}?mode=ro", uri=True)
            conn.execute("SELECT key, value FROM meta").fetchall()
            conn.close()

    cache = ListingCache()
    list_runs(logdir, cache)
    data.set_logdir(logdir)

    def table_cold():
        data.clear_cache()
        return runs_page.runs_table(None), runs_page.pager(None)

    def table_refresh():
        return runs_page.runs_table(None), runs_page.pager(None)
    table_refresh()
    return {"list_runs": best_time(lambda: list_runs(logdir), 3)[0],
            "refresh": best_time(lambda: list_runs(logdir, cache), 3)[0],
            "table": best_time(table_cold, 3)[0], "table_refresh": best_time(table_refresh, 3)[0],
            "floor": best_time(floor, 3)[0]}


def million_point_tag(logdir: Path) -> dict[tuple[bool, int], float]:
    """{(with blocks, points): best cold data.curve seconds} for a 1,000,000-point tag."""
    import shutil

    from viz.scalars import subplot_points
    from workbench import data

    with RunWriter(logdir, "blocks") as run:
        run.scalar("loss", 1.0, 0)
    conn = sqlite3.connect(logdir / "blocks" / "run.sqlite")
    values = np.random.default_rng(0).normal(size=1_000_000).cumsum()
    with conn:
        conn.executemany(
            "INSERT INTO scalars (seq, wall_time, tag_id, step, value) VALUES (?,?,?,?,?)",
            ((100 + i, 1.7e9 + i, 1, i, float(values[i])) for i in range(1, values.size)))
        # The first point as the others: 1 s a step from 1.7e9, so a time range is a step one.
        conn.execute("UPDATE scalars SET wall_time = 1.7e9 WHERE step = 0")
        _write_blocks(conn)
    conn.close()
    shutil.copytree(logdir / "blocks", logdir / "rows")
    conn = sqlite3.connect(logdir / "rows" / "run.sqlite")
    with conn:
        conn.execute("DROP TABLE scalar_blocks")
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    conn.close()
    data.set_logdir(logdir)
    figures = {}
    for name in ("blocks", "rows"):
        for points in (subplot_points(1), subplot_points(2)):
            def cold(name=name, points=points):
                data.clear_cache()
                return data.curve(name, "loss", 0.6, points)
            figures[name == "blocks", points] = best_time(cold, 3)[0]
    return figures


ZOOM_WIDTHS = (500_000, 50_000, 5_000, 500)


def million_point_zoom(logdir: Path) -> dict[tuple[str, int], tuple[float, float]]:
    """{(x axis, steps zoomed): (best zoom callback seconds, best peer seconds)} on the
    million_point_tag stores: ours on "blocks" with the whole view cached and a new range
    each time, the peer on "rows" with a cold cache."""
    from workbench import data
    from workbench.pages import scalars

    graph = [{"type": scalars.CURVE_GRAPH, "tag": "loss"}]

    def zoom(run, axis, low, high):
        ends = [low, high] if axis != "wall" else [
            str(np.datetime64(int((1.7e9 + x) * 1e3), "ms")).replace("T", " ") for x in
            (low, high)]
        (figure,), _ = scalars.zoom_curves([{"xaxis.range": ends}], graph, [run], ["loss"],
                                           0.6, axis, [], None, None)
        return figure

    data.set_logdir(logdir)
    figures = {}
    for axis in ("step", "wall"):
        for width in ZOOM_WIDTHS:
            starts = iter(range(100_000, 400_000, 7_919))     # a new range each time

            def ours(axis=axis, width=width, starts=starts):
                low = next(starts)
                return zoom("blocks", axis, low, low + width)

            def peer(axis=axis, width=width):
                data.clear_cache()
                return zoom("rows", axis, 200_000, 200_000 + width)
            scalars.curves(["blocks"], ["loss"], 0.6, None, axis, [])      # the whole view
            figures[axis, width] = (best_time(ours, 5)[0], best_time(peer, 2)[0])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--servers", type=int, default=3,
                        help="fresh servers (and browser profiles) to navigate on")
    parser.add_argument("--without-blocks", action="store_true",
                        help="stores as written before scalar blocks (the before figure)")
    parser.add_argument("--million", action="store_true",
                        help="also a 1,000,000-point tag's curve, with and without blocks")
    parser.add_argument("--against", type=Path, default=None,
                        help="another checkout (say main) whose server is navigated in turn "
                             "with this one's, so both meet the same machine state")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        curves_dir, many_dir = Path(tmp) / "curves", Path(tmp) / "many"
        for seed, name in enumerate(RUNS):
            write_run(curves_dir, name, args.points, seed, blocks=not args.without_blocks)
        print(f"Scalars: {len(RUNS)} runs x {len(TAGS)} tags x {args.points:,} points, "
              f"{'without' if args.without_blocks else 'with'} scalar blocks")
        ours, peer, our_bytes, peer_bytes, points = server_side(curves_dir)
        print(f"  callback, cold cache        ours {ours:6.3f} s ({our_bytes / 1e6:5.2f} MB, "
              f"{points} points a trace)   "
              f"every point {peer:6.3f} s ({peer_bytes / 1e6:6.2f} MB)   ratio "
              f"{ours / peer:.2f}x   {load()}")
        variants = (Variant("ours", ROOT), Variant("full plotly.js", ROOT, ("--full-plotly",)))
        if args.against is not None:
            variants += (Variant(str(args.against), args.against.resolve()),)
        drawn = None if args.no_browser else browser(curves_dir, variants, args.servers)
        if drawn is None:
            print("  browser: skipped (no chromedriver, or --no-browser)")
        else:
            found, peer = drawn
            for variant in variants:
                for key, what in (("started", "fresh browser, server just started"),
                                  ("fresh", "fresh browser, server warm  "),
                                  ("later", "browser cache warm          ")):
                    print(f"  navigation -> drawn, {what} [{variant.label}]: "
                          f"{spread(found[variant.label][key])}")
            for key in ("started", "fresh"):
                ours, full = (statistics.median(n.drawn for n in found[label][key])
                              for label in ("ours", "full plotly.js"))
                print(f"  {key:7} fresh browser (goal <= 1 s): basic plotly.js {ours:5.3f} s"
                      f"   full plotly.js {full:5.3f} s   ratio {ours / full:.2f}x")
            ours = statistics.median(n.drawn for n in found["ours"]["later"])
            print(f"  plotly.js with every point on a bare page {peer:6.3f} s   ratio "
                  f"{ours / peer:.2f}x (cache warm)   {load()}")
        if args.million:
            figures = million_point_tag(Path(tmp) / "million")
            for points in sorted({p for _, p in figures}, reverse=True):
                ours, peer = figures[True, points], figures[False, points]
                print(f"  1,000,000-point tag, {points} points, cold: from blocks {ours:6.3f} s"
                      f"   every value read {peer:6.3f} s   ratio {ours / peer:.2f}x   {load()}")
            for (axis, width), (ours, peer) in million_point_zoom(Path(tmp) / "million").items():
                print(f"  1,000,000-point tag, zoom callback on {width:7,} steps ({axis:4} axis): "
                      f"{ours * 1e3:6.1f} ms   every value read {peer * 1e3:7.1f} ms   ratio "
                      f"{ours / peer:.3f}x   {load()}")
        for k in range(args.runs):
            with RunWriter(many_dir, f"run-{k:04d}") as run:
                run.scalar("loss", 1.0 / (k + 1), 0)
        t = listing(many_dir)
        print(f"Listing {args.runs} runs: list_runs {t['list_runs']:6.3f} s, refresh "
              f"{t['refresh']:6.3f} s; Runs table {t['table']:6.3f} s (goal <= 1 s), refresh "
              f"{t['table_refresh']:6.3f} s   bare sqlite open+select {t['floor']:6.3f} s   "
              f"ratio {t['table'] / t['floor']:.2f}x   {load()}")
        trees = (ROOT,) + (() if args.against is None else (args.against.resolve(),))
        drawn = None if args.no_browser else runs_browser(many_dir, args.servers, trees)
        if drawn is not None:
            from workbench.pages.runs import PAGE_ROWS

            found, peer = drawn
            for tree in trees[1:]:
                for key, what in (("started", "server just started"), ("fresh", "server warm")):
                    print(f"  Runs page, navigation -> rows drawn, fresh browser, {what} "
                          f"[{tree}]: {spread(found[tree][key], 'table')}")
            found = found[ROOT]
            for key, what in (("started", "server just started"), ("fresh", "server warm")):
                print(f"  Runs page ({PAGE_ROWS} rows a page), navigation -> rows drawn, fresh "
                      f"browser, {what}: {spread(found[key], 'table')}")
            ours = statistics.median(n.drawn for n in found["fresh"])
            bare = statistics.median(n.drawn for n in peer)
            print(f"  fresh browser, server warm (goal <= 1 s): {ours:5.3f} s   a bare HTML table "
                  f"of all {args.runs} rows {bare:5.3f} s   ratio {ours / bare:.2f}x   {load()}")


if __name__ == "__main__":
    main()
