"""What a new vendor does to a generated general plugin before its real-server section runs: one
hook of their own, named in the real-server test; and the commands that section gives. Shared by
the real-server tier's check of that path (tests_serve/test_vendor_path.py) and its timing
(benchmarks/vendor_path.py, which runs on a bare Python 3.11: standard library only here).
"""

from __future__ import annotations

import re
from pathlib import Path

#: The generated README's section a vendor follows.
SECTION = "## Run your plugin in a real SGLang server on your laptop"
#: What the vendor's hook logs, in the scheduler that builds SGLang's Scheduler.
HOOK_LINE = "the vendor's hook: Scheduler built in pid"
#: The vendor's own AROUND hook on the Scheduler's constructor, registered beside the examples.
OWN_HOOK = f'''

def log_scheduler_start(original: Any, *args: Any, **kwargs: Any) -> Any:
    """AROUND hook of the vendor's own: SGLang's Scheduler is built, then it says so."""
    result = original(*args, **kwargs)
    logger.info("{HOOK_LINE} %d", os.getpid())
    return result


_register_example_hooks = register_hooks


def register_hooks() -> None:
    _register_example_hooks()
    HookRegistry.register(
        "sglang.srt.managers.scheduler.Scheduler.__init__",
        logs_first_call(log_scheduler_start),
        HookType.AROUND,
    )
'''
_SCHEDULER_HOOKS = 'SCHEDULER_HOOKS: list[str] = ["time_run_batch"]'


def add_own_hook(project: Path) -> None:
    """Append :data:`OWN_HOOK` to the project's hooks module and name it in the real-server
    test's ``SCHEDULER_HOOKS``, as the generated README tells a vendor to."""
    hooks = next(project.glob("*/hooks.py"))
    hooks.write_text(hooks.read_text(encoding="utf-8") + OWN_HOOK, encoding="utf-8")
    test = project / "tests" / "test_real_server.py"
    text = test.read_text(encoding="utf-8")
    assert _SCHEDULER_HOOKS in text, f"{test} names no {_SCHEDULER_HOOKS}"
    named = _SCHEDULER_HOOKS.replace('"]', '", "log_scheduler_start"]')
    test.write_text(text.replace(_SCHEDULER_HOOKS, named), encoding="utf-8")


def section_commands(readme: str) -> list[str]:
    """The shell commands of the README's :data:`SECTION` (its one bash block), in order."""
    start = readme.index(SECTION)
    section = readme[start : readme.find("\n## ", start + len(SECTION))]
    (block,) = re.findall(r"^```bash\n(.*?)^```", section, re.M | re.S)
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
