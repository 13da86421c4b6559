"""Prints the OpInfo pass counts (ops and samples per check) after the run."""

import sys


def pytest_terminal_summary(terminalreporter):
    module = sys.modules.get("test_opinfo")
    if module is None:
        return
    outcomes = {}
    for status in ("passed", "failed", "xfailed", "xpassed", "skipped"):
        for rep in terminalreporter.stats.get(status, []):
            name = getattr(rep, "nodeid", "")
            if "test_opinfo.py::test_" not in name or "[" not in name:
                continue
            check = name.split("::test_")[1].split("[")[0]
            outcomes.setdefault(check, {}).setdefault(status, 0)
            outcomes[check][status] += 1
    if not outcomes:
        return
    terminalreporter.section("OpInfo")
    for check, counts in outcomes.items():
        total = sum(counts.values())
        passed = counts.get("passed", 0)
        samples = sum(n for (oid, c), n in module.RESULTS.items() if c == check)
        terminalreporter.write_line(
            f"{check}: {passed}/{total} ops pass ({100 * passed / total:.1f}%), "
            f"{counts.get('xfailed', 0)} known failures, {counts.get('skipped', 0)} not "
            f"measurable; {samples} samples compared")
