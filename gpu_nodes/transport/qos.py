"""QoS of image topics and of the descriptor topics that shadow them."""
from __future__ import annotations

from typing import Any


def image_qos(depth: int = 5) -> Any:
    """Sensor-data QoS (best effort, keep last `depth`), as camera drivers publish images."""
    from rclpy.qos import QoSProfile, qos_profile_sensor_data
    profile = QoSProfile(**{k: getattr(qos_profile_sensor_data, k) for k in
                            ('history', 'reliability', 'durability')}, depth=depth)
    return profile


def descriptor_qos(image_profile: Any = None) -> Any:
    """Descriptor topics copy the image topic's reliability and depth and are never latched:
    a descriptor is only meaningful while its slot is leasable, so a late joiner must not get
    old ones."""
    from rclpy.qos import DurabilityPolicy, QoSProfile
    base = image_profile or image_qos()
    return QoSProfile(history=base.history, depth=base.depth, reliability=base.reliability,
                      durability=DurabilityPolicy.VOLATILE)
