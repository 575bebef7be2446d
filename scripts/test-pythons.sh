#!/usr/bin/env bash
# `make test-pythons`: the runtime's own tests (no template end-to-end, docs or demo tests) under each other
# Python the package claims: 3.10 and 3.13 by default (3.11, the dev venv's, runs them all under `make test`).
#
# Each interpreter gets a venv under .cache/ with the pinned test tools of requirements-dev.txt (pytest, xdist,
# hypothesis, jsonschema) and the runtime installed from this checkout. torch is not installed there (this machine's CPU build
# is for Python 3.11 only; an unpinned torch would pull a CUDA build): tests that need it skip themselves.
# Environment: PYTHONS (default "3.10 3.13"), PYTHON_VENV_DIR (default <repo>/.cache).
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_DIR="${PYTHON_VENV_DIR:-$REPO_ROOT/.cache}"
unset VIRTUAL_ENV PYTHONPATH PYTHONHOME
for name in $(env | sed -n 's/^\(SGLANG_[A-Z0-9_]*\)=.*/\1/p'); do unset "$name"; done
export PIP_DISABLE_PIP_VERSION_CHECK=1

find_python() {  # pyenv's install folders first, then PATH
    local found
    found="$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$1".*/bin/python"$1" 2>/dev/null | sort -V | tail -n 1)"
    [[ -n "$found" ]] || found="$(command -v "python$1" || true)"
    echo "$found"
}

tools="$(grep -E '^(pytest|pytest-xdist|hypothesis|jsonschema)==' "$REPO_ROOT/requirements-dev.txt")"
status=0
for version in ${PYTHONS:-3.10 3.13}; do
    python="$(find_python "$version")"
    if [[ -z "$python" ]]; then
        echo "test-pythons: python$version not found (pyenv or PATH); install it to run this tier" >&2
        exit 2
    fi
    venv="$CACHE_DIR/py$version-venv-$(echo "$tools" | sha256sum | cut -c1-8)"
    if [[ ! -f "$venv/.complete" ]]; then
        rm -rf "$venv"
        "$python" -m venv "$venv"
        # shellcheck disable=SC2086
        "$venv/bin/python" -m pip install --quiet $tools 2> >(grep -v "^WARNING: Location '.*' is ignored" >&2)
        touch "$venv/.complete"
    fi
    "$venv/bin/python" -m pip install --quiet --no-deps --force-reinstall "$REPO_ROOT" \
        2> >(grep -v "^WARNING: Location '.*' is ignored" >&2)
    echo "test-pythons: Python $version ($("$venv/bin/python" -c 'import sys; print(sys.version.split()[0])'))"
    # Not the slow end-to-end tests (they build packages or the site, with tools only the dev venv has).
    (cd "$REPO_ROOT" && "$venv/bin/python" -m pytest -q -n 2 -p no:cacheprovider -m "not slow" tests \
        --ignore=tests/templates --ignore=tests/test_docs.py --ignore=tests/test_docs_browser.py \
        --ignore=tests/test_docs_diagrams.py --ignore=tests/test_docs_machinery.py --ignore=tests/test_docs_offline.py \
        --ignore=tests/test_demo_script.py --ignore=tests/test_benchmarks_smoke.py) || status=1
done
exit $status
