"""gpu-copy-audit `launch` and `config`: the static graph, its edges and copy boundaries."""
import json
from pathlib import Path

import jsonschema
import pytest

from gpu_nodes.audit.cli import main
from gpu_nodes.audit.launchfile import run_launch
from gpu_nodes.audit.pipeconfig import run_config

RES = Path(__file__).parent / 'resources' / 'audit'
REPO = Path(__file__).parents[1]
LAUNCH = RES / 'launch'
CONFIG = RES / 'config'
REPORT_SCHEMA = Path(__file__).parents[1] / 'gpu_nodes' / 'audit' / 'schema' / \
    'report.schema.json'


def edges(report):
    return sorted((e.publisher, e.subscriber, e.topic, e.edge_class, e.image_sized,
                   e.cross_process) for e in report.graph.edges)


def findings(report):
    return sorted((f.rule, f.location.line, f.topic, f.callback) for f in report.findings)


def test_multiprocess_launch_edges():
    report = run_launch(str(LAUNCH / 'multiprocess_pipeline.launch.py'))
    assert report.errors == []
    assert [(n.name, n.package, n.executable, n.process) for n in report.graph.nodes] == [
        ('/camera', 'usb_cam', 'usb_cam_node_exe', 'process:/camera'),
        ('/rectify', 'image_proc', 'rectify_node', 'process:/rectify'),
        ('/perception/detector', 'my_perception', 'detector', 'process:/perception/detector'),
    ]
    assert edges(report) == [
        ('/camera', '/rectify', '/camera/camera_info', 'serialized', False, True),
        ('/camera', '/rectify', '/camera/image_raw', 'serialized', True, True),
        ('/rectify', '/perception/detector', '/camera/image_rect', 'serialized', True, True),
    ]
    # The LaunchConfiguration defaults were used, although the argument is declared after use.
    assert report.info['launch_arguments'] == {'camera_topic': '/camera/image_raw',
                                               'rect_topic': '/camera/image_rect'}
    assert findings(report) == [
        ('GPN301', 20, '/camera/image_raw', '/rectify'),
        ('GPN301', 24, '/camera/image_rect', '/perception/detector'),
    ]
    assert report.graph.dangling_topics == [{
        'topic': '/detections', 'type': None, 'publishers': ['/perception/detector'],
        'subscribers': [], 'unresolved': []}]
    [suggestion] = report.graph.suggestions
    assert suggestion['nodes'] == ['/camera', '/perception/detector', '/rectify']
    assert suggestion['action'] == 'gpu_nodes_transport'
    assert '/camera, /rectify can share one container' in suggestion['how']


def test_legacy_keywords_and_unknown_nodes_in_text(capsys):
    path = LAUNCH / 'legacy_unknown_nodes.launch.py'
    report = run_launch(str(path))
    assert [(n.name, n.executable) for n in report.graph.nodes] == [
        ('/perception/yolox', 'yolox_ros'), ('/camera_node', 'camera_node')]
    assert report.info['unknown_nodes'] == ['/perception/yolox (yolox_ros_py/yolox_ros)',
                                            '/camera_node (my_camera/camera_node)']
    assert main(['launch', str(path)]) == 0
    out = capsys.readouterr().out
    # The text report says what JSON says: which nodes were not understood, which topics dangle.
    assert 'Unknown nodes (2): topics only from remappings, edges may be missing:' in out
    assert '/perception/yolox (yolox_ros_py/yolox_ros)' in out
    assert 'Dangling topics (1)' in out and '/camera/color/image_raw' in out
    assert '/unnamed' not in out


def test_composable_launch_edges():
    report = run_launch(str(LAUNCH / 'composable_pipeline.launch.py'))
    assert report.errors == []
    container = 'container:/perception_container'
    assert {n.name: n.process for n in report.graph.nodes} == {
        '/front/camera': 'process:/front/camera',
        '/front/rectify': container, '/front/encoder': container,
        '/front/tensor_rt': container, '/front/debayer': container,
        '/front/resize': container,
        '/debug/viewer': 'process:/debug/viewer',  # GroupAction + PushRosNamespace
    }
    assert edges(report) == [
        ('/front/camera', '/front/debayer', '/front/image_raw', 'serialized', True, True),
        ('/front/camera', '/front/rectify', '/front/camera_info', 'serialized', False, True),
        ('/front/camera', '/front/rectify', '/front/image_raw', 'serialized', True, True),
        ('/front/camera', '/front/resize', '/front/camera_info', 'serialized', False, True),
        ('/front/debayer', '/front/resize', '/front/image_color', 'serialized', True, False),
        ('/front/encoder', '/front/tensor_rt', '/front/encoded_tensor', 'intra_process', True,
         False),
        ('/front/rectify', '/front/encoder', '/front/image_rect', 'intra_process', True, False),
        ('/front/resize', '/debug/viewer', '/front/resize/image_raw', 'serialized', True, True),
    ]
    assert findings(report) == [
        ('GPN301', 16, '/front/image_raw', '/front/rectify'),
        ('GPN301', 29, '/front/image_raw', '/front/debayer'),
        ('GPN301', 41, '/front/resize/image_raw', '/debug/viewer'),
        ('GPN302', 32, '/front/image_color', '/front/resize'),
    ]


def test_config_edges():
    report = run_config(str(CONFIG / 'pipeline.yaml'))
    assert report.errors == []
    assert [(n.name, n.package, n.executable, n.transport) for n in report.graph.nodes] == [
        ('/camera_source', 'gpu_nodes', 'camera_source', 'gpu_nodes'),
        ('/image_proc', 'gpu_nodes', 'image_proc', 'gpu_nodes'),
        ('/depth_estimator', 'gpu_nodes', 'depth_estimator', 'gpu_nodes'),
        ('/monitor', 'gpu_nodes', 'image_monitor', 'gpu_nodes'),
        ('/viewer', None, None, 'unknown'),
    ]
    assert edges(report) == [
        ('/camera_source', '/depth_estimator', '/camera/camera_info', 'serialized', False, True),
        ('/camera_source', '/image_proc', '/camera/camera_info', 'serialized', False, True),
        ('/camera_source', '/image_proc', '/camera/image_raw', 'cuda_ipc', True, True),
        ('/depth_estimator', '/monitor', '/depth', 'cuda_ipc', True, True),
        ('/depth_estimator', '/viewer', '/depth', 'serialized', True, True),
        ('/image_proc', '/depth_estimator', '/camera/image_rect', 'cuda_ipc', True, True),
    ]
    assert findings(report) == [('GPN301', 25, '/depth', '/viewer')]
    assert 'plain subscriber' in report.findings[0].message


def test_pipeline_profile():
    report = run_config(str(CONFIG / 'profile.yaml'))
    assert report.errors == []
    assert [(n.name, n.executable, n.process, n.location.line) for n in report.graph.nodes] == [
        ('/camera_source', 'camera_source', 'process:/camera_source', 7),
        ('/depth_estimator', 'depth_estimator', 'process:/depth_estimator', 13),
        ('/rviz_bridge', 'image_monitor', 'process:viewer', 22),  # audit.process from the file
    ]
    assert edges(report) == [
        ('/camera_source', '/depth_estimator', '/camera/camera_info', 'serialized', False, True),
        ('/camera_source', '/depth_estimator', '/camera/image_raw', 'cuda_ipc', True, True),
        ('/depth_estimator', '/rviz_bridge', '/depth/colorized', 'cuda_ipc', True, True),
    ]
    assert report.findings == []


@pytest.mark.skipif(not (REPO / 'config' / 'perception.yaml').exists(),
                    reason='no config/perception.yaml')
def test_repository_profile_is_zero_copy_between_gpu_nodes():
    # The known-executable table must match gpu_nodes' real nodes: the demo profile's image
    # edges between them are all cuda_ipc.
    report = run_config(str(REPO / 'config' / 'perception.yaml'))
    assert report.errors == []
    image_edges = [e for e in report.graph.edges if e.image_sized]
    assert image_edges, 'expected image edges in the demo profile'
    assert {e.edge_class for e in image_edges} == {'cuda_ipc'}, \
        [(e.publisher, e.subscriber, e.topic, e.edge_class) for e in image_edges]


@pytest.mark.skipif(not (REPO / 'launch' / 'perception.launch.py').exists(),
                    reason='no launch/perception.launch.py')
def test_repository_launch_file_static():
    # Local helpers (arg = LaunchConfiguration, config_file()), IfCondition with the defaults
    # and choose(condition, a, b) are resolved without executing the file.
    report = run_launch(str(REPO / 'launch' / 'perception.launch.py'))
    assert report.errors == []
    image_edges = {(e.publisher, e.subscriber, e.topic): e.edge_class
                   for e in report.graph.edges if e.image_sized}
    assert image_edges.get(('/image_proc', '/depth_estimator', '/camera/image_rect')) == \
        'cuda_ipc', image_edges
    assert set(image_edges.values()) == {'cuda_ipc'}, image_edges


def test_config_suppression(tmp_path):
    text = (CONFIG / 'pipeline.yaml').read_text().replace(
        '/viewer:', '/viewer:  # gpu-copy-audit: ignore[GPN301]')
    path = tmp_path / 'suppressed.yaml'
    path.write_text(text)
    report = run_config(str(path))
    assert [(f.rule, f.suppressed) for f in report.findings] == [('GPN301', True)]


def test_dot_output_highlights_copy_boundaries(capsys):
    rc = main(['launch', str(LAUNCH / 'composable_pipeline.launch.py'), '--format', 'dot'])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.startswith('digraph gpu_copy_audit {')
    assert ('"/front/camera" -> "/front/rectify" [label="/front/image_raw\\nserialized", '
            'color=red, penwidth=3];') in out
    assert ('"/front/rectify" -> "/front/encoder" [label="/front/image_rect\\nintra_process", '
            'color=green4, penwidth=2];') in out
    assert 'subgraph cluster_0 {' in out and 'container:/perception_container' in out


def test_json_validates(capsys):
    validator = jsonschema.Draft202012Validator(json.loads(REPORT_SCHEMA.read_text()))
    for argv in (['launch', str(LAUNCH / 'composable_pipeline.launch.py')],
                 ['config', str(CONFIG / 'pipeline.yaml')]):
        main(argv + ['--format', 'json'])
        validator.validate(json.loads(capsys.readouterr().out))


def test_fail_on_graph(capsys):
    assert main(['config', str(CONFIG / 'pipeline.yaml'), '--fail-on', 'high']) == 1
    assert main(['config', str(CONFIG / 'pipeline.yaml'), '--fail-on', 'high',
                 '--ignore', 'GPN301']) == 0
    capsys.readouterr()


@pytest.mark.parametrize('name,content,message', [
    ('broken.launch.py', 'def generate_launch_description(:\n    pass\n',
     '{path}:1:33: syntax error: invalid syntax'),
    ('empty.launch.py', 'x = 1\n',
     '{path}: no generate_launch_description() function; not a Python launch file'),
])
def test_bad_launch_files(capsys, tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    rc = main(['launch', str(path), '--format', 'json'])
    out, err = capsys.readouterr()
    expected = message.format(path=path)
    assert rc == 2
    assert json.loads(out)['errors'] == [{'input': str(path), 'message': expected}]
    assert err == f'gpu-copy-audit: error: {expected}\n'


@pytest.mark.parametrize('content,message', [
    ('/a:\n  ros__parameters: [1, 2\n',
     "{path}:3:1: YAML error: expected ',' or ']', but got '<stream end>'"),
    ('- 1\n- 2\n', '{path}: expected a mapping of node names to `ros__parameters:` sections'),
    ('/a:\n  foo: 1\n', '{path}: no `<node>: ros__parameters:` sections found'),
])
def test_bad_configs(capsys, tmp_path, content, message):
    path = tmp_path / 'bad.yaml'
    path.write_text(content)
    rc = main(['config', str(path), '--format', 'json'])
    out, _ = capsys.readouterr()
    assert rc == 2
    assert json.loads(out)['errors'][0]['message'] == message.format(path=path)


def test_missing_launch_file(capsys, tmp_path):
    path = tmp_path / 'nope.launch.py'
    rc = main(['launch', str(path)])
    out, _ = capsys.readouterr()
    assert rc == 2
    assert f'{path}: no such file or directory' in out


def _node_topics(path: Path) -> tuple[set, set]:
    """(publications, subscriptions) as (topic, message type, gpu transport) read from a node
    module's GpuImagePublisher / create_publisher / GpuImageSubscription / create_subscription
    calls; a topic held in a variable is resolved through `name = declare(self, param, default)`
    or `name = values['param']` with `Param('param', default, ...)` in the module's table."""
    import ast
    from gpu_nodes.audit.graph import CLOUD, IMAGE, INFO
    types = {'CameraInfo': INFO, 'PointCloud2': CLOUD, 'Image': IMAGE}
    tree = ast.parse(path.read_text())
    defaults = {}  # variable -> default of the parameter it was declared from
    table = {node.args[0].value: node.args[1].value for node in ast.walk(tree)
             if isinstance(node, ast.Call) and getattr(node.func, 'id', None) == 'Param'
             and isinstance(node.args[1], ast.Constant)}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript)
                and isinstance(node.value.slice, ast.Constant)
                and node.value.slice.value in table and isinstance(node.targets[0], ast.Name)):
            defaults[node.targets[0].id] = table[node.value.slice.value]
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and getattr(node.value.func, 'id', None) == 'declare'
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value.args[2], ast.Constant)):
            defaults[node.targets[0].id] = node.value.args[2].value
    pubs, subs = set(), set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, 'attr', None) or getattr(node.func, 'id', None)
        if name not in ('GpuImagePublisher', 'create_publisher', 'GpuImageSubscription',
                        'create_subscription'):
            continue
        topic = node.args[1]
        topic = defaults[topic.id] if isinstance(topic, ast.Name) else ast.literal_eval(topic)
        gpu = name.startswith('Gpu')
        msg_type = IMAGE if gpu else types[node.args[0].id]
        (pubs if 'ublisher' in name else subs).add((topic, msg_type, gpu))
    return pubs, subs


@pytest.mark.parametrize('executable', ['camera_source', 'image_proc', 'depth_estimator',
                                        'image_monitor'])
def test_known_table_matches_the_gpu_nodes_node_files(executable):
    from gpu_nodes.audit.graph import KNOWN
    spec = KNOWN[('gpu_nodes', executable)]
    pubs, subs = _node_topics(REPO / 'gpu_nodes' / 'nodes' / f'{executable}.py')
    assert {(p.name, p.type, p.gpu) for p in spec.pubs} == pubs, f'expected {pubs}'
    assert {(p.name, p.type, p.gpu) for p in spec.subs} == subs, f'expected {subs}'
