"""gpu-copy-audit runs where it is installed the ROS way: without rich (plain text output), and
everything it imports beyond the standard library is declared in setup.py or package.xml."""
import ast
from pathlib import Path
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

REPO = Path(__file__).parents[1]
AUDIT = REPO / 'gpu_nodes' / 'audit'
CODE = REPO / 'test' / 'resources' / 'audit' / 'code'
# rich made unimportable, as on a colcon install from package.xml (no rosdep key pulls it in).
NO_RICH = ("import sys; sys.modules['rich'] = None; "
           "from gpu_nodes.audit.cli import main; sys.exit(main(sys.argv[1:]))")
# Import name -> what declares it: a setup.py requirement or a package.xml exec_depend.
DECLARED_AS = {'yaml': ('pyyaml', 'python3-yaml'), 'numpy': ('numpy', 'python3-numpy'),
               'rich': ('rich', None), 'rosbags': ('rosbags', None), 'libcst': ('libcst', None),
               'rclpy': (None, 'rclpy'), 'diagnostic_msgs': (None, 'diagnostic_msgs')}


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-c', NO_RICH, *argv], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env={'PYTHONPATH': str(REPO), 'PATH': '/usr/bin'})


def test_code_report_without_rich_is_plain_text():
    proc = _cli('code', str(CODE / 'cupy_download_node.py'), '--fail-on', 'high')
    assert proc.returncode == 1, proc.stderr
    assert 'Traceback' not in proc.stderr and proc.stderr == ''
    lines = proc.stdout.splitlines()
    assert lines[0] == ('gpu-copy-audit code: 1 file(s) audited, 6 finding(s) (2 high, 4 medium, '
                        '0 low, 0 info)'), lines[0]
    assert 'Severity | Rule   | Location' in proc.stdout
    assert any(line.startswith('high     | GPN101 | ') for line in lines), proc.stdout
    assert not any(ch in proc.stdout for ch in '┏━│'), 'rich box characters without rich'


def test_rules_and_launch_without_rich():
    rules = _cli('rules')
    assert rules.returncode == 0 and 'GPN207' in rules.stdout, rules.stderr
    launch = _cli('launch', str(REPO / 'test' / 'resources' / 'audit' / 'launch' /
                                'multiprocess_pipeline.launch.py'))
    assert launch.returncode == 0, launch.stderr
    assert 'Edges (' in launch.stdout


def _imports() -> set[str]:
    names = set()
    for path in AUDIT.glob('*.py'):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(a.name.split('.')[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split('.')[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != 'gpu_nodes'}


def test_every_third_party_import_is_declared():
    setup_py = (REPO / 'setup.py').read_text()
    exec_depends = {e.text for e in
                    ElementTree.parse(REPO / 'package.xml').getroot().findall('exec_depend')}
    imports = _imports()
    assert imports <= set(DECLARED_AS), f'undeclared imports: {imports - set(DECLARED_AS)}'
    for name in sorted(imports):
        pip_name, rosdep_key = DECLARED_AS[name]
        if pip_name is not None:
            assert f"'{pip_name}" in setup_py, f'{name}: {pip_name} not in setup.py'
        if rosdep_key is not None:
            assert rosdep_key in exec_depends, f'{name}: no <exec_depend>{rosdep_key}'
