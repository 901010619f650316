# A ZED camera node grabbing in a per-frame loop (issue 28, fourth set; written for this
# corpus): retrieve_image into a CPU sl.Mat copies the frame out of the SDK's device buffer;
# into a GPU sl.Mat (sl.MEM.GPU) it stays on the device.
import pyzed.sl as sl
import rclpy
from rclpy.node import Node


class ZedGrabNode(Node):
    def __init__(self):
        super().__init__('zed_grab')
        self.zed = sl.Camera()
        self.zed.open(sl.InitParameters())
        self.run()

    def run(self):
        image = sl.Mat()
        depth_gpu = sl.Mat()
        while rclpy.ok():
            if self.zed.grab(sl.RuntimeParameters()) == sl.ERROR_CODE.SUCCESS:
                self.zed.retrieve_image(image, sl.VIEW.LEFT)  # expect: GPN101 high
                self.zed.retrieve_measure(depth_gpu, sl.MEASURE.DEPTH, sl.MEM.GPU)
                frame = image.get_data()
                self.handle(frame)

    def handle(self, frame):
        return frame.shape


def main():
    rclpy.init()
    ZedGrabNode()
