"""Debugging the numbers a step computes: NaN/Inf detection that names the first op whose
output held one (ConfigProto(check_numerics=True), engine/debug/numerics.py)."""
