#!/usr/bin/env bash
# `make test-releases`: the plugin layer against every SGLang release with a plugin system.
#
# 1. Builds (once, cached under .cache/) the *base* venv every release shares: the pinned set of
#    scripts/sglang-requirements.txt without sglang (the CPU build of torch 2.13.0, the light
#    packages, pytest, copier), plus torchvision at the testing kit's serve-requirements.txt pin with
#    scripts/serve-torchvision-guard.patch (releases up to 0.5.19 import torchvision at the top of
#    sglang.srt.utils), pytest-xdist and execnet; all installed with --no-deps.
# 2. Fetches each release's wheel (`pip download --no-deps`, or from SGLANG_WHEELS) and checks it
#    against the sha256 in runtime/sglang_plugin_runtime/_sglang_releases/releases.json; then
#    integrations/sglang/make_launcher_data.py --check proves the launcher's per-release data is
#    what the wheels give.
# 3. Builds (once per release, cached) a venv per release that holds nothing but that wheel and a
#    .pth file naming the base venv's site-packages: one torch for all of them, and `sys.executable`
#    of each is an interpreter of that release (so are the tests' subprocesses).
# 4. Installs this checkout's runtime (one wheel, built every run) into each release venv and runs
#    `pytest -m every_release tests_sglang` there (the release-generic tests: released SGLang
#    selects the platform and applies the hooks, the launcher adopts, the gate, the generated
#    packages' own tests); the tests specific to 0.5.23's files, and the adopted tier, are
#    `make test-sglang`'s. Prints each release's time and exit status, then the total.
#
# Environment: PYTHON (default python3.11), SGLANG_VENV_DIR (default <repo>/.cache), SGLANG_RELEASES
# (the versions to test, space-separated; default every release in releases.json; "older": all but
# the newest, whose tests make test-sglang runs: what CI runs), SGLANG_WHEELS (a
# folder that already holds the wheels), SGLANG_VENV_REBUILD=1, SGLANG_TEST_WORKERS (pytest-xdist
# workers, default 2). Extra arguments go to pytest in every release.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RELEASES_JSON="$REPO_ROOT/runtime/sglang_plugin_runtime/_sglang_releases/releases.json"
TORCHVISION_GUARD="$REPO_ROOT/scripts/serve-torchvision-guard.patch"
PYTHON="${PYTHON:-python3.11}"
CACHE_DIR="${SGLANG_VENV_DIR:-$REPO_ROOT/.cache}"
LOG_PREFIX=test-releases
RECIPE_VERSION=1 # bump when the way the venvs are built changes
# shellcheck source=scripts/cached-venvs.sh
source "$REPO_ROOT/scripts/cached-venvs.sh"

clean_caller_environment SGLANG_VENV_DIR SGLANG_VENV_REBUILD SGLANG_RELEASES SGLANG_WHEELS \
    SGLANG_TEST_WORKERS
command -v "$PYTHON" >/dev/null || { echo "test-releases: $PYTHON not found (set PYTHON=...)" >&2; exit 2; }
command -v patch >/dev/null || { echo "test-releases: the 'patch' program is needed" >&2; exit 2; }

# release_field VERSION FIELD: a field of one release in releases.json ("" for a post release).
release_field() {
    "$PYTHON" - "$RELEASES_JSON" "$@" <<'PYTHON'
import json, sys
releases = json.load(open(sys.argv[1]))["releases"]
if sys.argv[2] == "all":  # every version, the post releases too
    print(" ".join(v for r in releases for v in (r["version"], *r["same_plugin_layer"])))
elif sys.argv[2] in ("main", "older"):  # older: all but the newest (make test-sglang's)
    print(" ".join(r["version"] for r in releases[: -1 if sys.argv[2] == "older" else None]))
else:
    print(next((r[sys.argv[3]] for r in releases if r["version"] == sys.argv[2]), ""))
PYTHON
}

mkdir -p "$CACHE_DIR"
requirements="$(mktemp)"
snapshot="$(runtime_snapshot "$REPO_ROOT")"
built="$(mktemp -d)"
trap 'rm -rf "$requirements" "$snapshot" "$built"' EXIT
# The base set: SGLang's tier without sglang, with the serving tier's torchvision and the tools.
{
    grep -v '^sglang==' "$REPO_ROOT/scripts/sglang-requirements.txt"
    grep '^torchvision==' "$REPO_ROOT/runtime/sglang_plugin_runtime/testing/serve-requirements.txt"
    grep -E '^pytest-xdist==' "$REPO_ROOT/requirements-dev.txt"
    echo "execnet==2.1.2"
} >"$requirements"
BASE="$CACHE_DIR/sglang-releases-base-$(cache_key "$RECIPE_VERSION" "$requirements" "$TORCHVISION_GUARD")"
WHEELS="${SGLANG_WHEELS:-$CACHE_DIR/sglang-wheels}"
RELEASES="${SGLANG_RELEASES:-main}"
if [[ "$RELEASES" == main || "$RELEASES" == older ]]; then RELEASES="$(release_field "$RELEASES")"; fi

finish_base() {
    patch --directory="$(purelib "$1")" --strip=1 --forward --batch --fuzz=0 \
        --no-backup-if-mismatch --reject-file=- --input="$TORCHVISION_GUARD" >/dev/null
    "$1/bin/python" - <<'PYTHON'
import importlib.metadata as md
assert md.version("torch") == "2.13.0+cpu", f"not the CPU torch 2.13.0: {md.version('torch')}"
PYTHON
}

start=$SECONDS
exec 9>"$CACHE_DIR/sglang-releases.lock"
flock 9 # one builder at a time; a second run waits and then reuses the venvs
build_pinned_venv "$BASE" sglang-releases-base "base (torch, light packages)" "$requirements" finish_base
mkdir -p "$WHEELS"
for version in $(release_field all); do
    if ! compgen -G "$WHEELS/sglang-$version-*.whl" >/dev/null; then
        pip_quiet "$BASE" download --quiet --no-deps --only-binary :all: "sglang==$version" -d "$WHEELS"
    fi
done
# The wheels are the released ones (sha256), and the launcher's data is what they give.
"$BASE/bin/python" "$REPO_ROOT/integrations/sglang/make_launcher_data.py" "$WHEELS" --check
pip_quiet "$BASE" wheel --quiet --no-deps --no-build-isolation "$snapshot" -w "$built"
declare -A venvs
for version in $RELEASES; do
    wheel="$WHEELS/$(release_field "$version" wheel)"
    [[ "$wheel" != "$WHEELS/" ]] || { echo "test-releases: $version is not in $RELEASES_JSON" >&2; exit 2; }
    venv="$CACHE_DIR/sglang-release-$version-$(cache_key "$RECIPE_VERSION$(basename "$BASE")" "$wheel")"
    if [[ "${SGLANG_VENV_REBUILD:-0}" == 1 ]]; then rm -rf "$venv"; fi
    if [[ ! -f "$venv/.complete" ]]; then
        began=$SECONDS
        rm -rf "$venv"
        "$PYTHON" -m venv --without-pip "$venv"
        purelib "$BASE" >"$(purelib "$venv")/zz-sglang-releases-base.pth"
        pip_quiet "$venv" install --quiet --no-deps "$wheel"
        touch "$venv/.complete"
        remove_other_venvs "$venv" "sglang-release-$version"
        echo "test-releases: SGLang $version venv built in $((SECONDS - began)) s"
    fi
    pip_quiet "$venv" install --quiet --no-deps --force-reinstall "$built"/*.whl
    venvs[$version]="$venv"
done
flock -u 9
echo "test-releases: venvs ready in $((SECONDS - start)) s"

cd "$REPO_ROOT"
status=0
summary=()
for version in $RELEASES; do
    venv="${venvs[$version]}"
    began=$SECONDS
    set +e
    "$venv/bin/python" -m pytest -c tests_sglang/pytest.ini --rootdir "$REPO_ROOT" \
        -n "${SGLANG_TEST_WORKERS:-2}" --dist loadfile -m every_release \
        --ignore=tests_sglang/adopted "$@"
    release_status=$?
    set -e
    summary+=("SGLang $version: pytest exit $release_status in $((SECONDS - began)) s")
    echo "test-releases: ${summary[-1]}"
    if [[ $release_status -ne 0 ]]; then status=$release_status; fi
done
printf 'test-releases: %s\n' "${summary[@]}"
echo "test-releases: finished in $((SECONDS - start)) s"
exit $status
