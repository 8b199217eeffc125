"""`python -m workbench` is the `workbench` console script."""

from workbench.cli import main

raise SystemExit(main())
