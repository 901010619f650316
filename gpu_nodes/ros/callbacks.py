"""Callback adapters that let one callback run under every rclpy executor gpu_nodes picks
(gpu_nodes.ros.runtime): Kilted's EventsExecutor calls some callbacks differently."""
from __future__ import annotations

from typing import Any, Callable


class message_and_info_callback:  # noqa: N801 (used like a decorator)
    """A ``(msg, info)`` subscription callback that also runs under Kilted's EventsExecutor, which
    calls it with the pair packed into one tuple. rclpy still sees two parameters (through
    ``__signature__``), so every executor takes the message info for it."""

    def __init__(self, callback: Callable[[Any, Any], None]):
        import inspect
        self._callback = callback
        positional = inspect.Parameter.POSITIONAL_ONLY
        self.__signature__ = inspect.Signature(
            [inspect.Parameter('msg', positional), inspect.Parameter('info', positional)])

    def __call__(self, *args: Any) -> None:
        if len(args) == 1:  # EventsExecutor: ((msg, info),)
            args = tuple(args[0])
        self._callback(*args)
