"""The seccomp user-notification supervisor: one receiver thread beside the flow, for exactly as
long as the agent's tree lives.

For every trapped call the receiver copies the arguments out of the agent's memory
(process_vm_readv), duplicates the file descriptor it names (pidfd_getfd), checks that the
notification is still valid AFTER those reads (so the copy provably belongs to the task that is
waiting, not to a successor that reused its pid), decides on the COPY, and performs an allowed
network call ITSELF on the duplicate, passing the result or the errno back unchanged
(EINPROGRESS included). It never answers a network call with CONTINUE: the kernel would read
the agent's memory again after the decision, and a sibling thread could have rewritten the
address in between. Only the filesystem observation answers CONTINUE, because it enforces
nothing.

A call that may block (a blocking connect to a remote, a blocking send) is performed on a
worker thread so that the receiver keeps answering; everything else is answered inline. While
a blocking connect is in flight, a watcher looks for a signal the task has a handler for
(Ctrl-C's SIGINT, say) pending on it: the kernel cannot deliver one to a task waiting for our
answer (WAIT_KILLABLE_RECV holds off everything but a fatal signal), so the watcher answers the
connect EINTR itself, as the kernel does when a signal interrupts a blocking connect, and the
connect goes on in the background on the duplicate, as the kernel's does. Sends are not
interrupted that way: one that goes on after an EINTR would send data the agent believes
unsent. A
handler that fails answers EPERM: a task is never left waiting. If the supervisor itself goes,
every trapped call fails with ENOSYS: containment fails closed.
"""

from __future__ import annotations

import errno
import os
import queue
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from flowproof.containment import _linux
from flowproof.containment.bpf import AUDIT_ARCH_X86_64, NAMES, X32_SYSCALL_BIT
from flowproof.containment.findings import Findings
from flowproof.containment.pins import PinnedPolicy

WORKERS = 8
"""Threads for calls that may block; more blocking calls than this wait their turn."""
SIGNAL_POLL_SECONDS = 0.02
"""How often the watcher looks for a signal pending on a task waiting for a blocking connect:
well under what a person pressing Ctrl-C notices."""
_ANSWERING = threading.Lock()
"""A call answered by its worker and by the watcher at once gets exactly one answer."""


@dataclass(slots=True)
class Call:
    """One trapped system call, and the one answer it gets."""

    listener: int
    id: int
    tid: int
    nr: int
    arch: int
    args: tuple[int, ...]
    answered: bool = False
    deferred: bool = False
    """Handed to a worker, which answers it and closes it."""
    _pidfd: int | None = None

    @property
    def name(self) -> str:
        return NAMES.get(self.nr, f"syscall {self.nr}")

    def int_arg(self, index: int) -> int:
        """An `int` argument: its low 32 bits, signed (the kernel truncates the rest)."""
        low = self.args[index] & 0xFFFFFFFF
        return low - (1 << 32) if low & 0x80000000 else low

    def read(self, address: int, length: int) -> bytes:
        return _linux.read_memory(self.tid, address, length)

    def valid(self) -> bool:
        return _linux.notif_id_valid(self.listener, self.id)

    def reply(self, value: int) -> None:
        """Answer with a result (>= 0) or an errno (a negative value, as the kernel's -EFOO)."""
        if value < 0:
            self.fail(-value)
        else:
            self._send(value, 0, 0)

    def fail(self, code: int) -> None:
        self._send(0, -code, 0)

    def proceed(self) -> bool:
        """Let the kernel run the call as the agent made it (filesystem observation only);
        False when the task had already gone, so the call never ran."""
        return self._send(0, 0, _linux.SECCOMP_USER_NOTIF_FLAG_CONTINUE)

    def _send(self, value: int, error: int, flags: int) -> bool:
        with _ANSWERING:
            if self.answered:
                return False
            self.answered = True
        return _linux.notif_send(self.listener, self.id, value, error, flags)

    @contextmanager
    def fd(self, number: int) -> Iterator[int]:
        """A duplicate of the agent's fd `number` (same open file description), closed after."""
        duplicate = _linux.pidfd_getfd(self._pidfd_of_task(), number)
        try:
            yield duplicate
        finally:
            os.close(duplicate)

    def fetch(self, number: int) -> int:
        """A duplicate the caller closes."""
        return _linux.pidfd_getfd(self._pidfd_of_task(), number)

    def _pidfd_of_task(self) -> int:
        if self._pidfd is None:
            try:
                self._pidfd = _linux.pidfd_open(self.tid, _linux.PIDFD_THREAD)
            except OSError as exc:
                if exc.errno not in (errno.EINVAL, errno.ENOENT):
                    raise
                # Before 6.9 a pidfd names a process; the notification names a thread.
                self._pidfd = _linux.pidfd_open(_thread_group(self.tid))
        return self._pidfd

    def close(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


def _thread_group(tid: int) -> int:
    with open(f"/proc/{tid}/status", encoding="ascii", errors="replace") as status:
        for line in status:
            if line.startswith("Tgid:"):
                return int(line.split()[1])
    return tid


Handler = Callable[[Call, "Supervisor"], None]


@dataclass
class Supervisor:
    listener: int
    policy: PinnedPolicy
    findings: Findings
    handlers: dict[str, Handler]
    """Trapped network call name → its handler (netcalls.HANDLERS)."""
    foreign: Handler
    """The handler of a call from another ABI (i386 `int 0x80`, x32)."""
    filesystem: Callable[[_linux.Notification], None] | None = None
    """The filesystem observation's handler (fsobserve.FsObserver.handle), taking the raw
    notification: the hot path, kept free of the per-call object the network calls get."""
    filesystem_numbers: frozenset[int] = frozenset()
    receiver: Callable[[int], _linux.Receive] = _linux.receiver
    """The listener → its receive (the filesystem observation's, fsobserve.FsObserver.receiver,
    observes the calls it can on the way and returns the rest)."""
    receiver_done: Callable[[], None] | None = None
    """Called by the receiver thread as it ends: the filesystem handler's /proc handles are
    that thread's, and are closed by it, never while it might still use them."""
    _jobs: queue.SimpleQueue[Callable[[], None] | None] = field(default_factory=queue.SimpleQueue)
    _in_flight: set[int] = field(default_factory=set)
    _interruptible: dict[int, Call] = field(default_factory=dict)
    """In-flight blocking connects by their duplicate: the watcher's to interrupt."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _connecting: threading.Condition = field(init=False)
    _stopping: bool = False
    _threads: list[threading.Thread] = field(default_factory=list)
    sync_wake_up: bool = False

    def __post_init__(self) -> None:
        self._connecting = threading.Condition(self._lock)

    def start(self) -> None:
        receiver = threading.Thread(target=self._receive, name="flowproof-supervisor", daemon=True)
        self._threads.append(receiver)
        watcher = threading.Thread(target=self._watch, name="flowproof-supervisor-signals")
        watcher.daemon = True
        self._threads.append(watcher)
        for index in range(WORKERS):
            worker = threading.Thread(
                target=self._work, name=f"flowproof-supervisor-{index}", daemon=True
            )
            self._threads.append(worker)
        for thread in self._threads:
            thread.start()

    def stop(self, grace: float) -> None:
        """After the agent's tree is gone: the receiver ends by itself once no task is left
        under the filter (its RECV fails with ENOENT and the listener hangs up). Calls still in
        flight are aborted and the workers stopped. A straggler the driver could not stop (a
        task stuck in the kernel) keeps the receiver, which then owns the listener and closes
        it when that task goes."""
        receiver = self._threads[0]
        receiver.join(grace)
        with self._lock:
            self._stopping = True
            self._connecting.notify_all()
            for duplicate in self._in_flight:
                # Wakes a blocking connect in a worker (SYN_SENT is disconnected).
                _shutdown(duplicate)
        for _ in range(WORKERS):
            self._jobs.put(None)
        for thread in self._threads[1:]:
            thread.join(grace)
        if not receiver.is_alive():
            os.close(self.listener)

    def in_background(
        self,
        call: Call,
        duplicate: int,
        job: Callable[[], int],
        *,
        interruptible: bool = False,
    ) -> None:
        """Run `job` (a call that may block, on `duplicate`, which it owns) on a worker, and
        answer `call` with its result there. `interruptible`: a signal the task catches answers
        it EINTR meanwhile (the watcher), and the job runs on to its end (a connect)."""
        call.deferred = True
        with self._lock:
            self._in_flight.add(duplicate)
            if interruptible:
                self._interruptible[duplicate] = call
                self._connecting.notify_all()

        def run() -> None:
            try:
                call.reply(job())
            except Exception as exc:  # noqa: BLE001 - never leave the agent's task waiting
                self._fault(call, exc)
            finally:
                with self._lock:
                    self._in_flight.discard(duplicate)
                    self._interruptible.pop(duplicate, None)
                os.close(duplicate)
                call.close()

        self._jobs.put(run)

    def _receive(self) -> None:
        # Blocking RECV (the GIL released), woken on the trapping task's CPU where the kernel
        # can (SYNC_WAKE_UP, 6.6+): across CPUs a poll() first costs several times more.
        self.sync_wake_up = _linux.set_sync_wake_up(self.listener)
        try:
            self._receive_until_no_task_is_left()
        finally:
            if self.receiver_done is not None:
                self.receiver_done()

    def _receive_until_no_task_is_left(self) -> None:
        receive, dispatch = self.receiver(self.listener), self._dispatch
        while True:
            got = receive()
            if not isinstance(got, int):
                dispatch(got)
                continue
            code = got
            if code == errno.EINTR:
                continue
            elif code == errno.ENOENT and not self._no_task_left():
                continue  # that task died before we took its notification
            else:
                return  # no task is left under the filter

    def _no_task_left(self) -> bool:
        poller = select.poll()
        poller.register(self.listener, select.POLLIN)
        return any(event & select.POLLHUP for _, event in poller.poll(0))

    def _dispatch(self, notif: _linux.Notification) -> None:
        nr, arch = notif.nr, notif.arch
        if self.filesystem is not None and nr in self.filesystem_numbers:
            if arch == AUDIT_ARCH_X86_64:
                try:
                    self.filesystem(notif)
                except Exception as exc:  # noqa: BLE001 - never leave the agent's task waiting
                    # Observation stops nothing, not even when it fails: let the call run.
                    self.findings.fault(f"{NAMES.get(nr)}: {type(exc).__name__}: {exc}")
                    Call(self.listener, notif.id, notif.pid, nr, arch, ()).proceed()
                return
        call = Call(self.listener, notif.id, notif.pid, nr, arch, notif.args)
        try:
            if call.arch != AUDIT_ARCH_X86_64 or call.nr & X32_SYSCALL_BIT:
                self.foreign(call, self)
            else:
                handler = self.handlers.get(call.name)
                if handler is None:
                    call.fail(errno.ENOSYS)
                else:
                    handler(call, self)
        except Exception as exc:  # noqa: BLE001 - never leave the agent's task waiting
            self._fault(call, exc)
        finally:
            if not call.deferred:
                call.close()

    def _fault(self, call: Call, exc: BaseException) -> None:
        self.findings.fault(f"{call.name}: {type(exc).__name__}: {exc}")
        try:
            call.fail(errno.EPERM)
        except OSError:
            pass

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()

    def _watch(self) -> None:
        """Answer EINTR to a blocking connect whose task has a caught signal pending; asleep
        while no such connect is in flight."""
        while True:
            with self._lock:
                while not self._interruptible and not self._stopping:
                    self._connecting.wait()
                if self._stopping:
                    return
                waiting = list(self._interruptible.values())
            for call in waiting:
                if not call.answered and _caught_signal_pending(call.tid):
                    call.fail(errno.EINTR)
            time.sleep(SIGNAL_POLL_SECONDS)


def _caught_signal_pending(tid: int) -> bool:
    """Whether a signal the task has a handler for, and does not block, is pending on it (its
    own or its process's): /proc/<tid>/status, SigPnd and ShdPnd against SigBlk and SigCgt."""
    masks: dict[str, int] = {}
    try:
        with open(f"/proc/{tid}/status", "rb") as status:
            for line in status:
                name, _, value = line.partition(b":")
                if name in _SIGNAL_MASKS:
                    masks[name.decode()] = int(value.strip(), 16)
    except (OSError, ValueError):
        return False
    pending = masks.get("SigPnd", 0) | masks.get("ShdPnd", 0)
    return bool(pending & ~masks.get("SigBlk", 0) & masks.get("SigCgt", 0))


_SIGNAL_MASKS = frozenset((b"SigPnd", b"ShdPnd", b"SigBlk", b"SigCgt"))


def _shutdown(fd: int) -> None:
    try:
        sock = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()
