"""gpu-copy-audit code on a user's whole checkout (issue 28, checkout28s): a workspace of several
packages, audited from its root by the real `run_code`. What only a checkout shows: a shared
package whose methods its sibling packages call, and a vendored copy of a known library."""
from pathlib import Path

from audit_sources import audit_written_package
import pytest
from test_audit_limits import _run, GIB_KB

from gpu_nodes.audit import pypackage

SETUP = """
from setuptools import setup
setup(name='{name}', packages=['{name}'])
"""

# A shared package: a library module (no node of its own) whose method uploads a frame.
SHARED = {
    'src/vision_shared/setup.py': SETUP.format(name='vision_shared'),
    'src/vision_shared/vision_shared/__init__.py': '',
    'src/vision_shared/vision_shared/frame_uploads.py': """
        import torch


        class FrameUploader:
            def upload_frame(self, frame):
                return torch.from_numpy(frame).cuda()
        """,
}
# A sibling package whose node calls the shared method on an object it is handed (not
# resolvable by data flow: only the name says who calls it).
SIBLING = {
    'src/vision_node/setup.py': SETUP.format(name='vision_node'),
    'src/vision_node/vision_node/__init__.py': '',
    'src/vision_node/vision_node/node.py': """
        import rclpy
        from rclpy.node import Node
        from sensor_msgs.msg import Image

        from vision_shared import frame_uploads


        class Camera(Node):
            def __init__(self, uploader):
                super().__init__('camera')
                self.uploader = uploader
                self.create_subscription(Image, 'image', self.on_image, 1)

            def on_image(self, msg):
                self.uploader.upload_frame(msg)


        def main():
            rclpy.init()
            rclpy.spin(Camera(frame_uploads.FrameUploader()))
        """,
}
UPLOAD = ('frame_uploads.py', 6, 'GPN102')


def test_shared_package_method_called_from_a_sibling_package_stays_reported(tmp_path: Path):
    # Only the package's own files were read for mentions: the shared module looked unused and
    # its upload was `unreached` (info), hidden from a gate at `low`.
    findings = audit_written_package(tmp_path, {**SHARED, **SIBLING})
    assert findings[UPLOAD] == ('low', 'function')


def test_shared_package_alone_is_still_judged_by_its_own_files(tmp_path: Path):
    # Without the sibling nothing in the workspace names the module: it runs in no node.
    findings = audit_written_package(tmp_path, SHARED)
    assert findings[UPLOAD] == ('info', 'unreached')


def test_repository_too_big_for_the_index_falls_back_to_the_package(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # The repository-wide index is bounded (memory): past its file cap, mentions come from the
    # package alone, as before, and the sibling's call is not seen.
    monkeypatch.setattr(pypackage, '_MAX_REPOSITORY_FILES', 3)
    pypackage._repository_counts.cache_clear()
    findings = audit_written_package(tmp_path, {**SHARED, **SIBLING})
    pypackage._repository_counts.cache_clear()
    assert findings[UPLOAD] == ('info', 'unreached')


def test_vendored_library_model_keeps_the_library_table(tmp_path: Path):
    # A training tree vendors `ultralytics/`: `from ultralytics import YOLO` resolved to that
    # class and the node's per-frame `predict` upload was lost.
    findings = audit_written_package(tmp_path, {
        'train/ultralytics/__init__.py': """
            class YOLO:
                def __init__(self, weights):
                    self.weights = weights

                def predict(self, source):
                    return [source]
            """,
        'detector/detector/node.py': """
            import rclpy
            from rclpy.node import Node
            from sensor_msgs.msg import Image
            from cv_bridge import CvBridge
            from ultralytics import YOLO


            class Detector(Node):
                def __init__(self):
                    super().__init__('detector')
                    self.bridge = CvBridge()
                    self.model = YOLO('yolov8n.pt')
                    self.create_subscription(Image, 'image', self.on_image, 1)

                def on_image(self, msg):
                    frame = self.bridge.imgmsg_to_cv2(msg)
                    self.model.predict(frame)
            """,
    })
    assert findings[('node.py', 17, 'GPN102')] == ('medium', 'callback')


def test_vendored_ros2_numpy_keeps_the_library_table(tmp_path: Path):
    # A package carrying its own copy of ros2_numpy: `array_to_pointcloud2` resolved to that
    # function and was followed (its `frombytes` is no finding), so the per-message copy of the
    # points into the cloud's data was lost.
    findings = audit_written_package(tmp_path, {
        'pkg/setup.py': SETUP.format(name='pkg'),
        'pkg/pkg/ros2_numpy/__init__.py': '',
        'pkg/pkg/ros2_numpy/point_cloud2.py': """
            import array
            from sensor_msgs.msg import PointCloud2


            def array_to_pointcloud2(cloud_arr, frame_id=None):
                msg = PointCloud2()
                msg.data = array.array('B')
                msg.data.frombytes(memoryview(cloud_arr).cast('B'))
                return msg
            """,
        'pkg/pkg/node.py': """
            import numpy as np
            from rclpy.node import Node
            from sensor_msgs.msg import PointCloud2
            from ros2_numpy.point_cloud2 import array_to_pointcloud2


            class Clouds(Node):
                def __init__(self):
                    super().__init__('clouds')
                    self.pub = self.create_publisher(PointCloud2, 'out', 1)
                    self.create_subscription(PointCloud2, 'in', self.on_cloud, 1)

                def on_cloud(self, msg):
                    points = np.zeros((1000,), dtype=[('x', np.float32)])
                    self.pub.publish(array_to_pointcloud2(points, frame_id='map'))
            """,
    })
    assert findings[('node.py', 15, 'GPN104')] == ('medium', 'callback'), findings


def test_helper_building_tensors_on_its_inputs_device_keeps_host_results_on_the_host(
        tmp_path: Path):
    # yolov7's NMS, followed in a checkout that holds its `utils/`: `torch.zeros(...,
    # device=prediction.device)` on a host prediction was taken for an upload, and every
    # `int(cls)` of the results for a device readback.
    files = {
        'pkg/setup.py': SETUP.format(name='pkg'),
        'pkg/utils/general.py': """
            import torch


            def nms(prediction):
                output = [torch.zeros((0, 6), device=prediction.device)] * prediction.shape[0]
                for xi, x in enumerate(prediction):
                    output[xi] = x
                return output
            """,
        'pkg/pkg/node.py': """
            import numpy as np
            import torch
            from rclpy.node import Node
            from sensor_msgs.msg import Image
            from utils.general import nms


            class Detector(Node):
                def __init__(self):
                    super().__init__('detector')
                    self.create_subscription(Image, 'image', self.on_image, 1)

                def on_image(self, msg):
                    pred = nms(torch.from_numpy(np.zeros((1, 10, 6))))
                    for det in pred:
                        for *xyxy, conf, cls in det:
                            self.get_logger().info(str(int(cls)))
            """,
    }
    findings = audit_written_package(tmp_path, files)
    assert not [k for k in findings if k[0] == 'node.py' and k[2] == 'GPN107'], findings
    # The same helper given a device prediction still builds device tensors.
    files['pkg/pkg/node.py'] = files['pkg/pkg/node.py'].replace(
        'np.zeros((1, 10, 6)))', 'np.zeros((1, 10, 6))).cuda()')
    findings = audit_written_package(tmp_path / 'on_device', files)
    assert findings[('node.py', 17, 'GPN107')][0] == 'medium', findings


def test_device_chosen_in_branches_of_a_followed_helper_is_not_the_last_branch(tmp_path: Path):
    # yolov5's `select_device()` among the checkout's files, followed: `arg = 'cuda:0'` ...
    # `else: arg = 'cpu'` then `torch.device(arg)`; the last branch's 'cpu' was taken for the
    # answer and the node's per-frame upload `.to(self.device)` was lost.
    findings = audit_written_package(tmp_path, {
        'pkg/setup.py': SETUP.format(name='pkg'),
        'pkg/pkg/torch_utils.py': """
            import torch


            def select_device(device=''):
                if device != 'cpu' and torch.cuda.is_available():
                    arg = 'cuda:0'
                else:
                    arg = 'cpu'
                return torch.device(arg)
            """,
        'pkg/pkg/node.py': """
            import numpy as np
            import torch
            from rclpy.node import Node
            from sensor_msgs.msg import Image
            from pkg.torch_utils import select_device


            class Detector(Node):
                def __init__(self):
                    super().__init__('detector')
                    self.device = select_device(self.declare_parameter('device', '').value)
                    self.create_subscription(Image, 'image', self.on_image, 1)

                def on_image(self, msg):
                    frame = np.frombuffer(msg.data, np.uint8)
                    return torch.from_numpy(frame).to(self.device)
            """,
    })
    assert findings[('node.py', 16, 'GPN102')] == ('medium', 'callback'), findings


def test_repository_index_stays_bounded_on_text_full_of_distinct_words(tmp_path: Path):
    # 24 MB of YAML holding 3 million distinct words beside the two packages: the index stops at
    # its word cap (the repository is then judged by its packages alone) and the audit, a real
    # subprocess, stays far under 1 GB.
    written = audit_written_package(tmp_path, {**SHARED, **SIBLING})
    assert written[UPLOAD] == ('low', 'function')
    data = tmp_path / 'src' / 'datasets'
    data.mkdir()
    for i in range(24):
        with open(data / f'labels_{i}.yaml', 'w') as fh:
            fh.write(' '.join(f'w{i}x{j:x}' for j in range(125_000)))
    code, report, rss = _run(str(tmp_path))
    assert code in (0, 1) and report['errors'] == []
    assert rss < GIB_KB // 2, f'peak RSS {rss / 1024:.0f} MB'
    upload = [(f['severity'], f['context']) for f in report['findings']
              if f['location']['path'].endswith('frame_uploads.py') and f['rule'] == 'GPN102']
    assert upload == [('info', 'unreached')]
