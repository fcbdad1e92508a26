"""Transport checks (TR-*): RDT tensor transport correctness and lifecycle."""
