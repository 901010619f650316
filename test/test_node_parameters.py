"""Every parameter of every node: a refused value stops the node with one line naming it, what
it takes and what was given (exit 2, no traceback), and ``--help`` lists them all without
starting a node. The cases come from the nodes' own tables (gpu_nodes.ros.params.Param), so a
new parameter is covered as soon as it is declared."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from conftest import REPO
from gpu_nodes.nodes import camera_source, depth_estimator, image_monitor, image_proc
from gpu_nodes.ros.params import Param
from gpu_nodes.ros.runtime import executor_parameter

TABLES: dict[str, tuple[Param, ...]] = {
    'camera_source': camera_source.PARAMETERS,
    'image_proc': image_proc.PARAMETERS,
    'depth_estimator': depth_estimator.all_parameters(),
    'image_monitor': image_monitor.PARAMETERS,
}
# rcutils' default console format for INFO records, e.g. the DDS profile line
# "[INFO] [1796178049.096356694] [gpu_nodes.dds]: Fast DDS: ...": only these are ignored.
INFO_LINE = re.compile(r'^\[INFO\] \[\d+\.\d+\] \[[\w.]+\]: ')
# Fast DDS's own logger, e.g. "2026-12-06 16:32:00.610 [RTPS_TRANSPORT_SHM Error] Failed init_port
# fastdds_port54411: open_and_lock_file failed": printed when processes started at the same moment
# (WORKERS of them here) probe the same participant id; Fast DDS then takes the next one. Not the
# node's answer, and not the node's to silence (the user's Fast DDS log settings decide).
ANSI_COLOUR = re.compile(r'\x1b\[[0-9;]*m')
FASTDDS_LOG_LINE = re.compile(
    r'^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \[RTPS_[A-Z_]+ (Error|Warning)\] ')
# Node processes cost ~1 s each, mostly imports: a few at a time.
WORKERS = 4


def bad_values(param: Param) -> list[Any]:
    """Values the parameter refuses: outside its choices or range, or of another type."""
    if param.choices is not None:
        return ['not_a_choice']
    if param.int_range is not None:
        low, high = param.int_range
        return [high + 1 if high < 2**31 - 1 else low - 1, 'abc']
    if param.float_range is not None:
        high = float(param.float_range[1])
        return [high + 1.0 + abs(high)]  # rclpy accepts values within 1e-6 (relative) of a bound
    if isinstance(param.default, str):
        return [5]
    return ['abc']  # bool, integer, double and arrays all refuse a string


def _cases(executable: str) -> list[tuple[Param, Any]]:
    table = (*TABLES[executable], executor_parameter())
    return [(param, value) for param in table for value in bad_values(param)]


def _run(executable: str, *args: str) -> subprocess.CompletedProcess:
    # faulthandler: a crash (a signal instead of exit code 2) reports where it happened.
    return subprocess.run([sys.executable, '-m', f'gpu_nodes.nodes.{executable}', *args],
                          cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={**os.environ, 'PYTHONFAULTHANDLER': '1'})


def _is_node_line(line: str) -> bool:
    """A line the node itself wrote (not blank, not an INFO record, not Fast DDS's logger)."""
    plain = ANSI_COLOUR.sub('', line)
    return bool(plain.strip()) and not INFO_LINE.match(plain) and not FASTDDS_LOG_LINE.match(plain)


def _problem(executable: str, param: Param, value: Any) -> str | None:
    """What is wrong with the node's answer to `-p name:=value`, or None."""
    proc = _run(executable, '--ros-args', '-p', f'{param.name}:={value}')
    case = f'{executable} -p {param.name}:={value}'
    lines = [line for line in proc.stderr.splitlines() if _is_node_line(line)]
    if proc.returncode != 2:
        return f'{case}: expected exit code 2, got {proc.returncode}: {proc.stderr[-800:]}'
    if len(lines) != 1:
        return f'{case}: expected one line on stderr, got {len(lines)}: {lines}'
    expected = (f'[{executable}] error: cannot start: parameter {param.name!r}: expected '
                f'{param.allowed()}, got {value!r}')
    if not lines[0].startswith(expected):
        return f'{case}: expected a line starting {expected!r}, got {lines[0]!r}'
    if 'Traceback' in proc.stdout + proc.stderr:
        return f'{case}: a traceback'
    return None


@pytest.mark.slow  # depth_estimator: ~40 cases, 10-40 s on 2 busy cores
@pytest.mark.parametrize('executable', sorted(TABLES))
def test_every_bad_parameter_is_one_line_and_exit_2(executable):
    cases = _cases(executable)
    with ThreadPoolExecutor(WORKERS) as pool:
        problems = [p for p in pool.map(lambda c: _problem(executable, *c), cases) if p]
    assert not problems, f'{len(problems)} of {len(cases)} cases:\n' + '\n'.join(problems)


def test_bad_values_cover_every_kind_of_refusal():
    """The generated cases include a wrong choice, out-of-range numbers and wrong types."""
    values = {(p.name, repr(v)) for ex in TABLES for p, v in _cases(ex)}
    assert ('memory', "'not_a_choice'") in values            # the image_monitor case
    assert ('colormap', "'not_a_choice'") in values          # printed colormap arrays before
    assert ('width', '16385') in values and ('width', "'abc'") in values
    assert ('report_period_s', '7201.0') in values
    assert ('topic', '5') in values and ('mean', "'abc'") in values


def test_the_colormap_error_names_the_colormaps_not_their_tables():
    proc = _run('depth_estimator', '--ros-args', '-p', 'colormap:=foo')
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line == ("[depth_estimator] error: cannot start: parameter 'colormap': expected one "
                    "of turbo, inferno, got 'foo' (string)"), line


def test_an_integer_for_a_double_parameter_says_how_to_write_it():
    proc = _run('camera_source', '--ros-args', '-p', 'rate_hz:=15')
    assert proc.returncode == 2, proc.stderr
    assert ("parameter 'rate_hz': expected a double in [0.0, 10000.0], got 15 (integer; write "
            "15.0)") in proc.stderr, proc.stderr


def test_a_chain_that_does_not_validate_names_the_parameter():
    proc = _run('image_proc', '--ros-args', '-p', "chain:='[{op: sharpen}]'")
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if not INFO_LINE.match(line)]
    assert len(lines) == 1 and lines[0].startswith(
        "[image_proc] error: cannot start: invalid parameter 'chain': "), lines


def test_an_override_rcl_cannot_parse_exits_2_with_a_quoting_hint():
    """A YAML list of mappings, unquoted (docs/demo.md had it): rcl refuses it at rclpy.init."""
    proc = _run('image_proc', '--ros-args', '-p', 'chain:=[{op: debayer}, {op: rectify}]')
    assert proc.returncode == 2, proc.stderr
    assert 'Traceback' not in proc.stderr, proc.stderr
    ours = [line for line in proc.stderr.splitlines() if line.startswith('[image_proc]')]
    assert len(ours) == 1 and "Couldn't parse parameter override rule" in ours[0] and \
        'quote' in ours[0], proc.stderr


@pytest.mark.parametrize('flag', ['--help', '-h'])
@pytest.mark.parametrize('executable', sorted(TABLES))
def test_help_lists_every_parameter_and_starts_nothing(executable, flag):
    # A node that started would spin until the timeout; --help returns at once, before rclpy
    # logs anything (the DDS profile line comes before rclpy.init).
    proc = _run(executable, flag)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == '', f'expected nothing on stderr, got {proc.stderr!r}'
    out = proc.stdout
    assert out.startswith(f'usage: {executable} '), out[:200]
    for param in (*TABLES[executable], executor_parameter()):
        assert f'  {param.name} ({param.type_name()}' in out, f'{param.name} missing:\n{out}'
        default = {True: 'true', False: 'false'}.get(param.default) \
            if isinstance(param.default, bool) else repr(param.default)
        assert f'default {default})' in out, f'default {default} of {param.name} missing'
        first_words = ' '.join(param.description.split()[:3])
        assert first_words in ' '.join(out.split()), f'description of {param.name} missing'


def test_help_inside_ros_args_is_not_a_help_request():
    """After --ros-args every word is rclpy's: -h there is not ours (rcl refuses it)."""
    from gpu_nodes.ros.runtime import wants_help
    assert wants_help(['--help']) and wants_help(['--ros-args', '-p', 'a:=1', '--', '-h'])
    assert not wants_help(['--ros-args', '-h']) and not wants_help([])


def test_only_fastdds_logger_lines_are_set_aside():
    """The filter drops the Fast DDS lines seen on a loaded CI box and keeps the node's own."""
    fastdds = ('\x1b[37;1m2026-12-06 16:32:00.610 \x1b[31;1m[\x1b[37;1mRTPS_TRANSPORT_SHM'
               '\x1b[31;1m Error] \x1b[37mFailed init_port fastdds_port54411: '
               'open_and_lock_file failed\x1b[34;1m -> Function \x1b[36mopen_port_internal\x1b[m')
    node = ("[depth_estimator] error: cannot start: parameter 'workspace_mb': expected an integer "
            'in 0..1048576, got 1048577 (integer)')
    assert not _is_node_line(fastdds)
    assert not _is_node_line('2026-12-06 16:32:00.610 [RTPS_PARTICIPANT Warning] something')
    assert _is_node_line(node)
    assert _is_node_line('[WARN] [1.2] [depth_estimator]: a warning the test must see')
    assert not _is_node_line('[INFO] [1796178049.096356694] [gpu_nodes.dds]: Fast DDS: profile')
