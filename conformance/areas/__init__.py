"""The check areas: each a declared unit (its helpers live in conformance/areas/<name>/)."""
