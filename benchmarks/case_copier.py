"""Case 6: ``copier copy`` of each template kind, with every answer at its default.

``copier.run_copy(<this repository>, <fresh temp dir>, data={"plugin_kind": kind}, defaults=True,
unsafe=False, vcs_ref="HEAD")`` in a fresh process; the clock covers ``run_copy`` only (copier's
own import is reported in the note). There is no SGLang counterpart.
"""

import time

SIDES = ["ours"]


def measure(side, params):
    import os
    import shutil
    import tempfile

    t0 = time.perf_counter()
    import copier

    t1 = time.perf_counter()
    dst = tempfile.mkdtemp(prefix="bench-copier-")
    try:
        copier.run_copy(
            params["src"],
            dst,
            data={"plugin_kind": params["kind"]},
            defaults=True,
            unsafe=False,
            vcs_ref="HEAD",
            quiet=True,
        )
        t2 = time.perf_counter()
        files = sum(len(f) for _d, _s, f in os.walk(dst))
    finally:
        shutil.rmtree(dst, ignore_errors=True)
    return {"seconds": t2 - t1, "import_seconds": t1 - t0, "files": files}


def run(ctx):
    import statistics

    from _common import REPO, Row, run_child

    rows = []
    for kind in ("platform", "general"):
        warm = 0 if ctx.quick else 1  # the first run warms the page cache and .pyc files
        runs = [
            run_child(ctx, "copier", "ours", {"src": str(REPO), "kind": kind})
            for _ in range(ctx.repeats(3, 1) + warm)
        ]
        runs = runs[warm:]
        note = (
            f"{runs[0]['files']} files generated; import copier "
            f"{statistics.median(r['import_seconds'] for r in runs) * 1e3:.0f} ms (not included)"
        )
        ctx.log(f"  6 {kind}: {note}")
        rows.append(
            Row(
                "6",
                f"copier copy, plugin_kind={kind}",
                "ms",
                [r["seconds"] * 1e3 for r in runs],
                note=note,
            )
        )
    return rows
