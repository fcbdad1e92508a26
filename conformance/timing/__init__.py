"""Bounds on waiting, below everything that waits: hard timeouts, bounded Ray waits, the scenario clock.

Pure of the suite's data and of Ray's clusters, so the catalog, the cluster manager, the run and the
areas all bound their waits the same way.
"""
