"""The search vocabulary, declared once: lanes, the channels they rank with, fusion methods and their
defaults. Every node, the CLI and the clients import these names; none spells them again.

- A **lane** is what a search request asks for (`SearchRequest.lane`, or `lane:` in a compact query):
  `auto` (chosen from the query: docs/searching.md), `dialogue` (BM25 over what people and models
  said), `actions` (BM25 over tool calls and their output), `semantic` (nearest messages by meaning)
  and `hybrid` (the three channels fused).
- A **channel** is one ranking a lane is made of: `text` (the dialogue lane's), `action` (the actions
  lane's) and `vector` (the semantic lane's). Fusion weights name channels.
- **Fusion** (docs/search-api.md#fusion): Reciprocal Rank Fusion at k = 60, or min-max normalization of
  the channels' scores; each channel weighs DEFAULT_WEIGHT unless the request says otherwise.
"""

from __future__ import annotations

AUTO, DIALOGUE, ACTIONS, SEMANTIC, HYBRID = "auto", "dialogue", "actions", "semantic", "hybrid"
LANES = (AUTO, DIALOGUE, ACTIONS, SEMANTIC, HYBRID)
LEXICAL_LANES = (DIALOGUE, ACTIONS)  # ranked by BM25 on the index nodes
VECTOR_LANES = (SEMANTIC, HYBRID)  # need the vector node's embedder and vectors

TEXT, ACTION, VECTOR = "text", "action", "vector"
CHANNELS: dict[str, tuple[str, ...]] = {
    DIALOGUE: (TEXT,),
    ACTIONS: (ACTION,),
    SEMANTIC: (VECTOR,),
    HYBRID: (TEXT, ACTION, VECTOR),
}
LEXICAL_CHANNELS = (TEXT, ACTION)

RRF, MINMAX = "rrf", "minmax"
FUSION_METHODS = (RRF, MINMAX)
RRF_K = 60  # Reciprocal Rank Fusion's rank constant: score = sum of w / (k + rank)
DEFAULT_WEIGHT = 1.0  # a channel's fusion weight when the request names none
