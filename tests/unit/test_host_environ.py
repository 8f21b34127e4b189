"""Frozen, the agents flowproof starts get the user's environment, not the bootloader's."""

from __future__ import annotations

import sys

import pytest

from flowproof.drivers.env import agent_environment, proxy_handles
from flowproof.guards.capability import Capability
from flowproof.host.environ import host_environ

BOOTLOADER = {
    "PATH": "/usr/bin",
    "LD_LIBRARY_PATH": "/opt/flowproof/_internal",
    "_PYI_ARCHIVE_FILE": "/opt/flowproof/flowproof",
    "_PYI_PARENT_PROCESS_LEVEL": "1",
    "_PYI_LINUX_PROCESS_NAME": "flowproof",
}


def test_frozen_the_bootloader_variables_are_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert host_environ(BOOTLOADER) == {"PATH": "/usr/bin"}


def test_frozen_the_users_own_library_path_is_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    environ = {**BOOTLOADER, "LD_LIBRARY_PATH_ORIG": "/home/me/lib"}
    assert host_environ(environ) == {"PATH": "/usr/bin", "LD_LIBRARY_PATH": "/home/me/lib"}


def test_from_source_nothing_is_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(sys, "frozen", raising=False)
    assert host_environ(BOOTLOADER) == BOOTLOADER


def test_the_agent_environment_is_built_on_the_host_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    env = agent_environment(BOOTLOADER, proxy_handles(8123, Capability()), "hi", {})
    assert "LD_LIBRARY_PATH" not in env and not any(name.startswith("_PYI_") for name in env)
    assert env["PATH"] == "/usr/bin" and env["FLOWPROOF_PROMPT"] == "hi"


def test_lent_variables_are_set_for_the_block_and_put_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import os

    from flowproof.host.environ import lent

    monkeypatch.setenv("FLOWPROOF_TEST_KEPT", "before")
    monkeypatch.delenv("FLOWPROOF_TEST_NEW", raising=False)
    with lent({"FLOWPROOF_TEST_KEPT": "during", "FLOWPROOF_TEST_NEW": "during"}):
        assert os.environ["FLOWPROOF_TEST_KEPT"] == os.environ["FLOWPROOF_TEST_NEW"] == "during"
    assert os.environ["FLOWPROOF_TEST_KEPT"] == "before"
    assert "FLOWPROOF_TEST_NEW" not in os.environ
