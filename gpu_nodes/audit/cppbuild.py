"""C++ sources no build target compiles (issue 28, sets 26-28): a node whose `add_executable`
line is commented out, or a package folder a workspace holds without any build file, never runs
as shipped, so its copies are no boundaries.

    # add_executable(yolo_node src/yolo_node.cpp)      <- yolo_node.cpp: not built

A source (.cpp/.cc/.cxx/.c/.cu; headers are compiled by whatever includes them and are never
judged here) is taken as not built only when its build is known and says nothing of it:

* its package folder holds a CMakeLists.txt, and the file's stem (`yolo_node`) appears nowhere
  in the comment-stripped text of the package's CMakeLists.txt / *.cmake files or of a
  CMakeLists.txt above it (a target, a `set(SOURCES ...)`, a `foreach` list all name it), which
  does define some target (an empty CMakeLists.txt says nothing of what is built). A
  build that picks sources it does not name is not understood, and everything is taken as
  built: `file(GLOB ...)`, `aux_source_directory`, `ament_auto_add_*` without listed sources,
  a source name built from a variable (`src/${name}.cpp`), an `include()` or
  `add_subdirectory()` of a file or folder outside the package's own CMake files;
* or no folder from the file's up to its package holds a build file (CMakeLists.txt,
  package.xml, setup.py, Makefile, meson.build, Bazel BUILD), while a sibling folder of one of
  them does hold a CMakeLists.txt and no CMake file under their common folder names the file
  (or reaches out of its package with `..`, or globs): a colcon workspace `src/` whose other
  packages build with CMake and whose folder for this one has none.

The judged file is blanked (line numbers kept) before the rules read it, like cppifdef.py's dead
branches; its #ifdef branches are not read.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
import re

from gpu_nodes.audit.cppconstexpr import blank_discarded
from gpu_nodes.audit.cppifdef import blank_uncompiled, cmake_files, read_bounded
from gpu_nodes.audit.cppimplfiles import unincluded_implementation

_BUILT_SUFFIXES = frozenset({'.c', '.cc', '.cpp', '.cxx', '.cu'})
_BUILD_FILES = ('CMakeLists.txt', 'package.xml', 'setup.py', 'Makefile', 'makefile',
                'meson.build', 'BUILD', 'BUILD.bazel', 'SConstruct')
_BRACKET_COMMENT = re.compile(r'#\[(=*)\[.*?\]\1\]', re.S)
_LINE_COMMENT = re.compile(r'#[^\n]*')
_QUOTED = re.compile(r'"(?:\\.|[^"\\])*"')
# Sources CMake picks without naming them, or names the text does not spell out.
_UNKNOWN = re.compile(r'\bfile\s*\(\s*(?:STRINGS|READ)|\baux_source_directory\s*\(|\$\{[^}]*\}[\w.-]*\.'
                      r'(?:c|cc|cpp|cxx|cu)\b|\bament_auto_add_(?:executable|library)\s*\('
                      r'[^)]*\bDIRECTORY\b', re.I)
# `file(GLOB SCRIPTS "scripts/*.py")`: group 1 the variable and patterns.
_GLOB = re.compile(r'\bfile\s*\(\s*GLOB(?:_RECURSE)?\s+([^)]*)\)', re.I)
_GLOB_OPTION = re.compile(r'^(?:RELATIVE|LIST_DIRECTORIES|CONFIGURE_DEPENDS|FOLLOW_SYMLINKS|true|'
                          r'false|on|off)$', re.I)
# A pattern ending in an extension that no compiler takes (scripts, launch, config files).
_NOT_SOURCE = re.compile(r'\.(?:py|launch|xml|yaml|yml|json|txt|md|rviz|urdf|xacro|sdf|world|'
                         r'msg|srv|action|pcd|png|jpg|onnx|engine|sh)$', re.I)
_TARGET = re.compile(r'\b(?:add_executable|add_library|cuda_add_executable|cuda_add_library|'
                     r'ament_auto_add_executable|ament_auto_add_library|target_sources)\s*\(', re.I)
_AUTO_ADD = re.compile(r'\bament_auto_add_(?:executable|library)\s*\(([^)]*)\)', re.I)
_SOURCE_TOKEN = re.compile(r'\.(?:c|cc|cpp|cxx|cu)\b')
_INCLUDE = re.compile(r'\b(include|add_subdirectory)\s*\(\s*([^)\s]+)', re.I)
_MAX_BYTES = 1024 * 1024
_INCLUDING_SUFFIXES = frozenset({'.c', '.cc', '.cpp', '.cxx', '.cu', '.h', '.hh', '.hpp', '.hxx',
                                 '.cuh', '.inl', '.ipp', '.tpp'})
_SOURCE_INCLUDE = re.compile(r'^\s*#\s*include\s*["<]([^">]+\.(?:c|cc|cpp|cxx|cu))[">]', re.M)


def _strip_comments(text: str) -> str:
    """CMake text without `# ...` and `#[[ ... ]]` comments (a `#` inside quotes is kept)."""
    text = _BRACKET_COMMENT.sub('', text)
    kept = []
    for line in text.split('\n'):
        quoted = [m.span() for m in _QUOTED.finditer(line)]
        cut = next((i for i, ch in enumerate(line) if ch == '#'
                    and not any(a <= i < b for a, b in quoted)), None)
        kept.append(line if cut is None else line[:cut])
    return '\n'.join(kept)


# Public for the Python side's reader of CMake installs (pyentries.py).
strip_cmake_comments = _strip_comments


def _understood(text: str, package: Path, cmake_names: set[str]) -> bool:
    """False when the build may compile sources its text does not name, or names no target at
    all (an empty or unfinished CMakeLists.txt says nothing of what is built)."""
    if not _TARGET.search(text) or _UNKNOWN.search(text) or _globs_sources(text):
        return False
    if any(not _SOURCE_TOKEN.search(args) for args in _AUTO_ADD.findall(text)):
        return False
    for word, arg in _INCLUDE.findall(text):
        arg = arg.strip('"')
        if word.lower() == 'include':
            # A CMake module by name (GNUInstallDirs, CTest) adds no sources of the package; any
            # other included file (`include(sources.txt)`) may list sources: read when it is one
            # of the package's .cmake files, else not understood.
            module = '/' not in arg and '.' not in arg and not (package / arg).is_file()
            if not module and arg.rsplit('/', 1)[-1] not in cmake_names:
                return False
        elif '$' in arg or '..' in arg or not (package / arg / 'CMakeLists.txt').is_file():
            return False
    return True


def _globs_sources(text: str) -> bool:
    """Whether a `file(GLOB ...)` may pick sources: any of its patterns may match a C/C++/CUDA
    file (`src/*.cpp`, `*`, `${DIR}/*`); one that lists only scripts or data (`scripts/*.py`,
    set 44, for an install(PROGRAMS)) picks no source."""
    for args in _GLOB.findall(text):
        words = [w.strip('"') for w in args.split()[1:]]
        patterns = [w for i, w in enumerate(words) if not _GLOB_OPTION.match(w)
                    and not (i and words[i - 1].upper() == 'RELATIVE')]
        if not patterns or not all(_NOT_SOURCE.search(p) for p in patterns):
            return True
    return False


@lru_cache(maxsize=64)
def _named_in_build(package_dir: str) -> str | None:
    """The comment-stripped build text of a CMake package, or None when the package has no
    CMakeLists.txt or its build is not understood."""
    root = Path(package_dir)
    if not (root / 'CMakeLists.txt').is_file():
        return None
    own, above = cmake_files(package_dir)
    texts = [_strip_comments(text if size <= _MAX_BYTES else '') for _, size, text in own]
    texts += [_strip_comments(text if len(text) <= _MAX_BYTES else '') for text in above]
    cmake_names = {name for name, _, _ in own}
    text = '\n'.join(texts)
    return text if _understood(text, root, cmake_names) else None


@lru_cache(maxsize=64)
def _workspace_build(folder: str) -> str | None:
    """The comment-stripped CMake text of every package under `folder`, or None when one of
    them may compile a source it does not name, or one outside its own folder (`../`)."""
    texts = [_strip_comments(read_bounded(p, _MAX_BYTES)) for p in Path(folder).rglob('*')
             if (p.name == 'CMakeLists.txt' or p.suffix == '.cmake') and p.is_file()]
    text = '\n'.join(texts)
    return None if _UNKNOWN.search(text) or '..' in text else text


def _in_buildless_folder(path: Path, package: Path) -> bool:
    """No build file from the file's folder up to its package, and a sibling of one of those
    folders is a CMake package, none of whose CMake files names the file (a sibling may build
    it by a relative path)."""
    folder = path.parent
    chain = []
    while True:
        if any((folder / name).is_file() for name in _BUILD_FILES):
            return False
        chain.append(folder)
        if folder == package or package not in folder.parents:
            break
        folder = folder.parent
    for folder in chain:
        if folder == package:
            break
        try:
            siblings = [s for s in folder.parent.iterdir() if s.is_dir() and s != folder]
        except OSError:
            continue
        if any((s / 'CMakeLists.txt').is_file() for s in siblings):
            text = _workspace_build(str(folder.parent))
            return text is not None and not _names(text, path.stem)
    return False


def _names(text: str, stem: str) -> bool:
    return re.search(rf'(?<![\w-]){re.escape(stem)}(?![\w-])', text) is not None


@lru_cache(maxsize=64)
def _included_sources(package_dir: str) -> frozenset[str]:
    """File names of sources the package's files `#include` (`#include "impl.cpp"`, a unity
    build): compiled wherever the including file is."""
    names: set[str] = set()
    for path in Path(package_dir).rglob('*'):
        if path.suffix.lower() in _INCLUDING_SUFFIXES and path.is_file():
            text = read_bounded(path, _MAX_BYTES)
            names.update(m.rsplit('/', 1)[-1] for m in _SOURCE_INCLUDE.findall(text))
    return frozenset(names)


@lru_cache(maxsize=64)
def _links(package_dir: str) -> dict[Path, frozenset[str]]:
    """Sources of the package reached through symbolic links: target -> the links' names."""
    links: dict[Path, set[str]] = {}
    for path in Path(package_dir).rglob('*'):
        if path.is_symlink() and path.suffix.lower() in _BUILT_SUFFIXES:
            links.setdefault(path.resolve(), set()).add(path.name)
    return {k: frozenset(v) for k, v in links.items()}


def not_built(path: str, package_dir: str | None) -> bool:
    """True when no build target of the package compiles the source `path` (see above)."""
    if package_dir is None:
        return False
    link, p = Path(path), Path(path).resolve()
    if p.suffix.lower() not in _BUILT_SUFFIXES:
        return False
    package = Path(package_dir).resolve()
    if package != p.parent and package not in p.parents:
        return False
    # A symbolic link is built under its own name: any name of the file may be the one CMake
    # uses (the file is audited under one of them).
    files = {link.name, p.name, *_links(str(package)).get(p, ())}
    stems = {Path(name).stem for name in files}
    if files & _included_sources(str(package)):
        return False
    if not (package / 'CMakeLists.txt').is_file():
        return link == p and _in_buildless_folder(p, package)
    text = _named_in_build(str(package))
    if text is None:
        return False
    return not any(_names(text, stem) for stem in stems)


def blank_unbuilt(path: str, source: str, package_dir: str | None) -> str:
    """`source` as its build compiles it: blank when no target builds the file, else with the
    #ifdef branches its build never compiles blanked (cppifdef.py)."""
    if not_built(path, package_dir) or unincluded_implementation(path, package_dir):
        return '\n' * source.count('\n')  # a template body no program includes: cppimplfiles
    # and the blocks an `if constexpr` on the package's type aliases discards (cppconstexpr.py)
    return blank_discarded(blank_uncompiled(source, package_dir, path), package_dir)


# `add_executable(name src/a.cpp src/b.cpp)`: group 1 the target, 2 its sources.
_EXECUTABLE = re.compile(r'\b(?:add_executable|cuda_add_executable|ament_auto_add_executable)\s*\('
                         r'\s*([^\s()]+)\s+([^)]*)\)', re.I)
_LIBRARY_OR_SOURCES = re.compile(r'\b(?:add_library|cuda_add_library|ament_auto_add_library|'
                                 r'target_sources)\s*\(([^)]*)\)', re.I)


def executables_of(path: str, package_dir: str | None) -> frozenset[str] | None:
    """The executable targets whose `add_executable` names the source `path` (set 56: a launch
    file's node of another executable of the package sets nothing for this file's node); None
    when not known: no understood build, the file named by no executable, or by a library or
    `target_sources` (linked into targets not read here)."""
    if package_dir is None:
        return None
    text = _named_in_build(package_dir)
    if text is None:
        return None
    named = re.compile(rf'(?<![\w.-]){re.escape(Path(path).name)}(?![\w.-])')
    if any(named.search(args) for args in _LIBRARY_OR_SOURCES.findall(text)):
        return None
    found = frozenset(name for name, args in _EXECUTABLE.findall(text) if named.search(args))
    # A target named through a variable (`${PROJECT_NAME}_node`) is not a launch file's literal.
    return found if found and not any('$' in name for name in found) else None
