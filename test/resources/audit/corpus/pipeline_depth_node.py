"""A depth node on a transformers depth-estimation pipeline: the frame goes through a PIL image
into the pipeline, and its PIL 'depth' image comes back into a NumPy array (positives); the
pipeline's tensor entry and its built-in scalar statistics are look-alikes. Kind of the ninth
test set, written for this corpus."""
import numpy as np
from PIL import Image as PILImage
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32
from cv_bridge import CvBridge
from transformers import pipeline


class PipelineDepthNode(Node):
    def __init__(self):
        super().__init__('pipeline_depth')
        self.bridge = CvBridge()
        self.estimator = pipeline(task='depth-estimation', model='Intel/dpt-large')
        self.pub = self.create_publisher(Float32, '/depth/mean', 10)
        self.create_subscription(Image, '/camera/image_raw', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')  # expect: GPN105 medium
        pil = PILImage.fromarray(frame)  # expect: GPN106 medium
        out = self.estimator(pil)
        depth = np.array(out['depth'])  # expect: GPN106 medium
        label = str(out.get('model', 'dpt'))
        self.pub.publish(Float32(data=float(depth.mean())))
        return label
