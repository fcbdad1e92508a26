"""`ray-conformance docs`: the pages and blocks generated from the data (the shell's: it reads every layer)."""
