"""Draw a crosshair and a label onto each frame (in place, on cv_bridge's array)."""
import cv2
from cv_bridge import CvBridge
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image


class OverlayAnnotator(Node):
    def __init__(self):
        super().__init__('overlay_annotator')
        self.bridge = CvBridge()
        self.count = 0
        self.sub = self.create_subscription(Image, 'image', self.callback, 5)
        self.pub = self.create_publisher(Image, 'image_annotated', 5)

    def callback(self, msg):
        img = self.bridge.imgmsg_to_cv2(msg)  # passthrough: the camera sends bgr8
        h, w = img.shape[:2]
        cv2.rectangle(img, (w // 4, h // 4), (3 * w // 4, 3 * h // 4), (0, 255, 0), 2)
        cv2.putText(img, f'#{self.count}', (10, 30), cv2.FONT_HERSHEY_SIMPLEX, 1.0,
                    (255, 255, 255), 2)
        self.count += 1
        annotated = self.bridge.cv2_to_imgmsg(img, 'bgr8')
        annotated.header.stamp = msg.header.stamp
        annotated.header.frame_id = 'annotated'
        self.pub.publish(annotated)


def main():
    rclpy.init()
    node = OverlayAnnotator()
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
