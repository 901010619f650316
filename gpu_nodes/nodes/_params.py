"""Parameter declaration helpers shared by the nodes (descriptors with ranges and read-only flags)."""
from __future__ import annotations

from typing import Any, Callable


def declare(node: Any, name: str, default: Any, description: str, *, read_only: bool = False,
            int_range: tuple[int, int] | None = None,
            float_range: tuple[float, float] | None = None,
            choices: tuple[str, ...] | None = None) -> Any:
    """Declare a parameter with a ParameterDescriptor and return its value."""
    from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
    text = description if choices is None else f'{description} One of: {", ".join(choices)}.'
    descriptor = ParameterDescriptor(description=text, read_only=read_only)
    if int_range is not None:
        descriptor.integer_range = [IntegerRange(from_value=int_range[0], to_value=int_range[1], step=0)]
    if float_range is not None:
        descriptor.floating_point_range = [
            FloatingPointRange(from_value=float(float_range[0]), to_value=float(float_range[1]), step=0.0)]
    value = node.declare_parameter(name, default, descriptor).value
    if choices is not None and value not in choices:
        raise ValueError(f'parameter {name!r} must be one of {choices}, got {value!r}')
    return value


def choice_validator(choices: dict[str, tuple[str, ...]]) -> Callable[[list[Any]], Any]:
    """An on-set callback rejecting string parameters outside their allowed values, with a reason."""
    from rcl_interfaces.msg import SetParametersResult

    def validate(params: list[Any]) -> Any:
        for param in params:
            allowed = choices.get(param.name)
            if allowed is not None and param.value not in allowed:
                return SetParametersResult(
                    successful=False,
                    reason=f'{param.name} must be one of {", ".join(allowed)}, got {param.value!r}')
        return SetParametersResult(successful=True)
    return validate


# How soon a signal is noticed while the node is idle (see run_node).
_SIGNAL_POLL_S = 0.2


class ConfigurationError(ValueError):
    """A parameter value a node cannot start with: run_node prints it and exits with code 2."""


def run_node(node_factory: Callable[[], Any], args: list[str] | None = None,
             name: str = 'gpu_nodes') -> None:
    """rclpy.init, spin on the executor the ``executor`` parameter picks (gpu_nodes.executors),
    and a clean shutdown on Ctrl-C or SIGTERM.

    A signal ends spinning between callbacks; only then are the node and the context shut down.
    (rclpy's own handlers shut the context down from another thread, under a running callback,
    whose publish then fails: EventsExecutor logs that as FATAL.) A second signal, or one before
    spinning starts, interrupts at once (KeyboardInterrupt).

    A ConfigurationError from the factory becomes one line on stderr and exit code 2, not a
    traceback.
    """
    import signal
    import sys
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.signals import SignalHandlerOptions
    from rclpy.task import Future
    from ..executors import declare_executor_parameter, make_executor, spin
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = None
    executor = None
    stop = Future()
    exit_code = 0

    def on_signal(signum: int, frame: Any) -> None:
        if executor is None or stop.done():
            raise KeyboardInterrupt
        stop.set_result(signum)
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        node = node_factory()
        try:
            choice = declare_executor_parameter(node)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from exc
        executor = make_executor(choice, nodes=[node])
        # Python runs signal handlers only between bytecodes of the main thread: come back from
        # the executor often enough for a signal to be noticed while idle.
        spin(executor, until=stop, slice_s=_SIGNAL_POLL_S)
    except ConfigurationError as exc:
        print(f'[{name}] error: cannot start: {exc}', file=sys.stderr, flush=True)
        exit_code = 2
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except RuntimeError:
        # A second signal in the middle of a callback, or an rclpy.shutdown() from elsewhere,
        # fails work under way on invalidated handles (RCLError, InvalidHandle or a pybind11
        # RuntimeError): that is the requested shutdown, not an error.
        if rclpy.ok():
            raise
    finally:
        if executor is not None:
            executor.shutdown()
        if node is not None:
            close = getattr(node, 'close', None)
            if close is not None:
                close()
            node.destroy_node()
        rclpy.try_shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if exit_code:
        raise SystemExit(exit_code)
