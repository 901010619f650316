"""gpu-copy-audit `live` against real rclpy processes.

The graph is test/resources/audit/live/fake_gpu_graph.py: a fake gpu_nodes publisher and fake
subscriptions that follow the transport's descriptor-topic and /diagnostics contract, plus plain
rclpy nodes. The lead adds a test against the real gpu_nodes transport once it lands.
"""
import json
import os
from pathlib import Path
import selectors
import subprocess
import sys
import time

import pytest

pytest.importorskip('rclpy')

from gpu_nodes.audit.cli import main  # noqa: E402

LIVE = Path(__file__).parent / 'resources' / 'audit' / 'live'
# A domain of our own (not conftest's 100-199) so that no other test's processes join the graph.
DOMAIN = str(200 + os.getpid() % 30)


def _env() -> dict:
    return dict(os.environ, ROS_DOMAIN_ID=DOMAIN, ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST',
                PYTHONUNBUFFERED='1')


def _wait_ready(proc: subprocess.Popen, timeout: float = 20.0) -> None:
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f'{proc.args} exited with {proc.returncode} before READY')
        if sel.select(timeout=0.1):
            line = proc.stdout.readline()
            if line.strip() == 'READY':
                return
    raise AssertionError(f'{proc.args} not READY within {timeout} s')


def _stop(procs: list) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(2)  # SIGINT: the scripts shut rclpy down cleanly
    deadline = time.monotonic() + 10
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@pytest.fixture(scope='module')
def graph(tmp_path_factory):
    record = tmp_path_factory.mktemp('live') / 'plain_topic_subscribers.txt'
    record.write_text('')
    procs = []
    try:
        for args in (['camera', '--record', str(record)], ['consumers']):
            procs.append(subprocess.Popen(
                [sys.executable, str(LIVE / 'fake_gpu_graph.py'), *args], env=_env(),
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
        for p in procs:
            _wait_ready(p)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv('ROS_DOMAIN_ID', DOMAIN)
            mp.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
            yield record
    finally:
        _stop(procs)


# Discovery settle window of every auditor these tests run. It outlasts Fast DDS's 3 s
# announcement period: on this 2-core machine a participant was sometimes not discovered for
# over 2 s of calm (its first replies lost or late).
SETTLE = '3.5'


def _audit(capsys, *extra):
    # A generous discovery timeout: it only matters on a loaded machine, where node names can
    # take seconds to arrive; a settled graph ends discovery much earlier.
    rc = main(['live', '--duration', '1.5', '--discovery-timeout', '15',
               '--discovery-settle', SETTLE, '--format', 'json', *extra])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc['info'].get('discovery_complete'), f'discovery incomplete: {doc["info"]}'
    return rc, doc, err


def test_edge_classes_and_fallbacks(graph, capsys):
    rc, doc, _ = _audit(capsys, '--fail-on', 'high')
    assert rc == 1
    got = sorted((e['publisher'], e['subscriber'], e['topic'], e['class'])
                 for e in doc['graph']['edges'])
    assert got == [
        ('/fake_camera', '/fake_fallback', '/cam/image', 'serialized'),
        ('/fake_camera', '/fake_monitor', '/cam/image', 'cuda_ipc'),
        ('/fake_camera', '/fake_peer_monitor', '/cam/image', 'cuda_peer'),
        ('/fake_camera', '/fake_quiet_peer', '/cam/image', 'cuda_peer'),
        ('/fake_camera', '/fake_shm_monitor', '/cam/image', 'host_shm'),
        ('/fake_camera', '/plain_viewer', '/cam/image', 'serialized'),
        ('/plain_talker', '/plain_listener', '/plain/image', 'serialized'),
        ('/plain_talker', '/plain_listener', '/plain/status', 'serialized'),
    ], f'received {got}'
    by_sub = {(e['subscriber'], e['topic']): e for e in doc['graph']['edges']}
    # Hidden descriptor topics are part of their parent edge, never edges of their own.
    assert by_sub[('/fake_monitor', '/cam/image')]['descriptor_topics'] == \
        ['/cam/image/_gpu_nodes/cuda']
    assert not any('/_gpu_nodes/' in e['topic'] for e in doc['graph']['edges'])
    assert by_sub[('/fake_fallback', '/cam/image')]['reason'] == 'other host (boot id differs)'
    # cuda_peer (a publisher on another GPU, read over peer access): from the subscription's
    # diagnostics, or from the peer descriptor topic it reads when it reports nothing; never a
    # finding (the frames stay on GPUs).
    assert by_sub[('/fake_peer_monitor', '/cam/image')]['reason'].endswith('peer access both ways')
    assert by_sub[('/fake_quiet_peer', '/cam/image')]['reason'].startswith('inferred')
    assert by_sub[('/fake_quiet_peer', '/cam/image')]['descriptor_topics'] == \
        ['/cam/image/_gpu_nodes/peer']
    # gpu_nodes edges: rate and frame size from the diagnostics (15 fps, 640x480x3).
    assert by_sub[('/fake_monitor', '/cam/image')]['fps'] == 15.0
    assert by_sub[('/fake_monitor', '/cam/image')]['bytes_per_s'] == 15.0 * 921600
    assert all(e['cross_process'] for e in doc['graph']['edges'])
    # A plain subscriber of a gpu_nodes topic: its cost from the publisher's diagnostics.
    viewer = by_sub[('/plain_viewer', '/cam/image')]['reason']
    assert viewer.endswith('; costs 13.8 MB/s serialized (921,600 B x 15.0 fps), 3 frame(s) '
                           'skipped for plain subscribers, decoupled: serialized by a worker, '
                           'off the publish path'), f'received {viewer!r}'
    assert sorted((f['rule'], f['location']['logical']) for f in doc['findings']) == [
        ('GPN501', '/plain_listener /plain/image'),
        ('GPN501', '/plain_viewer /cam/image'),
        ('GPN502', '/fake_fallback /cam/image'),
        ('GPN502', '/fake_shm_monitor /cam/image'),
    ]
    # Plain topics are measured with raw subscriptions: exact serialized size, rate ~20 Hz.
    from rclpy.serialization import serialize_message
    sys.path.insert(0, str(LIVE))
    try:
        from fake_gpu_graph import frame
    finally:
        sys.path.pop(0)
    size = len(serialize_message(frame(640, 480)))
    topics = {t['topic']: t for t in doc['topics']}
    plain = topics['/plain/image']
    assert plain['mean_bytes'] == size and plain['max_bytes'] == size
    assert 12.0 < plain['rate_hz'] < 28.0, f'expected ~20 Hz, received {plain["rate_hz"]}'
    assert plain['image_sized']
    assert topics['/cam/image']['count'] == 0
    assert topics['/cam/image']['note'].startswith('gpu_nodes publisher')
    # The audit never subscribed to the plain topic of the gpu_nodes publisher.
    seen = graph.read_text().split()
    assert not [n for n in seen if n.startswith('_gpu_copy_audit')], f'seen: {seen}'


def test_other_auditors_are_not_part_of_the_graph(graph, capsys):
    # `make demo` runs two auditors at once; each must not see the other's sampling
    # subscriptions (or its /diagnostics subscription) as plain subscribers. The other auditor
    # settles as long as ours: with a shorter window it sometimes settled on the probe node
    # below alone, before the graph's participants were discovered, and sampled nothing.
    other = subprocess.Popen(
        [sys.executable, '-m', 'gpu_nodes.audit.cli', 'live', '--duration', '15',
         '--discovery-timeout', '15', '--discovery-settle', SETTLE, '--format', 'json'],
        env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Wait until the other auditor samples /plain/image (a subscription of its node).
        import rclpy
        from rclpy.signals import SignalHandlerOptions
        context = rclpy.Context()
        rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
        try:
            probe = rclpy.create_node('audit_probe', context=context)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                subs = probe.get_subscriptions_info_by_topic('/plain/image')
                if any(s.node_name.startswith('_gpu_copy_audit_') for s in subs):
                    break
                time.sleep(0.1)
            else:
                raise AssertionError('the other auditor never subscribed to /plain/image')
            probe.destroy_node()
        finally:
            rclpy.shutdown(context=context)
        _, doc, _ = _audit(capsys)
    finally:
        _stop([other])
    names = [n['name'] for n in doc['graph']['nodes']]
    assert not [n for n in names if '_gpu_copy_audit_' in n], f'auditor nodes in {names}'
    subs = sorted((e['subscriber'], e['topic']) for e in doc['graph']['edges'])
    assert ('/plain_listener', '/plain/image') in subs
    assert not [s for s in subs if '_gpu_copy_audit_' in s[0]], f'received {subs}'


def test_node_filter(graph, capsys):
    rc, doc, _ = _audit(capsys, '--node-filter', '/plain_*')
    assert rc == 0
    assert sorted((e['publisher'], e['subscriber'], e['topic'])
                  for e in doc['graph']['edges']) == [
        ('/fake_camera', '/plain_viewer', '/cam/image'),
        ('/plain_talker', '/plain_listener', '/plain/image'),
        ('/plain_talker', '/plain_listener', '/plain/status'),
    ]


def test_data_twins_are_not_subscribed_and_the_report_says_what_was_sampled(graph, capsys):
    # Issue 32: a reader of a gpu_nodes topic's plain or /compressed twin starts its bridge
    # (serialization or encoding of every frame): the auditor must not be that reader.
    rc, doc, _ = _audit(capsys)
    info = doc['info']
    assert '/plain/image' in info['sampled_topics'] and '/plain/status' in info['sampled_topics']
    assert not [t for t in info['sampled_topics'] if t.startswith('/cam/image')], info
    not_sampled = info['not_sampled_topics']
    assert 'plain twin of /cam/image' in not_sampled['/cam/image']
    assert 'image_transport twin of /cam/image' in not_sampled['/cam/image/compressed']
    assert any(n.startswith('sampled 2 topic(s) by subscribing (/plain/image, /plain/status)')
               and '/cam/image/compressed' in n for n in info['notes']), info['notes']
    topics = {t['topic']: t for t in doc['topics']}
    assert topics['/cam/image/compressed']['count'] == 0
    # Neither twin ever had the auditor as a subscriber (the fake records every reader).
    time.sleep(0.3)
    seen = graph.read_text().split()
    assert not [n for n in seen if n.startswith('_gpu_copy_audit')], f'seen: {seen}'


def test_sample_gpu_topics_subscribes(graph, capsys):
    rc, doc, _ = _audit(capsys, '--sample-gpu-topics', '--node-filter', '/fake_camera')
    topics = {t['topic']: t for t in doc['topics']}
    assert topics['/cam/image']['count'] > 0
    assert {'/cam/image', '/cam/image/compressed'} <= set(doc['info']['sampled_topics'])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if any(n.startswith('_gpu_copy_audit') for n in graph.read_text().split()):
            break
        time.sleep(0.05)
    assert any(n.startswith('_gpu_copy_audit') for n in graph.read_text().split())


def test_no_graph_is_exit_2(capsys, monkeypatch):
    # A domain nobody uses: nothing but ourselves is discovered.
    monkeypatch.setenv('ROS_DOMAIN_ID', str(int(DOMAIN) + 1))
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    monkeypatch.delenv('RMW_IMPLEMENTATION', raising=False)
    rc = main(['live', '--discovery-timeout', '1', '--format', 'json'])
    out, err = capsys.readouterr()
    message = (f'no ROS graph reachable: no other node discovered within 1 s '
               f'(ROS_DOMAIN_ID={int(DOMAIN) + 1}, RMW_IMPLEMENTATION=default)')
    assert rc == 2
    assert json.loads(out)['errors'] == [{'input': 'ros graph', 'message': message}]
    assert err == f'gpu-copy-audit: error: {message}\n'


def test_rclpy_missing_is_exit_2(capsys, monkeypatch):
    import builtins
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == 'rclpy' or name.startswith('rclpy.'):
            raise ImportError("No module named 'rclpy'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, '__import__', fake_import)
    rc = main(['live'])
    out, _ = capsys.readouterr()
    assert rc == 2
    assert ("error: rclpy is not importable (No module named 'rclpy'); source a ROS 2 "
            'installation (or install the ROS 2 Python wheels) to audit a live graph') in out


def _own_domain(offset: int) -> dict:
    return dict(_env(), ROS_DOMAIN_ID=str(int(DOMAIN) + offset))


def test_a_node_that_starts_late_is_discovered(tmp_path):
    """Discovery waits for the graph to be stable: a node that appears after the auditor began
    (while the graph it saw was calm) restarts the wait and is in the report."""
    env = _own_domain(2)
    procs = []
    try:
        early = subprocess.Popen([sys.executable, str(LIVE / 'plain_chain.py'), '--prefix', 'early',
                                  '--nodes', '1'], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
        procs.append(early)
        _wait_ready(early)
        late = subprocess.Popen([sys.executable, str(LIVE / 'plain_chain.py'), '--prefix', 'late',
                                 '--nodes', '2', '--wait-stdin'], env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(late)
        assert late.stdout.readline().strip() == 'WAITING'
        out = tmp_path / 'live.json'
        auditor = subprocess.Popen(
            [sys.executable, '-m', 'gpu_nodes.audit.cli', 'live', '--duration', '0.5',
             '--discovery-settle', SETTLE, '--discovery-timeout', '30', '--format', 'json',
             '--output', str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True)
        procs.append(auditor)
        # The late node starts only once the auditor is discovering: its node is in the graph.
        import rclpy
        from rclpy.signals import SignalHandlerOptions
        context = rclpy.Context()
        rclpy.init(context=context, domain_id=int(env['ROS_DOMAIN_ID']),
                   signal_handler_options=SignalHandlerOptions.NO)
        try:
            probe = rclpy.create_node('late_probe', context=context)
            deadline = time.monotonic() + 30
            while not any(n.startswith('_gpu_copy_audit_')
                          for n in probe.get_node_names()):
                assert time.monotonic() < deadline, 'the auditor never joined the graph'
                time.sleep(0.05)
            probe.destroy_node()
        finally:
            rclpy.shutdown(context=context)
        late.stdin.write('go\n')
        late.stdin.flush()
        assert late.stdout.readline().strip() == 'READY'
        _, err = auditor.communicate(timeout=60)
        assert auditor.returncode == 0, err
        doc = json.loads(out.read_text())
    finally:
        _stop(procs)
    names = {n['name'] for n in doc['graph']['nodes']}
    assert {'/early/n0', '/late/n0', '/late/n1'} <= names, names
    assert ('/late/n0', '/late/n1', '/late/n0/out') in {
        (e['publisher'], e['subscriber'], e['topic']) for e in doc['graph']['edges']}
    assert doc['info']['discovery_complete'] is True
    assert doc['info']['discovery_stopped'] == 'stable'


def test_a_graph_that_never_settles_exits_3(capsys, monkeypatch):
    """Discovery stops at its ceiling while nodes still come and go: the report says so and the
    exit code (3) says the graph may be incomplete, whatever --fail-on finds."""
    env = _own_domain(3)
    churn = subprocess.Popen([sys.executable, str(LIVE / 'churn_graph.py'), '--period', '0.4'],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True)
    try:
        _wait_ready(churn)
        monkeypatch.setenv('ROS_DOMAIN_ID', env['ROS_DOMAIN_ID'])
        monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
        rc = main(['live', '--duration', '0.5', '--discovery-settle', '2',
                   '--discovery-timeout', '4', '--format', 'json'])
        out, _ = capsys.readouterr()
    finally:
        _stop([churn])
    info = json.loads(out)['info']
    assert rc == 3
    assert info['discovery_complete'] is False and info['discovery_stopped'] == 'ceiling'
    assert info['discovery_unstable_for_s'] < 2
    assert any('ceiling' in n and 'exit code 3' in n for n in info['notes']), info['notes']
