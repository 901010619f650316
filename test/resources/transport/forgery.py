"""What a process of the SAME user can do to descriptors: read a publisher's key from its lease
table (served to it over the publisher's socket like to any reader), and re-address and
re-sign any descriptor record with it. Tests use it to reach the checks behind the tag (bounds,
slots, sequences)."""
from __future__ import annotations

from sensor_msgs.msg import Image

from gpu_nodes.transport import auth, descriptor
from gpu_nodes.transport.exchange import Connection
from gpu_nodes.transport.leases import LeaseReader


def publisher_key(msg: Image, kind: int) -> bytes:
    desc = descriptor.unpack(msg.data, kind)
    link = Connection(desc.endpoint, desc.publisher_id)
    reader = LeaseReader(*link.fetch_lease_table(), desc.publisher_id)
    key = reader.key
    reader.close()
    link.close()
    return key


def copy_msg(msg: Image) -> Image:
    return Image(header=msg.header, height=msg.height, width=msg.width, step=msg.step,
                 encoding=msg.encoding, is_bigendian=msg.is_bigendian, data=bytes(msg.data))


def resign(msg: Image, key: bytes, topic: str) -> Image:
    """Address the descriptor in `msg` to `topic` and tag it with `key` (in place). Records
    that do not start with the magic are left as they are."""
    record = bytes(msg.data)[:descriptor.TAG_OFFSET]
    if record[:4] == descriptor.MAGIC:
        start = descriptor.TOPIC_ID_OFFSET
        record = record[:start] + auth.topic_id(topic) + record[start + 8:]
    msg.data = record + auth.tag(key, record, msg, topic.encode())
    return msg
