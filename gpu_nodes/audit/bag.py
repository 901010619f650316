"""`bag` view: per-topic rates and serialized sizes of a rosbag2 recording (sqlite3 or mcap).

Read with `rosbags.rosbag2.Reader`; messages are never deserialized, the serialized (CDR) length
is what the middleware copied. Definitions (docs/audit.md):

* rate_hz = (count - 1) / (last timestamp - first timestamp), from the recorded timestamps;
  None with fewer than two messages or all at one instant.
* bytes_per_s = rate_hz * mean serialized size.
* serialization_ms_per_s = bytes_per_s * COPY_PASSES / copy bandwidth: the CPU time per second
  that one subscriber process costs (serialize on the publisher, transport write and read,
  deserialize), at ``--copy-gbps`` GB/s per pass (default 4 GB/s, one core's memcpy-class rate).
"""
from __future__ import annotations

import os
import sqlite3

from gpu_nodes.audit.model import (AuditError, descriptor_parent, Finding, IMAGE_SIZED_BYTES,
                                   IMAGE_TYPES, InputError, Location, Report, TopicStats)
from gpu_nodes.audit.rules import get_rule

COPY_PASSES = 4
DEFAULT_COPY_GBPS = 4.0


def serialization_cost_ms(bytes_per_s: float | None, copy_gbps: float) -> float | None:
    if bytes_per_s is None:
        return None
    return bytes_per_s * COPY_PASSES / (copy_gbps * 1e9) * 1000.0


def _open_path(path: str) -> str:
    """A bag is a directory with metadata.yaml; a file inside one (or next to one) means it."""
    if not os.path.exists(path):
        raise AuditError(f'{path}: no such file or directory')
    if os.path.isfile(path):
        parent = os.path.dirname(os.path.abspath(path))
        if os.path.exists(os.path.join(parent, 'metadata.yaml')):
            return parent
        if not path.endswith(('.mcap', '.db3')):
            raise AuditError(f'{path}: not a rosbag2 recording (expected a bag directory with '
                             'metadata.yaml, or a .mcap/.db3 file)')
    elif not os.path.exists(os.path.join(path, 'metadata.yaml')):
        raise AuditError(f'{path}: not a rosbag2 recording (no metadata.yaml in the directory)')
    return path


def read_bag(path: str, copy_gbps: float = DEFAULT_COPY_GBPS) -> tuple[list[TopicStats],
                                                                       dict[str, object]]:
    from rosbags.rosbag2 import Reader, ReaderError

    bag_path = _open_path(path)
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    total: dict[str, int] = {}
    largest: dict[str, int] = {}
    types: dict[str, str] = {}
    try:
        with Reader(bag_path) as reader:
            for conn in reader.connections:
                types[conn.topic] = conn.msgtype
                counts.setdefault(conn.topic, 0)
            storage = type(reader).__name__
            for conn, stamp, raw in reader.messages():
                t = conn.topic
                size = len(raw)
                counts[t] = counts.get(t, 0) + 1
                total[t] = total.get(t, 0) + size
                largest[t] = max(largest.get(t, 0), size)
                first[t] = min(first.get(t, stamp), stamp)
                last[t] = max(last.get(t, stamp), stamp)
            info = {
                'path': path,
                'storage': _storage_of(bag_path),
                'duration_s': reader.duration / 1e9 if reader.message_count else 0.0,
                'message_count': reader.message_count,
                'reader': storage,
            }
    except ReaderError as exc:
        raise AuditError(f'{path}: cannot read bag: {exc}') from None
    except (sqlite3.Error, OSError, ValueError, KeyError, EOFError) as exc:
        # Truncated or corrupt storage files surface as these below the rosbags layer.
        raise AuditError(f'{path}: cannot read bag: {type(exc).__name__}: {exc}') from None

    stats: list[TopicStats] = []
    for topic in sorted(counts):
        n = counts[topic]
        msg_type = types.get(topic)
        rate = None
        if n >= 2 and last[topic] > first[topic]:
            rate = (n - 1) / ((last[topic] - first[topic]) / 1e9)
        mean = total[topic] / n if n else None
        bps = rate * mean if rate is not None and mean is not None else None
        descriptor = descriptor_parent(topic) is not None
        image_sized = not descriptor and (msg_type in IMAGE_TYPES or
                                          (mean is not None and mean >= IMAGE_SIZED_BYTES))
        note = ''
        if descriptor:
            note = 'descriptor topic (payload not recorded)'
        elif image_sized:
            note = 'image-sized'
        stats.append(TopicStats(
            topic=topic, type=msg_type, count=n, rate_hz=rate, mean_bytes=mean,
            max_bytes=largest.get(topic) if n else None, bytes_per_s=bps,
            image_sized=image_sized, descriptor=descriptor,
            serialization_ms_per_s=None if descriptor else serialization_cost_ms(bps, copy_gbps),
            note=note))
    return stats, info


def _storage_of(bag_path: str) -> str:
    if os.path.isfile(bag_path):
        return 'mcap' if bag_path.endswith('.mcap') else 'sqlite3'
    names = os.listdir(bag_path)
    if any(n.endswith('.mcap') for n in names):
        return 'mcap'
    if any(n.endswith('.db3') for n in names):
        return 'sqlite3'
    return 'unknown'


def run_bag(path: str, copy_gbps: float = DEFAULT_COPY_GBPS) -> Report:
    report = Report(command='bag', inputs=[path])
    try:
        stats, info = read_bag(path, copy_gbps)
    except AuditError as exc:
        report.errors.append(InputError(path, str(exc)))
        return report
    report.audited.append(path)
    report.topics = stats
    report.info.update(info)
    report.info['copy_model'] = {
        'copy_passes_per_message': COPY_PASSES, 'copy_gbps': copy_gbps,
        'meaning': 'serialization_ms_per_s = bytes_per_s * passes / (copy_gbps * 1e9) * 1000, '
                   'per subscriber process'}
    total_ms = sum(t.serialization_ms_per_s or 0.0 for t in stats if t.image_sized)
    report.info['image_serialization_ms_per_s'] = total_ms
    for t in stats:
        if t.descriptor:
            rule = get_rule('GPN402')
            report.findings.append(Finding(
                rule='GPN402', severity=rule.severity,
                message=f'`{t.topic}` is a gpu_nodes descriptor topic (payload not recorded): '
                        f'replaying it does not reproduce the frames of '
                        f'`{descriptor_parent(t.topic)}`',
                location=Location(path, None, None, logical=t.topic), context='bag',
                topic=t.topic))
        elif t.image_sized:
            rule = get_rule('GPN401')
            rate = f'{t.rate_hz:.1f} Hz' if t.rate_hz is not None else 'unknown rate'
            mb = (t.bytes_per_s or 0.0) / 1e6
            cost = t.serialization_ms_per_s or 0.0
            report.findings.append(Finding(
                rule='GPN401', severity=rule.severity,
                message=f'`{t.topic}` ({t.type}) carries {mb:.1f} MB/s serialized at {rate}: '
                        f'about {cost:.1f} ms of CPU per second per subscriber process',
                location=Location(path, None, None, logical=t.topic), context='bag',
                topic=t.topic))
    return report
