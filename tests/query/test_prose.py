"""What a search read as prose runs with where the caller set nothing else (quarry.query.prose)."""

from __future__ import annotations

import pytest

from quarry.query import controls
from quarry.query.prose import (
    ACTIONS_WEIGHT,
    OTHER_SCRIPT_VECTOR_WEIGHT,
    PROSE_ADMISSION,
    mostly_other_script,
    prose_weights,
    speaks_of_tool_work,
)
from quarry.v1 import query_pb2

HYBRID = ("text", "action", "vector")


@pytest.mark.parametrize(
    "text",
    [
        "xcodebuild returned non-zero exit status 65",
        "edit src/app/settings.page.ts so it compiles",
        "ChunkLoadError while loading a chunk",
        "git push --force rewrote main",
        "the tests fail after the upgrade",
        "ENOENT on the config file",
        "ChatGPT no pudo analizar mi Excel, falló",
        "构建时报错",
    ],
)
def test_text_about_tools_work_lets_the_actions_channel_weigh_in(text: str) -> None:
    assert speaks_of_tool_work(text)
    assert prose_weights(text, HYBRID)["action"] == ACTIONS_WEIGHT


@pytest.mark.parametrize(
    "text",
    [
        "US import duties on a wheeled garbage bin from a Chinese supplier",
        "a formal email proposing a meeting today or tomorrow",
        "replace repeated verbs in my resume bullets with stronger ones",
    ],
)
def test_other_prose_leaves_the_actions_channel_out(text: str) -> None:
    assert not speaks_of_tool_work(text)
    assert prose_weights(text, HYBRID) == {"text": 1.0, "action": 0.0, "vector": 1.0}


def test_text_mostly_in_another_script_weighs_the_english_vectors_less() -> None:
    assert mostly_other_script("Pythonで線形回帰のコードをキャンバスに書いてほしい")
    assert mostly_other_script("поради щодо ламп для запису відео")
    assert not mostly_other_script("especificación de una plataforma de plugins con inyección")
    assert not mostly_other_script("fix the Ghostty 字体")  # mostly Latin letters
    assert prose_weights("поради щодо ламп", HYBRID)["vector"] == OTHER_SCRIPT_VECTOR_WEIGHT
    assert prose_weights("поради щодо ламп", ("text",)) == {"text": 1.0}


def test_prose_fuses_by_min_max_with_its_weights_and_admits_any_word_unless_the_caller_says_otherwise() -> None:
    prose = controls.validate(None, "hybrid", True, prose="the tests fail after the upgrade")
    assert (prose.method, prose.weights) == ("minmax", {"text": 1.0, "action": ACTIONS_WEIGHT, "vector": 1.0})
    assert prose.lexical_admission == PROSE_ADMISSION
    language = controls.validate(None, "hybrid", True)
    assert (language.method, language.weights) == ("rrf", {"text": 1.0, "action": 1.0, "vector": 1.0})
    assert language.lexical_admission is None

    rrf = query_pb2.SearchControls(fusion=query_pb2.Fusion(params=query_pb2.FusionParams(rank_constant=20)))
    assert controls.validate(rrf, "hybrid", True, prose="slow tests").method == "rrf"  # an RRF parameter
    chosen = query_pb2.SearchControls(
        fusion=query_pb2.Fusion(method="rrf", params=query_pb2.FusionParams(weights={"action": 2.0}))
    )
    effective = controls.validate(chosen, "hybrid", True, prose="slow tests")
    assert (effective.method, effective.weights["action"]) == ("rrf", 2.0)
    assert controls.validate(None, "dialogue", True, prose="slow tests").method == "rrf"  # nothing to fuse
