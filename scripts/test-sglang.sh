#!/usr/bin/env bash
# `make test-sglang`: the plugin kit proven against the real, released SGLang, as released and as adopted.
#
# 1. Builds (once, cached under .cache/) the *plain* venv: the real `sglang==0.5.23` wheel, torch 2.13.0 (its CPU
#    build from the PyTorch CPU index where pip reaches it; one line says which came) and the few light
#    packages sglang's plugin and platform layers import, all pinned in scripts/sglang-requirements.txt and
#    installed with --no-deps (pip resolves nothing by itself, so it can never pull torchvision or a CUDA package). The cache key is a hash of that file, this script's venv
#    recipe version and the Python version: change any of them and the venv is rebuilt; old ones are removed.
# 2. Builds (once, cached the same way, its key also covering the patch) the *adopted* venv: its own install of
#    the same pinned set, then runtime/sglang_plugin_runtime/_launcher/patches/sglang-0.5.23.patch applied to its sglang package with a
#    plain `patch` (SGLang importing this runtime). The plain venv is never modified.
# 3. Installs this repository's runtime into each (a real `pip install`, from a snapshot of the source, every run).
# 4. Runs `pytest tests_sglang` in the plain venv (without tests_sglang/adopted), then `pytest tests_sglang/adopted`
#    in the adopted venv. Extra arguments go to pytest in each tier; with arguments the adopted tier gets no
#    default path, so pick the tier with SGLANG_TIER when you pass paths.
#
# The venv recipe is shared with scripts/test-serve.sh (scripts/cached-venvs.sh).
# Environment: PYTHON (default python3.11), SGLANG_VENV_DIR (default <repo>/.cache), SGLANG_VENV_REBUILD=1,
# SGLANG_TIER=plain|adopted|both (default both), SGLANG_TEST_WORKERS (pytest-xdist workers,
# default 2).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REQUIREMENTS="$REPO_ROOT/scripts/sglang-requirements.txt"
PYTHON="${PYTHON:-python3.11}"
CACHE_DIR="${SGLANG_VENV_DIR:-$REPO_ROOT/.cache}"
LOG_PREFIX=test-sglang
RECIPE_VERSION=2 # bump when the way the venv is built changes
# shellcheck source=scripts/cached-venvs.sh
source "$REPO_ROOT/scripts/cached-venvs.sh"

clean_caller_environment SGLANG_VENV_DIR SGLANG_VENV_REBUILD SGLANG_TIER SGLANG_TEST_WORKERS

TIER="${SGLANG_TIER:-both}"
case "$TIER" in
    plain | adopted | both) ;;
    *) echo "test-sglang: SGLANG_TIER must be plain, adopted or both (got '$TIER')" >&2; exit 2 ;;
esac
command -v "$PYTHON" >/dev/null || { echo "test-sglang: $PYTHON not found (set PYTHON=...)" >&2; exit 2; }
command -v patch >/dev/null || { echo "test-sglang: the 'patch' program is needed for the adopted venv" >&2; exit 2; }
VENV="$CACHE_DIR/sglang-venv-$(cache_key "$RECIPE_VERSION" "$REQUIREMENTS")"
ADOPTED_VENV="$CACHE_DIR/sglang-adopted-venv-$(cache_key "$RECIPE_VERSION" "$REQUIREMENTS" "$ADOPTION_PATCH")"

# What every venv of this tier must hold: the pinned sglang and CPU torch, and no torchvision or CUDA runtime.
check_pinned_set() {
    "$1/bin/python" - <<'PYTHON'
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
PYTHON
}

finish_adopted() {
    check_pinned_set "$1"
    apply_adoption_patch "$1" "$ADOPTION_PATCH"
}

start=$SECONDS
mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/sglang-venv.lock"
flock 9 # one builder at a time; a second run waits and then reuses the venvs

snapshot="$(runtime_snapshot "$REPO_ROOT")"
trap 'rm -rf "$snapshot"' EXIT

tiers=()
if [[ "$TIER" != adopted ]]; then tiers+=(plain); fi
if [[ "$TIER" != plain ]]; then tiers+=(adopted); fi
for tier in "${tiers[@]}"; do
    if [[ "$tier" == plain ]]; then
        build_pinned_venv "$VENV" sglang-venv "plain SGLang" "$REQUIREMENTS" check_pinned_set
        target="$VENV"
    else
        build_pinned_venv "$ADOPTED_VENV" sglang-adopted-venv "adopted SGLang" "$REQUIREMENTS" finish_adopted
        target="$ADOPTED_VENV"
    fi
    install_runtime "$target" "$snapshot"
    # The test tier's own tool (not SGLang's set, which generated packages share): pytest-xdist at the
    # dev venv's pin, with its one dependency.
    xdist="$(grep -E '^pytest-xdist==' "$REPO_ROOT/requirements-dev.txt")"
    pip_quiet "$target" install --quiet --no-deps "$xdist" execnet==2.1.2
    echo "test-sglang: runtime installed in the $tier venv ($((SECONDS - start)) s so far)"
done
flock -u 9

cd "$REPO_ROOT"
# Each test file runs in one of two workers (pytest-xdist; the tests are mostly Python subprocesses
# importing SGLang and torch, so two cores halve the time). SGLANG_TEST_WORKERS=0 runs them in one.
parallel=(-n "${SGLANG_TEST_WORKERS:-2}" --dist loadfile)
status=0
for tier in "${tiers[@]}"; do
    began=$SECONDS
    set +e
    if [[ "$tier" == plain ]]; then
        # No arguments: the ini file's testpaths (tests_sglang), less the adopted tier. Arguments go to pytest.
        "$VENV/bin/python" -m pytest -c tests_sglang/pytest.ini --rootdir "$REPO_ROOT" \
            "${parallel[@]}" --ignore=tests_sglang/adopted "$@"
    elif [[ $# -eq 0 ]]; then
        "$ADOPTED_VENV/bin/python" -m pytest -c tests_sglang/pytest.ini --rootdir "$REPO_ROOT" \
            "${parallel[@]}" tests_sglang/adopted
    else
        "$ADOPTED_VENV/bin/python" -m pytest -c tests_sglang/pytest.ini --rootdir "$REPO_ROOT" \
            "${parallel[@]}" "$@"
    fi
    tier_status=$?
    set -e
    echo "test-sglang: $tier tier: pytest exit $tier_status in $((SECONDS - began)) s"
    if [[ $tier_status -ne 0 ]]; then status=$tier_status; fi
done
echo "test-sglang: finished in $((SECONDS - start)) s"
exit $status
