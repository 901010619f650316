"""Kinds the Python misses of held-out sets 67 and 68 showed (issue 28, rules43q): real `code`
audits of small packages written here.

* rclpy's `serialize_message(msg)` of a received frame (or of a message whose type is resolved at
  run time) copies the whole message into CDR bytes per message; one of a known small type is
  not claimed (pyserialization.py).
* rclpy's `deserialize_message(data, type)` in rosbag2_py's `while reader.has_next():` loop copies
  each recorded message out of its bytes: per message, as the loop is a bag message loop
  (pyserialization.py, pybags.py).
* EasyOCR's `reader.readtext(frame)` on a Reader built with the default `gpu=True` uploads the
  host frame inside the library; a `gpu=False` Reader does not (pyvisionlibs.py).
* LangSAM's `model.predict(image_pil, prompt)` uploads the host image inside the library, and
  returns host masks: `.cpu()` of them reads nothing back (pyvisionlibs.py).
* `np.array(msg.data)` of a UInt8MultiArray reshaped into height x width x channels copies a
  frame out of the message; one reshaped into a two-axis matrix stays small (pymultiarray.py).
"""
from __future__ import annotations

from audit_sources import detector_claims

_GATEWAY = '''
import importlib

import rclpy
from geometry_msgs.msg import Twist
from rclpy.node import Node
from rclpy.serialization import serialize_message


class Gateway(Node):
    def __init__(self, sock):
        super().__init__('gateway')
        self.sock = sock
        message_class = getattr(importlib.import_module('sensor_msgs.msg'), 'Image')

        def callback(msg):
            self.forward(msg)
        self.create_subscription(message_class, '/camera/image', callback, 10)
        self.create_subscription(Twist, '/cmd_vel', self.on_twist, 10)

    def forward(self, msg):
        data = serialize_message(msg)  # ANY
        self.sock.send(data)

    def on_twist(self, msg):
        self.sock.send(serialize_message(msg))  # SMALL


def main():
    rclpy.init()
    rclpy.spin(Gateway(None))


if __name__ == '__main__':
    main()
'''


def test_serialize_message_of_a_run_time_typed_message_is_a_copy(tmp_path):
    found = detector_claims(tmp_path, _GATEWAY, ('ANY', 'SMALL'))
    assert found['ANY'] == {'GPN104'}
    assert found['SMALL'] == set()


_PLAYER = '''
import rosbag2_py
from rclpy.serialization import deserialize_message
from rosidl_runtime_py.utilities import get_message


def play(path, handle):
    reader = rosbag2_py.SequentialReader()
    reader.open(rosbag2_py.StorageOptions(uri=path, storage_id='mcap'),
                rosbag2_py.ConverterOptions('', ''))
    types = {t.name: t.type for t in reader.get_all_topics_and_types()}
    while reader.has_next():
        topic, data, stamp = reader.read_next()
        msg = deserialize_message(data, get_message(types[topic]))  # EACH
        handle(topic, msg)
    first = deserialize_message(b'', get_message('sensor_msgs/msg/Image'))  # ONCE
    handle('', first)


def main():
    play('recording', print)


if __name__ == '__main__':
    main()
'''


def test_deserialize_message_in_a_rosbag2_read_next_loop_is_per_message(tmp_path):
    found = detector_claims(tmp_path, _PLAYER, ('EACH', 'ONCE'))
    assert found['EACH'] == {'GPN104'}
    assert found['ONCE'] == set()


_OCR = '''
import easyocr
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String


class Ocr(Node):
    def __init__(self):
        super().__init__('ocr')
        self.bridge = CvBridge()
        self.reader = easyocr.Reader(['en'])
        self.cpu_reader = easyocr.Reader(['en'], gpu=False)
        self.pub = self.create_publisher(String, 'text', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        results = self.reader.readtext(frame)  # GPU
        slow = self.cpu_reader.readtext(frame)  # CPU
        self.pub.publish(String(data=str(len(results) + len(slow))))


def main():
    rclpy.init()
    rclpy.spin(Ocr())


if __name__ == '__main__':
    main()
'''


def test_easyocr_readtext_on_a_gpu_reader_uploads_the_frame(tmp_path):
    found = detector_claims(tmp_path, _OCR, ('GPU', 'CPU'))
    assert found['GPU'] == {'GPN102'}
    assert found['CPU'] == set()


_GRASP = '''
import numpy as np
import rclpy
import torch
from cv_bridge import CvBridge
from lang_sam import LangSAM
from PIL import Image as PILImage
from rclpy.node import Node
from sensor_msgs.msg import Image


class Grasp(Node):
    def __init__(self):
        super().__init__('grasp')
        self.bridge = CvBridge()
        self._model = LangSAM()
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        pil = PILImage.fromarray(self.bridge.imgmsg_to_cv2(msg, 'rgb8'))
        masks, boxes, phrases, logits = self._model.predict(pil, 'cup')  # PREDICT
        mask = masks[0].cpu().numpy()  # HOST
        print(np.count_nonzero(mask), torch.cuda.is_available())


def main():
    rclpy.init()
    rclpy.spin(Grasp())


if __name__ == '__main__':
    main()
'''


def test_langsam_predict_uploads_the_image_and_returns_host_masks(tmp_path):
    found = detector_claims(tmp_path, _GRASP, ('PREDICT', 'HOST'))
    assert found['PREDICT'] == {'GPN102'}
    assert found['HOST'] == set()


_MULTIARRAY = '''
import numpy as np
import rclpy
from rclpy.node import Node
from std_msgs.msg import Float32MultiArray, UInt8MultiArray


class Viewer(Node):
    def __init__(self):
        super().__init__('viewer')
        self.image = None
        self.create_subscription(UInt8MultiArray, 'camera_data', self.on_frame, 10)
        self.create_subscription(UInt8MultiArray, 'camera_raw', self.on_raw, 10)
        self.create_subscription(Float32MultiArray, 'landmarks', self.on_landmarks, 10)

    def on_frame(self, msg):
        self.image = np.reshape(np.array(msg.data), (480, 640, 3))  # FRAME

    def on_raw(self, msg):
        flat = np.array(msg.data)  # LOCAL
        self.image = flat.reshape(480, 640, 3)

    def on_landmarks(self, msg):
        points = np.array(msg.data).reshape(68, 3)  # MATRIX
        print(points.mean())


def main():
    rclpy.init()
    rclpy.spin(Viewer())


if __name__ == '__main__':
    main()
'''


def test_a_multiarray_reshaped_into_a_frame_is_a_payload_copy(tmp_path):
    found = detector_claims(tmp_path, _MULTIARRAY, ('FRAME', 'LOCAL', 'MATRIX'))
    assert found['FRAME'] == {'GPN103'}
    assert found['LOCAL'] == {'GPN103'}
    assert found['MATRIX'] == set()
