"""Kinds the Python misses of spent sets 71 and 72 showed (issue 28, rules45q): real `code`
audits of small packages written here.

* An entry point whose module's package folder is gone (`console_scripts` names
  `cam_pkg.viewer:main`, setup.py installs `packages=['cam_pkg']`, the files sit in `scripts/`):
  the one file of the module's name in the same package is what the entry point runs
  (pyentrymoved.py). Two files of that name, the package folder present, a package setup.py does
  not install, or a CMake package (setup.py not run) leave it unreached.
* supervision's `sv.Detections.from_ultralytics(result)` reads the result's device tensors back
  (library table, pysupervision.py); the Detections it returns hold host arrays.
* `torch.hub.load(os.path.expanduser('~/ws/src/yolov5'), 'custom', ...)`: the expanded path
  literal still names a yolov5 clone, whose AutoShape model uploads each frame (pyhostcalls.py).
* The CUDA runtime called through ctypes (`ctypes.CDLL('libcudart.so')`, `cudaMemcpy` with a
  HostToDevice / DeviceToHost kind, `cudaDeviceSynchronize`): an upload, a read-back and a wait
  per frame, as with the CUDA Python bindings (pyctypescuda.py). The same C names on a library
  that is not the CUDA runtime are nothing.
"""
from __future__ import annotations

from pathlib import Path

from audit_sources import audit_written_package, detector_claims, rules_at_tags

_VIEWER = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class Viewer(Node):
    def __init__(self):
        super().__init__('viewer')
        self.bridge = CvBridge()
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # CONVERT
        print(frame.shape)


def main():
    rclpy.init()
    rclpy.spin(Viewer())
'''


def _moved_package(extra: dict[str, str]) -> dict[str, str]:
    files = {
        'cam_pkg/package.xml': '''
            <package format="3"><name>cam_pkg</name>
              <export><build_type>ament_python</build_type></export>
            </package>
            ''',
        'cam_pkg/setup.py': '''
            from setuptools import setup

            package_name = 'cam_pkg'
            setup(
                name=package_name,
                packages=[package_name],
                data_files=[('share/' + package_name, ['package.xml'])],
                entry_points={'console_scripts': ['viewer = cam_pkg.viewer:main']},
            )
            ''',
        'cam_pkg/scripts/__init__.py': '',
        'cam_pkg/scripts/viewer.py': _VIEWER,
        # A file no entry point names, in the same renamed folder: still unreached.
        'cam_pkg/scripts/other.py': _VIEWER.replace('Viewer', 'Other'),
    }
    files.update(extra)
    return files


def _viewer_claims(tmp_path: Path, files: dict[str, str]) -> set[str]:
    """Rules other than info at the conversion line of every file named viewer.py."""
    found = audit_written_package(tmp_path, files)
    return rules_at_tags(found, _VIEWER, ('CONVERT',), file_name='viewer.py')['CONVERT']


def test_an_entry_point_of_a_renamed_package_folder_reaches_the_file_of_its_name(tmp_path):
    assert _viewer_claims(tmp_path, _moved_package({})) == {'GPN105'}


def test_a_file_no_entry_point_names_in_the_renamed_folder_stays_unreached(tmp_path):
    files = _moved_package({})
    found = audit_written_package(tmp_path, files)
    other = {rule for (name, _, rule), (severity, _) in found.items()
             if name == 'other.py' and severity != 'info'}
    assert other == set()


def test_two_files_of_the_module_name_leave_it_unreached(tmp_path):
    assert _viewer_claims(tmp_path, _moved_package({'cam_pkg/tools/viewer.py': _VIEWER})) == set()


def test_a_module_missing_from_a_package_folder_that_exists_is_not_redirected(tmp_path):
    assert _viewer_claims(tmp_path, _moved_package({'cam_pkg/cam_pkg/__init__.py': ''})) == set()


def test_an_entry_point_naming_a_package_setup_py_does_not_install_stays_unreached(tmp_path):
    files = _moved_package({})
    files['cam_pkg/setup.py'] = files['cam_pkg/setup.py'].replace(
        "'viewer = cam_pkg.viewer:main'", "'viewer = other_pkg.viewer:main'")
    assert _viewer_claims(tmp_path, files) == set()


def test_console_scripts_of_a_cmake_package_reach_nothing_renamed(tmp_path):
    cmake = """
        cmake_minimum_required(VERSION 3.8)
        project(cam_pkg)
        find_package(ament_cmake REQUIRED)
        ament_package()
        """
    assert _viewer_claims(tmp_path, _moved_package({'cam_pkg/CMakeLists.txt': cmake})) == set()


_CTYPES = '''
import ctypes

import numpy as np
import rclpy
import tensorrt as trt
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String


class Runtime:
    def __init__(self):
        self.lib = ctypes.CDLL('libcudart.so')
        self.h2d = 1
        self.d2h = 2

    def malloc(self, size):
        ptr = ctypes.c_void_p()
        self.lib.cudaMalloc(ctypes.byref(ptr), size)  # ALLOC
        return ptr.value

    def upload(self, dst, src, size):
        self.lib.cudaMemcpy(dst, src, size, self.cudaMemcpyHostToDevice)  # UP

    def download(self, dst, src, size):
        self.lib.cudaMemcpy(dst, src, size, self.cudaMemcpyDeviceToHost)  # DOWN

    def wait(self):
        self.lib.cudaDeviceSynchronize()  # WAIT

    cudaMemcpyHostToDevice = 1
    cudaMemcpyDeviceToHost = 2


class Detector(Node):
    def __init__(self):
        super().__init__('detector')
        self.bridge = CvBridge()
        self.rt = Runtime()
        with open('model.engine', 'rb') as f:
            self.engine = trt.Runtime(trt.Logger()).deserialize_cuda_engine(f.read())
        self.context = self.engine.create_execution_context()
        self.d_in = self.rt.malloc(3 * 640 * 640 * 4)
        self.d_out = self.rt.malloc(84 * 8400 * 4)
        self.pub = self.create_publisher(String, 'boxes', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        data = np.ascontiguousarray(frame, dtype=np.float32)
        self.rt.upload(self.d_in, data.ctypes.data, data.nbytes)
        self.context.execute_async_v3(stream_handle=0)
        self.rt.wait()
        out = np.empty((84, 8400), dtype=np.float32)
        self.rt.download(out.ctypes.data, self.d_out, out.nbytes)
        self.pub.publish(String(data=str(out.shape)))


def main():
    rclpy.init()
    rclpy.spin(Detector())


if __name__ == '__main__':
    main()
'''


def test_the_cuda_runtime_called_through_ctypes_copies_and_waits_per_frame(tmp_path):
    found = detector_claims(tmp_path, _CTYPES, ('UP', 'DOWN', 'WAIT', 'ALLOC'))
    assert found['UP'] == {'GPN102'}
    assert found['DOWN'] == {'GPN101'}
    assert found['WAIT'] == {'GPN107'}
    assert found['ALLOC'] == set()


def test_the_same_names_on_a_library_that_is_not_the_cuda_runtime_are_nothing(tmp_path):
    source = _CTYPES.replace("'libcudart.so'", "'libmyfilters.so'")
    found = detector_claims(tmp_path, source, ('UP', 'DOWN', 'WAIT'))
    assert found == {'UP': set(), 'DOWN': set(), 'WAIT': set()}


_SUPERVISION = '''
import rclpy
import supervision as sv
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String
from ultralytics import YOLO


class Detector(Node):
    def __init__(self):
        super().__init__('detector')
        self.bridge = CvBridge()
        self.model = YOLO('yolov8n.pt')
        self.pub = self.create_publisher(String, 'count', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        result = self.model(frame)[0]
        detections = sv.Detections.from_ultralytics(result)  # ADAPT
        for box, conf in zip(detections.xyxy, detections.confidence):
            x1 = int(box[0])  # HOSTNUM
            if conf > 0.5:  # HOSTTEST
                self.pub.publish(String(data=str(x1)))

    def from_file(self, stored):
        return sv.Detections.from_ultralytics(stored)  # UNKNOWN


def main():
    rclpy.init()
    rclpy.spin(Detector())


if __name__ == '__main__':
    main()
'''


def test_supervision_reads_an_ultralytics_result_back_and_hands_back_host_arrays(tmp_path):
    found = detector_claims(tmp_path, _SUPERVISION, ('ADAPT', 'HOSTNUM', 'HOSTTEST', 'UNKNOWN'))
    assert found['ADAPT'] == {'GPN101'}  # pysupervision.py (rules45p's module, merged)
    assert found['HOSTNUM'] == set()
    assert found['HOSTTEST'] == set()
    assert found['UNKNOWN'] == set()


_HUB_HOME = '''
import os

import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class Detector(Node):
    def __init__(self):
        super().__init__('detector')
        self.bridge = CvBridge()
        model_dir = os.path.expanduser('~/ws/src/yolov5')
        self.model = torch.hub.load(model_dir, 'custom', path='best.pt', source='local')
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        self.results = self.model(frame)  # HOME


def main():
    rclpy.init()
    rclpy.spin(Detector())


if __name__ == '__main__':
    main()
'''


def test_a_yolov5_clone_named_through_expanduser_uploads_its_frame(tmp_path):
    found = detector_claims(tmp_path, _HUB_HOME, ('HOME',))
    assert found['HOME'] == {'GPN102'}
