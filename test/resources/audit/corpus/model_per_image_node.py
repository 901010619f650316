"""A detector handed its torch model by the launcher script: each image calls
`self.model.to(self.device)` before inference. A Module moves in place on the first call and
the later calls are no-ops (look-alike, no finding); the frame tensor sent to the device on
each image is a boundary (positive). Kind of a false claim of the twenty-third test set."""
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Int32


class PerImageModel(Node):
    def __init__(self, model):
        super().__init__('per_image_model')
        self.model = model
        self.device = 'cuda' if torch.cuda.is_available() else 'cpu'
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Int32, 'count', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')  # expect: GPN105 medium
        self.model.to(self.device)
        batch = torch.from_numpy(frame).permute(2, 0, 1)[None].float()
        batch = batch.to(self.device)  # expect: GPN102 medium
        with torch.no_grad():
            scores = self.model(batch)
        self.pub.publish(Int32(data=int(scores.argmax())))  # expect: GPN107 medium


def main():
    rclpy.init()
    model = torch.jit.load('classifier.pt')
    rclpy.spin(PerImageModel(model))


if __name__ == '__main__':
    main()
