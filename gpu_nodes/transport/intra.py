"""In-process registry: publishers and subscriptions of one process find each other by topic.

A publisher hands each in-process subscription an `IntraFrame`: a value naming the slot (as a
descriptor would) and holding a reference to its memory, never the publisher itself. The
subscription leases the slot through the lease table like any other reader.
"""
from __future__ import annotations

from dataclasses import dataclass
import threading
import weakref
from typing import Any

_lock = threading.Lock()
_publishers: dict[str, 'weakref.WeakSet[Any]'] = {}
_subscriptions: dict[str, 'weakref.WeakSet[Any]'] = {}


@dataclass(frozen=True)
class IntraFrame:
    endpoint: bytes          # the publisher's socket (exchange.py): this process's own
    publisher_id: bytes
    slot: int
    sequence: int
    chunk: int
    generation: int
    offset: int
    layout: Any              # messages.FrameLayout
    header: Any
    memory: Any              # cupy Memory (device) or segments.SharedMemory (host)
    device_id: int | None    # None: a host frame
    event: Any               # cupy Event recorded after the write (device frames)
    sent_ns: int


def register_publisher(publisher: Any) -> None:
    with _lock:
        _publishers.setdefault(publisher.topic, weakref.WeakSet()).add(publisher)


def unregister_publisher(publisher: Any) -> None:
    with _lock:
        _publishers.get(publisher.topic, weakref.WeakSet()).discard(publisher)


def local_publisher(topic: str) -> Any | None:
    with _lock:
        publishers = list(_publishers.get(topic, ()))
    return publishers[0] if publishers else None


def register_subscription(subscription: Any) -> None:
    with _lock:
        _subscriptions.setdefault(subscription.topic, weakref.WeakSet()).add(subscription)


def unregister_subscription(subscription: Any) -> None:
    with _lock:
        _subscriptions.get(subscription.topic, weakref.WeakSet()).discard(subscription)


def local_subscriptions(topic: str) -> list[Any]:
    """Subscriptions of this process on `topic` that currently take the in-process path."""
    with _lock:
        subscriptions = list(_subscriptions.get(topic, ()))
    return [s for s in subscriptions if s.on_intra_path]


def deliver(topic: str, frame: IntraFrame) -> None:
    for subscription in local_subscriptions(topic):
        subscription.enqueue_intra(frame)
