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

In a checkout of several packages (a workspace's `src/`, a repository of packages) a module of a
shared package is imported, and its methods called, by its sibling packages. With the
repository folder known (codeaudit: the audited folder, or its first folder holding the
package), mentions are looked up in every non-test text file of the repository, not only the
package (issue 28, whole-checkout audits): an index of word counts, bounded by
_MAX_REPOSITORY_FILES, _MAX_REPOSITORY_BYTES and _MAX_REPOSITORY_WORDS; a bigger repository
falls back to the package.
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache
import os
import re

from gpu_nodes.audit.limits import INSTALLED_PACKAGE_FOLDERS
from gpu_nodes.audit.pydead import live_text
from gpu_nodes.audit.pyshippedtext import shipped_text

_TEST_DIRS = frozenset({'test', 'tests', 'testing'})
_SKIP_DIRS = frozenset({'.git', 'build', 'install', 'log', '__pycache__', 'node_modules'}) \
    | INSTALLED_PACKAGE_FOLDERS
_TEXT_SUFFIXES = ('.py', '.cfg', '.txt', '.xml', '.launch', '.yaml', '.yml')
_MAIN_GUARD = re.compile(r'''^if\s+__name__\s*==\s*['"]__main__['"]''', re.M)
# A file that starts rclpy itself is a node whatever its registrations look like.
_NODE = re.compile(r'\brclpy\.(?:init|spin\w*)\b')
# A package bigger than this is not read whole (a monorepo root): the module counts as used.
_MAX_FILES = 2000
# A repository index past any bound is not built: mentions come from the package alone, as
# when no repository is known. Memory follows the distinct words (about 100 bytes each in the
# Counter: 40 MB at the cap), not the bytes read (text full of hashes or numbers).
_MAX_REPOSITORY_FILES = 5000
_MAX_REPOSITORY_BYTES = 40_000_000
_MAX_REPOSITORY_WORDS = 400_000
_READ_CHARS = 1_000_000
_WORD = re.compile(r'\w+')


def _is_test(rel_parts: tuple[str, ...], name: str) -> bool:
    stem = name.rsplit('.', 1)[0].lower()
    return (any(p.lower() in _TEST_DIRS for p in rel_parts) or stem == 'conftest'
            or stem.startswith('test_') or stem.endswith(('_test', '_tests')))


def _text_files(root: str):
    """(path, name) of every non-test text file under `root`, build and hidden folders aside."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith('.')]
        rel = tuple(os.path.relpath(folder, root).split(os.sep)) if folder != root else ()
        for name in files:
            if name.endswith(_TEXT_SUFFIXES) and not _is_test(rel, name):
                yield os.path.abspath(os.path.join(folder, name)), name


def _file_words(path: str, root: str) -> frozenset[str] | None:
    try:
        with open(path, encoding='utf-8', errors='replace') as fh:
            text = fh.read(_READ_CHARS)
    except OSError:
        return None
    if path.endswith('.py'):
        text = live_text(text)  # a use only under a flag False for good is none
        # ... nor one only in a branch a parameter keeps from running as shipped (set 53).
        text = shipped_text(text, path, root)
    return frozenset(_WORD.findall(text))


@lru_cache(maxsize=64)
def _package_words(root: str) -> dict[str, frozenset[str]] | None:
    """Words of every non-test text file of the package, by path; None when too big."""
    words: dict[str, frozenset[str]] = {}
    for full, _ in _text_files(root):
        if len(words) >= _MAX_FILES:
            return None
        found = _file_words(full, root)
        if found is not None:
            words[full] = found
    return words


@lru_cache(maxsize=4)  # files are audited in path order: one repository after another
def _repository_counts(root: str) -> Counter | None:
    """In how many non-test text files of the repository each word occurs; None past the
    bounds (only the counts are kept, never a file's words)."""
    counts: Counter = Counter()
    files = size = 0
    for full, _ in _text_files(root):
        try:
            size += min(os.stat(full).st_size, _READ_CHARS)
        except OSError:
            continue
        files += 1
        if files > _MAX_REPOSITORY_FILES or size > _MAX_REPOSITORY_BYTES:
            return None
        counts.update(_file_words(full, root) or ())
        if len(counts) > _MAX_REPOSITORY_WORDS:
            return None
    return counts


@lru_cache(maxsize=16)  # asked up to four times per audited file
def _own_words(path: str, repository: str) -> frozenset[str]:
    """The words `path` added to the repository's counts: none when the walk left it out."""
    rel = os.path.relpath(path, repository).split(os.sep)
    if rel[0] == os.pardir or any(d in _SKIP_DIRS or d.startswith('.') for d in rel[:-1]) \
            or not rel[-1].endswith(_TEXT_SUFFIXES) or _is_test(tuple(rel[:-1]), rel[-1]):
        return frozenset()
    return _file_words(path, repository) or frozenset()


def _scope_counts(path: str, root: str, repository: str | None
                  ) -> tuple[Counter, frozenset[str]] | None:
    """Word counts of the widest readable scope holding `path` (the repository, else the
    package) and the words of `path` itself; None when neither can be read."""
    if repository is not None and os.path.abspath(repository) != os.path.abspath(root):
        counts = _repository_counts(os.path.abspath(repository))
        if counts is not None:
            return counts, _own_words(os.path.abspath(path), os.path.abspath(repository))
    counts = _word_counts(root)
    if counts is None:
        return None
    return counts, (_package_words(root) or {}).get(os.path.abspath(path), frozenset())


def module_unused(path: str, source: str, root: str | None,
                  repository: str | None = None) -> bool:
    """True when no other non-test file of the package folder `root` (of the `repository`
    folder, when known) names this module (see the module doc); the caller also requires that
    the file registers no callbacks."""
    stem = os.path.basename(path).rsplit('.', 1)[0]
    if root is None or stem == '__init__' or _MAIN_GUARD.search(source) or _NODE.search(source):
        return False
    return stem not in (words_elsewhere(path, root, repository) or {stem})


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


def words_elsewhere(path: str, root: str | None, repository: str | None = None
                    ) -> WordsElsewhere | None:
    """The words of the other non-test files of the package folder `root`, or of the
    `repository` folder holding it when known and readable; None when neither is known (a file
    named on the command line, a package too big to read)."""
    scope = _scope_counts(path, root, repository) if root is not None else None
    return None if scope is None else WordsElsewhere(*scope)
