"""The workbench pages, one module each (layout and callbacks together), in nav order."""
