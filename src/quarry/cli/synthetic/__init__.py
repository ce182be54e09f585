"""A generator of realistic synthetic coding-agent sessions, and a writer of them as Claude Code logs.

`bench/` uses it to build the benchmark corpus (and tests, their large archives): benchmark figures are
compared across runs, so its output must not change. It is deterministic: the same `messages` and `seed=`
give the same sessions, byte for byte. The archive `make run` ingests on a machine without agent logs, for
people to read, is another one: `quarry.cli.sample_archive`.

Text is drawn from a fixed lexicon (common English, programming terms, identifiers, file names and a few
two-word collocations) with a Zipf-Mandelbrot distribution, so a few function words dominate and most
terms are rare; each session also has a topic (a cluster of related programming terms) that its
messages keep returning to, so two-term queries find sessions about that topic. Random choices come
from large numpy batches consumed through cursors, not from one generator call per word: 1M messages
take about a minute on one core.

The package's modules, by job: `vocabulary` (the lexicon and the scenery tables), `draws` (the random
choices), `generator` (the sessions) and `claude_code` (their JSON Lines logs). What other code uses is
importable from the package itself.
"""

from quarry.cli.synthetic.claude_code import session_records, write_claude_code_archive
from quarry.cli.synthetic.generator import ORIGIN, generate_sessions, session_sizes
from quarry.cli.synthetic.vocabulary import COLLOCATIONS, FUNCTION_WORDS, LEXICON, TOPICS

__all__ = [
    "COLLOCATIONS",
    "FUNCTION_WORDS",
    "LEXICON",
    "ORIGIN",
    "TOPICS",
    "generate_sessions",
    "session_records",
    "session_sizes",
    "write_claude_code_archive",
]
