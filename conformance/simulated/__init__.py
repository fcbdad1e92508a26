"""SimAcc: a simulated accelerator over host memory, the suite's reference plugin.

Like PyTorch's OpenReg backend, it is a real plugin (a real AcceleratorManager, and later a
real tensor transport), so every check runs for real on a machine without accelerators.
"""
