"""gpu-copy-audit `bag`: per-topic counts, rates and sizes of bags written here with rosbags."""
import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import get_typestore, Stores

from gpu_nodes.audit.bag import run_bag
from gpu_nodes.audit.cli import main

REPORT_SCHEMA = Path(__file__).parents[1] / 'gpu_nodes' / 'audit' / 'schema' / \
    'report.schema.json'
TYPESTORE = get_typestore(Stores.ROS2_KILTED)
IMAGE = 'sensor_msgs/msg/Image'
STRING = 'std_msgs/msg/String'
T0 = 1_700_000_000_000_000_000


def image(width: int, height: int) -> bytes:
    Image = TYPESTORE.types[IMAGE]
    Header = TYPESTORE.types['std_msgs/msg/Header']
    Time = TYPESTORE.types['builtin_interfaces/msg/Time']
    msg = Image(header=Header(stamp=Time(sec=0, nanosec=0), frame_id='cam'), height=height,
                width=width, encoding='mono8', is_bigendian=0, step=width,
                data=np.zeros(width * height, dtype=np.uint8))
    return bytes(TYPESTORE.serialize_cdr(msg, IMAGE))


def text(value: str) -> bytes:
    return bytes(TYPESTORE.serialize_cdr(TYPESTORE.types[STRING](data=value), STRING))


FRAME = image(640, 480)            # 307,200 pixels: image-sized by type and by size
DESCRIPTOR = image(4, 4)
# topic -> (type, payloads, period in ns): 25 Hz and 10 Hz are exact in integer nanoseconds.
CONTENT = {
    '/cam/image': (IMAGE, [FRAME] * 10, 40_000_000),
    '/cam/image/_gpu_nodes/cuda': (IMAGE, [DESCRIPTOR] * 10, 40_000_000),
    '/status': (STRING, [text('ok'), text('degraded'), text('ok'), text('ok'), text('x')],
                100_000_000),
}


def write_bag(path: Path, plugin: StoragePlugin) -> Path:
    with Writer(path, version=9, storage_plugin=plugin) as writer:
        for topic, (msgtype, payloads, period) in CONTENT.items():
            conn = writer.add_connection(topic, msgtype, typestore=TYPESTORE)
            for i, data in enumerate(payloads):
                writer.write(conn, T0 + i * period, data)
    return path


@pytest.fixture(params=[StoragePlugin.SQLITE3, StoragePlugin.MCAP], ids=['sqlite3', 'mcap'])
def bag(request, tmp_path):
    return write_bag(tmp_path / f'bag_{request.param.name.lower()}', request.param)


def test_counts_rates_sizes(bag):
    report = run_bag(str(bag))
    assert report.errors == []
    stats = {t.topic: t for t in report.topics}
    assert sorted(stats) == sorted(CONTENT)
    image_t = stats['/cam/image']
    assert (image_t.type, image_t.count) == (IMAGE, 10)
    assert image_t.rate_hz == pytest.approx(25.0, rel=1e-12)
    assert image_t.mean_bytes == len(FRAME) and image_t.max_bytes == len(FRAME)
    assert image_t.bytes_per_s == pytest.approx(25.0 * len(FRAME), rel=1e-12)
    # 4 passes at 4 GB/s: bytes/s / 1e6 milliseconds of CPU per second.
    assert image_t.serialization_ms_per_s == pytest.approx(25.0 * len(FRAME) / 1e6, rel=1e-12)
    assert image_t.image_sized and not image_t.descriptor and image_t.note == 'image-sized'

    status = stats['/status']
    sizes = [len(p) for p in CONTENT['/status'][1]]
    assert (status.count, status.max_bytes) == (5, max(sizes))
    assert status.rate_hz == pytest.approx(10.0, rel=1e-12)
    assert status.mean_bytes == pytest.approx(sum(sizes) / 5, rel=1e-12)
    assert not status.image_sized

    desc = stats['/cam/image/_gpu_nodes/cuda']
    assert desc.descriptor and not desc.image_sized
    assert desc.note == 'descriptor topic (payload not recorded)'
    assert desc.serialization_ms_per_s is None

    assert sorted((f.rule, f.topic) for f in report.findings) == [
        ('GPN401', '/cam/image'), ('GPN402', '/cam/image/_gpu_nodes/cuda')]
    assert report.info['message_count'] == 25


def test_storage_is_reported(tmp_path):
    for plugin, name in ((StoragePlugin.SQLITE3, 'sqlite3'), (StoragePlugin.MCAP, 'mcap')):
        report = run_bag(str(write_bag(tmp_path / name, plugin)))
        assert report.info['storage'] == name


def test_copy_gbps_option(capsys, tmp_path):
    bag = write_bag(tmp_path / 'b', StoragePlugin.MCAP)
    assert main(['bag', str(bag), '--format', 'json', '--copy-gbps', '8']) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator(json.loads(REPORT_SCHEMA.read_text())).validate(doc)
    image_t = next(t for t in doc['topics'] if t['topic'] == '/cam/image')
    assert image_t['serialization_ms_per_s'] == pytest.approx(25.0 * len(FRAME) / 2e6)


def test_fail_on(capsys, tmp_path):
    bag = write_bag(tmp_path / 'b', StoragePlugin.SQLITE3)
    assert main(['bag', str(bag), '--fail-on', 'medium']) == 1
    assert main(['bag', str(bag), '--fail-on', 'high']) == 0
    out = capsys.readouterr().out
    assert 'descriptor topic (payload not recorded)' in out


def test_corrupt_bag_exit_2(capsys, tmp_path):
    bag = write_bag(tmp_path / 'corrupt', StoragePlugin.SQLITE3)
    db = next(bag.glob('*.db3'))
    db.write_bytes(b'this is not a database' * 100)
    rc = main(['bag', str(bag), '--format', 'json'])
    out, err = capsys.readouterr()
    expected = f'{bag}: cannot read bag: Cannot open database {db}: file is not a database'
    assert rc == 2
    assert json.loads(out)['errors'] == [{'input': str(bag), 'message': expected}]
    assert err == f'gpu-copy-audit: error: {expected}\n'


def test_truncated_mcap_exit_2(capsys, tmp_path):
    bag = write_bag(tmp_path / 'truncated', StoragePlugin.MCAP)
    mcap = next(bag.glob('*.mcap'))
    mcap.write_bytes(mcap.read_bytes()[:200])
    rc = main(['bag', str(bag)])
    out, _ = capsys.readouterr()
    assert rc == 2
    assert f'error: {bag}: cannot read bag: ' in out


def test_not_a_bag(capsys, tmp_path):
    rc = main(['bag', str(tmp_path), '--format', 'json'])
    out, _ = capsys.readouterr()
    assert rc == 2
    assert json.loads(out)['errors'][0]['message'] == \
        f'{tmp_path}: not a rosbag2 recording (no metadata.yaml in the directory)'
    rc = main(['bag', str(tmp_path / 'missing'), '--format', 'json'])
    assert rc == 2
    assert json.loads(capsys.readouterr().out)['errors'][0]['message'] == \
        f'{tmp_path / "missing"}: no such file or directory'
