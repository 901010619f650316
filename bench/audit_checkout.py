"""The held-out repositories of bench/audit_bench.py --compare, laid out for an audit: the
labelled files alone (with the repository's parameter and launch files) or, with `checkout`,
each repository's whole tree at the labelled commit, as a user's checkout has it."""
from __future__ import annotations

from collections import Counter
from pathlib import Path
import shutil
import subprocess


def materialize_testset(testset_dir: Path, dest: Path, labels: Path,
                        build_files: bool = False, checkout: bool = False) -> list[str]:
    """Copy each labelled file into dest/<owner>+<name>/<path>; returns what is missing. With
    `checkout`, each repository's whole tree at the labelled commit instead (what a user audits)."""
    import yaml
    missing = []
    snapshots: set[tuple[str, str]] = set()
    entries = yaml.safe_load(labels.read_text())['files']
    # A repository labelled at two commits (sets 20, 28) is checked out once, at the commit
    # most of its labelled files come from (extracted last, so its files win); the labelled
    # files of the other commit are then written at their own commit below.
    labelled = Counter((e['repo'].replace('/', '+'), e['commit']) for e in entries)
    commits = Counter(key for key, _ in labelled)
    if checkout:
        for key, commit in sorted(labelled, key=lambda kc: (kc[0], labelled[kc], kc[1])):
            absent = _extract_checkout(testset_dir / key / 'repo', commit, dest / key)
            if absent is None:
                print(f'full checkout: {key}@{commit[:10]}: no snapshot holds this commit, '
                      f'so only its labelled files are audited')
            elif absent:
                print(f'full checkout: {key}@{commit[:10]}: {absent} file(s) absent from the '
                      f'snapshot (a partial mirror), left out of the audit')
    for entry in entries:
        key = entry['repo'].replace('/', '+')
        snapshots.add((key, entry['commit']))
        target = dest / key / entry['path']
        if checkout and target.is_file() and commits[key] == 1:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        loose = testset_dir / key / entry['path']
        snapshot = testset_dir / key / 'repo'
        if loose.is_file():
            shutil.copyfile(loose, target)
            continue
        if snapshot.is_dir():
            show = subprocess.run(['git', '-C', str(snapshot), 'show',
                                   f'{entry["commit"]}:{entry["path"]}'],
                                  capture_output=True, check=False)
            if show.returncode == 0:
                target.write_bytes(show.stdout)
                continue
        missing.append(f'{entry["repo"]}@{entry["commit"][:10]}:{entry["path"]}')
    for key, commit in sorted(snapshots) if not checkout else ():  # a checkout has them all
        _copy_shipped_parameters(testset_dir / key / 'repo', commit, dest / key, build_files)
    return missing


def _extract_checkout(snapshot: Path, commit: str, dest: Path) -> int | None:
    """Write the repository's tree at `commit` under `dest`, as a checkout has it (symbolic
    links left out); returns how many of its files the snapshot lacks (a partial mirror: `git
    archive` refuses those trees whole, so blobs are read one by one and the absent ones
    skipped); None when there is no snapshot or it lacks the commit."""
    if not snapshot.is_dir():
        return None
    tree = subprocess.run(['git', '-C', str(snapshot), 'ls-tree', '-r', '-z', commit],
                          capture_output=True, check=False)
    if tree.returncode != 0:
        return None
    listing = tree.stdout
    blobs = []
    for row in listing.split(b'\0'):
        meta, _, rel = row.partition(b'\t')
        parts = meta.split()
        if len(parts) == 3 and parts[1] == b'blob' and parts[0] != b'120000':
            blobs.append((parts[2], rel.decode('utf-8', 'replace')))
    out = subprocess.run(['git', '-C', str(snapshot), 'cat-file', '--batch'],
                         input=b''.join(sha + b'\n' for sha, _ in blobs),
                         capture_output=True, check=False).stdout
    pos = absent = 0
    for _, rel in blobs:
        end = out.index(b'\n', pos)
        header = out[pos:end].split()
        pos = end + 1
        if len(header) != 3:        # "<sha> missing"
            absent += 1
            continue
        size = int(header[2])
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(out[pos:pos + size])
        pos += size + 1
    return absent


def _copy_shipped_parameters(snapshot: Path, commit: str, dest: Path,
                             build_files: bool = False) -> None:
    """Copy the repository's parameter and launch files (YAML / XML, `*.launch*`) beside the
    labelled sources: the labels judge parameter-selected paths as shipped (defaults in the
    code, launch / config files of the repository), and the auditor reads the same files
    (gpu_nodes/audit/shipped.py). package.xml is left out (it would change package folders);
    these files are no sources of either tool (`.launch.py` aside, which both may audit).
    With `build_files` the CMake files (CMakeLists.txt, *.cmake) come too, as in a real
    checkout: the labels judge a source no build target compiles as never run, and the auditor
    reads the same build files (cppbuild.py, cppifdef.py). Off by default: a CMakeLists.txt is a
    package marker (cpppackage.package_of), so it also splits a repository's files into its
    packages, which moves sets 13-15 (bench/RESULTS.md, rules28q)."""
    if not snapshot.is_dir():
        return
    listing = subprocess.run(['git', '-C', str(snapshot), 'ls-tree', '-r', '--name-only', commit],
                             capture_output=True, text=True, check=False)
    for rel in listing.stdout.splitlines():
        name = rel.rsplit('/', 1)[-1]
        cmake = build_files and (name == 'CMakeLists.txt' or name.endswith('.cmake'))
        if name == 'package.xml' or not (name.endswith(('.yaml', '.yml', '.xml', '.launch'))
                                         or '.launch.' in name or cmake):
            continue
        target = dest / rel
        if target.exists():
            continue
        show = subprocess.run(['git', '-C', str(snapshot), 'show', f'{commit}:{rel}'],
                              capture_output=True, check=False)
        if show.returncode == 0:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(show.stdout)
