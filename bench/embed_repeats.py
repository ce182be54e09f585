"""How many of the texts the vector node embeds repeat an earlier one (issue 13), on real agent logs.

    python bench/embed_repeats.py [--logs ../shared/real-logs]

Parses every file under the folder as `quarry ingest` would (format found from content), takes each
session's embedded dialogue items as the index node's feed hands them to the vector node
(quarry.core.dialogue.dialogue_items), and counts the texts, the distinct ones, and so the share the
vector node now answers from a stored vector instead of embedding again (src/quarry/vector/reuse.py).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from quarry.core.dialogue import dialogue_items
from quarry.ingest.discover import iter_source_files
from quarry.ingest.parse import parse_bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "real-logs")
    args = parser.parse_args()
    texts: Counter[str] = Counter()
    by_format: dict[str, Counter[str]] = {}
    for path in iter_source_files([args.logs]):
        parsed = parse_bytes(path.read_bytes(), str(path))
        for session in parsed.sessions:
            for item in dialogue_items(session):
                texts[item.text] += 1
                by_format.setdefault(parsed.format or "?", Counter())[item.text] += 1
    total, distinct = sum(texts.values()), len(texts)
    print(f"{args.logs}: {total} texts to embed, {distinct} distinct: {1 - distinct / max(total, 1):.1%} repeats")
    for name, counts in sorted(by_format.items()):
        n, d = sum(counts.values()), len(counts)
        print(f"  {name}: {n} texts, {d} distinct ({1 - d / max(n, 1):.1%} repeats)")
    for text, count in texts.most_common(5):
        print(f"  x{count}: {text[:70]!r}")


if __name__ == "__main__":
    main()
