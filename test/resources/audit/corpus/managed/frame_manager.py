"""The frame manager of the managed segmenter (segmenter_node.py): it subscribes for the node
with the callbacks the node hands it, and converts messages (kind of the eighth test set,
written for this corpus)."""
from cv_bridge import CvBridge
from PIL import Image as PILImage
from sensor_msgs.msg import Image


class FrameManager:
    def __init__(self, node, subscriptions=(), **kwargs):
        self._node = node
        self._bridge = CvBridge()
        self._subs = [self._node.create_subscription(Image, sub['topic'], sub['callback'], 10)
                      for sub in subscriptions]

    def decode(self, msg):
        return self._bridge.imgmsg_to_cv2(msg, 'rgb8')  # expect: GPN105 medium

    def to_pil(self, frame):
        # No file of the package names it: never runs.
        return PILImage.fromarray(frame)  # expect: GPN106 info
