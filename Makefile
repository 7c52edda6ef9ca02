# neardup: `make demo` runs the main job on bundled data, `make test` runs the suite.
# Both create .venv on first use; nothing depends on what was installed by hand.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench bench-index clean fresh-kernels system-deps

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(STAMP)

# numba's on-disk cache checks only the source file of each compiled function, not the files of
# the kernels it calls: after any change under src/, drop the caches so nothing stale is loaded.
fresh-kernels:
	@if [ ! -e $(VENV)/.kernels ] || [ -n "$$(find src -name '*.py' -newer $(VENV)/.kernels)" ]; then \
		find src \( -name "*.nbi" -o -name "*.nbc" \) -delete; touch $(VENV)/.kernels; fi

demo: $(STAMP) fresh-kernels
	rm -rf demo-out
	$(BIN)/neardup dedup examples/news.jsonl --id-field id -o demo-out
	@echo
	@echo "Outputs written to demo-out/: clusters, pairs, deduplicated corpus, summary.json"

test: $(STAMP) fresh-kernels
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

bench: $(STAMP) fresh-kernels
	$(BIN)/pip install --quiet -e ".[test,bench]"
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

bench-index: $(STAMP) fresh-kernels
	$(BIN)/python benchmarks/index.py --size 100000

clean:
	rm -rf $(VENV) demo-out .pytest_cache .hypothesis test-artifacts
	find src -name "*.nbi" -o -name "*.nbc" | xargs rm -f  # numba caches
