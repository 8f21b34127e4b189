"""The trust decision's words: how a failed certificate check reads on every platform's
verifier, and what a wrong SSL_CERT_FILE / SSL_CERT_DIR says (the rest is end to end:
tests/e2e/test_upstream_tls.py)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from flowproof.core.errors import ConfigError
from flowproof.outbound.trust import untrusted_message, upstream_context


def verifier_error(message: str) -> ssl.SSLCertVerificationError:
    """The error truststore raises from the macOS and Windows verifiers."""
    error = ssl.SSLCertVerificationError(message)
    error.verify_message = message
    return error


def test_an_os_verifiers_refusal_names_the_host_and_how_to_trust_a_ca() -> None:
    text = untrusted_message(
        "api.test:443", verifier_error("“api.test” certificate is not trusted")
    )
    assert text == (
        "record does not trust the certificate of api.test:443 (certificate verify failed: "
        "“api.test” certificate is not trusted); if your company's CA or proxy signs it, trust "
        "that CA: set SSL_CERT_FILE=/path/to/ca.pem in flowproof's environment, or add the CA "
        "to the system trust store"
    )


@pytest.mark.parametrize(
    "message",
    [
        "Hostname mismatch, certificate is not valid for 'api.test'.",  # OpenSSL
        "IP address mismatch, certificate is not valid for '127.0.0.1'.",  # OpenSSL
        "“api.test” certificate name does not match input",  # macOS
    ],
)
def test_a_certificate_for_another_name_points_at_the_url(message: str) -> None:
    text = untrusted_message("api.test:443", verifier_error(message))
    assert text.endswith(
        "the certificate was issued for another name: check the upstream URL's host"
    )


def test_an_error_without_a_verifier_message_loses_openssls_decoration() -> None:
    error = ssl.SSLError(
        1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed (_ssl.c:1006)"
    )
    assert "(certificate verify failed);" in untrusted_message("api.test:443", error)


def test_an_ssl_cert_dir_that_is_not_a_directory_is_a_setting_to_fix(tmp_path: Path) -> None:
    missing = tmp_path / "cas"
    with pytest.raises(ConfigError, match=rf"SSL_CERT_DIR={missing}: {missing} is not a directory"):
        upstream_context({"SSL_CERT_DIR": str(missing)})


def test_unset_and_empty_variables_leave_the_platform_store_alone() -> None:
    assert (
        upstream_context({"SSL_CERT_FILE": "", "SSL_CERT_DIR": ""}).verify_mode == ssl.CERT_REQUIRED
    )
