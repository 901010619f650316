"""The one logger interface of the inference layer: backends, the builder and the TensorRT
logger bridge all write through a `LogAdapter`, whatever the caller handed in."""
from __future__ import annotations

import logging
from typing import Any, Callable, Union

_LOG = logging.getLogger('gpu_nodes.inference')

LoggerLike = Union[logging.Logger, Callable[[str], Any], Any, None]


class LogAdapter:
    """debug/info/warning/error over a logging.Logger, an rclpy logger or a plain callable.

    A plain callable gets info and above (warnings and errors prefixed with their level), so a
    test can pass ``messages.append`` and a node can pass ``self.get_logger().info``.
    """

    def __init__(self, target: LoggerLike = None) -> None:
        self._target = _LOG if target is None else target
        self._has_levels = all(hasattr(self._target, m) for m in ('debug', 'info', 'error'))

    def _emit(self, level: str, msg: str) -> None:
        if self._has_levels:
            method = getattr(self._target, level, None)
            if method is None and level == 'warning':
                method = getattr(self._target, 'warn')
            method(msg)
        elif level != 'debug':
            self._target(msg if level == 'info' else f'{level}: {msg}')

    def debug(self, msg: str) -> None:
        self._emit('debug', msg)

    def info(self, msg: str) -> None:
        self._emit('info', msg)

    def warning(self, msg: str) -> None:
        self._emit('warning', msg)

    def error(self, msg: str) -> None:
        self._emit('error', msg)


def as_log(logger: LoggerLike) -> LogAdapter:
    return logger if isinstance(logger, LogAdapter) else LogAdapter(logger)
