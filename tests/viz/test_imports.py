"""viz stays importable without dash and torch (DESIGN: pure functions over records): every
module of the package, each in a fresh interpreter."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import viz

MODULES = sorted(f"viz.{module.name}" for module in pkgutil.iter_modules(viz.__path__))


@pytest.mark.parametrize("module", ["viz", *MODULES])
def test_viz_imports_neither_dash_nor_torch(module):
    code = (f"import sys, {module}; "
            "print(sorted(m for m in ('dash', 'torch') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "[]"


def test_every_module_is_listed():
    assert {"viz.graph_elements", "viz.replay", "viz.scalars", "viz.timeline"} <= set(MODULES)
