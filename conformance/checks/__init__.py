"""The conformance checks: pytest modules, one or more tests per checklist item.

Each test carries `@pytest.mark.check("XX-000")`. Tests judge the vendor's plugin against Ray's
documented contract and the manifest, never against quirks of the simulated accelerator.
"""
