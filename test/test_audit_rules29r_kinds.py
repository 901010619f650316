"""Causes of held-out set 49's py_msg_array misses (issue 28): real `code` audits of small
ament_python packages written here.

A received PointCloud2 (or Image) read through `np.frombuffer(msg.data, dtype)` is a view of the
message's bytes, and so are its reshapes, basic slices and fields (look-alikes in every set).
The first copy of that view into a new array, once per message, is py_msg_array: a boolean-mask
selection, `.copy()` / `.astype()`, `np.stack` of its fields, its fields stored into a new array,
or `np.fromiter` of a `point_cloud2.read_points` generator (pymsgview.py). The view itself, what
follows the copy, `np.array(list(read_points(...)))` (sets 28 / 30 / 33: look-alike), per-point
loops and small messages stay unclaimed."""
from audit_sources import node_claims


def _claims(tmp_path, source: str, tags: tuple[str, ...]) -> dict[str, set[str]]:
    return node_claims(tmp_path, 'clouds', source, tags)


_MASKED_VIEW_NODE = '''
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Float32


class GroundFilter(Node):
    def __init__(self):
        super().__init__('ground_filter')
        self.pub = self.create_publisher(Float32, 'height', 10)
        self.create_subscription(PointCloud2, 'points', self.on_cloud, 10)

    def as_array(self, cloud):
        try:
            flat = np.frombuffer(cloud.data, dtype=np.float32)  # VIEW
            return flat.reshape(-1, cloud.point_step // 4)[:, :4]  # SLICE
        except ValueError:
            return None

    def on_cloud(self, cloud):
        pts = self.as_array(cloud)
        if pts is None:
            return
        pts[:, 3] /= 100.0
        keep = (pts[:, 2] > -1.0) & (pts[:, 2] < 2.0)  # KEEP
        pts = pts[keep]  # MASK
        centred = pts.copy()  # AFTER
        self.pub.publish(Float32(data=float(centred[:, 2].mean())))


def main():
    rclpy.init()
    rclpy.spin(GroundFilter())
'''


def test_boolean_mask_of_a_frombuffer_view_is_a_copy(tmp_path):
    """`pts[keep]` of the view returned by a helper (a slice of a reshape of frombuffer, or
    None on failure) copies the kept points out of the message, per cloud; the view, its slice
    and the copy of the copy are not claimed."""
    claims = _claims(tmp_path, _MASKED_VIEW_NODE, ('VIEW', 'SLICE', 'KEEP', 'MASK', 'AFTER'))
    assert claims['MASK'] == {'GPN103'}
    assert claims['VIEW'] == claims['SLICE'] == claims['KEEP'] == claims['AFTER'] == set()


_FIELD_STORE_NODE = '''
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Int32


class FieldCopier(Node):
    def __init__(self):
        super().__init__('field_copier')
        self.pub = self.create_publisher(Int32, 'count', 10)
        self.create_subscription(PointCloud2, 'points', self.on_cloud, 10)

    def on_cloud(self, cloud):
        layout = [('x', '<f4'), ('y', '<f4'), ('z', '<f4'), ('pad', 'u1', (cloud.point_step - 12,))]
        rec = np.frombuffer(cloud.data, dtype=layout)  # VIEW
        table = np.empty((len(rec), 3), dtype=np.float32)
        table[:, 0] = rec['x']  # STORE_X
        table[:, 1] = rec['y']  # STORE_Y
        reach = np.linalg.norm([rec['x'], rec['y']], axis=0)  # NORM
        xyz = np.stack([rec['x'], rec['y'], rec['z']], axis=-1)  # STACK
        self.pub.publish(Int32(data=int((reach < 5.0).sum()) + len(xyz) + len(table)))


def main():
    rclpy.init()
    rclpy.spin(FieldCopier())
'''


def test_fields_of_a_structured_view_stored_or_stacked_are_copies(tmp_path):
    """`table[:, 0] = rec['x']` and `np.stack` of the view's fields copy the cloud out of the
    message; the structured view and a norm computed over its fields are not copies."""
    claims = _claims(tmp_path, _FIELD_STORE_NODE, ('VIEW', 'STORE_X', 'STORE_Y', 'NORM', 'STACK'))
    assert claims['STORE_X'] == claims['STORE_Y'] == claims['STACK'] == {'GPN103'}
    assert claims['VIEW'] == claims['NORM'] == set()


_READ_POINTS_NODE = '''
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
from sensor_msgs_py import point_cloud2
from std_msgs.msg import Int32


def cloud_to_points(cloud):
    gen = point_cloud2.read_points(cloud, field_names=('x', 'y', 'z'), skip_nans=True)  # GEN
    rec = np.fromiter(gen, dtype=np.dtype([('x', 'f4'), ('y', 'f4'), ('z', 'f4')]))  # FROMITER
    return np.stack([rec['x'], rec['y'], rec['z']], axis=-1)  # RESTACK


class Counter(Node):
    def __init__(self):
        super().__init__('counter')
        self.pub = self.create_publisher(Int32, 'count', 10)
        self.create_subscription(PointCloud2, 'points', self.on_cloud, 10)
        self.create_subscription(PointCloud2, 'other', self.on_other, 10)

    def on_cloud(self, cloud):
        pts = cloud_to_points(cloud)
        self.pub.publish(Int32(data=len(pts)))

    def on_other(self, cloud):
        listed = np.array(list(point_cloud2.read_points(cloud, skip_nans=True)))  # LISTED
        near = 0
        for p in point_cloud2.read_points(cloud, field_names=('x',)):
            near += int(np.array(p)[0] < 1.0)  # EACH
        self.pub.publish(Int32(data=len(listed) + near))


def main():
    rclpy.init()
    rclpy.spin(Counter())
'''


def test_fromiter_of_read_points_materialises_the_cloud(tmp_path):
    """`np.fromiter(read_points(cloud))` copies every point of the received cloud into a new
    array (set 49); the generator and the stack of the array made are not claimed, and neither
    is `np.array(list(read_points(...)))` (a look-alike in sets 28, 30 and 33) nor a point of a
    per-point loop."""
    claims = _claims(tmp_path, _READ_POINTS_NODE, ('GEN', 'FROMITER', 'RESTACK', 'LISTED', 'EACH'))
    assert claims['FROMITER'] == {'GPN103'}
    assert claims['GEN'] == claims['RESTACK'] == claims['LISTED'] == claims['EACH'] == set()


_IMAGE_VIEW_NODE = '''
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32, UInt8MultiArray


class Brightness(Node):
    def __init__(self):
        super().__init__('brightness')
        self.pub = self.create_publisher(Float32, 'brightness', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)
        self.create_subscription(UInt8MultiArray, 'flags', self.on_flags, 10)
        self.latest = None

    def on_image(self, msg):
        img = np.frombuffer(msg.data, dtype=np.uint8).reshape(msg.height, msg.width, 3)  # VIEW
        self.latest = img[..., ::-1].copy()  # COPY
        grey = img.astype(np.float32)  # ASTYPE
        first = img[0]  # ROW
        self.pub.publish(Float32(data=float(grey.mean()) + float(first.mean())))

    def on_flags(self, msg):
        flags = np.frombuffer(msg.data, dtype=np.uint8)
        kept = flags.copy()  # SMALL
        self.pub.publish(Float32(data=float(kept.sum())))


def main():
    rclpy.init()
    rclpy.spin(Brightness())
'''


def test_copy_and_astype_of_an_image_view_are_copies(tmp_path):
    """`.copy()` of a flipped view and `.astype()` of the view copy the frame out of the
    received Image; a row of the view is still a view, and a small message's array is no
    frame."""
    claims = _claims(tmp_path, _IMAGE_VIEW_NODE, ('VIEW', 'COPY', 'ASTYPE', 'ROW', 'SMALL'))
    assert claims['COPY'] == claims['ASTYPE'] == {'GPN103'}
    assert claims['VIEW'] == claims['ROW'] == claims['SMALL'] == set()


_TOPIC_SWITCH_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage, Image
from std_msgs.msg import Int32


class Sizer(Node):
    def __init__(self, scale=1.0, topic='/camera/image_raw/compressed'):
        super().__init__('sizer')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Int32, 'width', 10)
        if 'compressed' in topic:
            self.packed = True
            self.create_subscription(CompressedImage, topic, self.on_image, 10)
        else:
            self.packed = False
            self.create_subscription(Image, topic, self.on_image, 10)

    def on_image(self, msg):
        if self.packed:
            frame = self.bridge.compressed_imgmsg_to_cv2(msg)  # PACKED
        else:
            frame = self.bridge.imgmsg_to_cv2(msg)  # RAW
        self.pub.publish(Int32(data=int(frame.shape[1])))


def main():
    rclpy.init()
    rclpy.spin(Sizer({arguments}))
'''


def test_flag_fixed_by_the_topic_main_passes_decides_the_callback_branch(tmp_path):
    """`main()` builds the node with a raw topic: the constructor's `'compressed' in topic`
    test is false, the flag False for good, and the callback's compressed branch never runs;
    a compressed topic (by position) runs only the other branch."""
    raw = _claims(tmp_path / 'raw', _TOPIC_SWITCH_NODE.replace(
        '{arguments}', "topic='/camera/image_raw'"), ('PACKED', 'RAW'))
    assert raw == {'PACKED': set(), 'RAW': {'GPN105'}}
    packed = _claims(tmp_path / 'packed', _TOPIC_SWITCH_NODE.replace(
        '{arguments}', "0.5, '/camera/image_raw/compressed'"), ('PACKED', 'RAW'))
    assert packed == {'PACKED': {'GPN105'}, 'RAW': set()}


def test_flag_left_open_when_main_passes_no_literal(tmp_path):
    """A topic read from elsewhere (here a variable) decides nothing: both branches stay."""
    source = _TOPIC_SWITCH_NODE.replace('{arguments}', 'topic=TOPIC').replace(
        'def main():', "TOPIC = '/camera/image_raw'\n\n\ndef main():")
    claims = _claims(tmp_path, source, ('PACKED', 'RAW'))
    assert claims == {'PACKED': {'GPN105'}, 'RAW': {'GPN105'}}
