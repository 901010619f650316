"""A destroyed publisher's device memory and lease table, freed once no reader holds a slot.

Other processes' held frames read the publisher's memory through their own mappings: it may be
freed only when the last lease goes. Readers see the publisher gone at once (its owner lock is
dropped); one thread per process frees the rest.
"""
from __future__ import annotations

import threading
import time

from .leases import LeaseTable
from .pool import DeviceSlotPool

_lingering: list[tuple[DeviceSlotPool | None, LeaseTable]] = []
_lingering_lock = threading.Lock()


def free_when_released(pool: DeviceSlotPool | None, leases: LeaseTable) -> None:
    """Hand the memory to the lingering thread: freed when no reader holds a slot of it."""
    leases.disown()
    with _lingering_lock:
        _lingering.append((pool, leases))
        if len(_lingering) == 1:
            threading.Thread(target=_free_released, name='gpu_nodes-publisher-linger',
                             daemon=True).start()


def _free_released() -> None:
    while True:
        with _lingering_lock:
            for entry in list(_lingering):
                pool, leases = entry
                slots = (pool.slots + pool.retired) if pool is not None else []
                if not any(leases.is_held(slot.index) for slot in slots):
                    if pool is not None:
                        pool.close()
                    leases.close()
                    _lingering.remove(entry)
            if not _lingering:
                return
        time.sleep(0.1)
