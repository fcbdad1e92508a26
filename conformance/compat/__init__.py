"""Will this plugin still plug into that Ray? Answered from source, before the Ray ships.

`ray-conformance ray-compat` reads a Ray release's Python source (a wheel, an unpacked
site-packages, or a version pip downloads) with `ast` and never imports it, and holds against it
every interface the vendor's plugin (the modules its manifest names) and the suite use: the Ray
symbols they import, the Ray base classes the plugin subclasses (its overrides against the target's
abstract and optional methods), the calls they make into Ray, and the options the suite passes.

  source      where a Ray's source comes from (a folder, a wheel, `pip download`), read-only
  index       modules, symbols, classes and signatures of one source tree, from the syntax tree
  uses        what one module of the plugin or the suite uses of Ray (imports, calls, subclasses)
  interfaces  the suite's own contract with Ray that its code reaches only indirectly
  check       the comparison and its verdict: compatible, incompatible (each break named)

A Ray this check calls compatible is not certified: tiers/releases.yaml's Ray window grows only
by a certification on that Ray (docs/ci.md, "Ray's next release").
"""
