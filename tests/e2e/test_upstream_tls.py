"""Record over TLS: the upstream's certificate is checked against what the platform trusts,
plus SSL_CERT_FILE / SSL_CERT_DIR, and an untrusted one fails the record saying how to fix it.

Every upstream here is the scripted model served over HTTPS on loopback, its certificate
signed by a CA this module makes with the `openssl` CLI. The trust-store layouts of other
distributions are built in a private mount namespace (an overlay on /etc, an empty tmpfs over
the build host's OpenSSL directory), so the host's own files are never touched.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ENGINE_VARIABLE, ROOT, CliResult, flowproof
from tests.e2e import test_mcp as mcp_flows
from tests.e2e.booking import BOOKING_SCRIPT, KEY, record, write_spec
from tests.upstream.scripted import ScriptedUpstream

pytestmark = pytest.mark.e2e

HOST_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
FROZEN = ROOT / "dist" / "flowproof" / "flowproof"
FLOWPROOF_BIN = os.environ.get("FLOWPROOF_BIN", "").strip()
"""Read before the tests' clean environment drops every FLOWPROOF_* variable."""
UNTRUSTED = "certificate verify failed: unable to get local issuer certificate"
REMEDY = "set SSL_CERT_FILE=/path/to/ca.pem in flowproof's environment"


@dataclass(frozen=True)
class Pki:
    ca: Path
    """The CA that signed the upstream's certificate."""
    other_ca: Path
    """A CA that signed nothing the tests talk to."""
    server_cert: Path
    server_key: Path
    wrong_name_cert: Path
    """Signed by `ca` too, for upstream.test only."""


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _make_ca(directory: Path, name: str) -> None:
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2",
        "-subj", f"/CN=flowproof {name}",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=directory,
    )  # fmt: skip


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A test CA, a server certificate it signed for 127.0.0.1 and localhost, and a second,
    unrelated CA."""
    if shutil.which("openssl") is None:
        pytest.skip("the TLS tests make their CA with the openssl CLI, which is not installed")
    directory = tmp_path_factory.mktemp("pki")
    _make_ca(directory, "ca")
    _make_ca(directory, "other-ca")
    _openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1",
        cwd=directory,
    )  # fmt: skip
    for name, names in (
        ("server", "IP:127.0.0.1,DNS:localhost"),
        ("wrong-name", "DNS:upstream.test"),
    ):
        (directory / f"{name}.ext").write_text(
            f"subjectAltName={names}\n"
            "basicConstraints=critical,CA:FALSE\n"
            "keyUsage=critical,digitalSignature\n"
            "extendedKeyUsage=serverAuth\n"
            "authorityKeyIdentifier=keyid\n"
        )
        _openssl(
            "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext",
            cwd=directory,
        )  # fmt: skip
    return Pki(
        directory / "ca.pem",
        directory / "other-ca.pem",
        directory / "server.pem",
        directory / "server.key",
        directory / "wrong-name.pem",
    )


@pytest.fixture(autouse=True)
def no_trust_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own SSL_CERT_FILE must not decide what these tests trust."""
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)


@pytest.fixture
def https_upstream(pki: Pki) -> Iterator[ScriptedUpstream]:
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(pki.server_cert, pki.server_key)
    server = ScriptedUpstream(script=list(BOOKING_SCRIPT), ssl_context=served)
    server.start()
    yield server
    server.stop()


def trace_of(project: Path) -> Path:
    return project / "specs" / "booking.trace.json"


def assert_recorded(result: CliResult, project: Path, upstream: ScriptedUpstream) -> None:
    assert result.code == 0, result.output
    assert trace_of(project).is_file()
    assert len(upstream.received) == 3


# --- what the variables add ---------------------------------------------------------------


def test_ssl_cert_file_names_a_ca_record_trusts(
    tmp_path: Path, pki: Pki, https_upstream: ScriptedUpstream
) -> None:
    write_spec(tmp_path)
    result = record(tmp_path, https_upstream, SSL_CERT_FILE=str(pki.ca))
    assert_recorded(result, tmp_path, https_upstream)


def test_ssl_cert_dir_is_read_whole_hashed_names_or_not(
    tmp_path: Path, pki: Pki, https_upstream: ScriptedUpstream
) -> None:
    """A folder with `company-ca.pem` in it, as a user would make one: no c_rehash needed."""
    folder = tmp_path / "cas"
    folder.mkdir()
    shutil.copy(pki.ca, folder / "company-ca.pem")
    (folder / "README").write_text("the CAs our proxy uses\n")
    write_spec(tmp_path)
    result = record(tmp_path, https_upstream, SSL_CERT_DIR=str(folder))
    assert_recorded(result, tmp_path, https_upstream)


# --- what an untrusted certificate does ----------------------------------------------------


def test_an_untrusted_certificate_fails_the_record_saying_how_to_trust_its_ca(
    tmp_path: Path, https_upstream: ScriptedUpstream
) -> None:
    write_spec(tmp_path)
    result = record(tmp_path, https_upstream)
    assert result.code == 1, result.output
    line = f"record does not trust the certificate of 127.0.0.1:{https_upstream.port} ({UNTRUSTED})"
    assert line in result.stderr, result.output
    assert REMEDY in result.stderr and "add the CA to the system trust store" in result.stderr
    assert "Traceback" not in result.output
    assert not trace_of(tmp_path).exists()
    assert https_upstream.received == []  # nothing was sent over the unverified connection


def test_a_certificate_for_another_name_says_so(tmp_path: Path, pki: Pki) -> None:
    """Trusting a CA would not help here: the remedy is the URL."""
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(pki.wrong_name_cert, pki.server_key)
    upstream = ScriptedUpstream(script=list(BOOKING_SCRIPT), ssl_context=served)
    upstream.start()
    try:
        write_spec(tmp_path)
        result = record(tmp_path, upstream, SSL_CERT_FILE=str(pki.ca))
    finally:
        upstream.stop()
    assert result.code == 1, result.output
    assert f"record does not trust the certificate of 127.0.0.1:{upstream.port}" in result.stderr
    assert "the certificate was issued for another name" in result.stderr, result.output
    assert upstream.received == []


def test_a_missing_ssl_cert_file_is_a_setting_to_fix_before_any_agent_runs(
    tmp_path: Path, https_upstream: ScriptedUpstream
) -> None:
    write_spec(tmp_path)
    missing = tmp_path / "no-such-ca.pem"
    result = record(tmp_path, https_upstream, SSL_CERT_FILE=str(missing))
    assert result.code == 2, result.output
    assert f"SSL_CERT_FILE={missing}: no such file" in result.stderr, result.output
    assert "Traceback" not in result.output
    assert https_upstream.received == []


def test_an_ssl_cert_file_with_no_certificate_is_a_setting_to_fix(
    tmp_path: Path, https_upstream: ScriptedUpstream
) -> None:
    write_spec(tmp_path)
    garbage = tmp_path / "ca.pem"
    garbage.write_text("not a certificate\n")
    result = record(tmp_path, https_upstream, SSL_CERT_FILE=str(garbage))
    assert result.code == 2, result.output
    assert f"{garbage} (from SSL_CERT_FILE) cannot be read as PEM certificates" in result.stderr
    assert "Traceback" not in result.output


def test_a_real_mcp_server_with_an_untrusted_certificate_fails_the_record(
    tmp_path: Path, https_upstream: ScriptedUpstream
) -> None:
    address = f"https://127.0.0.1:{https_upstream.port}/mcp"
    agent = mcp_flows.python_agent("classic")
    mcp_flows.write_spec(tmp_path, agent, mcp_flows.url(address), mcp_flows.TASK, name="booking")
    result = mcp_flows.record(tmp_path)
    assert result.code == 1, result.output
    line = (
        f"the real MCP server at {address}: record does not trust the certificate of "
        f"127.0.0.1:{https_upstream.port} ({UNTRUSTED}); if your company's CA"
    )
    assert line in result.stderr, result.output
    assert "Traceback" not in result.output
    assert not trace_of(tmp_path).exists()


# --- the system store, in the layouts of other distributions ------------------------------

NAMESPACE_MISSING = (
    None
    if os.geteuid() == 0 and shutil.which("unshare") and HOST_BUNDLE.is_file()
    else "the trust-store layouts are built in a private mount namespace: needs root, "
    f"unshare and a Debian-style {HOST_BUNDLE} to start from"
)
needs_namespace = pytest.mark.skipif(NAMESPACE_MISSING is not None, reason=NAMESPACE_MISSING or "")

LAYOUT_SCRIPT = """\
set -e
work=$1 bundle=$2 layout=$3
shift 3
mkdir -p "$work/upper" "$work/scratch"
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$work/upper,workdir=$work/scratch" /etc
case $layout in
  debian) cp "$bundle" /etc/ssl/certs/ca-certificates.crt ;;
  *)
    # another distribution: no Debian /etc/ssl, no build-host OpenSSL directory
    rm -rf /etc/ssl /etc/pki
    mount -t tmpfs -o size=1m,mode=0755 tmpfs /usr/lib/ssl
    mkdir -p "$(dirname "$layout")"
    cp "$bundle" "$layout" ;;
esac
exec "$@"
"""
LAYOUTS = {
    "fedora": "/etc/pki/tls/certs/ca-bundle.crt",
    "rhel": "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "opensuse": "/etc/ssl/ca-bundle.pem",
    "alpine": "/etc/ssl/cert.pem",
}


def frozen_engine() -> str | None:
    """The frozen engine to run: FLOWPROOF_TEST_ENGINE (`make channels` sets it to the npm
    launcher, which starts the frozen engine), else FLOWPROOF_BIN, else `make freeze`'s."""
    chosen = os.environ.get(ENGINE_VARIABLE, "").strip() or FLOWPROOF_BIN
    if chosen:
        return chosen
    return str(FROZEN) if FROZEN.is_file() else None


@pytest.fixture(params=["source", "frozen"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """`python -m flowproof` (this checkout), or the frozen engine every channel ships."""
    if request.param == "source":
        monkeypatch.setenv(ENGINE_VARIABLE, "")
        return "source"
    return _use_frozen(monkeypatch)


def _use_frozen(monkeypatch: pytest.MonkeyPatch) -> str:
    chosen = frozen_engine()
    if chosen is None:
        pytest.skip(
            f"no frozen engine: `make freeze` builds {FROZEN.relative_to(ROOT)} "
            "(or set FLOWPROOF_BIN or FLOWPROOF_TEST_ENGINE to one)"
        )
    monkeypatch.setenv(ENGINE_VARIABLE, chosen)
    return chosen


def record_in_layout(
    project: Path, upstream: ScriptedUpstream, bundle: Path, layout: str, **env: str
) -> CliResult:
    """Record with /etc seen through an overlay laid out as `layout` (a name from LAYOUTS or
    `debian`), the system bundle being `bundle`; the host's /etc is left as it was."""
    before = (hashlib.sha256(HOST_BUNDLE.read_bytes()).hexdigest(), Path("/etc/pki").exists())
    work = project / "namespace"
    work.mkdir()
    prefix = ("unshare", "-m", "--propagation", "private", "sh", "-c", LAYOUT_SCRIPT, "layout")
    args = (str(work), str(bundle), LAYOUTS.get(layout, layout))
    result = record_with_prefix(project, upstream, (*prefix, *args), **env)
    after = (hashlib.sha256(HOST_BUNDLE.read_bytes()).hexdigest(), Path("/etc/pki").exists())
    assert after == before, "the layout leaked out of its namespace"
    return result


def record_with_prefix(
    project: Path, upstream: ScriptedUpstream, prefix: tuple[str, ...], **env: str
) -> CliResult:
    return flowproof(
        "record",
        "specs",
        cwd=project,
        env={"FLOWPROOF_AGENT_UPSTREAM": upstream.base_url, "FLOWPROOF_AGENT_KEY": KEY, **env},
        prefix=prefix,
    )


def bundle_with(tmp_path: Path, ca: Path) -> Path:
    """The host's system bundle with the test CA appended, as `update-ca-certificates` (or
    `update-ca-trust`) would leave it after a CA is added."""
    bundle = tmp_path / "system-bundle.pem"
    bundle.write_bytes(HOST_BUNDLE.read_bytes() + b"\n" + ca.read_bytes())
    return bundle


@needs_namespace
def test_a_ca_added_to_the_system_bundle_is_trusted_with_no_variable(
    tmp_path: Path, pki: Pki, https_upstream: ScriptedUpstream, engine: str
) -> None:
    write_spec(tmp_path)
    bundle = bundle_with(tmp_path, pki.ca)
    result = record_in_layout(tmp_path, https_upstream, bundle, "debian")
    assert_recorded(result, tmp_path, https_upstream)


@needs_namespace
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_another_distributions_system_bundle_is_trusted(
    tmp_path: Path, pki: Pki, https_upstream: ScriptedUpstream, layout: str, engine: str
) -> None:
    """The build host's OpenSSL directory is gone (as it is for the frozen engine on any
    distribution but Debian's): the bundle is found where `layout` keeps it."""
    write_spec(tmp_path)
    result = record_in_layout(tmp_path, https_upstream, bundle_with(tmp_path, pki.ca), layout)
    assert_recorded(result, tmp_path, https_upstream)


@needs_namespace
def test_ssl_cert_file_adds_to_the_system_store_rather_than_replacing_it(
    tmp_path: Path, pki: Pki, https_upstream: ScriptedUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A company CA named for one host leaves every CA of the system store trusted."""
    _use_frozen(monkeypatch)
    write_spec(tmp_path)
    bundle = bundle_with(tmp_path, pki.ca)
    result = record_in_layout(
        tmp_path, https_upstream, bundle, "fedora", SSL_CERT_FILE=str(pki.other_ca)
    )
    assert_recorded(result, tmp_path, https_upstream)


@needs_namespace
def test_with_no_system_bundle_the_upstream_is_untrusted(
    tmp_path: Path, pki: Pki, https_upstream: ScriptedUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The layouts above pass because of the bundle they hold, not because nothing is checked."""
    _use_frozen(monkeypatch)
    write_spec(tmp_path)
    result = record_in_layout(
        tmp_path, https_upstream, bundle_with(tmp_path, pki.other_ca), "fedora"
    )
    assert result.code == 1, result.output
    assert UNTRUSTED in result.stderr, result.output
    assert not trace_of(tmp_path).exists()
