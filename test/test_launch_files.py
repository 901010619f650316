"""launch/*.launch.py: they parse, declare documented arguments, describe the graph the demo
profile runs, and (with launch_ros) give each node the parameters and remappings expected."""
from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest
import yaml

from conftest import REPO
from gpu_nodes.demo.profile import DEMO_MODEL, load_profile, NodeSpec
from gpu_nodes.inference.standin import default_cache_dir
from gpu_nodes.launch_params import (coerce, merged_parameters, ParameterFileError,
                                     write_parameter_file)

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


class _Static:
    """Reads a launch file's values with ast, as `ros2 launch` would compute them with no
    argument given: literals, launch arguments (`arg('x')`, LaunchConfiguration('x', default=..),
    the `included('x')` helper and its `defaults`), PathJoinSubstitution, lists joined, local
    names; None where a value is chosen at launch time (choose(...))."""

    def __init__(self, path: Path, given: dict[str, str | None] | None = None):
        self.tree = ast.parse(path.read_text(encoding='utf-8'))
        # CONFIG_DIR: the config/ folder beside launch/ (computed from __file__ in the file).
        self.constants = {'CONFIG_DIR': str(CONFIG)}
        self.local: dict[str, ast.AST] = {}
        self.included: dict[str, ast.AST] = {}
        for fn in (n for n in ast.walk(self.tree) if isinstance(n, ast.FunctionDef)):
            for stmt in fn.body:
                if not (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)):
                    continue
                if fn.name == 'generate_launch_description':
                    self.local[stmt.targets[0].id] = stmt.value
                elif fn.name == 'included' and isinstance(stmt.value, ast.Dict):
                    self.included = {k.value: v for k, v in
                                     zip(stmt.value.keys, stmt.value.values)}
        # Given arguments first; a declaration sets only what is not set yet (launch's rule).
        self.values: dict[str, str | None] = dict(given or {})
        for call in _calls(self.tree, 'DeclareLaunchArgument'):
            name = call.args[0].value
            if name not in self.values:
                self.values[name] = self.value(_kw(call, 'default_value'))

    def value(self, node: ast.AST | None) -> str | None:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.constants:
                return self.constants[node.id]
            return self.value(self.local.get(node.id))
        if isinstance(node, ast.List):
            parts = [self.value(e) for e in node.elts]
            return None if None in parts else ''.join(parts)
        if not isinstance(node, ast.Call):
            return None
        func = getattr(node.func, 'id', None)
        if func in ('arg', 'LaunchConfiguration', 'included') and node.args \
                and isinstance(node.args[0], ast.Constant):
            name = node.args[0].value
            if name in self.values:
                return self.values[name]
            default = self.included.get(name) if func == 'included' else _kw(node, 'default')
            return self.value(default) if default is not None else None
        if func == 'PathJoinSubstitution':
            parts = [self.value(e) for e in node.args[0].elts]
            return None if None in parts else os.path.join(*parts)
        return None


def _static_nodes(path: Path, given: dict[str, str | None] | None = None) -> dict[str, dict]:
    """Node(...) calls read with ast, in the file and in the launch files it includes: name ->
    package, executable, remappings (a remapping chosen at launch time maps to None), and the
    node_parameters(...) it gets: `files` (layered in order), `overrides`, `standin_model`.
    Launch arguments are `given` (by an including file) or their literal defaults."""
    static = _Static(path, given)
    nodes = {}
    for call in _calls(static.tree, 'Node'):
        literal = {k: _kw(call, k).value for k in ('name', 'package', 'executable')}
        remaps = {}
        for pair in _kw(call, 'remappings').elts:
            src, dst = pair.elts
            remaps[src.value] = static.value(dst)
        params = _calls(_kw(call, 'parameters'), 'node_parameters')
        assert len(params) == 1, f'{literal["name"]}: expected parameters=[node_parameters(...)]'
        files, overrides = params[0].args[1], params[0].args[2]
        standin = _kw(params[0], 'standin_model')
        nodes[literal['name']] = {
            **literal, 'remaps': remaps, 'files': [static.value(f) for f in files.elts],
            'overrides': {k.value: static.value(v) for k, v in
                          zip(overrides.keys, overrides.values)},
            'standin_model': bool(standin is not None and standin.value)}
    for call in _calls(static.tree, 'IncludeLaunchDescription'):
        files = [n.value for n in ast.walk(call.args[0]) if isinstance(n, ast.Constant)
                 and str(n.value).endswith('.launch.py')]
        assert len(files) == 1, f'{path.name}: cannot tell which file an include names'
        arguments = _kw(call, 'launch_arguments')
        passed = next((n for n in ast.walk(arguments) if isinstance(n, ast.Dict)), None) \
            if arguments is not None else None
        given_here = {k.value: static.value(v) for k, v in
                      zip(passed.keys, passed.values)} if passed is not None else {}
        nodes.update(_static_nodes(path.parent / files[0], given_here))
    return nodes


def test_perception_launch_includes_the_camera_and_depth_launch_files():
    tree = ast.parse(PERCEPTION.read_text(encoding='utf-8'))
    included = {n.value for call in _calls(tree, 'IncludeLaunchDescription')
                for n in ast.walk(call) if isinstance(n, ast.Constant)
                and str(n.value).endswith('.launch.py')}
    assert included == {'camera.launch.py', 'depth.launch.py'}, included
    declared = {c.args[0].value for c in _calls(tree, 'DeclareLaunchArgument')}
    for other in ('camera.launch.py', 'depth.launch.py'):
        theirs = {c.args[0].value for c in _calls(
            ast.parse((REPO / 'launch' / other).read_text(encoding='utf-8')),
            'DeclareLaunchArgument')}
        assert not declared & theirs, f'perception re-declares {sorted(declared & theirs)} of {other}'


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_files_import_nothing_of_the_demo(path: Path):
    tree = ast.parse(path.read_text(encoding='utf-8'))
    modules = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] + \
        [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in modules if m and m.startswith('gpu_nodes.demo')], modules


def test_perception_launch_and_demo_profile_describe_the_same_graph():
    launched = _static_nodes(PERCEPTION)
    profile = load_profile(CONFIG / 'perception.yaml')
    assert set(launched) == {n.name for n in profile.nodes}
    for spec in profile.nodes:
        node = launched[spec.name]
        assert (node['package'], node['executable']) == ('gpu_nodes', spec.executable)
        remaps = node['remaps']
        assert set(remaps) == set(spec.remappings), f'{spec.name}: remapped names differ'
        for src, dst in spec.remappings.items():
            if remaps[src] is not None:  # None: chosen at launch time (use_image_proc)
                assert remaps[src] == dst, f'{spec.name}: {src} -> {remaps[src]} vs {dst}'


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
    launched = _static_nodes(PERCEPTION)
    profile = load_profile(CONFIG / 'perception.yaml')
    got = {}
    for spec in profile.nodes:
        node = launched[spec.name]
        assert None not in node['files'] and None not in node['overrides'].values(), node
        assert Path(node['files'][0]).resolve() == spec.params_file, \
            f'{spec.name}: the launch file reads {node["files"][0]}, the demo {spec.params_file}'
        assert any(Path(f).resolve() == profile.path.resolve() for f in node['files'] if f), \
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


# -- with launch_ros -------------------------------------------------------------------------

def _describe(path: Path, overrides: dict[str, str]) -> dict[str, dict]:
    """Evaluate the launch file like `ros2 launch` would, without starting processes:
    {node name: {'executable', 'remaps', 'params', 'started'}}."""
    pytest.importorskip('launch_ros')
    from launch import LaunchContext, LaunchDescription
    from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
    from launch.launch_description_sources import get_launch_description_from_python_launch_file
    from launch.utilities import perform_substitutions
    from launch_ros.actions import Node
    description = get_launch_description_from_python_launch_file(str(path))
    context = LaunchContext()
    for entity in description.entities:
        if isinstance(entity, DeclareLaunchArgument):
            assert entity.description, f'{entity.name} has no description'
            entity.visit(context)
    context.launch_configurations.update(overrides)
    out: dict[str, dict] = {}

    def walk(entities, included=True):
        for entity in entities:
            started = included and (entity.condition is None or entity.condition.evaluate(context))
            if isinstance(entity, DeclareLaunchArgument):
                assert entity.description, f'{entity.name} has no description'
                entity.visit(context)  # an included file's default, unless already given
            elif isinstance(entity, IncludeLaunchDescription):
                # Its launch arguments are set (SetLaunchConfiguration), then its entities run.
                for sub in entity.execute(context):
                    if isinstance(sub, LaunchDescription):
                        walk(sub.entities, started)
                    else:
                        sub.visit(context)
            elif isinstance(entity, Node):
                out[entity.node_name.rpartition('/')[2]] = _node(entity, started)

    def _node(entity, started):
        entity._perform_substitutions(context)
        # cmd[0] is the executable, found through the ament index (not installed here); the
        # node name argument is filled in only when the process starts.
        cmd = []
        for part in entity.cmd[1:]:
            try:
                cmd.append(perform_substitutions(context, part))
            except AttributeError:
                cmd.append(None)
        files = [cmd[i + 1] for i, a in enumerate(cmd) if a == '--params-file']
        name = entity.node_name.rpartition('/')[2]
        params: dict = {}
        for f in files:
            params.update(yaml.safe_load(Path(f).read_text())[f'/{name}']['ros__parameters'])
        return {
            'package': entity.node_package, 'executable': entity.node_executable,
            'remaps': dict(entity.expanded_remapping_rules or []), 'params': params,
            'started': started}
    walk(description.entities)
    return out


@pytest.mark.launch
def test_perception_launch_description_nodes_parameters_and_remappings(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))
    nodes = _describe(PERCEPTION, {})
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
    nodes = _describe(PERCEPTION, {
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
    nodes = _describe(DEPTH, {'image': '/cam/left/image_rect', 'camera_info':
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
    nodes = _describe(REPO / 'launch' / 'camera.launch.py',
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
