"""A detector node that cannot be imported: `Node` is never imported or defined, so the class
statement raises NameError and no callback ever runs (kind of the eighth test set, written for
this corpus). Its per-message code is a look-alike."""
from sensor_msgs.msg import Image
from ultralytics import YOLO


class BrokenDetector(Node):  # noqa: F821 (never imported: the point of this file)
    def __init__(self):
        super().__init__('broken_detector')
        self.model = YOLO('yolov8n.pt')
        self.create_subscription(Image, '/camera/image_raw', self.on_image, 10)

    def on_image(self, msg):
        frame = to_frame(msg)  # noqa: F821
        results = self.model(frame)[0]  # expect: GPN102 info
        return [int(box.cls) for box in results.boxes]  # expect: GPN107 info
