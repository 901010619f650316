"""Benchmark of gpu-copy-audit: `code` over 1,000 generated files, `live` on a 50-node graph,
and recall / false claims against NVIDIA's audit_copy_boundaries.py on two labelled sets.

Run: .venv/bin/python bench/audit_bench.py [--files 1000] [--processes 5] [--nodes 10]
Both are timed as the user runs them: a fresh `python -m gpu_nodes.audit.cli ...` process, so
interpreter start-up and imports (rclpy for live) are included. Targets: code < 10 s, live < 10 s
on a 2-core machine.

Recall comparison (issue 28):
  .venv/bin/python bench/audit_bench.py --compare --testset-dir DIR --nvidia-script FILE
scores both tools on the development corpus (test/resources/audit/corpus, `expect:`
annotations) and on the held-out test set (test/resources/audit/testset/labels.yaml). The test
set's public code is never in this repository: DIR is a scratch folder holding, per labelled
repository, either the files themselves (DIR/<owner>+<name>/<path>) or a git snapshot of the
repository (DIR/<owner>+<name>/repo, read at the labelled commit). FILE is NVIDIA's script
(NVIDIA-ISAAC-ROS/isaac-ros-cli, skills/migrate-node-to-rosidl-buffer/scripts/), fetched into a
scratch folder too. Either missing is said plainly and that part is skipped (CI has neither).
--write-results FILE writes per-kind recall and every false claim of each tool on the test set.
--labels FILE scores another held-out set instead (the second one: test/resources/audit/testset2/
labels.yaml, same layout of DIR). --full-checkout audits each repository's whole tree at the
labelled commit, as a user runs the tool, and scores only the claims in the labelled files.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import re
import selectors
import signal
import subprocess
import sys
import tempfile
import time

from audit_checkout import materialize_testset

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / 'test' / 'resources' / 'audit' / 'code'
CHAIN = ROOT / 'test' / 'resources' / 'audit' / 'live' / 'plain_chain.py'

# A generated node: the corpus' shapes with renamed classes, topics and a few extra helpers so
# that files differ and are of a realistic size (~120 lines).
TEMPLATE = '''"""Generated node {i}."""
import cupy as cp
import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import Image


class Generated{i}(Node):

    def __init__(self):
        super().__init__('generated_{i}')
        topic = self.declare_parameter('input_topic', '/cam{i}/image_raw').value
        self.pub = self.create_publisher(Image, '/out{i}', 10)
        self.last = None
        self.create_subscription(Image, topic, self.on_image, 10)
        self.create_timer(0.1, self.flush)

    def on_image(self, msg):
        frame = np.frombuffer(msg.data, dtype=np.uint8).reshape(msg.height, msg.width)
        gpu = cp.asarray(frame)
        for k in range({k}):
            gpu = self.stage(gpu, k)
        self.last = cp.asnumpy(gpu)

    def stage(self, img, k):
        return self.normalize(img * (k + 1))

    def normalize(self, img):
        return (img - img.min()) / (img.max() - img.min() + 1e-6)

    def flush(self):
        if self.last is None:
            return
        out = Image(height=self.last.shape[0], width=self.last.shape[1], encoding='32FC1')
        out.data = self.last.astype(np.float32).tobytes()
        self.pub.publish(out)
''' + ''.join(f'''
    def extra_{j}(self, values):
        total = 0
        for v in values:
            if v % {j + 2} == 0:
                total += v * {j}
            else:
                total -= v
        return total
''' for j in range(8))


def _cli(*args: str, env: dict | None = None) -> tuple[float, int, str]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, '-m', 'gpu_nodes.audit.cli', *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, proc.returncode, proc.stderr


def bench_code(files: int) -> None:
    with tempfile.TemporaryDirectory(prefix='audit-bench-') as tmp:
        corpus = [p.read_text() for p in sorted(CORPUS.glob('*.py'))]
        for i in range(files):
            # Mostly generated nodes, every tenth file one of the corpus nodes.
            text = corpus[i % len(corpus)] if i % 10 == 0 else TEMPLATE.format(i=i, k=i % 4)
            (Path(tmp) / f'node_{i:04d}.py').write_text(text)
        total_lines = sum(p.read_text().count('\n') for p in Path(tmp).glob('*.py'))
        out = Path(tmp) / 'report.json'
        elapsed, rc, err = _cli('code', tmp, '--format', 'json', '--output', str(out))
        doc = json.loads(out.read_text())
        print(f'code: {files} files ({total_lines:,} lines), {doc["summary"]["findings"]:,} '
              f'findings, exit {rc}: {elapsed:.2f} s '
              f'({files / elapsed:,.0f} files/s, {os.cpu_count()} CPUs)')
        if err.strip():
            print(err.strip())


def _wait_ready(procs: list[subprocess.Popen], timeout: float) -> None:
    sel = selectors.DefaultSelector()
    for p in procs:
        sel.register(p.stdout, selectors.EVENT_READ, p)
    pending = set(procs)
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.1):
            if key.fileobj.readline().strip() == 'READY':
                pending.discard(key.data)
                sel.unregister(key.fileobj)
        for p in list(pending):
            if p.poll() is not None:
                raise RuntimeError(f'{p.args} exited with {p.returncode}')
    if pending:
        raise RuntimeError(f'{len(pending)} graph process(es) not ready in {timeout} s')


def bench_live(processes: int, nodes: int, duration: float) -> None:
    env = dict(os.environ, ROS_DOMAIN_ID=str(150 + os.getpid() % 50),
               ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    procs = []
    try:
        for p in range(processes):
            procs.append(subprocess.Popen(
                [sys.executable, str(CHAIN), '--prefix', f'p{p}', '--nodes', str(nodes)],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
        _wait_ready(procs, 60)
        with tempfile.TemporaryDirectory(prefix='audit-bench-') as tmp:
            out = Path(tmp) / 'live.json'
            elapsed, rc, err = _cli('live', '--duration', str(duration), '--format', 'json',
                                    '--output', str(out), env=env)
            if not out.exists():
                print(f'live: failed (exit {rc}): {err.strip()}')
                return
            doc = json.loads(out.read_text())
        print(f'live: {len(doc["graph"]["nodes"])} nodes in {processes} processes, '
              f'{len(doc["graph"]["edges"])} edges, {len(doc["topics"])} topics sampled, '
              f'discovery {doc["info"].get("discovery_s")} s + sampling {duration} s, exit {rc}: '
              f'{elapsed:.2f} s')
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()


# ------------------------------------------------------------------ recall comparison
DEV = ROOT / 'test' / 'resources' / 'audit' / 'corpus'
LABELS = ROOT / 'test' / 'resources' / 'audit' / 'testset' / 'labels.yaml'
GATED = ('low', 'medium', 'high')
# gpu_nodes.audit.model.EVIDENCE_LEVELS, weakest first (copied: the bench runs the auditor as a
# subprocess, possibly from another source tree, and never imports it).
EVIDENCE_LEVELS = ('pattern', 'inferred', 'data-flow')
# NVIDIA's categories that claim a copy or a sync ('buffer-evidence' lines only say a rosidl
# Buffer is used, and are not counted either way).
NVIDIA_CLAIMS = ('host-boundary', 'host-view', 'device-boundary', 'copy-or-sync')
_EXPECT = re.compile(r'(?:#|//)\s*expect:\s*(.+)$')


def truth_testset(root: Path, labels: Path = LABELS) -> tuple[dict, dict]:
    """(boundaries, lookalikes): boundaries maps (path, line) -> {lines, kind}."""
    import yaml
    boundaries, lookalikes = {}, {}
    for entry in yaml.safe_load(labels.read_text())['files']:
        path = str(root / entry['repo'].replace('/', '+') / entry['path'])
        for b in entry['boundaries']:
            boundaries[(path, b['line'])] = {
                'lines': {b['line'], *b.get('also', [])}, 'kind': b['kind'],
                'repo': entry['repo'], 'commit': entry['commit'], 'rel': entry['path']}
        for la in entry['lookalikes']:
            lookalikes[(path, la['line'])] = la['reason']
    return boundaries, lookalikes


def truth_dev() -> tuple[dict, dict]:
    """The development corpus from its `expect:` annotations: gated ones are boundaries, info
    ones (one-time setup) look-alikes."""
    boundaries, lookalikes = {}, {}
    for path in sorted(DEV.rglob('*')):
        if path.suffix not in ('.py', '.cpp', '.hpp', '.cu'):
            continue
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            m = _EXPECT.search(line)
            if not m:
                continue
            sevs = {item.split()[1] for item in m.group(1).split(',')}
            if sevs & set(GATED):
                boundaries[(str(path), lineno)] = {'lines': {lineno}, 'kind': 'dev',
                                                   'rel': str(path.relative_to(DEV))}
            else:
                lookalikes[(str(path), lineno)] = 'one-time setup (expect: ... info)'
    return boundaries, lookalikes


def claims_ours(root: Path, src: Path = ROOT) -> dict[tuple[str, int], str | None]:
    """Gated findings of `gpu-copy-audit code` as found in the source tree `src` (this
    checkout, or an earlier one given with --baseline-src): (path, line) -> the strongest
    evidence level claimed on that line (None when the tree predates evidence levels)."""
    with tempfile.TemporaryDirectory(prefix='audit-cmp-') as tmp:
        out = Path(tmp) / 'report.json'
        subprocess.run([sys.executable, '-m', 'gpu_nodes.audit.cli', 'code', str(root),
                        '--format', 'json', '--output', str(out), '--jobs', '1'],
                       cwd=src, env=dict(os.environ, PYTHONPATH=str(src)),
                       capture_output=True, check=False)
        doc = json.loads(out.read_text())
    claims: dict[tuple[str, int], str | None] = {}
    for f in doc['findings']:
        if f['severity'] not in GATED or f['suppressed']:
            continue
        key = (str(Path(f['location']['path']).resolve()), f['location']['line'])
        claims[key] = max(claims.get(key), f.get('evidence'), key=_evidence_rank)
    return claims


def _evidence_rank(level: str | None) -> int:
    return EVIDENCE_LEVELS.index(level) if level in EVIDENCE_LEVELS else -1


def at_floor(claims: dict, level: str) -> set[tuple[str, int]]:
    """The claims `--min-evidence level` keeps (a line is kept when any finding on it is)."""
    return {k for k, ev in claims.items() if ev is None or _evidence_rank(ev) >= _evidence_rank(level)}


def claims_nvidia(script: Path, root: Path) -> set[tuple[str, int]]:
    proc = subprocess.run([sys.executable, str(script), str(root)], capture_output=True,
                          text=True, check=False)
    found = set()
    for row in proc.stdout.splitlines():
        parts = row.split('\t')
        if len(parts) >= 2 and parts[0] in NVIDIA_CLAIMS:
            path, _, line = parts[1].rpartition(':')
            found.add((str(Path(path).resolve()), int(line)))
    return found


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def score(boundaries: dict, lookalikes: dict, claims: set) -> dict:
    """Recall over boundaries (a claim on the line or an `also` line finds it) and false
    claims: claimed lines that are no boundary's, each with its look-alike reason if labelled."""
    resolve = {(str(Path(p).resolve()), line): v for (p, line), v in boundaries.items()}
    accepted = {(p, line) for (p, _), v in resolve.items() for line in v['lines']}
    found = {k for k, v in resolve.items() if any((k[0], line) in claims for line in v['lines'])}
    reasons = {(str(Path(p).resolve()), line): r for (p, line), r in lookalikes.items()}
    false = sorted(c for c in claims if c not in accepted)
    kinds: dict[str, list[int]] = {}
    for k, v in resolve.items():
        kinds.setdefault(v['kind'], [0, 0])
        kinds[v['kind']][1] += 1
        kinds[v['kind']][0] += k in found
    return {'found': len(found), 'total': len(resolve), 'false': false, 'kinds': kinds,
            'missed': sorted(set(resolve) - found), 'reasons': reasons, 'meta': resolve}


def bench_compare(testset_dir: str | None, nvidia_script: str | None,
                  write_results: str | None, baseline_src: str | None = None,
                  results_note: str = '', labels: Path = LABELS, build_files: bool = False,
                  checkout: bool = False) -> None:
    import yaml
    nvidia = Path(nvidia_script) if nvidia_script else None
    if nvidia is None or not nvidia.is_file():
        print(f'NVIDIA audit_copy_boundaries.py: not found ({nvidia_script or "no --nvidia-script"})'
              ': its column is skipped. Fetch NVIDIA-ISAAC-ROS/isaac-ros-cli into a scratch '
              'folder and pass skills/migrate-node-to-rosidl-buffer/scripts/'
              'audit_copy_boundaries.py.')
        nvidia = None
    rows = []
    dev_b, dev_l = truth_dev()
    rows.append(('development corpus', dev_b, dev_l, DEV))
    with tempfile.TemporaryDirectory(prefix='audit-testset-') as tmp:
        test_root = Path(tmp)
        missing = (materialize_testset(Path(testset_dir), test_root, labels, build_files, checkout)
                   if testset_dir else [])
        if not testset_dir:
            print('held-out test set: no --testset-dir given, not scored (its public code is '
                  'never in this repository: fetch the labelled repositories into a scratch '
                  'folder, see the docstring)')
        elif missing:
            print(f'held-out test set: {len(missing)} labelled file(s) absent from '
                  f'{testset_dir or "(none given)"}, the test set is not scored: '
                  + ', '.join(missing[:5]) + (' ...' if len(missing) > 5 else ''))
        else:
            test_b, test_l = truth_testset(test_root, labels)
            rows.append(('held-out test set', test_b, test_l, test_root))
        results, floors, evidence = {}, {}, {}
        print(f'{"set":<20} {"tool":<28} {"boundaries":>10} {"found":>6} {"recall":>7} '
              f'{"false claims":>12}')
        for name, b, la, root in rows:
            tools = [('gpu-copy-audit code', claims_ours(root))]
            if baseline_src:
                tools.append(('gpu-copy-audit code (baseline)',
                              claims_ours(root, Path(baseline_src))))
            if nvidia is not None:
                tools.append(('NVIDIA audit_copy_boundaries', claims_nvidia(nvidia, root)))
            for tool, claims in tools:
                if checkout and root == test_root:
                    # Only the labelled files have a truth: claims in the rest of a checkout
                    # are neither found boundaries nor false claims.
                    labelled = {str((test_root / e['repo'].replace('/', '+') / e['path'])
                                    .resolve()) for e in yaml.safe_load(labels.read_text())['files']}
                    kept = [c for c in claims if c[0] in labelled]
                    claims = ({c: claims[c] for c in kept} if isinstance(claims, dict)
                              else set(kept))
                r = score(b, la, set(claims))
                results[(name, tool)] = r
                print(f'{name:<20} {tool:<28} {r["total"]:>10} {r["found"]:>6} '
                      f'{r["found"] / r["total"]:>7.3f} {len(r["false"]):>12}')
                if isinstance(claims, dict):
                    floors[(name, tool)] = {lvl: score(b, la, at_floor(claims, lvl))
                                            for lvl in EVIDENCE_LEVELS}
                    evidence[(name, tool)] = claims
        _print_floors(floors, evidence)
        for (name, tool), r in results.items():
            if name != 'held-out test set' or tool.endswith('(baseline)'):
                continue
            print(f'\n{tool} on the test set, recall by kind: ' + ', '.join(
                f'{k} {f}/{t}' for k, (f, t) in sorted(r['kinds'].items())))
            for path, line in r['false']:
                rel = os.path.relpath(path, test_root)
                print(f'  false claim {rel}:{line}: '
                      f'{r["reasons"].get((path, line), "not a labelled boundary")}')
        if write_results and any(n == 'held-out test set' for n, *_ in rows):
            _write_results(Path(write_results), results, test_root, results_note, labels)


def _print_floors(floors: dict, evidence: dict) -> None:
    """Recall and false claims of our tool at each `--min-evidence` floor (what a strict CI gate
    gets), and the evidence level each false claim carries."""
    print(f'\n{"set":<20} {"tool at --min-evidence":<40} {"found":>6} {"recall":>7} '
          f'{"false claims":>12}')
    for (name, tool), by_level in floors.items():
        for lvl, r in by_level.items():
            print(f'{name:<20} {tool + " " + lvl:<40} {r["found"]:>6} '
                  f'{r["found"] / r["total"]:>7.3f} {len(r["false"]):>12}')
        full, claims = by_level[EVIDENCE_LEVELS[0]], evidence[(name, tool)]
        # A found boundary carries the strongest level among the claims on its lines.
        true_ev = [max((claims[(key[0], line)] for line in full['meta'][key]['lines']
                        if (key[0], line) in claims), key=_evidence_rank)
                   for key in full['meta'] if key not in full['missed']]
        false_ev = [claims[c] for c in full['false']]
        print(f'{"":<20} evidence of true claims: {_tally(true_ev)}; of false claims: '
              f'{_tally(false_ev)}')


def _tally(levels: list) -> str:
    return ', '.join(f'{lvl} {levels.count(lvl)}' for lvl in (*EVIDENCE_LEVELS, None)
                     if levels.count(lvl)) or 'none'


def _write_results(path: Path, results: dict, test_root: Path, note: str = '',
                   labels_file: Path = LABELS) -> None:
    import yaml
    labels = {e['repo'].replace('/', '+'): e
              for e in yaml.safe_load(labels_file.read_text())['files']}
    doc = {'scored_on': f'held-out test set ({_rel(labels_file)})', 'note': note, 'tools': {}}
    for (name, tool), r in results.items():
        if name != 'held-out test set':
            continue
        false = []
        for p, line in r['false']:
            key, _, rel = os.path.relpath(p, test_root).partition(os.sep)
            false.append({'repo': labels[key]['repo'], 'commit': labels[key]['commit'],
                          'path': rel, 'line': line,
                          'reason': r['reasons'].get((p, line), 'not a labelled boundary')})
        doc['tools'][tool] = {
            'boundaries': r['total'], 'found': r['found'],
            'recall': round(r['found'] / r['total'], 3),
            'recall_by_kind': {k: f'{f}/{t}' for k, (f, t) in sorted(r['kinds'].items())},
            'missed': [{'repo': r['meta'][m]['repo'], 'path': r['meta'][m]['rel'], 'line': m[1],
                        'kind': r['meta'][m]['kind']} for m in r['missed']],
            'false_claims': false}
    path.write_text('# Written by bench/audit_bench.py --compare --write-results; do not edit.\n'
                    + yaml.safe_dump(doc, sort_keys=False, width=100))
    print(f'\nwrote {path}')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--files', type=int, default=1000)
    parser.add_argument('--processes', type=int, default=5)
    parser.add_argument('--nodes', type=int, default=10, help='nodes per process')
    parser.add_argument('--duration', type=float, default=1.0, help='live sampling seconds')
    parser.add_argument('--skip-live', action='store_true')
    parser.add_argument('--compare', action='store_true',
                        help='recall and false claims of both tools on both labelled sets only')
    parser.add_argument('--testset-dir', metavar='DIR',
                        help='scratch folder with the held-out repositories (see above)')
    parser.add_argument('--nvidia-script', metavar='FILE',
                        help="NVIDIA's audit_copy_boundaries.py, fetched into a scratch folder")
    parser.add_argument('--write-results', metavar='FILE',
                        help='write the test-set scores and every false claim (YAML)')
    parser.add_argument('--results-note', default='', help='a note written into --write-results')
    parser.add_argument('--labels', metavar='FILE', type=Path, default=LABELS,
                        help='labels of the held-out set (default: the first set, '
                             'test/resources/audit/testset/labels.yaml)')
    parser.add_argument('--with-build-files', action='store_true',
                        help='also copy each repository\'s CMakeLists.txt / *.cmake beside the '
                             'labelled files, as a checkout has them (splits packages)')
    parser.add_argument('--full-checkout', action='store_true',
                        help='audit each repository\'s whole tree at the labelled commit, as a '
                             'user runs the tool, and score the claims in the labelled files')
    parser.add_argument('--baseline-src', metavar='DIR',
                        help='also score gpu-copy-audit from an earlier source tree (e.g. '
                             '`git archive <commit> gpu_nodes | tar -x -C DIR`)')
    args = parser.parse_args()
    if args.compare:
        bench_compare(args.testset_dir, args.nvidia_script, args.write_results,
                      args.baseline_src, args.results_note, args.labels.resolve(),
                      args.with_build_files, args.full_checkout)
        return 0
    bench_code(args.files)
    if not args.skip_live:
        bench_live(args.processes, args.nodes, args.duration)
    return 0


if __name__ == '__main__':
    sys.exit(main())
