# The README's two commands are `make demo` and `make test`; both build the dev venv first.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint venv clean bench bench-quick bench-serve test-sglang test-releases test-serve serve-venv \
	test-pythons test-hooks-model docs docs-serve docs-check

# torch first: its CPU build from the PyTorch CPU index where pip can reach it (one retry, 20 s timeouts), else
# from the configured index (PyPI's is a CUDA build, larger; it runs on the CPU too); the line after says which.
TORCH_PIN := $(shell grep '^torch==' requirements-dev.txt)
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
TORCH_SAYS := import importlib.metadata as m; v = m.version('torch'); print('make venv: torch', v, \
	'(a CPU build)' if v.endswith('+cpu') else '(not a CPU build: $(TORCH_CPU_INDEX) was not reached)')

$(STAMP): requirements-dev.txt requirements-docs.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --retries 1 --timeout 20 "$(TORCH_PIN)" --extra-index-url $(TORCH_CPU_INDEX)
	@$(PY) -c "$(TORCH_SAYS)"
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet -r requirements-docs.txt
	$(PY) -m pip install --quiet -e .
	touch $(STAMP)

venv: $(STAMP)

# `make demo KEEP=1` keeps the generated packages and their wheels, and prints where they are. The demo ends in
# SGLang's real server with the generated general plugin where the serving venv is cached (make serve-venv), or
# with SERVE=1 (which builds it first).
demo:
	@if [ ! -f $(STAMP) ]; then \
		echo "== 0. Build .venv first: the pinned packages of requirements-dev.txt (about a minute on a fresh clone)"; \
		start=$$(date +%s); $(MAKE) --no-print-directory venv && echo "   -- step 0 took $$(( $$(date +%s) - start )) s"; \
	fi
	$(PY) scripts/demo.py $(if $(filter 1 yes true,$(KEEP)),--keep) $(if $(filter 1 yes true,$(SERVE)),--serve)

test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup tests

# The hook registry against its model (tests/test_hooks_model.py) in 20,000 random sequences of register, apply,
# discard and reset; `make test` runs 40 of them, the same ones each time.
test-hooks-model: $(STAMP)
	HOOKS_MODEL_EXAMPLES=20000 $(PY) -m pytest -q -p no:cacheprovider tests/test_hooks_model.py

# ruff (lint and format) over the Python sources, mypy --strict over the runtime (configured in pyproject.toml).
LINT_PATHS := runtime tests tests_sglang tests_serve benchmarks scripts docs/_hooks integrations
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

# The release-generic tests of tests_sglang against every SGLang release with a plugin system (0.5.11 to
# 0.5.23), each in a cached venv that holds only its wheel and shares one base venv (one CPU torch);
# SGLANG_RELEASES="0.5.11 0.5.17" picks releases (scripts/test-releases.sh).
test-releases:
	bash scripts/test-releases.sh

# Plugins inside SGLang's real server on the CPU, in the three worlds (released, launcher, adopted), in a cached
# serving venv (scripts/test-serve.sh; SGLANG_SERVE_DIR moves the cache). It needs no dev venv.
test-serve:
	bash scripts/test-serve.sh

# Only the serving venv of test-serve (SGLang's real server on the CPU), as the testing kit builds it for plugin
# authors (sglang_plugin_runtime.testing.serving), under .cache/ or SGLANG_SERVE_DIR. It needs no dev venv.
serve-venv:
	PYTHONPATH=runtime $(PYTHON) -m sglang_plugin_runtime.testing.serving $(or $(SGLANG_SERVE_DIR),.cache)

# Time to ready and scheduler start-up of the real server in the three worlds, side by side (not a test).
bench-serve:
	bash scripts/test-serve.sh bench --update-docs

# The runtime's own tests under the other Pythons the package claims (3.10 and 3.13), each in a cached venv.
test-pythons:
	bash scripts/test-pythons.sh

# The site, built strictly into site/. It carries a pinned mermaid.js (docs/_hooks/mermaid_js.py: fetched once with
# npm into .cache/mermaid/, checked by SHA-256), so its diagrams draw with no network.
docs: $(STAMP)
	$(PY) docs/_hooks/mermaid_js.py >/dev/null
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

# The built site at http://127.0.0.1:$(DOCS_PORT)/ (Ctrl-C stops it); nothing is fetched from the network.
DOCS_PORT ?= 8000
docs-serve: docs
	@echo "docs-serve: http://127.0.0.1:$(DOCS_PORT)/ (Ctrl-C to stop)"
	$(PY) -m http.server --bind 127.0.0.1 --directory site $(DOCS_PORT)

# The docs as a reader sees them: the strict build, each diagram's source on its page and checked against the
# code, the pinned mermaid.js carried by the site, and, where Chromium is installed, every diagram drawn with no
# network and no code block cut off at 1300 px, with screenshots in build/docs-check/.
docs-check: $(STAMP)
	$(PY) docs/_hooks/mermaid_js.py >/dev/null
	rm -rf build/docs-check
	SGLANG_DOCS_SCREENSHOTS=build/docs-check $(PY) -m pytest -p no:cacheprovider -rs \
	  tests/test_docs.py::test_site_builds_strictly tests/test_docs.py::test_each_diagrams_source_reaches_its_built_page \
	  tests/test_docs_offline.py tests/test_docs_diagrams.py tests/test_docs_browser.py
	@echo "docs-check: screenshots in build/docs-check/ (look at them)"

clean:
	rm -rf $(VENV) build dist site .cache
