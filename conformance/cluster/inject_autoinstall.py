"""Imported in every Ray worker via `preload_python_modules`: installs the managers named in
RAY_CONFORMANCE_ACCELERATORS before the worker runs its first task."""
from conformance.cluster.injection import install_from_env

install_from_env()
