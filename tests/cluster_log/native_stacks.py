"""Every thread's native stack of a node whose interpreter stopped, for a failed test's report.

faulthandler's dump (in the node's log) names each Python thread's line, but not what the thread
holding the interpreter waits on inside native code (a SQLite or Tantivy lock, the GIL): gdb, attached
for a moment while the node is still stuck, names it. Without gdb on the machine the report says so."""

from __future__ import annotations

import re
import shutil
import subprocess

GDB_TIMEOUT_S = 60
FRAMES_PER_THREAD = 25
# "#3  0x00007f… in take_gil (tstate=…) at Python/ceval_gil.c:283": the frame's number, function and place.
_FRAME = re.compile(r"(#\d+)\s+(?:0x[0-9a-f]+ in )?(\S+) \(.*\) (?:at|from) (\S+)$")


def native_stacks(pid: int) -> str:
    gdb = shutil.which("gdb")
    if gdb is None:
        return "(gdb is not installed: no native stacks)"
    command = [gdb, "-p", str(pid), "-batch", "-nx", "-ex", "set pagination off"]
    command += ["-ex", f"thread apply all bt {FRAMES_PER_THREAD}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=GDB_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return f"(gdb did not finish within {GDB_TIMEOUT_S} s)"
    lines = [_short(line) for line in done.stdout.splitlines() if line.startswith(("Thread ", "#"))]
    return "\n".join(lines) if lines else f"(gdb printed no stack: {done.stderr.strip()[-500:]})"


def _short(line: str) -> str:
    """A frame without its arguments (gdb prints every one, often hundreds of characters)."""
    frame = _FRAME.match(line)
    return f"{frame[1]} {frame[2]} {frame[3]}" if frame else line[:200]
