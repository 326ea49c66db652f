"""``rlv sandbox doctor`` through the core CLI's plugin hook."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rl_verifier.cli.app import cli
from rl_verifier_sandbox import plugin

pytestmark = pytest.mark.requires("bwrap")


def test_doctor_json() -> None:
    plugin.register_commands(cli)
    res = CliRunner().invoke(cli, ["sandbox", "doctor", "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["backends"]["bwrap"]["works"]
    assert report["backends"]["process"]["isolates"] is False
    checks = {c["name"]: c["ok"] for c in report["checks"]}
    assert all(checks.values()), checks
    assert {"network_off", "process_limit", "memory_limit", "uid_not_root"} <= set(checks)


def test_doctor_text() -> None:
    plugin.register_commands(cli)
    res = CliRunner().invoke(cli, ["sandbox", "doctor"])
    assert res.exit_code == 0 and "enforced on bwrap" in res.output


def test_doctor_fails_when_the_backend_cannot_enforce_limits() -> None:
    plugin.register_commands(cli)
    res = CliRunner().invoke(cli, ["sandbox", "doctor", "--backend", "process"])
    assert res.exit_code == 1, res.output  # the plain-process fallback isolates nothing
    assert "NOT" in res.output


def test_doctor_refuses_an_unknown_backend() -> None:
    plugin.register_commands(cli)
    res = CliRunner().invoke(cli, ["sandbox", "doctor", "--backend", "nosuch"])
    assert res.exit_code == 2 and "'nosuch' is not one of" in res.output
