"""SimAcc: a simulated accelerator over host memory, the suite's reference plugin.

Like PyTorch's OpenReg backend, it is a real plugin (a real AcceleratorManager, a topology
provider, a tensor transport and a collective backend), so every check runs for real on a
machine without accelerators.
"""
