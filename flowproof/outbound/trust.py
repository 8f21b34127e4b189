"""Which certificates record trusts on its upstream connections: the platform's, always
verified, plus the CAs the user names in SSL_CERT_FILE / SSL_CERT_DIR.

`truststore` makes the decision the operating system's: on macOS the Security framework
(Keychain, MDM-installed company CAs), on Windows the CryptoAPI certificate store. On Linux it
verifies with OpenSSL, which finds certificates where the OpenSSL it was built against looks
for them. The frozen engine carries its build host's OpenSSL, whose directory (Debian's
/usr/lib/ssl) does not exist on Fedora, RHEL, openSUSE or Alpine, so the distributions' own
bundles are loaded here as well, first found wins (the list Go's crypto/x509 keeps).

SSL_CERT_FILE and SSL_CERT_DIR ADD to that store, on every platform. OpenSSL's tools take them
as replacing its defaults, but the OS verifiers of macOS and Windows have no defaults to
replace, and a company CA named for one host must not cut off every other one: the meaning is
the same wherever the record runs. Verification is never turned off; there is no setting that
would.
"""

from __future__ import annotations

import os
import ssl
import sys
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path

from flowproof.core.errors import ConfigError

CERT_FILE_VARIABLE = "SSL_CERT_FILE"
CERT_DIR_VARIABLE = "SSL_CERT_DIR"

SYSTEM_BUNDLES = (
    "/etc/ssl/certs/ca-certificates.crt",  # Debian, Ubuntu, Gentoo, Arch
    "/etc/pki/tls/certs/ca-bundle.crt",  # Fedora, RHEL, CentOS
    "/etc/ssl/ca-bundle.pem",  # openSUSE, SLES
    "/etc/pki/tls/cacert.pem",  # OpenELEC
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  # Fedora, RHEL 7+ (the source)
    "/etc/ssl/cert.pem",  # Alpine, and the BSDs
)
"""One file holding every CA the distribution trusts, where each distribution keeps it."""
SYSTEM_DIRECTORIES = (
    "/etc/ssl/certs",  # Debian, Ubuntu, openSUSE: one file per CA, by subject hash
    "/etc/pki/tls/certs",  # Fedora, RHEL
)
"""Directories of single CAs, looked up by OpenSSL's subject-hash names (c_rehash)."""

_PEM_CERTIFICATE = b"-----BEGIN CERTIFICATE-----"
_OTHER_NAME = ("hostname mismatch", "ip address mismatch", "name does not match")
"""How OpenSSL, and macOS's verifier, say a certificate is for another host."""
_REMEDY = (
    "if your company's CA or proxy signs it, trust that CA: set SSL_CERT_FILE=/path/to/ca.pem "
    "in flowproof's environment, or add the CA to the system trust store"
)


def upstream_context(environ: Mapping[str, str]) -> ssl.SSLContext:
    """The TLS context of every upstream connection record opens, by the flow's `environ`.
    Raises ConfigError when SSL_CERT_FILE or SSL_CERT_DIR names something that is not there or
    holds no certificate."""
    return _context(environ.get(CERT_FILE_VARIABLE) or "", environ.get(CERT_DIR_VARIABLE) or "")


@cache
def _context(cert_file: str, cert_dir: str) -> ssl.SSLContext:
    """One context per setting: loading a system bundle costs milliseconds, every flow shares
    it. A ConfigError is not cached, so a corrected file is read again."""
    import truststore  # record only: `flowproof --version` and replay never load it

    context = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if sys.platform not in ("darwin", "win32"):
        _load_system_store(context)
    for path in _named_certificates(cert_file, cert_dir):
        try:
            context.load_verify_locations(cafile=str(path))
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError(
                f"{path} (from {_variable_of(path, cert_file)}) cannot be read as PEM "
                f"certificates ({exc}); point the variable at a PEM file of the CA to trust"
            ) from None
    return context


def _load_system_store(context: ssl.SSLContext) -> None:
    """The distribution's bundle (the first found) and CA directories, beside whatever the
    compiled-in OpenSSL directory holds when it exists."""
    defaults = ssl.get_default_verify_paths()
    bundle = next(_existing_files((defaults.openssl_cafile, *SYSTEM_BUNDLES)), None)
    if bundle is not None:
        context.load_verify_locations(cafile=bundle)
    for directory in _existing_directories((defaults.openssl_capath, *SYSTEM_DIRECTORIES)):
        context.load_verify_locations(capath=directory)


def _existing_files(candidates: tuple[str, ...]) -> Iterator[str]:
    return (path for path in candidates if path and os.path.isfile(path))


def _existing_directories(candidates: tuple[str, ...]) -> Iterator[str]:
    seen: set[str] = set()
    for path in candidates:
        if path and os.path.isdir(path) and os.path.realpath(path) not in seen:
            seen.add(os.path.realpath(path))
            yield path


def _named_certificates(cert_file: str, cert_dir: str) -> list[Path]:
    """The files SSL_CERT_FILE and SSL_CERT_DIR name, each checked to exist. A directory is
    read whole, every file holding a PEM certificate, hashed names or not: the OS verifiers
    of macOS and Windows only see certificates loaded from files."""
    named: list[Path] = []
    if cert_file:
        path = Path(cert_file)
        if not path.is_file():
            raise ConfigError(
                f"{CERT_FILE_VARIABLE}={cert_file}: no such file; point it at a PEM file of the "
                f"CA to trust, or unset it"
            )
        named.append(path)
    for directory in filter(None, cert_dir.split(os.pathsep)):
        folder = Path(directory)
        if not folder.is_dir():
            raise ConfigError(
                f"{CERT_DIR_VARIABLE}={cert_dir}: {directory} is not a directory; point it at a "
                f"directory of PEM files, or unset it"
            )
        named += sorted(entry for entry in folder.iterdir() if _holds_certificate(entry))
    return named


def _holds_certificate(path: Path) -> bool:
    try:
        return path.is_file() and _PEM_CERTIFICATE in path.read_bytes()
    except OSError:
        return False


def _variable_of(path: Path, cert_file: str) -> str:
    return CERT_FILE_VARIABLE if cert_file and path == Path(cert_file) else CERT_DIR_VARIABLE


def untrusted_certificate(error: BaseException) -> str | None:
    """The line a failed certificate check is reported with (the host, the verifier's reason,
    how to trust a CA), or None when `error` is not one."""
    import aiohttp

    if not isinstance(error, aiohttp.ClientConnectorCertificateError):
        return None
    return untrusted_message(f"{error.host}:{error.port}", error.certificate_error)


def untrusted_message(address: str, problem: BaseException) -> str:
    reason = _reason(problem)
    if any(words in reason.lower() for words in _OTHER_NAME):
        remedy = "the certificate was issued for another name: check the upstream URL's host"
    else:
        remedy = _REMEDY
    return f"record does not trust the certificate of {address} ({reason}); {remedy}"


def _reason(problem: BaseException) -> str:
    """`certificate verify failed: unable to get local issuer certificate`, without OpenSSL's
    `[SSL: CERTIFICATE_VERIFY_FAILED]` prefix and source location."""
    message = getattr(problem, "verify_message", None)
    if isinstance(problem, ssl.SSLCertVerificationError) and message:
        return f"certificate verify failed: {message}"
    text = str(problem.args[-1] if problem.args else problem) or type(problem).__name__
    return text.split("] ", 1)[-1].split(" (_ssl.c", 1)[0]
