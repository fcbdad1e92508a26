"""Imported in every Ray worker via `preload_python_modules`: installs the managers named in
RAY_CONFORMANCE_ACCELERATORS before the worker runs its first task, and the torch device named in
RAY_CONFORMANCE_TORCH_DEVICE once the worker imports torch."""
from conformance.cluster.injection import install_from_env, install_torch_device_from_env

install_from_env()
install_torch_device_from_env()
