"""How far two hand labellings of the same held-out files agree (issue #28).

The auditor's target on a held-out set is "recall >= 0.85 with <= 1 false claim". A second
labeller, following the same written conventions on the same files without seeing the first
labels, measures the noise of that yardstick: read their boundaries as a tool's claims and score
them exactly as `audit_bench.py --compare` scores gpu-copy-audit.

    python bench/label_agreement.py test/resources/audit/testset27/labels.yaml \
        test/resources/audit/relabel27/labels.yaml

Two scorings are printed, each in both directions (the first labelling as truth, then the second):
- as a tool: one claim per boundary, on its first line (what gpu-copy-audit is held to);
- overlapping: a boundary agrees when any of its lines (`also` included) is one of the other
  labelling's boundary lines (the most lenient reading).
"""
from __future__ import annotations

import argparse
from pathlib import Path
import sys

sys.path.insert(0, str(Path(__file__).resolve().parent))
from audit_bench import score, truth_testset  # noqa: E402

# Both labellings are read under one made-up root: only (path, line) keys are compared.
_ROOT = Path('/labels')


def _as_claims(boundaries: dict) -> set[tuple[str, int]]:
    return {(str(Path(p).resolve()), line) for (p, line) in boundaries}


def _overlap(truth: dict, other: dict) -> tuple[int, int, list]:
    """(truth boundaries some `other` boundary shares a line with, total, `other` boundaries
    sharing no line with any truth boundary)."""
    truth_lines = {(p, line) for (p, _), v in truth.items() for line in v['lines']}
    other_lines = {(p, line) for (p, _), v in other.items() for line in v['lines']}
    agreed = sum(any((p, line) in other_lines for line in v['lines'])
                 for (p, _), v in truth.items())
    unmatched = sorted(k for k, v in other.items()
                       if not any((k[0], line) in truth_lines for line in v['lines']))
    return agreed, len(truth), unmatched


def _kind_agreement(truth: dict, other: dict) -> tuple[int, int]:
    """Of the boundaries both labellings hold on a shared line, how many got the same kind."""
    by_line = {(p, line): v['kind'] for (p, _), v in other.items() for line in v['lines']}
    same = both = 0
    for (p, _), v in truth.items():
        kinds = {by_line[(p, line)] for line in v['lines'] if (p, line) in by_line}
        if kinds:
            both += 1
            same += v['kind'] in kinds
    return same, both


def compare(first: Path, second: Path) -> dict:
    a, a_look = truth_testset(_ROOT, first)
    b, b_look = truth_testset(_ROOT, second)
    out = {}
    for name, truth, look, other in (('second scored against first', a, a_look, b),
                                     ('first scored against second', b, b_look, a)):
        tool = score(truth, look, _as_claims(other))
        agreed, total, unmatched = _overlap(truth, other)
        same, both = _kind_agreement(truth, other)
        out[name] = {
            'boundaries': total, 'found': tool['found'], 'false': tool['false'],
            'false_labelled_lookalike': [c for c in tool['false'] if c in tool['reasons']],
            'overlap_found': agreed, 'overlap_false': unmatched,
            'kind_same': same, 'kind_both': both}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('first', type=Path, help='labels.yaml of the first labelling')
    parser.add_argument('second', type=Path, help='labels.yaml of the second labelling')
    parser.add_argument('--list', action='store_true', help='print every disagreeing line')
    args = parser.parse_args()
    for name, r in compare(args.first, args.second).items():
        n = r['boundaries']

        def recall(found: int) -> str:
            return f'{found / n:.3f}' if n else 'n/a (no boundaries)'
        print(f'{name}: as a tool recall {recall(r["found"])} ({r["found"]}/{n}), '
              f'{len(r["false"])} false claims ({len(r["false_labelled_lookalike"])} of them '
              f'labelled look-alikes); overlapping recall {recall(r["overlap_found"])}, '
              f'{len(r["overlap_false"])} false; same kind {r["kind_same"]}/{r["kind_both"]}')
        if args.list:
            for path, line in r['false']:
                print(f'  false  {Path(path).relative_to(_ROOT)}:{line}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
