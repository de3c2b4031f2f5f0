"""The ``logging`` view: loggers, handlers and formatters of the executor's own.

In-process the real module's loggers are the host's (``basicConfig`` would add a handler to the
host's root logger, and ``Logger.manager.loggerDict`` lists every host logger and its open
streams). The view keeps its own hierarchy per executor; handlers write to the cell's output
(``StreamHandler()``, or any stream object the code holds) or to a file beneath the workdir
(``FileHandler``, through the workdir's ``open``). Records carry text, never a traceback
(``exc_info`` is formatted at once by the runtime's trimming rule), and a ``{``-style format
cannot walk attributes (the runtime's safe ``str.format``).
"""

from __future__ import annotations

import string
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from safeexec._support.tracebacks import format_exception
from safeexec.restricted.guards import _SAFE_FORMATTER, GuardError, RuntimeClass

if TYPE_CHECKING:
    from safeexec.restricted.cell import Cell

__all__ = ["logging_view"]

_LEVELS = {"CRITICAL": 50, "ERROR": 40, "WARNING": 30, "INFO": 20, "DEBUG": 10, "NOTSET": 0}
_NAMES = {value: name for name, value in _LEVELS.items()}
_DEFAULT_FORMAT = "%(levelname)s:%(name)s:%(message)s"
_START = time.time()


def _level(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value in _LEVELS:
        return _LEVELS[value]
    raise ValueError(f"Unknown level: {value!r}")


def getLevelName(level: object) -> object:
    """``logging.getLevelName``: the name of a level, or the level of a name."""
    if isinstance(level, str):
        return _LEVELS.get(level, f"Level {level}")
    return _NAMES.get(level, f"Level {level}")  # type: ignore[call-overload]


class _Unpicklable(metaclass=RuntimeClass):
    __slots__ = ()

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("runtime objects cannot be pickled or copied in restricted mode")


class LogRecord(_Unpicklable):
    """What a handler is given: the logger's name, the level, the message and its arguments."""

    __slots__ = (
        "args",
        "asctime",
        "created",
        "exc_text",
        "levelname",
        "levelno",
        "message",
        "msecs",
        "msg",
        "name",
        "threadName",
    )

    def __init__(self, name: str, level: int, msg: object, args: tuple[object, ...]) -> None:
        self.name = name
        self.levelno = level
        self.levelname = str(getLevelName(level))
        self.msg = msg
        self.args = args
        self.created = time.time()
        self.msecs = int((self.created % 1) * 1000)
        self.exc_text: str | None = None
        self.message = ""
        self.asctime = ""
        self.threadName = threading.current_thread().name

    def getMessage(self) -> str:
        text = str(self.msg)
        return text % self.args if self.args else text

    def fields(self) -> dict[str, object]:
        names = (*self.__slots__, "relativeCreated", "filename", "module", "lineno", "funcName")
        values: dict[str, object] = {n: getattr(self, n) for n in self.__slots__}
        values.update(
            relativeCreated=(self.created - _START) * 1000,
            filename="<cell>",
            module="__sandbox__",
            lineno=0,
            funcName="<module>",
            process=0,
            thread=threading.get_ident(),
        )
        return {n: values[n] for n in (*names, "process", "thread")}


class Formatter(_Unpicklable):
    """``logging.Formatter`` with ``%``, ``{`` (no attribute walks) and ``$`` styles."""

    __slots__ = ("datefmt", "fmt", "style")

    def __init__(
        self, fmt: str | None = None, datefmt: str | None = None, style: str = "%"
    ) -> None:
        if style not in ("%", "{", "$"):
            raise ValueError(f"Style must be one of: %,{{,$ (not {style!r})")
        default = {"%": _DEFAULT_FORMAT, "{": "{levelname}:{name}:{message}"}
        self.fmt = str(fmt) if fmt is not None else default.get(style, "${message}")
        self.datefmt = datefmt
        self.style = style

    def formatTime(self, record: LogRecord, datefmt: str | None = None) -> str:
        stamp = time.localtime(record.created)
        if datefmt:
            return time.strftime(datefmt, stamp)
        return f"{time.strftime('%Y-%m-%d %H:%M:%S', stamp)},{record.msecs:03d}"

    def format(self, record: LogRecord) -> str:
        record.message = record.getMessage()
        record.asctime = self.formatTime(record, self.datefmt)
        fields = record.fields()
        if self.style == "%":
            text = self.fmt % fields
        elif self.style == "{":
            text = _SAFE_FORMATTER.vformat(self.fmt, (), fields)
        else:
            text = string.Template(self.fmt).substitute(fields)
        if record.exc_text:
            text = f"{text}\n{record.exc_text.rstrip()}"
        return text


class Handler(_Unpicklable):
    """``logging.Handler``: subclass it and define ``emit(record)``."""

    __slots__ = ("formatter", "level")

    def __init__(self, level: object = 0) -> None:
        self.level = _level(level)
        self.formatter: Formatter | None = None

    def setLevel(self, level: object) -> None:
        self.level = _level(level)

    def setFormatter(self, fmt: Formatter | None) -> None:
        self.formatter = fmt

    def format(self, record: LogRecord) -> str:
        return (self.formatter or _PLAIN).format(record)

    def handle(self, record: LogRecord) -> None:
        if record.levelno >= self.level:
            self.emit(record)

    def emit(self, record: LogRecord) -> None:
        raise NotImplementedError("emit must be implemented by Handler subclasses")

    def flush(self) -> None:
        """Nothing buffered."""

    def close(self) -> None:
        """Nothing to release."""


_PLAIN = Formatter("%(message)s")


class NullHandler(Handler):
    """``logging.NullHandler``: drops every record."""

    __slots__ = ()

    def emit(self, record: LogRecord) -> None:
        """Drop it."""


def logging_view(cell: Cell) -> Mapping[str, dict[str, object]]:
    """The attributes of the ``logging`` view for one cell."""
    lock = threading.RLock()

    class StreamHandler(Handler):
        """``logging.StreamHandler``: the cell's output, or a stream the code holds."""

        __slots__ = ("stream",)

        def __init__(self, stream: object = None) -> None:
            super().__init__()
            self.stream = stream

        def emit(self, record: LogRecord) -> None:
            text = self.format(record) + "\n"
            if self.stream is None:
                cell.sink.write(text)
            else:
                self.stream.write(text)  # type: ignore[attr-defined]

    class FileHandler(StreamHandler):
        """``logging.FileHandler`` beneath the workdir."""

        __slots__ = ()

        def __init__(self, filename: str, mode: str = "a", encoding: str | None = None) -> None:
            files = cell.files
            if files is None:
                raise GuardError("logging.FileHandler needs a working directory in restricted mode")
            super().__init__(files.open(str(filename), mode, encoding=encoding))

        def emit(self, record: LogRecord) -> None:
            super().emit(record)
            self.stream.flush()  # type: ignore[attr-defined]

        def close(self) -> None:
            self.stream.close()  # type: ignore[attr-defined]

    loggers: dict[str, Logger] = {}

    class Logger(_Unpicklable):
        """``logging.Logger`` of this executor's own hierarchy (from ``getLogger``)."""

        __slots__ = ("_handlers", "disabled", "level", "name", "propagate")

        def __init__(self, name: str, level: object = 0) -> None:
            self.name = name
            self.level = _level(level)
            self._handlers: list[Handler] = []
            self.propagate = True
            self.disabled = False

        def __repr__(self) -> str:
            return f"<Logger {self.name} ({getLevelName(self.getEffectiveLevel())})>"

        @property
        def handlers(self) -> list[Handler]:
            """A copy: ``addHandler``/``removeHandler`` change the logger's own list."""
            return list(self._handlers)

        @property
        def parent(self) -> Logger | None:
            if self is root:
                return None
            name = self.name
            while "." in name:
                name = name.rsplit(".", 1)[0]
                if name in loggers:
                    return loggers[name]
            return root

        def setLevel(self, level: object) -> None:
            self.level = _level(level)

        def getEffectiveLevel(self) -> int:
            logger: Logger | None = self
            while logger is not None:
                if logger.level:
                    return logger.level
                logger = logger.parent
            return 0

        def isEnabledFor(self, level: int) -> bool:
            return level >= max(self.getEffectiveLevel(), disabled[0] + 1)

        def addHandler(self, handler: Handler) -> None:
            if not isinstance(handler, Handler):
                raise TypeError("addHandler() takes a logging.Handler in restricted mode")
            with lock:
                if handler not in self._handlers:
                    self._handlers.append(handler)

        def removeHandler(self, handler: Handler) -> None:
            with lock:
                if handler in self._handlers:
                    self._handlers.remove(handler)

        def hasHandlers(self) -> bool:
            logger: Logger | None = self
            while logger is not None:
                if logger._handlers:
                    return True
                logger = logger.parent if logger.propagate else None
            return False

        def getChild(self, suffix: str) -> Logger:
            return get_logger(suffix if self is root else f"{self.name}.{suffix}")

        def log(self, level: int, msg: object, *args: object, **kwargs: object) -> None:
            if self.disabled or not self.isEnabledFor(_level(level)):
                return
            record = LogRecord(self.name, _level(level), msg, args)
            if kwargs.get("exc_info"):
                error = kwargs["exc_info"]
                if not isinstance(error, BaseException):
                    error = sys.exc_info()[1]
                if error is not None:
                    record.exc_text = format_exception(error)
            handled = False
            logger: Logger | None = self
            with lock:
                while logger is not None:
                    for handler in list(logger._handlers):
                        handled = True
                        handler.handle(record)
                    logger = logger.parent if logger.propagate else None
                if not handled and record.levelno >= _LEVELS["WARNING"]:
                    cell.sink.write(record.getMessage() + "\n")  # the last resort

        def debug(self, msg: object, *args: object, **kwargs: object) -> None:
            self.log(10, msg, *args, **kwargs)

        def info(self, msg: object, *args: object, **kwargs: object) -> None:
            self.log(20, msg, *args, **kwargs)

        def warning(self, msg: object, *args: object, **kwargs: object) -> None:
            self.log(30, msg, *args, **kwargs)

        warn = warning

        def error(self, msg: object, *args: object, **kwargs: object) -> None:
            self.log(40, msg, *args, **kwargs)

        def exception(self, msg: object, *args: object, **kwargs: object) -> None:
            self.log(40, msg, *args, **{"exc_info": True, **kwargs})

        def critical(self, msg: object, *args: object, **kwargs: object) -> None:
            self.log(50, msg, *args, **kwargs)

        fatal = critical

    # ``log.propagate = False``, ``handler.level = ...``: the classes' own attributes.
    writable = cell.guards.writable_attributes
    writable[Logger] = frozenset({"level", "propagate", "disabled"})
    for handler_class in (Handler, StreamHandler, FileHandler, NullHandler):
        writable[handler_class] = frozenset({"level", "formatter"})
    root = Logger("root", _LEVELS["WARNING"])
    disabled = [-1]

    def get_logger(name: str | None = None) -> Logger:
        if not name or name == "root":
            return root
        with lock:
            if name not in loggers:
                loggers[str(name)] = Logger(str(name))
            return loggers[str(name)]

    def basic_config(**kwargs: object) -> None:
        with lock:
            if root._handlers and not kwargs.pop("force", False):
                return
            root._handlers.clear()
            handlers = kwargs.pop("handlers", None)
            filename, stream = kwargs.pop("filename", None), kwargs.pop("stream", None)
            if handlers is None:
                mode = str(kwargs.pop("filemode", "a"))
                encoding = kwargs.pop("encoding", None)
                handler: Handler = (
                    StreamHandler(stream)
                    if filename is None
                    else FileHandler(str(filename), mode, encoding)  # type: ignore[arg-type]
                )
                handlers = [handler]
            style = str(kwargs.pop("style", "%"))
            fmt = kwargs.pop("format", None)
            formatter = Formatter(fmt, kwargs.pop("datefmt", None), style)  # type: ignore[arg-type]
            for handler in handlers:  # type: ignore[attr-defined]
                if handler.formatter is None:
                    handler.setFormatter(formatter)
                root.addHandler(handler)
            if "level" in kwargs:
                root.setLevel(kwargs.pop("level"))
            kwargs.pop("errors", None)
            if kwargs:
                raise ValueError(f"Unrecognised argument(s): {', '.join(sorted(kwargs))}")

    def disable(level: object = 50) -> None:
        disabled[0] = _level(level)

    def module_level(level: int) -> Callable[..., None]:
        def emit(msg: object, *args: object, **kwargs: object) -> None:
            if not root._handlers:
                basic_config()
            root.log(level, msg, *args, **kwargs)

        return emit

    view: dict[str, object] = dict(_LEVELS)
    view.update(
        WARN=30,
        FATAL=50,
        getLogger=get_logger,
        basicConfig=basic_config,
        getLevelName=getLevelName,
        disable=disable,
        Logger=Logger,
        Handler=Handler,
        StreamHandler=StreamHandler,
        FileHandler=FileHandler,
        NullHandler=NullHandler,
        Formatter=Formatter,
        LogRecord=LogRecord,
        root=root,
        debug=module_level(10),
        info=module_level(20),
        warning=module_level(30),
        error=module_level(40),
        critical=module_level(50),
        exception=lambda msg, *args, **kwargs: module_level(40)(
            msg, *args, **{"exc_info": True, **kwargs}
        ),
        log=lambda level, msg, *args, **kwargs: module_level(_level(level))(msg, *args, **kwargs),
    )
    return {"logging": view}
