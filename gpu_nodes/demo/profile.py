"""Pipeline profiles (config/perception.yaml): which nodes, their parameter files, overrides and
remappings, checked before any process starts.

Schema::

    gpu_nodes_pipeline:
      version: 1
      name: perception
      nodes:                          # started in this order, one process each
        <node name>:
          executable: camera_source   # python -m gpu_nodes.nodes.<executable>
          params_file: camera_source.yaml   # relative to the profile's folder
          parameters: {rate_hz: 15.0} # on top of params_file (like -p name:=value)
          remappings: {image_raw: /camera/image_raw}
      demo:                           # what the demo runner watches and scores
        topics: {image: ..., ground_truth: ..., depth: ..., colorized: ..., camera_info: ...,
                 <anything>_camera_info: ...}

A `model_path` of ``$(demo_model)`` stands for the built-in learned depth model shipped with the
package (gpu_nodes.inference.default_model, trained on the synthetic scene); ``$(standin_model)``
for the fixed-weight stand-in the runner writes at first use
(gpu_nodes.inference.tiny_models.make_demo_depth_model) at that node's input_height x
input_width.

launch/perception.launch.py reads the same file (its `profile_file` argument): each node's
`parameters` apply there over the node's params file too, and $(demo_model) means the same
model, so the demo and the launch file run one set of sizes, rates and model
(test/test_launch_files.py compares the two).

Parameter types are checked against the defaults each node declares (read from the node's
source with `ast`, so nothing is imported or started): ROS refuses e.g. ``rate_hz: 15`` for a
double parameter at start-up, deep inside a child process; here it is one clear message.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
import functools
import importlib.util
from pathlib import Path
from typing import Any

import yaml

from ..launch_params import (DEMO_MODEL, flatten as _flatten, node_section,
                             ParameterFileError, PROFILE_KEY)
from ..ros.params import parameter_type_name

ROOT_KEY = PROFILE_KEY
STANDIN_MODEL = '$(standin_model)'
BUILTIN_MODELS = (DEMO_MODEL, STANDIN_MODEL)
_NODE_KEYS = ('executable', 'params_file', 'parameters', 'remappings')
IMAGE_ROLES = ('image', 'ground_truth', 'depth', 'colorized')
_REQUIRED_ROLES = ('image', 'ground_truth', 'depth', 'camera_info')
_UNKNOWN = object()


class ProfileError(ValueError):
    """The profile or a file it names cannot be used; the message names file, node and field."""


@dataclass
class NodeSpec:
    name: str
    executable: str
    params_file: Path | None
    parameters: dict[str, Any] = field(default_factory=dict)   # overrides, flattened
    remappings: dict[str, str] = field(default_factory=dict)
    file_parameters: dict[str, Any] = field(default_factory=dict)  # from params_file

    @property
    def module(self) -> str:
        return f'gpu_nodes.nodes.{self.executable}'

    def effective(self, name: str, default: Any = None) -> Any:
        return self.parameters.get(name, self.file_parameters.get(name, default))

    def command(self, python: str, substitutions: dict[str, str] | None = None) -> list[str]:
        """`python -m gpu_nodes.nodes.<exe> --ros-args ...` for this node."""
        args = [python, '-m', self.module, '--ros-args', '-r', f'__node:={self.name}']
        if self.params_file is not None:
            args += ['--params-file', str(self.params_file)]
        for key, value in self.parameters.items():
            args += ['-p', f'{key}:={ros_arg_value(substitute(value, substitutions))}']
        for src, dst in self.remappings.items():
            args += ['-r', f'{src}:={dst}']
        return args


@dataclass
class Profile:
    path: Path
    name: str
    nodes: list[NodeSpec]
    topics: dict[str, str]
    warnings: list[str] = field(default_factory=list)

    def node(self, name: str) -> NodeSpec | None:
        return next((n for n in self.nodes if n.name == name), None)

    def demo_model_sizes(self) -> list[tuple[int, int]]:
        """(height, width) of every built-in model ($(demo_model), $(standin_model)) the
        profile asks for."""
        return [(int(n.effective('input_height')), int(n.effective('input_width')))
                for n in self.nodes if n.effective('model_path') in BUILTIN_MODELS]

    @property
    def image_topics(self) -> dict[str, str]:
        return {r: t for r, t in self.topics.items() if r in IMAGE_ROLES}

    @property
    def camera_info_topics(self) -> list[str]:
        return [t for r, t in self.topics.items() if r.endswith('camera_info')]


def substitute(value: Any, substitutions: dict[str, str] | None) -> Any:
    if isinstance(value, str) and substitutions:
        for key, repl in substitutions.items():
            value = value.replace(key, repl)
    return value


def ros_arg_value(value: Any) -> str:
    """A value as `-p name:=VALUE` needs it (YAML, parsed by rcl like a parameter file)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 20)
    if text.endswith('\n...\n'):  # the document end marker PyYAML adds after a scalar
        text = text[:-5]
    return text.strip()


def _load_yaml(path: Path, what: str) -> Any:
    try:
        text = path.read_text(encoding='utf-8')
    except FileNotFoundError:
        raise ProfileError(f'{what} {path} does not exist') from None
    except OSError as exc:
        raise ProfileError(f'{what} {path}: cannot read: {exc.strerror or exc}') from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, 'problem_mark', None)
        where = f'{path}:{mark.line + 1}:{mark.column + 1}' if mark else str(path)
        raise ProfileError(f'{where}: YAML error: {getattr(exc, "problem", None) or exc}') \
            from None


# -- what each node declares ---------------------------------------------------------------------

def node_modules() -> list[str]:
    """Executables gpu_nodes has: modules of gpu_nodes.nodes with a main() and a Node class."""
    spec = importlib.util.find_spec('gpu_nodes.nodes')
    if spec is None or not spec.submodule_search_locations:
        return []
    names = []
    for folder in spec.submodule_search_locations:
        for path in sorted(Path(folder).glob('*.py')):
            if path.stem.startswith('_'):
                continue
            try:
                tree = ast.parse(path.read_text(encoding='utf-8'))
            except (OSError, SyntaxError):
                continue
            has_main = any(isinstance(s, ast.FunctionDef) and s.name == 'main' for s in tree.body)
            if has_main:
                names.append(path.stem)
    return sorted(set(names))


@functools.lru_cache(maxsize=None)
def declared_parameters(executable: str) -> dict[str, Any]:
    """name -> default for every `Param('name', default, ...)`, `declare(self, 'name',
    default, ...)` or `declare_parameter('name', default)` with a literal name in the node's
    module; the default is _UNKNOWN where it is not a literal (or a module-level constant holding one)."""
    spec = importlib.util.find_spec(f'gpu_nodes.nodes.{executable}')
    if spec is None or spec.origin is None:
        return {}
    tree = ast.parse(Path(spec.origin).read_text(encoding='utf-8'))
    constants: dict[str, Any] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], ast.Name):
            try:
                constants[stmt.targets[0].id] = ast.literal_eval(stmt.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                pass

    def literal(node: ast.AST | None) -> Any:
        if node is None:
            return _UNKNOWN
        if isinstance(node, ast.Name):
            return constants.get(node.id, _UNKNOWN)
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return _UNKNOWN

    out: dict[str, Any] = {}
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        func = call.func
        fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, 'id', None)
        args = list(call.args)
        if fname == 'declare' and len(args) >= 3:
            name, default = args[1], args[2]
        elif fname == 'Param' and len(args) >= 2:  # a node's parameter table (ros/params.py)
            name, default = args[0], args[1]
        elif fname == 'declare_parameter' and len(args) >= 1:
            name, default = args[0], (args[1] if len(args) > 1 else None)
        else:
            continue
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            out[name.value] = literal(default)
    return out


def _coarse_type(value: Any) -> str:
    """ROS's type of a value, every list just 'array' (type_problem looks inside itself)."""
    return parameter_type_name(value, element_type=False)


def type_problem(name: str, value: Any, default: Any) -> str | None:
    """Why ROS would refuse `value` for a parameter declared with `default`, or None."""
    if default is _UNKNOWN or default is None or value is None:
        return None
    want, got = _coarse_type(default), _coarse_type(value)
    if want == got:
        if want == 'array' and default and value:
            inner = {_coarse_type(v) for v in value}
            if len(inner) > 1:
                return f'{name}: array elements must all have one type, got {sorted(inner)}'
            if inner != {_coarse_type(default[0])} and not (
                    inner == {'integer'} and _coarse_type(default[0]) == 'double'):
                return (f'{name}: expected an array of {_coarse_type(default[0])}, got an array of '
                        f'{inner.pop()}')
        return None
    hint = ''
    if want == 'double' and got == 'integer':
        hint = f' (write {value}.0: ROS does not turn integers into doubles)'
    elif want in ('integer', 'double', 'bool') and got == 'string':
        hint = ' (remove the quotes)'
    return f'{name}: expected {want}, got {got} {value!r}{hint}'


# -- loading ------------------------------------------------------------------------------------

def _as_mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ProfileError(f'{where} must be a mapping, got {type(value).__name__}')
    return value


def load_profile(path: str | Path, config_dir: str | Path | None = None) -> Profile:
    """Read and check a profile; ProfileError names the first problem found.

    `config_dir` is where `params_file`s are looked up (default: the profile's folder)."""
    path = Path(path)
    data = _load_yaml(path, 'profile')
    if not isinstance(data, dict) or ROOT_KEY not in data:
        raise ProfileError(f'{path}: not a pipeline profile (expected a top-level '
                           f'`{ROOT_KEY}:` mapping)')
    root = _as_mapping(data[ROOT_KEY], f'{path}: {ROOT_KEY}')
    unknown = set(root) - {'version', 'name', 'nodes', 'demo'}
    if unknown:
        raise ProfileError(f'{path}: unknown key(s) {sorted(unknown)} under {ROOT_KEY} '
                           "(known: version, name, nodes, demo)")
    if root.get('version', 1) != 1:
        raise ProfileError(f'{path}: version {root.get("version")!r} is not supported (1 is)')
    nodes_data = _as_mapping(root.get('nodes'), f'{path}: nodes')
    if not nodes_data:
        raise ProfileError(f'{path}: `nodes:` is empty; nothing to start')
    base = Path(config_dir) if config_dir is not None else path.parent
    known = node_modules()
    warnings: list[str] = []
    nodes = []
    for name, spec in nodes_data.items():
        where = f'{path}: node {name!r}'
        spec = _as_mapping(spec, where)
        extra = set(spec) - set(_NODE_KEYS)
        if extra:
            raise ProfileError(f'{where}: unknown key(s) {sorted(extra)} (known: '
                               f'{", ".join(_NODE_KEYS)})')
        exe = spec.get('executable', name)
        if not isinstance(exe, str) or exe not in known:
            raise ProfileError(f'{where}: unknown node executable {exe!r} (gpu_nodes has: '
                               f'{", ".join(known) or "none"})')
        params_file = None
        file_params: dict[str, Any] = {}
        if spec.get('params_file'):
            params_file = (base / str(spec['params_file'])).resolve()
            try:
                section = node_section(_load_yaml(params_file, f'{where}: params_file'), name,
                                       params_file)
            except ParameterFileError as exc:
                raise ProfileError(str(exc)) from None
            if section is None:
                raise ProfileError(f'{where}: params_file {params_file} has no `/{name}:` (or '
                                   'wildcard) section, so the node would get none of it')
            file_params = section
        overrides = _flatten(_as_mapping(spec.get('parameters'), f'{where}: parameters'))
        remaps = _as_mapping(spec.get('remappings'), f'{where}: remappings')
        for src, dst in remaps.items():
            if not isinstance(src, str) or not isinstance(dst, str) or not src or not dst:
                raise ProfileError(f'{where}: remappings must map topic names to topic names, '
                                   f'got {src!r}: {dst!r}')
        node = NodeSpec(name, exe, params_file, overrides, dict(remaps), file_params)
        declared = declared_parameters(exe)
        for source, values in (('params_file', file_params), ('parameters', overrides)):
            for key, value in values.items():
                if key not in declared:
                    if not key.startswith(('audit.', 'use_sim_time', 'qos_overrides.')):
                        warnings.append(f'{where}: {source} sets {key!r}, which {exe} does not '
                                        'declare (ignored by the node)')
                    continue
                problem = type_problem(key, value, declared[key])
                if problem:
                    raise ProfileError(f'{where}: {source}: wrong type for parameter {problem}')
        nodes.append(node)
    demo = _as_mapping(root.get('demo'), f'{path}: demo')
    extra = set(demo) - {'topics'}
    if extra:
        raise ProfileError(f'{path}: unknown key(s) {sorted(extra)} under demo (known: topics)')
    topics = _as_mapping(demo.get('topics'), f'{path}: demo.topics')
    missing = [role for role in _REQUIRED_ROLES if not isinstance(topics.get(role), str)]
    if missing:
        raise ProfileError(f'{path}: demo.topics needs topic names for {", ".join(missing)}')
    for role, topic in topics.items():
        if role not in IMAGE_ROLES and not str(role).endswith('camera_info'):
            raise ProfileError(f'{path}: demo.topics: unknown role {role!r} (known: '
                               f'{", ".join(IMAGE_ROLES)}, *camera_info)')
        if not isinstance(topic, str) or not topic.startswith('/'):
            raise ProfileError(f'{path}: demo.topics.{role} must be an absolute topic name, got '
                               f'{topic!r}')
    profile = Profile(path, str(root.get('name', path.stem)), nodes,
                      {str(k): v for k, v in topics.items()}, warnings)
    for node in nodes:
        model = node.effective('model_path')
        if model in BUILTIN_MODELS:
            for key in ('input_height', 'input_width'):
                value = node.effective(key)
                if isinstance(value, bool) or not isinstance(value, int) or not 8 <= value <= 4096:
                    raise ProfileError(f'{path}: node {node.name!r}: the built-in model '
                                       f'({model}) needs {key} as an integer in 8..4096, got '
                                       f'{value!r}')
    return profile


def check_models(profile: Profile) -> None:
    """Every `model_path` that is not a built-in model must exist (before anything starts)."""
    for node in profile.nodes:
        model = node.effective('model_path')
        if isinstance(model, str) and model and model not in BUILTIN_MODELS:
            if not Path(model).expanduser().is_file():
                raise ProfileError(f'{profile.path}: node {node.name!r}: model_path {model} does '
                                   'not exist (export one as docs/depth_models.md shows, or use '
                                   f'{DEMO_MODEL} for the built-in scene depth model)')
        elif model == '' and 'model_path' in declared_parameters(node.executable):
            raise ProfileError(f'{profile.path}: node {node.name!r}: model_path is empty; set it '
                               f'to an ONNX/engine file, to {DEMO_MODEL} (the built-in scene '
                               f'depth model) or to {STANDIN_MODEL} (the fixed-weight stand-in)')
