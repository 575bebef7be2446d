#!/usr/bin/env bash
# `make test-serve`: plugins inside SGLang's real server (`python -m sglang.launch_server`) on the
# CPU, in the three worlds the kit supports: released SGLang, the launcher (`sglang-plugins run`)
# and the adopted SGLang.
#
# 1. Builds (once, cached) the *serving* venv exactly as the testing kit builds it for plugin authors
#    (`python -m sglang_plugin_runtime.testing.serving`, run from this checkout's runtime/; make
#    serve-venv runs only this step): released `sglang==0.5.23`, torch 2.13.0 (its CPU build from the
#    PyTorch CPU index where pip reaches it) and what the server imports on the CPU path, all pinned
#    in runtime/sglang_plugin_runtime/testing/serve-requirements.txt (data the runtime ships) and
#    installed with --no-deps; then torchvision's two fake-op registrations guarded (PyPI's
#    torchvision is a CUDA build whose compiled ops do not load beside a CPU torch;
#    docs/real-server.md says why this and not torch 2.14.1). The kit names it by a hash of the pins,
#    its recipe and the Python version.
# 2. Makes (once, cached) the *adopted* venv from it: a hard-linked copy (no second download, little
#    disk) whose sglang package is a real copy with the adoption patch
#    (runtime/sglang_plugin_runtime/_launcher/patches/sglang-0.5.23.patch) applied. Its key covers
#    the patch.
# 3. Makes (once, cached) the *oldest* venv the same way: a hard-linked copy of the serving venv
#    with the pins of scripts/serve-oldest-release.txt (the oldest SGLang release whose server starts
#    on this CPU machine, and what it needs instead of 0.5.23's) installed with --no-deps (pip and
#    patch write new files, so the serving venv is never changed through a link). Its key covers
#    that file.
# 4. Installs this checkout's runtime into the three (a real `pip install`, every run).
# 5. Runs `pytest tests_serve` in the serving venv. The tiny model is built offline by the testing
#    kit's sglang_server module on first use and cached beside the venvs.
#
# `bash scripts/test-serve.sh bench [--rounds N] [--update-docs]` (make bench-serve) runs
# benchmarks/real_server.py in the same venvs instead of the tests.
#
# Environment: PYTHON (default python3.11), SGLANG_SERVE_DIR (cache folder, default <repo>/.cache;
# locally /work/cache/serve lets worktrees share it), SGLANG_VENV_REBUILD=1. Extra arguments go to
# pytest.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3.11}"
CACHE_DIR="${SGLANG_SERVE_DIR:-$REPO_ROOT/.cache}"
LOG_PREFIX=test-serve
RECIPE_VERSION=2 # bump when the way the venvs are built changes
# shellcheck source=scripts/cached-venvs.sh
source "$REPO_ROOT/scripts/cached-venvs.sh"

clean_caller_environment SGLANG_SERVE_DIR SGLANG_VENV_REBUILD
if ! command -v "$PYTHON" >/dev/null; then
    echo "test-serve: $PYTHON not found (set PYTHON=...)" >&2
    exit 2
fi
command -v patch >/dev/null || { echo "test-serve: the 'patch' program is needed" >&2; exit 2; }

# The adopted venv: hard links to the serving venv's files, but sglang/ copied for real and patched
# (patch and pip write new files, so the serving venv is never changed through a link).
build_adopted_venv() {
    local began=$SECONDS site
    if [[ "${SGLANG_VENV_REBUILD:-0}" == 1 ]]; then rm -rf "$ADOPTED_VENV"; fi
    if [[ -f "$ADOPTED_VENV/.complete" ]]; then
        echo "test-serve: reusing the cached adopted venv $ADOPTED_VENV"
        return
    fi
    rm -rf "$ADOPTED_VENV"
    cp -al "$VENV" "$ADOPTED_VENV"
    rm -f "$ADOPTED_VENV/.complete"
    site="$(purelib "$ADOPTED_VENV")"
    rm -rf "$site/sglang"
    cp -a "$(purelib "$VENV")/sglang" "$site/sglang"
    apply_adoption_patch "$ADOPTED_VENV" "$ADOPTION_PATCH"
    touch "$ADOPTED_VENV/.complete"
    remove_other_venvs "$ADOPTED_VENV" serve-adopted-venv
    echo "test-serve: adopted venv made in $((SECONDS - began)) s"
}

# The oldest release's venv: hard links to the serving venv's files, its release's pins reinstalled
# (pip removes the linked files and writes new ones).
build_oldest_venv() {
    local began=$SECONDS
    if [[ "${SGLANG_VENV_REBUILD:-0}" == 1 ]]; then rm -rf "$OLDEST_VENV"; fi
    if [[ -f "$OLDEST_VENV/.complete" ]]; then
        echo "test-serve: reusing the cached oldest-release venv $OLDEST_VENV"
        return
    fi
    rm -rf "$OLDEST_VENV"
    cp -al "$VENV" "$OLDEST_VENV"
    rm -f "$OLDEST_VENV/.complete"
    pip_quiet "$OLDEST_VENV" install --quiet --no-deps --force-reinstall -r "$OLDEST_PINS"
    touch "$OLDEST_VENV/.complete"
    remove_other_venvs "$OLDEST_VENV" serve-oldest-venv
    echo "test-serve: oldest-release venv made in $((SECONDS - began)) s"
}

start=$SECONDS
mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/test-serve.lock"
flock 9 # one builder at a time; a second run waits and then reuses the venvs
if [[ "${SGLANG_VENV_REBUILD:-0}" == 1 ]]; then rm -rf "$CACHE_DIR"/serve-venv-*; fi
VENV="$(PYTHONPATH="$REPO_ROOT/runtime" "$PYTHON" -m sglang_plugin_runtime.testing.serving "$CACHE_DIR" \
    2> >(sed -u "s/^/$LOG_PREFIX: /" >&2))"
# Ray for the process tier's RayEngine checks: the kit's own addition to the serving venv, before the adopted
# venv is linked from it (a plugin author's serving venv has no Ray).
RAY_REQUIREMENTS="$REPO_ROOT/scripts/serve-ray-requirements.txt"
ray_key="$(cache_key ray "$RAY_REQUIREMENTS")"
if [[ "$(cat "$VENV/.ray" 2>/dev/null)" != "$ray_key" ]]; then
    pip_quiet "$VENV" install --quiet --no-deps -r "$RAY_REQUIREMENTS"
    echo "$ray_key" >"$VENV/.ray"
fi
ADOPTED_VENV="$CACHE_DIR/serve-adopted-venv-$(cache_key "$RECIPE_VERSION $(basename "$VENV") $ray_key" "$ADOPTION_PATCH")"
OLDEST_PINS="$REPO_ROOT/scripts/serve-oldest-release.txt"
OLDEST_VENV="$CACHE_DIR/serve-oldest-venv-$(cache_key "$RECIPE_VERSION $(basename "$VENV") $ray_key" "$OLDEST_PINS")"
build_adopted_venv
build_oldest_venv
snapshot="$(runtime_snapshot "$REPO_ROOT")"
trap 'rm -rf "$snapshot"' EXIT
for venv in "$VENV" "$ADOPTED_VENV" "$OLDEST_VENV"; do install_runtime "$venv" "$snapshot"; done
flock -u 9
echo "test-serve: venvs ready in $((SECONDS - start)) s"

cd "$REPO_ROOT"
export SGLANG_SERVE_VENV="$VENV" SGLANG_SERVE_ADOPTED_VENV="$ADOPTED_VENV"
export SGLANG_SERVE_OLDEST_VENV="$OLDEST_VENV"
export SGLANG_SERVER_CACHE="$CACHE_DIR/serve-model"
if [[ "${1:-}" == bench ]]; then
    shift
    exec "$VENV/bin/python" benchmarks/real_server.py "$@"
fi
set +e
"$VENV/bin/python" -m pytest -c tests_serve/pytest.ini --rootdir "$REPO_ROOT" --durations=12 "$@"
status=$?
set -e
echo "test-serve: pytest exit $status; finished in $((SECONDS - start)) s"
exit $status
