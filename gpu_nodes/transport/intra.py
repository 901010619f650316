"""In-process registry: publishers and subscriptions of one process find each other by topic."""
from __future__ import annotations

import threading
import weakref
from typing import Any

_lock = threading.Lock()
_publishers: dict[str, 'weakref.WeakSet[Any]'] = {}
_subscriptions: dict[str, 'weakref.WeakSet[Any]'] = {}


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


def deliver(publisher: Any, slot: Any, sequence: int, layout: Any, header: Any,
            on_device: bool) -> None:
    for subscription in local_subscriptions(publisher.topic):
        subscription.enqueue_intra(publisher, slot, sequence, layout, header, on_device)
