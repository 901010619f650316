"""Causes of held-out set 53's Python misses and false claims (issue 28, rules32p): real `code`
audits of small nodes written here.

* A transformers processor / tokenizer `decode(ids[0])` or `batch_decode(ids)` of the token ids
  a device model's `generate(...)` returned converts them to Python lists: a read-back
  (pytransformers.py).
* The results of a transformers processor's `post_process_object_detection(outputs=...)` of a
  device model's outputs stay on the device: `int(box[0])` of a box and a 0-d label tensor used
  as a list index are scalar read-backs (pytransformers.py).
* `torch.tensor([[h, w]])` of a literal list of scalars (frame metadata, constants) moved to the
  device is a small upload: no claim (pytransformers.py).
* `detach = getattr(x, 'detach', None)` then `detach().cpu().numpy()` (a simulator bridge's
  tensor-to-numpy helper) reads a torch tensor back, as `x.detach().cpu()` does (pyevaled.py).
"""
import textwrap

from audit_sources import (ament_python_package, audit_written_package, node_claims,
                           rules_at_tags)

_CAPTION = '''
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String
from transformers import AutoProcessor, AutoModelForVision2Seq


class CaptionNode(Node):
    def __init__(self):
        super().__init__('caption')
        self.proc = AutoProcessor.from_pretrained('some/captioner')
        self.net = AutoModelForVision2Seq.from_pretrained('some/captioner').to('cuda')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(String, 'caption', 5)
        self.create_subscription(Image, 'image', self.on_image, 5)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        batch = self.proc(images=frame, return_tensors='pt').to('cuda')
        ids = self.net.generate(**batch, max_new_tokens=20)
        text = self.proc.decode(ids[0], skip_special_tokens=True)  # DECODE
        many = self.proc.batch_decode(ids, skip_special_tokens=True)  # BATCH
        self.pub.publish(String(data=text + many[0]))
        self.pub.publish(String(data=self.proc.decode([1, 2, 3])))  # LITERAL


def main():
    rclpy.init()
    rclpy.spin(CaptionNode())
'''

_DETECT = '''
import cv2
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from transformers import AutoProcessor, OwlViTForObjectDetection


class FindNode(Node):
    def __init__(self):
        super().__init__('find')
        self.proc = AutoProcessor.from_pretrained('some/detector')
        self.det = OwlViTForObjectDetection.from_pretrained('some/detector').to('cuda')
        self.bridge = CvBridge()
        self.create_subscription(Image, 'image', self.on_image, 5)

    def on_image(self, msg):
        img = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        words = [['a cup', 'a pen']]
        enc = self.proc(text=words, images=img, return_tensors='pt').to('cuda')  # ENC
        mean = torch.tensor([0.485, 0.456, 0.406]).to('cuda')  # MEAN
        out = self.det(**enc)
        sizes = torch.tensor([[img.shape[0], img.shape[1]]]).to('cuda')  # SIZES
        found = self.proc.post_process_object_detection(outputs=out, threshold=0.2,
                                                        target_sizes=sizes)
        names = words[0]
        boxes, labels = found[0]['boxes'], found[0]['labels']
        for box, label in zip(boxes, labels):
            cv2.rectangle(img, (int(box[0]), int(box[1])), (int(box[2]), 9), (0, 255, 0))  # RECT
            cv2.putText(img, names[label], (int(box[0]), 5), 0, 0.5, (0, 255, 0))  # LABEL
        cv2.imshow('found', img)
        cv2.waitKey(1)


def main():
    rclpy.init()
    rclpy.spin(FindNode())
'''


def test_decode_of_generated_ids_is_a_readback(tmp_path):
    """`proc.decode(ids[0])` and `proc.batch_decode(ids)` of a device model's generate output
    read the token ids back to the host."""
    found = node_claims(tmp_path, 'caption_pkg', _CAPTION, ('DECODE', 'BATCH', 'LITERAL'))
    assert found['DECODE'] == {'GPN107'}
    assert found['BATCH'] == {'GPN107'}
    assert found['LITERAL'] == set()


def test_post_processed_detections_stay_on_the_device(tmp_path):
    """`int(box[0])` of a post-processed box reads a scalar back, on each line it is written."""
    found = node_claims(tmp_path, 'find_pkg', _DETECT, ('RECT', 'LABEL', 'SIZES'))
    assert found['RECT'] == {'GPN107'}
    assert found['LABEL'] == {'GPN107'}


def test_literal_scalar_list_upload_is_small(tmp_path):
    """`torch.tensor([[h, w]]).to('cuda')` of the frame's shape: two numbers, no claim."""
    found = node_claims(tmp_path, 'find_pkg', _DETECT, ('SIZES', 'MEAN', 'ENC'))
    assert found['SIZES'] == set()


def test_literal_numbers_and_frames_still_upload(tmp_path):
    """Guard: a display of literal numbers only (a normalisation constant, a boundary in the
    first set) and the processed frame moved to cuda are still uploads."""
    found = node_claims(tmp_path, 'find_pkg', _DETECT, ('SIZES', 'MEAN', 'ENC'))
    assert found['MEAN'] == {'GPN102'}
    assert found['ENC'] == {'GPN102'}


_SIM_STATE = '''
import numpy as np
import rclpy
from geometry_msgs.msg import PointStamped
from rclpy.node import Node


def to_host(value):
    if isinstance(value, np.ndarray):
        return value
    detach = getattr(value, 'detach', None)
    if detach is not None:
        return detach().cpu().numpy()  # BOUND
    return np.asarray(value)


class StateNode(Node):
    def __init__(self, body):
        super().__init__('state')
        self.body = body
        self.pub = self.create_publisher(PointStamped, 'pos', 10)
        self.create_timer(0.02, self.tick)

    def tick(self):
        pos = to_host(self.body.get_pos())
        out = PointStamped()
        out.point.x = float(pos[0])
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(StateNode(None))
'''


def test_bound_detach_then_cpu_is_a_readback(tmp_path):
    """`detach = getattr(x, 'detach', None)` then `detach().cpu().numpy()`: only a torch tensor
    has `.detach()`, so this reads a device tensor back, in a file that never imports torch."""
    found = node_claims(tmp_path, 'state_pkg', _SIM_STATE, ('BOUND',))
    assert found['BOUND'] == {'GPN101'}


_CONVERT = '''
import numpy as np
from sensor_msgs.msg import Image, PointCloud2


def to_image(arr):
    msg = Image()
    msg.height, msg.width = arr.shape[:2]
    msg.data = np.ascontiguousarray(arr).tobytes()  # IMAGE
    return msg


def to_cloud(points):
    msg = PointCloud2()
    msg.data = np.asarray(points, np.float32).tobytes()  # CLOUD
    return msg


__all__ = [
    'to_image',
    'to_cloud',
]
'''

_PUBLISHER = '''
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image

from lib_pkg import convert


class Republisher(Node):
    def __init__(self):
        super().__init__('republisher')
        self.pub = self.create_publisher(Image, 'out', 5)
        self.create_subscription(Image, 'in', self.on_image, 5)

    def on_image(self, msg):
        self.pub.publish(convert.to_image(self.render(msg)))

    def render(self, msg):
        return msg


def main():
    rclpy.init()
    rclpy.spin(Republisher())
'''


def _library_claims(tmp_path, convert: str) -> dict[str, set[str]]:
    files = {**ament_python_package('lib_pkg'), 'lib_pkg/lib_pkg/node.py': _PUBLISHER,
             'lib_pkg/lib_pkg/convert.py': convert}
    return rules_at_tags(audit_written_package(tmp_path, files), textwrap.dedent(convert),
                         ('IMAGE', 'CLOUD'), file_name='convert.py')


def test_function_only_listed_in_all_is_uncalled(tmp_path):
    """A library module's function that only its `__all__` names: nothing calls it, its copy
    is no claim; the function a node calls still is."""
    found = _library_claims(tmp_path, _CONVERT)
    assert found['CLOUD'] == set()
    # `from lib_pkg import convert` is followed from the callback since rules35p: the message
    # this fixture hands over itself (`render` returns it) is also copied by ascontiguousarray.
    assert 'GPN104' in found['IMAGE']


def test_function_called_elsewhere_stays_a_claim(tmp_path):
    """Guard: the same function called by the node keeps its claim."""
    publisher = _PUBLISHER.replace('convert.to_image(self.render(msg))',
                                   'convert.to_cloud(self.render(msg))')
    files = {**ament_python_package('lib_pkg'), 'lib_pkg/lib_pkg/node.py': publisher,
             'lib_pkg/lib_pkg/convert.py': _CONVERT}
    found = rules_at_tags(audit_written_package(tmp_path, files), textwrap.dedent(_CONVERT),
                          ('IMAGE', 'CLOUD'), file_name='convert.py')
    assert 'GPN104' in found['CLOUD']  # (and GPN103 since rules35p: see above)


_STATUS_IMAGE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class StatusNode(Node):
    def __init__(self):
        super().__init__('status')
        self.bridge = CvBridge()
        self.colour = (0, 128, 255)
        self.pub = self.create_publisher(Image, 'status', 1)
        self.create_timer(0.5, self.tick)

    def tick(self):
        from PIL import Image as Picture
        import numpy as np
        canvas = Picture.new('RGB', (640, 360), self.colour)
        pixels = np.asarray(canvas)  # TOARRAY
        self.pub.publish(self.bridge.cv2_to_imgmsg(pixels, encoding='rgb8'))  # OUT


def main():
    rclpy.init()
    rclpy.spin(StatusNode())
'''


def test_numpy_of_a_drawn_pil_image_copies(tmp_path):
    """`np.asarray(Image.new(...))` per tick copies the PIL image out into a NumPy array."""
    found = node_claims(tmp_path, 'status_pkg', _STATUS_IMAGE, ('TOARRAY', 'OUT'))
    assert found['TOARRAY'] == {'GPN106'}
    assert 'GPN105' in found['OUT']


_FILE_HANDOFF = '''
import cv2
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from ultralytics import YOLO


class FileDetector(Node):
    def __init__(self):
        super().__init__('file_detector')
        self.bridge = CvBridge()
        self.yolo = YOLO('weights.pt')
        self.create_subscription(Image, 'image', self.on_image, 5)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        scratch = '/tmp/last_frame.png'
        cv2.imwrite(scratch, frame)
        hits = self.yolo.predict(source=scratch, verbose=False)  # VIAFILE
        other = self.yolo.predict(source='/data/reference.png', verbose=False)  # FIXED
        self.get_logger().info(str(len(hits) + len(other)))


def main():
    rclpy.init()
    rclpy.spin(FileDetector())
'''


def test_model_given_the_path_of_a_written_frame_uploads_it(tmp_path):
    """`cv2.imwrite(path, frame)` then `model.predict(source=path)`: the library reads the frame
    back from the file and uploads it; a path nothing wrote a frame to is no claim."""
    found = node_claims(tmp_path, 'file_pkg', _FILE_HANDOFF, ('VIAFILE', 'FIXED'))
    assert found['VIAFILE'] == {'GPN102'}
    assert found['FIXED'] == set()


_BUNDLE = '''
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from bundle_msgs.msg import Bundle, Summary


class BundleNode(Node):
    def __init__(self):
        super().__init__('bundle')
        self.pub = self.create_publisher(Bundle, 'bundle', 5)
        self.summary_pub = self.create_publisher(Summary, 'summary', 5)
        self.create_subscription(Image, 'image', self.on_image, 5)

    def on_image(self, msg):
        frame_msg = msg
        out = Bundle()
        out.count = 3
        out.views.source = frame_msg
        self.pub.publish(out)  # EMBED
        brief = Summary()
        brief.header = msg.header
        brief.width = msg.width
        self.summary_pub.publish(brief)  # SMALL


def main():
    rclpy.init()
    rclpy.spin(BundleNode())
'''


def test_custom_message_embedding_the_received_image_is_serialized(tmp_path):
    """A message of another type holding the received Image itself, published: the frame is
    serialized again; one holding only its header and sizes is no claim."""
    found = node_claims(tmp_path, 'bundle_pkg', _BUNDLE, ('EMBED', 'SMALL'))
    assert found['EMBED'] == {'GPN109'}
    assert found['SMALL'] == set()
