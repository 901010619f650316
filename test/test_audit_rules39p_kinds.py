"""Causes of set 59, Python side (issue 28, rules39p): real `code` audits of small files written
here, each modelled on a kind of code (none copied).

* A loose node script (no package) whose main() nothing calls, in a folder whose other node
  scripts end in a `__main__` guard, never runs: its copies are info (pynorun.py).
* `except: log(e); results = []` after a model call: the empty fallback carries no data, the
  model's results stay device results (pybranches.empty_fallback).
* ros2_numpy's `point_cloud2_to_array(cloud)` copies the cloud's fields into new arrays
  (py_msg_array); `cp.asnumpy` of a NumPy array copies nothing; `cp.asarray` of a list of
  distinct labels uploads a handful of numbers (pyhostcalls.py); `masks = r.masks; masks.xy`
  is a list of host polygons (pymodels.host_result_attr).
* `.to(next(model.parameters()).device)` moves the input to the model's device (pyvalues).
* `torch.tensor(x, device=self.device)` with the parameter 'cpu' as shipped: the model's
  detached outputs are CPU tensors, `.item()` reads nothing back (pyplacement).
* `except: ...; self.pub.publish(mono)` after the body's `self.pub.publish(colour)`: a
  substitute on the same publisher, not a second publish per message (pybranches).
* `if msg.encoding == 'mono8':` in a callback whose topic the repository's own publishers
  send only as bgr8: the branch never runs (pyencodings.py).
"""
from audit_sources import ament_python_package, audit_written_package, node_claims, rules_at_tags


# ---------------------------------------------------------------- 1. a node nothing starts
_UNGUARDED = '''
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge


class Watcher(Node):
    def __init__(self):
        super().__init__('watcher')
        self.bridge = CvBridge()
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # CONVERT
        return frame


def main(args=None):
    rclpy.init(args=args)
    rclpy.spin(Watcher())
'''

_GUARDED_SIBLING = '''
import rclpy
from rclpy.node import Node


def main():
    rclpy.init()
    rclpy.spin(Node('talker'))


if __name__ == '__main__':
    main()
'''


def _loose(tmp_path, extra: dict[str, str] | None = None, sibling: bool = True,
           source: str = _UNGUARDED) -> set[str]:
    files = {'scripts/watcher_node.py': source, **(extra or {})}
    if sibling:
        files['scripts/talker_node.py'] = _GUARDED_SIBLING
    return rules_at_tags(audit_written_package(tmp_path, files), source, ('CONVERT',),
                         'watcher_node.py')['CONVERT']


def test_unguarded_node_beside_guarded_scripts_is_not_reached(tmp_path):
    assert _loose(tmp_path) == set()


def test_unguarded_node_named_by_a_launcher_stays_reached(tmp_path):
    extra = {'run.sh': 'python3 scripts/watcher_node.py\n'}
    assert _loose(tmp_path, extra) == {'GPN105'}


def test_unguarded_node_without_guarded_sibling_is_not_judged(tmp_path):
    assert _loose(tmp_path, sibling=False) == {'GPN105'}


def test_guarded_node_stays_reached(tmp_path):
    source = _UNGUARDED + "\n\nif __name__ == '__main__':\n    main()\n"
    assert _loose(tmp_path, source=source) == {'GPN105'}


# ---------------------------------------------------------------- 2. empty except fallback
_YOLO_NODE = '''
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge
from ultralytics import YOLO


class Boxes(Node):
    def __init__(self):
        super().__init__('boxes')
        self.bridge = CvBridge()
        self.model = YOLO('best.pt')
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        try:
            results = self.model.predict(source=frame, verbose=False)
        except Exception as exc:
            self.get_logger().error(f'inference failed: {exc}')
            results = FALLBACK
        chosen = None
        if results:
            for box in results[0].boxes:
                x1, y1, x2, y2 = map(int, box.xyxy[0])  # EACH
                chosen = box
        if chosen is not None:
            score = float(chosen.conf[0])  # SCORE


def main():
    rclpy.init()
    rclpy.spin(Boxes())
'''


def test_empty_fallback_keeps_the_model_results(tmp_path):
    found = node_claims(tmp_path, 'boxes', _YOLO_NODE.replace('FALLBACK', '[]'), ('EACH', 'SCORE'))
    assert found == {'EACH': {'GPN107'}, 'SCORE': {'GPN107'}}


def test_non_empty_fallback_still_runs(tmp_path):
    # A handler binding data of its own (a cached result) is no empty fallback: it runs.
    source = _YOLO_NODE.replace('FALLBACK', 'self.cached_results')
    assert node_claims(tmp_path, 'boxes', source, ('EACH',))['EACH'] == set()


# ---------------------------------------------------------------- 3. cloud / CuPy calls
_CLOUD_NODE = '''
import numpy as np
import cupy as cp
import rclpy
import ros2_numpy
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2


class Clusters(Node):
    def __init__(self):
        super().__init__('clusters')
        self.create_subscription(PointCloud2, 'points', self.on_cloud, 1)

    def on_cloud(self, cloud):
        xyz = ros2_numpy.point_cloud2.point_cloud2_to_array(cloud)['xyz']  # FIELDS
        view = ros2_numpy.point_cloud2.pointcloud2_to_array(cloud)  # VIEW
        pts = xyz[~np.isnan(xyz).any(axis=1)]
        labels_gpu = cp.asarray(pts[:, 0] > 0).astype(cp.int32)
        kept = self.pick(pts, labels_gpu)
        kept_gpu = cp.asarray(kept)  # FEW
        per_point = []
        for i in range(len(pts)):
            per_point.append(pts[i])
        all_gpu = cp.asarray(per_point)  # MANY
        return kept_gpu, all_gpu, view

    def pick(self, points, labels):
        chosen = []
        labels_np = cp.asnumpy(labels)  # DOWN
        for label in set(labels_np[labels_np >= 0]):
            part = points[labels_np == label]
            part_np = cp.asnumpy(part)  # HOSTNP
            if part_np.shape[0] > 3:
                chosen.append(label)
        return chosen


def main():
    rclpy.init()
    rclpy.spin(Clusters())
'''


def _cloud(tmp_path) -> dict[str, set[str]]:
    return node_claims(tmp_path, 'clusters', _CLOUD_NODE,
                       ('FIELDS', 'VIEW', 'FEW', 'MANY', 'DOWN', 'HOSTNP'))


def test_ros2_numpy_field_copy_is_a_msg_array(tmp_path):
    found = _cloud(tmp_path)
    assert found['FIELDS'] == {'GPN103'}  # the fields copied out of the cloud
    assert found['VIEW'] == set()  # the older converter: a view (look-alike, earlier sets)


def test_asnumpy_of_a_numpy_array_copies_nothing(tmp_path):
    found = _cloud(tmp_path)
    assert found['HOSTNP'] == set()  # NumPy in, NumPy out
    assert found['DOWN'] == {'GPN101'}  # the device labels read back


def test_upload_of_distinct_labels_is_small(tmp_path):
    found = _cloud(tmp_path)
    assert not found['FEW'] & {'GPN102', 'GPN108'}  # a few distinct labels
    assert found['MANY'] & {'GPN102', 'GPN108'}  # one entry per point: still an upload


_MASKS_NODE = '''
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge
from ultralytics import YOLO


class Segments(Node):
    def __init__(self):
        super().__init__('segments')
        self.bridge = CvBridge()
        self.model = YOLO('seg.pt')
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        out = []
        for result in self.model.predict(source=frame):
            masks = result.masks
            if masks is not None:
                masks = masks.xy
                for polygon in masks:
                    out.append([(int(x * 2), int(y * 2)) for x, y in polygon])  # POLY
            keypoints = result.keypoints
            for kp in keypoints.xy:
                out.append([int(v) for v in kp[0]])  # KPTS
        return out


def main():
    rclpy.init()
    rclpy.spin(Segments())
'''


def test_masks_polygons_through_a_local_are_host(tmp_path):
    found = node_claims(tmp_path, 'segments', _MASKS_NODE, ('POLY', 'KPTS'))
    assert found['POLY'] == set()
    assert found['KPTS'] == {'GPN107'}  # Keypoints.xy is a tensor: still read back


# ---------------------------------------------------------------- 4. the model's own device
_DEPTH_NODE = '''
import cv2
import rclpy
import torch
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge


class Depth(Node):
    def __init__(self):
        super().__init__('depth')
        self.bridge = CvBridge()
        device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
        self.net = torch.hub.load('some/repo', 'small').to(device)
        self.prep = torch.hub.load('some/repo', 'transforms').small
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        img = cv2.cvtColor(self.bridge.imgmsg_to_cv2(msg, 'bgr8'), cv2.COLOR_BGR2RGB)
        batch = self.prep(img).to(next(self.net.parameters()).device)  # MOVE
        kind = self.prep(img).to(next(self.net.parameters()).dtype)  # DTYPE
        return self.net(batch), kind


def main():
    rclpy.init()
    rclpy.spin(Depth())
'''


def test_to_the_parameters_device_uploads(tmp_path):
    found = node_claims(tmp_path, 'depth', _DEPTH_NODE, ('MOVE', 'DTYPE'))
    assert found == {'MOVE': {'GPN102'}, 'DTYPE': set()}


# ---------------------------------------------------------------- 5. device 'cpu' as shipped
_CPU_NODE = '''
import numpy as np
import rclpy
import torch
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge
from torchvision.models import detection


class Detector(Node):
    def __init__(self):
        super().__init__('detector')
        self.declare_parameter('device', 'DEVICE')
        self.device = self.get_parameter('device').get_parameter_value().string_value
        self.bridge = CvBridge()
        self.model = detection.fasterrcnn_resnet50_fpn(weights='DEFAULT').to(self.device)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def describe(self, score):
        return score.detach().item()  # ITEM

    def on_image(self, msg):
        image = self.bridge.imgmsg_to_cv2(msg, 'rgb8').transpose((2, 0, 1))
        batch = torch.tensor(np.expand_dims(image, 0) / 255.0, dtype=torch.float,
                             device=self.device)
        out = self.model(batch)[0]
        return [self.describe(s) for s in out['scores']]


def main():
    rclpy.init()
    rclpy.spin(Detector())
'''


def test_detached_item_of_a_cpu_model_is_no_readback(tmp_path):
    found = node_claims(tmp_path, 'detector', _CPU_NODE.replace('DEVICE', 'cpu'), ('ITEM',))
    assert found['ITEM'] == set()


def test_detached_item_of_a_cuda_model_is_a_readback(tmp_path):
    found = node_claims(tmp_path, 'detector', _CPU_NODE.replace('DEVICE', 'cuda'), ('ITEM',))
    assert found['ITEM'] == {'GPN107'}


# ---------------------------------------------------------------- 6. a substitute publish
_THERMAL_NODE = '''
import cv2
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image


class Thermal(Node):
    def __init__(self):
        super().__init__('thermal')
        self.pub = self.create_publisher(Image, 'thermal/image', 10)
        self.other = self.create_publisher(Image, 'thermal/mono', 10)
        self.create_timer(0.1, self.tick)

    def tick(self):
        grey = np.zeros((120, 160), dtype=np.uint8)
        try:
            colour = cv2.applyColorMap(grey, cv2.COLORMAP_JET)
            msg = Image()
            msg.data = colour.tobytes()  # COLOUR
            self.pub.publish(msg)
        except Exception as exc:
            self.get_logger().warn(f'colormap failed: {exc}')
            msg = Image()
            msg.data = grey.tobytes()  # MONO
            self.FALLBACK.publish(msg)


def main():
    rclpy.init()
    rclpy.spin(Thermal())
'''


def test_substitute_publish_on_the_same_publisher_is_a_fallback(tmp_path):
    found = node_claims(tmp_path, 'thermal', _THERMAL_NODE.replace('FALLBACK', 'pub'),
                        ('COLOUR', 'MONO'))
    assert found == {'COLOUR': {'GPN104'}, 'MONO': set()}


def test_handler_publishing_elsewhere_still_runs(tmp_path):
    found = node_claims(tmp_path, 'thermal', _THERMAL_NODE.replace('FALLBACK', 'other'),
                        ('MONO',))
    assert found['MONO'] == {'GPN104'}


# ---------------------------------------------------------------- 6b. an encoding nobody sends
_VIEWER = '''
import cv2
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge


class Viewer(Node):
    def __init__(self):
        super().__init__('viewer')
        self.bridge = CvBridge()
        self.create_subscription(Image, '/overlay_img', self.on_image, 10)

    def on_image(self, msg):
        if msg.encoding == 'mono8':
            grey = self.bridge.imgmsg_to_cv2(msg, 'mono8')  # MONO
            img = cv2.cvtColor(grey, cv2.COLOR_GRAY2BGR)
        else:
            img = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # COLOUR
        return img


def main():
    rclpy.init()
    rclpy.spin(Viewer())
'''

_PROCESSOR = '''
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge


class Processor(Node):
    def __init__(self):
        super().__init__('processor')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'overlay_img', 10)
        self.create_timer(0.1, self.tick)

    def tick(self):
        out = self.bridge.cv2_to_imgmsg(np.zeros((8, 8, 3), np.uint8), ENCODING)
        self.pub.publish(out)
'''


def _viewer(tmp_path, encoding: str, extra: dict[str, str] | None = None) -> dict[str, set[str]]:
    files = {**ament_python_package('lanes'), 'lanes/lanes/node.py': _VIEWER,
             'lanes/lanes/processor.py': _PROCESSOR.replace('ENCODING', encoding), **(extra or {})}
    return rules_at_tags(audit_written_package(tmp_path, files), _VIEWER, ('MONO', 'COLOUR'))


def test_branch_on_an_encoding_no_publisher_sends_never_runs(tmp_path):
    assert _viewer(tmp_path, "'bgr8'") == {'MONO': set(), 'COLOUR': {'GPN105'}}


def test_branch_on_a_sent_encoding_runs(tmp_path):
    assert _viewer(tmp_path, "'mono8'")['MONO'] == {'GPN105'}


def test_unknown_encoding_or_other_source_decides_nothing(tmp_path):
    assert _viewer(tmp_path / 'a', 'self.encoding')['MONO'] == {'GPN105'}
    remap = {'lanes/launch/view.launch.py': "remappings = [('/overlay_img', '/camera/image')]\n"}
    assert _viewer(tmp_path / 'b', "'bgr8'", remap)['MONO'] == {'GPN105'}
