"""The suite's tier-deciding data (checklist, tiers, waivers, labels, releases): the data package
`conformance.catalog.tiers` (mapped from this folder by setup.py), read with importlib.resources."""
