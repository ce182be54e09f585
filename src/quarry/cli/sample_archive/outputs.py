"""What the sessions' commands print, in each tool's own layout: pytest, go test, vitest, git and ripgrep."""

from __future__ import annotations

from dataclasses import dataclass

_WIDTH = 80
_MARKS = _WIDTH - 8  # pytest's progress marks on one line, before " [ 42%]"


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed test: its node id, the traceback pytest prints for it, and the summary line's reason."""

    node_id: str
    body: str
    reason: str


def pytest_run(passed: int, failures: tuple[Failure, ...] = (), *, seconds: float, skipped: int = 0) -> str:
    """`pytest -q` output: the progress line, each failure's section, the short summary and the tally."""
    marks = "." * passed + "F" * len(failures) + "s" * skipped
    order = marks[: passed // 2] + "".join(sorted(marks[passed // 2 :], key=lambda m: m != "F"))
    lines = []
    for start in range(0, len(order), _MARKS):  # a line of marks per terminal line, each with its progress
        row = order[start : start + _MARKS]
        lines.append(f"{row:<{_MARKS}} [{100 * (start + len(row)) // len(order):3d}%]")
    if failures:
        lines.append(_rule("FAILURES", "="))
        for failure in failures:
            lines += [_rule(failure.node_id.rsplit("::", 1)[-1], "_"), "", failure.body.rstrip(), ""]
        lines.append(_rule("short test summary info", "="))
        lines += [f"FAILED {f.node_id} - {f.reason}" for f in failures]
    tally = [f"{len(failures)} failed"] if failures else []
    tally += ([f"{passed} passed"] if passed or not failures else []) + ([f"{skipped} skipped"] if skipped else [])
    lines.append(f"{', '.join(tally)} in {seconds:.2f}s")
    return "\n".join(lines)


def go_test(packages: tuple[tuple[str, float | None], ...], failure: str = "", failed_package: str = "") -> str:
    """`go test ./...` output: `ok` per package with its time (None: no test files), and the failing
    package's test output before its FAIL line."""
    lines: list[str] = []
    for package, seconds in packages:
        if package == failed_package:
            lines += [failure.rstrip(), "FAIL", f"FAIL\t{package}\t{seconds or 0:.3f}s"]
        elif seconds is None:
            lines.append(f"?   \t{package}\t[no test files]")
        else:
            lines.append(f"ok  \t{package}\t{seconds:.3f}s")
    if failed_package:
        lines.append("FAIL")
    return "\n".join(lines)


def vitest_run(files: tuple[tuple[str, int], ...], failure: str = "", *, seconds: float) -> str:
    """`npx vitest run` output: a line per test file (✓ passed, ❯ the failed one), the failure, the tally."""
    failed_file = failure.split(" > ", 1)[0].strip() if failure else ""
    lines = [" RUN  v2.1.8 /home/sam/code/storefront", ""]
    for name, count in files:
        mark = "❯" if name == failed_file else "✓"
        lines.append(f" {mark} {name} ({count} tests{' | 1 failed' if mark == '❯' else ''}) {int(seconds * 97)}ms")
    total = sum(count for _, count in files)
    if failure:
        lines += ["", "⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯", "", f" FAIL  {failure.rstrip()}"]
    failed = 1 if failure else 0
    file_tally = ([f"{failed} failed"] if failed else []) + (
        [f"{len(files) - failed} passed"] if files[failed:] else []
    )
    test_tally = f"{failed} failed | {total - failed} passed" if failed else f"{total} passed"
    lines += ["", f" Test Files  {' | '.join(file_tally)} ({len(files)})"]
    lines.append(f"      Tests  {test_tally} ({total})")
    lines.append(f"   Duration  {seconds:.2f}s")
    return "\n".join(lines)


def unified_diff(path: str, hunks: tuple[tuple[int, str, str], ...]) -> str:
    """`git diff` of one file: each hunk (first line, old text, new text) with a line of context cut."""
    lines = [f"diff --git a/{path} b/{path}", "index 3f2a9c1..8e41b07 100644", f"--- a/{path}", f"+++ b/{path}"]
    for start, old, new in hunks:
        removed, added = old.splitlines(), new.splitlines()
        lines.append(f"@@ -{start},{len(removed)} +{start},{len(added)} @@")
        lines += [f"-{line}" for line in removed] + [f"+{line}" for line in added]
    return "\n".join(lines)


def ripgrep(matches: tuple[tuple[str, int, str], ...]) -> str:
    """`rg -n` output: path:line:text per match."""
    return "\n".join(f"{path}:{line}:{text}" for path, line, text in matches)


def _rule(title: str, char: str) -> str:
    side = max(3, (_WIDTH - len(title) - 2) // 2)
    return f"{char * side} {title} {char * side}"
