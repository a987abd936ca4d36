"""Graph IR, the op table, devices, lowering to executable plans, and printing."""
