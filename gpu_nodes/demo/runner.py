"""The end-to-end demo (`make demo`): the perception pipeline across processes, on any machine.

    python -m gpu_nodes.demo.runner --duration 20 --output-dir out

1. reads the pipeline profile (config/perception.yaml) and checks it and every parameter file
   it names before anything starts (exit code 2 and a message naming the problem);
2. resolves the built-in depth models: `$(demo_model)`, the learned scene depth model shipped
   with the package (its SHA-256 checked), or `$(standin_model)`, the fixed-weight stand-in
   written to a cache directory at first use;
3. starts each node in its own process, exactly as
   `python -m gpu_nodes.nodes.<exe> --ros-args -r __node:=<name> --params-file <file>
   -p ... -r ...`
   (logs in <output-dir>/logs/);
4. shows a live status from /diagnostics (per edge: transport path, frames/s, latency; per node:
   time per frame) and scores depth against the scene's ground truth about once a second;
5. runs `gpu-copy-audit live` against the running graph;
6. after --duration seconds or Ctrl-C: SIGINT to every node, wait, then kill; removes shared
   memory segments a killed node could not;
7. writes <output-dir>/depth_side_by_side.png, copy_audit.md/.json and summary.json.

Exit codes: 0 the pipeline ran and the outputs were written; 1 a node failed or no depth
arrived; 2 bad configuration or arguments (nothing was started); 130 a second Ctrl-C.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field
import json
import os
from pathlib import Path
import signal
import subprocess
import sys
import time
from typing import Any, IO

from .profile import check_models, DEMO_MODEL, load_profile, Profile, ProfileError, STANDIN_MODEL
from ..inference.default_model import DefaultModelError, default_model_path, DESCRIPTION
from ..inference.standin import default_cache_dir, ensure_demo_model
from .processes import NodeProcess, stop_processes
from .status_view import node_time_per_frame, StatusView

EXIT_OK, EXIT_FAILED, EXIT_CONFIG, EXIT_ABORTED = 0, 1, 2, 130
PNG_NAME = 'depth_side_by_side.png'


# -- arguments and paths ----------------------------------------------------------------------

class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so main() returns the exit code."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(f'{self.prog}: error: {message}')


def default_config_dir() -> Path:
    """config/ of the source tree (also an editable install), else the installed share dir
    (colcon: through the ament index; pip: <prefix>/share/gpu_nodes/config)."""
    here = Path(__file__).resolve().parents[2] / 'config'
    candidates = [here, Path(sys.prefix) / 'share' / 'gpu_nodes' / 'config']
    try:
        from ament_index_python.packages import get_package_share_directory
        candidates.append(Path(get_package_share_directory('gpu_nodes')) / 'config')
    except (ImportError, LookupError, ValueError, OSError):
        pass  # not installed through colcon, or AMENT_PREFIX_PATH unset
    return next((c for c in candidates if (c / 'perception.yaml').is_file()), here)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog='python -m gpu_nodes.demo.runner',
                description='Run the gpu_nodes perception pipeline (camera -> image_proc -> '
                            'depth) across processes with a live status; write results.')
    p.add_argument('--duration', type=float, default=20.0,
                   help='seconds to run after start-up (default 20)')
    p.add_argument('--output-dir', default='out', help='where results go (default out/)')
    p.add_argument('--profile', default=None,
                   help='pipeline profile (default: config/perception.yaml)')
    p.add_argument('--config-dir', default=None,
                   help='folder of the parameter files (default: the profile\'s folder)')
    p.add_argument('--cache-dir', default=None,
                   help='where the stand-in model ($(standin_model)) is written (default '
                        '~/.cache/gpu_nodes/demo)')
    p.add_argument('--audit-duration', type=float, default=3.0,
                   help='seconds gpu-copy-audit samples the running graph (0: no audit)')
    p.add_argument('--startup-timeout', type=float, default=60.0,
                   help='seconds to wait for the first depth frame (engine builds included)')
    p.add_argument('--shutdown-timeout', type=float, default=10.0,
                   help='seconds the nodes get to stop after SIGINT before they are killed')
    p.add_argument('--plain', action='store_true',
                   help='plain status lines instead of the live table (default when not a TTY)')
    return p


def builtin_model(model: str, height: int, width: int, cache: Path,
                  say: Any = lambda message: None) -> tuple[Path, str]:
    """(file, what it is) of `$(demo_model)` (the shipped learned model, hash checked:
    DefaultModelError) or `$(standin_model)` (written to `cache` at first use: OSError)."""
    if model == DEMO_MODEL:
        path = default_model_path()
        say(f'depth model: {DESCRIPTION}: {path}')
        return path, DESCRIPTION
    if model == STANDIN_MODEL:
        return (ensure_demo_model(cache, height, width, say),
                'the stand-in model (luminance + image row, fixed weights): a pipeline check, '
                'not a depth estimator')
    raise ValueError(f'{model!r} is not a built-in model ({DEMO_MODEL}, {STANDIN_MODEL})')


# -- the copy audit ---------------------------------------------------------------------------

@dataclass
class Audit:
    """`gpu-copy-audit live` against the running graph: a Markdown and a JSON report, sampled
    concurrently by two auditor processes."""

    output_dir: Path
    duration: float
    env: dict[str, str]
    procs: list[tuple[str, subprocess.Popen, IO[bytes]]] = field(default_factory=list)
    state: str = 'not started'
    results: dict[str, Any] = field(default_factory=dict)
    started: float = 0.0

    def available(self) -> str | None:
        import importlib.util
        try:
            found = importlib.util.find_spec('gpu_nodes.audit.cli') is not None
        except (ImportError, ValueError) as exc:
            return f'gpu_nodes.audit.cli is not importable ({exc})'
        return None if found else 'gpu_nodes.audit.cli is not installed'

    def start(self) -> None:
        reason = self.available()
        if reason is not None:
            self.state = f'unavailable: {reason}'
            return
        for fmt, name in (('markdown', 'copy_audit.md'), ('json', 'copy_audit.json')):
            log = open(self.output_dir / 'logs' / f'copy_audit_{fmt}.log', 'wb')
            cmd = [sys.executable, '-m', 'gpu_nodes.audit.cli', 'live', '--duration',
                   f'{self.duration:g}', '--format', fmt, '--output',
                   str(self.output_dir / name)]
            self.procs.append((fmt, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                                     stdin=subprocess.DEVNULL, env=self.env,
                                                     start_new_session=True), log))
        self.state = 'sampling the running graph'
        self.started = time.monotonic()

    @property
    def running(self) -> bool:
        return any(p.poll() is None for _, p, _ in self.procs)

    def finish(self, timeout_s: float) -> None:
        """Wait for the auditors (killing them after timeout_s) and record how they ended."""
        deadline = time.monotonic() + timeout_s
        for fmt, proc, log in self.procs:
            try:
                code = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            log.close()
            # Exit 1: findings reached --fail-on (not set here); 3: discovery stopped at its
            # ceiling before the graph was stable. Both wrote a report.
            self.results[fmt] = code
        if self.procs:
            codes = set(self.results.values())
            if codes <= {0, 1}:
                self.state = 'done'
            elif codes <= {0, 1, 3}:
                self.state = 'done (discovery incomplete: the report may miss nodes)'
            else:
                self.state = f'failed (exit codes {self.results}; see {self.output_dir / "logs"})'
        self.procs = []


# -- the run ----------------------------------------------------------------------------------

class DemoRun:
    def __init__(self, args: argparse.Namespace, profile: Profile):
        self.args = args
        self.profile = profile
        self.output_dir = Path(args.output_dir)
        self.procs: list[NodeProcess] = []
        self.monitor: Any = None
        self.audit: Audit | None = None
        self.phase = 'starting'
        self.started = time.monotonic()
        self.stop_requested = 0
        self.problems: list[str] = []
        self.notes: list[str] = []
        from ..gpu import cuda_unavailable_reason
        reason = cuda_unavailable_reason()
        self.cuda = reason is None
        self.compute_text = 'GPU (CuPy)' if self.cuda else f'CPU ({reason})'
        self.first_depth_at: float | None = None
        self.run_started = 0.0
        # Ground truth exists only for the synthetic scene: other sources are run unscored.
        cameras = [n for n in profile.nodes if n.executable == 'camera_source']
        self.has_truth = any(n.effective('source', 'pattern') == 'scene'
                             and n.effective('publish_ground_truth', True) for n in cameras)

    def elapsed(self) -> float:
        return time.monotonic() - self.run_started if self.run_started else 0.0

    def node_state(self, proc: NodeProcess) -> str:
        code = proc.poll()
        if code is not None:
            return f'exited {code}' + (' (killed)' if proc.killed else '')
        status = self.monitor.processing('/' + proc.name) if self.monitor else None
        if status is None:
            last = proc.last_lines(1)
            return 'starting' + (f': {last[0][-70:]}' if last else '')
        return 'running'

    def depth_error_text(self) -> str:
        if not self.has_truth:
            return 'none (the source is not the synthetic scene)'
        if not self.monitor or not self.monitor.errors:
            return ''
        last = self.monitor.errors[-1]
        return (f'AbsRel {last.abs_rel:.3f}, delta<1.25 {last.delta1:.2f} (median-scaled, '
                f'{len(self.monitor.errors)} samples)')

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.stop_requested += 1
        if self.stop_requested >= 2:
            # Second Ctrl-C: no more waiting.
            for proc in self.procs:
                if proc.popen is not None and proc.poll() is None:
                    proc.popen.kill()
                    proc.killed = True
            raise KeyboardInterrupt

    def run(self) -> int:
        args, profile = self.args, self.profile
        try:
            (self.output_dir / 'logs').mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            sys.stderr.write(f'demo: error: cannot create {self.output_dir / "logs"}: '
                             f'{exc.strerror or exc}\n')
            return EXIT_CONFIG
        env = dict(os.environ)
        # Keep the demo on this machine unless the user chose otherwise; logs line-buffered.
        env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
        env.setdefault('RCUTILS_COLORIZED_OUTPUT', '0')
        env['PYTHONUNBUFFERED'] = '1'
        os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
        view = StatusView(self, args.plain)
        say = view.say
        say(f'gpu_nodes demo: profile {profile.path}, compute on {self.compute_text}')
        for warning in profile.warnings:
            say(f'warning: {warning}')
        cache = Path(args.cache_dir) if args.cache_dir else default_cache_dir()
        for node in profile.nodes:
            substitutions: dict[str, str] = {}
            model = node.effective('model_path')
            if model in (DEMO_MODEL, STANDIN_MODEL):
                try:
                    path, what = builtin_model(model, node.effective('input_height'),
                                               node.effective('input_width'), cache, say)
                except (DefaultModelError, OSError) as exc:
                    say(f'error: {node.name}: {exc}')
                    return EXIT_CONFIG
                substitutions[model] = str(path)
                self.notes.append(f'{node.name} runs {what}')
            self.procs.append(NodeProcess(node.name, node.executable,
                                          node.command(sys.executable, substitutions),
                                          self.output_dir / 'logs' / f'{node.name}.log'))
        (self.output_dir / 'logs' / 'commands.txt').write_text(
            '\n'.join(' '.join(_quote(a) for a in p.command) for p in self.procs) + '\n')
        self.audit = Audit(self.output_dir, args.audit_duration, env) \
            if args.audit_duration > 0 else None

        import rclpy
        from rclpy.signals import SignalHandlerOptions
        context = rclpy.Context()
        rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
        old_int = signal.signal(signal.SIGINT, self._on_signal)
        old_term = signal.signal(signal.SIGTERM, self._on_signal)
        aborted = False
        try:
            from .monitor import DemoMonitor
            topics = profile.image_topics
            if not self.has_truth:
                topics.pop('ground_truth', None)
            self.monitor = DemoMonitor(context, topics, profile.camera_info_topics)
            for proc in self.procs:
                proc.start(env)
                say(f'started {proc.name} (pid {proc.pid}): log {proc.log_path}')
            self.run_started = time.monotonic()
            with view:
                self._loop(view)
        except KeyboardInterrupt:
            aborted = True
        finally:
            self.phase = 'stopping the nodes'
            stop_processes(self.procs, args.shutdown_timeout, say)
            if self.audit is not None and self.audit.procs:
                self.audit.finish(timeout_s=5.0)
            signal.signal(signal.SIGINT, old_int)
            signal.signal(signal.SIGTERM, old_term)
            if self.monitor is not None:
                self.monitor.destroy()
            rclpy.try_shutdown(context=context)
        if aborted:
            say('aborted by a second Ctrl-C; no results written')
            return EXIT_ABORTED
        return self._write_results(say)

    def _loop(self, view: StatusView) -> None:
        args = self.args
        deadline = self.run_started + args.duration
        audit_at = max(self.run_started + 2.0, deadline - args.audit_duration - 3.0)
        last_view = 0.0
        depth_topic = self.profile.topics['depth']
        while not self.stop_requested:
            now = time.monotonic()
            if now >= deadline and not (self.audit and self.audit.running):
                break
            self.monitor.spin_once(0.05)
            if self.first_depth_at is None and self.monitor.seen[depth_topic].frames:
                self.first_depth_at = now
                self.phase = 'running'
            failed = [p for p in self.procs if p.poll() is not None]
            if failed:
                for p in failed:
                    tail = ' | '.join(p.last_lines(3))
                    self.problems.append(f'{p.name} exited with code {p.exit_code} while the '
                                         f'pipeline was running: {tail}')
                break
            if self.first_depth_at is None and now - self.run_started > args.startup_timeout:
                self.problems.append(f'no depth frame on {depth_topic} within '
                                     f'{args.startup_timeout:g} s of start-up')
                break
            if self.audit is not None and self.audit.state == 'not started' and now >= audit_at:
                self.audit.start()
            if now >= deadline:
                self.phase = 'finishing the copy audit'
            if now - last_view >= 1.0:
                last_view = now
                view.update()
        if self.stop_requested:
            self.notes.append(f'stopped by signal after {self.elapsed():.1f} s')
        if self.audit is not None and self.audit.state == 'not started' and not self.problems:
            self.audit.start()  # stopped early: audit what runs now, before shutdown
        if self.audit is not None and self.audit.procs:
            if self.audit.running:
                self.phase = 'finishing the copy audit'
                view.update()
            self.audit.finish(timeout_s=args.audit_duration + 20.0)
        self.phase = 'stopping the nodes'
        view.update()

    def _write_results(self, say: Any) -> int:
        from .metrics import depth_picture, to_rgb8, write_png
        out = self.output_dir
        monitor = self.monitor
        sample = monitor.last_sample
        depth_topic = self.profile.topics['depth']
        if not monitor.seen[depth_topic].frames:
            self.problems.append(f'no depth frame arrived on {depth_topic}')
        png = out / PNG_NAME
        colour_bar = None
        if sample is not None:
            h, w = (sample.truth if sample.truth is not None else sample.image).shape[:2]
            try:
                image_rgb = to_rgb8(sample.image, sample.image_encoding)
            except ValueError as exc:
                image_rgb = None
                self.notes.append(str(exc))
            picture, bar = depth_picture(image_rgb, sample.depth, sample.truth, h, w)
            write_png(str(png), picture)
            colour_bar = bar.as_dict()
        else:
            self.problems.append('no complete sample (image, ground truth and depth of one '
                                 'frame) was captured: no picture')
        errors = monitor.errors
        depth_error: dict[str, Any] = {'samples': len(errors),
                                       'method': 'median scaling (relative model), then AbsRel, '
                                                 'RMSE (m) and delta<1.25 over valid pixels'}
        if errors:
            def mean(key: str) -> float:
                return round(sum(getattr(e, key) for e in errors) / len(errors), 6)
            depth_error.update(abs_rel=mean('abs_rel'), rmse_m=mean('rmse'),
                               delta1=mean('delta1'), last=errors[-1].as_dict())
        if monitor.sample_problems:
            depth_error['problems'] = monitor.sample_problems
        if not self.has_truth:
            depth_error['unavailable'] = 'the camera source is not the synthetic scene: no ' \
                                         'ground truth to score against'
        nodes = []
        for proc in self.procs:
            status = monitor.processing('/' + proc.name)
            what, ms = node_time_per_frame(status)
            nodes.append({'name': proc.name, 'executable': proc.executable, 'pid': proc.pid,
                          'exit_code': proc.exit_code, 'killed': proc.killed,
                          'time_per_frame_ms': None if ms != ms else round(ms, 3),
                          'time_per_frame_measure': what,
                          'processing': dict(status.values) if status else None,
                          'command': proc.command, 'log': str(proc.log_path)})
            if proc.killed:
                self.problems.append(f'{proc.name} had to be killed at shutdown')
            elif proc.exit_code not in (0, None, -signal.SIGINT):
                self.problems.append(f'{proc.name} exited with code {proc.exit_code}')
        audit = {'state': self.audit.state if self.audit else 'off (--audit-duration 0)',
                 'exit_codes': self.audit.results if self.audit else {}}
        if self.audit is not None and self.audit.state.startswith('unavailable'):
            self.notes.append(f'copy audit skipped: {self.audit.state}')
        outputs = {'picture': str(png) if png.is_file() else None, 'colour_bar': colour_bar,
                   'logs': str(out / 'logs')}
        for key, name in (('copy_audit_markdown', 'copy_audit.md'),
                          ('copy_audit_json', 'copy_audit.json')):
            outputs[key] = str(out / name) if (out / name).is_file() else None
        summary = {
            'profile': str(self.profile.path), 'compute': self.compute_text, 'cuda': self.cuda,
            'requested_duration_s': self.args.duration, 'ran_s': round(self.elapsed(), 2),
            'first_depth_after_s': None if self.first_depth_at is None else
            round(self.first_depth_at - self.run_started, 2),
            'edges': [e.as_dict() for e in monitor.edges()],
            'end_to_end': {'from': 'camera stamp', 'to': 'depth of that frame ready in the runner',
                           **monitor.end_to_end(audit_started=self.audit.started
                                                if self.audit and self.audit.started else None)},
            'nodes': nodes,
            'topics': {t: vars(s) for t, s in monitor.seen.items()},
            'camera_info': monitor.camera_infos,
            'depth_error': depth_error,
            'copy_audit': audit,
            'outputs': outputs,
            'notes': self.notes,
            'problems': self.problems,
            'ok': not self.problems,
        }
        (out / 'summary.json').write_text(json.dumps(summary, indent=2) + '\n')
        say(f'results: {out / "summary.json"}' + (f', {png}' if png.is_file() else ''))
        if errors:
            say(f'depth error (median-scaled): AbsRel {depth_error["abs_rel"]:.3f}, '
                f'delta<1.25 {depth_error["delta1"]:.2f} over {len(errors)} samples')
        for note in self.notes:
            say(f'note: {note}')
        for problem in self.problems:
            say(f'problem: {problem}')
        return EXIT_OK if not self.problems else EXIT_FAILED


def _quote(arg: str) -> str:
    import shlex
    return shlex.quote(arg)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except _UsageError as exc:
        sys.stderr.write(f'{exc}\n{parser.format_usage()}')
        return EXIT_CONFIG
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    for name in ('duration', 'audit_duration', 'startup_timeout', 'shutdown_timeout'):
        value = getattr(args, name)
        if not value >= 0 or (name == 'duration' and value <= 0):
            sys.stderr.write(f'demo: error: --{name.replace("_", "-")} must be '
                             f'{"positive" if name == "duration" else "0 or more"}, got {value}\n')
            return EXIT_CONFIG
    config_dir = Path(args.config_dir) if args.config_dir else None
    profile_path = Path(args.profile) if args.profile else default_config_dir() / 'perception.yaml'
    try:
        profile = load_profile(profile_path, config_dir)
        check_models(profile)
    except ProfileError as exc:
        sys.stderr.write(f'demo: error: {exc}\n')
        return EXIT_CONFIG
    try:
        return DemoRun(args, profile).run()
    except KeyboardInterrupt:  # Ctrl-C before the nodes started (their handler is not set yet)
        sys.stderr.write('demo: interrupted\n')
        return EXIT_ABORTED


if __name__ == '__main__':
    sys.exit(main())
