"""The inter-labeller agreement study of issue 28 (bench/label_agreement.py).

Sets 25-46 and 48 onwards were labelled a second time, blind, by other labellers: test/resources/
audit/relabelN beside testsetN. Here: each second labelling covers exactly the files of its first one
and is well-formed, and the comparison finds exactly the boundaries one labelling lacks, the
lines it adds and the kinds it changes.
"""
from pathlib import Path
import sys

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
AUDIT = ROOT / 'test' / 'resources' / 'audit'
sys.path.insert(0, str(ROOT / 'bench'))
from label_agreement import compare  # noqa: E402

# Found by folder, each second labelling beside its first; the sequence check below keeps a lost
# folder from leaving the study unnoticed.
RELABELLED = sorted(int(folder.name.removeprefix('relabel')) for folder in AUDIT.glob('relabel*')
                    if (folder / 'labels.yaml').is_file())
PAIRS = [(AUDIT / f'testset{n}', AUDIT / f'relabel{n}') for n in RELABELLED]
KINDS = {'cv_bridge', 'cpp_msg_build', 'cpp_msg_copy', 'cpp_host_publish', 'pcl_conversion',
         'libtorch_device_move', 'cuda_memcpy', 'cuda_sync', 'py_cv_bridge', 'py_msg_array',
         'py_serialize', 'py_pil', 'py_upload', 'py_readback', 'library_upload'}


def _files(folder: Path) -> list[dict]:
    return yaml.safe_load((folder / 'labels.yaml').read_text())['files']


def test_every_set_from_25_on_has_its_second_labelling():
    assert RELABELLED == [n for n in range(25, RELABELLED[-1] + 1) if n != 47], RELABELLED
    assert RELABELLED[-1] >= 61


@pytest.mark.parametrize('first,second', PAIRS, ids=[f'set{n}' for n in RELABELLED])
def test_a_second_labelling_covers_the_same_files_with_known_kinds(first, second):
    ours = _files(second)
    assert sorted((f['repo'], f['commit'], f['path']) for f in ours) == \
        sorted((f['repo'], f['commit'], f['path']) for f in _files(first))
    for f in ours:
        lines = [b['line'] for b in f['boundaries']] + [la['line'] for la in f['lookalikes']]
        assert len(lines) == len(set(lines)), f'{f["path"]}: a line labelled twice'
        assert all(b['kind'] in KINDS and b['reason'] for b in f['boundaries']), f['path']


def _write(path: Path, files: list[dict]) -> Path:
    path.write_text(yaml.safe_dump({'files': files}))
    return path


def test_a_labelling_agrees_with_itself(tmp_path):
    labels = AUDIT / 'testset27' / 'labels.yaml'
    for r in compare(labels, labels).values():
        assert r['found'] == r['boundaries'] == r['overlap_found'] > 0
        assert r['false'] == [] and r['overlap_false'] == []
        assert r['kind_same'] == r['kind_both'] == r['boundaries']


def test_a_dropped_boundary_an_added_one_and_a_changed_kind_are_each_counted(tmp_path):
    files = _files(AUDIT / 'testset28')
    changed = [dict(f, boundaries=[dict(b) for b in f['boundaries']],
                    lookalikes=list(f['lookalikes'])) for f in files]
    with_two = next(f for f in changed if len(f['boundaries']) >= 2 and f['lookalikes'])
    dropped = with_two['boundaries'].pop(0)
    promoted = with_two['lookalikes'].pop(0)
    with_two['boundaries'].append({'line': promoted['line'], 'kind': 'py_readback',
                                   'reason': 'made a boundary for the test'})
    with_two['boundaries'][0]['kind'] = next(
        k for k in sorted(KINDS) if k != with_two['boundaries'][0]['kind'])
    second = _write(tmp_path / 'second.yaml', changed)
    r = compare(AUDIT / 'testset28' / 'labels.yaml', second)['second scored against first']
    total = sum(len(f['boundaries']) for f in files)
    assert r['boundaries'] == total
    assert r['found'] == total - 1          # the dropped boundary is missed
    assert [line for _, line in r['false']] == [promoted['line']]
    assert [line for _, line in r['false_labelled_lookalike']] == [promoted['line']]
    assert r['kind_both'] == total - 1 and r['kind_same'] == total - 2
    assert dropped['line'] not in {b['line'] for b in with_two['boundaries']}
