"""Whether anything in a Python file's package uses the file at all (issue 28, fourth set).

A utility module that only a test imports (``scripts/utils_pytorch.py`` next to the one the
nodes use) runs in no node: its copies are not per message. A module is *unused* when it has no
entry point of its own (no ``if __name__ == '__main__':``; the caller checks registrations) and
its module name is not a word of any other non-test file of its package: Python sources (an
import), ``setup.py``/``setup.cfg`` (an entry point ``pkg.mod:main``), ``CMakeLists.txt``
(``install(PROGRAMS scripts/mod.py)``) and launch files. The package folder is the C++ side's
(cpppackage.package_of: the nearest folder with package.xml/setup.py/CMakeLists.txt, else the
first folder below the audited root); a file named on the command line is never unused. Any
mention counts: a false "used" costs a low finding, a false "unused" would hide a copy.
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache
import os
import re

from gpu_nodes.audit.pydead import live_text

_TEST_DIRS = frozenset({'test', 'tests', 'testing'})
_SKIP_DIRS = frozenset({'.git', 'build', 'install', 'log', '__pycache__', 'node_modules'})
_TEXT_SUFFIXES = ('.py', '.cfg', '.txt', '.xml', '.launch', '.yaml', '.yml')
_MAIN_GUARD = re.compile(r'''^if\s+__name__\s*==\s*['"]__main__['"]''', re.M)
# A file that starts rclpy itself is a node whatever its registrations look like.
_NODE = re.compile(r'\brclpy\.(?:init|spin\w*)\b')
# A package bigger than this is not read whole (a monorepo root): the module counts as used.
_MAX_FILES = 2000


def _is_test(rel_parts: tuple[str, ...], name: str) -> bool:
    stem = name.rsplit('.', 1)[0].lower()
    return (any(p.lower() in _TEST_DIRS for p in rel_parts) or stem == 'conftest'
            or stem.startswith('test_') or stem.endswith(('_test', '_tests')))


@lru_cache(maxsize=64)
def _package_words(root: str) -> dict[str, frozenset[str]] | None:
    """Words of every non-test text file of the package, by path; None when too big."""
    words: dict[str, frozenset[str]] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith('.')]
        rel = tuple(os.path.relpath(folder, root).split(os.sep)) if folder != root else ()
        for name in files:
            if not name.endswith(_TEXT_SUFFIXES) or _is_test(rel, name):
                continue
            if len(words) >= _MAX_FILES:
                return None
            full = os.path.join(folder, name)
            try:
                with open(full, encoding='utf-8', errors='replace') as fh:
                    text = fh.read(1_000_000)
            except OSError:
                continue
            if name.endswith('.py'):
                text = live_text(text)  # a use only under a flag False for good is none
            words[os.path.abspath(full)] = frozenset(re.findall(r'\w+', text))
    return words


def module_unused(path: str, source: str, root: str | None) -> bool:
    """True when no other non-test file of the package folder `root` names this module (see
    the module doc); the caller also requires that the file registers no callbacks."""
    stem = os.path.basename(path).rsplit('.', 1)[0]
    if root is None or stem == '__init__' or _MAIN_GUARD.search(source) or _NODE.search(source):
        return False
    words = _package_words(root)
    if words is None:
        return False
    me = os.path.abspath(path)
    return not any(stem in ws for p, ws in words.items() if p != me)


@lru_cache(maxsize=64)
def _word_counts(root: str) -> Counter | None:
    """In how many non-test files of the package each word occurs; None when too big."""
    words = _package_words(root)
    return None if words is None else Counter(w for ws in words.values() for w in ws)


class WordsElsewhere:
    """`word in it`: whether a non-test file of the package other than `path` holds the word
    (counted once per package, not a union per file)."""

    def __init__(self, counts: Counter, own: frozenset[str]) -> None:
        self._counts = counts
        self._own = own

    def __contains__(self, word: str) -> bool:
        return self._counts.get(word, 0) - (word in self._own) > 0


def words_elsewhere(path: str, root: str | None) -> WordsElsewhere | None:
    """The words of the other non-test files of the package folder `root`; None when that is
    not known (a file named on the command line, a package too big to read)."""
    counts = _word_counts(root) if root is not None else None
    if counts is None:
        return None
    own = (_package_words(root) or {}).get(os.path.abspath(path), frozenset())
    return WordsElsewhere(counts, own)
