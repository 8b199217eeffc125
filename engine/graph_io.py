"""engine.save_graph / engine.load_graph: a graph to a versioned JSON file (large constants in
a side .npz saved without pickle) and back, exactly."""

from __future__ import annotations

__all__: list[str] = []
