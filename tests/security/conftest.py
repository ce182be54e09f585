"""Fixtures the security tests share."""

from tests.security.team_cluster import teams  # noqa: F401 (a fixture: a cluster two teams share)
