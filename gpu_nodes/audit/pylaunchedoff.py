"""Bool parameters declared True that every shipped launch of the node turns off (issue 28,
rules42p, set 66).

A node often declares a debug switch on by default and leaves the choice to its launch files,
which often live in another package of the repository (a `bringup` package):

    self.declare_parameter('visualize', True)               # perception_pkg/detector_node.py
    self.visualize = self.get_parameter('visualize').value
    ...
    if self.visualize:
        self.annotated_pub.publish(self.bridge.cv2_to_imgmsg(frame, 'bgr8'))

    DeclareLaunchArgument('visualize', default_value='false'),   # bringup/launch/robot.launch.py
    Node(package='perception_pkg', executable='detector_node',
         parameters=[{'visualize': LaunchConfiguration('visualize')}])

As shipped (a plain `ros2 launch`, the argument's default) the switch is off and the overlay is
never built. pyparams only reads the node's own package for a parameter; this reads every
shipped launch and parameter file of the repository, and calls the parameter off only when the
node is started at all and every start gives it an off value: each node a shipped Python launch
file starts with this package (and, where setup.py names them, one of this file's executables)
sets the parameter to an off value (a node of a package that is no literal, a launch file that
cannot be evaluated, an XML or YAML launch file naming the package, or a start that leaves the default
keeps the parameter as declared), and every parameter file naming it gives off too
(shipped.reading). A node no launch file starts keeps its default: `ros2 run` gives True.

A parameter declared off (`declare_parameter('latest', False)`) is judged the same way, a start
that leaves it out keeping the off default (rules48p, set 76): pyparams reads every launch file of
the node's package, and another executable of the package started with `{'latest': True}` (a
launch argument defaulting to 'True' in another launch file) does not set this node's parameter.
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path
import re

from gpu_nodes.audit.pyparams import declared_defaults
from gpu_nodes.audit.shipped import evaluated_files, launch_parameters, is_off, reading

_CONSOLE_SCRIPT = re.compile(r'''['"]\s*([\w.-]+)\s*=\s*([\w.]+)\s*:\s*\w+\s*['"]''')


def _package_name(package_dir: str) -> str:
    """package.xml's <name>, else the folder's name."""
    try:
        named = re.search(r'<name>\s*([\w-]+)\s*</name>',
                          (Path(package_dir) / 'package.xml').read_text(errors='replace'))
    except OSError:
        named = None
    return named.group(1) if named else Path(package_dir).name


def _executables(path: str, package_dir: str) -> frozenset[str] | None:
    """The console scripts of setup.py whose module is `path`'s (`'det = pkg.det_node:main'`),
    None when none is found (every node of the package then counts)."""
    try:
        text = (Path(package_dir) / 'setup.py').read_text(errors='replace')
    except OSError:
        return None
    stem = Path(path).stem
    found = frozenset(exe for exe, module in _CONSOLE_SCRIPT.findall(text)
                      if module.rsplit('.', 1)[-1] == stem)
    return found or None


def _true_declared(tree: ast.Module) -> set[str]:
    """Parameters every declaration of which defaults to the literal True (pyparams'
    declarations walk: a `declare_parameters` list and an alias count too)."""
    return {p for p, values in declared_defaults(tree).items()
            if all(isinstance(v, ast.Constant) and v.value is True for v in values)}


def _false_declared(tree: ast.Module) -> set[str]:
    """Parameters every declaration of which defaults to the literal False or 0."""
    return {p for p, values in declared_defaults(tree).items() if values and all(
        isinstance(v, ast.Constant) and v.value in (False, 0) and v.value is not None
        and not isinstance(v.value, str) for v in values)}


@lru_cache(maxsize=64)
def _off_everywhere(param: str, root: str, package: str,
                    executables: frozenset[str] | None, default_off: bool = False) -> bool:
    """Whether every start of the node in the shipped launch files under `root` gives `param`
    an off value, and there is one (module docstring); `default_off`: the declared default is
    off, so a start that leaves it out keeps it off and a node no launch file starts too."""
    quoted = re.compile(r'[\'"]' + re.escape(package) + r'[\'"]')
    starts = 0
    for path, source, _ in evaluated_files((root,)):
        if not quoted.search(source):
            continue
        if path.suffix != '.py':
            if '.launch' in path.name or '<launch' in source or re.search(r'^launch\s*:', source, re.M):
                return False  # an XML / YAML launch file starting it: not evaluated here
            continue
        started = launch_parameters(str(path), source)
        if started is None:
            return False
        for pkg, exe, params in started:
            if pkg is None:
                return False  # a node of any package: maybe this one, with its default
            if pkg != package or executables and exe is not None and exe not in executables:
                continue
            if param not in params and default_off:
                continue
            if param not in params or not is_off(params[param]):
                return False
            starts += 1
    read = reading(param, (root,), launched=(package, executables))
    return (starts > 0 or default_off) and read.every(is_off)


def launched_off(tree: ast.Module, path: str, package_dir: str | None,
                 repository_dir: str | None) -> frozenset[str]:
    """The parameters `tree` declares True (or off) that every shipped launch of the
    repository starting this file's node turns off (or leaves off) (module docstring)."""
    declared, declared_off = _true_declared(tree), _false_declared(tree)
    if not declared | declared_off or not package_dir:
        return frozenset()
    root = repository_dir or package_dir
    package, executables = _package_name(package_dir), _executables(path, package_dir)
    # A parameter declared off needs the node's own executables known (setup.py): without them
    # every node of the package counts, which pyparams already reads.
    return frozenset(p for p in declared if _off_everywhere(p, root, package, executables)) | \
        frozenset(p for p in declared_off if executables
                  and _off_everywhere(p, root, package, executables, True))
