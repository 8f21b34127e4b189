"""NO_PROXY/no_proxy gain loopback; proxy variables are described without their credentials."""

from __future__ import annotations

import pytest

from flowproof.host.proxy_environ import ProxySetting, loopback_direct, proxy_settings

LOOPBACK = "127.0.0.1,localhost,::1"


def test_loopback_is_set_in_both_spellings_when_the_user_set_neither() -> None:
    env = loopback_direct({"PATH": "/bin"})
    assert env == {"PATH": "/bin", "NO_PROXY": LOOPBACK, "no_proxy": LOOPBACK}


def test_the_users_entries_come_first_and_are_kept() -> None:
    env = loopback_direct({"NO_PROXY": "corp.example.test,.internal.test"})
    assert env["NO_PROXY"] == f"corp.example.test,.internal.test,{LOOPBACK}"


def test_one_spelling_set_gives_the_other_the_same_entries() -> None:
    """Python prefers no_proxy: loopback alone there would hide the user's NO_PROXY."""
    env = loopback_direct({"NO_PROXY": "corp.example.test"})
    assert env["no_proxy"] == env["NO_PROXY"] == f"corp.example.test,{LOOPBACK}"
    env = loopback_direct({"no_proxy": "corp.example.test"})
    assert env["NO_PROXY"] == env["no_proxy"] == f"corp.example.test,{LOOPBACK}"


def test_each_spelling_keeps_its_own_list_when_both_are_set() -> None:
    env = loopback_direct({"NO_PROXY": "a.example.test", "no_proxy": "b.example.test"})
    assert env["NO_PROXY"] == f"a.example.test,{LOOPBACK}"
    assert env["no_proxy"] == f"b.example.test,{LOOPBACK}"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("localhost", "localhost,127.0.0.1,::1"),
        ("LOCALHOST, 127.0.0.1", "LOCALHOST, 127.0.0.1,::1"),
        ("corp.example.test,", f"corp.example.test,{LOOPBACK}"),
        (LOOPBACK, LOOPBACK),
        (" , ", LOOPBACK),
        ("", LOOPBACK),
        ("*", "*"),
    ],
)
def test_no_duplicates_and_a_wildcard_is_left_alone(given: str, expected: str) -> None:
    assert loopback_direct({"NO_PROXY": given})["NO_PROXY"] == expected


def test_applying_it_twice_changes_nothing() -> None:
    once = loopback_direct({"no_proxy": "corp.example.test"})
    assert loopback_direct(once) == once


def test_the_input_is_not_changed() -> None:
    environ = {"NO_PROXY": "corp.example.test"}
    loopback_direct(environ)
    assert environ == {"NO_PROXY": "corp.example.test"}


@pytest.mark.parametrize(
    ("value", "host"),
    [
        ("http://user:s3cret-pass@proxy.corp.test:3128", "proxy.corp.test:3128"),
        ("proxy.corp.test:8080", "proxy.corp.test:8080"),
        ("socks5h://u:p@[2001:db8::1]:1080/", "[2001:db8::1]:1080"),
        ("https://proxy.corp.test", "proxy.corp.test"),
        ("http://u:p@proxy.corp.test:notaport", ""),
        ("http://[s3cret", ""),
    ],
)
def test_a_proxy_is_shown_by_host_never_by_its_credentials(value: str, host: str) -> None:
    (setting,) = proxy_settings({"HTTPS_PROXY": value})
    assert setting == ProxySetting("HTTPS_PROXY", host)
    assert "s3cret" not in setting.host and "u:p" not in setting.host


def test_every_set_proxy_variable_is_named_in_order_and_empty_ones_are_not() -> None:
    environ = {
        "all_proxy": "socks5://proxy.corp.test:1080",
        "HTTP_PROXY": "http://proxy.corp.test:3128",
        "https_proxy": " ",
        "NO_PROXY": "corp.example.test",
    }
    assert [s.name for s in proxy_settings(environ)] == ["HTTP_PROXY", "all_proxy"]
    assert proxy_settings({}) == ()
