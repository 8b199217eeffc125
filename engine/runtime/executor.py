"""Executes one partition from a precomputed schedule. The schedule is compiled once per plan
into straight-line Python (one line per node, locals as tensor slots, `del` right after each
value's last consumer), so a steady-state step costs little more than the torch calls
themselves. A traced twin of the function records per-op start, end and output bytes, and
checks the step's deadline after each op; a checked twin (ConfigProto(check_numerics=True))
also hands each op's outputs and inputs to a checker (engine/debug/numerics.py) that stops
the step at the first NaN or Inf. Every Recv delivers on its partition's device. The untraced
function runs each chain of quantized ops (engine/runtime/chains.py) as one fused step; the
traced and checked twins run and record every op of it."""

from __future__ import annotations

import itertools
import linecache
import threading
import time
import traceback
from dataclasses import dataclass, field, replace

import torch

from engine import errors
from engine.graph_def import NodeDef, parse_input
from engine.kernels.quantized_chain import QuantizedChain
from engine.kernels.registry import Constant, KernelContext, find_kernel
from engine.ops.registry import get_op_def, is_registered
from engine.runtime.chains import find_chains
from engine.runtime.rendezvous import Deadline

_compile_ids = itertools.count()


@dataclass
class _Instruction:
    index: int
    node: NodeDef
    code: str                 # the statement, without timing
    outputs: list[str]        # local names it defines
    uses: list[str]           # local names it reads
    traced: bool = True       # whether the traced twin records a stat for it
    frees: list[str] = field(default_factory=list)   # locals whose last reader this is
    args: list[str] = field(default_factory=list)    # a kernel's argument expressions


class CompiledPartition:
    """A partition without control flow, compiled into one straight-line function; implements
    engine.runtime.executor_api.PartitionExecutor. `peer_devices` maps each device name to its
    torch device, so a Recv whose sender keeps its tensors in the same memory (CPU and a
    virtual GPU) skips the move."""

    kind = "compiled"

    def __init__(self, device, nodes: list[NodeDef], ctx: KernelContext, label: str,
                 peer_devices: dict[str, str] | None = None):
        self.device = device
        self.nodes = _recvs_before_first_use(nodes)
        self.label = label
        self._peer_devices = peer_devices or {}
        self._namespace: dict = {"torch": torch}
        lowered = self._lower(self.nodes, ctx)
        self._instructions = _with_frees([replace(ins, frees=[]) for ins in lowered])
        # Untraced steps run each chain of quantized ops as one fused step; traced and checked
        # ones keep every op (their stats and checks are per op), as clusters do.
        self.chains: list[QuantizedChain] = []
        self._fused_instructions = _with_frees(self._fuse_chains(lowered))
        self.num_kernels = sum(1 for ins in self._instructions if ins.traced)
        self._fast, self._fast_lines = self._build(traced=False)
        self._twins: dict[bool, tuple] = {}      # checked? -> (traced step, its line nodes)
        self._lock = threading.Lock()

    # -- lowering: nodes -> statements ------------------------------------------------------

    def _lower(self, nodes: list[NodeDef], ctx: KernelContext) -> list[_Instruction]:
        names: dict[tuple[str, int], str] = {}
        ref_outputs: set[tuple[str, int]] = set()
        out: list[_Instruction] = []
        ns = self._namespace
        for i, n in enumerate(nodes):
            for k, dt in enumerate(n.output_dtypes):
                if dt.is_ref:
                    ref_outputs.add((n.name, k))
            args, uses = self._arguments(n, names, ref_outputs)
            if n.op == "_Arg":
                names[(n.name, 0)] = f"v{i}"
                out.append(_Instruction(i, n, f"v{i} = feeds[{n.attr['index']}]", [f"v{i}"], uses,
                                        traced=False))
            elif n.op == "_Retval":
                out.append(_Instruction(i, n, f"out[{n.attr['index']}] = {args[0]}", [], uses,
                                        traced=False))
            elif n.op == "_Send":
                ns[f"K{i}"] = n.meta["key"]
                out.append(_Instruction(i, n, f"rdv_send(K{i}, {args[0]})", [], uses))
            elif n.op == "_Recv":
                ns[f"K{i}"] = n.meta["key"]
                names[(n.name, 0)] = f"v{i}"
                code = f"v{i} = rdv_recv(K{i})"
                if self._peer_devices.get(n.attr["send_device"]) != self.device.torch_device:
                    ns[f"D{i}"] = torch.device(self.device.torch_device)
                    code += f".to(D{i})"
                out.append(_Instruction(i, n, code, [f"v{i}"], uses))
            else:
                out.append(self._kernel_instruction(i, n, args, uses, names, ctx))
        return out

    def _fuse_chains(self, lowered: list[_Instruction]) -> list[_Instruction]:
        """`lowered` (fresh copies) with each chain of engine/runtime/chains.py as one
        instruction where its last member was: its arguments are the members' inputs from
        outside the chain, its outputs the last member's."""
        fused = [replace(ins, frees=[]) for ins in lowered]
        for chain in find_chains(self.nodes):
            members = [fused[i] for i in chain]
            inside = {v: (pos, slot) for pos, ins in enumerate(members[:-1])
                      for slot, v in enumerate(ins.outputs)}
            args, sources, kernels = [], [], []
            for ins in members:
                kernels.append((ins.node, self._namespace[f"k{ins.index}"], len(ins.outputs)))
                row = []
                for expr in ins.args:
                    if expr in inside:
                        row.append(("m", *inside[expr]))
                    elif expr.startswith("c") and expr in self._namespace:
                        row.append(("c", self._namespace[expr]))
                    else:
                        if expr not in args:
                            args.append(expr)
                        row.append(("x", args.index(expr)))
                sources.append(row)
            program = QuantizedChain(kernels, sources,
                                     lambda e, node: node_failure(e, node, self.device))
            self.chains.append(program)
            tail = members[-1]
            self._namespace[f"q{tail.index}"] = program
            call = f"q{tail.index}({', '.join(args)})"
            target = ", ".join(tail.outputs)
            uses = sorted({v for ins in members for v in ins.uses if v not in inside})
            for ins in members[:-1]:
                fused[ins.index] = None
            fused[tail.index] = _Instruction(tail.index, tail.node, f"{target} = {call}",
                                             list(tail.outputs), uses, args=args)
        return [ins for ins in fused if ins is not None]

    def _arguments(self, n: NodeDef, names, ref_outputs):
        ref_slots = ref_input_slots(n)
        args, uses = [], []
        for slot, spelling in enumerate(n.data_inputs()):
            src = parse_input(spelling)
            local = names[src]
            if local.startswith("v"):
                uses.append(local)
            # A non-ref input fed by a variable's ref reads the variable's current value.
            args.append(f"{local}.read()" if src in ref_outputs and slot not in ref_slots
                        else local)
        return args, uses

    def _kernel_instruction(self, i: int, n: NodeDef, args, uses, names, ctx) -> _Instruction:
        made = make_kernel(n, self.device, ctx)
        if isinstance(made, Constant):
            self._namespace[f"c{i}"] = made.value
            names[(n.name, 0)] = f"c{i}"
            return _Instruction(i, n, "pass", [], [], traced=False)
        self._namespace[f"k{i}"] = made
        call = f"k{i}({', '.join(args)})"
        count = len(n.output_dtypes)
        if count == 0:
            return _Instruction(i, n, call, [], uses, args=list(args))
        outputs = [f"v{i}_{k}" for k in range(count)]
        for k, local in enumerate(outputs):
            names[(n.name, k)] = local
        target = outputs[0] if count == 1 else ", ".join(outputs)
        return _Instruction(i, n, f"{target} = {call}", outputs, uses, args=list(args))

    # -- code generation --------------------------------------------------------------------

    def _build(self, traced: bool, checked: bool = False):
        header = "def step(feeds, out, rdv_send, rdv_recv, rec, clock, chk=None):"
        lines, line_nodes = [header], {}
        for ins in self._instructions if traced else self._fused_instructions:
            if ins.code == "pass" and not ins.frees:
                continue
            stmt = ins.code if ins.code != "pass" else ""
            if traced and ins.traced:
                value = (ins.outputs[0] if len(ins.outputs) == 1 else
                         f"({', '.join(ins.outputs)},)" if ins.outputs else "None")
                stmt = f"t = clock(); {stmt}; rec({ins.index}, t, clock(), {value})"
            if checked and ins.traced and ins.outputs and ins.node.op != "_Recv":
                stmt += (f"; chk({ins.index}, ({', '.join(ins.outputs)},), "
                         f"({''.join(a + ', ' for a in ins.args)}))")
            frees = "; ".join(f"del {v}" for v in ins.frees)
            stmt = "; ".join(s for s in (stmt, frees) if s)
            lines.append(f"    {stmt}")
            line_nodes[len(lines)] = ins.node
        lines.append("    return None")
        kind = "checked" if checked else "traced" if traced else "fast"
        filename = f"<engine {self.label} {kind} #{next(_compile_ids)}>"
        source = "\n".join(lines) + "\n"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        code = compile(source, filename, "exec")
        scope = dict(self._namespace)
        exec(code, scope)  # noqa: S102 - our own generated schedule, no user strings inside
        return scope["step"], line_nodes

    # -- running ----------------------------------------------------------------------------

    def run(self, feeds, out, rendezvous, stats: list | None,
            deadline: Deadline | None = None) -> None:
        send = rendezvous.send if rendezvous is not None else None
        recv = rendezvous.recv if rendezvous is not None else None
        if stats is None and deadline is None:
            fn, lines = self._fast, self._fast_lines
            try:
                fn(feeds, out, send, recv, None, None)
            except BaseException as e:
                raise _node_error(e, fn, lines, self.device) from e
            return
        # A stats list that carries a checker (engine.debug.numerics) asks for the checked twin.
        checker = stats.checker(self) if hasattr(stats, "checker") else None
        fn, lines = self._traced_step(checked=checker is not None)
        records = [] if stats is not None else None
        try:
            fn(feeds, out, send, recv, _recorder(records, deadline), time.perf_counter_ns,
               checker)
        except BaseException as e:
            raise _node_error(e, fn, lines, self.device) from e
        finally:
            if stats is not None:
                stats.append((self, threading.get_ident(), records))

    def _traced_step(self, checked: bool):
        with self._lock:
            if checked not in self._twins:
                self._twins[checked] = self._build(traced=True, checked=checked)
        return self._twins[checked]


def make_kernel(node: NodeDef, device, ctx: KernelContext):
    """The kernel callable (or Constant) for `node` on `device`."""
    kdef = find_kernel(node, device.device_type)
    if kdef is None:
        raise errors.InternalError(node, None, f"No {device.device_type} kernel for "
                                               f"{node.summary()} at execution time")
    return kdef.factory(node, ctx)


def ref_input_slots(node: NodeDef) -> tuple[int, ...]:
    """The input slots that take a ref as a ref (every other slot reads a ref's value)."""
    return get_op_def(node.op).ref_inputs if is_registered(node.op) else ()


def _recvs_before_first_use(nodes: list[NodeDef]) -> list[NodeDef]:
    """Moves each _Recv (it has no inputs) to just before its first consumer. Recvs still
    follow their Sends in the partitioner's global order, so partitions cannot deadlock;
    a value copied between memories is taken as late as possible, after the control edges
    that order it behind an update on the sending side (TF's reads-after-updates)."""
    first_use: dict[str, int] = {}
    for pos, n in enumerate(nodes):
        for spelling in n.input:
            first_use.setdefault(parse_input(spelling)[0], pos)
    held: dict[int, list[NodeDef]] = {}
    for n in nodes:
        if n.op == "_Recv" and n.name in first_use:
            held.setdefault(first_use[n.name], []).append(n)
    if not held:
        return nodes
    moved = {id(n) for group in held.values() for n in group}
    out: list[NodeDef] = []
    for pos, n in enumerate(nodes):
        out.extend(held.get(pos, ()))
        if id(n) not in moved:
            out.append(n)
    return out


def _with_frees(instructions: list[_Instruction]) -> list[_Instruction]:
    """Marks each local for deletion right after its last reader (or at once if unread)."""
    last_use: dict[str, int] = {}
    for pos, ins in enumerate(instructions):
        for v in ins.outputs:
            last_use.setdefault(v, pos)
        for v in ins.uses:
            last_use[v] = pos
    for v, pos in last_use.items():
        instructions[pos].frees.append(v)
    return instructions


def output_bytes(value) -> int:
    if isinstance(value, torch.Tensor):
        return value.nbytes
    if isinstance(value, tuple):
        return sum(output_bytes(v) for v in value)
    return 0


def _recorder(records: list | None, deadline: Deadline | None):
    """The traced twin's per-op callback: records a stat, checks the deadline, or both."""
    if records is None:
        check = deadline.check

        def rec(index, start, end, value):
            check()
        return rec
    append = records.append
    if deadline is None:
        def rec(index, start, end, value):
            append((index, start, end, output_bytes(value)))
        return rec
    check = deadline.check

    def rec(index, start, end, value):
        append((index, start, end, output_bytes(value)))
        check()
    return rec


OOM_HINT = ("\nHint: If you want to see a list of allocated tensors when OOM happens, add "
             "report_tensor_allocations_upon_oom to RunOptions for current allocation info.\n")


def _is_out_of_memory(error: BaseException) -> bool:
    if isinstance(error, torch.OutOfMemoryError):
        return True
    text = str(error) if isinstance(error, RuntimeError) else ""
    return "out of memory" in text or "can't allocate memory" in text


def _node_error(error: BaseException, fn, line_nodes: dict[int, NodeDef],
                device=None) -> BaseException:
    """Names the node that failed, prints it, and shows the user code that created it. The
    failed step's frames are cleared, so the error does not keep its tensors alive."""
    if isinstance(error, (KeyboardInterrupt, SystemExit)) or getattr(error, "_engine_node", None):
        return error
    node = None
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is fn.__code__:
            node = line_nodes.get(tb.tb_lineno)
        tb = tb.tb_next
    traceback.clear_frames(error.__traceback__)
    if node is None:
        return error
    return node_failure(error, node, device)


def node_failure(error: BaseException, node: NodeDef, device=None) -> BaseException:
    """`error`, raised while running `node` on `device`, as the OpError that names the node,
    prints it and shows where it was created (ResourceExhaustedError with TF's hint for an
    out-of-memory failure). Errors that already name their node pass through."""
    if isinstance(error, (KeyboardInterrupt, SystemExit)) or getattr(error, "_engine_node", None):
        return error
    cls = type(error) if isinstance(error, errors.OpError) else errors.InvalidArgumentError
    text = str(error)
    hint = ""
    if _is_out_of_memory(error):
        cls = errors.ResourceExhaustedError
        where = f" on {device.name}" if device is not None else ""
        text = f"OOM when running {node.name}{where}: {text.splitlines()[0] if text else ''}"
        hint = OOM_HINT
    wrapped = cls(node, None, describe_failure(node, text, hint))
    wrapped._engine_node = node.name
    return wrapped


def describe_failure(node: NodeDef, text: str, hint: str = "") -> str:
    """`text`, then the node printed (and a hint) and the user code that created it."""
    site = node.defined_at()
    stack = "".join(f"\n  {frame}" for frame in node.meta.get("stack", ()))
    return (f"{text}\n\t [[node {node.name} (defined at {site}) = "
            f"{node.summary().split(' = ', 1)[1]}]]{hint}\n\nCaused by op '{node.name}', "
            f"defined at:{stack or ' <unknown>'}")
