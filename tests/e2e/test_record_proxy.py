"""record reaches its upstream through the user's proxy, the way curl and the SDKs do.

Everything runs inside a network namespace that has only loopback: flowproof, the agent, the
scripted upstream and a real forward proxy (tests/upstream/connect_proxy.py). The upstream is
named `api.provider.test`, a name only the proxy resolves, so a record that bypasses the proxy
fails on the name, and nothing can leave the machine whichever way it goes. The https
upstream's certificate is signed by a CA this test makes with the `openssl` CLI, trusted
through SSL_CERT_FILE.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from tests.conftest import CliResult, agent_command, flowproof
from tests.e2e.booking import BOOKING_SCRIPT, KEY, write_spec
from tests.netns import join_netns, loopback_only_netns  # noqa: F401 (the netns fixture)
from tests.upstream.connect_proxy import ConnectProxy
from tests.upstream.scripted import ScriptedUpstream

PROVIDER = "api.provider.test"
PROXY_USER = "corp-user"
PROXY_SECRET = "pr0xy-s3cret-Zq81"

if os.geteuid() != 0 or not (shutil.which("unshare") and shutil.which("nsenter")):
    pytest.skip(
        "the proxy tests run in a network namespace: needs root, unshare and nsenter",
        allow_module_level=True,
    )


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ca.pem, and server.pem/server.key for api.provider.test signed by it."""
    folder = tmp_path_factory.mktemp("tls")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    (folder / "server.ext").write_text(
        f"subjectAltName=DNS:{PROVIDER}\nbasicConstraints=CA:FALSE\n"
        "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n"
    )
    for command in (
        ["req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2"]
        + ["-subj", "/CN=flowproof test CA", "-addext", "basicConstraints=critical,CA:TRUE"]
        + ["-addext", "keyUsage=critical,keyCertSign"],
        ["req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", f"/CN={PROVIDER}"],
        ["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key"]
        + ["-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "server.ext"],
    ):
        subprocess.run(["openssl", *command], cwd=folder, check=True, capture_output=True)
    return folder


class NamespacedUpstream(ScriptedUpstream):
    """The scripted upstream on the namespace's loopback, over TLS when given a context."""

    def start_in(self, pid: int, context: ssl.SSLContext | None = None) -> None:
        ready, loop = threading.Event(), asyncio.new_event_loop()

        async def boot() -> web.AppRunner:
            app = web.Application()
            app.router.add_post("/{tail:.*}", self._handle)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
            self.port = runner.addresses[0][1]
            return runner

        def serve() -> None:
            join_netns(pid)
            asyncio.set_event_loop(loop)
            runner = loop.run_until_complete(boot())
            ready.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=serve, name="upstream-netns", daemon=True)
        self._thread.start()
        assert ready.wait(10), "the upstream did not start"

    def stop(self) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)


@pytest.fixture
def proxy(netns: int) -> Iterator[ConnectProxy]:
    server = ConnectProxy({PROVIDER: "127.0.0.1"}, credentials=f"{PROXY_USER}:{PROXY_SECRET}")
    server.start(netns)
    yield server
    server.stop()


def start_upstream(netns: int, certificates: Path | None = None) -> NamespacedUpstream:
    context = None
    if certificates is not None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(certificates / "server.pem", certificates / "server.key")
    upstream = NamespacedUpstream(script=list(BOOKING_SCRIPT))
    upstream.start_in(netns, context)
    return upstream


def record_in(
    netns: int, project: Path, upstream_url: str, command: str | None = None, **env: str
) -> CliResult:
    write_spec(project, command=command)
    path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
    return flowproof(
        "record",
        "specs",
        cwd=project,
        env={
            "PATH": path,
            "FLOWPROOF_AGENT_UPSTREAM": upstream_url,
            "FLOWPROOF_AGENT_KEY": KEY,
            **env,
        },
        prefix=("nsenter", f"--net=/proc/{netns}/ns/net", "--"),
    )


def leaves_no_secret(project: Path, result: CliResult) -> None:
    """The proxy's password is in no output and in no file record wrote."""
    assert PROXY_SECRET not in result.output
    for path in project.rglob("*"):
        if path.is_file():
            assert PROXY_SECRET not in path.read_text(errors="replace"), path


def test_https_upstream_through_connect(
    netns: int, proxy: ConnectProxy, certificates: Path, tmp_path: Path
) -> None:
    upstream = start_upstream(netns, certificates)
    try:
        result = record_in(
            netns,
            tmp_path,
            f"https://{PROVIDER}:{upstream.port}/v1",
            HTTPS_PROXY=proxy.url(f"{PROXY_USER}:{PROXY_SECRET}"),
            SSL_CERT_FILE=str(certificates / "ca.pem"),
        )
    finally:
        upstream.stop()
    assert result.code == 0, result.output
    assert (tmp_path / "specs" / "booking.trace.json").is_file()
    tunnels = [s for s in proxy.seen if s.method == "CONNECT"]
    assert tunnels and {s.target for s in tunnels} == {f"{PROVIDER}:{upstream.port}"}, proxy.seen
    assert len(upstream.received) == 3
    assert [r.headers.get("Authorization") for r in upstream.received] == [f"Bearer {KEY}"] * 3
    leaves_no_secret(tmp_path, result)


def test_http_upstream_in_absolute_form(netns: int, proxy: ConnectProxy, tmp_path: Path) -> None:
    upstream = start_upstream(netns)
    try:
        result = record_in(
            netns,
            tmp_path,
            f"http://{PROVIDER}:{upstream.port}/v1",
            http_proxy=proxy.url(f"{PROXY_USER}:{PROXY_SECRET}"),
        )
    finally:
        upstream.stop()
    assert result.code == 0, result.output
    url = f"http://{PROVIDER}:{upstream.port}/v1/chat/completions"
    assert [(s.method, s.target) for s in proxy.seen] == [("POST", url)] * 3
    assert len(upstream.received) == 3
    leaves_no_secret(tmp_path, result)


def test_no_proxy_sends_record_direct(
    netns: int, proxy: ConnectProxy, certificates: Path, tmp_path: Path
) -> None:
    """The name is exempted, so record goes direct, where nothing resolves it: a clear line."""
    upstream = start_upstream(netns, certificates)
    try:
        result = record_in(
            netns,
            tmp_path,
            f"https://{PROVIDER}:{upstream.port}/v1",
            HTTPS_PROXY=proxy.url(f"{PROXY_USER}:{PROXY_SECRET}"),
            NO_PROXY=f"example.test,{PROVIDER}",
            SSL_CERT_FILE=str(certificates / "ca.pem"),
        )
    finally:
        upstream.stop()
    assert result.code == 1, result.output
    assert f"record could not reach the upstream https://{PROVIDER}:{upstream.port}/v1" in (
        result.output
    ), result.output
    assert proxy.seen == [] and upstream.received == []


def test_loopback_upstream_goes_direct_whatever_the_proxy(
    netns: int, proxy: ConnectProxy, tmp_path: Path
) -> None:
    upstream = start_upstream(netns)
    proxied = proxy.url(f"{PROXY_USER}:{PROXY_SECRET}")
    try:
        result = record_in(
            netns,
            tmp_path,
            upstream.base_url,
            HTTP_PROXY=proxied,
            HTTPS_PROXY=proxied,
            ALL_PROXY=proxied,
        )
    finally:
        upstream.stop()
    assert result.code == 0, result.output
    assert proxy.seen == [] and len(upstream.received) == 3


def test_an_unreachable_proxy_is_named_without_its_credentials(netns: int, tmp_path: Path) -> None:
    result = record_in(
        netns,
        tmp_path,
        f"https://{PROVIDER}/v1",
        https_proxy=f"http://{PROXY_USER}:{PROXY_SECRET}@127.0.0.1:9",
    )
    assert result.code == 1, result.output
    assert (
        "record could not reach the proxy http://***@127.0.0.1:9 (https_proxy) "
        f"(for https://{PROVIDER}/v1/chat/completions)"
    ) in result.output, result.output
    leaves_no_secret(tmp_path, result)


def test_a_socks_proxy_is_a_configuration_error(netns: int, tmp_path: Path) -> None:
    result = record_in(
        netns,
        tmp_path,
        f"https://{PROVIDER}/v1",
        ALL_PROXY=f"socks5://{PROXY_USER}:{PROXY_SECRET}@127.0.0.1:1080",
    )
    assert result.code == 2, result.output
    assert "ALL_PROXY names a SOCKS proxy (socks5://***@127.0.0.1:1080)" in result.output
    assert f"record cannot reach https://{PROVIDER}" in result.output, result.output
    assert not (tmp_path / "specs" / "booking.trace.json").exists()
    leaves_no_secret(tmp_path, result)


def test_the_proxy_password_is_hidden_wherever_the_agent_shows_it(
    netns: int, proxy: ConnectProxy, tmp_path: Path
) -> None:
    """The agent inherits the user's proxy variables, as it would outside flowproof; what it
    prints of them reaches the console and the run record with the password redacted."""
    result = record_in(
        netns,
        tmp_path,
        f"https://{PROVIDER}/v1",
        command="sh -c 'echo my proxy is $HTTPS_PROXY >&2; exit 1'",
        HTTPS_PROXY=proxy.url(f"{PROXY_USER}:{PROXY_SECRET}"),
    )
    assert result.code == 1, result.output
    shown = f"my proxy is http://{PROXY_USER}:[redacted HTTPS_PROXY]@127.0.0.1:{proxy.port}"
    assert shown in result.output, result.output
    leaves_no_secret(tmp_path, result)


def test_a_request_carrying_the_proxy_password_is_never_stored(
    netns: int, proxy: ConnectProxy, tmp_path: Path
) -> None:
    """An agent that sends its proxy URL to the model: no trace is written, as for a key."""
    upstream = start_upstream(netns)
    try:
        result = record_in(
            netns,
            tmp_path,
            upstream.base_url,
            command=f"env FLOWPROOF_PROMPT=$HTTPS_PROXY {agent_command('openai_chat_agent.py')}",
            HTTPS_PROXY=proxy.url(f"{PROXY_USER}:{PROXY_SECRET}"),
        )
    finally:
        upstream.stop()
    assert any(PROXY_SECRET in str(r.body) for r in upstream.received)  # it was sent upstream
    assert result.code == 2, result.output  # as for a record key the agent sent on
    assert "refusing to write a trace that contains the value of HTTPS_PROXY" in result.output
    assert not (tmp_path / "specs" / "booking.trace.json").exists()
    leaves_no_secret(tmp_path, result)
