#!/usr/bin/env bash
# `make test-sglang`: the plugin kit proven against the real, released SGLang, as released and as adopted.
#
# 1. Builds (once, cached under .cache/) the *plain* venv: the real `sglang==0.5.23` wheel, the CPU build of
#    torch 2.13.0 and the few light packages sglang's plugin and platform layers import, all pinned in
#    scripts/sglang-requirements.txt and installed with --no-deps (pip resolves nothing by itself, so it can
#    never pull torchvision or a CUDA torch). The cache key is a hash of that file, this script's venv
#    recipe version and the Python version: change any of them and the venv is rebuilt; old ones are removed.
# 2. Builds (once, cached the same way, its key also covering the patch) the *adopted* venv: its own install of
#    the same pinned set, then runtime/sglang_plugin_runtime/_launcher/patches/sglang-0.5.23.patch applied to its sglang package with a
#    plain `patch` (SGLang importing this runtime). The plain venv is never modified.
# 3. Installs this repository's runtime into each (a real `pip install`, from a snapshot of the source, every run).
# 4. Runs `pytest tests_sglang` in the plain venv (without tests_sglang/adopted), then `pytest tests_sglang/adopted`
#    in the adopted venv. Extra arguments go to pytest in each tier; with arguments the adopted tier gets no
#    default path, so pick the tier with SGLANG_TIER when you pass paths.
#
# Environment: PYTHON (default python3.11), SGLANG_VENV_DIR (default <repo>/.cache), SGLANG_VENV_REBUILD=1,
# SGLANG_TIER=plain|adopted|both (default both).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REQUIREMENTS="$REPO_ROOT/scripts/sglang-requirements.txt"
ADOPTION_PATCH="$REPO_ROOT/runtime/sglang_plugin_runtime/_launcher/patches/sglang-0.5.23.patch"
PYTHON="${PYTHON:-python3.11}"
CACHE_DIR="${SGLANG_VENV_DIR:-$REPO_ROOT/.cache}"
RECIPE_VERSION=1 # bump when the way the venv is built changes

# Nothing from the caller's environment may steer the venv or the tests.
unset VIRTUAL_ENV PYTHONPATH PYTHONHOME PIP_REQUIRE_VIRTUALENV
for name in $(env | sed -n 's/^\(SGLANG_[A-Z0-9_]*\)=.*/\1/p'); do
    case "$name" in SGLANG_VENV_DIR | SGLANG_VENV_REBUILD | SGLANG_TIER) ;; *) unset "$name" ;; esac
done
export PIP_DISABLE_PIP_VERSION_CHECK=1

TIER="${SGLANG_TIER:-both}"
case "$TIER" in
    plain | adopted | both) ;;
    *) echo "test-sglang: SGLANG_TIER must be plain, adopted or both (got '$TIER')" >&2; exit 2 ;;
esac
command -v "$PYTHON" >/dev/null || { echo "test-sglang: $PYTHON not found (set PYTHON=...)" >&2; exit 2; }
command -v patch >/dev/null || { echo "test-sglang: the 'patch' program is needed for the adopted venv" >&2; exit 2; }
py_version="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
key="$( { cat "$REQUIREMENTS"; echo "recipe=$RECIPE_VERSION python=$py_version"; } | sha256sum | cut -c1-12)"
adopted_key="$( { cat "$REQUIREMENTS" "$ADOPTION_PATCH"; echo "recipe=$RECIPE_VERSION python=$py_version"; } |
    sha256sum | cut -c1-12)"
VENV="$CACHE_DIR/sglang-venv-$key"
ADOPTED_VENV="$CACHE_DIR/sglang-adopted-venv-$adopted_key"

# pip of the venv $1, quietly: this machine's pip configuration names optional local indexes that may be absent.
pip_quiet() {
    local venv="$1"
    shift
    "$venv/bin/python" -m pip "$@" 2> >(grep -v "^WARNING: Location '.*' is ignored" >&2)
}

# build_venv DIR PREFIX LABEL: the pinned set in a fresh venv at DIR, reused while DIR/.complete exists. An adopted
# venv (PREFIX sglang-adopted-venv) is patched before it is marked complete. Other PREFIX-* venvs are then removed.
build_venv() {
    local venv="$1" prefix="$2" label="$3" began=$SECONDS
    if [[ "${SGLANG_VENV_REBUILD:-0}" == 1 ]]; then rm -rf "$venv"; fi
    if [[ -f "$venv/.complete" ]]; then
        echo "test-sglang: reusing the cached $label venv $venv"
        return
    fi
    echo "test-sglang: building the $label venv $venv (first run: a few minutes)"
    rm -rf "$venv" "$venv.partial"
    "$PYTHON" -m venv "$venv.partial"
    # A venv's scripts hard-code its path: build under the final name, mark it complete only at the end.
    mv "$venv.partial" "$venv"
    pip_quiet "$venv" install --quiet --no-deps -r "$REQUIREMENTS"
    "$venv/bin/python" - <<'PYTHON'
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
    if [[ "$prefix" == sglang-adopted-venv ]]; then
        local site
        site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
        # The upstream change, applied the way a reviewer would: plain `patch`, no fuzz, no leftovers.
        patch --directory="$site" --strip=1 --forward --batch --fuzz=0 --no-backup-if-mismatch \
            --reject-file=- --input="$ADOPTION_PATCH" >/dev/null
        "$venv/bin/python" -m compileall -q "$site/sglang/srt/plugins" "$site/sglang/srt/platforms" \
            "$site/sglang/multimodal_gen/runtime/platforms"
        echo "test-sglang: applied $(basename "$ADOPTION_PATCH") to $site/sglang"
    fi
    touch "$venv/.complete"
    for old in "$CACHE_DIR/$prefix"-*; do
        [[ -d "$old" && "$old" != "$venv" ]] && rm -rf "$old"
    done
    echo "test-sglang: $label venv built in $((SECONDS - began)) s"
}

start=$SECONDS
mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/sglang-venv.lock"
flock 9 # one builder at a time; a second run waits and then reuses the venvs

# The runtime, from a snapshot of the source (pip never builds inside the shared checkout).
snapshot="$(mktemp -d)"
trap 'rm -rf "$snapshot"' EXIT
cp "$REPO_ROOT/pyproject.toml" "$snapshot/"
for name in README.md LICENSE; do [[ -f "$REPO_ROOT/$name" ]] && cp "$REPO_ROOT/$name" "$snapshot/"; done
(cd "$REPO_ROOT" && tar --exclude='__pycache__' --exclude='*.pyc' --exclude='*.egg-info' -cf - runtime) |
    tar -xf - -C "$snapshot"

tiers=()
if [[ "$TIER" != adopted ]]; then tiers+=(plain); fi
if [[ "$TIER" != plain ]]; then tiers+=(adopted); fi
for tier in "${tiers[@]}"; do
    if [[ "$tier" == plain ]]; then
        build_venv "$VENV" sglang-venv "plain SGLang"
        target="$VENV"
    else
        build_venv "$ADOPTED_VENV" sglang-adopted-venv "adopted SGLang"
        target="$ADOPTED_VENV"
    fi
    pip_quiet "$target" install --quiet --no-deps --no-build-isolation --force-reinstall "$snapshot"
    echo "test-sglang: runtime installed in the $tier venv ($((SECONDS - start)) s so far)"
done
flock -u 9

cd "$REPO_ROOT"
status=0
for tier in "${tiers[@]}"; do
    began=$SECONDS
    set +e
    if [[ "$tier" == plain ]]; then
        # No arguments: the ini file's testpaths (tests_sglang), less the adopted tier. Arguments go to pytest.
        "$VENV/bin/python" -m pytest -c tests_sglang/pytest.ini --rootdir "$REPO_ROOT" \
            --ignore=tests_sglang/adopted "$@"
    elif [[ $# -eq 0 ]]; then
        "$ADOPTED_VENV/bin/python" -m pytest -c tests_sglang/pytest.ini --rootdir "$REPO_ROOT" tests_sglang/adopted
    else
        "$ADOPTED_VENV/bin/python" -m pytest -c tests_sglang/pytest.ini --rootdir "$REPO_ROOT" "$@"
    fi
    tier_status=$?
    set -e
    echo "test-sglang: $tier tier: pytest exit $tier_status in $((SECONDS - began)) s"
    if [[ $tier_status -ne 0 ]]; then status=$tier_status; fi
done
echo "test-sglang: finished in $((SECONDS - start)) s"
exit $status
