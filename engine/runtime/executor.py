"""Executes one partition from a precomputed schedule. The schedule is compiled once per plan
into straight-line Python (one line per node, locals as tensor slots, `del` right after each
value's last consumer), so a steady-state step costs little more than the torch calls
themselves. A traced twin of the function records per-op start, end and output bytes; a
checked twin (ConfigProto(check_numerics=True)) also hands each op's outputs and inputs to a
checker (engine/debug/numerics.py) that stops the step at the first NaN or Inf."""

from __future__ import annotations

import itertools
import linecache
import threading
import time
from dataclasses import dataclass, field

import torch

from engine import errors
from engine.graph_def import NodeDef, parse_input
from engine.kernels.registry import Constant, KernelContext, find_kernel
from engine.ops.registry import get_op_def, is_registered

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
    def __init__(self, device, nodes: list[NodeDef], ctx: KernelContext, label: str):
        self.device = device
        self.nodes = nodes
        self.label = label
        self._namespace: dict = {"torch": torch}
        self._instructions = self._lower(nodes, ctx)
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
                if self.device.torch_device != "cpu":
                    ns[f"D{i}"] = torch.device(self.device.torch_device)
                    code += f".to(D{i})"
                out.append(_Instruction(i, n, code, [f"v{i}"], uses))
            else:
                out.append(self._kernel_instruction(i, n, args, uses, names, ctx))
        return _with_frees(out)

    def _arguments(self, n: NodeDef, names, ref_outputs):
        ref_slots = get_op_def(n.op).ref_inputs if is_registered(n.op) else ()
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
        kdef = find_kernel(n, self.device.device_type)
        if kdef is None:
            raise errors.InternalError(n, None, f"No {self.device.device_type} kernel for "
                                                f"{n.summary()} at execution time")
        made = kdef.factory(n, ctx)
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
        for ins in self._instructions:
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

    def run(self, feeds, out, rendezvous, stats: list | None) -> None:
        send = rendezvous.send if rendezvous is not None else None
        recv = rendezvous.recv if rendezvous is not None else None
        if stats is None:
            fn, lines = self._fast, self._fast_lines
            try:
                fn(feeds, out, send, recv, None, None)
            except BaseException as e:
                raise _node_error(e, fn, lines) from e
            return
        # A stats list that carries a checker (engine.debug.numerics) asks for the checked twin.
        checker = stats.checker(self) if hasattr(stats, "checker") else None
        fn, lines = self._traced_step(checked=checker is not None)
        records = []
        try:
            fn(feeds, out, send, recv, _recorder(records), time.perf_counter_ns, checker)
        except BaseException as e:
            raise _node_error(e, fn, lines) from e
        finally:
            stats.append((self, threading.get_ident(), records))

    def _traced_step(self, checked: bool):
        with self._lock:
            if checked not in self._twins:
                self._twins[checked] = self._build(traced=True, checked=checked)
        return self._twins[checked]


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


def _nbytes(value) -> int:
    if isinstance(value, torch.Tensor):
        return value.nbytes
    if isinstance(value, tuple):
        return sum(_nbytes(v) for v in value)
    return 0


def _recorder(records: list):
    append = records.append

    def rec(index, start, end, value):
        append((index, start, end, _nbytes(value)))
    return rec


def _node_error(error: BaseException, fn, line_nodes: dict[int, NodeDef]) -> BaseException:
    """Names the node that failed, prints it, and shows the user code that created it."""
    if isinstance(error, (KeyboardInterrupt, SystemExit)) or getattr(error, "_engine_node", None):
        return error
    node = None
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is fn.__code__:
            node = line_nodes.get(tb.tb_lineno)
        tb = tb.tb_next
    if node is None:
        return error
    cls = type(error) if isinstance(error, errors.OpError) else errors.InvalidArgumentError
    wrapped = cls(node, None, describe_failure(node, str(error)))
    wrapped._engine_node = node.name
    return wrapped


def describe_failure(node: NodeDef, text: str) -> str:
    """`text`, then the node printed and the user code that created it."""
    site = node.defined_at()
    stack = "".join(f"\n  {frame}" for frame in node.meta.get("stack", ()))
    return (f"{text}\n\t [[node {node.name} (defined at {site}) = "
            f"{node.summary().split(' = ', 1)[1]}]]\n\nCaused by op '{node.name}', "
            f"defined at:{stack or ' <unknown>'}")
