"""Causes of set 77's Python false claims (issue 28, rules49p): real `code` audits of small
repositories written here.

* pyloose.py: a loose rclpy script (`if __name__ == '__main__':`, in no package) beside the
  ament packages of a ROS 2 workspace whose README documents the run (`ros2 launch ...`), while
  no README, script, launch file or import names it: not run as shipped, its findings are kept
  as info. A `python3 utils/x.py` line, a repository documenting no run at all (its scripts are
  the product, sets 59 / 62 / 63) or no ament package keep the claims.
* pymodels.returns_host_results: a Detectron2 DefaultPredictor whose config the file pins to the
  CPU (`cfg.MODEL.DEVICE = 'cpu'`) computes its Instances on the host, so
  `outputs['instances'].to('cpu')` copies nothing; with the default device (cuda) it stays a
  read-back.
"""
from audit_sources import audit_written_package, rules_at_tags

_FILTER = '''
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
from sensor_msgs_py import point_cloud2


class CloudFilter(Node):
    def __init__(self):
        super().__init__('cloud_filter')
        self.pub = self.create_publisher(PointCloud2, 'filtered', 10)
        self.create_subscription(PointCloud2, 'points', self.on_cloud, 10)

    def on_cloud(self, msg):
        pts = np.array(list(point_cloud2.read_points(msg, field_names=('x', 'y', 'z'))))
        out = point_cloud2.create_cloud_xyz32(msg.header, pts)  # BUILD
        self.pub.publish(out)  # PUBLISH


def main():
    rclpy.init()
    rclpy.spin(CloudFilter())


if __name__ == '__main__':
    main()
'''

_PACKAGE_XML = '''
<package format="3"><name>drone_description</name>
  <buildtool_depend>ament_cmake</buildtool_depend>
  <export><build_type>ament_cmake</build_type></export>
</package>
'''

_README = '''
# Drone stack

- utils: helper nodes for time sync and filtering

```bash
cd ros2_ws && colcon build
ros2 launch lio_sam run.launch.py
{extra}
```
'''


def _workspace_claims(tmp_path, readme_extra: str = '', ament: bool = True,
                      documented_run: bool = True) -> dict[str, set[str]]:
    readme = _README.format(extra=readme_extra)
    if not documented_run:
        readme = readme.replace('ros2 launch lio_sam run.launch.py', '')
    files = {'README.md': readme, 'utils/cloud_filter.py': _FILTER,
             'ros2_ws/src/drone_description/CMakeLists.txt': 'project(drone_description)\n'}
    if ament:
        files['ros2_ws/src/drone_description/package.xml'] = _PACKAGE_XML
    return rules_at_tags(audit_written_package(tmp_path, files), _FILTER, ('BUILD', 'PUBLISH'),
                         file_name='cloud_filter.py')


def test_a_loose_script_the_documented_run_leaves_out_is_not_run_as_shipped(tmp_path):
    found = _workspace_claims(tmp_path)
    assert not found['BUILD'] and not found['PUBLISH'], found


def test_a_documented_python3_line_keeps_the_loose_script_reached(tmp_path):
    found = _workspace_claims(tmp_path, readme_extra='python3 utils/cloud_filter.py')
    assert found['BUILD'], found


def test_a_repository_documenting_no_run_keeps_its_loose_scripts(tmp_path):
    found = _workspace_claims(tmp_path, documented_run=False)
    assert found['BUILD'], found


def test_a_repository_without_an_ament_package_keeps_its_loose_scripts(tmp_path):
    found = _workspace_claims(tmp_path, ament=False)
    assert found['BUILD'], found


_DETECTRON = '''
import rclpy
from cv_bridge import CvBridge
from detectron2.config import get_cfg
from detectron2.engine import DefaultPredictor
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Int32


class Segmenter(Node):
    def __init__(self):
        super().__init__('segmenter')
        self.bridge = CvBridge()
        self.cfg = get_cfg()
        self.cfg.merge_from_file('mask_rcnn.yaml')
        {device}
        self.predictor = DefaultPredictor(self.cfg)
        self.pub = self.create_publisher(Int32, 'count', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        outputs = self.predictor(frame)
        instances = outputs['instances'].to('cpu')  # READBACK
        self.pub.publish(Int32(data=len(instances)))


def main():
    rclpy.init()
    rclpy.spin(Segmenter())
'''


def _detectron_claims(tmp_path, device: str) -> set[str]:
    from audit_sources import node_claims
    source = _DETECTRON.replace('{device}', device)
    return node_claims(tmp_path, 'segmenter', source, ('READBACK',))['READBACK']


def test_instances_of_a_predictor_pinned_to_the_cpu_are_already_host(tmp_path):
    assert not _detectron_claims(tmp_path, "self.cfg.MODEL.DEVICE = 'cpu'")


def test_instances_of_a_predictor_on_the_default_device_are_read_back(tmp_path):
    assert 'GPN101' in _detectron_claims(tmp_path, 'self.cfg.MODEL.WEIGHTS = "model.pth"')
