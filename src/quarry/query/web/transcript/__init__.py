"""A session's transcript: the messages the web reader shows and `quarry export html|markdown` writes.

reading.py reads a page (or all) of a session's events through the session API and the messages they
became (ResolveRef); layout.py lays them out (messages, notes, shadowed runs, compaction boundaries,
forks) into the view model of view.py, with parts.py (a message's blocks), header.py (the session, its
lineage) and resume.py (the agent's resume command); files.py renders it as one self-contained HTML file
with the reader's own templates, markdown.py as Markdown. It works from the API's messages alone (the
Source of reading.py), so `quarry export` reads a remote cluster's sessions over gRPC and renders them
with the same code as the page.
"""
