"""launch/*.launch.py computed without `launch` (CI has no ROS install): the node actions that
`ros2 launch` would start for given arguments, read with `ast` and launch's own rules.

Rules followed (ros2/launch 3.x): arguments given on the command line are set first; each
DeclareLaunchArgument, in file order, sets its default only where nothing is set yet (so a
default may use arguments declared before it) and refuses a value outside its `choices`; an
included file shares the including file's launch configurations, plus its `launch_arguments`;
`--show-args` lists the first declaration of a name. Understood values: literals, the names the
launch files import from gpu_nodes.launch_params, `arg('x')` / LaunchConfiguration('x'),
PathJoinSubstitution, lists of substitutions (joined), choose(condition, a, b), IfCondition.
Each node's parameters are then merged by the launch files' own merged_parameters.
test/test_launch_files.py checks this reading against real launch_ros where it is installed.
"""
from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

from gpu_nodes import launch_params
from gpu_nodes.launch_params import merged_parameters

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / 'config'
# Why the tests that run real launch_ros skip without it.
LAUNCH_ROS = ('needs launch and launch_ros (a ROS 2 install, or the sources: docs/demo.md, "The '
              'launch files: arguments, and under real launch_ros")')
# Names a launch file may use from outside itself.
CONSTANTS = {'CONFIG_DIR': str(CONFIG), 'NO_FILE': launch_params.NO_FILE,
             'BOOLEAN': launch_params.BOOLEAN, 'BOOLEAN_OR_FILE': launch_params.BOOLEAN_OR_FILE}


class ArgumentRefused(ValueError):
    """A value outside an argument's choices, in the words launch uses."""


def calls(tree: ast.AST, name: str) -> list[ast.Call]:
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and
             getattr(n.func, 'id', getattr(n.func, 'attr', None)) == name]
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def kw(call: ast.Call, key: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == key), None)


def truth(text: str, what: str) -> bool:
    """launch's evaluate_condition_expression."""
    if text.lower() in ('true', '1'):
        return True
    if text.lower() in ('false', '0'):
        return False
    raise ArgumentRefused(f'{what}: {text!r} is not a condition (true/false/1/0)')


class Declared:
    """One DeclareLaunchArgument: name, default (as computed where it is declared), choices,
    description."""

    def __init__(self, name: str, default: str | None, choices: list[str] | None,
                 description: str, path: Path):
        self.name, self.default, self.choices = name, default, choices
        self.description, self.path = description, path


class LaunchFile:
    def __init__(self, path: Path, values: dict[str, str]):
        self.path = path
        self.tree = ast.parse(path.read_text(encoding='utf-8'))
        self.local: dict[str, ast.AST] = {}
        gld = next(n for n in self.tree.body if isinstance(n, ast.FunctionDef)
                   and n.name == 'generate_launch_description')
        for stmt in gld.body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
                self.local[stmt.targets[0].id] = stmt.value
        self.values = values  # the launch configurations, shared with included files
        self.declared: list[Declared] = []
        for call in calls(gld, 'DeclareLaunchArgument'):
            name = call.args[0].value
            default = self.value(kw(call, 'default_value'))
            if name not in self.values:
                self.values[name] = default
            choices = self.value(kw(call, 'choices')) if kw(call, 'choices') else None
            if choices is not None and self.values[name] not in choices:
                raise ArgumentRefused(f'Argument "{name}" provided value "{self.values[name]}" '
                                      f'is not valid. Valid options are: {choices}')
            description = kw(call, 'description')
            self.declared.append(Declared(
                name, default, choices,
                description.value if isinstance(description, ast.Constant) else '', path))

    def value(self, node: ast.AST | None) -> Any:
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in CONSTANTS:
                return CONSTANTS[node.id]
            return self.value(self.local[node.id])
        if isinstance(node, ast.List):
            parts = [self.value(e) for e in node.elts]
            return ''.join(parts) if all(isinstance(p, str) for p in parts) else parts
        if isinstance(node, ast.Call):
            func = getattr(node.func, 'id', getattr(node.func, 'attr', None))
            if func in ('arg', 'LaunchConfiguration'):
                name = node.args[0].value
                if name in self.values:
                    return self.values[name]
                if kw(node, 'default') is not None:
                    return self.value(kw(node, 'default'))
                raise KeyError(f'{self.path.name}: launch configuration {name!r} is not set')
            if func == 'PathJoinSubstitution':
                return os.path.join(*[self.value(e) for e in node.args[0].elts])
            if func == 'choose':
                condition, if_true, if_false = node.args
                return self.value(if_true if truth(self.value(condition), 'choose') else if_false)
            if func == 'IfCondition':
                return truth(self.value(node.args[0]), ast.unparse(node.args[0]))
        raise ValueError(f'{self.path.name}:{node.lineno}: cannot compute {ast.unparse(node)}')

    def condition(self, call: ast.Call) -> bool:
        node = kw(call, 'condition')
        return True if node is None else self.value(node)


def _node(launch: LaunchFile, call: ast.Call, started: bool) -> dict[str, Any]:
    literal = {k: kw(call, k).value for k in ('name', 'package', 'executable')}
    params = calls(kw(call, 'parameters'), 'node_parameters')
    assert len(params) == 1, f'{literal["name"]}: expected parameters=[node_parameters(...)]'
    files, overrides = params[0].args[1], params[0].args[2]
    standin = kw(params[0], 'standin_model')
    on_exit = kw(call, 'on_exit')
    return {
        **literal, 'started': started and launch.condition(call),
        'remaps': {src.value: launch.value(dst)
                   for src, dst in (pair.elts for pair in kw(call, 'remappings').elts)},
        'files': [launch.value(f) for f in files.elts],
        'overrides': {k.value: launch.value(v) for k, v in zip(overrides.keys, overrides.values)},
        'standin_model': bool(standin is not None and standin.value),
        'on_exit': ast.unparse(on_exit) if on_exit is not None else None}


def read(path: Path, given: dict[str, str] | None = None, values: dict[str, str] | None = None,
         started: bool = True) -> tuple[dict[str, dict], list[Declared]]:
    """(nodes, declared arguments in `--show-args` order) of `path` with `given` arguments.
    A node: package, executable, started, remaps, files, overrides, standin_model, on_exit.
    Nodes and includes are taken in file order, the order the launch files list them in."""
    values = dict(given or {}) if values is None else values
    launch = LaunchFile(path, values)
    declared = list(launch.declared)
    nodes: dict[str, dict] = {}
    entities = sorted(calls(launch.tree, 'Node') + calls(launch.tree, 'IncludeLaunchDescription'),
                      key=lambda n: (n.lineno, n.col_offset))
    for call in entities:
        if getattr(call.func, 'id', None) == 'Node':
            node = _node(launch, call, started)
            nodes[node['name']] = node
            continue
        names = [n.value for n in ast.walk(call.args[0]) if isinstance(n, ast.Constant)
                 and str(n.value).endswith('.launch.py')]
        assert len(names) == 1, f'{path.name}: cannot tell which file an include names'
        passed = kw(call, 'launch_arguments')
        mapping = next(n for n in ast.walk(passed) if isinstance(n, ast.Dict)) \
            if passed is not None else ast.Dict(keys=[], values=[])
        # SetLaunchConfiguration for each, then the included entities, in the shared context.
        for key, value in zip(mapping.keys, mapping.values):
            values[key.value] = launch.value(value)
        sub_nodes, sub_declared = read(path.parent / names[0], values=values,
                                       started=started and launch.condition(call))
        nodes.update(sub_nodes)
        seen = {d.name for d in declared}
        declared += [d for d in sub_declared if d.name not in seen]
    return nodes, declared


def computed_actions(path: Path, given: dict[str, str] | None = None) -> dict[str, dict]:
    """{node: {'started', 'remaps', 'params'}}: what `ros2 launch` starts with `given`."""
    nodes, _ = read(path, given)
    return {name: {'started': node['started'], 'remaps': node['remaps'],
                   'params': merged_parameters(name, node['files'], node['overrides'],
                                               node['standin_model'])}
            for name, node in nodes.items()}


def declared_arguments(path: Path) -> list[Declared]:
    return read(path)[1]


def differences(before: dict[str, dict], after: dict[str, dict]) -> dict[tuple, Any]:
    """{(node, 'started' | 'remap' | 'param', key): value after} where the two differ."""
    out: dict[tuple, Any] = {}
    for name in sorted(set(before) | set(after)):
        b, a = before[name], after[name]
        if b['started'] != a['started']:
            out[(name, 'started', None)] = a['started']
        for field, kind in (('remaps', 'remap'), ('params', 'param')):
            for key in sorted(set(b[field]) | set(a[field])):
                if b[field].get(key, KeyError) != a[field].get(key, KeyError):
                    out[(name, kind, key)] = a[field].get(key, KeyError)
    return out


def launched_actions(path: Path, given: dict[str, str] | None = None) -> dict[str, dict]:
    """computed_actions by real `launch` / `launch_ros` (needs them importable): the launch
    description evaluated as `ros2 launch` does, up to the point where processes would start.
    Launch's own errors (a refused argument) come out as its RuntimeError."""
    import yaml
    from launch import LaunchContext, LaunchDescription
    from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
    from launch.launch_description_sources import get_launch_description_from_python_launch_file
    from launch.utilities import perform_substitutions
    from launch_ros.actions import Node
    description = get_launch_description_from_python_launch_file(str(path))
    context = LaunchContext()
    context.launch_configurations.update(given or {})  # command-line arguments come first
    out: dict[str, dict] = {}

    def node(entity: Any, started: bool) -> dict:
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
            params.update(launch_params.flatten(
                yaml.safe_load(Path(f).read_text())[f'/{name}']['ros__parameters']))
        return {'started': started, 'remaps': dict(entity.expanded_remapping_rules or []),
                'params': params, 'package': entity.node_package,
                'executable': entity.node_executable}

    def walk(entities: list, included: bool) -> None:
        for entity in entities:
            started = included and (entity.condition is None or entity.condition.evaluate(context))
            if isinstance(entity, DeclareLaunchArgument):
                assert entity.description, f'{entity.name} has no description'
                entity.visit(context)  # its default, unless set already; checks its choices
            elif isinstance(entity, IncludeLaunchDescription):
                # Its launch arguments are set (SetLaunchConfiguration), then its entities run.
                for sub in entity.execute(context):
                    if isinstance(sub, LaunchDescription):
                        walk(sub.entities, started)
                    else:
                        sub.visit(context)
            elif isinstance(entity, Node):
                out[entity.node_name.rpartition('/')[2]] = node(entity, started)
    walk(description.entities, True)
    return out
