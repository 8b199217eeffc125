"""viz stays importable without dash and torch (DESIGN: pure functions over records)."""

from __future__ import annotations

import subprocess
import sys


def test_viz_imports_neither_dash_nor_torch():
    code = ("import sys, viz, viz.graph_elements, viz.scalars; "
            "print(sorted(m for m in ('dash', 'torch') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "[]"
