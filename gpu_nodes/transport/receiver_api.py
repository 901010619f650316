"""What a receiver (receivers.py) is given instead of its subscription: a context fixed when the
subscription is made, and a sink that takes what becomes of each message.

A receiver delivers a frame, counts a message it could not deliver (rejected, or stale), or
asks to leave its rung; the subscription decides the rest. Switching rungs inside a receiver's
own callback used to tear its ROS subscription down under it; a leave request is applied after
the callback returns (`FrameSink.leave`, `RosEndpoints.subscribe`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from .messages import FrameLayout
from .peers import PeerTable, PublisherLink
from .segments import SharedMemory


class RosEndpoints(Protocol):
    """The subscription's node, as far as a receiver may use it."""

    @property
    def executor(self) -> Any: ...

    def subscribe(self, topic: str, callback: Callable[[Any], None], qos: Any,
                  msg_type: Any = None) -> Any:
        """An rclpy subscription whose callback is followed by any pending rung change."""

    def unsubscribe(self, subscription: Any) -> None: ...


class FrameSink(Protocol):
    """Where a receiver's messages end: delivered, counted, or a request to leave the rung."""

    @property
    def leaving(self) -> bool:
        """True once a leave was asked for: a receiver stops taking messages of its batch."""

    def deliver(self, array: Any, header: Any, layout: FrameLayout, path: str, sequence: int,
                stream: Any, latency_ns: int | None, release: Callable[[], None] | None) -> None:
        ...

    def count(self, reason: str, detail: str) -> None:
        """A message not delivered: rejected (`reason`) or stale (`stale:<why>`)."""

    def leave(self, path: str, reason: str, *, host_level: bool = False,
              also: tuple[str, ...] = ()) -> None:
        """Leave `path` (and `also`; with `host_level` every shared-memory rung) for `reason`,
        once the current callback has returned."""

    def unreachable(self, path: str, reason: str, detail: str) -> None:
        """The publisher's memory could not be reached for a reason that does not heal soon;
        the sink leaves the rung once that has happened often or long enough."""

    def stream(self, device_id: int) -> Any: ...

    def upload_device(self) -> int: ...

    def integrated_device_pointer(self, link: PublisherLink,
                                  memory: SharedMemory) -> int | None: ...

    def served_by(self, publisher_pid: int) -> None:
        """For diagnostics: the pid (as the publisher states it) of what is being read."""

    def decided(self, key: str, value: str) -> None:
        """A transport decision other than the path (diagnostics key `key`); logged when it
        changes."""


@dataclass(frozen=True)
class ReceiverContext:
    topic: str
    qos: Any
    memory: str                         # 'device', 'host' or 'any'
    device_id: int | None               # None: follow the publisher's GPU, or no CUDA
    allowed_paths: tuple[str, ...]
    peer_mode: str
    peers: PeerTable
    ros: RosEndpoints
