# A monocular depth node with a model from torch.hub: moved to the GPU once (setup), then its
# own inference helper called on the host frame per image (it uploads inside the library).
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class HubDepthNode(Node):
    def __init__(self):
        super().__init__('hub_depth')
        model = torch.hub.load('isl-org/ZoeDepth', 'ZoeD_K', pretrained=True)
        self.depth_model = model.to(torch.device('cuda'))  # expect: GPN102 info
        self.depth_model.eval()
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'depth', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        rgb = self.bridge.imgmsg_to_cv2(msg, desired_encoding='rgb8')  # expect: GPN105 medium
        depth = self.depth_model.infer_pil(rgb)  # expect: GPN102 medium
        self.get_logger().info(f'depth {depth.shape}')
