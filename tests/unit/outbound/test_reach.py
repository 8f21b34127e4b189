"""How record reaches the outside is read from the flow's environment, never from the
process's: what flowproof's own environment holds later moves no connection of a flow."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowproof.core.errors import ConfigError
from flowproof.proxy.forward import Upstream

API = "https://api.openai.com/v1"


def test_the_proxy_is_the_flows_own_not_the_processs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://process-proxy.test:3128")
    direct = Upstream.from_environ({})
    proxied = Upstream.from_environ({"HTTPS_PROXY": "http://flow-proxy.test:3128"})
    assert direct.reach.proxy_for(API) is None
    assert proxied.reach.proxy_for(API) == "http://flow-proxy.test:3128"


def test_the_trusted_certificates_are_the_flows_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing = tmp_path / "missing.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(missing))
    Upstream.from_environ({})  # the process's setting is not the flow's: nothing to refuse
    with pytest.raises(ConfigError, match="SSL_CERT_FILE"):
        Upstream.from_environ({"SSL_CERT_FILE": str(missing)})
