"""The workbench: a Dash app over recorded runs (create_app), its CLI, and the logging hooks
for training code. Importing it does not import dash; `workbench.app` does."""
