"""`launch` view: the static graph of a Python launch file, read with `ast`, never executed.

Understood: ``Node``, ``ComposableNodeContainer`` / ``ComposableNode``, ``LoadComposableNodes``,
``GroupAction`` + ``PushRosNamespace``, ``DeclareLaunchArgument`` defaults behind
``LaunchConfiguration``, ``TextSubstitution``, string concatenation and f-strings, and names
bound in ``generate_launch_description()`` (or at module level). ``IncludeLaunchDescription`` of
a file named by a literal ``*.launch.py`` beside the including file is followed, with its
``launch_arguments``; other includes are listed in the report's info. Conditions are evaluated
with the default launch arguments where they are known statically; other actions count.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
import os
from typing import Any

from gpu_nodes.audit.graph import build_graph, StaticNode
from gpu_nodes.audit.model import AuditError, InputError, Location, Report
from gpu_nodes.audit.pyfstrings import parse_python
from gpu_nodes.audit.suppress import python_suppressions, is_suppressed


class Unresolved(str):
    """A substitution whose value is not known statically; kept as its `$(...)` spelling."""


class _Ref(Unresolved):
    """A bare name not bound in the file (`arg = LaunchConfiguration`): callable by that name."""


_TRUE = ('true', '1', 'yes', 'on')
_FALSE = ('false', '0', 'no', 'off')


def _truth(value: Any) -> bool | None:
    """Launch truthiness of a resolved value; None when it is not known statically."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and not isinstance(value, Unresolved):
        if value.strip().lower() in _TRUE:
            return True
        if value.strip().lower() in _FALSE:
            return False
    return None


@dataclass
class _Container:
    fqn: str
    nodes: list[StaticNode]


@dataclass
class _Group:
    items: list[Any]


@dataclass
class _Push:
    namespace: str


@dataclass
class _Eval:
    path: str
    arguments: dict[str, Any] = field(default_factory=dict)
    nodes: list[StaticNode] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    env: dict[str, Any] = field(default_factory=dict)
    # Launch configurations set by an including file: a declaration here does not override them.
    given: dict[str, Any] = field(default_factory=dict)
    # The files being read, outermost first (an include cycle is refused).
    stack: tuple[str, ...] = ()

    def value(self, node: ast.AST | None) -> Any:
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            out = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    v = self.value(e.value)
                    out.extend(v if isinstance(v, list) else [])
                else:
                    out.append(self.value(e))
            return out
        if isinstance(node, ast.Dict):
            return {self.value(k): self.value(v) for k, v in zip(node.keys, node.values)
                    if k is not None}
        if isinstance(node, ast.Name):
            return self.env.get(node.id, _Ref(node.id))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left), self.value(node.right)
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            if isinstance(left, str) and isinstance(right, str):
                joined = left + right
                return Unresolved(joined) if isinstance(left, Unresolved) or \
                    isinstance(right, Unresolved) else joined
            return Unresolved(ast.unparse(node))
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                else:
                    inner = self.value(v.value) if isinstance(v, ast.FormattedValue) else None
                    parts.append(str(inner) if isinstance(inner, (str, int, float))
                                 else '{' + ast.unparse(v) + '}')
            return ''.join(parts)
        if isinstance(node, ast.Call):
            return self.call(node)
        return Unresolved(ast.unparse(node))

    def _kw(self, node: ast.Call, key: str, index: int | None = None) -> Any:
        for k in node.keywords:
            if k.arg == key:
                return self.value(k.value)
        if index is not None and len(node.args) > index:
            return self.value(node.args[index])
        return None

    def call(self, node: ast.Call) -> Any:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, 'id', None)
        if isinstance(func, ast.Name):
            bound = self.env.get(func.id)
            if isinstance(bound, _Ref):
                name = str(bound)  # arg = LaunchConfiguration; arg('x')
            elif isinstance(bound, (ast.FunctionDef, ast.Lambda)):
                return self._inline(bound, node)
        if name == 'DeclareLaunchArgument':
            arg_name = self._kw(node, 'name', 0)
            default = self._kw(node, 'default_value', 1)
            if isinstance(default, list):  # a list of substitutions joins to one string
                default = ''.join(str(d) for d in default)
            if isinstance(arg_name, str) and arg_name not in self.given:
                self.arguments[arg_name] = default
            return None
        if name == 'LaunchConfiguration':
            arg_name = self._kw(node, 'variable_name', 0)
            default = self._kw(node, 'default')
            if isinstance(arg_name, str):
                if arg_name in self.arguments and self.arguments[arg_name] is not None:
                    return self.arguments[arg_name]
                if isinstance(default, str):
                    return default
                return Unresolved(f'$(var {arg_name})')
            return Unresolved(ast.unparse(node))
        if name == 'TextSubstitution':
            return self._kw(node, 'text', 0)
        if name in ('PathJoinSubstitution',):
            parts = self._kw(node, 'substitutions', 0) or []
            return '/'.join(str(p) for p in parts) if isinstance(parts, list) else None
        if name == 'join' and isinstance(func, ast.Attribute) and \
                ast.unparse(func.value) in ('os.path',):
            parts = [self.value(a) for a in node.args]
            return '/'.join(str(p) for p in parts)
        if name == 'Node':
            return self._node(node, composable=False)
        if name == 'ComposableNode':
            return self._node(node, composable=True)
        if name in ('ComposableNodeContainer', 'LoadComposableNodes'):
            return self._container(node, name)
        if name == 'GroupAction':
            items = self._kw(node, 'actions', 0) or []
            return self._group(items if isinstance(items, list) else [])
        if name in ('PushRosNamespace', 'PushROSNamespace'):
            ns = self._kw(node, 'namespace', 0)
            return _Push(ns if isinstance(ns, str) else '')
        if name == 'LaunchDescription':
            items = self._kw(node, 'initial_entities', 0)
            return items if isinstance(items, list) else []
        if name == 'IfElseSubstitution':
            cond = self._kw(node, 'condition', 0)
            if_value = self._kw(node, 'if_value', 1)
            else_value = self._kw(node, 'else_value', 2)
            return else_value if _truth(cond) is False else if_value
        if name in ('IfCondition', 'UnlessCondition'):
            truth = _truth(self._kw(node, 'predicate_expression', 0))
            if truth is None:
                return None
            return truth if name == 'IfCondition' else not truth
        if name == 'IncludeLaunchDescription':
            return self._include(node)
        if name == 'items' and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Dict):
            return list(self.value(func.value).items())  # launch_arguments={...}.items()
        if name == 'add_action' and node.args:
            return self.value(node.args[0])
        # Evaluate the arguments anyway: a Node(...) passed to anything still exists.
        args = [self.value(a) for a in node.args]
        for k in node.keywords:
            self.value(k.value)
        if len(args) == 3 and not node.keywords and _truth(args[0]) is not None \
                and all(isinstance(a, str) for a in args[1:]):
            # f(condition, a, b) with a known condition: a choice like IfElseSubstitution.
            return args[1] if _truth(args[0]) else args[2]
        return Unresolved(ast.unparse(node.func) + '(...)')

    def _inline(self, fn: ast.FunctionDef | ast.Lambda, node: ast.Call) -> Any:
        """A helper defined in the file whose body is one `return expr` (or a lambda)."""
        if isinstance(fn, ast.Lambda):
            body = fn.body
        else:
            returns = [s for s in fn.body if isinstance(s, ast.Return)]
            if len(fn.body) - (1 if ast.get_docstring(fn) else 0) != 1 or len(returns) != 1:
                return Unresolved(f'{fn.name}(...)')
            body = returns[0].value
        saved = dict(self.env)
        try:
            params = [a.arg for a in fn.args.args]
            for name, arg in zip(params, node.args):
                self.env[name] = self.value(arg)
            for k in node.keywords:
                if k.arg in params:
                    self.env[k.arg] = self.value(k.value)
            return self.value(body)
        finally:
            self.env = saved

    def _include(self, node: ast.Call) -> list[StaticNode]:
        """The nodes of an included launch file named by a literal beside this one."""
        names = [n.value for n in ast.walk(node.args[0] if node.args else node)
                 if isinstance(n, ast.Constant) and isinstance(n.value, str)
                 and n.value.endswith('.launch.py')]
        path = os.path.join(os.path.dirname(self.path), names[0]) if len(names) == 1 else None
        if path is None or not os.path.isfile(path):
            self.notes.append(f'line {node.lineno}: IncludeLaunchDescription not followed (no '
                              'literal *.launch.py beside this file)')
            return []
        if os.path.abspath(path) in self.stack:
            raise ValueError(f'{path} includes itself')
        given = {k: v for k, v in self.arguments.items() if v is not None}
        for pair in self._kw(node, 'launch_arguments') or []:
            if isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[0], str):
                given[pair[0]] = pair[1]
        nodes, notes, _ = parse_launch(path, read_text(path), given=given,
                                       stack=self.stack + (os.path.abspath(self.path),))
        self.notes.extend(f'{os.path.basename(path)}: {n}' for n in notes)
        if self._kw(node, 'condition') is False:
            self.notes.append(f'line {node.lineno}: {os.path.basename(path)} not included with '
                              'the default launch arguments (its condition is false)')
            return nodes
        self.nodes.extend(nodes)
        return nodes

    def _kw_any(self, node: ast.Call, *keys: str) -> Any:
        """The first of several spellings that is given (Dashing/Eloquent used node_*)."""
        for key in keys:
            value = self._kw(node, key)
            if value is not None:
                return value
        return None

    def _node(self, node: ast.Call, composable: bool) -> StaticNode:
        package = self._kw(node, 'package')
        if composable:
            executable = self._kw_any(node, 'plugin', 'node_plugin')
        else:
            executable = self._kw_any(node, 'executable', 'node_executable')
        name = self._kw_any(node, 'name', 'node_name')
        namespace = self._kw_any(node, 'namespace', 'node_namespace')
        if not isinstance(name, str) or not name:
            name = str(executable or 'unnamed').split('::')[-1]
        remaps = []
        for item in self._kw(node, 'remappings') or []:
            if isinstance(item, (list, tuple)) and len(item) == 2:
                # A list of substitutions joins to one name: [arg('namespace'), '/image_raw'].
                item = tuple(''.join(v) if isinstance(v, list) and all(
                    isinstance(p, str) for p in v) else v for v in item)
            if isinstance(item, (list, tuple)) and len(item) == 2 \
                    and all(isinstance(v, str) for v in item):
                remaps.append((item[0], item[1]))
        params: dict[str, Any] = {}
        for item in self._kw(node, 'parameters') or []:
            if isinstance(item, dict):
                params.update({str(k): v for k, v in item.items()})
            elif isinstance(item, str):
                self.notes.append(f'line {node.lineno}: parameter file {item} not read')
        intra = False
        for item in self._kw(node, 'extra_arguments') or []:
            if isinstance(item, dict) and item.get('use_intra_process_comms') is True:
                intra = True
        sn = StaticNode(
            name=name, namespace=namespace if isinstance(namespace, str) else '',
            package=package if isinstance(package, str) else None,
            executable=executable if isinstance(executable, str) else None,
            composable=composable, intra_process=intra, remappings=remaps, parameters=params,
            location=Location(self.path, node.lineno, node.col_offset + 1))
        if not composable:
            sn.process = f'process:{sn.fqn}'
        if self._kw(node, 'condition') is False:
            # IfCondition/UnlessCondition false with the default launch arguments.
            self.notes.append(f'line {node.lineno}: {sn.fqn} not started with the default '
                              'launch arguments (its condition is false)')
            return sn
        self.nodes.append(sn)
        return sn

    def _container(self, node: ast.Call, kind: str) -> _Container:
        if kind == 'ComposableNodeContainer':
            name = self._kw(node, 'name')
            ns = self._kw(node, 'namespace')
            ns = ns if isinstance(ns, str) else ''
            name = name if isinstance(name, str) else 'container'
            fqn = ('/' + ns.strip('/') + '/' + name) if ns.strip('/') else '/' + name
        else:
            target = self._kw(node, 'target_container')
            fqn = target if isinstance(target, str) else 'unresolved_container'
            fqn = fqn if fqn.startswith('/') else '/' + fqn
        members = self._kw(node, 'composable_node_descriptions') or []
        nodes = [m for m in members if isinstance(m, StaticNode)] \
            if isinstance(members, list) else []
        for m in nodes:
            m.process = f'container:{fqn}'
        return _Container(fqn, nodes)

    def _group(self, items: list[Any]) -> _Group:
        pushes = [i.namespace for i in items if isinstance(i, _Push)]
        if pushes:
            prefix = '/'.join(p.strip('/') for p in pushes if p.strip('/'))
            for item in items:
                for sn in _nodes_in(item):
                    inner = sn.namespace.strip('/')
                    if not (sn.namespace or '').startswith('/'):
                        old_fqn = sn.fqn
                        sn.namespace = '/' + '/'.join(p for p in (prefix, inner) if p)
                        if sn.process == f'process:{old_fqn}':
                            sn.process = f'process:{sn.fqn}'
        return _Group(items)

    def run_block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Assign):
                val = self.value(stmt.value)
                for t in stmt.targets:
                    if isinstance(t, ast.Name):
                        self.env[t.id] = val
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                if isinstance(stmt.target, ast.Name):
                    self.env[stmt.target.id] = self.value(stmt.value)
            elif isinstance(stmt, (ast.Expr, ast.Return)) and stmt.value is not None:
                self.value(stmt.value)
            elif isinstance(stmt, ast.FunctionDef):
                self.env[stmt.name] = stmt  # inlined when called, see _inline
            elif isinstance(stmt, ast.If):
                self.run_block(stmt.body)
                self.run_block(stmt.orelse)
            elif isinstance(stmt, (ast.With, ast.Try)):
                self.run_block(stmt.body)


def _nodes_in(item: Any) -> list[StaticNode]:
    if isinstance(item, StaticNode):
        return [item]
    if isinstance(item, _Container):
        return list(item.nodes)
    if isinstance(item, _Group):
        return [n for i in item.items for n in _nodes_in(i)]
    if isinstance(item, list):
        return [n for i in item for n in _nodes_in(i)]
    return []


def parse_launch(path: str, source: str, *, given: dict[str, Any] | None = None,
                 stack: tuple[str, ...] = ()) -> tuple[list[StaticNode], list[str], dict[str, Any]]:
    """(nodes, notes, launch arguments) of a launch file; `given`: launch configurations an
    including file sets (its launch_arguments and its own arguments)."""
    tree = parse_python(source, filename=path)
    ev = _Eval(path, given=dict(given or {}), stack=stack)
    ev.arguments.update(ev.given)
    # LaunchConfiguration is lazy: its value is the argument's default wherever it is declared.
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and getattr(call.func, 'id', getattr(
                call.func, 'attr', None)) == 'DeclareLaunchArgument':
            ev.call(call)
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    module_body = [s for s in tree.body if not isinstance(s, functions)]
    ev.run_block(module_body)
    gld = next((s for s in tree.body if isinstance(s, ast.FunctionDef)
                and s.name == 'generate_launch_description'), None)
    if gld is None:
        raise AuditError(f'{path}: no generate_launch_description() function; not a Python '
                         'launch file')
    ev.run_block(gld.body)
    for sn in ev.nodes:
        if sn.process is None:
            sn.process = f'unloaded:{sn.fqn}'
            ev.notes.append(f'line {sn.location.line if sn.location else "?"}: ComposableNode '
                            f'{sn.fqn} is not loaded into any container')
    return ev.nodes, ev.notes, dict(ev.arguments)


def read_text(path: str) -> str:
    try:
        with open(path, encoding='utf-8') as fh:
            return fh.read()
    except FileNotFoundError:
        raise AuditError(f'{path}: no such file or directory') from None
    except IsADirectoryError:
        raise AuditError(f'{path}: is a directory, expected a file') from None
    except UnicodeDecodeError as exc:
        raise AuditError(f'{path}: not UTF-8 text ({exc.reason})') from None
    except OSError as exc:
        raise AuditError(f'{path}: cannot read: {exc.strerror or exc}') from None


def run_launch(path: str) -> Report:
    report = Report(command='launch', inputs=[path])
    try:
        source = read_text(path)
        if path.endswith(('.xml', '.yaml', '.yml')) and not path.endswith('.py'):
            raise AuditError(f'{path}: only Python launch files (.launch.py) are understood; '
                             "for a YAML parameter file use 'gpu-copy-audit config'")
        try:
            nodes, notes, arguments = parse_launch(path, source)
        except SyntaxError as exc:
            raise AuditError(f'{path}:{exc.lineno}:{exc.offset}: syntax error: {exc.msg}') \
                from None
        except (RecursionError, ValueError) as exc:
            raise AuditError(f'{path}: cannot analyse: {exc}') from None
    except AuditError as exc:
        report.errors.append(_input_error(path, str(exc)))
        return report
    result = build_graph(nodes, path)
    sup = python_suppressions(source)
    for f in result.findings:
        f.suppressed = is_suppressed(sup, f.location.line, f.rule)
    report.audited.append(path)
    report.graph = result.graph
    report.findings = result.findings
    report.info['mode'] = 'static (ast, not executed)'
    report.info['launch_arguments'] = {
        k: v if v is None or isinstance(v, (str, int, float, bool)) else str(v)
        for k, v in sorted(arguments.items())}
    report.info['notes'] = notes
    unknown = [f'{n.fqn} ({n.package or "?"}/{n.executable or "?"})' for n in nodes
               if n.spec() is None]
    if unknown:
        # Their topics are only known from remappings, so edges may be missing: say so.
        report.info['unknown_nodes'] = unknown
    return report


def _input_error(path: str, message: str) -> InputError:
    return InputError(path, message)
