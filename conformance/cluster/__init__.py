"""Live Ray clusters for the checks: shapes, starting and sharing clusters, injecting the vendor's manager, namespace hosts."""
