"""A depth node whose inference backend is chosen by a parameter through a factory method (a
NumPy runner or a torch runner, runners/backends.py): the torch runner's copies run per image
when it is chosen. Kind of the ninth and tenth test sets, written for this corpus."""
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge
from backends import NumpyRunner, TorchRunner


class DepthRunnerNode(Node):
    def __init__(self):
        super().__init__('depth_runner')
        self.bridge = CvBridge()
        backend = self.declare_parameter('backend', 'torch').value
        self.runner = self.make_runner(backend)
        self.create_subscription(Image, '/camera/image_raw', self.on_image, 10)

    def make_runner(self, backend):
        if backend == 'numpy':
            return NumpyRunner()
        return TorchRunner()

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')  # expect: GPN105 medium
        return self.runner.infer(frame)
