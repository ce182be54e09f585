from quarry.cli.main import with_default_command


def test_a_query_without_a_command_is_a_search():
    assert with_default_command(["sqlite locking"]) == ["search", "sqlite locking"]
    assert with_default_command(["--format", "json", "messages where role:user"]) == [
        "--format", "json", "search", "messages where role:user",
    ]  # fmt: skip
    assert with_default_command(["--home", "/tmp/q", "status"]) == ["--home", "/tmp/q", "status"]
    assert with_default_command(["up", "--detach"]) == ["up", "--detach"]
    assert with_default_command(["--help"]) == ["--help"]


def test_search_options_without_the_command_are_a_search():
    assert with_default_command(["--lane", "actions", "pytest"]) == ["search", "--lane", "actions", "pytest"]
    assert with_default_command(["--format", "json", "--lexical", "sqlite"]) == [
        "--format", "json", "search", "--lexical", "sqlite",
    ]  # fmt: skip
    assert with_default_command(["--plain", "runs of heavy rain?"]) == ["search", "--plain", "runs of heavy rain?"]
    assert with_default_command(["--explain", "--semantic", "flaky network"]) == [
        "--explain", "search", "--semantic", "flaky network",
    ]  # fmt: skip
