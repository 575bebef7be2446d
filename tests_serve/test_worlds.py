"""Plugins inside SGLang's real server (``python -m sglang.launch_server`` on the CPU), per world.

One server per world (``served``) carries the generated hooks plugin, the CPU platform plugin and
two failing general plugins; each check below reads that server's log or asks it a request. The
servers that must fail are in test_failing_servers.py. What each world promises for each failure
is on docs/real-server.md.
"""

from __future__ import annotations

import re

import pytest
from conftest import (
    BROKEN_REGISTER_LINE,
    LEVEL_LINE,
    MISSPELLED_TARGET,
    REPO_ROOT,
    SCHEDULER_LINE,
    STARTUP_LINE,
    STARTUP_WITNESSES,
    UNSELECTED_HOOK_LINE,
    UNSELECTED_IMPORTED_LINE,
    WORLDS,
    Plugins,
    log_lines,
    sglang_processes,
)
from matrix import ROWS, record, sync_doc

from sglang_plugin_runtime.testing._sglang_server import SGLangServer

pytestmark = pytest.mark.serve


def test_the_generated_hook_fires_in_the_scheduler_subprocess(
    served: SGLangServer, world: str
) -> None:
    fired = [
        int(m[1])
        for m in log_lines(served, re.escape(SCHEDULER_LINE) + r" \(hooked in pid (\d+)\)")
    ]
    processes = sglang_processes(served)
    assert len(fired) == 1, served.log_text()[-3000:]
    assert processes.get(fired[0], "").startswith("sglang::scheduler"), (fired, processes)
    main = [pid for pid, name in processes.items() if not name.startswith("sglang::")]
    assert len(main) == 1 and fired[0] != main[0] and fired[0] != served.pid
    record("hook", world, "fires in `sglang::scheduler`")


def test_generate_returns_200_with_the_plugins_loaded(served: SGLangServer, world: str) -> None:
    answer = served.generate("Hello", max_new_tokens=4)
    assert answer["meta_info"]["completion_tokens"] == 4, answer
    record("generate", world, str(answer["status"]))


def _selected_in_every_process(served: SGLangServer) -> bool:
    selected = {
        int(m[1])
        for m in log_lines(served, r"serve-cpu-platform: activate\(\) -> \S+ \(pid (\d+)\)")
    }
    processes = sglang_processes(served)
    assert len(processes) >= 3, processes  # the server, its scheduler and its detokenizer
    return set(processes) <= selected


def test_the_platform_plugin_is_selected_in_every_server_process(served: SGLangServer) -> None:
    assert _selected_in_every_process(served), served.log_text()[-3000:]


#: What SGLang 0.5.23 asks a platform in a CPU server's life (the probe logs each once per process).
CALLED = {
    "get_device",
    "get_device_total_memory",
    "get_group_coordinator_device",
    "get_torch_distributed_backend_str",
    "init_backend",
    "post_load_model",
    "get_kv_pool_cls",
}


def test_sglang_calls_the_platforms_methods(served: SGLangServer) -> None:
    called = {m[1] for m in log_lines(served, r"serve-cpu-platform: SGLang called (\w+)")}
    assert called >= CALLED, sorted(called)


def test_without_device_sglang_takes_the_generated_platforms_device_string(
    served: SGLangServer,
) -> None:
    """No ``--device``: SGLang asks ``current_platform.get_device(None)``
    (srt/utils/common.py:1122) and splits the answer (srt/arg_groups/serving_hook.py:648-658)."""
    assert "--device" not in served.command
    assert "'device': 'cpu'" in served.log_text()


def test_a_cpu_platforms_attention_backend_is_not_asked_sglang_picks_it_first(
    served: SGLangServer, world: str
) -> None:
    """For ``--device cpu`` SGLang picks the attention backend itself
    (sglang/srt/arg_groups/platform_hook.py: 158-166: ``intel_amx``, then its fallback to
    ``torch_native`` in overrides.py:1301-1310) before it would ask an out-of-tree platform
    (model_override_base.py:292-294), so the platform's choice is never consulted."""
    called = {m[1] for m in log_lines(served, r"serve-cpu-platform: SGLang called (\w+)")}
    text = served.log_text()
    assert "get_default_attention_backend" not in called
    assert "does not support Intel AMX, will fallback to torch_native backend" in text
    backend = re.search(r"'attention_backend': '(\w+)'", text)
    assert backend is not None
    selected = "selected in every server process" if _selected_in_every_process(served) else "no"
    record("platform", world, f"{selected}; SGLang picks `{backend[1]}` itself")


#: What each world writes when ``register()`` raises: SGLang 0.5.23's loader, or the runtime's.
RUNTIME_REGISTER_FAILED = (
    "Plugin 'serve_broken_register' (distribution serve-broken-register 0.1.0) "
    "failed: serve_broken_register:register() raised RuntimeError"
)
REGISTER_FAILED = {
    "released": "Failed to execute general plugin: serve_broken_register",
    "launcher": RUNTIME_REGISTER_FAILED,
    "adopted": RUNTIME_REGISTER_FAILED,
}
#: What each world writes for a hook on a module that does not exist. SGLang 0.5.23 names neither
#: the plugin nor the real cause (pkgutil.resolve_name falls back to getattr); the runtime names
#: both.
RUNTIME_MISSPELLED = (
    f"Hooks on {MISSPELLED_TARGET} stay pending: module 'sglang.srt.managers.schedular' "
    "cannot be found: 'sglang.srt.managers' has no such module (misspelled?)"
)
MISSPELLED = {
    "released": f"Failed to apply hooks to {MISSPELLED_TARGET}",
    "launcher": RUNTIME_MISSPELLED,
    "adopted": RUNTIME_MISSPELLED,
}


def test_a_register_that_raises_is_reported_naming_the_plugin(
    served: SGLangServer, world: str
) -> None:
    text = served.log_text()
    assert "RuntimeError: serve-broken-register: register() failed on purpose" in text
    seen = next(w for w, message in REGISTER_FAILED.items() if message in text)
    record("register", world, ROWS["register"].expected(seen))


def test_a_misspelled_hook_target_is_reported_naming_the_target(
    served: SGLangServer, world: str
) -> None:
    text = served.log_text()
    if MISSPELLED["released"] in text:
        error = "AttributeError: module 'sglang.srt.managers' has no attribute 'schedular'"
        report = text.split(MISSPELLED["released"], 1)[1].split(error, 1)[0]
        assert "serve_misspelled_target" not in report, report
        record("misspelled", world, ROWS["misspelled"].released)
    else:
        line = next(line for line in text.splitlines() if RUNTIME_MISSPELLED in line)
        assert "[plugin=serve_misspelled_target, dist=serve-misspelled-target]" in line, line
        record("misspelled", world, ROWS["misspelled"].runtime)


def _pids(served: SGLangServer, line: str) -> set[int]:
    """The processes that printed ``line (pid N)``."""
    return {int(m[1]) for m in log_lines(served, re.escape(line) + r" \(pid (\d+)\)")}


def _scheduler(served: SGLangServer) -> int:
    (pid,) = [p for p, n in sglang_processes(served).items() if n.startswith("sglang::scheduler")]
    return pid


def test_a_failed_plugins_hook_is_discarded_where_the_runtime_loads_it(
    served: SGLangServer, world: str
) -> None:
    """``serve-broken-register`` registers an AROUND hook on ``Scheduler.__init__``, then raises:
    the server serves (its requests are checked above), and the hook runs only where SGLang
    0.5.23 loads the plugin."""
    fired = _pids(served, BROKEN_REGISTER_LINE)
    assert fired <= {_scheduler(served)}, fired
    if fired:
        record("register_hook", world, "its hook fires in `sglang::scheduler`")
        return
    # at ERROR (SGLang's log format shows no level: the startup plugin echoes it), once per process
    # that loads plugins: the server, its scheduler and its detokenizer
    logged = log_lines(served, re.escape(LEVEL_LINE) + r" (\w+) \(pid (\d+)\): (.*)")
    failed = {int(m[2]): m[1] for m in logged if RUNTIME_REGISTER_FAILED in m[3]}
    assert set(sglang_processes(served)) <= set(failed), (failed, sglang_processes(served))
    assert set(failed.values()) == {"ERROR"}, failed
    record("register_hook", world, "its hook never fires; serves")


def test_an_unselected_platform_plugins_import_time_hook(served: SGLangServer, world: str) -> None:
    """``serve-unselected-platform`` (backend absent: ``activate()`` returns None) registers a
    Scheduler hook when its module is imported; it is imported in the scheduler too."""
    scheduler = _scheduler(served)
    assert scheduler in _pids(served, UNSELECTED_IMPORTED_LINE), served.log_text()[-3000:]
    fired = _pids(served, UNSELECTED_HOOK_LINE)
    assert fired <= {scheduler}, fired
    hook = "its hook fires there" if fired else "its hook never fires"
    record("unselected", world, f"imported in `sglang::scheduler`; {hook}")


def test_a_startup_plugin_runs_first_in_every_server_process_without_pth_or_sitecustomize(
    served: SGLangServer, world: str, plugins: Plugins
) -> None:
    """The CPU platform's generated startup plugin prints, in each process it runs in, whether
    SGLang's ``server_args`` and ``scheduler`` modules were imported before it."""
    venv_site = next((WORLDS[world][0] / "lib").glob("python3*/site-packages"))
    for folder in (plugins.platform, venv_site):
        assert not list(folder.glob("sitecustomize.py")) + list(folder.glob("usercustomize.py"))
        for pth in folder.glob("*.pth"):
            text = pth.read_text(encoding="utf-8", errors="replace")
            assert "serve_cpu_platform" not in text and "sglang_plugin_runtime" not in text, pth
    pattern = re.escape(STARTUP_LINE) + r" \(pid (\d+)\) (.*)"
    runs = {int(m[1]): m[2] for m in log_lines(served, pattern)}
    if not runs:
        record("startup", world, "never run")
        return
    assert set(sglang_processes(served)) <= set(runs), (runs, sglang_processes(served))
    before = " ".join(f"{name}=False" for name in STARTUP_WITNESSES)
    assert set(runs.values()) == {before}, runs
    outcome = "runs in every server process before `sglang.srt.server_args` is imported"
    record("startup", world, outcome)


def test_the_servers_processes_are_the_boxes_of_the_docs_diagram(served: SGLangServer) -> None:
    page = (REPO_ROOT / "docs" / "real-server.md").read_text(encoding="utf-8")
    diagram = page.split("```mermaid", 1)[1].split("```", 1)[0]
    tree = diagram.split("subgraph tree", 1)[1].split("\n    end", 1)[0]
    boxes = set(re.findall(r'^\s*\w+\["<b>([^<]+)</b>', tree, re.M))
    names = {
        "python -m sglang.launch_server" if "sglang.launch_server" in name else name.split()[0]
        for name in sglang_processes(served).values()
    }
    assert names == boxes - {"sglang-plugins run"}


def test_the_doc_carries_the_real_server_rows_of_the_matrix() -> None:
    """Runs last (conftest.py orders it): docs/sglang.md's real-server rows are this run's."""
    if left := sync_doc():
        pytest.skip(f"not every table's cells ran in this session ({'; '.join(left)})")
