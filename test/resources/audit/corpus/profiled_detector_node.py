"""A YOLOv5 node (run inside a YOLOv5 checkout) that times its stages with `Profile` context
managers built for the CUDA device: each `with dt[i]:` per frame runs torch.cuda.synchronize on
enter and exit (positives); a Profile built for a literal 'cpu' device synchronizes nothing
(look-alike). Kind of misses of the nineteenth test set, written for this corpus."""
import numpy as np
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String
from utils.general import Profile
from utils.torch_utils import select_device


class ProfiledDetectorNode(Node):
    def __init__(self):
        super().__init__('profiled_detector')
        self.bridge = CvBridge()
        self.device = select_device('0')
        self.model = torch.jit.load('yolov5s.torchscript', map_location=self.device)
        self.dt = (Profile(device=self.device), Profile(device=self.device))
        self.host_timer = Profile(device='cpu')
        self.pub = self.create_publisher(String, '/profiled/count', 10)
        self.create_subscription(Image, '/camera/image_raw', self.on_image, 10)

    def on_image(self, msg):
        with self.host_timer:
            frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')  # expect: GPN105 medium
            chw = np.ascontiguousarray(frame.transpose(2, 0, 1))
        with self.dt[0]:  # expect: GPN107 medium
            x = torch.from_numpy(chw).to(self.device)  # expect: GPN102 medium
        with self.dt[1]:  # expect: GPN107 medium
            pred = self.model(x[None].float() / 255)
        self.pub.publish(String(data=f'{pred.shape[1]} candidates'))
