"""Escape attempts, one per run: `python attempts.py TECHNIQUE ARGS...`. Each prints one line,
`RESULT <outcome> <detail>`, that the battery (battery.py) compares with what it expects.
Run only inside the battery's network namespace."""

import ctypes
import errno
import os
import select
import signal
import socket
import struct
import sys
import threading

libc = ctypes.CDLL(None, use_errno=True)


def result(outcome, detail=""):
    print("RESULT", outcome, detail, flush=True)


def failed(exc):
    code = exc.errno if isinstance(exc, OSError) and exc.errno else 0
    result("refused", errno.errorcode.get(code, str(exc)))


def tcp(host, port, family=socket.AF_INET):
    try:
        with socket.socket(family) as s:
            s.settimeout(10)
            s.connect((host, int(port)))
            result("connected", s.recv(64).decode().split()[-1] if True else "")
    except OSError as exc:
        failed(exc)


def connect(host, port):
    tcp(host, port)


def connect6(host, port):
    tcp(host, port, socket.AF_INET6)


def nonblocking(host, port):
    s = socket.socket()
    s.setblocking(False)
    code = s.connect_ex((host, int(port)))
    if code == errno.EINPROGRESS:
        select.select([], [s], [], 10)
        code = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if code:
        return result("refused", errno.errorcode[code])
    s.setblocking(True)
    result("connected", s.recv(64).decode().split()[-1])


def thread(host, port):
    worker = threading.Thread(target=tcp, args=(host, port))
    worker.start()
    worker.join()


def udp(host, port):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(5)
        try:
            s.sendto(b"ping", (host, int(port)))
            result("sent", s.recv(64).decode())
        except OSError as exc:
            failed(exc)


def sendmsg(host, port):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(5)
        try:
            s.sendmsg([b"pi", b"ng"], [], 0, (host, int(port)))
            result("sent", s.recv(64).decode())
        except OSError as exc:
            failed(exc)


def fastopen(host, port):
    with socket.socket() as s:
        s.settimeout(5)
        try:
            s.sendto(b"GET / HTTP/1.0\r\n\r\n", socket.MSG_FASTOPEN, (host, int(port)))
            result("connected", s.recv(64).decode().split()[-1])
        except OSError as exc:
            failed(exc)


def _syscall(number, *args):
    libc.syscall.restype = ctypes.c_long
    value = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
    return value, ctypes.get_errno()


def family_garbage():
    # socket(0x1_0000_0011, SOCK_RAW): AF_PACKET to the kernel, which truncates to int.
    value, code = _syscall(41, 0x1_0000_0011, 3, 0x0300)
    result("created" if value >= 0 else "refused", "" if value >= 0 else errno.errorcode[code])


def family(name):
    number = {"packet": 17, "vsock": 40}[name]
    kind = socket.SOCK_RAW if name == "packet" else socket.SOCK_STREAM
    try:
        socket.socket(number, kind).close()
        result("created")
    except OSError as exc:
        failed(exc)


def io_uring():
    params = ctypes.create_string_buffer(120)
    value, code = _syscall(425, 8, ctypes.addressof(params))
    result("created" if value >= 0 else "refused", "" if value >= 0 else errno.errorcode[code])


def x32():
    value, code = _syscall(0x40000000 | 41, 2, 1, 0)  # socket via the x32 table
    result("created" if value >= 0 else "refused", "" if value >= 0 else errno.errorcode[code])


def bind_wildcard(port):
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", int(port)))
            s.listen()
            result("listening")
        except OSError as exc:
            failed(exc)


def listen_unbound():
    with socket.socket() as s:
        try:
            s.listen()
            result("listening", str(s.getsockname()))
        except OSError as exc:
            failed(exc)


def listen_loopback():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        result("listening")


def steal(supervisor):
    """Take the supervisor's seccomp listener: pidfd_getfd every fd it might hold, SIGSTOP it,
    read its memory. Every one must fail."""
    pid = int(supervisor)
    taken = []
    value, code = _syscall(434, pid, 0)
    if value >= 0:
        for fd in range(256):
            got, _ = _syscall(438, value, fd, 0)
            if got >= 0:
                taken.append(fd)
    stopped = True
    try:
        os.kill(pid, signal.SIGCONT)  # harmless if it worked; the test is whether it may
    except PermissionError:
        stopped = False
    try:
        with open(f"/proc/{pid}/mem", "rb") as memory:
            memory.read(1)
        readable = True
    except OSError:
        readable = False
    if taken or stopped or readable:
        return result("stolen", f"fds={taken} signal={stopped} mem={readable}")
    result("refused", "EPERM")


def spawn(host, port):
    """A grandchild started with posix_spawn (vfork+exec in glibc)."""
    child = os.posix_spawn(
        sys.executable, [sys.executable, __file__, "connect", host, port], dict(os.environ)
    )
    os.waitpid(child, 0)


def unix_relative(path):
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(path)
            result("connected", s.recv(64).decode())
        except OSError as exc:
            failed(exc)


def scm_rights():
    """An fd passed over a unix socket: the supervisor performs the sendmsg, so it must send
    ITS duplicate of each fd the agent named."""
    read_end, write_end = os.pipe()
    os.write(write_end, b"through-the-socket")
    os.close(write_end)
    left, right = socket.socketpair()
    try:
        socket.send_fds(left, [b"fd"], [read_end])
        _, fds, _, _ = socket.recv_fds(right, 16, 1)
        result("passed", os.read(fds[0], 64).decode())
    except OSError as exc:
        failed(exc)


def scm_credentials():
    left, right = socket.socketpair()
    credentials = struct.pack("iII", os.getpid(), os.getuid(), os.getgid())
    try:
        left.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, credentials)])
        result("sent")
    except OSError as exc:
        failed(exc)


if __name__ == "__main__":
    globals()[sys.argv[1]](*sys.argv[2:])
