# neardup: `make demo` runs the main job on bundled data, `make test` runs the suite.
# Both create .venv on first use; nothing depends on what was installed by hand.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

KERNELS := $(wildcard src/neardup/_kernels/*.pyx src/neardup/_kernels/*.pxd src/neardup/_kernels/vendor/*.h) build_tools/unifold.py

.PHONY: demo test lint bench bench-index clean system-deps

# The editable install builds the compiled kernels (Cython -> C -> an extension module beside
# their sources); a change to a kernel source rebuilds them.
$(STAMP): pyproject.toml setup.py $(KERNELS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	rm -rf demo-out
	$(BIN)/neardup dedup examples/news.jsonl --id-field id -o demo-out
	@echo
	@echo "Outputs written to demo-out/: clusters, pairs, deduplicated corpus, summary.json"

test: lint
	$(BIN)/python -m pytest -q

# the style (ruff), and the types of src/neardup (mypy, configured in pyproject.toml)
lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks build_tools examples setup.py
	$(BIN)/mypy

# the peers (datasketch, rensa) and the benchmarks' own needs, once (reinstalling would rebuild
# the kernels at every run)
$(VENV)/.bench: $(STAMP)
	$(BIN)/pip install --quiet -e ".[test,bench]"
	touch $(VENV)/.bench

bench: $(VENV)/.bench
	$(BIN)/python benchmarks/core.py --sizes 10000 --results benchmarks/data/bench-results
	$(BIN)/python benchmarks/compare.py --sizes 10000 --repeat 1 --whole-process --results benchmarks/data/bench-results

# Debian packages the Redis and browser tests use (run as root, or with passwordless sudo).
system-deps:
	@need=""; command -v redis-server >/dev/null || need="$$need redis-server"; \
	command -v chromium >/dev/null || need="$$need chromium"; \
	if [ -n "$$need" ]; then \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo -n"; \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$need; \
	fi

bench-index: $(STAMP)
	$(BIN)/python benchmarks/index.py --size 100000

clean:
	rm -rf $(VENV) demo-out .pytest_cache .hypothesis test-artifacts build
	rm -f src/neardup/_kernels/*.c src/neardup/_kernels/*.so  # built kernels
