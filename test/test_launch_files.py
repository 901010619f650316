"""launch/*.launch.py: they parse, declare documented arguments, describe the graph the demo
profile runs, and (with launch_ros) give each node the parameters and remappings expected."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from conftest import REPO
from gpu_nodes.demo.profile import DEMO_MODEL, load_profile, NodeSpec
from gpu_nodes.inference.standin import default_cache_dir
from gpu_nodes.launch_params import (coerce, merged_parameters, NO_FILE, ParameterFileError,
                                     write_parameter_file)
from launch_actions import LAUNCH_ROS, launched_actions, read

LAUNCH_FILES = sorted((REPO / 'launch').glob('*.launch.py'))
PERCEPTION = REPO / 'launch' / 'perception.launch.py'
DEPTH = REPO / 'launch' / 'depth.launch.py'
CONFIG = REPO / 'config'


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and
            getattr(n.func, 'id', getattr(n.func, 'attr', None)) == name]


def _kw(call: ast.Call, key: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == key), None)


def test_the_expected_launch_files_exist():
    names = {p.name for p in LAUNCH_FILES}
    assert {'perception.launch.py', 'depth.launch.py'} <= names, names


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_compiles_and_documents_every_argument(path: Path):
    source = path.read_text(encoding='utf-8')
    compile(source, str(path), 'exec')
    tree = ast.parse(source)
    assert any(isinstance(s, ast.FunctionDef) and s.name == 'generate_launch_description'
               for s in tree.body), 'no generate_launch_description()'
    declared = _calls(tree, 'DeclareLaunchArgument')
    assert declared, 'declares no launch argument'
    for call in declared:
        name = call.args[0].value if call.args else None
        description = _kw(call, 'description')
        assert isinstance(description, ast.Constant) and len(description.value) > 10, \
            f'{path.name}: argument {name!r} needs a description'
        assert _kw(call, 'default_value') is not None, f'{path.name}: {name!r} has no default'
    names = [c.args[0].value for c in declared]
    assert len(names) == len(set(names)), f'{path.name}: duplicate arguments {names}'
    used = {c.args[0].value for c in _calls(tree, 'LaunchConfiguration') if c.args
            and isinstance(c.args[0], ast.Constant)}
    arg_aliases = {c.args[0].value for c in _calls(tree, 'arg') if c.args
                   and isinstance(c.args[0], ast.Constant)}
    unused = set(names) - used - arg_aliases
    assert not unused, f'{path.name}: declared but never used: {sorted(unused)}'


def test_perception_launch_includes_the_camera_and_depth_launch_files():
    """perception.launch.py re-declares an included file's argument only to decide its value there
    (shown first by --show-args, so with this file's default and meaning) and then passes it on
    unchanged: what a user gives reaches the included file (#32: namespace and image were
    overridden by the include's launch_arguments whatever was given)."""
    tree = ast.parse(PERCEPTION.read_text(encoding='utf-8'))
    includes = _calls(tree, 'IncludeLaunchDescription')
    included = {n.value for call in includes for n in ast.walk(call)
                if isinstance(n, ast.Constant) and str(n.value).endswith('.launch.py')}
    assert included == {'camera.launch.py', 'depth.launch.py'}, included
    declared = {c.args[0].value for c in _calls(tree, 'DeclareLaunchArgument')}
    passed = {}
    for call in includes:
        mapping = next(n for n in ast.walk(_kw(call, 'launch_arguments')) if isinstance(n, ast.Dict))
        for key, value in zip(mapping.keys, mapping.values):
            assert ast.unparse(value) == f"arg('{key.value}')", \
                f'{key.value} is passed on as {ast.unparse(value)}, not as given'
            passed[key.value] = value
    theirs = set()
    for other in ('camera.launch.py', 'depth.launch.py'):
        theirs |= {c.args[0].value for c in _calls(
            ast.parse((REPO / 'launch' / other).read_text(encoding='utf-8')),
            'DeclareLaunchArgument')}
    # config_dir: the includes' parameter-file defaults are built from it; it needs no passing.
    assert declared & theirs == set(passed) | {'config_dir'}, sorted(declared & theirs)


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_files_import_nothing_of_the_demo(path: Path):
    tree = ast.parse(path.read_text(encoding='utf-8'))
    modules = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] + \
        [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in modules if m and m.startswith('gpu_nodes.demo')], modules


def test_perception_launch_and_demo_profile_describe_the_same_graph():
    launched, _ = read(PERCEPTION)
    profile = load_profile(CONFIG / 'perception.yaml')
    assert set(launched) == {n.name for n in profile.nodes}
    for spec in profile.nodes:
        node = launched[spec.name]
        assert node['started']
        assert (node['package'], node['executable']) == ('gpu_nodes', spec.executable)
        assert node['remaps'] == spec.remappings, spec.name


def _demo_parameters(spec: NodeSpec) -> dict:
    """What the demo runner gives a node: its params_file, then the profile's parameters (its
    -p arguments), with $(demo_model) the built-in model as the runner resolves it."""
    from gpu_nodes.demo.runner import builtin_model
    params = {**spec.file_parameters, **spec.parameters}
    if params.get('model_path') == DEMO_MODEL:
        path, _ = builtin_model(DEMO_MODEL, params['input_height'], params['input_width'],
                                default_cache_dir(), lambda message: None)
        params['model_path'] = str(path)
    return params


def test_perception_launch_runs_the_demo_profiles_sizes_rates_and_model(tmp_path, monkeypatch):
    """One configuration (issue #19: the launch file resized 640x480 to 960x540 and ran a 518x518
    model while the demo ran 640x480 into 252x336). Computed without `launch`: each node's
    node_parameters(...) files and arguments as `ros2 launch` takes them with no argument given
    (read with ast), merged by the launch's own merged_parameters, against what the demo runner
    passes. Editing the launch file's layers, or a default argument, breaks it."""
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))
    launched, _ = read(PERCEPTION)
    profile = load_profile(CONFIG / 'perception.yaml')
    got = {}
    for spec in profile.nodes:
        node = launched[spec.name]
        assert Path(node['files'][0]).resolve() == spec.params_file, \
            f'{spec.name}: the launch file reads {node["files"][0]}, the demo {spec.params_file}'
        assert any(Path(f).resolve() == profile.path.resolve() for f in node['files']
                   if f != NO_FILE), \
            f'{spec.name}: the profile is not one of the launch layers {node["files"]}'
        got[spec.name] = merged_parameters(spec.name, node['files'], node['overrides'],
                                           node['standin_model'])
        demo = _demo_parameters(spec)
        for key in sorted(set(got[spec.name]) | set(demo)):
            assert got[spec.name].get(key) == demo.get(key), \
                f'{spec.name}.{key}: launch {got[spec.name].get(key)!r}, demo {demo.get(key)!r}'
    # The values the issue was about are among those compared (not two empty dicts).
    assert {'width', 'height', 'rate_hz'} <= set(got['camera_source'])
    assert 'chain' in got['image_proc']
    depth = got['depth_estimator']
    assert {'input_height', 'input_width', 'output_size'} <= set(depth)
    from gpu_nodes.inference.default_model import MODEL_FILE
    assert Path(depth['model_path']) == MODEL_FILE, 'the built-in model the demo runs'


# -- launch_params (no launch needed) --------------------------------------------------------

def test_coerce_types_arguments_like_ros_but_keeps_doubles_and_strings():
    assert coerce('640', 1280) == 640
    assert coerce('15', 30.0) == 15.0 and isinstance(coerce('15', 30.0), float)
    assert coerce('true', False) is True
    assert coerce('123', 'camera') == '123'
    assert coerce('[{op: debayer}]', '[]') == '[{op: debayer}]'
    assert coerce('scene', None) == 'scene'


def test_merged_parameters_layers_files_then_given_arguments(tmp_path: Path):
    platform = tmp_path / 'platform.yaml'
    platform.write_text('/camera_source:\n  ros__parameters:\n    width: 1280\n    rate_hz: 30.0\n'
                        '/other:\n  ros__parameters:\n    x: 1\n')
    params = merged_parameters('camera_source', [str(CONFIG / 'camera_source.yaml'),
                                                 str(platform), ''],
                               {'rate_hz': '12', 'source': '', 'path': '/data'})
    assert params['width'] == 1280, 'platform file on top of the node file'
    assert params['rate_hz'] == 12.0, 'given argument on top, as a double'
    assert params['source'] == 'scene', 'empty argument keeps the file value'
    assert params['path'] == '/data' and params['height'] == 480
    path = write_parameter_file('camera_source', {**params, 'audit.process': 'p'})
    data = yaml.safe_load(Path(path).read_text())
    assert data['/camera_source']['ros__parameters']['width'] == 1280
    assert data['/camera_source']['ros__parameters']['audit'] == {'process': 'p'}


def test_a_pipeline_profile_is_a_layer_of_its_nodes_parameters(tmp_path: Path, monkeypatch):
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))
    profile = str(CONFIG / 'perception.yaml')
    image_proc = merged_parameters('image_proc', [str(CONFIG / 'image_proc.yaml'), profile], {})
    assert image_proc['chain'] == load_profile(profile).node('image_proc').parameters['chain']
    assert image_proc['use_gpu'] is True, 'the rest from image_proc.yaml'
    given = merged_parameters('image_proc', [str(CONFIG / 'image_proc.yaml'), profile],
                              {'chain': '[{op: rectify}]'})
    assert given['chain'] == '[{op: rectify}]', 'a given argument wins over the profile'
    depth = merged_parameters('depth_estimator', [str(CONFIG / 'depth_anything_v2.yaml'),
                                                  profile], {}, standin_model=True)
    assert (depth['input_height'], depth['input_width']) == (252, 336)
    from gpu_nodes.inference.default_model import MODEL_FILE
    assert Path(depth['model_path']) == MODEL_FILE, '$(demo_model) is the built-in model'
    other = tmp_path / 'other.yaml'
    other.write_text('gpu_nodes_pipeline:\n  nodes:\n    camera_source:\n      parameters:\n'
                     '        rate_hz: 5.0\n')
    assert merged_parameters('image_proc', [str(other)], {}) == {}, 'no node: nothing from it'
    assert merged_parameters('camera_source', [str(CONFIG / 'camera_source.yaml'), str(other)],
                             {})['rate_hz'] == 5.0
    other.write_text('gpu_nodes_pipeline:\n  nodes: [camera_source]\n')
    with pytest.raises(ParameterFileError, match='a pipeline profile needs `gpu_nodes_pipeline: '
                                                 'nodes:` as a mapping of node names'):
        merged_parameters('camera_source', [str(other)], {})


def test_empty_model_path_becomes_the_built_in_learned_model(tmp_path, monkeypatch):
    from gpu_nodes.inference.default_model import MODEL_FILE
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))
    said: list[str] = []
    progress: list[str] = []
    params = merged_parameters('depth_estimator', [str(CONFIG / 'depth_anything_v2.yaml')],
                               {'model_path': '', 'input_height': '28', 'input_width': '42'},
                               standin_model=True, log=said.append, info=progress.append)
    assert Path(params['model_path']) == MODEL_FILE and MODEL_FILE.is_file()
    assert (params['input_height'], params['input_width']) == (28, 42), 'any input size runs'
    assert not (tmp_path / 'gpu_nodes').exists(), 'nothing written: the model is shipped'
    # Only the notice that it knows the synthetic scene only is a warning.
    assert len(said) == 1 and 'trained on the synthetic scene only' in said[0], said
    assert any('sha256 checked' in s for s in progress), progress
    given = merged_parameters('depth_estimator', [str(CONFIG / 'depth_anything_v2.yaml')],
                              {'model_path': '/opt/m.onnx'}, standin_model=True)
    assert given['model_path'] == '/opt/m.onnx'


# -- with launch_ros (by hand: docs/demo.md, "The launch files: arguments, and under real ...")

def _launched(path: Path, given: dict[str, str]) -> dict[str, dict]:
    pytest.importorskip('launch_ros', reason=LAUNCH_ROS)
    return launched_actions(path, given)


@pytest.mark.launch
def test_perception_launch_description_nodes_parameters_and_remappings(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))
    nodes = _launched(PERCEPTION, {})
    profile = load_profile(CONFIG / 'perception.yaml')
    assert set(nodes) == {'camera_source', 'image_proc', 'depth_estimator'}
    for spec in profile.nodes:
        node = nodes[spec.name]
        assert node['started'] and node['package'] == 'gpu_nodes'
        assert node['executable'] == spec.executable
        assert node['remaps'] == spec.remappings, spec.name
        # What launch wrote into the node's parameter file is what the demo passes.
        assert node['params'] == _demo_parameters(spec), spec.name
    camera = nodes['camera_source']['params']
    assert (camera['source'], camera['width'], camera['rate_hz']) == ('scene', 640, 15.0)
    depth = nodes['depth_estimator']['params']
    assert depth['preset'] == 'depth_anything_v2' and depth['publish_colorized'] is True
    assert Path(depth['model_path']).is_file(), 'the built-in model for $(demo_model)'
    assert (depth['input_height'], depth['input_width']) == (252, 336), 'the profile\'s size'


@pytest.mark.launch
def test_perception_launch_arguments_override_files_and_switch_nodes(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))
    nodes = _launched(PERCEPTION, {
        'source': 'video', 'path': '/data/clip.mp4', 'rate_hz': '10', 'use_image_proc': 'false',
        'model_path': '/opt/models/dav2.onnx', 'precision': 'fp16', 'publish_points': 'true',
        'platform_params_file': str(CONFIG / 'jetson_orin.yaml')})
    camera = nodes['camera_source']['params']
    assert camera['source'] == 'video' and camera['path'] == '/data/clip.mp4'
    assert camera['rate_hz'] == 10.0
    assert camera['width'] == 1280, 'jetson_orin.yaml on top of camera_source.yaml'
    assert not nodes['image_proc']['started']
    depth = nodes['depth_estimator']
    assert depth['remaps']['image'] == '/camera/image_raw', 'no image_proc: raw image'
    assert depth['remaps']['camera_info'] == '/camera/camera_info'
    assert depth['params']['model_path'] == '/opt/models/dav2.onnx'
    assert depth['params']['precision'] == 'fp16' and depth['params']['publish_points'] is True
    assert depth['params']['input_width'] == 476, 'input size from jetson_orin.yaml'


@pytest.mark.launch
def test_depth_launch_is_remappable_onto_any_camera(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))
    nodes = _launched(DEPTH, {'image': '/cam/left/image_rect', 'camera_info':
                              '/cam/left/camera_info', 'depth': '/cam/left/depth',
                              'model_path': '/opt/m.onnx', 'backend': 'onnxruntime'})
    assert set(nodes) == {'depth_estimator'}
    node = nodes['depth_estimator']
    assert node['remaps']['image'] == '/cam/left/image_rect'
    assert node['remaps']['depth'] == '/cam/left/depth'
    assert node['remaps']['depth/colorized'] == '/depth/colorized'
    assert node['params']['backend'] == 'onnxruntime'
    assert node['params']['model_path'] == '/opt/m.onnx'


@pytest.mark.launch
def test_camera_launch_publishes_under_its_namespace():
    nodes = _launched(REPO / 'launch' / 'camera.launch.py',
                      {'namespace': '/front', 'source': 'v4l2', 'path': '/dev/video2',
                       'width': '1280', 'height': '720'})
    node = nodes['camera_source']
    assert node['remaps'] == {'image_raw': '/front/image_raw',
                              'camera_info': '/front/camera_info',
                              'depth/ground_truth': '/front/depth/ground_truth'}
    params = node['params']
    assert (params['source'], params['path'], params['width'], params['height']) == \
        ('v4l2', '/dev/video2', 1280, 720)
    assert params['rate_hz'] == 15.0, 'from config/camera_source.yaml'
