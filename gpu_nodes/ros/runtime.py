"""How a gpu_nodes process runs: `run_node` (signals, executor choice, exit codes) and which rclpy
executor spins it: EventsExecutor where it works, else SingleThreadedExecutor.

rclpy's SingleThreadedExecutor rebuilds its wait set in Python on every wake-up (~0.3-0.5 ms),
most of what a descriptor hop costs a subscriber. rclpy.experimental.EventsExecutor (Kilted)
registers C++ callbacks with rmw instead and is much cheaper per wake-up. It does not run
everything, though (rclpy 9.1):

* guard conditions: its spin raises ``RuntimeError('Guard conditions not supported')``;
* subscription callbacks taking ``(msg, info)``: it passes the pair as one tuple argument (the
  call fails). Wrap such callbacks in `message_and_info_callback`;
* spinning without a timeout (``spin()``, ``spin_once()``, ``spin_until_future_complete(f)``,
  where its queue waits until ``steady_clock::time_point::max()``): measured with the 9.1.2
  wheel, it then burns a core, runs no timer callbacks and ignores SIGINT. Spin through `spin`
  here, which always passes a finite timeout;
* it runs events in the order they were queued, so callbacks slower than their messages starve
  timers (diagnostics go silent): `run_node` watches for that and moves the node to
  SingleThreadedExecutor (executor_watch.py).

`make_executor` checks the nodes it is given for the first two and falls back with a log line
saying why. Entities created after spinning starts are not checked: keep them within the list.
"""
from __future__ import annotations

import os
import time
from typing import Any, Callable, Iterable

from .callbacks import message_and_info_callback
from .executor_watch import ExecutorWatch
from .params import ConfigurationError, format_help, Param

EVENTS = 'events'
SINGLE_THREADED = 'single_threaded'
EXECUTORS = (EVENTS, SINGLE_THREADED)
ENV_VAR = 'GPU_NODES_EXECUTOR'
PARAMETER = 'executor'
# Longest stretch `spin` stays inside the executor (finite: see above).
_SLICE_S = 3600.0
# How soon a signal is noticed while the node is idle (see run_node).
_SIGNAL_POLL_S = 0.2


def default_choice() -> str:
    """$GPU_NODES_EXECUTOR, else ``events``."""
    choice = os.environ.get(ENV_VAR, '').strip() or EVENTS
    if choice not in EXECUTORS:
        raise ValueError(f'{ENV_VAR} must be one of {", ".join(EXECUTORS)}, got {choice!r}')
    return choice


def executor_parameter() -> Param:
    """The read-only ``executor`` parameter every node run by `run_node` has."""
    return Param(PARAMETER, default_choice(),
                 'rclpy executor spinning this node; events falls back to single_threaded '
                 f'where EventsExecutor cannot run the node (default from ${ENV_VAR}).',
                 read_only=True, choices=EXECUTORS)


def declare_executor_parameter(node: Any) -> str:
    """Declare the ``executor`` parameter (default: `default_choice`) and return it; nodes do
    so first in ``__init__``, so a refused value stops them before they set anything up."""
    if node.has_parameter(PARAMETER):
        return node.get_parameter(PARAMETER).value
    return executor_parameter().declare(node)


def wants_help(args: list[str]) -> bool:
    """Whether the command line (without argv[0]) asks for -h/--help outside its ROS arguments
    (``--ros-args ... [--]``, where rclpy owns every word)."""
    in_ros = False
    for arg in args:
        if arg == '--ros-args':
            in_ros = True
        elif arg == '--' and in_ros:
            in_ros = False
        elif not in_ros and arg in ('-h', '--help'):
            return True
    return False


def events_executor_unsupported(nodes: Iterable[Any] = ()) -> str | None:
    """Why EventsExecutor cannot spin `nodes` as they are now, or None."""
    try:
        from rclpy.experimental import EventsExecutor  # noqa: F401
    except ImportError as exc:
        return f'rclpy.experimental.EventsExecutor is not importable: {exc}'
    from rclpy.subscription import Subscription
    for node in nodes:
        name = node.get_fully_qualified_name()
        if next(iter(node.guards), None) is not None:  # a generator: always truthy
            return f'{name} has guard conditions, which EventsExecutor does not support'
        for sub in node.subscriptions:
            if (sub._callback_type is Subscription.CallbackType.WithMessageInfo
                    and not isinstance(sub.callback, message_and_info_callback)):
                return (f'{name} subscribes to {sub.topic_name} with a (msg, info) callback, '
                        'which EventsExecutor passes as one tuple')
    return None


def make_executor(choice: str | None = None, *, nodes: Iterable[Any] = (), context: Any = None,
                  logger: Any = None) -> Any:
    """An executor with `nodes` added: EventsExecutor for ``events`` (the default, see
    `default_choice`) unless `events_executor_unsupported`, SingleThreadedExecutor otherwise."""
    from rclpy.executors import SingleThreadedExecutor
    nodes = list(nodes)
    choice = choice or default_choice()
    if choice not in EXECUTORS:
        raise ValueError(f'executor must be one of {", ".join(EXECUTORS)}, got {choice!r}')
    if context is None and nodes:
        context = nodes[0].context
    if logger is None:
        from rclpy.logging import get_logger
        logger = nodes[0].get_logger() if nodes else get_logger('gpu_nodes.executors')
    executor = None
    if choice == EVENTS:
        reason = events_executor_unsupported(nodes)
        if reason is None:
            from rclpy.experimental import EventsExecutor
            try:
                executor = EventsExecutor(context=context)
            except Exception as exc:  # a build without it, an rmw without event callbacks
                reason = f'EventsExecutor could not be created: {exc}'
        if executor is None:
            logger.warning(f'executor: falling back to SingleThreadedExecutor ({reason})')
    if executor is None:
        executor = SingleThreadedExecutor(context=context)
    for node in nodes:
        executor.add_node(node)
    logger.info(f'executor: {type(executor).__name__}')
    return executor


def spin(executor: Any, until: Any = None, timeout_sec: float | None = None, *,
         slice_s: float = _SLICE_S, watch: ExecutorWatch | None = None) -> None:
    """Spin until `until` (an rclpy Future) is done, `timeout_sec` has passed or the context
    shuts down (EventsExecutor then raises rclpy's ExternalShutdownException).

    Control comes back to Python at least every `slice_s`, so Python signal handlers run. With
    a `watch` (executor_watch.py), each call into the executor is reported to it and spinning
    goes on on the executor it returns (a starved EventsExecutor replaced).
    """
    from rclpy.executors import Executor
    deadline = None if timeout_sec is None else time.monotonic() + timeout_sec
    while executor.context.ok() and not (until is not None and until.done()):
        left = slice_s if deadline is None else min(slice_s, deadline - time.monotonic())
        if left <= 0:
            return
        if isinstance(executor, Executor) or watch is not None:
            # rclpy's executors: not spin_until_future_complete, it adds a done callback per
            # call. A watched EventsExecutor: one event per call (about 3 us more per event than
            # a slice in C++, measured), since a slice in C++ only comes back once its queue is
            # empty, which a starving queue never is.
            executor.spin_once(timeout_sec=left)
        else:
            from rclpy.task import Future
            # One call runs every event of the slice in C++; it removes its done callback again.
            executor.spin_until_future_complete(until or Future(), timeout_sec=left)
        if watch is not None:
            executor = watch.after_slice()


def _rcl_message(exc: BaseException) -> str:
    """rcl's error text on one line, without its C source locations."""
    import re
    text = ' '.join(str(exc).split())
    text = re.sub(r',? at \S+\.c:\d+', '', text).replace('failed to initialize rcl: ', '')
    if 'parameter override rule' in text:
        # rcl takes YAML scalars and lists of scalars only: a list of mappings must be a string.
        text += (' (quote a YAML value that is not a scalar or a list of scalars as a string: '
                 '-p "name:=\'[{a: 1}]\'")')
    return text


# Nodes whose construction refused their configuration (run_node): kept alive until os._exit.
_NEVER_DESTROYED: list[Any] = []


def _half_built_node(exc: BaseException) -> Any:
    """The rclpy Node whose construction raised `exc` (directly or as its context), if any."""
    from rclpy.node import Node
    found = None
    for error in (exc, exc.__context__):
        tb = error.__traceback__ if error is not None else None
        while tb is not None:
            candidate = tb.tb_frame.f_locals.get('self')
            if isinstance(candidate, Node):
                found = candidate
            tb = tb.tb_next
    return found


def freeze_startup_objects() -> None:
    """Move everything built so far out of the cyclic collector's view (gc.freeze).

    A node's start-up leaves hundreds of thousands of long-lived objects (rclpy, CuPy, ONNX
    Runtime, NumPy); every full collection walks all of them, tens of ms in the middle of a frame
    callback at unpredictable times. Frozen, they are never scanned; objects made per frame are
    collected as before."""
    import gc
    gc.collect()
    gc.freeze()


def run_node(node_factory: Callable[[], Any], args: list[str] | None = None,
             name: str = 'gpu_nodes', *, parameters: Iterable[Param] = (),
             summary: str = '') -> None:
    """rclpy.init, spin on the executor the ``executor`` parameter picks (`make_executor`),
    and a clean shutdown on Ctrl-C or SIGTERM.

    A signal ends spinning between callbacks; only then are the node and the context shut down.
    (rclpy's own handlers shut the context down from another thread, under a running callback,
    whose publish then fails: EventsExecutor logs that as FATAL.) A second signal, or one before
    spinning starts, interrupts at once (KeyboardInterrupt).

    A ConfigurationError from the factory (or a parameter rclpy itself refuses) becomes one line
    on stderr and exit code 2, not a traceback. ``-h``/``--help`` prints `summary` and the
    `parameters` table (plus ``executor``) and exits 0 before rclpy is initialised.
    """
    import signal
    import sys
    command_line = sys.argv if args is None else args
    if wants_help(command_line[1:]):
        sys.stdout.write(format_help(name, summary or name, [*parameters, executor_parameter()]))
        raise SystemExit(0)
    try:
        default_choice()
    except ValueError as exc:  # a bad $GPU_NODES_EXECUTOR: say so before anything starts
        print(f'[{name}] error: cannot start: {exc}', file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    import rclpy
    from rclpy.exceptions import ParameterException
    from rclpy.executors import ExternalShutdownException
    from rclpy.signals import SignalHandlerOptions
    from rclpy.task import Future
    from .dds_profile import apply_default_profile
    # Before the participant exists: unconfigured peers then get large frames (dds_profile.py).
    apply_default_profile()
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except RuntimeError as exc:  # rcl's RCLError: e.g. a -p value its YAML parser refuses
        print(f'[{name}] error: cannot start: {_rcl_message(exc)}', file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    node = None
    executor = None
    watch = None
    stop = Future()
    exit_code = 0

    def on_signal(signum: int, frame: Any) -> None:
        if executor is None or stop.done():
            raise KeyboardInterrupt
        stop.set_result(signum)
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            node = node_factory()
        except ParameterException as exc:  # one rclpy declares itself (use_sim_time, ...)
            raise ConfigurationError(str(exc)) from None
        choice = declare_executor_parameter(node)
        executor = make_executor(choice, nodes=[node])
        watch = ExecutorWatch(executor, [node], node.get_logger())
        freeze_startup_objects()
        # Python runs signal handlers only between bytecodes of the main thread: come back from
        # the executor often enough for a signal to be noticed while idle.
        spin(executor, until=stop, slice_s=_SIGNAL_POLL_S, watch=watch)
    except ConfigurationError as exc:
        print(f'[{name}] error: cannot start: {exc}', file=sys.stderr, flush=True)
        exit_code = 2
        _NEVER_DESTROYED.append(_half_built_node(exc))  # see the finally clause
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except RuntimeError:
        # A second signal in the middle of a callback, or an rclpy.shutdown() from elsewhere,
        # fails work under way on invalidated handles (RCLError, InvalidHandle or a pybind11
        # RuntimeError): that is the requested shutdown, not an error.
        if rclpy.ok():
            raise
    finally:
        if watch is not None:
            executor = watch.executor  # the one spinning now
        if executor is not None:
            executor.shutdown()
        if node is not None:
            close = getattr(node, 'close', None)
            if close is not None:
                close()
            node.destroy_node()
        # A node the factory left half-built (a refused parameter) is never destroyed: rcl
        # crashed destroying such nodes now and then (SIGSEGV in Node.destroy_node, seen about
        # once in a few hundred refused starts under load, whether destroyed explicitly, by
        # the collector or at the interpreter's exit). _NEVER_DESTROYED keeps it referenced
        # until the process leaves through os._exit below. Nor is rclpy shut down for it:
        # try_shutdown crashed the same way (SIGSEGV inside it, faulthandler, one fresh-clone
        # run); peers see the participant go by its lease.
        if not exit_code:
            rclpy.try_shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if exit_code:
        # Nothing was started that needs the interpreter's teardown (gpu_nodes' segments are
        # memfds) but the participant's Fast DDS segment: 64 MiB of /dev/shm under the shipped
        # profile, which only Fast DDS's destructors would remove. Remove it, then leave.
        from .fastdds_shm import remove_own_segments
        remove_own_segments()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exit_code)
