"""The worker loop: runs cells for the host over a private channel, like a notebook kernel.

Runs only in a confined session process forked from the template (``zygote.py``); the host never
imports this module. Per request the worker executes the cell with its executor, prints the value
of a final expression, writes a traceback trimmed to user frames to stderr, saves open matplotlib
figures as PNG files in the workdir, and answers with one ``done`` frame. stdout and stderr are
the process's own file descriptors (pipes the host reads and caps), so output of C code and of
subprocesses is captured too.

The host interrupts a cell with ``SIGINT`` (at a time limit, or when its caller cancels), like a
notebook kernel: :class:`_Interrupts` turns it into ``KeyboardInterrupt`` in the cell's code only
(at once if it came while the request was still arriving) and never in the middle of a tool
call's request and reply, so the channel stays in step and the session keeps its state.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, cast

from safeexec._support.seeding import seed_randomness
from safeexec._support.tracebacks import exception_message, format_exception

# One exception class for refused or failed tool calls in every mode, so sandboxed code can
# ``except ToolError`` whether it runs here or in-process.
from safeexec.errors import ToolError
from safeexec.sandbox.channel import ProtocolError, recv_frame, send_frame
from safeexec.sandbox.protocol import Display, Done, Reply, Run, ToolCall
from safeexec.sandbox.python_executor import Executor, PythonExecutor
from safeexec.sandbox.worker_display import bundle_of

if TYPE_CHECKING:
    from safeexec.model.codec import JSONValue

__all__ = ["ToolError", "serve"]

FIGURES_DIR = "figures"


class _Interrupts:
    """The worker's ``SIGINT`` handler: ``KeyboardInterrupt`` in the cell, nowhere else.

    The host sends a cell's interrupt only after its request, so a signal that finds the next
    request waiting in the channel, or a cell being prepared, is held and raised the moment the
    cell's code starts. A signal with no request in sight was meant for a cell that has already
    finished and is dropped. Inside a :meth:`deferred` section (a tool call's request and reply)
    it is held and raised when the section ends.
    """

    def __init__(self, channel: socket.socket) -> None:
        # Two pollers: the handler may run while the loop is blocked in the waiting one.
        self._waiting, self._peeking = select.poll(), select.poll()
        for poller in (self._waiting, self._peeking):
            poller.register(channel.fileno(), select.POLLIN)
        self._in_cell = False
        self._armed = False
        self._deferring = 0
        self._pending = False

    def install(self) -> None:
        signal.signal(signal.SIGINT, self._on_signal)

    def _on_signal(self, _signum: int, _frame: FrameType | None) -> None:
        if self._armed and not self._deferring:
            raise KeyboardInterrupt
        if self._armed or self._in_cell or self._request_waiting():
            self._pending = True

    def _request_waiting(self) -> bool:
        try:
            return bool(self._peeking.poll(0))
        except RuntimeError:  # a second signal ran this handler inside the first one's peek
            return True

    def wait_for_request(self) -> None:
        """Block until the host's next request starts to arrive (or the channel closes)."""
        while not self._waiting.poll():
            pass

    @contextlib.contextmanager
    def cell(self) -> Iterator[None]:
        """One request, from its first byte to its answer: an interrupt is for this cell."""
        self._in_cell = True
        try:
            yield
        finally:
            self._in_cell = False
            self._pending = False

    @contextlib.contextmanager
    def armed(self) -> Iterator[None]:
        """Let an interrupt reach the code run inside (the cell), one held since the request
        arrived at once."""
        self._armed = True
        try:
            if self._pending:
                self._pending = False
                raise KeyboardInterrupt
            yield
        finally:
            self._armed = False

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Hold an interrupt until the section ends, then raise it (if still in the cell)."""
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1
        if self._pending and self._armed and not self._deferring:
            self._pending = False
            raise KeyboardInterrupt


class _ToolChannel:
    """Sends tool calls to the host mid-run and waits for each reply (one call at a time)."""

    def __init__(self, channel: socket.socket, interrupts: _Interrupts) -> None:
        self._channel = channel
        self._interrupts = interrupts
        self._lock = threading.Lock()

    def proxy(self, name: str) -> Callable[..., object]:
        def call_tool(*args: object, **kwargs: object) -> object:
            _check_plain(args, depth=0)
            _check_plain(kwargs, depth=0)
            # Checked above: exact JSON types only.
            call = ToolCall(
                name=name,
                args=cast("tuple[JSONValue, ...]", args),
                kwargs=cast("dict[str, JSONValue]", kwargs),
            )
            # An interrupt between the request and its reply would leave the reply unread and
            # hand it to the next call: hold it until the reply is in.
            with self._interrupts.deferred(), self._lock:
                send_frame(self._channel, call.to_message())
                reply = Reply.from_message(recv_frame(self._channel))
            if reply.ok:
                return reply.value
            raise ToolError(reply.error or f"tool {name!r} failed")

        call_tool.__name__ = call_tool.__qualname__ = name
        return call_tool

    def send_display(self, frame: Display) -> None:
        """Send one rich value to the host (no reply); an interrupt waits until it is sent."""
        with self._interrupts.deferred(), self._lock:
            send_frame(self._channel, frame.to_message())

    def display(self, *objects: object) -> None:
        """``display(obj, ...)`` for the cell's code: each object's MIME bundle to the host."""
        _flush_streams()  # output printed before the display comes before it
        for obj in objects:
            self.send_display(bundle_of(obj, kind="display"))


_PLAIN_SCALARS = (str, int, float, bool, type(None))
_MAX_DEPTH = 64


def _check_plain(value: object, *, depth: int) -> None:
    """Only exact JSON types may cross to the host: no subclasses, whose methods are user code."""
    kind = type(value)
    if depth > _MAX_DEPTH:
        raise TypeError("tool arguments are nested too deeply to cross to the host")
    if kind in _PLAIN_SCALARS:
        return
    if kind is list or kind is tuple:
        for item in value:  # type: ignore[attr-defined]
            _check_plain(item, depth=depth + 1)
        return
    if kind is dict:
        for key, item in value.items():  # type: ignore[attr-defined]
            if type(key) is not str:
                raise TypeError(f"a {type(key).__name__} dict key cannot cross to the host")
            _check_plain(item, depth=depth + 1)
        return
    raise TypeError(
        f"a {kind.__name__} cannot cross to the host; pass plain str, int, float, bool, None, "
        "list or dict values"
    )


def _write_traceback(exc: BaseException) -> str:
    """Write the trimmed traceback of ``exc`` to stderr, as Python would; the text written."""
    text = format_exception(exc)
    os.write(2, text.encode("utf-8", "backslashreplace"))
    return text


def _flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:
            pass


def _save_figures(workdir: Path, cell: int) -> None:
    """Save and close every open matplotlib figure, if the code used pyplot."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    try:
        numbers = list(pyplot.get_fignums())
        if numbers:
            (workdir / FIGURES_DIR).mkdir(exist_ok=True)
        for number in numbers:
            figure = pyplot.figure(number)
            figure.savefig(workdir / FIGURES_DIR / f"cell-{cell}-figure-{number}.png", format="png")
        pyplot.close("all")
    except BaseException as exc:
        os.write(2, f"safeexec: could not save figures: {type(exc).__name__}\n".encode())


def _line_buffered(on: bool) -> None:
    """Flush stdout at every newline while the host streams output (block-buffered otherwise:
    a write per line costs a system call, which a cell printing many lines would pay)."""
    for stream in (sys.__stdout__, sys.stdout):
        # The cell may have replaced sys.stdout with anything.
        with contextlib.suppress(BaseException):
            if getattr(stream, "line_buffering", None) is on:
                continue  # as the last cell left it (a reconfigure would flush, every cell)
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(line_buffering=on)


def _reap_orphans() -> None:
    """As pid 1 of the session's namespace the worker inherits orphans; reap the finished ones."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _run_cell(
    executor: Executor,
    request: Run,
    *,
    cell: int,
    workdir: Path,
    interrupts: _Interrupts,
    tool_channel: _ToolChannel,
) -> Done:
    import linecache

    code = request.code
    _line_buffered(request.stream)
    filename = f"<cell-{cell}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    outcome = Done(ok=True)
    worker_pid = os.getpid()
    _reap_orphans()  # processes the host killed after the last cell count against the limit
    try:
        with interrupts.armed():
            shown = executor.execute(code, filename=filename)
            if shown is not None:
                print(shown)
                _flush_streams()
                tool_channel.send_display(_result_bundle(executor, shown))
    except BaseException as exc:  # user code may raise anything, SystemExit included
        _flush_streams()
        if not _clean_exit(exc):
            written = _write_traceback(exc)
            outcome = Done(
                ok=False,
                error_type=type(exc).__name__,
                error_message=exception_message(exc),
                error_traceback=written,
            )
    finally:
        _flush_streams()
        if os.getpid() != worker_pid:
            # A child the cell forked fell out of it (no os._exit): it holds a copy of the
            # channel and must neither answer for the cell nor read the host's next request.
            os._exit(0 if outcome.ok else 1)
    _save_figures(workdir, cell)
    _reap_orphans()
    return outcome


def _clean_exit(exc: BaseException) -> bool:
    """Whether ``exc`` is a script's ordinary end: ``sys.exit()``, ``sys.exit(0)``, ``exit(0)``.

    Only the exact ``SystemExit`` type, and a code of an exact builtin type compared in C: no
    method of an object the cell made runs here (a subclass or a lying ``__eq__`` is an error).
    """
    if type(exc) is not SystemExit:
        return False
    code = exc.code
    return code is None or (type(code) in (int, bool) and code == 0)


def _result_bundle(executor: Executor, shown: str) -> Display:
    """The final expression as a rich result: every representation of the value in plain
    mode; in restricted mode only its text (the worker calls no sandbox method outside the
    guards)."""
    if isinstance(executor, PythonExecutor):
        return bundle_of(executor.last_value, kind="result")
    return Display(kind="result", data={"text/plain": shown[: 64 * 1024]})


def serve(
    channel: socket.socket,
    *,
    executor: Executor,
    tool_names: list[str],
    workdir: Path,
    seed: int | None = None,
) -> None:
    """Answer the host's requests until it goes away; never returns.

    ``seed`` seeds ``random`` now and ``numpy.random`` when numpy is (or was) imported.
    """
    if seed is not None:
        seed_randomness(seed)
    interrupts = _Interrupts(channel)
    interrupts.install()
    tool_channel = _ToolChannel(channel, interrupts)
    bound: dict[str, Callable[..., object]] = {}
    if isinstance(executor, PythonExecutor) and "display" not in tool_names:
        bound["display"] = tool_channel.display
    bound.update({name: tool_channel.proxy(name) for name in tool_names})
    executor.bind_tools(bound)
    cell = 0
    while True:
        interrupts.wait_for_request()
        with interrupts.cell():
            try:
                request = Run.from_message(recv_frame(channel))
            except (EOFError, OSError):
                os._exit(0)
            except ProtocolError:
                os._exit(2)
            cell += 1
            outcome = _run_cell(
                executor,
                request,
                cell=cell,
                workdir=workdir,
                interrupts=interrupts,
                tool_channel=tool_channel,
            )
        try:
            send_frame(channel, outcome.to_message())
        except OSError:
            os._exit(0)
