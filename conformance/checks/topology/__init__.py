"""Topology checks (TL-*): description, labels and label-based placement."""
