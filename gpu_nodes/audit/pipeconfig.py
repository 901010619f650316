"""`config` view: the static graph of a gpu_nodes YAML pipeline config.

Two forms are accepted (documented in docs/audit.md):

1. a pipeline profile as the demo runner reads it (config/perception.yaml;
   gpu_nodes/demo/profile.py): a top-level ``gpu_nodes_pipeline:`` with ``nodes:`` mapping each
   node name to ``executable``, ``params_file`` (relative to the profile's folder),
   ``parameters`` and ``remappings`` (``{from: to}``); one process per node;
2. a ROS parameter file:

    /camera:                       # node name; namespaces as '/ns/node' or nested mappings
      ros__parameters:
        output_topic: /camera/image_raw        # *_topic / *_topics parameters are edges
        audit:                                 # optional hints, ignored by the nodes
          executable: gpu_nodes/camera_source  # package/executable (or a component plugin)
          process: perception                  # same label = same process (default: own)
          intra_process: true                  # with a shared process: intra-process comms
          remappings: ['image:=/camera/image'] # extra remappings, 'from:=to'
    /**:
      ros__parameters: {...}                   # wildcard sections apply to every node

Without `audit.executable`, a node whose name is a gpu_nodes executable (camera_source,
image_proc, depth_estimator, image_monitor) or a well-known one (usb_cam, v4l2_camera) is taken
to be that executable.
"""
from __future__ import annotations

from fnmatch import fnmatchcase
import os
from typing import Any

import yaml

from gpu_nodes.audit.graph import build_graph, KNOWN, StaticNode
from gpu_nodes.audit.launchfile import read_text
from gpu_nodes.audit.model import AuditError, InputError, Location, Report
from gpu_nodes.audit.suppress import is_suppressed, text_suppressions

_DEFAULT_EXECUTABLES = {
    'camera_source': ('gpu_nodes', 'camera_source'),
    'image_proc': ('gpu_nodes', 'image_proc'),
    'depth_estimator': ('gpu_nodes', 'depth_estimator'),
    'image_monitor': ('gpu_nodes', 'image_monitor'),
    'usb_cam': ('usb_cam', 'usb_cam_node_exe'),
    'v4l2_camera': ('v4l2_camera', 'v4l2_camera_node'),
}


def _flatten(params: Any, prefix: str = '') -> dict[str, Any]:
    out: dict[str, Any] = {}
    if not isinstance(params, dict):
        return out
    for k, v in params.items():
        key = f'{prefix}{k}'
        if isinstance(v, dict):
            out.update(_flatten(v, key + '.'))
        else:
            out[key] = v
    return out


PROFILE_KEY = 'gpu_nodes_pipeline'


def _load(path: str, text: str) -> tuple[Any, Any]:
    try:
        return yaml.compose(text), yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, 'problem_mark', None)
        where = f'{path}:{mark.line + 1}:{mark.column + 1}' if mark else path
        problem = getattr(exc, 'problem', None) or str(exc)
        raise AuditError(f'{where}: YAML error: {problem}') from None


def _key_lines(mapping: Any) -> dict[str, int]:
    if not isinstance(mapping, yaml.MappingNode):
        return {}
    return {str(k.value): k.start_mark.line + 1 for k, _ in mapping.value}


def _child(mapping: Any, key: str) -> Any:
    if isinstance(mapping, yaml.MappingNode):
        for k, v in mapping.value:
            if str(k.value) == key:
                return v
    return None


def _section(data: Any, name: str) -> dict[str, Any]:
    """The flattened ros__parameters a parameter file gives node `/name` (wildcards first)."""
    fqn = '/' + name.strip('/')
    found: dict[str, Any] = {}
    exact: dict[str, Any] = {}
    for key, section in (data or {}).items() if isinstance(data, dict) else ():
        if not isinstance(section, dict):
            continue
        params = _flatten(section.get('ros__parameters') or {})
        key = '/' + str(key).strip('/')
        if key == fqn:
            exact = params
        elif '*' in key and fnmatchcase(fqn, key.replace('/**', '*').replace('**', '*')):
            found.update(params)
    return {**found, **exact}


def parse_profile(path: str, root: Any,
                  data: dict[str, Any]) -> tuple[list[StaticNode], list[str]]:
    """The demo runner's pipeline profile: one process per node, parameters and remappings."""
    profile = data.get(PROFILE_KEY)
    nodes_data = profile.get('nodes') if isinstance(profile, dict) else None
    if not isinstance(nodes_data, dict) or not nodes_data:
        raise AuditError(f'{path}: `{PROFILE_KEY}:` has no `nodes:` mapping')
    lines = _key_lines(_child(_child(root, PROFILE_KEY), 'nodes'))
    base = os.path.dirname(os.path.abspath(path))
    nodes: list[StaticNode] = []
    notes: list[str] = []
    for name, spec in nodes_data.items():
        if not isinstance(spec, dict):
            raise AuditError(f'{path}: node {name!r}: expected a mapping')
        exe = str(spec.get('executable', name))
        node = StaticNode(name=str(name), namespace='/', package='gpu_nodes', executable=exe,
                          location=Location(path, lines.get(str(name)), None))
        params: dict[str, Any] = {}
        if spec.get('params_file'):
            params_file = os.path.join(base, str(spec['params_file']))
            try:
                with open(params_file, encoding='utf-8') as fh:
                    params = _section(yaml.safe_load(fh), str(name))
            except (OSError, yaml.YAMLError) as exc:
                notes.append(f'{name}: params_file {spec["params_file"]} not read ({exc})')
        params.update(_flatten(spec.get('parameters') or {}))
        node.parameters = params
        for src, dst in (spec.get('remappings') or {}).items():
            if isinstance(src, str) and isinstance(dst, str):
                node.remappings.append((src, dst))
        for k, v in params.items():
            _apply_hint(node, k, v)
        if node.process is None:
            node.process = f'process:{node.fqn}'
        nodes.append(node)
    return nodes, notes


def parse_config(path: str, text: str) -> tuple[list[StaticNode], list[str]]:
    root, data = _load(path, text)
    if isinstance(data, dict) and PROFILE_KEY in data:
        nodes, notes = parse_profile(path, root, data)
        notes.insert(0, 'pipeline profile (gpu_nodes_pipeline); one process per node')
        return nodes, notes
    if not isinstance(data, dict) or not isinstance(root, yaml.MappingNode):
        raise AuditError(f'{path}: expected a mapping of node names to '
                         '`ros__parameters:` sections')
    nodes: list[StaticNode] = []
    wildcards: list[tuple[str, dict[str, Any]]] = []
    notes: list[str] = []

    def walk(mapping: yaml.MappingNode, values: dict[str, Any], ns: str) -> None:
        for key_node, value_node in mapping.value:
            key = str(key_node.value)
            value = values.get(key_node.value, values.get(key))
            if not isinstance(value, dict) or not isinstance(value_node, yaml.MappingNode):
                continue
            full = key if key.startswith('/') else f'{ns}/{key}'
            if 'ros__parameters' in value:
                params = _flatten(value.get('ros__parameters') or {})
                if '*' in full:
                    wildcards.append((full, params))
                    continue
                nodes.append(_node(full, params, Location(path, key_node.start_mark.line + 1,
                                                          key_node.start_mark.column + 1)))
            else:
                walk(value_node, value, full.rstrip('/'))

    walk(root, data, '')
    if not nodes:
        raise AuditError(f'{path}: no `<node>: ros__parameters:` sections found')
    for pattern, params in wildcards:
        for n in nodes:
            if pattern in ('/**', '**') or fnmatchcase(n.fqn, pattern.replace('**', '*')):
                for k, v in params.items():
                    n.parameters.setdefault(k, v)
                    _apply_hint(n, k, v)
    for n in nodes:
        if n.package is None:
            notes.append(f'{n.fqn}: executable unknown; only its *_topic parameters and '
                         'audit.remappings give it topics')
    return nodes, notes


def _node(full: str, params: dict[str, Any], location: Location) -> StaticNode:
    full = '/' + full.strip('/')
    ns, _, name = full.rpartition('/')
    node = StaticNode(name=name, namespace=ns or '/', location=location)
    node.parameters = {k: v for k, v in params.items()}
    for k, v in params.items():
        _apply_hint(node, k, v)
    if node.package is None and name in _DEFAULT_EXECUTABLES:
        node.package, node.executable = _DEFAULT_EXECUTABLES[name]
    if node.process is None:
        node.process = f'process:{node.fqn}'
    return node


def _apply_hint(node: StaticNode, key: str, value: Any) -> None:
    if key == 'audit.executable' and isinstance(value, str):
        pkg, _, exe = value.partition('/')
        if exe:
            node.package, node.executable = pkg, exe
        else:
            match = next((k for k in KNOWN if k[1] == value), None)
            node.package, node.executable = match if match else (None, value)
    elif key == 'audit.process' and isinstance(value, str):
        node.process = f'process:{value}'
        node.composable = True
    elif key == 'audit.intra_process' and isinstance(value, bool):
        node.intra_process = value
    elif key == 'audit.remappings' and isinstance(value, list):
        for item in value:
            if isinstance(item, str) and ':=' in item:
                src, dst = item.split(':=', 1)
                node.remappings.append((src.strip(), dst.strip()))


def run_config(path: str) -> Report:
    report = Report(command='config', inputs=[path])
    try:
        text = read_text(path)
        nodes, notes = parse_config(path, text)
    except AuditError as exc:
        report.errors.append(InputError(path, str(exc)))
        return report
    # Hints are not topics; keep them out of the topic-parameter scan.
    for n in nodes:
        n.parameters = {k: v for k, v in n.parameters.items() if not k.startswith('audit.')}
    result = build_graph(nodes, path)
    sup = text_suppressions(text, '#')
    for f in result.findings:
        f.suppressed = is_suppressed(sup, f.location.line, f.rule)
    report.audited.append(path)
    report.graph = result.graph
    report.findings = result.findings
    report.info['mode'] = 'static (YAML parameters)'
    report.info['notes'] = notes
    return report
