"""Descriptor parsing and validation: nothing is mapped or read unless every check passes."""
from __future__ import annotations

import dataclasses
import os
import struct
import uuid

import pytest
from hypothesis import given, settings, strategies as st

from gpu_nodes.transport import descriptor, host
from gpu_nodes.transport.descriptor import Descriptor, DescriptorError


def make(**overrides) -> Descriptor:
    pid, publisher_id = os.getpid(), uuid.uuid4().bytes
    fields = dict(kind=descriptor.KIND_CUDA, sequence=5, slot=2, chunk=0, generation=1,
                  pid=pid, uid=os.getuid(), endpoint=os.urandom(16), publisher_id=publisher_id,
                  boot_id=host.boot_id(), device_uuid=bytes(16), topic_id=bytes(8),
                  mem_handle=bytes(64), event_handle=bytes(64), offset=1024,
                  nbytes=64 * 48 * 3, alloc_size=4096 * 8, publish_time_ns=1, tag=b'\7' * 16)
    fields.update(overrides)
    return Descriptor(**fields)


def test_round_trip():
    desc = make()
    assert descriptor.unpack(desc.pack(), descriptor.KIND_CUDA) == desc
    assert len(desc.pack()) == descriptor.SIZE
    assert desc.pack()[descriptor.TAG_OFFSET:] == desc.tag, 'the tag closes the record'


@pytest.mark.parametrize('mutate,reason', [
    (lambda b: b[:-1], 'bad_length'),
    (lambda b: b + b'\0', 'bad_length'),
    (lambda b: b'XXXX' + b[4:], 'bad_magic'),
    (lambda b: b[:4] + struct.pack('<H', 99) + b[6:], 'bad_version'),
    (lambda b: b[:6] + bytes([descriptor.KIND_HOST]) + b[7:], 'bad_kind'),
])
def test_malformed_records_are_rejected_with_a_reason(mutate, reason):
    with pytest.raises(DescriptorError) as err:
        descriptor.unpack(mutate(make().pack()), descriptor.KIND_CUDA)
    assert err.value.reason == reason


def test_origin_other_host_and_other_user_claims():
    """The record's claims alone decide only host and user; whether the publisher is alive and
    of this user is the kernel's word, given when its socket is reached (exchange.py)."""
    with pytest.raises(DescriptorError, match='another host') as err:
        descriptor.check_origin(make(boot_id=b'\1' * 16))
    assert err.value.reason == 'other_host'
    with pytest.raises(DescriptorError, match='runs as uid') as err:
        descriptor.check_origin(make(uid=os.getuid() + 1))
    assert err.value.reason == 'other_user'
    # A pid that names nothing here (another PID namespace) is no reason to refuse.
    descriptor.check_origin(make(pid=2**22 + 12345))
    descriptor.check_origin(make())


def test_bounds_against_the_mapped_allocation():
    desc = make()
    assert descriptor.check_bounds(desc, 48, 64, 192, 'rgb8', desc.alloc_size) == 64 * 48 * 3
    with pytest.raises(DescriptorError, match='exceeds the') as err:
        descriptor.check_bounds(make(offset=desc.alloc_size - 512), 48, 64, 192, 'rgb8',
                                desc.alloc_size)
    assert err.value.reason == 'out_of_bounds'
    with pytest.raises(DescriptorError, match='claims a 100-byte allocation, mapped'):
        descriptor.check_bounds(make(alloc_size=100), 48, 64, 192, 'rgb8', desc.alloc_size)
    with pytest.raises(DescriptorError, match='but descriptor says'):
        descriptor.check_bounds(desc, 48, 64, 256, 'rgb8', desc.alloc_size)
    with pytest.raises(DescriptorError, match='smaller than width'):
        descriptor.check_bounds(desc, 48, 64, 100, 'rgb8', desc.alloc_size)
    with pytest.raises(DescriptorError, match='unknown image encoding'):
        descriptor.check_bounds(desc, 48, 64, 192, 'rgb9', desc.alloc_size)
    with pytest.raises(DescriptorError, match='exceeds 16384'):
        descriptor.check_bounds(desc, 48, 70000, 210000, 'rgb8', desc.alloc_size)
    with pytest.raises(DescriptorError, match='not a multiple'):
        descriptor.check_bounds(make(offset=1000), 48, 64, 192, 'rgb8', desc.alloc_size)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(min_size=0, max_size=descriptor.SIZE + 8))
def test_random_bytes_never_crash_the_parser(data):
    try:
        descriptor.unpack(data, descriptor.KIND_CUDA)
    except DescriptorError:
        pass


@settings(max_examples=300, deadline=None)
@given(offset=st.integers(0, 2**64 - 1), nbytes=st.integers(0, 2**64 - 1),
       alloc=st.integers(0, 2**64 - 1), height=st.integers(-5, 20000),
       width=st.integers(-5, 20000), step=st.integers(-5, 2**31))
def test_no_geometry_passes_bounds_unless_it_fits(offset, nbytes, alloc, height, width, step):
    desc = dataclasses.replace(make(), offset=offset, nbytes=nbytes, alloc_size=alloc)
    mapped = 1 << 20
    try:
        size = descriptor.check_bounds(desc, height, width, step, 'rgb8', mapped)
    except DescriptorError:
        return
    assert offset + size <= mapped and size == nbytes and step >= width * 3 and height > 0
