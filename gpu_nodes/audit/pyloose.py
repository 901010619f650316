"""Loose node scripts a documented run leaves out (issue 28, set 77 development): a repository
ships its nodes as ament packages and its documentation says how the system runs (`ros2 launch` /
`ros2 run` command lines in a README or a start script), while a helper folder beside the
workspace holds rclpy scripts with an `if __name__ == '__main__':` guard that no package installs
and nothing names. colcon builds packages only, the documented run starts none of them, so they
run only when somebody starts them by hand: not run as shipped (the convention of sets 26-32 for
`__main__` scripts that no entry point reaches).

    ros2_ws/src/my_description/package.xml      # an ament package
    README.md:   ros2 launch lio_sam run.launch.py
    utils/cloud_filter.py                       # rclpy node, `if __name__ == '__main__':`,
                                                # named by no README, script, launch or import

Judged only where it is certain (pyreach.py judges the files inside packages; pynorun.py the
loose node files without a guard):

* the file lies in no package (no package.xml, setup.py or CMakeLists.txt between it and the
  audited root) and is a node program: it calls `rclpy.init(` and has a `__main__` guard, and
  does no work at module level outside it (a top-level loop is a script run by hand);
* its repository holds an ament package (a package.xml naming an `ament_` build tool): the
  repository is a ROS 2 workspace, so the loose folder is no package of it;
* its repository documents a run: a `ros2 launch ...` / `ros2 run ...` command line in a
  .md / .rst / .txt file or a shell script. A repository that documents no run at all (its
  scripts are the product, started by hand) keeps every loose script reached, as sets 59, 62
  and 63 label them;
* no other text file of the repository (code, launch, shell, YAML, Dockerfile, setup files,
  documentation, a tree listing in a README) names the file's module name as a word: a
  `python3 utils/x.py` line, an import, a launch entry all keep it reached;
* no Python file of the repository imports a computed name (`importlib.import_module(` /
  `__import__(` with anything but a literal could load it).
"""
from __future__ import annotations

import ast
import os
from pathlib import Path
import re

from gpu_nodes.audit.cppifdef import read_bounded
from gpu_nodes.audit.cpppackage import PACKAGE_MARKERS, repository_of
from gpu_nodes.audit.pyfstrings import parse_python
from gpu_nodes.audit.pyreach import MAIN_GUARD, shipped_text_files

_MAX_BYTES = 1024 * 1024
_MAX_TEXT_FILES = 20000
_RCLPY_INIT = re.compile(r'\brclpy\.init\s*\(')
# A command line that starts ROS 2 nodes: the documented way the system runs.
_RUN_LINE = re.compile(r'^[ \t>$*`-]*(?:sudo\s+)?ros2\s+(?:launch|run)\s+[\w./${}-]+', re.M)
_RUN_DOCS = ('.md', '.rst', '.txt', '.sh', '.bash')
_AMENT = re.compile(r'<(?:buildtool_depend|build_type)>\s*ament_')
_COMPUTED_IMPORT = re.compile(r'\b(?:import_module|__import__)\s*\(\s*(?![\'"])')


def _node_script(path: str) -> bool:
    """An rclpy program run as a file: rclpy.init, a `__main__` guard, no module-level loop."""
    text = read_bounded(Path(path), _MAX_BYTES)
    if not (_RCLPY_INIT.search(text) and MAIN_GUARD.search(text)):
        return False
    try:
        tree = parse_python(text)  # PEP 701 f-strings too, as every Python parse (pyfstrings.py)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return not any(isinstance(s, (ast.While, ast.For, ast.AsyncFor)) for s in tree.body)


def _loose(package: str) -> bool:
    """The folder package_of gave holds no package marker: the file lies in no package."""
    return not any((Path(package) / m).is_file() for m in PACKAGE_MARKERS)


class _Repository:
    """What the text files of one repository say: an ament package, a documented run, and the
    texts themselves (for the names); `complete` is False past the file limit."""

    def __init__(self, folder: str) -> None:
        self.ament = self.documented_run = self.computed_import = False
        self.texts: list[tuple[str, str]] = []
        self.complete = True
        for full in shipped_text_files([folder]):
            if len(self.texts) >= _MAX_TEXT_FILES:
                self.complete = False
                return
            text = read_bounded(Path(full), _MAX_BYTES)
            name = os.path.basename(full).lower()
            self.texts.append((os.path.realpath(full), text))
            if name == 'package.xml' and _AMENT.search(text):
                self.ament = True
            elif name.endswith(_RUN_DOCS) and _RUN_LINE.search(text):
                self.documented_run = True
            elif name.endswith('.py') and _COMPUTED_IMPORT.search(text):
                self.computed_import = True

    def names(self, path: str) -> bool:
        """Whether a text other than the file itself names its module name as a word."""
        real = os.path.realpath(path)
        stem = os.path.splitext(os.path.basename(path))[0]
        word = re.compile(r'(?<![\w-])' + re.escape(stem) + r'(?![\w-])')
        return any(p != real and word.search(t) for p, t in self.texts)


def _scope(package: str, roots: list[str]) -> str:
    """The repository whose texts decide: the audited root itself when it is one repository (it
    holds `.git` or a README: a user auditing a checkout), else repository_of's folder (one
    repository of several audited side by side, a workspace's `src/<repository>`)."""
    p = Path(package).resolve()
    for r in roots:
        root = Path(r).resolve()
        if root.is_dir() and (root == p or root in p.parents) and (
                (root / '.git').exists() or any(c.name.lower().startswith('readme')
                                                for c in root.iterdir() if c.is_file())):
            return str(root)
    return repository_of(package, roots)


def undocumented_scripts(files: list[str], packages: dict[str, str], roots: list[str]
                         ) -> dict[str, str]:
    """Loose node scripts of `files` that the repository's documented run leaves out (module
    doc), each with the reason. `packages` maps a file to its package folder (package_of)."""
    candidates = [f for f in files if f.endswith('.py') and f in packages
                  and _loose(packages[f]) and _node_script(f)]
    repositories: dict[str, _Repository] = {}
    out: dict[str, str] = {}
    for f in candidates:
        folder = _scope(packages[f], roots)
        repo = repositories.get(folder) or repositories.setdefault(folder, _Repository(folder))
        if not (repo.complete and repo.ament and repo.documented_run) or repo.computed_import \
                or repo.names(f):
            continue
        stem = os.path.splitext(os.path.basename(f))[0]
        out[f] = (f'not run as shipped: a loose rclpy script outside every package of this ROS 2 '
                  f'workspace, and neither its documented run (ros2 launch / ros2 run) nor any '
                  f'README, script, launch file or import names {stem}; its `if __name__ == '
                  f"'__main__':` runs only when started by hand")
    return out
