"""Op definitions and the functions that add them to a graph. engine/__init__.py imports
every module here (op registration order: op modules first, then `grads`)."""
