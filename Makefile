# The README's two commands are `make demo` and `make test`; both build the dev venv first.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test venv clean bench bench-quick test-sglang docs

$(STAMP): requirements-dev.txt requirements-docs.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet -r requirements-docs.txt
	$(PY) -m pip install --quiet -e .
	touch $(STAMP)

venv: $(STAMP)

# `make demo KEEP=1` keeps the generated packages and their wheels, and prints where they are.
demo:
	@if [ ! -f $(STAMP) ]; then \
		echo "== 0. Build .venv first: the pinned packages of requirements-dev.txt (about a minute on a fresh clone)"; \
		start=$$(date +%s); $(MAKE) --no-print-directory venv && echo "   -- step 0 took $$(( $$(date +%s) - start )) s"; \
	fi
	$(PY) scripts/demo.py $(if $(filter 1 yes true,$(KEEP)),--keep)

test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup tests

bench: $(STAMP)
	$(PY) benchmarks/run.py

bench-quick: $(STAMP)
	$(PY) benchmarks/run.py --quick

test-sglang: $(STAMP)
	bash scripts/test-sglang.sh

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) build dist site .cache
