"""The escape battery: each technique a separate real child process under flowproof's
containment, with what must happen to it, and what did. Prints a table; exits 1 on any miss.

    unshare -n python -m tests.containment.battery BIN_DIR

Only inside a network namespace (it adds documentation-range addresses to `lo` itself when
run as root, and expects them when not): a DECLARED remote 198.51.100.9 and an UNDECLARED one
203.0.113.7 (and 2001:db8::9 / 2001:db8::7), each with a TCP and a UDP listener. An
undeclared listener counts what reaches it: a refusal is only a refusal when that count stays 0.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from tests.containment.harness import contained

DECLARED, UNDECLARED = "198.51.100.9", "203.0.113.7"
DECLARED6, UNDECLARED6 = "2001:db8::9", "2001:db8::7"
TCP, UDP = 8080, 5353
HERE = Path(__file__).resolve().parent
ALLOW = [f"{DECLARED}:{TCP}", f"{DECLARED}:{UDP}", f"[{DECLARED6}]:{TCP}"]
reached: dict[str, int] = {}
NODE_FETCH = (
    "fetch(process.argv[1]).then(r => r.text()).then(t => console.log('RESULT connected', t),"
    " e => console.log('RESULT refused', (e.cause && e.cause.code) || e.message))"
)


def _serve_tcp(address: str, family: int) -> None:
    listener = socket.socket(family)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((address, TCP))
    listener.listen(128)

    def serve() -> None:
        while True:
            connection, _ = listener.accept()
            reached[address] = reached.get(address, 0) + 1
            with connection:
                connection.sendall(f"HTTP/1.0 200 OK\r\n\r\nhello-{address}".encode())

    threading.Thread(target=serve, daemon=True).start()


def _serve_udp(address: str) -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind((address, UDP))

    def serve() -> None:
        while True:
            data, peer = listener.recvfrom(2048)
            reached[f"udp {address}"] = reached.get(f"udp {address}", 0) + 1
            listener.sendto(b"pong", peer)

    threading.Thread(target=serve, daemon=True).start()


@dataclass(frozen=True)
class Technique:
    name: str
    command: list[str]
    expected: str
    """The RESULT line's start the child must print (`refused ECONNREFUSED`, `connected`)."""
    reported: str | None = None
    """The refusal that must be in the supervisor's findings; None: none expected."""
    needs: str = ""
    """A program it needs (curl, gcc output); skipped, and said so, without it."""


def _serve_unix(directory: Path) -> Path:
    """A unix socket server in `directory`, reached by a RELATIVE path from the child."""
    path = directory / "local.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    path.chmod(0o777)
    listener.listen(16)

    def serve() -> None:
        while True:
            connection, _ = listener.accept()
            with connection:
                connection.sendall(b"hello-unix")

    threading.Thread(target=serve, daemon=True).start()
    return path


def techniques(bin_dir: Path, unix: Path) -> list[Technique]:
    py = [sys.executable, str(HERE / "attempts.py")]
    c = lambda name: str(bin_dir / name)  # noqa: E731
    ref = lambda what: f"connect {what}"  # noqa: E731
    return [
        Technique("plain connect, declared", [*py, "connect", DECLARED, str(TCP)], "connected"),
        Technique(
            "plain connect, undeclared",
            [*py, "connect", UNDECLARED, str(TCP)],
            "refused ECONNREFUSED",
            ref(f"{UNDECLARED}:{TCP}"),
        ),
        Technique(
            "non-blocking connect, declared", [*py, "nonblocking", DECLARED, str(TCP)], "connected"
        ),
        Technique(
            "non-blocking connect, undeclared",
            [*py, "nonblocking", UNDECLARED, str(TCP)],
            "refused ECONNREFUSED",
            ref(f"{UNDECLARED}:{TCP}"),
        ),
        Technique(
            "connect from a second thread",
            [*py, "thread", UNDECLARED, str(TCP)],
            "refused ECONNREFUSED",
            ref(f"{UNDECLARED}:{TCP}"),
        ),
        Technique("UDP sendto, declared", [*py, "udp", DECLARED, str(UDP)], "sent pong"),
        Technique(
            "UDP sendto, undeclared",
            [*py, "udp", UNDECLARED, str(UDP)],
            "refused EPERM",
            f"sendto {UNDECLARED}:{UDP}",
        ),
        Technique(
            "sendmsg with an address, declared", [*py, "sendmsg", DECLARED, str(UDP)], "sent pong"
        ),
        Technique(
            "sendmsg with an address, undeclared",
            [*py, "sendmsg", UNDECLARED, str(UDP)],
            "refused EPERM",
            f"sendmsg {UNDECLARED}:{UDP}",
        ),
        Technique(
            "sendmmsg, declared then undeclared",
            [c("sendmmsg"), DECLARED, UNDECLARED, str(UDP)],
            "sent 1 len0=4",
            f"sendmmsg {UNDECLARED}:{UDP}",
            needs="sendmmsg",
        ),
        Technique(
            "TCP fast open (sendto MSG_FASTOPEN)",
            [*py, "fastopen", UNDECLARED, str(TCP)],
            "refused EPERM",
            f"sendto {UNDECLARED}:{TCP}",
        ),
        Technique("IPv6 connect, declared", [*py, "connect6", DECLARED6, str(TCP)], "connected"),
        Technique(
            "IPv6 connect, undeclared",
            [*py, "connect6", UNDECLARED6, str(TCP)],
            "refused ECONNREFUSED",
            ref(f"[{UNDECLARED6}]:{TCP}"),
        ),
        Technique(
            "v4-mapped IPv6 connect, undeclared",
            [*py, "connect6", f"::ffff:{UNDECLARED}", str(TCP)],
            "refused ECONNREFUSED",
            ref(f"{UNDECLARED}:{TCP}"),
        ),
        Technique(
            "v4-mapped IPv6 connect, declared",
            [*py, "connect6", f"::ffff:{DECLARED}", str(TCP)],
            "connected",
        ),
        Technique(
            "i386 int 0x80 connect",
            [c("i386_connect"), UNDECLARED, str(TCP)],
            "refused ENOSYS",
            "syscall i386 system call 362 (connect)",
            needs="i386_connect",
        ),
        Technique(
            "x32 system call",
            [*py, "x32"],
            "refused ENOSYS",
            "syscall x32 system call 41",
        ),
        Technique(
            "upper-bits garbage in the socket family",
            [*py, "family_garbage"],
            "refused EAFNOSUPPORT",
            "socket (AF_PACKET)",
        ),
        Technique(
            "AF_PACKET socket",
            [*py, "family", "packet"],
            "refused EAFNOSUPPORT",
            "socket (AF_PACKET)",
        ),
        Technique(
            "AF_VSOCK socket", [*py, "family", "vsock"], "refused EAFNOSUPPORT", "socket (AF_VSOCK)"
        ),
        Technique("io_uring_setup (refused in the filter)", [*py, "io_uring"], "refused ENOSYS"),
        Technique(
            "listen on a wildcard address",
            [*py, "bind_wildcard", "8081"],
            "refused EPERM",
            "bind 0.0.0.0:8081",
        ),
        Technique(
            "listen on an unbound socket",
            [*py, "listen_unbound"],
            "refused EPERM",
            "listen 0.0.0.0:<any port> (an unbound socket)",
        ),
        Technique("listen on loopback", [*py, "listen_loopback"], "listening"),
        Technique(
            "steal the listener (pidfd_getfd, signal, /proc/pid/mem)",
            [*py, "steal", str(os.getpid())],
            "refused EPERM",
        ),
        Technique(
            "sendmsg racing an address rewrite and a dup2 swap",
            [c("swap_race"), DECLARED, UNDECLARED, str(UDP)],
            "raced",
            f"sendmsg {UNDECLARED}:{UDP}",
            needs="swap_race",
        ),
        Technique(
            "grandchild via posix_spawn",
            [*py, "spawn", UNDECLARED, str(TCP)],
            "refused ECONNREFUSED",
            ref(f"{UNDECLARED}:{TCP}"),
        ),
        Technique(
            "signal storm during trapped connects",
            [c("signal_storm"), DECLARED, UNDECLARED, str(TCP)],
            "stormed lies=0 after=refused",
            ref(f"{UNDECLARED}:{TCP}"),
            needs="signal_storm",
        ),
        Technique(
            "AF_UNIX connect by a relative path (resolved in the agent's cwd)",
            ["sh", "-c", f"cd {unix.parent} && exec {' '.join(py)} unix_relative {unix.name}"],
            "connected hello-unix",
        ),
        Technique("an fd passed with SCM_RIGHTS", [*py, "scm_rights"], "passed through-the-socket"),
        Technique(
            "SCM_CREDENTIALS (checked against the supervisor: refused)",
            [*py, "scm_credentials"],
            "refused EPERM",
        ),
        Technique(
            "node fetch, declared (libuv's io_uring refused, it falls back)",
            ["node", "-e", NODE_FETCH, f"http://{DECLARED}:{TCP}/"],
            "connected hello",
            needs="node",
        ),
        Technique(
            "node fetch, undeclared",
            ["node", "-e", NODE_FETCH, f"http://{UNDECLARED}:{TCP}/"],
            "refused ECONNREFUSED",
            ref(f"{UNDECLARED}:{TCP}"),
            needs="node",
        ),
        Technique(
            "curl, declared",
            ["curl", "-sS", "--max-time", "5", f"http://{DECLARED}:{TCP}/"],
            "",
            needs="curl",
        ),
        Technique(
            "curl, undeclared",
            ["curl", "-sS", "--max-time", "5", f"http://{UNDECLARED}:{TCP}/"],
            "",
            ref(f"{UNDECLARED}:{TCP}"),
            needs="curl",
        ),
    ]


def _observed(technique: Technique, result: dict) -> tuple[str, bool]:
    output = result["stdout"].strip().splitlines()
    line = next((text for text in output if text.startswith("RESULT ")), "")
    observed = line.removeprefix("RESULT ").strip()
    if technique.command[0] == "curl":
        ok_text = "hello" in result["stdout"]
        observed = "fetched" if ok_text else (result["stderr"].strip().splitlines() or ["?"])[-1]
        expected_ok = technique.reported is None
        good = ok_text == expected_ok
    else:
        good = observed.startswith(technique.expected)
    blocked = result["blocked"]
    if technique.reported is not None:
        good = good and technique.reported in blocked
        observed += f" · reported: {'; '.join(blocked) or 'nothing'}"
    elif blocked:
        observed += f" · reported: {'; '.join(blocked)}"
    if result["faults"]:
        good = False
        observed += f" · faults: {result['faults']}"
    return observed, good


def main() -> int:
    bin_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    if os.geteuid() == 0 and len(sys.argv) > 2 and sys.argv[2] == "--setup":
        for address in (DECLARED, UNDECLARED):
            subprocess.run(["ip", "addr", "add", f"{address}/32", "dev", "lo"], check=True)
        for address in (DECLARED6, UNDECLARED6):
            # nodad: usable at once, not "tentative" while duplicate detection runs
            subprocess.run(
                ["ip", "addr", "add", f"{address}/128", "dev", "lo", "nodad"], check=True
            )
    for address in (DECLARED, UNDECLARED):
        _serve_tcp(address, socket.AF_INET)
        _serve_udp(address)
    for address in (DECLARED6, UNDECLARED6):
        _serve_tcp(address, socket.AF_INET6)
    rows = []
    misses = 0
    unix = _serve_unix(Path(tempfile.mkdtemp(prefix="flowproof-unix-")))
    unix.parent.chmod(0o755)
    for technique in techniques(bin_dir, unix):
        program = technique.needs
        if program and not (shutil.which(program) or (bin_dir / program).exists()):
            rows.append(
                (technique.name, technique.expected or "refused", f"skipped: no {program}", "-")
            )
            continue
        result = asyncio.run(contained(technique.command, ALLOW, 30.0))
        observed, good = _observed(technique, result)
        misses += not good
        expected = technique.expected or ("fetched" if technique.reported is None else "refused")
        if technique.reported:
            expected += f" · reported: {technique.reported}"
        rows.append((technique.name, expected, observed, "ok" if good else "MISS"))
    leaks = {
        where: count
        for where, count in reached.items()
        if UNDECLARED.split(".")[0] in where or "::7" in where
    }
    if leaks:
        misses += 1
        rows.append(("undeclared listeners reached", "0", str(leaks), "MISS"))
    else:
        rows.append(("undeclared listeners reached", "0", "0", "ok"))
    width = [max(len(row[i]) for row in rows) for i in range(3)]
    with open("/proc/self/status") as status:
        capabilities = next(line.split()[1] for line in status if line.startswith("CapEff:"))
    print(f"escape battery as uid {os.geteuid()} (CapEff {capabilities})")
    print(f"{'technique':<{width[0]}}  {'expected':<{width[1]}}  {'observed':<{width[2]}}  verdict")
    for name, expected, observed, verdict in rows:
        print(f"{name:<{width[0]}}  {expected:<{width[1]}}  {observed:<{width[2]}}  {verdict}")
    print(f"{misses} miss{'es' * (misses != 1)}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
