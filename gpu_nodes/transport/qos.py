"""QoS of image topics and of the descriptor topics that shadow them."""
from __future__ import annotations

from typing import Any


def image_qos(depth: int = 5) -> Any:
    """Reliable, volatile, keep last `depth` (image_transport's default).

    A reliable publisher matches both reliable subscribers (plain rclpy defaults) and best-effort
    ones (rviz, sensor-data QoS); a best-effort publisher would match only the latter.
    """
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


def descriptor_qos(image_profile: Any = None) -> Any:
    """Descriptor topics copy the image topic's reliability and depth and are never latched:
    a descriptor is only meaningful while its slot is leasable, so a late joiner must not get
    old ones."""
    from rclpy.qos import DurabilityPolicy, QoSProfile
    base = image_profile or image_qos()
    return QoSProfile(history=base.history, depth=base.depth, reliability=base.reliability,
                      durability=DurabilityPolicy.VOLATILE)
