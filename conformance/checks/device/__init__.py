"""Device checks (DP-*): the AcceleratorManager contract and live device behaviour."""
