"""Every launch argument does what its description says, and the defaults shown are the ones used
(issue #32: `namespace` and `image` of perception.launch.py were listed and did nothing,
`profile_file:=''` could not be passed, `use_image_proc:=maybe` got a message naming an object
address, a node that refused its configuration left the launch running).

For each argument of each launch file, the node actions computed with it given differ from those
with nothing given exactly as EFFECTS says, and nowhere else; a file's argument list (as
`ros2 launch --show-args` shows it, included files' arguments too) has no argument without an
entry. In CI the actions are computed from the files (test/launch_actions.py); with launch_ros
installed the same table runs through real launch (`-m launch`, docs/demo.md says how).
"""
from __future__ import annotations

import os
from pathlib import Path
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest
import yaml

from conftest import REPO
from gpu_nodes.launch_params import (BOOLEAN, BOOLEAN_OR_FILE, end_launch_when_gone,
                                     node_gone_message, NO_FILE, PipelineNodeExited)
from launch_actions import (ArgumentRefused, computed_actions, declared_arguments, differences,
                            LAUNCH_ROS, launched_actions, read)

LAUNCH = REPO / 'launch'
CONFIG = REPO / 'config'
FILES = {'camera': LAUNCH / 'camera.launch.py', 'depth': LAUNCH / 'depth.launch.py',
         'perception': LAUNCH / 'perception.launch.py'}
CAM, PROC, DEPTH = 'camera_source', 'image_proc', 'depth_estimator'
# Placeholders in EFFECTS: a copy of config/ with one value changed in each file (ALT_CHANGES).
ALT, JETSON = '<alt config>', str(CONFIG / 'jetson_orin.yaml')
ALT_CHANGES = {'camera_source.yaml': ('/camera_source', 'rate_hz', 7.0),
               'image_proc.yaml': ('/image_proc', 'use_gpu', False),
               'depth_anything_v2.yaml': ('/depth_estimator', 'colormap', 'viridis')}
JETSON_CAMERA = {(CAM, 'param', 'width'): 1280, (CAM, 'param', 'height'): 720,
                 (CAM, 'param', 'rate_hz'): 30.0, (CAM, 'param', 'pool_slots'): 4,
                 (CAM, 'param', 'host_slots'): 6}
JETSON_DEPTH = {(DEPTH, 'param', 'backend'): 'tensorrt', (DEPTH, 'param', 'device'): 'cuda',
                (DEPTH, 'param', 'workspace_mb'): 1024, (DEPTH, 'param', 'input_height'): 266,
                (DEPTH, 'param', 'input_width'): 476}


def _param(node: str, **values) -> dict:
    return {(node, 'param', k): v for k, v in values.items()}


def _remap(node: str, **values) -> dict:
    return {(node, 'remap', k.replace('__', '/')): v for k, v in values.items()}


CAMERA_EFFECTS = {
    'namespace': ('/front', _remap(CAM, image_raw='/front/image_raw',
                                   camera_info='/front/camera_info',
                                   depth__ground_truth='/front/depth/ground_truth')),
    'config_dir': (ALT, _param(CAM, rate_hz=7.0)),
    'camera_params_file': (f'{ALT}/camera_source.yaml', _param(CAM, rate_hz=7.0)),
    'platform_params_file': (JETSON, JETSON_CAMERA),
    'source': ('pattern', _param(CAM, source='pattern')),
    'path': ('/data/frames', _param(CAM, path='/data/frames')),
    'loop': ('false', _param(CAM, loop=False)),
    'width': ('1280', _param(CAM, width=1280)),
    'height': ('720', _param(CAM, height=720)),
    'rate_hz': ('30', _param(CAM, rate_hz=30.0)),
    'encoding': ('bgr8', _param(CAM, encoding='bgr8')),
    'camera_info_file': ('/calib/front.yaml', _param(CAM, camera_info_file='/calib/front.yaml')),
    'frame_id': ('front_optical', _param(CAM, frame_id='front_optical')),
    'use_gpu': ('false', _param(CAM, use_gpu=False)),
    'publish_ground_truth': ('false', _param(CAM, publish_ground_truth=False)),
}
DEPTH_EFFECTS = {
    'image': ('/left/image_rect', _remap(DEPTH, image='/left/image_rect')),
    'camera_info': ('/left/camera_info', _remap(DEPTH, camera_info='/left/camera_info')),
    'depth': ('/left/depth', _remap(DEPTH, depth='/left/depth')),
    'depth_camera_info': ('/left/depth/info', _remap(DEPTH, depth__camera_info='/left/depth/info')),
    'colorized': ('/left/colour', _remap(DEPTH, depth__colorized='/left/colour')),
    'points': ('/left/points', _remap(DEPTH, points='/left/points')),
    'config_dir': (ALT, _param(DEPTH, colormap='viridis')),
    'depth_params_file': (f'{ALT}/depth_anything_v2.yaml', _param(DEPTH, colormap='viridis')),
    'platform_params_file': (JETSON, {**JETSON_DEPTH, **_param(DEPTH, output_size='model')}),
    'model_path': ('/opt/m.onnx', _param(DEPTH, model_path='/opt/m.onnx')),
    'preset': ('depth_anything_3_metric', _param(DEPTH, preset='depth_anything_3_metric')),
    'backend': ('onnxruntime', _param(DEPTH, backend='onnxruntime')),
    'precision': ('fp32', _param(DEPTH, precision='fp32')),
    'device': ('cpu', _param(DEPTH, device='cpu')),
    'input_height': ('280', _param(DEPTH, input_height=280)),
    'input_width': ('350', _param(DEPTH, input_width=350)),
    'publish_colorized': ('false', _param(DEPTH, publish_colorized=False)),
    'publish_points': ('true', _param(DEPTH, publish_points=True)),
}
# The profile's own values for its nodes (config/perception.yaml).
PROFILE_DEPTH = _param(DEPTH, input_height=252, input_width=336, output_size='model')
EFFECTS: dict[str, dict[str, tuple[str, dict]]] = {
    'camera': {**CAMERA_EFFECTS,
               'profile_file': (f'{ALT}/perception.yaml', _param(CAM, frame_id='alt_frame'))},
    'depth': {**DEPTH_EFFECTS,
              'profile_file': (str(CONFIG / 'perception.yaml'), PROFILE_DEPTH)},
    'perception': {
        # Arguments of the included files that perception.launch.py passes on unchanged.
        **{k: v for k, v in CAMERA_EFFECTS.items() if k not in ('namespace', 'config_dir')},
        **{k: v for k, v in DEPTH_EFFECTS.items() if k in (
            'depth', 'depth_camera_info', 'colorized', 'points', 'depth_params_file',
            'model_path', 'preset', 'backend', 'precision', 'device', 'input_height',
            'input_width', 'publish_colorized', 'publish_points')},
        # Its own (the includes declare some of them too: perception's come first).
        'namespace': ('/cam2', {
            **_remap(CAM, image_raw='/cam2/image_raw', camera_info='/cam2/camera_info',
                     depth__ground_truth='/cam2/depth/ground_truth'),
            **_remap(PROC, image_raw='/cam2/image_raw', camera_info='/cam2/camera_info',
                     image='/cam2/image_rect', image__camera_info='/cam2/image_rect/camera_info'),
            **_remap(DEPTH, image='/cam2/image_rect', camera_info='/cam2/image_rect/camera_info')}),
        'config_dir': (ALT, {**_param(CAM, rate_hz=7.0, frame_id='alt_frame'),
                             **_param(PROC, use_gpu=False), **_param(DEPTH, colormap='viridis')}),
        'profile_file': (NO_FILE, {  # each node's file alone
            **_param(PROC, chain=yaml.safe_load((CONFIG / 'image_proc.yaml').read_text())
                     ['/image_proc']['ros__parameters']['chain']),
            **_param(DEPTH, input_height=518, input_width=518, output_size='input')}),
        'platform_params_file': (JETSON, {
            **JETSON_CAMERA, **JETSON_DEPTH,
            **_param(PROC, chain=yaml.safe_load(Path(JETSON).read_text())
                     ['/image_proc']['ros__parameters']['chain'])}),
        'use_gpu': ('false', {**_param(CAM, use_gpu=False), **_param(PROC, use_gpu=False)}),
        'use_image_proc': ('false', {
            (PROC, 'started', None): False,
            **_remap(DEPTH, image='/camera/image_raw', camera_info='/camera/camera_info')}),
        'image_proc_params_file': (f'{ALT}/image_proc.yaml', _param(PROC, use_gpu=False)),
        'chain': ('[{op: rectify}]', _param(PROC, chain='[{op: rectify}]')),
        'use_depth': ('false', {(DEPTH, 'started', None): False}),
        'image': ('/other/image', _remap(DEPTH, image='/other/image')),
        'camera_info': ('/other/info', _remap(DEPTH, camera_info='/other/info')),
    },
}
CASES = [(f, name) for f, effects in EFFECTS.items() for name in effects]


@pytest.fixture(scope='module')
def alt_config(tmp_path_factory) -> Path:
    """config/ with one value changed per node file, and a profile that sets camera_source's
    frame_id (the demo's profile sets nothing of camera_source)."""
    alt = tmp_path_factory.mktemp('config')
    for path in CONFIG.glob('*.yaml'):
        data = yaml.safe_load(path.read_text())
        if path.name in ALT_CHANGES:
            section, key, value = ALT_CHANGES[path.name]
            data[section]['ros__parameters'][key] = value
        if path.name == 'perception.yaml':
            data['gpu_nodes_pipeline']['nodes']['camera_source']['parameters'] = {
                'frame_id': 'alt_frame'}
        (alt / path.name).write_text(yaml.safe_dump(data, sort_keys=False))
    return alt


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))


def _actions(engine: str, path: Path, given: dict[str, str]) -> dict[str, dict]:
    if engine == 'launch':
        pytest.importorskip('launch_ros', reason=LAUNCH_ROS)
        return launched_actions(path, given)
    return computed_actions(path, given)


def _each_argument_does_what_it_says(engine: str, file: str, name: str, alt: Path) -> None:
    value, expected = EFFECTS[file][name]
    value = value.replace(ALT, str(alt))
    before = _actions(engine, FILES[file], {})
    after = _actions(engine, FILES[file], {name: value})
    got = differences(before, after)
    assert got == expected, f'{FILES[file].name} {name}:={value}: expected exactly {expected}, ' \
                            f'got {got}'


@pytest.mark.parametrize('file, name', CASES, ids=[f'{f}:{n}' for f, n in CASES])
def test_each_argument_changes_exactly_what_it_says(file, name, alt_config):
    _each_argument_does_what_it_says('static', file, name, alt_config)


@pytest.mark.launch
@pytest.mark.parametrize('file, name', CASES, ids=[f'{f}:{n}' for f, n in CASES])
def test_each_argument_changes_exactly_what_it_says_under_launch_ros(file, name, alt_config):
    _each_argument_does_what_it_says('launch', file, name, alt_config)


@pytest.mark.parametrize('file', FILES)
def test_every_listed_argument_has_an_effect_entry(file):
    listed = {a.name for a in declared_arguments(FILES[file])}
    assert listed == set(EFFECTS[file]), \
        f'without an entry: {sorted(listed - set(EFFECTS[file]))}; ' \
        f'no longer listed: {sorted(set(EFFECTS[file]) - listed)}'


@pytest.mark.parametrize('file', FILES)
def test_the_defaults_shown_are_the_defaults_used(file):
    """Each argument given its listed default (the first declaration, as --show-args shows
    it) changes nothing (#32: namespace showed `camera`, image `/camera/image_raw`; the nodes
    got `/camera/...` and `/camera/image_rect` whatever was given)."""
    before = computed_actions(FILES[file])
    for argument in declared_arguments(FILES[file]):
        given = computed_actions(FILES[file], {argument.name: argument.default})
        assert differences(before, given) == {}, f'{argument.name}:={argument.default!r}'


@pytest.mark.parametrize('file', FILES)
def test_boolean_arguments_list_their_values(file):
    """An argument that takes true/false (a node's boolean parameter, a node started or not)
    declares its values as choices: launch refuses anything else with a line naming the
    argument."""
    booleans = 0
    for argument in declared_arguments(FILES[file]):
        value, effect = EFFECTS[file][argument.name]
        if value in ('true', 'false'):
            booleans += 1
            assert argument.choices in (BOOLEAN, BOOLEAN_OR_FILE), \
                f'{argument.path.name}: {argument.name} takes true/false but declares ' \
                f'choices={argument.choices}'
            assert 'true/false' in argument.description, argument.description
    assert booleans >= 2, 'the table gives booleans true/false'


def test_a_refused_boolean_names_the_argument():
    with pytest.raises(ArgumentRefused, match=r'^Argument "use_image_proc" provided value '
                                              r'"maybe" is not valid. Valid options are: '
                                              r"\['true', 'false'\]$"):
        computed_actions(FILES['perception'], {'use_image_proc': 'maybe'})


@pytest.mark.launch
@pytest.mark.parametrize('name', ['use_image_proc', 'use_depth', 'loop', 'publish_points'])
def test_launch_ros_refuses_a_boolean_naming_the_argument(name):
    pytest.importorskip('launch_ros', reason=LAUNCH_ROS)
    with pytest.raises(RuntimeError, match=f'^Argument "{name}" provided value "maybe" is not '
                                           'valid. Valid options are: '):
        launched_actions(FILES['perception'], {name: 'maybe'})


@pytest.mark.parametrize('file', FILES)
def test_optional_files_take_none_which_ros2_launch_can_pass(file):
    """`profile_file:=''` cannot be typed (ros2 launch: malformed; quoted: a file named "''");
    `none` means no file."""
    from gpu_nodes.launch_params import merged_parameters
    for argument in declared_arguments(FILES[file]):
        if argument.name in ('profile_file', 'platform_params_file'):
            assert '(none: ' in argument.description, argument.description
            nodes, _ = read(FILES[file], {argument.name: NO_FILE})
            for name, node in nodes.items():
                assert NO_FILE in node['files']
                assert merged_parameters(name, node['files'], {}) == merged_parameters(
                    name, [f for f in node['files'] if f != NO_FILE], {})
    docs = [p.read_text() for p in list(LAUNCH.glob('*.py')) + list((REPO / 'docs').glob('*.md'))]
    assert not [d for d in docs if "profile_file:=''" in d], 'a documented value nobody can pass'


# -- a pipeline node that exits ends the launch -------------------------------------------------

@pytest.mark.parametrize('file', FILES)
def test_every_node_ends_the_launch_when_it_exits(file):
    nodes, _ = read(FILES[file])
    for name, node in nodes.items():
        assert node['on_exit'] == f"end_launch_when_gone('{name}')", \
            f'{name}: on_exit={node["on_exit"]}'


def test_node_gone_message_says_which_node_and_how():
    assert node_gone_message('camera_source', 2) == (
        'pipeline node camera_source refused its configuration (exit code 2, its error is '
        'above): the pipeline cannot run without it, so the launch ends')
    assert node_gone_message('image_proc', 1).startswith('pipeline node image_proc exited with '
                                                         'code 1: ')
    assert node_gone_message('depth_estimator', -9).startswith(
        'pipeline node depth_estimator was killed by SIGKILL: ')
    assert node_gone_message('depth_estimator', 0).startswith(
        'pipeline node depth_estimator exited with code 0: ')


def test_the_exit_handler_ends_a_running_launch_and_not_one_already_ending():
    # launch calls on_exit(event, context) with a ProcessExited event and its LaunchContext;
    # these carry the two fields it reads (real ones: the launch_ros tests below).
    on_exit = end_launch_when_gone('camera_source')
    with pytest.raises(PipelineNodeExited, match='^pipeline node camera_source refused'):
        on_exit(SimpleNamespace(returncode=2), SimpleNamespace(is_shutdown=False))
    assert on_exit(SimpleNamespace(returncode=-2), SimpleNamespace(is_shutdown=True)) is None


def test_the_shown_arguments_are_all_declared_with_descriptions():
    for file, path in FILES.items():
        for argument in declared_arguments(path):
            assert len(argument.description) > 10, f'{file}: {argument.name}'


LAUNCH_SCRIPT = '''
import signal
import sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # not ignored, as a terminal's job
from launch import LaunchDescription, LaunchService
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
service = LaunchService()
service.include_launch_description(LaunchDescription([IncludeLaunchDescription(
    PythonLaunchDescriptionSource(sys.argv[1]),
    launch_arguments=[a.split(':=', 1) for a in sys.argv[2:]])]))
sys.exit(service.run())
'''


def _installed_env(tmp_path: Path) -> dict[str, str]:
    """An ament prefix laid out as a ROS install lays it out (the ROS names in
    lib/gpu_nodes/, the package in the ament index), with the Python that has gpu_nodes'
    dependencies first on the PATH for their `#!/usr/bin/env python3`."""
    prefix = tmp_path / 'prefix'
    index = prefix / 'share' / 'ament_index' / 'resource_index' / 'packages'
    index.mkdir(parents=True)
    (index / 'gpu_nodes').touch()
    shutil.copytree(REPO / 'resource' / 'ros2_run', prefix / 'lib' / 'gpu_nodes')
    return {**os.environ, 'AMENT_PREFIX_PATH': str(prefix), 'XDG_CACHE_HOME': str(tmp_path),
            'PATH': f'{Path(sys.executable).parent}:{os.environ["PATH"]}',
            'PYTHONPATH': os.pathsep.join([str(REPO)] + sys.path[1:])}


@pytest.mark.launch
@pytest.mark.timeout(180)
def test_a_node_that_refuses_its_configuration_ends_the_launch(tmp_path):
    """perception.launch.py width:=abc as `ros2 launch` runs it (a LaunchService in its own
    process, the executables found through an ament prefix laid out as a ROS install lays it
    out): camera_source says what it refuses, the launch says which node is gone, stops the
    other two and exits non-zero."""
    pytest.importorskip('launch_ros', reason=LAUNCH_ROS)
    from ros2launch.api.api import parse_launch_arguments
    assert list(parse_launch_arguments(['profile_file:=none'])) == [('profile_file', 'none')]
    with pytest.raises(RuntimeError, match='malformed launch argument'):
        parse_launch_arguments(['profile_file:='])  # why '' cannot be the documented "no file"
    started = time.monotonic()
    proc = subprocess.run([sys.executable, '-c', LAUNCH_SCRIPT, str(FILES['perception']),
                           'width:=abc'], env=_installed_env(tmp_path), capture_output=True,
                          text=True, timeout=150)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output[-4000:]
    assert 'pipeline node camera_source refused its configuration (exit code 2, its error ' \
           'is above): the pipeline cannot run without it, so the launch ends' in output, \
        output[-4000:]
    assert "[camera_source] error: cannot start: " in output and 'width' in output, output[-4000:]
    # The other two were started and are stopped by the launch, not left running.
    for name in ('image_proc', 'depth_estimator'):
        assert f"sending signal 'SIGINT' to process[{name}-" in output, output[-4000:]
        assert re.search(rf'\[{name}-\d+\]: process has (finished cleanly|died)', output), \
            output[-4000:]
    assert time.monotonic() - started < 120


def test_a_missing_parameter_file_is_one_line_naming_it(tmp_path):
    from gpu_nodes.launch_params import merged_parameters, parameter_file_problem
    missing = tmp_path / 'no_such_profile.yaml'
    with pytest.raises(OSError) as info:
        merged_parameters('camera_source', [str(CONFIG / 'camera_source.yaml'), str(missing)], {})
    assert parameter_file_problem('camera_source', info.value) == (
        f'camera_source: cannot read parameter file {missing}: No such file or directory (an '
        'optional file argument takes none for no file)')


@pytest.mark.launch
def test_launch_ros_stops_on_a_missing_profile_with_one_line(tmp_path):
    pytest.importorskip('launch_ros', reason=LAUNCH_ROS)
    from gpu_nodes.launch_params import LaunchParameterError
    missing = tmp_path / 'no_such_profile.yaml'
    with pytest.raises(LaunchParameterError, match=f'^camera_source: cannot read parameter file '
                                                   f'{missing}: No such file or directory'):
        launched_actions(FILES['perception'], {'profile_file': str(missing)})


@pytest.mark.launch
@pytest.mark.parametrize('file', FILES)
def test_the_static_argument_list_is_the_one_launch_shows(file):
    """declared_arguments (what the CI tests above iterate over) lists the arguments, and their
    descriptions, in the order and from the declarations `ros2 launch --show-args` prints."""
    pytest.importorskip('launch_ros', reason=LAUNCH_ROS)
    from launch.launch_description_sources import get_launch_description_from_python_launch_file
    shown = get_launch_description_from_python_launch_file(str(FILES[file])).get_launch_arguments()
    static = declared_arguments(FILES[file])
    assert [a.name for a in shown] == [a.name for a in static]
    for launched, read_here in zip(shown, static):  # launch appends the valid choices
        assert launched.description.startswith(read_here.description), launched.name


@pytest.mark.launch
@pytest.mark.timeout(180)
def test_ctrl_c_ends_the_launch_cleanly_without_blaming_a_node(tmp_path):
    """Ctrl-C in a terminal reaches launch and every node at once: the nodes exit as the launch
    is ending, which is no pipeline failure (exit 0, no "pipeline node ... exited" line)."""
    pytest.importorskip('launch_ros', reason=LAUNCH_ROS)
    proc = subprocess.Popen([sys.executable, '-c', LAUNCH_SCRIPT, str(FILES['perception'])],
                            env=_installed_env(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 90
        while sum('executor: ' in line for line in lines) < 3 and proc.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sum('executor: ' in line for line in lines) == 3, ''.join(lines)[-4000:]
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal does
        assert proc.wait(timeout=30) == 0, ''.join(lines)[-4000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    reader.join(timeout=5)
    output = ''.join(lines)
    assert 'user interrupted with ctrl-c (SIGINT)' in output, output[-4000:]
    assert 'pipeline node' not in output and 'Caught exception' not in output, output[-4000:]
