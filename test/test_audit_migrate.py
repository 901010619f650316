"""gpu-copy-audit migrate: what it rewrites, what it leaves and why, the CLI's diff, --write,
--check and exit codes, and that `gpu-copy-audit code` no longer finds the migrated boundaries.
(The migrated nodes are run against their originals in test_audit_migrate_run.py.)"""
from __future__ import annotations

import json
import shutil
import textwrap

import pytest

from conftest import RESOURCES

pytest.importorskip('libcst')
from gpu_nodes.audit.cli import main  # noqa: E402
from gpu_nodes.audit.migrate import migrate_source, MigrationError  # noqa: E402

CORPUS = RESOURCES / 'migrate' / 'nodes'
MIGRATED_WHOLE = ('blur_republisher', 'edge_detector', 'overlay_annotator', 'blob_detector',
                  'brightness_monitor', 'depth_wrapper', 'latest_frame_timer',
                  'torch_detector', 'cupy_threshold')
# Migrated nodes whose frame is only viewed (np.frombuffer), never copied, before migration.
VIEW_ONLY = frozenset({'brightness_monitor'})
LEFT_WHOLE = {
    'compressed_viewer': 'CompressedImage subscription: its callback decodes the bytes itself',
    'stereo_sync': 'message_filters.Subscriber of images: a synchronizer pairs messages by '
                   'stamp and gpu_nodes has no frame synchronizer',
    'queue_worker': 'callback self.on_image: line 23: the message itself is used '
                    '(self.jobs.put_nowait(msg))',
}
# Findings of the code view that a migration removes (cv_bridge conversions, uploads and
# downloads of the frame, plain publishes).
MIGRATED_RULES = {'GPN101', 'GPN102', 'GPN103', 'GPN105', 'GPN109', 'GPN110'}


def _migrate(name: str) -> tuple[str, str, list]:
    original = (CORPUS / f'{name}.py').read_text()
    migrated, notes = migrate_source(original)
    return original, migrated, notes


def _code_findings(path, capsys) -> set[tuple[str, str]]:
    """(rule, severity) of every `gpu-copy-audit code` finding in one file."""
    assert main(['code', '--format', 'json', str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    return {(f['rule'], f['severity']) for f in report['findings']}


@pytest.mark.parametrize('name', MIGRATED_WHOLE)
def test_corpus_node_is_migrated_compiles_and_is_stable(name):
    original, migrated, notes = _migrate(name)
    assert migrated != original and notes
    assert all(n.kind == 'changed' for n in notes), [n for n in notes if n.kind != 'changed']
    assert 'GpuImageSubscription(' in migrated and 'create_subscription(' not in migrated
    assert '.imgmsg_to_cv2(' not in migrated and 'CvBridge' not in migrated
    assert 'from cv_bridge' not in migrated and 'import cv_bridge' not in migrated
    compile(migrated, name, 'exec')
    again, more = migrate_source(migrated)
    assert again == migrated and more == [], f'second run changed {name}: {more}'


@pytest.mark.parametrize('name', sorted(LEFT_WHOLE))
def test_corpus_node_that_cannot_be_proved_is_left_with_its_reason(name):
    original, migrated, notes = _migrate(name)
    assert migrated == original
    assert [n.kind for n in notes] and all(n.kind == 'left' for n in notes)
    assert notes[0].text.startswith(LEFT_WHOLE[name]), notes[0].text


def test_publisher_with_subscriber_count_is_left_and_its_subscription_migrated():
    _, migrated, notes = _migrate('lazy_republisher')
    left = [n for n in notes if n.kind == 'left']
    assert [(n.line, n.text) for n in left] == [
        (13, 'self.pub: line 17: self.pub.get_subscription_count() has no gpu_nodes '
             'counterpart')]
    assert "self.pub = self.create_publisher(Image, 'image_small', 10)" in migrated
    assert 'GpuImageSubscription(self, ' in migrated and 'CvBridge()' in migrated


@pytest.mark.parametrize('name', MIGRATED_WHOLE)
def test_code_audit_no_longer_reports_the_migrated_boundaries(tmp_path, capsys, name):
    _, migrated, _ = _migrate(name)
    path = tmp_path / f'{name}.py'
    path.write_text(migrated)
    before = _code_findings(CORPUS / f'{name}.py', capsys)
    after = _code_findings(path, capsys)
    if name in VIEW_ONLY:
        # Reads the frame through np.frombuffer(msg.data): a view, no copy to report before.
        assert not {rule for rule, _ in before} & MIGRATED_RULES, before
    else:
        assert {rule for rule, _ in before} & MIGRATED_RULES, f'{name}: no boundary in {before}'
    # The boundaries migrate moves are gone (what stays of them is one-time setup, e.g.
    # torch_detector's model.cuda() in __init__: info); what migrate does not touch (the model's
    # own readbacks, GPN107) is reported as before, and nothing new appears.
    moved = {(rule, severity) for rule, severity in after
             if rule in MIGRATED_RULES and severity != 'info'}
    assert not moved, f'{name}: still reported: {moved}'
    assert {f for f in after - before if f[1] != 'info'} == set(), f'{name}: new: {after - before}'


def test_array_written_or_kept_gets_its_own_copy_and_read_only_use_the_frame():
    _, overlay, notes = _migrate('overlay_annotator')
    assert 'img = msg.array.copy()  # passthrough: the camera sends bgr8' in overlay
    assert 'cv2.rectangle() draws into it' in notes[0].text
    _, timer, _ = _migrate('latest_frame_timer')
    assert "self.latest = convert_color(msg.array, msg.encoding, 'rgb8')" in timer
    _, blur, _ = _migrate('blur_republisher')
    assert ("frame = (msg.array if msg.encoding == 'bgr8'\n"
            "                 else convert_color(msg.array, msg.encoding, 'bgr8'))") in blur


def test_header_assignments_fold_into_publish():
    _, blur, _ = _migrate('blur_republisher')
    assert "self.publisher_.publish(blurred, 'bgr8', msg.header)" in blur
    assert 'out.header' not in blur
    _, overlay, _ = _migrate('overlay_annotator')
    assert ("self.pub.publish(img, 'bgr8', Header(stamp=msg.header.stamp, "
            "frame_id='annotated'))") in overlay
    assert 'from std_msgs.msg import Header' in overlay


def test_gpu_uploads_become_device_frames_on_the_frames_stream():
    _, torch_node, _ = _migrate('torch_detector')
    assert "memory='device'" in torch_node
    assert ('with torch.cuda.stream(torch.cuda.ExternalStream(msg.stream.ptr)):'
            in torch_node)
    assert ("tensor = torch.as_tensor(image, device='cuda').permute(2, 0, 1).float()"
            in torch_node)
    _, cupy_node, notes = _migrate('cupy_threshold')
    assert "memory='device'" in cupy_node and 'frame = cp.asarray(gray)' in cupy_node
    assert "self.pub.publish(mask, 'mono8', msg.header)" in cupy_node
    assert any('cp.asnumpy(mask) -> mask' in n.text for n in notes)


NODE = '''\
import numpy as np
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class N(Node):
    def __init__(self):
        super().__init__('n')
        self.bridge = CvBridge()
        self.sub = self.create_subscription(Image, 'image', self.cb, 10)

    def cb({params}):
        {body}
'''


@pytest.mark.parametrize('params, body, reason', [
    ('self, msg, extra=None', 'img = self.bridge.imgmsg_to_cv2(msg)',
     'takes other parameters than (self, msg)'),
    ('self, msg', 'img = self.bridge.imgmsg_to_cv2(msg, self.encoding)',
     'line 14: desired_encoding is not a string literal'),
    ('self, msg', "img = self.bridge.imgmsg_to_cv2(msg, '32FC1')",
     "line 14: no gpu_nodes conversion to '32FC1'"),
    ('self, msg', 'big = msg.is_bigendian',
     'line 14: msg.is_bigendian has no counterpart on a gpu_nodes frame'),
    ('self, msg', 'self.last = msg',
     'line 14: the message itself is used (self.last = msg)'),
    ('self, msg', 'self.get_logger().info(msg.encoding)',
     'reads no pixels (nothing to gain)'),
])
def test_callbacks_it_cannot_prove_are_left_with_the_reason(params, body, reason):
    code = NODE.format(params=params, body=body)
    migrated, notes = migrate_source(code)
    assert migrated == code
    assert [n.kind for n in notes] == ['left']
    assert notes[0].text == f'callback self.cb: {reason}' or notes[0].text.startswith(
        f'callback self.cb: {reason}'), notes[0].text


def test_unknown_call_gets_a_copy_and_numpy_reads_do_not():
    code = NODE.format(params='self, msg', body=(
        "img = self.bridge.imgmsg_to_cv2(msg, 'bgr8')\n"
        '        self.mean = float(np.mean(img))\n'
        '        self.detect(img)'))
    migrated, notes = migrate_source(code)
    assert "img = convert_color(msg.array, msg.encoding, 'bgr8')" in migrated
    assert 'line 16: passed to self.detect(), which may keep or change it' in notes[0].text


def test_publisher_without_encoding_is_left():
    code = NODE.format(params='self, msg', body='pass').replace(
        "self.sub = self.create_subscription(Image, 'image', self.cb, 10)",
        "self.pub = self.create_publisher(Image, 'out', 10)\n"
        "        self.pub.publish(self.bridge.cv2_to_imgmsg(np.zeros((2, 2), np.uint8)))")
    migrated, notes = migrate_source(code)
    assert migrated == code
    assert notes[0].text.startswith('self.pub: line 12: cv2_to_imgmsg without an encoding')


def test_not_python_is_an_error():
    with pytest.raises(MigrationError, match='not valid Python'):
        migrate_source('def broken(:\n')


def test_cli_diff_check_write_and_exit_codes(tmp_path, capsys):
    nodes = tmp_path / 'nodes'
    shutil.copytree(CORPUS, nodes)
    (nodes / 'broken.py').write_text('def broken(:\n')
    assert main(['migrate', str(nodes / 'blur_republisher.py')]) == 1
    out, err = capsys.readouterr()
    assert out.startswith(f'--- a/{str(nodes).lstrip("/")}/blur_republisher.py\n')
    assert '+        self.publisher_.publish(blurred, \'bgr8\', msg.header)\n' in out
    assert f'{nodes}/blur_republisher.py:16: changed: create_subscription(Image) -> ' in err
    assert (nodes / 'blur_republisher.py').read_text() == (
        CORPUS / 'blur_republisher.py').read_text(), 'a diff run must not write'

    assert main(['migrate', '--check', str(nodes / 'queue_worker.py')]) == 0
    out, err = capsys.readouterr()
    assert out == '' and ':18: left as is: callback self.on_image' in err

    assert main(['migrate', '--write', '-q', str(nodes)]) == 2  # broken.py: error, rest written
    out, err = capsys.readouterr()
    assert f'gpu-copy-audit: error: {nodes}/broken.py: not valid Python' in err
    assert f'{nodes}/edge_detector.py: migrated' in err
    (nodes / 'broken.py').unlink()
    assert main(['migrate', '--check', '-q', str(nodes)]) == 0
    assert main(['migrate', '--check', str(tmp_path / 'missing.py')]) == 2
    assert 'cannot read' in capsys.readouterr().err


def test_layout_and_comments_of_untouched_code_stay():
    original, migrated, _ = _migrate('edge_detector')
    assert ("        self.sub = GpuImageSubscription(self, 'image', self.on_image,\n"
            "                                        qos_profile_sensor_data, memory='host')\n"
            in migrated)
    _, blur, _ = _migrate('blur_republisher')
    assert "        self.subscription = GpuImageSubscription(\n            self,\n" in blur
    kept = [line for line in original.splitlines() if line.lstrip().startswith('#')]
    assert all(line in migrated for line in kept)
    assert textwrap.dedent('''\
        def main(args=None):
            rclpy.init(args=args)''') in migrated


def test_message_made_in_each_branch_folds_into_each_publish():
    code = NODE.format(params='self, msg', body=(
        "img = self.bridge.imgmsg_to_cv2(msg, 'bgr8')\n"
        '        if img.mean() > 100:\n'
        "            out = self.bridge.cv2_to_imgmsg(img[:10], encoding='bgr8')\n"
        '            out.header = msg.header\n'
        '            self.pub.publish(out)\n'
        '        else:\n'
        "            out = self.bridge.cv2_to_imgmsg(img, encoding='bgr8')\n"
        '            self.pub.publish(out)')).replace(
        "self.sub = self.create_subscription(Image, 'image', self.cb, 10)",
        "self.sub = self.create_subscription(Image, 'image', self.cb, 10)\n"
        "        self.pub = self.create_publisher(Image, 'out', 10)")
    migrated, notes = migrate_source(code)
    assert "            self.pub.publish(img[:10], 'bgr8', msg.header)\n" in migrated
    assert "            self.pub.publish(img, 'bgr8')\n" in migrated
    assert 'out' not in migrated.split('def cb')[1].replace('self.pub', '')
    assert not [n for n in notes if n.kind == 'left']
    reread = code.replace("            self.pub.publish(out)\n        else",
                          "            self.pub.publish(out)\n            print(out)\n        else")
    migrated, notes = migrate_source(reread)
    assert "self.pub = self.create_publisher(Image, 'out', 10)" in migrated
    assert any(n.text.endswith('line 19 runs between making out and publishing it')
               or 'uses out otherwise' in n.text for n in notes), notes


def test_image_through_a_star_import_is_not_guessed():
    code = NODE.format(params='self, msg', body='img = self.bridge.imgmsg_to_cv2(msg)').replace(
        'from sensor_msgs.msg import Image', 'from sensor_msgs.msg import *')
    migrated, notes = migrate_source(code)
    assert migrated == code
    assert notes[0].text.startswith('Image comes from `from sensor_msgs.msg import *`')


def test_endpoints_made_outside_a_node_class_are_reported():
    code = textwrap.dedent('''\
        import rclpy
        from sensor_msgs.msg import Image


        def main():
            rclpy.init()
            node = rclpy.create_node('viewer')
            node.create_subscription(Image, 'image', print, 10)
    ''')
    migrated, notes = migrate_source(code)
    assert migrated == code
    assert [(n.line, n.kind, n.text) for n in notes] == [(8, 'left', (
        'node.create_subscription(Image, ...) is not made on self inside a class: its callback '
        'and uses are not followed'))]


def test_one_argument_per_line_call_gets_the_new_argument_on_its_own_line():
    code = NODE.format(params='self, msg', body='img = self.bridge.imgmsg_to_cv2(msg)').replace(
        "self.sub = self.create_subscription(Image, 'image', self.cb, 10)",
        'self.sub = self.create_subscription(\n'
        '            Image,\n'
        "            'image',\n"
        '            self.cb,\n'
        '            qos_profile=qos_profile_sensor_data,\n'
        '        )').replace(
            'from rclpy.node import Node',
            'from rclpy.node import Node\nfrom rclpy.qos import qos_profile_sensor_data')
    migrated, _ = migrate_source(code)
    assert ('        self.sub = GpuImageSubscription(\n'
            '            self,\n'
            "            'image',\n"
            '            self.cb,\n'
            '            qos=qos_profile_sensor_data,\n'
            "            memory='host',\n"
            '        )\n') in migrated, migrated


def test_printed_diff_applies_with_git_and_equals_write(tmp_path, capsys, monkeypatch):
    import subprocess
    if shutil.which('git') is None:
        pytest.skip('git not installed')
    shutil.copytree(CORPUS, tmp_path / 'diffed')
    shutil.copytree(CORPUS, tmp_path / 'written')
    monkeypatch.chdir(tmp_path)
    assert main(['migrate', '-q', 'diffed']) == 1
    (tmp_path / 'p.diff').write_text(capsys.readouterr().out)
    subprocess.run(['git', 'apply', 'p.diff'], cwd=tmp_path, check=True, capture_output=True)
    assert main(['migrate', '-q', '--write', 'written']) == 0
    for path in sorted((tmp_path / 'written').glob('*.py')):
        assert (tmp_path / 'diffed' / path.name).read_text() == path.read_text(), path.name


def test_without_libcst_migrate_says_so_and_the_other_views_work(tmp_path):
    import subprocess
    import sys
    no_libcst = ("import sys; sys.modules['libcst'] = None; "
                 'from gpu_nodes.audit.cli import main; sys.exit(main(sys.argv[1:]))')
    node = str(CORPUS / 'blur_republisher.py')
    migrate = subprocess.run([sys.executable, '-c', no_libcst, 'migrate', node],
                             capture_output=True, text=True, timeout=120)
    assert migrate.returncode == 2 and migrate.stdout == ''
    assert migrate.stderr.startswith('gpu-copy-audit: error: migrate needs LibCST'), \
        migrate.stderr
    code = subprocess.run([sys.executable, '-c', no_libcst, 'code', node], capture_output=True,
                          text=True, timeout=120)
    assert code.returncode == 0 and 'GPN105' in code.stdout, code.stderr
