"""Plain functions over graphs: prune, place, partition, gradients. They never import torch
or the runtime; the Session hands their results to the recorder."""
