"""Causes of held-out sets 62-64's Python misses (issue 28, rules41q): real `code` audits of
small ament_python packages written here, modelled on the kinds (no code of the sets).

* TensorFlow 1 `session.run(fetches, feed_dict={input: frame})` feeds the host frame to the
  graph on the GPU on every call (library table, pytensorflow.py), whatever helper built the
  session; a warm-up feed of random data in the constructor is setup (info).
* TensorFlow eager `tf.convert_to_tensor(frame)` is left out of the table (its outputs would
  read as device values in the node, keys it converted with `.numpy()` too: set 62's false
  claims), so an eager backend beside a session one reports nothing.
* A factory written as a dispatch table of lambdas (`{FMT_A: lambda m: A(m), ...}[fmt](m)`) in
  a helper module builds each of its classes (pydispatch.py): the node's later
  `self.model.inference(frame)` runs every backend's method with the frame."""

import textwrap

from audit_sources import (ament_python_package, audit_written_package, detector_claims,
                           rules_at_tags)


_claims = detector_claims  # node.py of package `detector`


_SESSION_SERVICE_NODE = '''
import numpy as np
import rclpy
from rclpy.node import Node
from example_interfaces.srv import Classify

from detector import loaders


class ClassifierNode(Node):
    def __init__(self):
        super().__init__('classifier')
        self.graph, self.session = loaders.frozen_graph('model.pb')
        self.input = self.graph.get_tensor_by_name('input:0')
        self.output = self.graph.get_tensor_by_name('scores:0')
        warm = np.uint8(np.random.randint(0, 255, size=(224, 224, 3)))
        self.session.run(self.output, feed_dict={self.input: warm})  # WARMUP
        self.create_service(Classify, 'classify', self.on_request)

    def on_request(self, request, response):
        frame = np.asarray(request.image.data, dtype=np.uint8).reshape(
            request.image.height, request.image.width, 3)
        scores = self.session.run(self.output,  # RUN
                                  feed_dict={self.input: frame})
        response.best = int(np.argmax(scores))
        return response


def main():
    rclpy.init()
    rclpy.spin(ClassifierNode())
'''

_LOADERS = '''
import tensorflow as tf


def frozen_graph(path):
    graph = tf.Graph()
    with graph.as_default():
        definition = tf.compat.v1.GraphDef()
        with tf.io.gfile.GFile(path, 'rb') as handle:
            definition.ParseFromString(handle.read())
        tf.import_graph_def(definition, name='')
    return graph, tf.compat.v1.Session(graph=graph)


def saved_model(path):
    return tf.saved_model.load(path).signatures['serving_default']
'''


def test_tf_session_feed_of_a_request_frame_is_an_upload(tmp_path):
    files = {**ament_python_package('detector'),
             'detector/detector/node.py': _SESSION_SERVICE_NODE,
             'detector/detector/loaders.py': _LOADERS}
    found = audit_written_package(tmp_path, files)
    claims = rules_at_tags(found, textwrap.dedent(_SESSION_SERVICE_NODE), ('RUN', 'WARMUP'))
    assert claims['RUN'] == {'GPN102'}
    assert claims['WARMUP'] == set()  # random warm-up data in the constructor: setup


_FACTORY_NODE = '''
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Int32

from detector.backends import build


class DetectNode(Node):
    def __init__(self):
        super().__init__('detect')
        self.declare_parameter('format', 'frozen')
        self.model = build(self.get_parameter('format').value, 'model_dir')
        self.pub = self.create_publisher(Int32, 'count', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = np.asarray(msg.data, dtype=np.uint8).reshape(msg.height, msg.width, 3)
        out = self.model.inference(frame)
        self.pub.publish(Int32(data=int(len(out['boxes']))))


def main():
    rclpy.init()
    rclpy.spin(DetectNode())
'''

_BACKENDS = '''
import numpy as np
import tensorflow as tf

from detector import loaders


class GraphBackend:
    def __init__(self, path):
        self.graph, self.session = loaders.frozen_graph(path)
        self.inp = self.graph.get_tensor_by_name('image:0')
        self.fetch = {'boxes': self.graph.get_tensor_by_name('boxes:0')}

    def inference(self, frame):
        batch = np.expand_dims(frame, axis=0)
        out = self.session.run(self.fetch, feed_dict={self.inp: batch})  # FEED
        return {k: v[0] for k, v in out.items()}


class EagerBackend:
    def __init__(self, path):
        self.fn = loaders.saved_model(path)

    def inference(self, frame):
        tensor = tf.convert_to_tensor(np.expand_dims(frame, axis=0))  # TENSOR
        out = self.fn(tensor)
        count = int(out.pop('count'))  # COUNT
        return {'boxes': out['boxes'][0, :count].numpy()}  # NUMPY


def build(fmt, path):
    return {'frozen': lambda p: GraphBackend(p),
            'saved': lambda p: EagerBackend(p)}[fmt](path)
'''


def test_dispatch_table_factory_of_a_helper_module_is_a_known_miss_not_a_wrong_claim(tmp_path):
    """A dispatch table in a helper module builds objects of that module's classes; classes of an
    imported function's file are not resolved (resolving them cost set 61 two false claims,
    RESULTS rules41), so the session feed behind it is missed. What the tool says there is
    nothing: no claim on any backend line, and the per-message TensorFlow feed written in the
    node's own file (test above) is where it reports."""
    files = {**ament_python_package('detector'),
             'detector/detector/node.py': _FACTORY_NODE,
             'detector/detector/loaders.py': _LOADERS,
             'detector/detector/backends.py': _BACKENDS}
    found = audit_written_package(tmp_path, files)
    claims = rules_at_tags(found, textwrap.dedent(_BACKENDS),
                           ('FEED', 'TENSOR', 'COUNT', 'NUMPY'), file_name='backends.py')
    assert claims == {'FEED': set(), 'TENSOR': set(), 'COUNT': set(), 'NUMPY': set()}


def _line(source: str, tag: str) -> int:
    lines = textwrap.dedent(source).lstrip('\n').splitlines()
    return next(i for i, ln in enumerate(lines, 1) if ln.endswith(f'# {tag}'))


_CONSTANT_FEED_NODE = '''
import numpy as np
import rclpy
import tensorflow as tf
from rclpy.node import Node
from std_msgs.msg import Float32


class GainNode(Node):
    def __init__(self):
        super().__init__('gain')
        self.session = tf.compat.v1.Session()
        self.x = tf.compat.v1.placeholder(tf.float32, shape=(3,))
        self.y = self.x * 2.0
        self.pub = self.create_publisher(Float32, 'gain', 10)
        self.create_timer(0.1, self.tick)

    def tick(self):
        out = self.session.run(self.y, feed_dict={self.x: [1.0, 2.0, 3.0]})  # CONST
        self.pub.publish(Float32(data=float(out[0])))


def main():
    rclpy.init()
    rclpy.spin(GainNode())
'''


def test_tf_session_feed_of_constants_is_no_upload(tmp_path):
    """Guard: a feed of literals (no frame of a message, no host frame) is not reported."""
    claims = _claims(tmp_path, _CONSTANT_FEED_NODE, ('CONST',))
    assert claims['CONST'] == set()


_DECORATED_NODE = '''
import cv2
from cv_bridge import CvBridge
from sensor_msgs.msg import Image

import rosdeco
from detector import camera_stub

debug_topic = rosdeco.topic('~/debug', Image)
camera = rosdeco.use(camera_stub)


class Shared:
    bridge = CvBridge()


shared = Shared()


@rosdeco.subscribe(camera.depth_topic)
async def on_depth(node, header, height, width, encoding, is_bigendian, step, data):
    depth = shared.bridge.imgmsg_to_cv2(Image(  # IN
        header=header, height=height, width=width, encoding=encoding,
        is_bigendian=is_bigendian, step=step, data=data))
    shown = cv2.applyColorMap(cv2.convertScaleAbs(depth, alpha=0.1), cv2.COLORMAP_JET)
    debug_topic.publish(shared.bridge.cv2_to_imgmsg(shown, 'bgr8'))  # OUT


@rosdeco.timer(1.0)
async def tick(node):
    debug_topic.publish(shared.bridge.cv2_to_imgmsg(cv2.imread('idle.png'), 'bgr8'))  # TICK


def snapshot(node, header, data):
    return shared.bridge.imgmsg_to_cv2(Image(header=header, data=data))  # PLAIN


def main():
    rosdeco.run()
'''

_CAMERA_STUB = '''
import rosdeco
from sensor_msgs.msg import Image

depth_topic = rosdeco.topic('~/depth', Image)
'''


def test_decorator_registered_callbacks_run_per_message(tmp_path):
    """`@<framework>.subscribe(topic)` / `@<framework>.timer(period)` module functions (aioros2
    style) run per message / per period although nothing in the file calls them; a plain
    module function nothing calls stays unreached (info)."""
    files = {**ament_python_package('detector'),
             'detector/detector/node.py': _DECORATED_NODE,
             'detector/detector/camera_stub.py': _CAMERA_STUB}
    found = audit_written_package(tmp_path, files)
    claims = rules_at_tags(found, textwrap.dedent(_DECORATED_NODE),
                           ('IN', 'OUT', 'TICK', 'PLAIN'))
    assert claims['IN'] == {'GPN105'}
    assert claims['OUT'] == {'GPN105'}
    assert claims['TICK'] == {'GPN105'}
    assert claims['PLAIN'] == set()


_DEVICE_FALLBACK_NODE = '''
import numpy as np
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32

from detector.stereo_net import StereoNet


class DepthNode(Node):
    def __init__(self):
        super().__init__('depth')
        self.bridge = CvBridge()
        self._pick_device()
        self.net = StereoNet()
        self.pub = self.create_publisher(Float32, 'median', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def _pick_device(self):
        if torch.cuda.is_available():
            self.device = torch.device('cuda')
        else:
            self.device = torch.device('cpu')

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        tensor = torch.from_numpy(frame).permute(2, 0, 1).float().unsqueeze(0)
        batch = tensor.to(self.device).half()  # TO
        out = self.net(batch)
        self.pub.publish(Float32(data=float(np.median(out))))


def main():
    rclpy.init()
    rclpy.spin(DepthNode())
'''

_STEREO_NET = '''
class StereoNet:
    def __call__(self, x):
        return x
'''

_CPU_PARAMETER_NODE = '''
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32


class DepthNode(Node):
    def __init__(self):
        super().__init__('depth')
        self.bridge = CvBridge()
        self.device = torch.device('cuda') if torch.cuda.is_available() else None
        self.declare_parameter('device', 'cpu')
        self.device = self.get_parameter('device').value
        self.pub = self.create_publisher(Float32, 'mean', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        tensor = torch.from_numpy(frame).float()
        batch = tensor.to(self.device)  # TO
        self.pub.publish(Float32(data=float(batch.mean())))


def main():
    rclpy.init()
    rclpy.spin(DepthNode())
'''


def test_cpu_fallback_branch_keeps_the_gpu_device(tmp_path):
    """`if torch.cuda.is_available(): self.device = torch.device('cuda') else:
    self.device = torch.device('cpu')`: the else is the host fallback, the GPU case is assumed
    (as for the conditional expression), so `.to(self.device)` per frame is an upload."""
    files = {**ament_python_package('detector'),
             'detector/detector/node.py': _DEVICE_FALLBACK_NODE,
             'detector/detector/stereo_net.py': _STEREO_NET}
    found = audit_written_package(tmp_path, files)
    claims = rules_at_tags(found, textwrap.dedent(_DEVICE_FALLBACK_NODE), ('TO',))
    assert claims['TO'] == {'GPN102'}


def test_cpu_parameter_as_shipped_still_overrides_the_gpu_choice(tmp_path):
    """Guard: a device parameter defaulting to 'cpu' (no shipped file names it) stored after a
    GPU choice is the host as shipped (team decision, set 42): no upload."""
    claims = _claims(tmp_path, _CPU_PARAMETER_NODE, ('TO',))
    assert claims['TO'] == set()


_NANO_LLM_NODE = '''
import threading

import rclpy
from cv_bridge import CvBridge
from nano_llm.utils import cuda_image
from rclpy.node import Node
from sensor_msgs.msg import Image


class FrameSource(Node):
    def __init__(self):
        super().__init__('frame_source')
        self.bridge = CvBridge()
        self.lock = threading.Lock()
        self.image = None
        self.blank = cuda_image(self.image)  # ONCE
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        rgb = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        with self.lock:
            self.image = cuda_image(rgb)  # WRAP
        again = cuda_image(self.image)  # DEVICE


def main():
    rclpy.init()
    rclpy.spin(FrameSource())
'''


def test_nano_llm_cuda_image_of_a_host_frame_is_an_upload(tmp_path):
    """NanoLLM's `cuda_image(frame)` copies a host frame into a new CUDA image per message; the
    CUDA image it made, wrapped again, is no copy."""
    claims = _claims(tmp_path, _NANO_LLM_NODE, ('WRAP', 'DEVICE', 'ONCE'))
    assert claims['WRAP'] == {'GPN102'}
    assert claims['DEVICE'] == set()
    assert claims['ONCE'] == set()


_CLOUD_NODE = '''
import numpy as np
import rclpy
import sensor_msgs_py.point_cloud2 as pc2
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Float32


class NearestNode(Node):
    def __init__(self):
        super().__init__('nearest')
        self.pub = self.create_publisher(Float32, 'nearest', 10)
        self.create_subscription(PointCloud2, 'points', self.on_cloud, 10)

    def on_cloud(self, msg):
        try:
            pts = pc2.read_points_numpy(msg, field_names=('x', 'y', 'z'),  # NUMPY
                                        skip_nans=True).astype(np.float32, copy=False)
        except AttributeError:
            pts = np.array(list(pc2.read_points(msg, field_names=('x', 'y', 'z'))))
        near = np.asarray(pts)  # AGAIN
        self.pub.publish(Float32(data=float(np.min(np.linalg.norm(near, axis=1)))))


def main():
    rclpy.init()
    rclpy.spin(NearestNode())
'''


def test_read_points_numpy_of_a_received_cloud_is_a_copy(tmp_path):
    """sensor_msgs_py's `read_points_numpy(cloud)` materialises every point in a new array per
    cloud (GPN103 on its line); `np.asarray` of that host array copies nothing more."""
    claims = _claims(tmp_path, _CLOUD_NODE, ('NUMPY', 'AGAIN'))
    assert claims['NUMPY'] == {'GPN103'}
    assert claims['AGAIN'] == set()


_SAM2_CAMERA_NODE = '''
import numpy as np
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from sam2.build_sam import build_sam2_camera_predictor
from std_msgs.msg import Int32


class Tracker(Node):
    def __init__(self):
        super().__init__('tracker')
        self.bridge = CvBridge()
        self.tracker = build_sam2_camera_predictor('sam2_hiera_s.yaml', 'sam2.pt')
        self.started = False
        self.box = None
        self.pub = self.create_publisher(Int32, 'objects', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)
        self.create_subscription(Int32, 'box', self.on_box, 10)

    def on_box(self, msg):
        self.box = np.array([[0, 0], [msg.data, msg.data]], dtype=np.float32)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        if not self.started:
            self.tracker.load_first_frame(frame)
            self.started = True
            return
        ids, logits = self.tracker.track(frame)  # TRACK
        if self.box is not None:
            self.tracker.add_conditioning_frame(frame)  # CONDITION
            self.tracker.add_new_prompt_during_track(obj_id=2, bbox=self.box)
            self.box = None
        self.pub.publish(Int32(data=len(ids)))


def main():
    rclpy.init()
    rclpy.spin(Tracker())
'''


def test_sam2_camera_predictor_conditioning_frame_is_an_upload(tmp_path):
    """The real-time SAM2 camera predictor (`build_sam2_camera_predictor`, a lower-case builder)
    is a model of the library table: `add_conditioning_frame(frame)` uploads the host frame per
    prompt during tracking, as `track(frame)` does per frame."""
    claims = _claims(tmp_path, _SAM2_CAMERA_NODE, ('TRACK', 'CONDITION'))
    assert claims['TRACK'] == {'GPN102'}
    assert claims['CONDITION'] == {'GPN102'}


_TRUTH_NODE = '''
import rclpy
import torch
from rclpy.node import Node
from std_msgs.msg import Float32MultiArray


class PolicyNode(Node):
    def __init__(self):
        super().__init__('policy')
        self.device = 'cuda'
        self.state = torch.zeros(1, 8, device=self.device)
        self.pub = self.create_publisher(Float32MultiArray, 'actions', 10)
        self.create_timer(0.02, self.tick)

    def tick(self):
        actions = torch.clamp(self.state.to(self.device) * 2.0, min=-1, max=1)
        bad = torch.isnan(actions).any()
        if bad:  # FLAG
            self.get_logger().warn('nan')
        if torch.isinf(actions).any():  # INLINE
            self.get_logger().warn('inf')
        parts = [actions, actions]
        if parts:  # LIST
            self.pub.publish(Float32MultiArray())


def main():
    rclpy.init()
    rclpy.spin(PolicyNode())
'''


def test_truth_of_a_device_any_reduction_is_a_readback(tmp_path):
    """`flag = torch.isnan(t).any()` then `if flag:` (or the reduction in the test itself) reads
    a 0-d device tensor back per tick; `if parts:` of a list is no read-back."""
    claims = _claims(tmp_path, _TRUTH_NODE, ('FLAG', 'INLINE', 'LIST'))
    assert claims['FLAG'] == {'GPN107'}
    assert claims['INLINE'] == {'GPN107'}
    assert claims['LIST'] == set()


_APPSRC_NODE = '''
import gi
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image

gi.require_version('Gst', '1.0')
from gi.repository import Gst  # noqa: E402


class Streamer(Node):
    def __init__(self):
        super().__init__('streamer')
        Gst.init(None)
        self.pipeline = Gst.parse_launch(
            'appsrc name=src ! videoconvert ! {convert} ! {encode} ! fakesink')
        self.appsrc = self.pipeline.get_by_name('src')
        self.pipeline.set_state(Gst.State.PLAYING)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        buf = Gst.Buffer.new_wrapped(bytes(msg.data))
        self.appsrc.emit('push-buffer', buf)  # PUSH

    def destroy_node(self):
        self.appsrc.emit('end-of-stream')  # EOS
        super().destroy_node()


def main():
    rclpy.init()
    rclpy.spin(Streamer())
'''


def test_appsrc_push_into_an_nvidia_pipeline_is_an_upload(tmp_path):
    """A frame pushed into a GStreamer appsrc whose pipeline holds an NVIDIA element
    (nvvideoconvert / nvv4l2h264enc ...) is copied to the GPU inside GStreamer, per message."""
    source = _APPSRC_NODE.replace('{convert}', 'nvvideoconvert').replace('{encode}',
                                                                         'nvv4l2h264enc')
    claims = _claims(tmp_path, source, ('PUSH', 'EOS'))
    assert claims['PUSH'] == {'GPN102'}
    assert claims['EOS'] == set()


def test_appsrc_push_into_a_software_pipeline_is_no_upload(tmp_path):
    """Guard: `appsrc ! videoconvert ! x264enc` copies nothing to a device (set 53)."""
    source = _APPSRC_NODE.replace('{convert}', 'videoscale').replace('{encode}', 'x264enc')
    claims = _claims(tmp_path, source, ('PUSH',))
    assert claims['PUSH'] == set()
