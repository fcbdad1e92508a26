# Quick start: `make demo` (certify the simulated accelerator) and `make test` (the project's tests).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
REPORTS := reports
# Extra pytest arguments for `make test` (e.g. PYTEST_ARGS="-x -k tiers").
PYTEST_ARGS ?=
# Python writes bytecode caches here even where the environment says not to: every suite run
# and every Ray worker imports the package (and pytest rewrites the checks' modules) again, and
# without the caches each of those processes compiles them from source (about 1 s of CPU per run).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install lint demo test test-load test-fast test-area test-check docs release release-check example releases clean-reports browser bench hosts-demo ray-window

# The package declares ranges; constraints.txt holds the project's exact pins (CI's torch CPU build).
# --no-compile: pip would byte-compile every file of torch, Ray and the rest (about half a minute
# of CPU on a fresh machine); Python compiles what is imported on first use and keeps the caches.
$(STAMP): pyproject.toml setup.py constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile -c constraints.txt -e '.[dev,jobs]'
	touch $(STAMP)

install: $(STAMP)

## Certify the bundled simulated accelerator: 1 node without a transport, then the full
## 2-node manifest with the reference transport; prints the tier tables and the report paths.
demo: $(STAMP)
	@start=$$(date +%s); \
	for m in conformance/simulated/manifest.yaml conformance/simulated/manifest-2node.yaml; do \
	  if [ -f $$m ]; then $(BIN)/ray-conformance run --manifest $$m || exit $$?; fi; \
	done; \
	echo "make demo: certification took $$(( $$(date +%s) - start )) s"; \
	for f in $(REPORTS)/*/report.md; do echo "  report: $$f"; done

## Certify the simulated accelerator on three hosts made of network namespaces (needs root and
## iproute2): `ray start` per host, token auth, `ray-conformance run --ray-address` (docs/hosts.md).
hosts-demo: $(STAMP)
	$(BIN)/python -m conformance.cluster.hosts demo --hosts 3 --out $(REPORTS)/hosts-demo


## Headless Chromium (Debian's package) for the report pages' browser tests; installed when missing.
browser:
	@command -v chromium >/dev/null 2>&1 || { SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }

## lint runs beside the tests, not before them: mypy is about 30 s of one core on a fresh clone, and
## the tests keep both cores busy from their start. A lint failure is printed when it happens and
## fails `make test` at its end, as the tests' own failures do.
test: $(STAMP) browser
	@log=$$(mktemp); \
	  ( $(MAKE) --no-print-directory lint >$$log 2>&1 || { cat $$log; echo "make test: lint FAILED (the tests go on)"; exit 1; } ) & lint=$$!; \
	  $(BIN)/python -m pytest -p no:cacheprovider --durations=15 -m "not hog" tests $(PYTEST_ARGS); rc=$$?; \
	  wait $$lint; lrc=$$?; rm -f $$log; \
	  if [ $$lrc -ne 0 ]; then echo "make test: lint failed (above)"; exit 1; fi; exit $$rc

## A correct plugin under busy loops on every core (tests/ray/test_real_cpu_load.py): alone, never
## inside make test, whose teeth rows beside it would be starved by the loops it starts.
test-load: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider -m hog tests/ray $(PYTEST_ARGS)

## ruff (errors, bugbear, import order, blind excepts, no noqa that suppresses nothing) and mypy: pyproject.toml.
lint: $(STAMP)
	$(BIN)/ruff check conformance tests benchmarks
	$(BIN)/mypy

## The Ray window's older end: the built wheel installed beside Ray 2.59 (constraints-ray-oldest.txt)
## and torch in a fresh venv, certified there; and the window's one fact in pyproject/constraints/releases.
ray-window: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider tests/certify/test_wheel_install.py tests/unit/test_ray_window.py $(PYTEST_ARGS)

## The fast lane: the pure tests (tests/unit: no Ray, no subprocess), under 2 minutes.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider -q tests/unit $(PYTEST_ARGS)

## One area: its pure tests and its teeth rows (ids <area>/...), e.g. `make test-area AREA=recovery`.
## The good rows (good/...) guard every area: run them with `make test-area AREA=good`.
AREA ?=
test-area: $(STAMP)
	@test -n "$(AREA)" || { echo "make test-area: name the area, e.g. AREA=transport"; exit 2; }
	$(BIN)/python -m pytest -p no:cacheprovider -q tests/unit tests/cli -k "$(AREA)" $(PYTEST_ARGS)
	$(BIN)/python -m pytest -p no:cacheprovider -q tests/certify/test_teeth.py -k "$(AREA)/" $(PYTEST_ARGS)

## One check: its unit tests (tests/unit, those that name it) and its teeth rows: the rows that catch it
## and the good rows that guard it against a false alarm (`guards` in tests/teeth.yaml), e.g. ID=FR-001.
ID ?=
test-check: $(STAMP)
	@test -n "$(ID)" || { echo "make test-check: name the check, e.g. ID=FR-001"; exit 2; }
	@set -f; sel=$$($(BIN)/python tests/support/teeth.py --for-check "$(ID)") || exit 2; \
	  echo "make test-check: $$(echo $$sel | wc -w) tests and rows for $(ID)"; \
	  $(BIN)/python -m pytest -p no:cacheprovider -q $$sel $(PYTEST_ARGS)

## The generators only (seconds): every docs file and generated block from tiers/*.yaml and the
## code's declarations (`ray-conformance docs`), and the built-in manager table. No release, no run.
docs: $(STAMP)
	$(BIN)/ray-conformance docs
	$(BIN)/python -m conformance.areas.device.builtin_managers --write docs/builtin-managers.md

## The release step, once per release (the integrator's, at merge): append a release entry for the
## data files as they are now and archive them (tiers/releases.yaml, tiers/releases/<version>/).
release: $(STAMP)
	$(BIN)/python -m conformance.catalog.releases --write

## The landing gate (.ci/run, seconds): a release holds the data files as they are, and every
## published release's files are intact. A data edit before `make release` fails here, in one line.
release-check: $(STAMP)
	$(BIN)/python -m conformance.catalog.releases --check

## Regenerate the committed, signed example report (reports/example/): a 2-node certification
## (~3 min); after `make release`, since the report records the release it ran under.
example: $(STAMP)
	$(BIN)/python -m conformance.example reports/example

## Where certification time goes: per-area wall time, cluster starts, ratios to a bare ray.init()
## measured in the same run, transport spread (benchmarks/certify.py; figures, not assertions);
## then SIMXFER beside Ray's NIXL and the object store in one run (benchmarks/transports.py).
bench: $(STAMP)
	$(BIN)/python benchmarks/device.py
	$(BIN)/python benchmarks/certify.py
	$(BIN)/python benchmarks/transports.py
