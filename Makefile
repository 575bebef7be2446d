# The README's two commands are `make demo` and `make test`; both build the dev venv first.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint venv clean bench bench-quick test-sglang test-pythons docs docs-check

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

# ruff (lint and format) over the Python sources, mypy --strict over the runtime (configured in pyproject.toml).
LINT_PATHS := runtime tests tests_sglang benchmarks scripts docs/_hooks integrations
lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) benchmarks/run.py

bench-quick: $(STAMP)
	$(PY) benchmarks/run.py --quick

test-sglang: $(STAMP)
	bash scripts/test-sglang.sh

# The runtime's own tests under the other Pythons the package claims (3.10 and 3.13), each in a cached venv.
test-pythons:
	bash scripts/test-pythons.sh

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

# The docs as a reader sees them: the strict build, each diagram's source on its page and checked against the
# code, and, where Chromium is installed, every diagram drawn and no code block cut off at 1300 px, with
# screenshots in build/docs-check/. The site loads mermaid.js from a CDN; the browser check uses a pinned local
# copy, fetched here with npm when it can be (without it, only the drawing checks are skipped).
MERMAID_VERSION := 11.17.2
MERMAID_SHA256 := 581ed7d74bd9048d0e3a91363927d72ef22942d7722546b27f7cc29e35390eb8
MERMAID_JS := .cache/mermaid/package/dist/mermaid.min.js

docs-check: $(STAMP)
	@test -f $(MERMAID_JS) || ! command -v npm >/dev/null || ( mkdir -p .cache/mermaid && cd .cache/mermaid \
	  && npm pack --silent mermaid@$(MERMAID_VERSION) >/dev/null && tar -xzf mermaid-$(MERMAID_VERSION).tgz package/dist/mermaid.min.js \
	  && rm mermaid-$(MERMAID_VERSION).tgz ) || echo "docs-check: could not fetch mermaid $(MERMAID_VERSION); the drawing checks will be skipped"
	@test ! -f $(MERMAID_JS) || echo "$(MERMAID_SHA256)  $(MERMAID_JS)" | sha256sum --check --quiet \
	  || { echo "docs-check: $(MERMAID_JS) is not mermaid $(MERMAID_VERSION) (SHA-256 differs); removed it, run again"; rm -f $(MERMAID_JS); exit 1; }
	rm -rf build/docs-check
	SGLANG_DOCS_SCREENSHOTS=build/docs-check $(PY) -m pytest -p no:cacheprovider -rs \
	  tests/test_docs.py::test_site_builds_strictly tests/test_docs.py::test_each_diagrams_source_reaches_its_built_page \
	  tests/test_docs_diagrams.py tests/test_docs_browser.py
	@echo "docs-check: screenshots in build/docs-check/ (look at them)"

clean:
	rm -rf $(VENV) build dist site .cache
