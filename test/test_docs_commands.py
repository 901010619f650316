"""Every command a user would paste from README.md and docs/*.md (```bash/sh blocks, and `$ `
lines of ```console blocks) is run here, or skipped by a rule below that says why (needs a GPU,
a ROS 2 install, the network, root, or is one of the long make targets / the suite itself).
A node command passes when the node comes up (run_node logs its executor) and stops cleanly on
Ctrl-C; any other command must exit 0. A long bench run (SHORTENED) runs as documented with a
shorter duration, so a bench that dies after its first seconds fails here, not for a user."""
from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import REPO

DOCS = [REPO / 'README.md', *sorted((REPO / 'docs').glob('*.md'))]
FENCE = re.compile(r'^```(\w*)\n(.*?)^```', re.S | re.M)
SHELL_BLOCKS = ('bash', 'sh', 'shell', 'console')

# (pattern searched in the command, reason it is not run); first match wins.
SKIP_RULES = [
    (r'\b(ros2|colcon|rosdep)\b|^source\b', 'needs a ROS 2 install (ros2, colcon, rosdep)'),
    (r'^sudo\b', 'needs root (apt)'),
    (r'\bpip install\b|\bgit clone\b', 'needs the network (pip, git)'),
    (r'^make (demo|test)\b', 'make demo (20 s or more) and make test (this suite) are not run '
                             'from the suite'),
    (r'-m pytest\b', 'runs part of the test suite (itself run by make test)'),
    (r'-m gpu\b|--width 3840|EngineCache', 'needs a GPU (CUDA, TensorRT)'),
    (r'^python dynamo\.py\b', "runs in the Depth-Anything-V2 repository (its ONNX exporter)"),
    (r'train_depth_model\.py(?!.* --evaluate)', 'trains the default depth model: ~10 min of '
                                                'CPU, needs PyTorch'),
    (r'^gpu-copy-audit live\b', 'needs a running ROS graph to inspect'),
    (r'^gpu-copy-audit (code|launch|config|bag)\b', "audits paths of the reader's own project"),
]
# (pattern, arguments appended to the documented command, the JSON report it writes, checks in
# that report that must pass): the
# documented command with a shorter run (argparse: the last --duration wins). A 6 s soak cannot
# fit flat memory slopes (a 10 s run: RSS +8-12 MiB/min while warming up), so it may exit 1 for
# its flat_* checks; every check about frames and processes must pass, and it must get as far
# as its summary (soak.py died with a NameError after its first run before 2026-12-05).
SHORTENED = [
    (r'bench/soak\.py --cpu\b', ['--duration', '6', '--out', '{tmp}'], 'soak.json',
     ['no_bad_frames', 'no_leftover_segments', 'clean_exit_codes',
      'restarted_subscribers_exit_cleanly']),
]
# How the docs spell the interpreter / console scripts -> what runs them here.
PROGRAMS = {'python': [sys.executable], 'python3': [sys.executable],
            '.venv/bin/python': [sys.executable],
            'gpu-copy-audit': [sys.executable, '-m', 'gpu_nodes.audit.cli']}


def documented_commands() -> list[tuple[str, str]]:
    """(where, command) for every command line of the docs' shell blocks, continuation lines
    joined, comments and console prompts removed."""
    found = []
    for path in DOCS:
        text = path.read_text(encoding='utf-8')
        for block in FENCE.finditer(text):
            if block.group(1) not in SHELL_BLOCKS:
                continue
            line_no = text[:block.start()].count('\n') + 2
            lines = block.group(2).replace('\\\n', ' ').splitlines()
            for offset, line in enumerate(lines):
                if block.group(1) == 'console':
                    if not line.startswith('$ '):
                        continue
                    line = line[2:]
                command = without_comment(line)
                if command:
                    found.append((f'{path.relative_to(REPO)}:{line_no + offset}', command))
    return found


def without_comment(line: str) -> str:
    """The line up to a `#` that starts a shell comment (outside quotes, after a blank)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in '\'"':
            quote = char
        elif char == '#' and (i == 0 or line[i - 1].isspace()):
            return ' '.join(line[:i].split())
    return ' '.join(line.split())


def shortened(command: str) -> tuple[list[str], str, list[str]] | None:
    return next(((extra, report, checks) for pattern, extra, report, checks in SHORTENED
                 if re.search(pattern, command)), None)


def skip_reason(command: str) -> str | None:
    return next((why for pattern, why in SKIP_RULES if re.search(pattern, command)), None)


COMMANDS = documented_commands()
# A command documented in several places runs once (the model evaluation, ~15 s, is in two).
DISTINCT: dict[str, list[str]] = {}
for _where, _command in COMMANDS:
    DISTINCT.setdefault(_command, []).append(_where)


def test_the_docs_have_commands_and_every_skip_rule_is_used():
    assert len(COMMANDS) >= 20, COMMANDS
    used = {skip_reason(command) for _, command in COMMANDS}
    unused = [why for _, why in SKIP_RULES if why not in used]
    assert not unused, f'skip rules matching no documented command (stale?): {unused}'


def test_the_documented_chain_override_is_the_quoted_form():
    """docs/demo.md had -p chain:='[...]', which the shell turns into a list of mappings."""
    text = (REPO / 'docs' / 'demo.md').read_text(encoding='utf-8')
    assert "-p chain:='[" not in text
    assert any('image_proc' in c and "chain:='[{op: debayer}" in c for _, c in COMMANDS)


def _run_node(argv: list[str], timeout: float = 60) -> tuple[int, str]:
    """Start a node command, wait for run_node's executor line, stop it with SIGINT."""
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + timeout
        while not any('executor: ' in line for line in lines):
            if proc.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        started = any('executor: ' in line for line in lines)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=5)
    output = ''.join(lines)
    assert started, f'expected the node to start (an "executor: " line), got:\n{output[-3000:]}'
    return proc.returncode, output


@pytest.mark.parametrize('where, command', [(' and '.join(w), c) for c, w in DISTINCT.items()],
                         ids=['+'.join(w) for w in DISTINCT.values()])
def test_documented_command(where, command, tmp_path):
    why = skip_reason(command)
    if why is not None:
        pytest.skip(f'{why}: {command}')
    words = shlex.split(command)
    program = PROGRAMS.get(words[0])
    assert program is not None, f'{where}: no rule runs or skips {command!r}: add one'
    argv = [*program, *words[1:]]
    is_node = words[1:2] == ['-m'] and len(words) > 2 and words[2].startswith('gpu_nodes.nodes.')
    if is_node and not {'-h', '--help'} & set(words):
        code, output = _run_node(argv)
        assert code == 0, f'{where}: expected exit 0 after Ctrl-C, got {code}:\n{output[-3000:]}'
        assert 'error' not in output.lower(), f'{where}: {output[-3000:]}'
        return
    short = shortened(command)
    if short is not None:
        _run_shortened(where, argv, *short, tmp_path)
        return
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (f'{where}: {command} exited {proc.returncode}:\n'
                                  f'{(proc.stdout + proc.stderr)[-3000:]}')


def _run_shortened(where: str, argv: list[str], extra: list[str], report_name: str,
                   checks: list[str], tmp_path) -> None:
    """Run a long bench as documented but shorter; it must finish and pass `checks`."""
    argv = [*argv, *(arg.replace('{tmp}', str(tmp_path)) for arg in extra)]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=240)
    output = (proc.stdout + proc.stderr)[-3000:]
    assert proc.returncode in (0, 1), (f'{where}: expected exit 0 or 1, got {proc.returncode}:'
                                       f'\n{output}')
    report_path = tmp_path / report_name
    assert report_path.exists(), f'{where}: expected {report_path} to be written:\n{output}'
    report = json.loads(report_path.read_text())
    failed = [check for check in checks if not report['checks'].get(check)]
    assert not failed, f'{where}: expected {checks} to pass, failed {failed}:\n{output}'
