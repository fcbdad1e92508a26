"""ray-accelerator-conformance: conformance suite and maturity-tier certifier for Ray accelerator plugins."""

__version__ = "0.1.0"
SUITE_NAME = "ray-accelerator-conformance"
