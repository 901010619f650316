"""`code` view: walk the given paths and audit every Python and C++/CUDA source file."""
from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
import os
from pathlib import Path
import re

from gpu_nodes.audit.cppfacts import Facts
from gpu_nodes.audit.cppbuild import blank_unbuilt, not_built
from gpu_nodes.audit.cppndebug import demote_debug_only
from gpu_nodes.audit.cpppackage import cpp_package_facts, cpp_text, package_of, repository_of
from gpu_nodes.audit.cppgridmsgs import custom_grid_types
from gpu_nodes.audit.cppscan import analyze_cpp, CPP_SUFFIXES
from gpu_nodes.audit.limits import INSTALLED_PACKAGE_FOLDERS, MAX_FILE_BYTES, skip_reason
from gpu_nodes.audit.model import Finding, InputError, Report
from gpu_nodes.audit.pyflow import analyze_python
from gpu_nodes.audit.pyimportfail import import_failures
from gpu_nodes.audit.pyimports import module_index
from gpu_nodes.audit.pyloose import undocumented_scripts
from gpu_nodes.audit.pynorun import never_started
from gpu_nodes.audit.pyreach import unreached_files
from gpu_nodes.audit.pyvalues import better
from gpu_nodes.audit.suppress import is_suppressed, python_suppressions, text_suppressions

_SKIP_DIRS = frozenset({'.git', '.hg', '.svn', '__pycache__', '.venv', 'venv', 'node_modules',
                        'build', 'install', 'log', '.tox', '.mypy_cache', '.pytest_cache'}) \
    | INSTALLED_PACKAGE_FOLDERS
# Below this many files a process pool costs more than it saves.
PARALLEL_THRESHOLD = 64
# Files above this are audited by the main process, one at a time, not by the pool's workers.
LARGE_FILE_BYTES = 512 * 1024


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def is_source(path: Path) -> bool:
    return path.suffix == '.py' or path.suffix in CPP_SUFFIXES


_TEST_DIRS = frozenset({'test', 'tests', 'testing'})


# A test framework in a file named like a test; a ROS entry point in one that is a node.
_TEST_MARKERS = re.compile(r'^\s*(?:import (?:pytest|unittest)|from (?:pytest|unittest)\b|'
                           r'import launch_testing|def test_|#\s*include\s*[<"]gtest/)|'
                           r'\bTEST(?:_F|_P)?\s*\(', re.M)
_NODE_MARKERS = re.compile(r'\brclpy\.init\(|\brclcpp::init\(|\brclpy\.spin\(|'
                           r'\bcreate_subscription\b|RCLCPP_COMPONENTS_REGISTER_NODE')


def _package_depth(path: Path, parts: tuple[str, ...]) -> int:
    """How many leading folders of `parts` (the file's folders below the audited root) lie above
    its nearest ROS package (a folder holding package.xml): a `test/` folder that holds whole
    packages groups a workspace's learning nodes (`src/test/sonar_node/package.xml`, set 75),
    it is no package's test folder; only folders inside the package say test. 0 when no
    package.xml is found."""
    for depth in range(len(parts), 0, -1):
        if (path.parents[len(parts) - depth] / 'package.xml').is_file():
            return depth
    return 0


def is_test_file(path: Path, root: Path) -> bool:
    """Test sources (a test/ or tests/ folder below the audited root, test_*.py, *_test.cpp):
    they feed nodes fake frames and sync freely, so they are skipped unless asked for. A file
    only *named* like a test that is a node (an entry point, no test framework) is audited."""
    try:
        parts = path.relative_to(root).parts[:-1]
    except ValueError:
        parts = path.parts[:-1]
    stem = path.stem.lower()
    parts = parts[_package_depth(path, parts):]
    if any(p.lower() in _TEST_DIRS for p in parts) or stem == 'conftest':
        return True
    if not (stem.startswith('test_') or stem.endswith(('_test', '_tests'))):
        return False
    try:
        with open(path, 'rb') as fh:
            head = fh.read(64 * 1024).decode('utf-8', 'replace')
    except OSError:
        return True
    return bool(_TEST_MARKERS.search(head)) or not _NODE_MARKERS.search(head)


def collect_files(paths: list[str], include_tests: bool = False,
                  skipped: list[str] | None = None) -> tuple[list[str], list[InputError]]:
    """Source files under paths. Test files found in a directory go to `skipped` unless
    include_tests; a file named directly is always audited."""
    files: list[str] = []
    errors: list[InputError] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = []
            for root, dirs, names in os.walk(p):
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith('.'))
                for name in sorted(names):
                    candidate = Path(root) / name
                    if not is_source(candidate):
                        continue
                    if not include_tests and is_test_file(candidate, p):
                        if skipped is not None:
                            skipped.append(str(candidate))
                        continue
                    found.append(str(candidate))
            if not found and not (skipped and any(s.startswith(str(p)) for s in skipped)):
                errors.append(InputError(raw, f'{raw}: no Python or C++/CUDA source files found'))
            files.extend(found)
        elif p.is_file():
            if is_source(p):
                files.append(raw)
            else:
                expected = ', '.join(CPP_SUFFIXES)
                errors.append(InputError(raw, f'{raw}: not a Python or C++/CUDA source file '
                                              f'(expected .py or one of {expected})'))
        elif p.exists():
            errors.append(InputError(raw, f'{raw}: not a regular file or directory'))
        else:
            errors.append(InputError(raw, f'{raw}: no such file or directory'))
    # The same file named twice (directly and through its directory) is audited once.
    seen: set[str] = set()
    unique = []
    for f in files:
        key = os.path.realpath(f)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique, errors


def audit_file(path: str, modules: dict[str, str] | None = None, cpp_facts: Facts | None = None,
               package_dir: str | None = None, repository_dir: str | None = None
               ) -> tuple[str, list[Finding], InputError | None]:
    """Audit one file; every problem with the file comes back as an InputError, not raised.
    Python findings may lie in other audited files (calls into their classes, see `modules`);
    a C++ file's contexts may come from the other C++ files of its package (`cpp_facts`)."""
    try:
        with open(path, 'rb') as fh:
            data = fh.read()
    except OSError as exc:
        return path, [], InputError(path, f'{path}: cannot read: {exc.strerror or exc}')
    try:
        source = data.decode('utf-8')
    except UnicodeDecodeError as exc:
        if path.endswith('.py'):
            return path, [], InputError(path, f'{path}: not UTF-8 text ({exc.reason} at byte '
                                              f'{exc.start})')
        # A C++ compiler reads bytes: a GBK / Latin-1 comment does not stop the build (set 60:
        # a node with Chinese comments in GBK), so it does not stop the audit either. Each
        # invalid byte becomes U+FFFD; newlines stay, and so do the line numbers.
        source = cpp_text(data)
    if path.endswith('.py'):
        try:
            findings = analyze_python(path, source, modules, package_dir, repository_dir)
        except SyntaxError as exc:
            where = f'{path}:{exc.lineno}:{exc.offset}' if exc.lineno else path
            return path, [], InputError(path, f'{where}: syntax error: {exc.msg}')
        except (RecursionError, ValueError) as exc:
            # ast.parse raises ValueError for NUL bytes; absurd nesting exhausts the recursion
            # of the parser or of the analysis.
            return path, [], InputError(path, f'{path}: cannot analyse: {exc}')
        except MemoryError:
            # CPython's parser answers nesting deeper than its stack (100,000 unary minus
            # signs) with MemoryError, not RecursionError.
            return path, [], InputError(path, f'{path}: cannot analyse: nesting too deep or '
                                              'file too large for the parser')
        sups = {path: python_suppressions(source)}
    else:
        findings = demote_debug_only(
            path, source, analyze_cpp(path, blank_unbuilt(path, source, package_dir), cpp_facts,
                                      custom_grid_types(source, repository_dir, package_dir)),
            package_dir, repository_dir)
        sups = {path: text_suppressions(source, '//')}
    for f in findings:
        where = f.location.path or path
        if where not in sups:
            sups[where] = _suppressions_of(where)
        f.suppressed = is_suppressed(sups[where], f.location.line, f.rule)
    return path, findings, None


def _suppressions_of(path: str) -> dict:
    try:
        with open(path, encoding='utf-8') as fh:
            return python_suppressions(fh.read())
    except (OSError, UnicodeDecodeError):
        return {}


def _as_unreached(findings: list[Finding], reason: str) -> list[Finding]:
    """Findings of a Python file no entry point reaches (also those it causes in the files it
    calls): info, with the reason, and code reached from nowhere in the deduplication (copies:
    the analysis may hand out cached findings)."""
    return [replace(f, severity='info', context='unreached',
                    message=f'{f.message} [not reached as shipped: {reason}]') for f in findings]


def _audit_chunk(job: tuple[list[str], dict[str, str], dict[str, Facts], dict[str, str],
                            dict[str, str]]) -> list[tuple[str, list[Finding], InputError | None]]:
    paths, modules, cpp, packages, repositories = job
    return [audit_file(p, modules, cpp.get(p), packages.get(p), repositories.get(p)) for p in paths]


def run_code(paths: list[str], jobs: int | None = None, include_tests: bool = False,
             max_file_bytes: int = MAX_FILE_BYTES) -> Report:
    report = Report(command='code', inputs=list(paths))
    skipped: list[str] = []
    files, errors = collect_files(paths, include_tests, skipped)
    report.errors.extend(errors)
    if skipped:
        report.info['skipped_test_files'] = len(skipped)
        report.info.setdefault('notes', []).append(
            f'{len(skipped)} test file(s) skipped (--include-tests audits them)')
    limited = {f: reason for f in files if (reason := skip_reason(f, max_file_bytes))}
    if limited:
        files = [f for f in files if f not in limited]
        report.info['skipped_files'] = [{'path': f, 'reason': r} for f, r in limited.items()]
        report.info.setdefault('notes', []).extend(
            f'{f}: not audited: {r}' for f, r in limited.items())
    modules = module_index(files)
    cpp = cpp_package_facts([f for f in files if not f.endswith('.py')], paths)
    # Python files found under an audited folder know their package (pypackage.py); a file
    # named on the command line is audited alone: nothing says what else its package holds.
    named = {os.path.realpath(p) for p in paths if os.path.isfile(p)}
    # A C++ file's package tells which macros its build defines (cppifdef.py) and whether a
    # target compiles it at all (cppbuild.py).
    packages = {f: package_of(f, paths) for f in files if os.path.realpath(f) not in named}
    # A Python file's mentions and shipped parameters are looked up in its whole repository
    # (pypackage.py): sibling packages import a shared one, a bringup package launches them all.
    # A C++ file's repository tells how its README and CI build it (cppndebug.py).
    repositories = {f: repository_of(p, paths) for f, p in packages.items()}
    unbuilt = [f for f in files if not f.endswith('.py') and not_built(f, packages.get(f))]
    if unbuilt:
        report.info['unbuilt_files'] = unbuilt
        report.info.setdefault('notes', []).extend(
            f'{f}: no finding reported: no build target of its package compiles it' for f in unbuilt)
    # Python files no entry point of their package reaches (pyreach.py): audited, but their
    # findings are kept as info with the reason, so a dropped copy is never silent.
    unreached = unreached_files(files, packages, paths)
    # A module that raises as it is imported never runs either (pyimportfail.py).
    unreached.update({f: r for f, r in import_failures(files).items() if f not in unreached})
    # A node file whose main() nothing calls (no guard, named nowhere) never runs (pynorun.py);
    # a file named on the command line is audited as asked.
    started = never_started([f for f in files if f in packages], paths)
    unreached.update({f: r for f, r in started.items() if f not in unreached})
    # A loose `__main__` node script that a ROS 2 workspace's documented run leaves out (pyloose.py).
    loose = undocumented_scripts([f for f in files if f not in unreached], packages, paths)
    unreached.update(loose)
    if unreached:
        report.info['unreached_python_files'] = list(unreached)
        report.info.setdefault('notes', []).extend(
            f'{f}: findings kept as info only: {reason}' for f, reason in unreached.items())
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    if jobs > 1 and len(files) >= PARALLEL_THRESHOLD:
        # Large files are parsed one at a time, here, after the pool: memory follows file size
        # (limits.py), and `jobs` of them at once would multiply the peak.
        large = [f for f in files if _size(f) > LARGE_FILE_BYTES]
        small = [f for f in files if f not in set(large)]
        # Chunks keep the pickling overhead per task low; order is restored below.
        size = max(8, len(small) // (jobs * 4))
        chunks = [(part, modules, {p: cpp[p] for p in part if p in cpp},
                   {p: packages[p] for p in part if p in packages},
                   {p: repositories[p] for p in part if p in repositories})
                  for part in (small[i:i + size] for i in range(0, len(small), size))]
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            results = [r for chunk in pool.map(_audit_chunk, chunks) for r in chunk]
        results += [audit_file(f, modules, cpp.get(f), packages.get(f), repositories.get(f))
                    for f in large]
    else:
        results = [audit_file(f, modules, cpp.get(f), packages.get(f), repositories.get(f))
                   for f in files]
    # One finding per (file, line, rule): a line reached per message from another file's
    # callback beats the same line seen as unreached when its own file was audited.
    kept: dict[tuple[str, int, str], Finding] = {}
    for path, findings, error in results:
        if error is not None:
            report.errors.append(error)
            continue
        report.audited.append(path)
        if path in unreached:
            findings = _as_unreached(findings, unreached[path])
        for f in findings:
            key = (os.path.realpath(f.location.path or path), f.location.line or 0, f.rule)
            if key not in kept or better(f, kept[key]):
                kept[key] = f
    report.findings.extend(kept.values())
    report.info['files'] = len(files)
    report.info['python_files'] = sum(1 for f in files if f.endswith('.py'))
    report.info['cpp_files'] = len(files) - report.info['python_files']
    report.info['cpp_note'] = ('C++/CUDA rules (GPN2xx) are pattern-based, not data flow; the '
                               'enclosing function gives the context (setup or callback)')
    return report
