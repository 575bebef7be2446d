# Cached, pinned venvs for the real-SGLang tiers: sourced by scripts/test-sglang.sh and
# scripts/test-serve.sh.
#
# A venv is built once from one fully pinned requirements file, installed with --no-deps (pip
# resolves nothing by itself, so it can never pull a CUDA torch), under a name that carries a hash
# of everything that shaped it; it is reused while its .complete mark exists, and other venvs of the
# same prefix are removed when a new one is done. The caller sets PYTHON, CACHE_DIR and LOG_PREFIX
# before using these functions.

# The adoption patch (the change SGLang 0.5.23 would merge), which the adopted venvs apply.
ADOPTION_PATCH="$REPO_ROOT/runtime/sglang_plugin_runtime/_launcher/patches/sglang-0.5.23.patch"

# Nothing from the caller's environment may steer a venv or the tests, except the SGLANG_* names
# given.
clean_caller_environment() {
    local keep=" $* " name
    unset VIRTUAL_ENV PYTHONPATH PYTHONHOME PIP_REQUIRE_VIRTUALENV
    for name in $(env | sed -n 's/^\(SGLANG_[A-Z0-9_]*\)=.*/\1/p'); do
        [[ "$keep" == *" $name "* ]] || unset "$name"
    done
    export PIP_DISABLE_PIP_VERSION_CHECK=1
}

# pip of the venv $1, quietly: this machine's pip configuration names optional local indexes that
# may be absent.
pip_quiet() {
    local venv="$1"
    shift
    "$venv/bin/python" -m pip "$@" 2> >(grep -v "^WARNING: Location '.*' is ignored" >&2)
}

# cache_key RECIPE FILE...: 12 hex digits of the files, the recipe version and the Python version.
cache_key() {
    local recipe="$1" py_version
    shift
    py_version="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    { cat "$@"; echo "recipe=$recipe python=$py_version"; } | sha256sum | cut -c1-12
}

# build_pinned_venv DIR PREFIX LABEL REQUIREMENTS [FINISH]: the pinned set in a fresh venv at DIR,
# reused while DIR/.complete exists. FINISH (a shell function, given DIR) runs before the venv is
# marked complete. Other PREFIX-* venvs in CACHE_DIR are then removed. SGLANG_VENV_REBUILD=1
# rebuilds.
build_pinned_venv() {
    local venv="$1" prefix="$2" label="$3" requirements="$4" finish="${5:-}" began=$SECONDS old
    if [[ "${SGLANG_VENV_REBUILD:-0}" == 1 ]]; then rm -rf "$venv"; fi
    if [[ -f "$venv/.complete" ]]; then
        echo "$LOG_PREFIX: reusing the cached $label venv $venv"
        return
    fi
    echo "$LOG_PREFIX: building the $label venv $venv (first run: a few minutes)"
    rm -rf "$venv"
    # A venv's scripts hard-code its path: build under the final name, mark it complete only at the
    # end.
    "$PYTHON" -m venv "$venv"
    install_cpu_torch "$venv" "$requirements"
    pip_quiet "$venv" install --quiet --no-deps -r "$requirements"
    if [[ -n "$finish" ]]; then "$finish" "$venv"; fi
    touch "$venv/.complete"
    remove_other_venvs "$venv" "$prefix"
    echo "$LOG_PREFIX: $label venv built in $((SECONDS - began)) s"
}

# install_cpu_torch VENV REQUIREMENTS: the file's torch pin first, its CPU build from the PyTorch CPU
# index where pip can reach it (one retry, 20 s timeouts), else from the configured index (PyPI's is
# a CUDA build; it runs on the CPU too); one line says which came. The file's pin is then satisfied.
install_cpu_torch() {
    local venv="$1" pin
    pin="$(grep -E '^torch==' "$2")"
    pip_quiet "$venv" install --quiet --no-deps --retries 1 --timeout 20 "$pin" \
        --extra-index-url https://download.pytorch.org/whl/cpu
    "$venv/bin/python" -c 'import importlib.metadata as m; v = m.version("torch")
print(f"'"$LOG_PREFIX"': torch {v}", "(a CPU build)" if v.endswith("+cpu") else
      "(not a CPU build: https://download.pytorch.org/whl/cpu was not reached)")'
}

# remove_other_venvs KEEP PREFIX: every CACHE_DIR/PREFIX-* but KEEP (venvs of an older key).
remove_other_venvs() {
    local keep="$1" prefix="$2" old
    for old in "$CACHE_DIR/$prefix"-*; do
        if [[ -d "$old" && "$old" != "$keep" ]]; then rm -rf "$old"; fi
    done
}

# purelib VENV: the venv's site-packages.
purelib() {
    "$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'
}

# apply_adoption_patch VENV PATCH: the upstream change, applied to the venv's sglang the way a
# reviewer would: plain `patch`, no fuzz, no leftovers.
apply_adoption_patch() {
    local venv="$1" patch_file="$2" site
    site="$(purelib "$venv")"
    patch --directory="$site" --strip=1 --forward --batch --fuzz=0 --no-backup-if-mismatch \
        --reject-file=- --input="$patch_file" >/dev/null
    "$venv/bin/python" -m compileall -q "$site/sglang/srt/plugins" "$site/sglang/srt/platforms" \
        "$site/sglang/multimodal_gen/runtime/platforms"
    echo "$LOG_PREFIX: applied $(basename "$patch_file") to $site/sglang"
}

# runtime_snapshot REPO_ROOT: a temporary copy of what builds the runtime (pip never builds inside
# the checkout). The caller removes it.
runtime_snapshot() {
    local repo_root="$1" snapshot name
    snapshot="$(mktemp -d)"
    cp "$repo_root/pyproject.toml" "$snapshot/"
    for name in README.md LICENSE; do
        if [[ -f "$repo_root/$name" ]]; then cp "$repo_root/$name" "$snapshot/"; fi
    done
    (cd "$repo_root" &&
        tar --exclude='__pycache__' --exclude='*.pyc' --exclude='*.egg-info' -cf - runtime) |
        tar -xf - -C "$snapshot"
    echo "$snapshot"
}

# install_runtime VENV SNAPSHOT: a real `pip install` of the runtime into the venv, every run.
install_runtime() {
    pip_quiet "$1" install --quiet --no-deps --no-build-isolation --force-reinstall "$2"
}
