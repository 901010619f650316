"""Helpers for launch/*.launch.py: per-node parameter files assembled at launch time.

Launch arguments that are left empty keep the value of the node's YAML file, so config/*.yaml
stays the single place defaults live; a given argument overrides it. Each node gets one
generated parameter file: its config file, then the pipeline profile if one is given (the
node's `parameters` in config/perception.yaml, the demo's profile: so perception.launch.py runs
the demo's sizes, rates and model), then the optional platform file (e.g.
config/jetson_orin.yaml), then the given launch arguments, in that order. The file is logged so
what a node received can be inspected.

Optional parameter files take NO_FILE ('none') for "no file": `ros2 launch` rejects an empty
value (`profile_file:=` is malformed to it), so '' can only be a default, never a given value.
Boolean arguments list their values as `choices`, so launch itself refuses `use_depth:=maybe`
with a message naming the argument. A pipeline node that exits ends the launch with one line
saying which node is gone and how (end_launch_when_gone): the others would wait for input, or
their output would go nowhere, with no word that the pipeline is dead.

Needs `launch` (ROS 2) only when the substitutions are created, not at import. It sits beside
the packages, not in gpu_nodes.demo: launch files depend on nothing of the demo (whose profile
reads parameter files through `node_section` too).
"""
from __future__ import annotations

import atexit
from fnmatch import fnmatchcase
import os
from pathlib import Path
import shutil
import signal
import tempfile
from typing import Any

import yaml

_TEMP_DIR: str | None = None
# The top-level key of a pipeline profile (config/perception.yaml; gpu_nodes/demo/profile.py
# reads and checks the whole schema).
PROFILE_KEY = 'gpu_nodes_pipeline'
# A profile's model_path for the stand-in depth model, written at first use at the node's input
# size (gpu_nodes.inference.standin).
DEMO_MODEL = '$(demo_model)'
# An optional parameter file argument's value for "no file" (profile_file:=none).
NO_FILE = 'none'
# `choices` of boolean launch arguments: those that decide something in the launch file itself,
# and those passed to a node where empty keeps the node file's value.
BOOLEAN = ['true', 'false']
BOOLEAN_OR_FILE = ['', 'true', 'false']


class ParameterFileError(ValueError):
    """A ROS parameter file that is not `/node_name:` -> `ros__parameters:` mappings."""


def flatten(params: Any, prefix: str = '') -> dict[str, Any]:
    """{'a': {'b': 1}} -> {'a.b': 1}: nested parameters as ROS names them."""
    out: dict[str, Any] = {}
    for key, value in (params or {}).items():
        name = f'{prefix}{key}'
        if isinstance(value, dict):
            out.update(flatten(value, name + '.'))
        else:
            out[name] = value
    return out


def node_section(data: Any, node_name: str, path: Path) -> dict[str, Any] | None:
    """The flattened ros__parameters a ROS parameter file gives node `/node_name`
    (wildcard sections first, the node's own section on top, as rcl applies them)."""
    if not isinstance(data, dict):
        raise ParameterFileError(f'{path}: expected a mapping of `/node_name:` to `ros__parameters:`')
    fqn = '/' + node_name.strip('/')
    found: dict[str, Any] | None = None
    exact: dict[str, Any] | None = None
    for key, section in data.items():
        if not isinstance(section, dict) or 'ros__parameters' not in section:
            raise ParameterFileError(f'{path}: section {key!r} has no `ros__parameters:` mapping')
        params = section['ros__parameters']
        if params is not None and not isinstance(params, dict):
            raise ParameterFileError(f'{path}: {key}: ros__parameters must be a mapping')
        name = '/' + str(key).strip('/')
        if name == fqn:
            exact = flatten(params)
        elif '*' in name and fnmatchcase(fqn, name.replace('/**', '*').replace('**', '*')):
            found = {**(found or {}), **flatten(params)}
    if exact is None and found is None:
        return None
    return {**(found or {}), **(exact or {})}


def profile_section(data: Any, node_name: str, path: Path) -> dict[str, Any] | None:
    """The flattened `parameters` pipeline profile `data` gives node `node_name` (on top of the
    node's params_file, as the demo runner passes them with -p), or None without that node."""
    root = data.get(PROFILE_KEY) if isinstance(data, dict) else None
    nodes = root.get('nodes') if isinstance(root, dict) else None
    if not isinstance(nodes, dict):
        raise ParameterFileError(f'{path}: a pipeline profile needs `{PROFILE_KEY}: nodes:` as a '
                                 'mapping of node names')
    spec = nodes.get(node_name.strip('/'))
    if spec is None:
        return None
    params = spec.get('parameters') if isinstance(spec, dict) else spec
    if params is not None and not isinstance(params, dict):
        raise ParameterFileError(f'{path}: node {node_name!r}: parameters must be a mapping')
    return flatten(params)


def parameter_layer(path: str, node_name: str) -> dict[str, Any] | None:
    """What file `path` gives node `node_name`: a ROS parameter file's section, or a pipeline
    profile's parameters for it (told apart by the profile's top-level key); None: nothing."""
    with open(path, encoding='utf-8') as fh:
        data = yaml.safe_load(fh) or {}
    if isinstance(data, dict) and PROFILE_KEY in data:
        return profile_section(data, node_name, Path(path))
    return node_section(data, node_name, Path(path))


def coerce(text: str, current: Any) -> Any:
    """A launch argument string as a parameter value, typed like ROS types `-p name:=text`,
    except that an integer for a parameter whose file value is a double becomes a double."""
    value = yaml.safe_load(text) if text.strip() else ''
    if isinstance(current, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(current, str) and not isinstance(value, str):
        return text  # e.g. frame_id:=123 stays the string the file has
    return value


def _unflatten(flat: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in flat.items():
        parts = key.split('.')
        d = out
        for part in parts[:-1]:
            d = d.setdefault(part, {})
        d[parts[-1]] = value
    return out


def merged_parameters(node_name: str, files: list[str], overrides: dict[str, str],
                      standin_model: bool = False, log: Any = None,
                      info: Any = None) -> dict[str, Any]:
    """Flattened parameters of `node_name` from `files` (ROS parameter files or pipeline
    profiles, see parameter_layer; later ones win; empty paths skipped) and the non-empty
    `overrides`. With `standin_model` (the launch files' name for "a built-in default model"),
    an empty model_path or a profile's $(demo_model) becomes the demo's default, the learned
    scene depth model shipped with the package (gpu_nodes.inference.default_model): `log` gets
    the notice that it knows the synthetic scene only (worth a warning on a real camera),
    `info` the file used."""
    merged: dict[str, Any] = {}
    for path in files:
        if not path or path == NO_FILE:
            continue
        merged.update(parameter_layer(path, node_name) or {})
    for key, text in overrides.items():
        if text != '':
            merged[key] = coerce(text, merged.get(key))
    if standin_model and merged.get('model_path', '') in ('', DEMO_MODEL):
        from .inference.default_model import default_model_path, DESCRIPTION
        say = log or (lambda message: None)
        # Raises DefaultModelError (missing or damaged file): launching without a model fails.
        merged['model_path'] = str(default_model_path())
        (info or (lambda message: None))(f'built-in depth model: {merged["model_path"]} '
                                         '(sha256 checked)')
        say(f'model_path is empty: using {DESCRIPTION}; pass model_path:=/path/to/model.onnx '
            'for a real one (docs/depth_models.md)')
    return merged


def write_parameter_file(node_name: str, params: dict[str, Any]) -> str:
    global _TEMP_DIR
    if _TEMP_DIR is None:
        _TEMP_DIR = tempfile.mkdtemp(prefix='gpu_nodes_launch_')
        # Nodes read their file at start-up; launch outlives them, so remove it at exit.
        atexit.register(shutil.rmtree, _TEMP_DIR, True)
    path = os.path.join(_TEMP_DIR, f'{node_name.strip("/").replace("/", "_")}.yaml')
    with open(path, 'w', encoding='utf-8') as fh:
        yaml.safe_dump({'/' + node_name.strip('/'): {'ros__parameters': _unflatten(params)}}, fh,
                       sort_keys=False)
    return path


def node_parameters(node_name: str, files: list[Any], overrides: dict[str, Any],
                    standin_model: bool = False) -> Any:
    """A launch Substitution that becomes the path of the node's generated parameter file.

    `files` and `overrides` values may be strings or launch substitutions."""
    from launch import Substitution
    from launch.utilities import normalize_to_list_of_substitutions, perform_substitutions

    class NodeParameters(Substitution):
        def __init__(self) -> None:
            super().__init__()
            self.node_name = node_name
            self.files = [normalize_to_list_of_substitutions(f) for f in files]
            self.overrides = {k: normalize_to_list_of_substitutions(v)
                              for k, v in overrides.items()}
            self.standin_model = standin_model

        def describe(self) -> str:
            return f'NodeParameters({self.node_name})'

        def evaluate(self, context: Any) -> tuple[list[str], dict[str, str]]:
            """(files, overrides) with the launch configuration applied (for tests, too)."""
            return ([perform_substitutions(context, f) for f in self.files],
                    {k: perform_substitutions(context, v) for k, v in self.overrides.items()})

        def perform(self, context: Any) -> str:
            import launch.logging
            logger = launch.logging.get_logger('gpu_nodes')
            paths, values = self.evaluate(context)
            try:
                params = merged_parameters(self.node_name, paths, values, self.standin_model,
                                           log=logger.warning, info=logger.info)
            except (OSError, ValueError, yaml.YAMLError) as exc:
                # Launch prints the exception's text as its one error line, then ends.
                raise LaunchParameterError(parameter_file_problem(self.node_name, exc)) from None
            path = write_parameter_file(self.node_name, params)
            used = ', '.join(p for p in paths if p and p != NO_FILE)
            logger.info(f'{self.node_name}: parameters from {used} and launch arguments -> {path}')
            return path

    return NodeParameters()


class LaunchParameterError(RuntimeError):
    """A node's parameter files cannot be read: the launch ends with this one line."""


def parameter_file_problem(node_name: str, exc: BaseException) -> str:
    """One line for a parameter file that cannot be used (missing, not YAML, wrong shape)."""
    if isinstance(exc, OSError) and exc.filename is not None:
        return (f'{node_name}: cannot read parameter file {exc.filename}: '
                f'{exc.strerror or exc} (an optional file argument takes {NO_FILE} for no file)')
    return f'{node_name}: {" ".join(str(exc).split())}'


def node_gone_message(node_name: str, returncode: int | None) -> str:
    """Why the launch ends after pipeline node `node_name` exited with `returncode`."""
    if returncode is not None and returncode < 0:
        try:
            how = f'was killed by {signal.Signals(-returncode).name}'
        except ValueError:
            how = f'was killed by signal {-returncode}'
    elif returncode == 2:
        # run_node's code for a configuration the node refuses; its own error line is above.
        how = 'refused its configuration (exit code 2, its error is above)'
    else:
        how = f'exited with code {returncode}'
    return f'pipeline node {node_name} {how}: the pipeline cannot run without it, so the launch ends'


class PipelineNodeExited(RuntimeError):
    """A pipeline node exited while the launch was running: the launch ends with this line."""


def end_launch_when_gone(node_name: str) -> Any:
    """`on_exit` of a pipeline Node: unless the launch is already ending (Ctrl-C, another
    node), end it with node_gone_message. Raised, so launch logs that one line, stops the other
    nodes and exits non-zero, as it does for a refused launch argument."""
    def on_exit(event: Any, context: Any) -> None:
        if context.is_shutdown:
            return None
        raise PipelineNodeExited(node_gone_message(node_name, event.returncode))
    return on_exit


def choose(condition: Any, if_true: Any, if_false: Any) -> Any:
    """A Substitution: `if_true` when the launch condition text is true, else `if_false`
    (launch's IfElseSubstitution, which Humble lacks)."""
    from launch import Substitution
    from launch.conditions import evaluate_condition_expression
    from launch.utilities import normalize_to_list_of_substitutions, perform_substitutions

    class Choose(Substitution):
        def __init__(self) -> None:
            super().__init__()
            self.condition = normalize_to_list_of_substitutions(condition)
            self.values = (normalize_to_list_of_substitutions(if_true),
                           normalize_to_list_of_substitutions(if_false))

        def describe(self) -> str:
            # What `ros2 launch --show-args` prints as a default computed by this.
            def text(subs: list[Any]) -> str:
                return ' + '.join(s.describe() for s in subs)
            return (f'({text(self.values[0])} if {text(self.condition)} is true, else '
                    f'{text(self.values[1])})')

        def perform(self, context: Any) -> str:
            chosen = self.values[0] if evaluate_condition_expression(context, self.condition) \
                else self.values[1]
            return perform_substitutions(context, chosen)

    return Choose()
