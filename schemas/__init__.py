"""The JSON Schemas every data file and report is validated against: the data package
`conformance.catalog.schemas` (mapped from this folder by setup.py), read with importlib.resources."""
