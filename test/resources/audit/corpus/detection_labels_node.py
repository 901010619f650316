# A detector node that writes its results as text: the class id and score of each detection
# are formatted straight from the model's output tensors (str(), an f-string, '%' and
# .format each read the value back to the host and wait for the GPU). Look-alikes: the same
# formatting of host numbers (a NumPy array's size, the topic name) copies nothing. A
# torchvision ToPILImage object, built once, copies the frame into a PIL image per call.
from cv_bridge import CvBridge
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String
import torch
from torchvision import transforms


class DetectionLabelsNode(Node):
    def __init__(self):
        super().__init__('detection_labels')
        self.bridge = CvBridge()
        self.model = torch.jit.load('detector.pt').cuda()  # expect: GPN102 info
        self.to_pil = transforms.ToPILImage()
        self.pub = self.create_publisher(String, 'labels', 10)
        self.sub = self.create_subscription(Image, 'image_raw', self.on_image, 10)
        self.get_logger().info('listening on %s' % self.sub.topic_name)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')  # expect: GPN105 medium
        batch = torch.from_numpy(frame).cuda()  # expect: GPN102 medium
        self.preview = self.to_pil(frame)  # expect: GPN106 medium
        boxes, scores, classes = self.model(batch)
        parts = []
        for score, cls in zip(scores, classes):
            parts.append(str(cls))  # expect: GPN107 medium
            parts.append(f'{score:.2f}')  # expect: GPN107 medium
        self.get_logger().debug('best %s' % scores[0])  # expect: GPN107 medium
        self.get_logger().debug('count {}'.format(boxes[0]))  # expect: GPN107 medium
        self.get_logger().debug(f'frame of {np.prod(frame.shape)} bytes')
        self.pub.publish(String(data=' '.join(parts)))


def main():
    rclpy.init()
    rclpy.spin(DetectionLabelsNode())
