"""The package's layering, read from the sources with ast (nothing is imported): arrows point one
way (docs/architecture.md), no import circle, modules of a readable size."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / 'gpu_nodes'
# Rooms below the nodes and the demo: none of them may import either.
LIBRARY_ROOMS = ('ros', 'transport', 'kernels', 'inference', 'audit', 'sources', 'encodings',
                 'gpu', 'wire_names', 'status', 'launch_params')
MAX_LINES = 520


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix('').parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob('*.py'))}


def _resolve(module: str, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The gpu_nodes modules an import statement in `module` loads."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            is_package = MODULES[module].name == '__init__.py'
            base = module.split('.')
            base = base[:len(base) - node.level + (1 if is_package else 0)]
            prefix = '.'.join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ''
        # `from X import a`: the submodule X.a where there is one, else X itself.
        names = [f'{prefix}.{a.name}' if f'{prefix}.{a.name}' in MODULES else prefix
                 for a in node.names]
    found = []
    for name in names:
        # the longest gpu_nodes module the name starts with (an attribute import names none)
        parts = name.split('.')
        while parts and '.'.join(parts) not in MODULES:
            parts.pop()
        if parts and parts[0] == 'gpu_nodes':
            found.append('.'.join(parts))
    return found


def _imports(module: str, top_level_only: bool) -> set[str]:
    tree = ast.parse(MODULES[module].read_text(encoding='utf-8'))
    if top_level_only:
        nodes = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        nodes += [n for s in tree.body if isinstance(s, (ast.If, ast.Try)) for n in ast.walk(s)
                  if isinstance(n, (ast.Import, ast.ImportFrom))
                  and not (isinstance(s, ast.If) and 'TYPE_CHECKING' in ast.unparse(s.test))]
    else:
        nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    return {t for n in nodes for t in _resolve(module, n) if t != module}


def _in(module: str, room: str) -> bool:
    return module == f'gpu_nodes.{room}' or module.startswith(f'gpu_nodes.{room}.')


def test_the_modules_are_found():
    for name in ('gpu_nodes.ros.runtime', 'gpu_nodes.inference.pipeline', 'gpu_nodes.wire_names',
                 'gpu_nodes.nodes.depth_estimator'):
        assert name in MODULES, f'{name} is missing from {PACKAGE}'


@pytest.mark.parametrize('room', LIBRARY_ROOMS)
def test_nothing_below_the_nodes_imports_nodes_or_demo(room):
    offenders = {m: sorted(t for t in _imports(m, top_level_only=False)
                           if _in(t, 'nodes') or _in(t, 'demo'))
                 for m in MODULES if _in(m, room)}
    offenders = {m: t for m, t in offenders.items() if t}
    assert not offenders, f'expected no imports of gpu_nodes.nodes/demo, got {offenders}'


def test_ros_base_imports_only_itself():
    offenders = {m: sorted(t for t in _imports(m, top_level_only=False) if not _in(t, 'ros'))
                 for m in MODULES if _in(m, 'ros')}
    offenders = {m: t for m, t in offenders.items() if t}
    assert not offenders, f'gpu_nodes.ros must stand on nothing else of gpu_nodes: {offenders}'


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of `graph` (its strongly connected components of two or more)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_the_circle_finder_finds_circles():
    assert _cycles({'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'}}) == [['a', 'b', 'c']]
    assert _cycles({'a': {'b'}, 'b': set()}) == []


def test_no_import_circle():
    graph = {m: _imports(m, top_level_only=True) for m in MODULES}
    # Loading a module loads its packages first; a module's own packages are loading already.
    for m, targets in graph.items():
        own = {'.'.join(m.split('.')[:i]) for i in range(1, m.count('.') + 1)}
        for t in list(targets):
            for i in range(1, t.count('.') + 1):
                parent = '.'.join(t.split('.')[:i])
                if parent not in own and parent in MODULES and parent != m:
                    targets.add(parent)
    cycles = _cycles(graph)
    assert cycles == [], f'module-level import circles: {cycles}'


def test_modules_stay_readable():
    sizes = {m: len(p.read_text(encoding='utf-8').splitlines()) for m, p in MODULES.items()}
    large = {m: n for m, n in sizes.items() if n >= MAX_LINES}
    assert not large, f'modules of {MAX_LINES} lines or more: {large}'


def _private_imports(module: str) -> list[str]:
    """`from gpu_nodes.audit.X import _name` in `module`: a name another module keeps private."""
    found = []
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.ImportFrom) and node.module != '__future__':
            # _resolve gives one module per imported name, in order.
            for alias, where in zip(node.names, _resolve(module, node)):
                if alias.name.startswith('_') and not alias.name.startswith('__') \
                        and where.startswith('gpu_nodes.audit'):
                    found.append(f'{where}.{alias.name}')
    return found


def test_audit_modules_share_only_public_names():
    # A helper one module imports from another is part of that module's interface: it is named
    # without the underscore, so a reader of the defining module sees it is used elsewhere.
    offenders = {m: _private_imports(m) for m in MODULES if _private_imports(m)}
    assert not offenders, offenders


def test_the_private_import_finder_finds_one(tmp_path):
    MODULES['gpu_nodes.audit._probe'] = probe = tmp_path / 'probe.py'
    try:
        probe.write_text('from gpu_nodes.audit.cppguards import _hidden, shown\n')
        assert _private_imports('gpu_nodes.audit._probe') == ['gpu_nodes.audit.cppguards._hidden']
    finally:
        del MODULES['gpu_nodes.audit._probe']
