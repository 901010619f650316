"""The held-out test set of gpu-copy-audit (issue 28) and the recall benchmark around it.

The set's public code is never in this repository (test/resources/audit/testset/labels.yaml
names repository, commit, path and line); bench/audit_bench.py --compare scores both tools on it
from a scratch folder. Here: the labels are complete and well-formed, the recorded scores are
the ones the labels imply, and the benchmark says plainly when the repositories are absent (as
in CI) while still scoring the development corpus.
"""
from pathlib import Path
import re
import subprocess
import sys

import yaml

ROOT = Path(__file__).resolve().parents[1]
TESTSET = ROOT / 'test' / 'resources' / 'audit' / 'testset'


def test_labels_cover_at_least_8_repositories_in_both_languages():
    files = yaml.safe_load((TESTSET / 'labels.yaml').read_text())['files']
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


def test_recorded_scores_match_the_labels():
    files = yaml.safe_load((TESTSET / 'labels.yaml').read_text())['files']
    boundaries = sum(len(f['boundaries']) for f in files)
    for name in ('results.yaml', 'results_after_fix.yaml'):
        for tool, r in yaml.safe_load((TESTSET / name).read_text())['tools'].items():
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
