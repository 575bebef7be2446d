"""Comparing fingerprints: which items differ, error or warning, which ranks and hosts have each
value, and a report that stays readable at 64 ranks. Pure functions over fingerprint documents, no
processes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from sglang_plugin_runtime._consistency import (
    ERROR,
    WARNING,
    Participant,
    compare,
    compress_ranks,
    format_differences,
    format_groups,
    rank_groups,
)
from sglang_plugin_runtime._fingerprint import digest_of


def fingerprint() -> dict[str, Any]:
    """A fingerprint as one rank sends it: platform acme, general plugin timer with one hook, idle
    skipped."""
    return {
        "format": 1,
        "runtime_version": "0.1.0",
        "namespace": "srt",
        "platform": {
            "status": "selected",
            "class": "acme_npu.platform.AcmePlatform",
            "plugin": "acme",
            "distribution": "acme-npu",
            "version": "1.2.0",
            "rule": "single-activated",
            "error_type": None,
            "activations": [
                {
                    "plugin": "acme",
                    "distribution": "acme-npu",
                    "version": "1.2.0",
                    "status": "activated",
                },
                {
                    "plugin": "bolt",
                    "distribution": "bolt-accel",
                    "version": "0.3.0",
                    "status": "unavailable",
                },
            ],
        },
        "general_plugins": [
            {
                "plugin": "idle",
                "status": "skipped-allowlist",
                "distribution": "idle-dist",
                "version": "0.1",
            },
            {"plugin": "timer", "status": "loaded", "distribution": "acme-timer", "version": "1.0"},
        ],
        "hooks": [
            {
                "target": "sglang.srt.managers.scheduler.Scheduler.run_batch",
                "failed": False,
                "hooks": [
                    {
                        "type": "around",
                        "hook": "acme_timer.timed",
                        "plugin": "timer",
                        "distribution": "acme-timer",
                        "priority": 0,
                        "active": True,
                    }
                ],
            }
        ],
    }


def job(
    *changed: tuple[int, dict[str, Any]], ranks: int = 3, hosts: dict[int, str] | None = None
) -> list[Participant]:
    """``ranks`` participants with :func:`fingerprint`, except the ranks given in ``changed``."""
    overrides = dict(changed)
    return [
        Participant(rank, (hosts or {}).get(rank, "node-a"), overrides.get(rank, fingerprint()))
        for rank in range(ranks)
    ]


def variant(difference_values: Any) -> list[tuple[str, tuple[int, ...]]]:
    return [(v.value, v.ranks) for v in difference_values.variants]


def edited(change) -> dict[str, Any]:
    data = copy.deepcopy(fingerprint())
    change(data)
    return data


def test_identical_fingerprints_have_no_differences() -> None:
    assert compare(job()) == []


def test_a_plugin_version_on_one_rank_is_an_error_naming_that_rank() -> None:
    other = edited(lambda d: d["general_plugins"][1].update(version="1.1"))
    (difference,) = compare(job((2, other)))
    assert (difference.kind, difference.item, difference.severity) == (
        "plugin",
        "general plugin 'timer'",
        ERROR,
    )
    assert variant(difference) == [
        ("loaded, acme-timer 1.0", (0, 1)),
        ("loaded, acme-timer 1.1", (2,)),
    ]


def test_a_plugin_skipped_on_one_rank_and_loaded_on_others_is_an_error() -> None:
    other = edited(
        lambda d: (d["general_plugins"][1].update(status="skipped-allowlist"), d.update(hooks=[]))
    )
    differences = compare(job((1, other)))
    assert [(d.item, d.severity) for d in differences] == [
        ("general plugin 'timer'", ERROR),
        ("hooks on 'sglang.srt.managers.scheduler.Scheduler.run_batch'", ERROR),
    ]
    assert variant(differences[1]) == [
        ("around acme_timer.timed [timer from acme-timer]", (0, 2)),
        ("no hooks", (1,)),
    ]


def test_a_plugin_loaded_on_no_rank_that_differs_is_a_warning() -> None:
    other = edited(lambda d: d["general_plugins"][0].update(version="0.2", status="failed-import"))
    (difference,) = compare(job((0, other)))
    assert (difference.item, difference.severity) == ("general plugin 'idle'", WARNING)
    assert variant(difference) == [
        ("skipped-allowlist, idle-dist 0.1", (1, 2)),
        ("failed-import, idle-dist 0.2", (0,)),
    ]


def test_a_plugin_missing_on_one_rank_reads_not_installed() -> None:
    other = edited(lambda d: d["general_plugins"].pop(0))
    (difference,) = compare(job((1, other)))
    assert variant(difference) == [
        ("skipped-allowlist, idle-dist 0.1", (0, 2)),
        ("not installed", (1,)),
    ]


def test_a_different_platform_is_an_error_and_its_rule_is_not_listed_twice() -> None:
    def fallback(d: dict[str, Any]) -> None:
        d["platform"].update(
            {
                "class": "sglang_plugin_runtime.platforms.interface.SRTPlatform",
                "plugin": None,
                "distribution": None,
                "version": None,
                "rule": "fallback",
            }
        )
        d["platform"]["activations"][0]["status"] = "unavailable"

    differences = compare(job((1, edited(fallback))))
    assert [(d.item, d.severity) for d in differences] == [
        ("platform", ERROR),
        ("platform plugin 'acme', activate()", WARNING),
    ]
    assert variant(differences[0]) == [
        ("acme_npu.platform.AcmePlatform (plugin 'acme', acme-npu 1.2.0)", (0, 2)),
        ("sglang_plugin_runtime.platforms.interface.SRTPlatform (no plugin: the fallback)", (1,)),
    ]
    assert variant(differences[1]) == [
        ("activated, acme-npu 1.2.0", (0, 2)),
        ("returned None (hardware not found), acme-npu 1.2.0", (1,)),
    ]


def test_a_failed_selection_on_one_rank_is_an_error_naming_the_error_type() -> None:
    other = edited(
        lambda d: d["platform"].update(
            status="failed", **{"class": None}, rule=None, error_type="PlatformUnavailableError"
        )
    )
    (difference,) = compare(job((2, other)))
    assert variant(difference)[1] == (
        "selection failed: PlatformUnavailableError (plugin 'acme', acme-npu 1.2.0)",
        (2,),
    )


def test_the_same_platform_chosen_by_another_rule_is_a_warning() -> None:
    (difference,) = compare(job((0, edited(lambda d: d["platform"].update(rule="explicit")))))
    assert (difference.item, difference.severity) == ("platform selection rule", WARNING)
    assert variant(difference) == [("single-activated", (1, 2)), ("explicit", (0,))]


def test_an_unselected_platform_plugin_failing_on_one_rank_is_a_warning() -> None:
    other = edited(lambda d: d["platform"]["activations"][1].update(status="failed"))
    (difference,) = compare(job((1, other)))
    assert (difference.item, difference.severity) == ("platform plugin 'bolt', activate()", WARNING)


def test_a_hook_that_failed_to_apply_on_one_rank_is_an_error() -> None:
    (difference,) = compare(job((1, edited(lambda d: d["hooks"][0].update(failed=True)))))
    assert difference.severity == ERROR
    assert variant(difference)[1] == (
        "around acme_timer.timed [timer from acme-timer] (FAILED to apply)",
        (1,),
    )


def test_a_different_hook_order_is_an_error() -> None:
    def two_hooks(reverse: bool):
        def change(d: dict[str, Any]) -> None:
            hooks = d["hooks"][0]["hooks"]
            hooks.append(
                {
                    "type": "before",
                    "hook": "acme_timer.check",
                    "plugin": "timer",
                    "distribution": "acme-timer",
                    "priority": 0,
                    "active": True,
                }
            )
            if reverse:
                hooks.reverse()

        return edited(change)

    participants = [Participant(0, "a", two_hooks(False)), Participant(1, "a", two_hooks(True))]
    (difference,) = compare(participants)
    assert (difference.kind, difference.severity) == ("hooks", ERROR)


def test_load_plugins_not_called_on_one_rank_is_an_error() -> None:
    other = edited(lambda d: d.update(general_plugins=None, hooks=[]))
    differences = compare(job((2, other)))
    assert (differences[0].item, differences[0].severity) == ("general plugins", ERROR)
    assert variant(differences[0]) == [
        ("load_plugins() ran", (0, 1)),
        ("load_plugins() not called", (2,)),
    ]


@pytest.mark.fault(
    "processes",
    "message: the rank check where one rank never called load_plugins() (its general plugins "
    "are installed there too)",
    "each general plugin's line says 'load_plugins() not called on this rank: call it before the "
    "check' for that rank (was: "
    "'not installed', although it is installed on every rank)",
)
def test_a_plugin_on_a_rank_that_did_not_call_load_plugins_is_not_called_not_not_installed() -> (
    None
):
    other = edited(lambda d: d.update(general_plugins=None, hooks=[]))
    timer = next(d for d in compare(job((1, other))) if d.item == "general plugin 'timer'")
    assert variant(timer) == [
        ("loaded, acme-timer 1.0", (0, 2)),
        ("load_plugins() not called on this rank: call it before the check", (1,)),
    ]


def test_a_different_runtime_version_is_an_error_listed_first() -> None:
    other = edited(
        lambda d: (d.update(runtime_version="0.2.0"), d["general_plugins"][1].update(version="1.1"))
    )
    differences = compare(job((0, other)))
    assert [d.item for d in differences] == ["runtime version", "general plugin 'timer'"]
    assert variant(differences[0]) == [
        ("sglang-plugin-runtime 0.1.0", (1, 2)),
        ("sglang-plugin-runtime 0.2.0", (0,)),
    ]


def test_a_field_from_a_newer_runtime_is_an_error_that_names_it() -> None:
    (_, difference) = compare(job((1, edited(lambda d: d.update(format=2, kernels=["fast"])))))
    assert (difference.item, difference.severity) == ("fingerprint field 'kernels'", ERROR)


def test_errors_come_before_warnings() -> None:
    other = edited(
        lambda d: (
            d["platform"].update(rule="explicit"),
            d["general_plugins"][1].update(version="9"),
        )
    )
    assert [d.severity for d in compare(job((1, other)))] == [ERROR, WARNING]


def test_the_most_common_value_is_listed_first() -> None:
    odd = edited(lambda d: d["general_plugins"][1].update(version="1.1"))
    (difference,) = compare(job((0, odd), (1, odd), ranks=5))
    assert variant(difference) == [
        ("loaded, acme-timer 1.0", (2, 3, 4)),
        ("loaded, acme-timer 1.1", (0, 1)),
    ]


def test_ranks_compress_into_spans() -> None:
    assert compress_ranks([0, 1, 2, 5, 7, 8, 3, 9, 11, 12]) == "0-3, 5, 7-9, 11, 12"
    assert compress_ranks([4]) == "4"
    assert compress_ranks([]) == ""


def test_rank_groups_put_identical_fingerprints_together_largest_first() -> None:
    odd = edited(lambda d: d["general_plugins"][1].update(version="1.1"))
    groups = rank_groups(job((1, odd), hosts={0: "node-a", 1: "node-b", 2: "node-c"}))
    assert [(g.digest, g.ranks, g.hosts) for g in groups] == [
        (digest_of(fingerprint()), (0, 2), ("node-a", "node-c")),
        (digest_of(odd), (1,), ("node-b",)),
    ]


def test_one_odd_node_among_64_ranks_reads_as_two_lines() -> None:
    """8 hosts of 8 ranks; node-1 (ranks 8-15) has another timer version."""
    odd = edited(lambda d: d["general_plugins"][1].update(version="1.1"))
    hosts = {rank: f"node-{rank // 8}" for rank in range(64)}
    participants = job(*((rank, odd) for rank in range(8, 16)), ranks=64, hosts=hosts)
    lines = format_differences(compare(participants))
    assert lines == [
        "Differences that change what runs (errors):",
        "  general plugin 'timer':",
        "    loaded, acme-timer 1.0  on ranks 0-7, 16-63 (7 hosts: node-0, node-2, node-3, node-4, "
        "...)",
        "    loaded, acme-timer 1.1  on ranks 8-15 (host node-1)",
    ]
    assert format_groups(rank_groups(participants)) == [
        "Ranks by fingerprint:",
        f"  {digest_of(fingerprint())[:12]}  ranks 0-7, 16-63 (7 hosts: node-0, node-2, node-3, "
        "node-4, ...)",
        f"  {digest_of(odd)[:12]}  ranks 8-15 (host node-1)",
    ]
