#!/usr/bin/env bash
# `make test-sglang`: the plugin kit proven against the real, released SGLang.
#
# 1. Builds (once, cached under .cache/) a venv with the real `sglang==0.5.23` wheel, the CPU build of
#    torch 2.13.0 and the few light packages sglang's plugin and platform layers import, all pinned in
#    scripts/sglang-requirements.txt and installed with --no-deps (pip resolves nothing by itself, so it can
#    never pull torchvision or a CUDA torch). The cache key is a hash of that file, this script's venv
#    recipe version and the Python version: change any of them and the venv is rebuilt; old ones are removed.
# 2. Installs this repository's runtime into it (a real `pip install`, from a snapshot of the source, every run).
# 3. Runs `pytest tests_sglang` inside it. Extra arguments go to pytest.
#
# Environment: PYTHON (default python3.11), SGLANG_VENV_DIR (default <repo>/.cache), SGLANG_VENV_REBUILD=1.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REQUIREMENTS="$REPO_ROOT/scripts/sglang-requirements.txt"
PYTHON="${PYTHON:-python3.11}"
CACHE_DIR="${SGLANG_VENV_DIR:-$REPO_ROOT/.cache}"
RECIPE_VERSION=1 # bump when the way the venv is built changes

# Nothing from the caller's environment may steer the venv or the tests.
unset VIRTUAL_ENV PYTHONPATH PYTHONHOME PIP_REQUIRE_VIRTUALENV
for name in $(env | sed -n 's/^\(SGLANG_[A-Z0-9_]*\)=.*/\1/p'); do
    case "$name" in SGLANG_VENV_DIR | SGLANG_VENV_REBUILD) ;; *) unset "$name" ;; esac
done
export PIP_DISABLE_PIP_VERSION_CHECK=1

command -v "$PYTHON" >/dev/null || { echo "test-sglang: $PYTHON not found (set PYTHON=...)" >&2; exit 2; }
py_version="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
key="$( { cat "$REQUIREMENTS"; echo "recipe=$RECIPE_VERSION python=$py_version"; } | sha256sum | cut -c1-12)"
VENV="$CACHE_DIR/sglang-venv-$key"
VPY="$VENV/bin/python"

# pip, quietly: this machine's pip configuration names optional local indexes that may be absent.
pip_quiet() {
    "$VPY" -m pip "$@" 2> >(grep -v "^WARNING: Location '.*' is ignored" >&2)
}

start=$SECONDS
mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/sglang-venv.lock"
flock 9 # one builder at a time; a second run waits and then reuses the venv

if [[ "${SGLANG_VENV_REBUILD:-0}" == 1 ]]; then rm -rf "$VENV"; fi
if [[ -f "$VENV/.complete" ]]; then
    echo "test-sglang: reusing the cached SGLang venv $VENV"
else
    echo "test-sglang: building the SGLang venv $VENV (first run: a few minutes)"
    rm -rf "$VENV" "$VENV.partial"
    "$PYTHON" -m venv "$VENV.partial"
    # A venv's scripts hard-code its path: build under the final name, mark it complete only at the end.
    mv "$VENV.partial" "$VENV"
    pip_quiet install --quiet --no-deps -r "$REQUIREMENTS"
    "$VPY" - <<'EOF'
import importlib.metadata as md, sys
torch = md.version("torch")
assert torch.startswith("2.13.0"), f"wrong torch {torch}"
assert md.version("sglang") == "0.5.23", md.version("sglang")
for name in ("torchvision", "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime"):
    try:
        md.version(name)
    except md.PackageNotFoundError:
        continue
    sys.exit(f"test-sglang: {name} must not be in the SGLang venv")
EOF
    touch "$VENV/.complete"
    for old in "$CACHE_DIR"/sglang-venv-*; do
        [[ -d "$old" && "$old" != "$VENV" ]] && rm -rf "$old"
    done
    echo "test-sglang: venv built in $((SECONDS - start)) s"
fi

# The runtime, from a snapshot of the source (pip never builds inside the shared checkout).
snapshot="$(mktemp -d)"
trap 'rm -rf "$snapshot"' EXIT
cp "$REPO_ROOT/pyproject.toml" "$snapshot/"
for name in README.md LICENSE; do [[ -f "$REPO_ROOT/$name" ]] && cp "$REPO_ROOT/$name" "$snapshot/"; done
(cd "$REPO_ROOT" && tar --exclude='__pycache__' --exclude='*.pyc' --exclude='*.egg-info' -cf - runtime) |
    tar -xf - -C "$snapshot"
pip_quiet install --quiet --no-deps --no-build-isolation --force-reinstall "$snapshot"
echo "test-sglang: runtime installed ($((SECONDS - start)) s so far)"

flock -u 9
cd "$REPO_ROOT"
set +e
# No arguments: the ini file's testpaths (tests_sglang). Arguments (paths, -k, -x ...) go to pytest as they are.
"$VPY" -m pytest -c tests_sglang/pytest.ini --rootdir "$REPO_ROOT" "$@"
status=$?
set -e
echo "test-sglang: finished in $((SECONDS - start)) s"
exit $status
