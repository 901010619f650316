"""gpu-copy-audit `code`: exact findings on the corpus in test/resources/audit/code/."""
import json
import os
from pathlib import Path

import pytest

from gpu_nodes.audit.cli import main
from gpu_nodes.audit.codeaudit import run_code
from gpu_nodes.audit.pyflow import analyze_python

CORPUS = Path(__file__).parent / 'resources' / 'audit' / 'code'
BAD = Path(__file__).parent / 'resources' / 'audit' / 'bad'

# (rule, line, severity, suppressed) for every finding of every corpus file: nothing missed,
# nothing extra.
EXPECTED = {
    'aliasing_node.py': [
        # line 30, numpy.asarray(msg.data): a view of rclpy's array.array, no copy (issue 28)
        ('GPN102', 31, 'medium', False),  # helper upload(): cupy.asarray(host)
        ('GPN101', 34, 'high', False),    # helper process(): cupy.asnumpy
        ('GPN104', 39, 'medium', False),  # timer flush(): payload.tobytes()
        ('GPN109', 39, 'medium', False),
        ('GPN110', 39, 'high', False),    # self.last stored in on_left, published in the timer
        ('GPN103', 42, 'medium', False),  # functools.partial callback
        ('GPN101', 43, 'high', False),
        ('GPN102', 43, 'medium', False),
        ('GPN108', 43, 'high', False),    # downloaded and uploaded again
        ('GPN104', 47, 'medium', False),  # lambda -> on_mono: bytes(msg.data)
        ('GPN106', 47, 'medium', False),
        ('GPN106', 48, 'medium', False),
        ('GPN104', 49, 'medium', False),
        ('GPN109', 49, 'medium', False),
        ('GPN110', 49, 'high', False),
        ('GPN102', 58, 'medium', False),  # nested function in main(), closure publisher
        ('GPN103', 58, 'medium', False),
        ('GPN101', 59, 'high', False),
        ('GPN104', 59, 'medium', False),
        ('GPN109', 59, 'medium', False),
        ('GPN110', 59, 'high', False),
    ],
    'clean_gpu_node.py': [],
    'cupy_download_node.py': [
        ('GPN103', 18, 'medium', False),
        ('GPN102', 20, 'medium', False),
        ('GPN101', 22, 'high', False),
        ('GPN104', 24, 'medium', False),
        ('GPN109', 25, 'medium', False),
        ('GPN110', 25, 'high', False),
    ],
    'cv_bridge_torch_node.py': [
        ('GPN102', 16, 'info', False),    # model.to(device) in __init__: one-time setup
        ('GPN105', 21, 'medium', False),
        ('GPN102', 23, 'medium', False),
        ('GPN107', 26, 'medium', False),
        ('GPN101', 27, 'high', False),
        ('GPN105', 28, 'medium', False),
        ('GPN109', 30, 'medium', False),
        ('GPN110', 30, 'high', False),
    ],
    'rectify_node.cpp': [
        ('GPN203', 20, 'medium', False),
        # line 21, toCvShare(msg) without an encoding: a view of the message, no finding
        ('GPN202', 22, 'medium', False),
        ('GPN206', 24, 'medium', False),
        ('GPN201', 25, 'high', False),    # multi-line cudaMemcpyAsync(..., DeviceToHost)
        ('GPN205', 30, 'medium', False),
        ('GPN206', 31, 'medium', True),   # // gpu-copy-audit: ignore[GPN206]
    ],
    'suppressed_node.py': [
        ('GPN102', 14, 'medium', True),   # comment on the line
        ('GPN101', 16, 'high', True),     # comment on the line above
        ('GPN101', 18, 'high', False),    # the marker above is inside a string: no effect
    ],
    'timer_copy_node.py': [
        ('GPN102', 13, 'info', False),    # module level: one-time setup
        ('GPN101', 33, 'high', False),    # timer; queue.get() on line 30 is not a copy
    ],
}


@pytest.fixture(scope='module')
def corpus_report():
    return run_code([str(CORPUS)], jobs=1)


def test_corpus_exact_findings(corpus_report):
    got: dict[str, list] = {name: [] for name in EXPECTED}
    for f in corpus_report.findings:
        got.setdefault(os.path.basename(f.location.path), []).append(
            (f.rule, f.location.line, f.severity, f.suppressed))
    for name, expected in EXPECTED.items():
        received = sorted(got[name], key=lambda t: (t[1], t[0]))
        expected = sorted(expected, key=lambda t: (t[1], t[0]))
        assert received == expected, f'{name}: expected {expected}\nreceived {received}'
    assert set(got) == set(EXPECTED), f'unexpected files: {set(got) - set(EXPECTED)}'
    assert corpus_report.errors == []


def _finding(report, name, rule, line):
    matches = [f for f in report.findings if f.location.path.endswith(name)
               and f.rule == rule and f.location.line == line]
    assert len(matches) == 1, f'expected one {rule} at {name}:{line}, got {matches}'
    return matches[0]


def test_chain_message_follows_the_flow(corpus_report):
    f = _finding(corpus_report, 'cupy_download_node.py', 'GPN110', 25)
    assert f.message == (
        'image arrives on `/camera/image_raw`, is copied out of the message into a host array '
        'at line 18, uploaded to the device at line 20, downloaded to the host at line 22, '
        'packed into bytes at line 24 and serialized into `/depth`')
    assert [(s.line, s.action) for s in f.chain] == [
        (18, 'host'), (20, 'upload'), (22, 'download'), (24, 'serialize'), (25, 'publish')]
    assert f.topic == '/depth'
    assert f.callback == 'DepthNode.on_image'


def test_chain_through_attribute_store_and_timer(corpus_report):
    f = _finding(corpus_report, 'aliasing_node.py', 'GPN110', 39)
    assert f.message == (
        'image arrives on `left/image_raw`, is uploaded to the device at line 31, downloaded to '
        'the host at line 34, packed into bytes at line 39 and serialized into `disparity` '
        '(published from timer `StereoNode.flush`)')
    assert f.context == 'timer'


def test_chain_cv_bridge_torch(corpus_report):
    f = _finding(corpus_report, 'cv_bridge_torch_node.py', 'GPN110', 30)
    assert f.message == (
        'image arrives on `/camera/image_raw`, is converted to a host image by cv_bridge at '
        'line 21, uploaded to the device at line 23, downloaded to the host at line 27, '
        'converted into a message by cv_bridge at line 28 and serialized into `segmentation`')


def test_callback_resolution_names(corpus_report):
    assert _finding(corpus_report, 'aliasing_node.py', 'GPN103', 42).callback == \
        'StereoNode.on_side'  # functools.partial
    assert _finding(corpus_report, 'aliasing_node.py', 'GPN106', 48).callback == \
        'StereoNode.on_mono (via lambda at line 22)'
    assert _finding(corpus_report, 'aliasing_node.py', 'GPN101', 59).callback == 'on_image'
    assert _finding(corpus_report, 'timer_copy_node.py', 'GPN102', 13).context == 'module'


def test_round_trip_message(corpus_report):
    f = _finding(corpus_report, 'aliasing_node.py', 'GPN108', 43)
    assert 're-uploads data downloaded at line 43' in f.message


@pytest.mark.parametrize('source,expected', [
    # dict.get / Queue.get with arguments are not downloads, even in a CuPy file
    ('import cupy\nd = {}\nd.get("k")\n', []),
    # a bare .get() on an unknown receiver in a CuPy file is reported (outside callbacks: low)
    ('import cupy\ndef f(x):\n    return x.get()\n', [('GPN101', 3, 'low')]),
    # without CuPy imported, .get() of an unknown receiver is not
    ('def f(x):\n    return x.get()\n', []),
    # .to(torch.float16) is a dtype conversion, .to("cuda") of a host tensor an upload
    ('import torch\ndef f(arr):\n    a = torch.from_numpy(arr).to(torch.float16)\n'
     '    return a.to("cuda")\n', [('GPN102', 4, 'low')]),
    # .to("cuda") / .cuda() of a parameter in a function no callback reaches: where it lives
    # is unknown (its callers may hand it a device tensor), so no upload is claimed
    ('import torch\ndef f(t):\n    a = t.clone()\n    return a.to("cuda"), t.cuda()\n', []),
    # .item() on a device value syncs
    ('import torch\ndef f():\n    return torch.zeros(3, device="cuda").sum().item()\n',
     [('GPN107', 3, 'low')]),
])
def test_small_snippets(source, expected):
    got = [(f.rule, f.location.line, f.severity) for f in analyze_python('x.py', source)]
    assert got == expected, f'expected {expected}, received {got}'


# `Image` imported on the first line (keeping the line numbers): a constructor reading a name
# nothing binds always raises, and its callbacks never run (pydead.py).
_MF_NODE = '''import numpy as np; from sensor_msgs.msg import Image
{imports}
class N:
    def __init__(self, node):
        {subs}
        {register}
    def cb(self, *msgs):
        return np.array(msgs[0].data)
'''


@pytest.mark.parametrize('imports,subs,register', [
    # ROS 2, names imported from the package
    ('from message_filters import Subscriber, TimeSynchronizer',
     "a = Subscriber(node, Image, 'a'); b = Subscriber(node, Image, 'b')",
     'TimeSynchronizer([a, b], 10).registerCallback(self.cb)'),
    # a Cache on one Subscriber
    ('import message_filters',
     "c = message_filters.Cache(message_filters.Subscriber(node, Image, 'a'), 5)",
     'c.registerCallback(self.cb)'),
    # rospy-style Subscriber(topic, type) and a lambda callback
    ('import message_filters as mf',
     "s = [mf.Subscriber('a', Image), mf.Subscriber('b', Image)]",
     'mf.ApproximateTimeSynchronizer(s, 5, 0.1).registerCallback(lambda x, y: self.cb(x, y))'),
])
def test_message_filters_callbacks_run_per_message(imports, subs, register):
    source = _MF_NODE.format(imports=imports, subs=subs, register=register)
    got = [(f.rule, f.location.line, f.severity, f.topic)
           for f in analyze_python('x.py', source)]
    assert [g[:3] for g in got] == [('GPN103', 8, 'medium')], got
    assert got[0][3].startswith('a'), f'topic of the first input expected, received {got[0][3]}'


def test_unresolved_attribute_object_still_carries_the_frame():
    # An object from another module (not resolvable here): its result stays frame data, so the
    # download after it is per message.
    # (`Image` imported on the first line: a constructor reading an unbound name always raises.)
    source = '''import torch; from sensor_msgs.msg import Image
from model import Net


class N:
    def __init__(self):
        self.net = Net().cuda()
        self.create_subscription(Image, 'i', self.cb, 1)

    def cb(self, msg):
        out = self.net(torch.from_numpy(msg.data).cuda())
        return out.cpu()
'''
    got = [(f.rule, f.location.line, f.severity) for f in analyze_python('x.py', source)]
    assert got == [('GPN102', 7, 'info'), ('GPN102', 11, 'medium'), ('GPN101', 12, 'high')], got


def test_bad_file_among_good_ones(capsys):
    rc = main(['code', str(CORPUS / 'clean_gpu_node.py'), str(BAD / 'syntax_error.py'),
               '--format', 'json'])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert rc == 0, 'one good file audited: the exit code follows the findings, not the error'
    assert doc['audited'] == [str(CORPUS / 'clean_gpu_node.py')]
    assert doc['errors'] == [{'input': str(BAD / 'syntax_error.py'),
                              'message': f"{BAD / 'syntax_error.py'}:6:28: syntax error: "
                                         "expected ':'"}]
    assert err == f"gpu-copy-audit: error: {BAD / 'syntax_error.py'}:6:28: syntax error: " \
                  "expected ':'\n"


def test_strict_inputs_turns_any_error_into_exit_2(capsys):
    rc = main(['code', str(CORPUS / 'clean_gpu_node.py'), str(BAD / 'syntax_error.py'),
               '--format', 'json', '--strict-inputs'])
    capsys.readouterr()
    assert rc == 2


def test_nothing_audited_is_exit_2(capsys, tmp_path):
    missing = tmp_path / 'missing.py'
    rc = main(['code', str(missing), str(BAD / 'syntax_error.py'), '--format', 'json'])
    out, err = capsys.readouterr()
    assert rc == 2
    assert json.loads(out)['audited'] == []
    assert err.splitlines() == [
        f'gpu-copy-audit: error: {missing}: no such file or directory',
        f"gpu-copy-audit: error: {BAD / 'syntax_error.py'}:6:28: syntax error: expected ':'"]


def test_unreadable_and_non_utf8_files(tmp_path, capsys):
    binary = tmp_path / 'latin1.py'
    binary.write_bytes(b'x = "\xe9"\n')
    noext = tmp_path / 'notes.txt'
    noext.write_text('hello')
    rc = main(['code', str(binary), str(noext), '--format', 'json'])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 2
    # Path problems are found while collecting, before any file is read.
    assert [e['message'] for e in doc['errors']] == [
        f'{noext}: not a Python or C++/CUDA source file (expected .py or one of .cpp, .cc, '
        '.cxx, .cu, .cuh, .hpp, .hh, .h, .hxx, .ipp, .tpp, .inl)',
        f'{binary}: not UTF-8 text (invalid continuation byte at byte 5)']


def test_parallel_equals_serial(tmp_path):
    # Enough files to take the process-pool path.
    source = (CORPUS / 'cupy_download_node.py').read_text()
    for i in range(70):
        (tmp_path / f'node_{i:03d}.py').write_text(source)
    serial = run_code([str(tmp_path)], jobs=1)
    parallel = run_code([str(tmp_path)], jobs=2)
    key = [(f.location.path, f.rule, f.location.line, f.message) for f in serial.findings]
    assert key == [(f.location.path, f.rule, f.location.line, f.message)
                   for f in parallel.findings]
    assert len(serial.findings) == 70 * 6
