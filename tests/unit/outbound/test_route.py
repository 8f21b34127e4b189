"""Which proxy record goes through, from the environment, rule by rule (outbound/route.py)."""

from __future__ import annotations

import pytest

from flowproof.core.errors import ConfigError
from flowproof.guards.redaction import proxy_credentials
from flowproof.outbound.route import ProxyRoutes, UnusableProxy

CORP = "http://proxy.corp.test:3128"
OTHER = "http://other.corp.test:8080"

# (environment, upstream URL, the proxy URL and its variable, or None for direct)
CHOICES: list[tuple[str, dict[str, str], str, tuple[str, str] | None]] = [
    ("nothing set goes direct", {}, "https://api.openai.com/v1", None),
    (
        "https upstream: HTTPS_PROXY",
        {"HTTPS_PROXY": CORP},
        "https://api.x.test/v1",
        (CORP, "HTTPS_PROXY"),
    ),
    (
        "https upstream: https_proxy",
        {"https_proxy": CORP},
        "https://api.x.test/v1",
        (CORP, "https_proxy"),
    ),
    ("https upstream ignores HTTP_PROXY", {"HTTP_PROXY": CORP}, "https://api.x.test/v1", None),
    (
        "http upstream: HTTP_PROXY",
        {"HTTP_PROXY": CORP},
        "http://api.x.test/v1",
        (CORP, "HTTP_PROXY"),
    ),
    (
        "http upstream: http_proxy",
        {"http_proxy": CORP},
        "http://api.x.test/v1",
        (CORP, "http_proxy"),
    ),
    ("http upstream ignores HTTPS_PROXY", {"HTTPS_PROXY": CORP}, "http://api.x.test/v1", None),
    (
        "lower case wins (https)",
        {"HTTPS_PROXY": OTHER, "https_proxy": CORP},
        "https://a.test",
        (CORP, "https_proxy"),
    ),
    (
        "lower case wins (http)",
        {"HTTP_PROXY": OTHER, "http_proxy": CORP},
        "http://a.test",
        (CORP, "http_proxy"),
    ),
    (
        "lower case wins (all)",
        {"ALL_PROXY": OTHER, "all_proxy": CORP},
        "https://a.test",
        (CORP, "all_proxy"),
    ),
    (
        "empty lower case hides upper",
        {"HTTPS_PROXY": OTHER, "https_proxy": ""},
        "https://a.test",
        None,
    ),
    ("ALL_PROXY as fallback (https)", {"ALL_PROXY": CORP}, "https://a.test", (CORP, "ALL_PROXY")),
    ("ALL_PROXY as fallback (http)", {"ALL_PROXY": CORP}, "http://a.test", (CORP, "ALL_PROXY")),
    (
        "scheme's own beats ALL_PROXY",
        {"ALL_PROXY": OTHER, "HTTPS_PROXY": CORP},
        "https://a.test",
        (CORP, "HTTPS_PROXY"),
    ),
    (
        "no scheme means http://",
        {"HTTPS_PROXY": "proxy.corp.test:3128"},
        "https://a.test",
        (CORP, "HTTPS_PROXY"),
    ),
    (
        "whitespace around the value",
        {"HTTPS_PROXY": f"  {CORP}\n"},
        "https://a.test",
        (CORP, "HTTPS_PROXY"),
    ),
    (
        "https:// proxy kept",
        {"HTTPS_PROXY": "https://p.test:443"},
        "https://a.test",
        ("https://p.test:443", "HTTPS_PROXY"),
    ),
    (
        "credentials kept for aiohttp",
        {"HTTPS_PROXY": "http://u:pw@p.test:3128"},
        "https://a.test",
        ("http://u:pw@p.test:3128", "HTTPS_PROXY"),
    ),
    ("localhost goes direct", {"ALL_PROXY": CORP}, "http://localhost:11434", None),
    ("a .localhost name goes direct", {"ALL_PROXY": CORP}, "http://api.localhost:8000/v1", None),
    ("127.0.0.1 goes direct", {"ALL_PROXY": CORP}, "http://127.0.0.1:8000/v1", None),
    ("all of 127/8 goes direct", {"ALL_PROXY": CORP}, "https://127.9.8.7/v1", None),
    ("::1 goes direct", {"ALL_PROXY": CORP}, "http://[::1]:8000/v1", None),
    ("mapped 127 goes direct", {"ALL_PROXY": CORP}, "http://[::ffff:127.0.0.1]:80/", None),
    (
        "localhost is not a suffix match",
        {"ALL_PROXY": CORP},
        "http://notlocalhost:80/",
        (CORP, "ALL_PROXY"),
    ),
    (
        "an address next to loopback is proxied",
        {"ALL_PROXY": CORP},
        "http://128.0.0.1/",
        (CORP, "ALL_PROXY"),
    ),
    ("a non-http URL is never proxied", {"ALL_PROXY": CORP}, "ws://a.test/", None),
]

# (NO_PROXY value, upstream URL, exempted?)
EXEMPTIONS: list[tuple[str, str, bool]] = [
    ("*", "https://api.openai.com/v1", True),
    ("a.test, *", "https://api.openai.com/v1", True),
    ("api.openai.com", "https://api.openai.com/v1", True),
    ("API.OpenAI.com", "https://api.openai.com/v1", True),
    ("openai.com", "https://api.openai.com/v1", True),
    ("openai.com", "https://openai.com/v1", True),
    ("openai.com", "https://notopenai.com/v1", False),
    (".openai.com", "https://api.openai.com/v1", True),
    (".openai.com", "https://openai.com/v1", True),
    ("*.openai.com", "https://api.openai.com/v1", True),
    ("api.openai.com", "https://openai.com/v1", False),
    ("api.openai.com.", "https://api.openai.com./v1", True),
    ("a.test,api.openai.com", "https://api.openai.com/v1", True),
    ("a.test api.openai.com", "https://api.openai.com/v1", True),
    ("a.test ,\tapi.openai.com", "https://api.openai.com/v1", True),
    ("a.test", "https://api.openai.com/v1", False),
    ("", "https://api.openai.com/v1", False),
    ("198.51.100.7", "https://198.51.100.7/v1", True),
    ("198.51.100.7", "https://198.51.100.8/v1", False),
    ("198.51.100.0/24", "https://198.51.100.200/v1", True),
    ("198.51.100.0/24", "https://203.0.113.1/v1", False),
    ("198.51.100.9/24", "https://198.51.100.200/v1", True),  # host bits set, as people write it
    ("2001:db8::1", "https://[2001:db8::1]/v1", True),
    ("[2001:db8::1]", "https://[2001:db8::1]/v1", True),
    ("2001:db8::/32", "https://[2001:db8:5::9]/v1", True),
    ("2001:db8::/32", "https://[2001:db9::9]/v1", False),
    ("198.51.100.0/24", "https://host.test/v1", False),
    ("api.x.test:8443", "https://api.x.test:8443/v1", True),
    ("api.x.test:8443", "https://api.x.test/v1", False),
    ("api.x.test:443", "https://api.x.test/v1", True),
    ("api.x.test:80", "http://api.x.test/v1", True),
    ("198.51.100.7:8443", "https://198.51.100.7:8443/", True),
    ("198.51.100.7:8443", "https://198.51.100.7/", False),
    ("[2001:db8::1]:8443", "https://[2001:db8::1]:8443/", True),
    ("[2001:db8::1]:8443", "https://[2001:db8::1]:9443/", False),
]


def route(environ: dict[str, str], url: str) -> tuple[str, str] | None:
    proxy = ProxyRoutes.from_environ(environ).proxy_for(url)
    return None if proxy is None else (proxy.url, proxy.variable)


@pytest.mark.parametrize(
    ("environ", "url", "expected"), [c[1:] for c in CHOICES], ids=[c[0] for c in CHOICES]
)
def test_the_proxy_chosen(
    environ: dict[str, str], url: str, expected: tuple[str, str] | None
) -> None:
    assert route(environ, url) == expected


@pytest.mark.parametrize(("no_proxy", "url", "exempt"), EXEMPTIONS)
@pytest.mark.parametrize("variable", ["NO_PROXY", "no_proxy"])
def test_no_proxy(variable: str, no_proxy: str, url: str, exempt: bool) -> None:
    environ = {"HTTPS_PROXY": CORP, "HTTP_PROXY": CORP, variable: no_proxy}
    assert route(environ, url) == (
        None if exempt else (CORP, "HTTPS_PROXY" if "https" in url else "HTTP_PROXY")
    )


def test_lower_case_no_proxy_wins() -> None:
    environ = {"HTTPS_PROXY": CORP, "NO_PROXY": "a.test", "no_proxy": "b.test"}
    assert route(environ, "https://b.test/") is None
    assert route(environ, "https://a.test/") == (CORP, "HTTPS_PROXY")


@pytest.mark.parametrize("scheme", ["socks5", "socks5h", "socks4", "SOCKS5"])
def test_a_socks_proxy_that_applies_is_a_configuration_error(scheme: str) -> None:
    routes = ProxyRoutes.from_environ({"ALL_PROXY": f"{scheme}://u:s3cret-pass@p.test:1080"})
    with pytest.raises(UnusableProxy) as raised:
        routes.proxy_for("https://api.openai.com/v1")
    message = str(raised.value)
    assert isinstance(raised.value, ConfigError)
    assert "ALL_PROXY" in message and "SOCKS" in message and "https://api.openai.com" in message
    assert "s3cret-pass" not in message and "***@p.test:1080" in message


def test_a_socks_proxy_that_does_not_apply_is_no_error() -> None:
    routes = ProxyRoutes.from_environ({"ALL_PROXY": "socks5://p.test:1080", "NO_PROXY": "a.test"})
    assert routes.proxy_for("http://127.0.0.1:11434/v1") is None
    assert routes.proxy_for("https://a.test/v1") is None
    routes.check(["http://localhost:1/", "https://a.test/"])
    with pytest.raises(UnusableProxy):
        routes.check(["http://localhost:1/", "https://b.test/"])


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("ftp://p.test:21", "ftp:// proxy"),
        ("http://", "not a proxy URL"),
        ("http://p.test:99999", "not a proxy URL"),
    ],
)
def test_a_proxy_flowproof_cannot_use_names_its_variable(value: str, problem: str) -> None:
    routes = ProxyRoutes.from_environ({"https_proxy": value})
    with pytest.raises(UnusableProxy, match=problem) as raised:
        routes.proxy_for("https://a.test/")
    assert "https_proxy" in str(raised.value)


@pytest.mark.parametrize(
    ("value", "shown", "credential"),
    [
        ("http://user:pa%40ss@p.test:3128", "http://***@p.test:3128", "pa@ss"),
        ("http://tok3n-only@p.test:3128", "http://***@p.test:3128", "tok3n-only"),
        ("user:pw@p.test:3128", "http://***@p.test:3128", "pw"),
        ("http://p.test:3128", "http://p.test:3128", None),
    ],
)
def test_credentials_are_used_but_never_shown(
    value: str, shown: str, credential: str | None
) -> None:
    routes = ProxyRoutes.from_environ({"HTTPS_PROXY": value})
    proxy = routes.proxy_for("https://a.test/")
    assert proxy is not None
    assert proxy.shown == shown
    assert proxy.described == f"the proxy {shown} (HTTPS_PROXY)"
    assert proxy.credential == credential
    assert proxy_credentials({"HTTPS_PROXY": value}) == (
        {"HTTPS_PROXY": credential} if credential else {}
    )
    if credential:
        assert credential not in repr(proxy) and credential not in repr(routes)
