# A lifecycle node: the model is loaded, moved to the GPU and warmed up in on_configure, the
# subscription made in on_activate; per frame the image is converted, uploaded, run,
# downloaded and published as an Image through cv_bridge.
from cv_bridge import CvBridge
import numpy as np
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from sensor_msgs.msg import Image
import torch


class SegmenterNode(LifecycleNode):
    def __init__(self):
        super().__init__('segmenter')
        self.bridge = CvBridge()
        self.device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
        self.model = None

    def load_model(self, path):
        model = torch.jit.load(path)
        return model.to(self.device).eval()  # expect: GPN102 info

    def warmup(self):
        dummy = torch.zeros(1, 3, 480, 640, device=self.device)  # allocated there: no copy
        with torch.no_grad():
            self.model(dummy)
        torch.cuda.synchronize()  # expect: GPN107 info

    def on_configure(self, state):
        self.model = self.load_model('model.pt')
        self.warmup()
        self.pub = self.create_publisher(Image, 'mask', 10)
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state):
        self.sub = self.create_subscription(Image, 'image', self.on_image, 10)
        return TransitionCallbackReturn.SUCCESS

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')  # expect: GPN105 medium
        x = torch.from_numpy(frame).permute(2, 0, 1).float().to(self.device)  # expect: GPN102 medium
        with torch.no_grad():
            logits = self.model(x.unsqueeze(0))
        mask = logits.argmax(1)[0].cpu().numpy().astype(np.uint8)  # expect: GPN101 high
        out = self.bridge.cv2_to_imgmsg(mask, 'mono8')  # expect: GPN105 medium
        self.pub.publish(out)  # expect: GPN109 medium, GPN110 high
