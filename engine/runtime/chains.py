"""Finds the linear chains of quantized ops in one partition's schedule (QuantizeV2 -> fused
QuantizedMatMul...AndRequantize -> ... -> Dequantize) that the compiled executor runs as one
fused step (engine/kernels/quantized_chain.py) in untraced steps."""

from __future__ import annotations

from engine.graph_def import NodeDef, parse_input

# Pure integer kernels of engine/kernels/quantized.py whose data input 0 is the quantized
# value the previous op made (min and max ride beside it).
CHAIN_OPS = frozenset((
    "QuantizeV2", "Dequantize", "QuantizedMatMul", "QuantizedMatMulWithBias",
    "QuantizedMatMulWithBiasAndRelu", "QuantizedMatMulWithBiasAndRequantize",
    "QuantizedMatMulWithBiasAndReluAndRequantize", "Requantize", "QuantizedRelu",
    "QuantizedRelu6", "QuantizedBiasAdd", "QuantizedReshape"))


def find_chains(nodes: list[NodeDef]) -> list[list[int]]:
    """Maximal runs (as schedule indices, in order, two nodes at least) of CHAIN_OPS nodes in
    which each node's data input 0 is the previous node's output 0, and every output of every
    node but the last goes to the next node only: no fetch (_Retval), _Send or other consumer
    takes an intermediate, none is fed (a fed tensor comes from an _Arg instead), no member
    but the first waits on a control edge and none but the last is a control edge's source."""
    consumers: dict[str, set[str]] = {}
    control_sources: set[str] = set()
    for n in nodes:
        for spelling in n.input:
            if spelling.startswith("^"):
                control_sources.add(spelling[1:])
            else:
                consumers.setdefault(parse_input(spelling)[0], set()).add(n.name)
    by_name = {n.name: i for i, n in enumerate(nodes)}

    def successor(i: int) -> int | None:
        n = nodes[i]
        if n.op not in CHAIN_OPS or n.name in control_sources:
            return None
        users = consumers.get(n.name, set())
        if len(users) != 1:
            return None
        j = by_name[next(iter(users))]
        m = nodes[j]
        data = m.data_inputs()
        if m.op not in CHAIN_OPS or len(data) != len(m.input) or not data or \
                parse_input(data[0]) != (n.name, 0) or j <= i:
            return None
        return j

    nexts = {i: successor(i) for i in range(len(nodes))}
    has_prev = {j for j in nexts.values() if j is not None}
    chains = []
    for i in range(len(nodes)):
        if i in has_prev or nexts[i] is None:
            continue
        chain = [i]
        while nexts[chain[-1]] is not None:
            chain.append(nexts[chain[-1]])
        chains.append(chain)
    return chains
