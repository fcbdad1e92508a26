"""`ray-conformance`: the command line, one module per group of subcommands."""
