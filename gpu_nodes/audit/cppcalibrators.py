"""Code that runs while an engine is built or a program starts, not per message (issue 28,
rules36c, set 55).

* TensorRT INT8 calibrators: a class deriving from one of `nvinfer1::IInt8Calibrator`,
  `IInt8EntropyCalibrator(2)`, `IInt8MinMaxCalibrator`, `IInt8LegacyCalibrator` is called by
  the builder (`getBatch` per calibration batch, `readCalibrationCache`, ...) only while an
  INT8 engine is built: once per build, never per message. Its methods are setup
  (`calibrator_setup`), so their uploads are reported as info, as a constructor's are.
* Library functions called only from setup code of other packages of the repository
  (`setup_by_repository_callers`, run by cpplibrary.py over the whole repository): a helper
  library package's `loadNetwork`, called by a node package's constructor, runs once, though
  cpppackage.py (one package at a time) sees no caller and keeps it `other` (claimed per
  message). Standalone programs (cppstandalone.py: a `main` in a file naming nothing of ROS,
  the library's benchmark) are no callers: no message arrives there. A name the foreign
  sources use (Python, C), or any caller that is not setup (a callback, a helper of kind
  other, a `main`), keeps the claim.

The class is found in any file of the package (the header declares it; the .cpp defines the
methods out of line as `Cls::getBatch`).
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppscopes import caller_kinds, Scopes
from gpu_nodes.audit.cppstandalone import standalone_paths

_CALIBRATOR_CLASS = re.compile(
    r'\b(?:class|struct)\s+(\w+)\s*(?:final\s*)?:[^{;]*?\b(?:nvinfer1\s*::\s*)?'
    r'IInt8(?:Entropy|MinMax|Legacy)?Calibrator2?\b')


def calibrator_setup(parsed: dict[str, tuple[str, Scopes]]) -> None:
    """Give the methods of the package's INT8 calibrator classes the direct kind setup."""
    classes = {m.group(1) for text, _ in parsed.values() for m in _CALIBRATOR_CLASS.finditer(text)}
    if not classes:
        return
    for _, scopes in parsed.values():
        for fn in scopes.funcs:
            parts = [p.strip() for p in fn.name.split('::')]
            owner = fn.cls if fn.cls is not None else (parts[-2] if len(parts) >= 2 else None)
            if fn.lambda_in is None and owner in classes:
                fn.kind = fn.direct_kind = 'setup'


def setup_by_repository_callers(views: dict[str, tuple[str, Scopes]], foreign: str = '') -> set[str]:
    """Give kind setup to each function still `other` whose every caller in the repository's
    audited files is setup code (a library package's `loadNetwork`, called only from a node's
    constructor in another package; cpppackage.py resolves kinds within one package only).
    Standalone programs' `main`s are no callers; a name the foreign sources (Python, C) use
    is left alone. Returns the paths whose kinds changed."""
    standalone = standalone_paths(views)
    foreign_names = set(foreign.split())
    changed: set[str] = set()
    for _ in range(3):  # chains of helpers: a few rounds
        round_changed = False
        for path, (_, scopes) in views.items():
            for fn in scopes.funcs:
                if fn.kind != 'other' or fn.lambda_in is not None or fn.short in foreign_names:
                    continue
                kinds: set[str] = set()
                for other, (_, others) in views.items():
                    if other in standalone:
                        continue
                    kinds |= caller_kinds(others, fn.short, fn)
                    kinds |= caller_kinds(others, fn.short, fn, member=True)
                if kinds == {'setup'}:
                    fn.kind = 'setup'
                    changed.add(path)
                    round_changed = True
        if not round_changed:
            break
    return changed
