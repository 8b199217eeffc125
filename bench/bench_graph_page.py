"""Graph page at Inception scale, in headless Chromium (selenium, as dash.testing drives it):
time from navigation to a drawn graph on a freshly started server, and the redraw after
opening a scope, for the 10,000-node sample (sample_graphs/inception_like.py) and its
four-tower variant; printed beside the peer figures of issue 8 as ratios, with the load
average (the machine is shared). --phases prints, for the first round, when each request of
the page started and ended and how big its answer was, and the browser's time to
DOMContentLoaded, and the server's CPU time per phase (graph read, grouping, first view,
each expand's drawing and its JSON): where a draw's time goes. Not a test.

Usage: python bench/bench_graph_page.py [--keep DIR] [--rounds 3] [--phases]
       [--graphs inception_v3 towers]"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "sample_graphs")]

PEERS_FIRST = {"TensorBoard": 10.3, "Model Explorer": 2.9, "Netron": 4.0}
PEERS_EXPAND = {"TensorBoard": 0.47}
GOAL_FIRST, GOAL_EXPAND = 2.0, 0.25
_CY = ("const box = document.querySelector('#graph-cytoscape');"
       "const cy = box && box._cyreg ? box._cyreg.cy : null;")
_PLACED = _CY + ("if (!cy || !cy.nodes().length) return false;"
                 "return cy.nodes().every(n => n.isParent() || n.position().x !== 0 "
                 "|| n.position().y !== 0);")
_FRAME = "const done = arguments[0]; requestAnimationFrame(() => requestAnimationFrame(done));"
# Times a redraw inside the page: from the tap to the first frame painted after the drawing
# changed (a requestAnimationFrame loop, so selenium's polling is not in the figure).
_TAP = _CY + """
const before = cy.nodes().length;
window.__redrawn = null;
const start = performance.now();
const watch = () => {
    if (cy.nodes().length !== before) {
        requestAnimationFrame(() => { window.__redrawn = performance.now() - start; });
    } else { requestAnimationFrame(watch); }
};
cy.getElementById(arguments[0]).emit('tap');
requestAnimationFrame(watch);
"""
_REDRAWN = "return window.__redrawn;"
_SINCE_NAVIGATION = "return performance.now();"
# --phases: every fetch the page makes, as [outputs, start ms, end ms, answer bytes].
_REQUESTS_HOOK = """
window.__requests = [];
const plainFetch = window.fetch;
window.fetch = function (url, options) {
    const start = performance.now();
    let outputs = String(url).split('/').pop();
    try { outputs = JSON.parse(options.body).output; } catch (e) {}
    return plainFetch.apply(this, arguments).then(response => {
        const end = performance.now();
        response.clone().text().then(body => window.__requests.push(
            [outputs.slice(0, 70), start, end, body.length]));
        return response;
    });
};
"""
_REQUESTS = "return window.__requests;"
_LOADED = ("const n = performance.getEntriesByType('navigation')[0];"
           "return [n.responseEnd, n.domContentLoadedEventEnd];")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def record(logdir: Path, which: str, cache: Path) -> str:
    """The sample graph recorded (not run) as a run; the JSON is built once into `cache`."""
    import inception_like

    import engine
    from engine.record import RunWriter
    path = cache / f"{which}.json"
    if not path.exists():
        inception_like.write(which, cache)
    graph = engine.load_graph(path)
    with RunWriter(logdir, which) as writer:
        writer.add_graph(graph)
    return which


def start_server(logdir: Path, port: int) -> subprocess.Popen:
    server = subprocess.Popen(
        [sys.executable, "-m", "workbench", "serve", "--logdir", str(logdir), "--port",
         str(port)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_dash-layout", timeout=1)
            return server
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise RuntimeError("the workbench did not start within 60 s")


def browser():
    from selenium import webdriver
    options = webdriver.ChromeOptions()
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,800"):
        options.add_argument(flag)
    return webdriver.Chrome(options=options)


def wait(driver, script: str, check, timeout: float = 60.0, *args):
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        value = driver.execute_script(script, *args)
        if check(value):
            return value
        time.sleep(0.01)
    raise TimeoutError(script)


def first_draw(driver, url: str) -> float:
    """Seconds from navigation start (the page's own clock) to a painted drawing."""
    driver.get(url)
    wait(driver, _PLACED, bool)
    driver.execute_async_script(_FRAME)
    return driver.execute_script(_SINCE_NAVIGATION) / 1000.0


def expand(driver, group: str) -> float:
    """Tap a closed scope; seconds until the new drawing is painted."""
    driver.execute_script(_TAP, group)
    return wait(driver, _REDRAWN, lambda value: value is not None) / 1000.0


def requests_since(driver, since_ms: float) -> None:
    for outputs, start, end, size in sorted(driver.execute_script(_REQUESTS),
                                            key=lambda row: row[1]):
        if start >= since_ms:
            print(f"      {start - since_ms:7.0f} -> {end - since_ms:7.0f} ms "
                  f"{size:8d} B  {outputs}")


def measure(logdir: Path, run: str, groups: list[str], phases: bool = False
            ) -> tuple[float, list[float]]:
    port = free_port()
    server = start_server(logdir, port)
    driver = browser()
    if phases:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                               {"source": _REQUESTS_HOOK})
    try:
        load = os.getloadavg()[0]
        first = first_draw(driver, f"http://127.0.0.1:{port}/graph?run={run}")
        if phases:
            answered, loaded = driver.execute_script(_LOADED)
            print(f"    page answered {answered:.0f} ms, DOMContentLoaded {loaded:.0f} ms, "
                  f"drawn {first * 1000:.0f} ms; requests:")
            requests_since(driver, 0.0)
        expands = []
        for group in groups:
            before = driver.execute_script(_SINCE_NAVIGATION)
            expands.append(expand(driver, group))
            if phases:
                print(f"    {group}: {expands[-1] * 1000:.0f} ms; requests:")
                requests_since(driver, before)
        print(f"  {run}: first {first:.2f} s; " + ", ".join(
            f"{group} {seconds:.3f} s" for group, seconds in zip(groups, expands))
            + f" (load average {load:.2f})", flush=True)
    finally:
        driver.quit()
        server.terminate()
        server.wait(10)
    return first, expands


def server_phases(logdir: Path, run: str, groups: list[str]) -> None:
    """CPU milliseconds of each server phase, from a cold cache, in this process."""
    from dash._utils import to_json

    from workbench import data
    from workbench.pages import graph as page

    def cpu(label: str, work, *args):
        start = time.process_time()
        value = work(*args)
        print(f"    {label:44s} {1000 * (time.process_time() - start):7.1f} ms CPU")
        return value

    data.set_logdir(logdir)                     # and an empty cache
    cpu("graph record read", lambda: data.graph(run))
    cpu("hierarchy (scopes and series)", lambda: data.hierarchy(run))
    first = cpu("first view (layout, routes, elements)",
                lambda: page.initial_view({"run": run, "step": None, "node": None}))
    opened = set(first["expanded"])
    for group in groups:
        opened.add(group)
        drawn = cpu(f"expand {group}", page.draw, run, sorted(opened), "device", None, [],
                    group)
        cpu(f"  its JSON ({len(to_json(drawn)) // 1000} KB)", to_json, drawn)


def table(name: str, firsts: list[float], expands: list[float]) -> None:
    first, opened = statistics.median(firsts), statistics.median(expands)
    print(f"\n{name}: first draw {first:.2f} s (median of {len(firsts)}, best "
          f"{min(firsts):.2f}, max {max(firsts):.2f}); expand {opened:.3f} s (median of "
          f"{len(expands)}, best {min(expands):.3f}, max {max(expands):.3f}); goals "
          f"{GOAL_FIRST} s / {GOAL_EXPAND} s; load average now {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} cores")
    for peer, seconds in PEERS_FIRST.items():
        print(f"  first draw vs {peer:15s} {seconds:5.1f} s: {seconds / first:5.1f}x faster")
    for peer, seconds in PEERS_EXPAND.items():
        print(f"  expand     vs {peer:15s} {seconds:5.2f} s: {seconds / opened:5.1f}x faster")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build and keep the sample JSON here")
    parser.add_argument("--rounds", type=int, default=3, help="fresh servers per graph")
    parser.add_argument("--phases", action="store_true",
                        help="print each request of the first round")
    parser.add_argument("--graphs", nargs="+", choices=("inception_v3", "towers"),
                        default=("inception_v3", "towers"), help="which samples to time")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-graph-"))
    cache = args.keep or scratch / "graphs"
    cache.mkdir(parents=True, exist_ok=True)
    try:
        cases = {
            "inception_v3": ["InceptionV3", "InceptionV3/Mixed_5b", "InceptionV3/Mixed_6b",
                             "InceptionV3/Mixed_7c", "gradients"],
            "towers": ["tower_[0-3]", "tower_1", "tower_1/InceptionV3"],
        }
        for which in args.graphs:
            groups = cases[which]
            logdir = scratch / which
            run = record(logdir, which, cache)
            firsts, expands = [], []
            for index in range(args.rounds):
                first, opened = measure(logdir, run, groups, args.phases and index == 0)
                firsts.append(first)
                expands += opened
            table(which, firsts, expands)
            if args.phases:
                print(f"  server phases of {which}:")
                server_phases(logdir, run, groups)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
