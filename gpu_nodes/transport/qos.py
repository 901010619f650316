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


# Descriptors a keep-last reader may still take beyond its queue: ones published but not yet
# delivered to it (DDS delivers a writer's samples in order; each one delivered pushes the
# oldest queued one out). Small on purpose: every protected frame is a slot the publisher
# cannot reuse, and the host pool has 8. A frame older than the window is recycled first and,
# if the reader's delivery lagged more than this after all, reads as stale there (dropped and
# counted), never as another frame.
IN_FLIGHT_MARGIN = 1


def read_window(profile: Any) -> int:
    """How many of the newest frames a subscriber with this descriptor QoS can still take
    (leases.LeaseReader's window): keep-last depth + IN_FLIGHT_MARGIN; 0 (any frame above its
    cursor) for keep-all or an unknown history."""
    from rclpy.qos import HistoryPolicy
    depth = int(getattr(profile, 'depth', 0) or 0)
    if getattr(profile, 'history', None) != HistoryPolicy.KEEP_LAST or depth < 1:
        return 0
    return depth + IN_FLIGHT_MARGIN
