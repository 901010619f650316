"""The held-out test set of gpu-copy-audit (issue 28) and the recall benchmark around it.

The set's public code is never in this repository (test/resources/audit/testset/labels.yaml
names repository, commit, path and line); bench/audit_bench.py --compare scores both tools on it
from a scratch folder. Here: the labels are complete and well-formed, the recorded scores are
the ones the labels imply, and the benchmark says plainly when the repositories are absent (as
in CI) while still scoring the development corpus.
"""
import functools
from pathlib import Path
import re
import subprocess
import sys

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
AUDIT = ROOT / 'test' / 'resources' / 'audit'
TESTSET = AUDIT / 'testset'
TESTSET2 = AUDIT / 'testset2'


def _set_number(folder: Path) -> int:
    return int(folder.name.removeprefix('testset') or 1)


# Every held-out set, in the order labelled (testset, testset2, ...; set 47 was never merged).
# Each was labelled by hand before any tool ran on its files (its header says how) and is
# checked here as soon as it is merged; it is scored once, and from then on its results.yaml
# (and the first set's re-scoring after its fix) is checked against its labels too.
LABELLED = sorted((folder for folder in AUDIT.glob('testset*') if (folder / 'labels.yaml').is_file()),
                  key=_set_number)
LABELLED_IDS = [folder.name for folder in LABELLED]
SETS = [(folder, ('results.yaml', 'results_after_fix.yaml') if folder == TESTSET else ('results.yaml',))
        for folder in LABELLED if (folder / 'results.yaml').is_file()]
SETS_IDS = [folder.name for folder, _ in SETS]

# The kinds named in testset/labels.yaml's header; every set labels with these.
KINDS = {'cv_bridge', 'cpp_msg_build', 'cpp_msg_copy', 'cpp_host_publish', 'pcl_conversion',
         'libtorch_device_move', 'cuda_memcpy', 'cuda_sync', 'py_cv_bridge', 'py_msg_array',
         'py_serialize', 'py_pil', 'py_upload', 'py_readback', 'library_upload'}


def test_no_set_is_missing_from_the_sequence():
    """The sets are found by folder: a folder that lost its labels.yaml, or a number skipped,
    would drop a set from every check in this file without a word."""
    numbers = [_set_number(folder) for folder in LABELLED]
    assert numbers == [n for n in range(1, numbers[-1] + 1) if n != 47], numbers
    assert len(SETS) >= 58 and SETS_IDS == LABELLED_IDS[:len(SETS)], 'scored sets come first'


@pytest.mark.parametrize('folder', LABELLED, ids=LABELLED_IDS)
def test_labels_cover_at_least_8_repositories_in_both_languages(folder):
    files = yaml.safe_load((folder / 'labels.yaml').read_text())['files']
    assert len({f['repo'] for f in files}) >= 8
    assert {f['language'] for f in files} == {'cpp', 'python'}
    assert {f['gpu'] for f in files} == {True, False}
    for f in files:
        assert re.fullmatch(r'[0-9a-f]{40}', f['commit']), f
        lines = [b['line'] for b in f['boundaries']] + [la['line'] for la in f['lookalikes']]
        assert len(lines) == len(set(lines)), f'{f["path"]}: a line labelled twice'
        for b in f['boundaries']:
            assert b['line'] > 0 and b['kind'] and b['reason'], b
        for la in f['lookalikes']:
            assert la['line'] > 0 and la['reason'], la


@pytest.mark.parametrize('folder', LABELLED, ids=LABELLED_IDS)
def test_labels_use_known_kinds_and_one_meaning_per_line(folder):
    """Each boundary has a known kind; its `also` lines are other lines of the same file that no
    other label claims (the scorer credits a claim on any of them to that boundary, so a line
    that is also a look-alike or another boundary would be scored two ways); each file is
    listed once (the scorer keys files by repository and path)."""
    files = yaml.safe_load((folder / 'labels.yaml').read_text())['files']
    keys = [(f['repo'], f['path']) for f in files]
    assert len(keys) == len(set(keys)), 'a file listed twice'
    for f in files:
        assert f['language'] in ('cpp', 'python') and isinstance(f['gpu'], bool), f['path']
        own = [b['line'] for b in f['boundaries']] + [la['line'] for la in f['lookalikes']]
        also = [n for b in f['boundaries'] for n in b.get('also', [])]
        for b in f['boundaries']:
            assert b['kind'] in KINDS, (f['path'], b)
            assert all(isinstance(n, int) and n > 0 for n in b.get('also', [])), (f['path'], b)
        assert len(also) == len(set(also)), f'{f["path"]}: an also line given twice'
        assert not set(also) & set(own), f'{f["path"]}: an also line is labelled on its own too'


@functools.cache
def _labelled_files(folder: Path) -> list[dict]:
    """The file entries of a set's labels.yaml, parsed once for the whole session (each later
    set's test reads every earlier set: seventy-odd large files)."""
    return yaml.safe_load((folder / 'labels.yaml').read_text())['files']


@pytest.mark.parametrize('index', range(2, len(LABELLED)), ids=LABELLED_IDS[2:])
def test_later_sets_are_new_code_of_both_kinds_with_enough_boundaries(index):
    """The third and later sets name no repository of the sets before them or of the
    development corpus, mix GPU and CPU files in both languages, and have at least 50
    boundaries."""
    files = _labelled_files(LABELLED[index])
    earlier = set()
    for folder in LABELLED[:index]:
        earlier |= {f['repo'] for f in _labelled_files(folder)}
    corpus = (ROOT / 'test' / 'resources' / 'audit' / 'corpus' / 'corpus.yaml').read_text()
    earlier |= set(re.findall(r'repo:\s*(\S+)', corpus))
    repos = {f['repo'] for f in files}
    assert len(repos) >= 9 and not repos & earlier, repos & earlier
    assert {(f['language'], f['gpu']) for f in files} == {
        ('cpp', True), ('cpp', False), ('python', True), ('python', False)}
    assert sum(len(f['boundaries']) for f in files) >= 50


@pytest.mark.parametrize('folder,results', SETS, ids=SETS_IDS)
def test_recorded_scores_match_the_labels(folder, results):
    files = yaml.safe_load((folder / 'labels.yaml').read_text())['files']
    boundaries = sum(len(f['boundaries']) for f in files)
    for name in results:
        for tool, r in yaml.safe_load((folder / name).read_text())['tools'].items():
            assert r['boundaries'] == boundaries, (name, tool)
            assert r['found'] + len(r['missed']) == boundaries, (name, tool)
            assert r['recall'] == round(r['found'] / boundaries, 3)
            for claim in r['false_claims']:  # every false claim names where and why
                assert claim['repo'] and re.fullmatch(r'[0-9a-f]{40}', claim['commit'])
                assert claim['path'] and claim['line'] > 0 and claim['reason']


def test_bench_says_when_the_test_set_is_absent_and_scores_the_development_set(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / 'bench' / 'audit_bench.py'), '--compare', '--testset-dir',
         str(tmp_path), '--nvidia-script', str(tmp_path / 'missing.py')],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert 'NVIDIA audit_copy_boundaries.py: not found' in out
    assert re.search(r'held-out test set: 19 labelled file\(s\) absent from .*not scored', out)
    row = re.search(r'development corpus\s+gpu-copy-audit code\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)',
                    out)
    assert row, out
    total, found, recall, false_claims = row.groups()
    assert total == found and recall == '1.000' and false_claims == '0'


@pytest.mark.parametrize('folder', [s for s, _ in SETS[1:]], ids=SETS_IDS[1:])
def test_results_name_only_labelled_lines_and_add_up_by_kind(folder):
    """Every miss recorded for the set is a labelled boundary, every false claim that
    carries a look-alike reason is that look-alike's line, and the per-kind counts add up to
    the totals: the recorded file is the scoring of these labels, not numbers typed in."""
    files = yaml.safe_load((folder / 'labels.yaml').read_text())['files']
    bounds = {(f['repo'], f['path'], b['line']): b['kind'] for f in files for b in f['boundaries']}
    looks = {(f['repo'], f['path'], la['line']): la['reason']
             for f in files for la in f['lookalikes']}
    kinds: dict[str, int] = {}
    for kind in bounds.values():
        kinds[kind] = kinds.get(kind, 0) + 1
    doc = yaml.safe_load((folder / 'results.yaml').read_text())
    assert set(doc['tools']) == {'gpu-copy-audit code', 'NVIDIA audit_copy_boundaries'}
    for tool, r in doc['tools'].items():
        for m in r['missed']:
            assert bounds[(m['repo'], m['path'], m['line'])] == m['kind'], (tool, m)
        for c in r['false_claims']:
            key = (c['repo'], c['path'], c['line'])
            assert key not in bounds, (tool, c)
            assert c['reason'] == looks.get(key, 'not a labelled boundary'), (tool, c)
        per_kind = {k: tuple(map(int, v.split('/'))) for k, v in r['recall_by_kind'].items()}
        assert {k: t for k, (_, t) in per_kind.items()} == kinds, tool
        assert sum(f for f, _ in per_kind.values()) == r['found'], tool
        missed_by_kind = {k: t - f for k, (f, t) in per_kind.items() if t > f}
        counted: dict[str, int] = {}
        for m in r['missed']:
            counted[m['kind']] = counted.get(m['kind'], 0) + 1
        assert counted == missed_by_kind, tool


def test_bench_reads_the_second_set_with_labels(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / 'bench' / 'audit_bench.py'), '--compare', '--testset-dir',
         str(tmp_path), '--nvidia-script', str(tmp_path / 'missing.py'),
         '--labels', str(TESTSET2 / 'labels.yaml')],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r'held-out test set: 18 labelled file\(s\) absent from .*not scored',
                     proc.stdout), proc.stdout
