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

demo: $(STAMP)
	$(PY) scripts/demo.py

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
