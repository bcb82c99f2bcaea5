"""Ctrl-C and SIGTERM end a command the same way: as an exception raised where the command is,
so that what it set up unwinds (the folders and claims a run made are removed again, a sweep
names its run files, a training run says where its partial folder is) and it exits with the
shell's status for the signal (130, 143)."""

from __future__ import annotations

import contextlib
import os
import signal


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``), raised like Ctrl-C's ``KeyboardInterrupt``."""


def _by_sigterm(exc: KeyboardInterrupt) -> bool:
    # a library between the handler and the command may turn ``Terminated`` into a plain
    # ``KeyboardInterrupt`` (Ray's ``ray.wait`` does): the handler's own record settles it
    return isinstance(exc, Terminated) or _sigterm_received


def exit_status(exc: KeyboardInterrupt) -> int:
    """The shell's status for the signal that raised ``exc``: 143 (SIGTERM) or 130 (SIGINT)."""
    return 143 if _by_sigterm(exc) else 130


def what_happened(exc: KeyboardInterrupt) -> str:
    return "terminated" if _by_sigterm(exc) else "interrupted"


_owner_pid: int | None = None
#: Whether SIGTERM raised ``Terminated`` in the current ``sigterm_raises`` body (a handler
#: inside it, such as a sweep's, reads it; on the way out a plain ``KeyboardInterrupt`` is
#: turned back into ``Terminated``).
_sigterm_received = False


def _raise_terminated(signum, frame) -> None:
    global _sigterm_received
    if os.getpid() != _owner_pid:          # a child forked meanwhile: die as a child does
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    _sigterm_received = True
    raise Terminated()


@contextlib.contextmanager
def sigterm_raises():
    """While the body runs, SIGTERM raises ``Terminated`` in this process; afterwards the
    handler before it is back. Nothing changes outside the main thread, or where SIGTERM is
    ignored (a launcher that wants the command to outlive it)."""
    global _owner_pid, _sigterm_received
    _sigterm_received = False
    before = signal.getsignal(signal.SIGTERM)
    if before == signal.SIG_IGN:
        yield
        return
    try:
        signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:                     # not the main thread
        yield
        return
    _owner_pid = os.getpid()
    try:
        yield
    except KeyboardInterrupt as exc:
        if _sigterm_received and not isinstance(exc, Terminated):
            raise Terminated() from exc        # what a library made of SIGTERM's, restored
        raise
    finally:
        _sigterm_received = False              # (read inside the body only)
        # ``before`` is None for a handler set from C: the default is the closest there is
        signal.signal(signal.SIGTERM, signal.SIG_DFL if before is None else before)
