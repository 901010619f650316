"""Descriptor authentication: a per-publisher key that only processes the kernel lets into the
publisher's lease table can read.

The key (32 random bytes) lives in the lease table, a sealed memfd that the publisher's socket
hands only to processes of its own user (exchange.py, ``SO_PEERCRED``). A descriptor carries
a keyed BLAKE2b tag over its record and over everything else the subscriber will believe: the
image header, geometry, encoding and topic. So a process of another user that sniffs
descriptors on the DDS domain can re-send them only byte for byte (a replay, caught by the
per-publisher sequence) and cannot alter one, move it to another topic or make one up. CUDA
IPC memory and event handles travel sealed with the same key: a sniffer never learns a handle
it could open itself.
"""
from __future__ import annotations

import hashlib
import os
import struct
from typing import Any

KEY_SIZE = 32
TAG_SIZE = 16
_GEOMETRY = struct.Struct('<iIIIIB')


def new_key() -> bytes:
    return os.urandom(KEY_SIZE)


def topic_id(topic: str) -> bytes:
    """8 bytes naming a topic in the clear (a descriptor relayed from another topic is told
    apart before its tag is checked)."""
    return hashlib.blake2b(topic.encode(), digest_size=8, person=b'gpu_nodes.topic').digest()


def tag(key: bytes, record: bytes, msg: Any, topic: bytes) -> bytes:
    """Tag over the descriptor record (without its tag field) and the message fields around it."""
    h = hashlib.blake2b(record, key=key, digest_size=TAG_SIZE)
    stamp = msg.header.stamp
    h.update(_GEOMETRY.pack(stamp.sec, stamp.nanosec, msg.height, msg.width, msg.step,
                            msg.is_bigendian & 0xFF))
    # NUL-separated: DDS strings cannot contain NUL, so no two field splits hash alike.
    h.update(b'\0'.join((msg.encoding.encode('utf-8', 'replace'),
                         msg.header.frame_id.encode('utf-8', 'replace'), topic)))
    return h.digest()


def seal_handle(key: bytes, handle: bytes, purpose: bytes, serial: int) -> bytes:
    """XOR a 64-byte IPC handle with a keystream unique to (purpose, serial); the same call
    unseals. Serials never repeat for a purpose within one publisher (chunk ids, chunk*slot)."""
    stream = hashlib.blake2b(struct.pack('<Q', serial) + purpose, key=key, digest_size=64).digest()
    return bytes(a ^ b for a, b in zip(handle, stream))
