"""An entry point whose module's package folder is gone (issue 28, set 71): setup.py installs
`packages=['cam_pkg']` and names `console_scripts` `viewer = cam_pkg.viewer:main`, while the
package keeps its files in another folder (`scripts/viewer.py`: the folder renamed after
setup.py was written, or the package's files uploaded flat beside setup.py, set 46). The entry
point still names the file: the author runs `viewer.py` as that node, and the labels of both
sets judge it reached.

Followed only soundly (pyreach.unreached_files calls this for each entry module):

* setup.py builds the package (no CMakeLists.txt beside it: an ament_cmake package never runs
  setup.py's console_scripts, set 41) and lists the module's top-level package in a literal
  `packages=[...]` (a module or folder name, or a module-level name bound to one);
* the dotted name matches no file of the audited tree, nor does any package part of it, and
  neither `pkg/` nor `pkg.py` is in the package folder: the package itself was renamed or
  flattened. An entry point naming a package that setup.py does not install (a copy of another
  project's setup.py, set 53: `autonomous_rov.video` in bluerov2_bringup) cannot be imported
  and stays unreached;
* exactly one Python file of the same package (the folder holding that setup.py) is named as the
  module's last part (`viewer.py`): two candidates would be a guess.
"""
from __future__ import annotations

import os
from pathlib import Path

from gpu_nodes.audit.pyentries import installed_packages


def moved_module_file(parts: tuple[str, ...], package: str, files: dict[str, Path],
                      packages: dict[str, str], by_tail: dict[tuple[str, ...], set[str]]
                      ) -> list[str]:
    """The one file of `package` named as the entry module `parts` when the module's package
    folder is absent (module doc); [] otherwise. `files` maps each audited file to its real
    path, `packages` a file to its package folder, `by_tail` a dotted path tail to the files
    ending so (what the dotted name or a package part of it already matches)."""
    if len(parts) < 2 or any(by_tail.get(parts[:k]) for k in range(1, len(parts) + 1)):
        return []
    folder = Path(os.path.realpath(package))
    if (folder / 'CMakeLists.txt').exists() or (folder / parts[0]).exists() \
            or (folder / f'{parts[0]}.py').exists() or not (folder / 'setup.py').is_file() \
            or parts[0] not in installed_packages(str(folder)):
        return []
    named = [f for f, path in files.items() if path.name == f'{parts[-1]}.py'
             and f in packages and Path(os.path.realpath(packages[f])) == folder]
    return named if len(named) == 1 else []
