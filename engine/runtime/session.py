"""tf.Session: places the graph (once per graph version), builds and caches a plan per
(fetches, feeds, targets, graph version), runs it under the step's deadline, fills
RunMetadata, and hands every decision and step to the run store when a logdir is given
(per-op stats only on the steps that are traced)."""

from __future__ import annotations

import contextlib
import itertools
import threading
import time

import torch

from engine import errors
from engine.debug import numerics
from engine.devices import device_mapping_text, discover_devices
from engine.graph import Graph, get_default_graph
from engine.kernels.state import VariableStore
from engine.passes.place import Placement, place
from engine.runtime import recording
from engine.runtime.config import ConfigProto, RunMetadata, RunOptions
from engine.runtime.executor import OOM_HINT
from engine.runtime.fetches import FetchStructure, feed_value, resolve_feeds, to_numpy
from engine.runtime.partition_threads import PartitionThreads
from engine.runtime.plan import Plan, PlanKey, StepControl
from engine.runtime.rendezvous import Deadline, Gate
from engine.summary.writer import attached_run_writer

_default_sessions = threading.local()

# Per-op stats of a recorded session: the first step and every Nth after it, unless
# ConfigProto.trace_every_n_steps says otherwise.
DEFAULT_TRACE_EVERY_N_STEPS = 100


class Session:
    def __init__(self, target: str = "", graph: Graph | None = None,
                 config: ConfigProto | None = None, logdir: str | None = None,
                 run_name: str | None = None):
        if target not in ("", None):
            raise errors.UnimplementedError(
                None, None, f"Session target {target!r}: only the in-process target '' is "
                            "available; distributed targets come with the gRPC runtime.")
        self._closed = True   # until the end of __init__, so close() from __del__ is a no-op
        self._graph = graph or get_default_graph()
        self._config = config or ConfigProto()
        gpu_options = self._config.gpu_options
        self._devices = discover_devices(self._config.virtual_gpus,
                                         device_count=self._config.device_count,
                                         visible_device_list=gpu_options.visible_device_list)
        self._devices_by_name = {d.name: d for d in self._devices}
        self._client_device = self._devices[0].name
        self._variables = VariableStore()
        self._placement: Placement | None = None
        self._placed_version = -1
        self._plans: dict[tuple, Plan] = {}
        self._steps = itertools.count(1)
        self._trace_every = (DEFAULT_TRACE_EVERY_N_STEPS
                             if self._config.trace_every_n_steps is None
                             else self._config.trace_every_n_steps)
        inter_op = self._config.inter_op_parallelism_threads
        self._gate = Gate(inter_op) if inter_op > 0 else None
        self._pool: PartitionThreads | None = None
        self._lock = threading.RLock()
        self._restore = _apply_process_settings(self._config, self._devices)
        self._closed = False
        self._writer = self._open_writer(logdir, run_name)
        self._owns_writer = self._writer is not None
        if self._config.log_device_placement:
            print(device_mapping_text(self._devices), end="", flush=True)

    # -- properties ---------------------------------------------------------------------------

    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def sess_str(self) -> str:
        return ""

    @property
    def run_writer(self):
        """The RunWriter recording this session (None without a logdir); training code may
        log its own scalars through it."""
        return self._writer

    def list_devices(self):
        return list(self._devices)

    @property
    def placement(self) -> Placement | None:
        return self._placement

    # -- running ------------------------------------------------------------------------------

    def run(self, fetches, feed_dict=None, options: RunOptions | None = None,
            run_metadata=None):
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        check_run_arguments(options, run_metadata)
        structure = FetchStructure(self._graph, fetches)
        feeds = resolve_feeds(self._graph, feed_dict)
        if not structure.tensors and not structure.targets:
            for tensor, value in feeds:     # TF still checks the feeds, then runs nothing
                feed_value(tensor, value)
            return structure.rebuild([])
        return self.run_step(structure, feeds, options, run_metadata)

    def make_callable(self, fetches, feed_list=None, accept_options: bool = False):
        """TF1's Session.make_callable: a callable that takes the values of `feed_list`'s
        keys positionally and returns what `run(fetches, ...)` would; the fetch structure,
        the feed keys and the plan lookup are resolved here once (step_callable.py)."""
        from engine.runtime.step_callable import StepCallable
        return StepCallable(self, fetches, feed_list, accept_options)

    def run_step(self, structure: FetchStructure, feeds, options: RunOptions | None = None,
                 run_metadata=None, key: tuple | None = None):
        """One step of resolved fetches and (tensor, value) feeds; `key`, when given, is the
        plan key tuple those fetches and feeds make at the graph's current version."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        with self._lock:
            self._follow_graph_writer()
            plan = self._plan_for(structure, feeds, key)
        values = [feed_value(t, v) for t, v in feeds]
        step = next(self._steps)
        asked = options is not None and options.trace_level > 0
        traced = asked or (self._writer is not None and self._trace_due(step))
        control = StepControl(self._deadline(options), self._gate, step_id=step)
        try:
            if self._writer is None and not traced and not self._config.check_numerics:
                out = plan.run(values, self._thread_pool(plan), None, control)
            else:
                out = self._run_recorded(plan, values, step, traced, control,
                                         run_metadata if asked else None)
        except errors.ResourceExhaustedError as e:
            if options is None or not options.report_tensor_allocations_upon_oom:
                raise
            raise self._with_allocation_report(e) from e
        if run_metadata is not None and options is not None and options.output_partition_graphs:
            run_metadata.partition_graphs = plan.partition_graphs()
        return structure.rebuild([to_numpy(v) for v in out])

    def _trace_due(self, step: int) -> bool:
        every = self._trace_every
        return every > 0 and (step - 1) % every == 0

    def _deadline(self, options: RunOptions | None) -> Deadline | None:
        timeout = options.timeout_in_ms if options is not None else 0
        timeout = timeout or self._config.operation_timeout_in_ms
        return Deadline(timeout) if timeout > 0 else None

    def _run_recorded(self, plan: Plan, values, step: int, traced: bool,
                      control: StepControl, run_metadata):
        """A step that is traced (per-op stats), recorded or checked for NaN/Inf; an untraced
        recorded step takes the fast path and stores only its StepRecord. A checked step that
        finds a NaN or Inf records the alert (committed before the error surfaces)."""
        stats: list | None = numerics.CheckedStepStats() if self._config.check_numerics else \
            [] if traced else None
        wall_start = time.time()
        t0 = time.perf_counter_ns()
        found = None
        try:
            return plan.run(values, self._thread_pool(plan), stats, control)
        except errors.OpError as e:
            found = numerics.failure(stats, e, step, self._graph)
            if found is None or found[1] is e:
                raise
            raise found[1] from None
        finally:
            duration_us = (time.perf_counter_ns() - t0) / 1e3
            if run_metadata is not None:
                run_metadata.step_stats = recording.step_stats(stats, t0, int(wall_start * 1e6))
            if self._writer is not None:
                if traced or found is not None:    # a NaN step keeps its op stats
                    self._writer.step(*recording.step_records(step, plan, wall_start,
                                                              duration_us, stats, t0))
                else:
                    self._writer.step(recording.untraced_step_record(
                        step, plan, wall_start, duration_us, control.bytes_moved), (), ())
                if found is not None:
                    self._writer.alert(found[0])
                    self._writer.flush()

    def _with_allocation_report(self, error: errors.ResourceExhaustedError):
        """RunOptions.report_tensor_allocations_upon_oom: the variables held on the failing
        node's device replace TF's hint."""
        device = getattr(error.node_def, "device", "")
        held = sorted((s for s in self._variables.slots()
                       if s.device == device and s.value is not None),
                      key=lambda s: -s.value.nbytes)
        lines = "".join(f"\n  {s.name}: {list(s.value.shape)} {s.dtype.name}, "
                        f"{s.value.nbytes} bytes" for s in held)
        report = (f"\nCurrent allocation summary for {device}: variables "
                  f"{sum(s.value.nbytes for s in held)} bytes{lines or ' (none)'}\n")
        return type(error)(error.node_def, error.op, error.message.replace(OOM_HINT, report))

    def _thread_pool(self, plan: Plan) -> PartitionThreads | None:
        """Every partition of every concurrent step gets a thread at once (partition_threads.py
        says why a bounded pool would deadlock); the inter-op gate bounds the work."""
        if len(plan.partitions) < 2:
            return None
        with self._lock:
            if self._pool is None:
                self._pool = PartitionThreads()
        return self._pool

    def _plan_for(self, structure: FetchStructure, feeds, key: tuple | None = None) -> Plan:
        plan = self._plans.get(key or plan_key(structure, feeds, self._graph.version))
        if plan is not None:
            return plan
        key = PlanKey(*plan_key(structure, feeds, self._graph.version))
        self._ensure_placement()
        plan = Plan(key, self._graph.as_graph_def(), self._placement.as_dict(),
                    self._devices_by_name, self._client_device, self._variables)
        self._plans[key.as_tuple()] = plan
        if self._writer is not None:
            devices = [p.device.name for p in plan.partitions]
            self._writer.plan(*recording.plan_records(plan, devices))
        return plan

    def _ensure_placement(self) -> None:
        if self._placed_version == self._graph.version:
            return
        graph_def = self._graph.as_graph_def()
        previous = self._placement.as_dict() if self._placement else None
        placement = place(graph_def, self._devices, self._config.allow_soft_placement, previous)
        new_names = [n for n in placement.decisions if previous is None or n not in previous]
        if self._config.log_device_placement:
            for note in placement.notes:
                print(note, flush=True)
            for name in new_names:
                print(placement.decisions[name].log_line, flush=True)
        self._placement = placement
        self._placed_version = graph_def.version
        if self._writer is not None:
            self._writer.graph(recording.graph_record(graph_def))
            self._writer.placements(recording.placement_records(placement, new_names,
                                                                graph_def.version))

    # -- lifecycle ----------------------------------------------------------------------------

    def _follow_graph_writer(self) -> None:
        """Without a logdir of its own, the session records into the run of the
        tf.summary.FileWriter given its graph, so a TF1 script logs with its import changed."""
        if self._owns_writer:
            return
        writer = attached_run_writer(self._graph)
        if writer is not self._writer:
            self._writer = writer
            if writer is not None:
                writer.devices(recording.device_records(self._devices))
                self._plans.clear()     # planned again, so the run records every plan it runs
                if self._placement is not None:
                    writer.graph(recording.graph_record(self._graph.as_graph_def()))
                    writer.placements(recording.placement_records(
                        self._placement, list(self._placement.decisions), self._placed_version))

    def _open_writer(self, logdir, run_name):
        if logdir is None:
            return None
        from engine.record import RunWriter
        writer = RunWriter(logdir, name=run_name, config={
            "kind": "engine.Session", "config": self._config.as_dict()})
        writer.devices(recording.device_records(self._devices))
        return writer

    def close(self) -> None:
        if getattr(self, "_closed", True):
            return
        self._closed = True
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        if self._owns_writer:
            self._writer.close()
        self._variables.clear()
        self._plans.clear()
        self._restore()

    def __enter__(self):
        self._default_cm = self.as_default()
        self._default_cm.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._default_cm.__exit__(exc_type, exc, tb)
        self.close()
        return False

    @contextlib.contextmanager
    def as_default(self):
        stack = _session_stack()
        stack.append(self)
        try:
            with self._graph.as_default():
                yield self
        finally:
            stack.pop()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class InteractiveSession(Session):
    """A Session that installs itself as the default session on construction."""

    def __init__(self, target: str = "", graph: Graph | None = None,
                 config: ConfigProto | None = None, logdir: str | None = None,
                 run_name: str | None = None):
        super().__init__(target, graph, config, logdir, run_name)
        _session_stack().append(self)
        self._graph_cm = self._graph.as_default()
        self._graph_cm.__enter__()

    def close(self) -> None:
        stack = _session_stack()
        if self in stack:
            stack.remove(self)
            self._graph_cm.__exit__(None, None, None)
        super().close()


def _apply_process_settings(config: ConfigProto, devices):
    """The options torch keeps per process (its thread count, each CUDA device's memory
    cap): set while the session is open; returns what restores them at close."""
    restores = []
    threads = config.intra_op_parallelism_threads
    if threads > 0:
        previous = torch.get_num_threads()
        torch.set_num_threads(threads)
        restores.append(lambda: torch.get_num_threads() == threads and
                        torch.set_num_threads(previous))
    fraction = config.gpu_options.per_process_gpu_memory_fraction
    if fraction > 0:
        for d in devices:
            if d.torch_device.startswith("cuda"):
                index = torch.device(d.torch_device).index
                getter = getattr(torch.cuda, "get_per_process_memory_fraction", None)
                before = getter(index) if getter is not None else 1.0   # torch < 2.6: no getter
                torch.cuda.set_per_process_memory_fraction(fraction, index)
                restores.append(lambda i=index, b=before:
                                torch.cuda.set_per_process_memory_fraction(b, i))

    def restore() -> None:
        for undo in reversed(restores):
            undo()
    return restore


def plan_key(structure: FetchStructure, feeds, version: int) -> tuple:
    """The plan cache's key for these fetches and (tensor, value) feeds at `version`."""
    return (tuple(t.name for t in structure.tensors), tuple(t.name for t, _ in feeds),
            tuple(op.name for op in structure.targets), version)


def check_run_arguments(options, run_metadata) -> None:
    if options is not None and not isinstance(options, RunOptions):
        raise TypeError(f"Session.run(options=...) takes a tf.RunOptions, got "
                        f"{type(options).__name__} {options!r}")
    if run_metadata is not None and not isinstance(run_metadata, RunMetadata):
        raise TypeError(f"Session.run(run_metadata=...) takes a tf.RunMetadata, got "
                        f"{type(run_metadata).__name__} {run_metadata!r}")


def _session_stack() -> list:
    stack = getattr(_default_sessions, "stack", None)
    if stack is None:
        stack = _default_sessions.stack = []
    return stack


def get_default_session() -> Session | None:
    stack = _session_stack()
    return stack[-1] if stack else None


def default_session_for(graph: Graph, session: Session | None) -> Session:
    session = session or get_default_session()
    if session is None:
        raise ValueError("Cannot evaluate tensor using `eval()`: No default session is "
                         "registered. Use `with sess.as_default()` or pass an explicit session "
                         "to `eval(session=sess)`")
    if session.graph is not graph:
        raise ValueError("Cannot use the given session to evaluate tensor: the tensor's graph is "
                         "different from the session's graph.")
    return session
