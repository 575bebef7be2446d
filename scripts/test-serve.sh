#!/usr/bin/env bash
# `make test-serve`: plugins inside SGLang's real server (`python -m sglang.launch_server`) on the
# CPU, in the three worlds the kit supports: released SGLang, the launcher (`sglang-plugins run`)
# and the adopted SGLang.
#
# 1. Builds (once, cached) the *serving* venv: released `sglang==0.5.23`, the CPU build of torch
#    2.13.0 and what the server imports on the CPU path, all pinned in
#    scripts/serve-requirements.txt and installed with --no-deps from the package index only; then
#    scripts/serve-torchvision-guard.patch guards torchvision's two fake-op registrations (the
#    index's torchvision is a CUDA build whose compiled ops do not load beside a CPU torch;
#    docs/real-server.md says why this and not torch 2.14.1). The cache key is a hash of both files,
#    the recipe version and the Python version (scripts/cached-venvs.sh, shared with make
#    test-sglang).
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
REQUIREMENTS="$REPO_ROOT/scripts/serve-requirements.txt"
TORCHVISION_GUARD="$REPO_ROOT/scripts/serve-torchvision-guard.patch"
ADOPTION_PATCH="$REPO_ROOT/runtime/sglang_plugin_runtime/_launcher/patches/sglang-0.5.23.patch"
PYTHON="${PYTHON:-python3.11}"
CACHE_DIR="${SGLANG_SERVE_DIR:-$REPO_ROOT/.cache}"
LOG_PREFIX=test-serve
RECIPE_VERSION=1 # bump when the way the venvs are built changes
# shellcheck source=scripts/cached-venvs.sh
source "$REPO_ROOT/scripts/cached-venvs.sh"

clean_caller_environment SGLANG_SERVE_DIR SGLANG_VENV_REBUILD
if ! command -v "$PYTHON" >/dev/null; then
    echo "test-serve: $PYTHON not found (set PYTHON=...)" >&2
    exit 2
fi
command -v patch >/dev/null || { echo "test-serve: the 'patch' program is needed" >&2; exit 2; }
key="$(cache_key "$RECIPE_VERSION" "$REQUIREMENTS" "$TORCHVISION_GUARD")"
VENV="$CACHE_DIR/serve-venv-$key"
ADOPTED_VENV="$CACHE_DIR/serve-adopted-venv-$(cache_key "$key" "$ADOPTION_PATCH")"
OLDEST_PINS="$REPO_ROOT/scripts/serve-oldest-release.txt"
OLDEST_VENV="$CACHE_DIR/serve-oldest-venv-$(cache_key "$key" "$OLDEST_PINS")"

# The serving venv's last step: the guard, and a check that no CUDA torch and no CUDA-only package
# came in.
finish_serving_venv() {
    local venv="$1"
    patch --directory="$(purelib "$venv")" --strip=1 --forward --batch --fuzz=0 \
        --no-backup-if-mismatch --reject-file=- --input="$TORCHVISION_GUARD" >/dev/null
    "$venv/bin/python" - <<'PYTHON'
import importlib.metadata as md, sys
assert md.version("torch") == "2.13.0+cpu", f"not the CPU torch 2.13.0: {md.version('torch')}"
assert md.version("sglang") == "0.5.23", md.version("sglang")
cuda_only = ("sglang-kernel", "flashinfer-python", "cuda-python", "nvidia-cuda-runtime-cu12",
             "nvidia-cuda-runtime", "torchaudio", "torch_memory_saver", "flash-attn-4", "deep-gemm")
present = [name for name in cuda_only if any(True for _ in md.distributions(name=name))]
if present:
    sys.exit(f"test-serve: CUDA-only packages in the serving venv: {present}")
PYTHON
}

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
exec 9>"$CACHE_DIR/serve-venv.lock"
flock 9 # one builder at a time; a second run waits and then reuses the venvs
build_pinned_venv "$VENV" serve-venv serving "$REQUIREMENTS" finish_serving_venv
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
