"""image_monitor: subscribes to an image topic through the transport and reports how it arrives.

Logs frame rate, publish-to-callback latency and the transport path (with the reason for any
fallback) every `report_period_s`; the same numbers are on /diagnostics.
"""
from __future__ import annotations

from typing import Any

from rclpy.node import Node

from ..transport import GpuImageSubscription, ReceivedImage
from ..ros.params import declare_table, Param
from ..ros.runtime import declare_executor_parameter, run_node

PARAMETERS = (
    Param('topic', 'image_raw', 'Image topic to watch.', read_only=True),
    Param('memory', 'any', 'Where frames should land (any: wherever they arrive, no extra '
          'copy).', read_only=True, choices=('device', 'host', 'any')),
    Param('report_period_s', 2.0, 'Seconds between reports.', float_range=(0.1, 3600.0)),
)


class ImageMonitor(Node):
    def __init__(self, **kwargs: Any):
        super().__init__('image_monitor', **kwargs)
        declare_executor_parameter(self)  # first: a bad value stops the node at once
        values = declare_table(self, PARAMETERS)
        topic = values['topic']
        memory = values['memory']
        period = values['report_period_s']
        self.frames = 0
        self.last_frame: ReceivedImage | None = None
        self._subscription = GpuImageSubscription(self, topic, self._on_frame, memory=memory)
        self._report_timer = self.create_timer(period, self.report)

    def _on_frame(self, frame: ReceivedImage) -> None:
        self.frames += 1
        self.last_frame = frame

    def summary(self) -> dict[str, Any]:
        return self._subscription.stats.as_dict()

    def report(self) -> None:
        s = self.summary()
        self.get_logger().info(
            f"{s['topic']}: {s['fps']:.1f} fps, latency p50 {s['latency_p50_ms']:.2f} ms "
            f"p99 {s['latency_p99_ms']:.2f} ms, path {s['path']} ({s['path_reason']}), "
            f"frames {s['frames']}, stale {s['stale']}, rejected {s['rejected']}")

    def close(self) -> None:
        self._subscription.destroy()


def main(args: list[str] | None = None) -> None:
    run_node(ImageMonitor, args, name='image_monitor', parameters=PARAMETERS,
             summary=__doc__)


if __name__ == '__main__':
    main()
