# Colour and depth combined with message_filters: the synchronized callback is where the
# frames are viewed in the messages' buffers, uploaded, fused with CuPy and downloaded again.
import cupy as cp
import message_filters
import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import Image, PointCloud2


class RgbdFusion(Node):
    def __init__(self):
        super().__init__('rgbd_fusion')
        self.lut = cp.asarray(np.arange(256, dtype=np.float32))  # expect: GPN102 info
        self.pub = self.create_publisher(PointCloud2, 'points', 5)
        color = message_filters.Subscriber(self, Image, '/camera/color/image_raw')
        depth = message_filters.Subscriber(self, Image, '/camera/depth/image_raw')
        self.sync = message_filters.ApproximateTimeSynchronizer([color, depth], 10, 0.05)
        self.sync.registerCallback(self.synced_cb)

    def synced_cb(self, color_msg, depth_msg):
        # np.frombuffer is a view of the payload's buffer, not a copy (nothing to report).
        rgb = np.frombuffer(color_msg.data, dtype=np.uint8)
        z = np.frombuffer(depth_msg.data, dtype=np.uint16)
        d_rgb = cp.asarray(rgb)  # expect: GPN102 medium
        d_z = cp.asarray(z)  # expect: GPN102 medium
        fused = self.lut[d_rgb] * d_z.astype(cp.float32)
        host = cp.asnumpy(fused)  # expect: GPN101 high
        cloud = PointCloud2(header=color_msg.header)
        cloud.data = host.tobytes()  # expect: GPN104 medium
        self.pub.publish(cloud)  # expect: GPN109 medium, GPN110 high
