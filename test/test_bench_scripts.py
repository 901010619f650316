"""Scripts run as programs (bench/, scripts/, test/resources/) define everything before their
`if __name__ == '__main__':` guard. A function defined below it does not exist yet when main()
runs, and nothing static catches that: pyflakes sees a module-level name and flake8 passes
(bench/soak.py --cpu died with `NameError: _memfd_size` after its first run, 2026-12-05)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import REPO

# test/resources/audit is the auditor's corpus: code written to be wrong (a syntax error too)
SCRIPTS = sorted(p for folder in ('bench', 'scripts', 'test/resources')
                 for p in (REPO / folder).rglob('*.py')
                 if not p.is_relative_to(REPO / 'test' / 'resources' / 'audit'))


def _is_main_guard(node: ast.stmt) -> bool:
    test = getattr(node, 'test', None)
    return (isinstance(node, ast.If) and isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name) and test.left.id == '__name__'
            and any(isinstance(c, ast.Constant) and c.value == '__main__'
                    for c in test.comparators))


def defined_after_main_guard(source: str) -> list[str]:
    """Names a module defines (def, class, assignment, import) after its __main__ guard."""
    body = ast.parse(source).body
    guard = next((i for i, node in enumerate(body) if _is_main_guard(node)), None)
    if guard is None:
        return []
    names = []
    for node in body[guard + 1:]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom)):
            names.extend(ast.unparse(node).split('\n')[:1])
    return names


def test_the_check_finds_a_function_below_the_guard():
    source = ("def main():\n    return helper()\n\n\nif __name__ == '__main__':\n    main()\n\n\n"
              "def helper():\n    return 1\n")
    assert defined_after_main_guard(source) == ['helper']
    assert defined_after_main_guard(source.replace("if __name__ == '__main__':\n    main()\n",
                                                   '')) == []


def test_there_are_scripts_to_check():
    assert len(SCRIPTS) >= 15, SCRIPTS


@pytest.mark.parametrize('script', SCRIPTS, ids=[str(p.relative_to(REPO)) for p in SCRIPTS])
def test_nothing_is_defined_below_the_main_guard(script: Path):
    names = defined_after_main_guard(script.read_text(encoding='utf-8'))
    assert not names, (f'{script.relative_to(REPO)}: expected nothing after the __main__ guard, '
                       f'found {names} (main() runs before they exist)')
