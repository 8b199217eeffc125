"""Quantization and compression of graphs: quantize_graph, calibration, comparison, pruning."""
