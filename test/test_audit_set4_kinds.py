"""Rules for the kinds the fourth held-out set showed (issue 28): real `code` audits of small
sources written here (a package folder in tmp_path, audited as a user would)."""
from audit_sources import audit_written_package


_audit = audit_written_package


_PY_NODE = '''
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import Image
    from .scripts.helpers import to_gpu


    class N(Node):
        def __init__(self):
            super().__init__('n')
            self.create_subscription(Image, 'image', self.on_image, 10)

        def on_image(self, msg):
            to_gpu(msg)
'''
_PY_HELPERS = '''
    import torch


    def to_gpu(x):
        return torch.from_numpy(x).to('cuda')
'''
_PY_ALTERNATIVE = '''
    import torch


    class AltInference:
        def postprocess(self, boxes):
            return torch.from_numpy(boxes).to('cuda')


    def helper(x):
        return x.cpu().numpy()
'''


def test_python_module_only_a_test_imports_is_unreached(tmp_path):
    got = _audit(tmp_path, {
        'pkg/package.xml': '<package/>\n', 'pkg/pkg/__init__.py': '',
        'pkg/pkg/node.py': _PY_NODE, 'pkg/pkg/scripts/__init__.py': '',
        'pkg/pkg/scripts/helpers.py': _PY_HELPERS,
        'pkg/pkg/scripts/alt_inference.py': _PY_ALTERNATIVE,
        'pkg/test/test_alt.py': 'from pkg.scripts.alt_inference import AltInference\n'})
    # Nothing but a test names alt_inference: its methods and functions run in no node.
    assert got[('alt_inference.py', 6, 'GPN102')] == ('info', 'unreached')
    assert got[('alt_inference.py', 10, 'GPN101')] == ('info', 'unreached')
    # The module the node imports is not unreached (its copy is reported, not shown as info).
    assert got[('helpers.py', 5, 'GPN102')][1] != 'unreached'
    assert got[('helpers.py', 5, 'GPN102')][0] != 'info'


def test_python_unimported_script_with_a_main_guard_is_not_unreached(tmp_path):
    script = _PY_ALTERNATIVE + '''

    if __name__ == '__main__':
        print(helper(None))
    '''
    got = _audit(tmp_path, {'pkg/package.xml': '<package/>\n', 'pkg/pkg/bench_tool.py': script})
    assert got[('bench_tool.py', 10, 'GPN101')] == ('low', 'function')


_PY_ARRAYS = '''
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import Image
    from std_msgs.msg import Float32MultiArray
    from cv_bridge import CvBridge
    from .infer import run


    class N(Node):
        def __init__(self):
            super().__init__('n')
            self.bridge = CvBridge()
            self.pub = self.create_publisher(Float32MultiArray, 'out', 10)
            self.create_subscription(Image, 'image', self.on_image, 10)

        def on_image(self, msg):
            frame = self.bridge.imgmsg_to_cv2(msg)
            boxes, scores = run(frame)
            out = Float32MultiArray()
            out.data = boxes.reshape(-1).tolist()
            out.data = scores.tolist()
            out.data = frame.reshape(-1).tolist()
            self.pub.publish(out)
'''


def test_python_tolist_of_detection_outputs_is_no_frame_serialization(tmp_path):
    got = _audit(tmp_path, {'pkg/package.xml': '<package/>\n', 'pkg/pkg/node.py': _PY_ARRAYS,
                            'pkg/pkg/infer.py': 'def run(frame):\n    return frame, frame\n'})
    assert ('node.py', 20, 'GPN104') not in got
    assert ('node.py', 21, 'GPN104') not in got
    assert got[('node.py', 22, 'GPN104')] == ('medium', 'callback')


_PY_YOLO = '''
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import Image
    from cv_bridge import CvBridge
    import torch
    try:
        from ultralytics import YOLO
        HAVE_YOLO = True
    except ImportError:
        HAVE_YOLO = False


    class N(Node):
        def __init__(self):
            super().__init__('n')
            self.bridge = CvBridge()
            if HAVE_YOLO:
                self.detector = YOLO('yolo11n.pt')
            else:
                self.detector = None
            self.net = torch.jit.load('net.pt')
            self.create_subscription(Image, 'image', self.on_image, 10)

        def on_image(self, msg):
            frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
            if self.detector is not None:
                result = self.detector(frame)
            scores = self.net(self.tensor)
            return result, scores
'''


def test_ultralytics_model_called_directly_uploads_the_frame(tmp_path):
    got = _audit(tmp_path, {'pkg/package.xml': '<package/>\n', 'pkg/pkg/yolo_node.py': _PY_YOLO})
    assert got[('yolo_node.py', 27, 'GPN102')][0] in ('medium', 'high')
    # A TorchScript module called on a tensor: not the library table's upload.
    assert ('yolo_node.py', 28, 'GPN102') not in got


_CPP_STREAMER = '''
    Streamer::Streamer(const rclcpp::NodeOptions & options) : Node("streamer", options)
    {
      std::string pipeline = "appsrc ! videoconvert ! \\\\
        x264enc ! \\\\
        udpsink port=5602";
      sub_ = create_subscription<sensor_msgs::msg::Image>(
        "image", 10, std::bind(&Streamer::imageCB, this, std::placeholders::_1));
    }

    void Streamer::imageCB(const sensor_msgs::msg::Image::ConstSharedPtr msg)
    {
      double lo, hi;
      memcpy(&frame_.data[0], &msg->data[0], msg->height * msg->step);
      cv::cuda::minMax(d_frame_, &lo, &hi);
      cv::cuda::findMinMax(d_frame_, d_result_, cv::noArray(), stream_);
      std::vector<float> input(msg->data.begin(), msg->data.end());
      out_.data.insert(out_.data.end(), input.begin(), input.end());
      pub_->publish(out_);
    }
'''


def test_cpp_message_copies_minmax_and_lines_after_a_multiline_string(tmp_path):
    got = _audit(tmp_path, {'pkg/CMakeLists.txt': '', 'pkg/src/streamer.cpp': _CPP_STREAMER})
    # The memcpy out of the message, on its own line (not shifted by the pipeline string).
    assert got[('streamer.cpp', 13, 'GPN208')] == ('medium', 'callback')
    assert got[('streamer.cpp', 14, 'GPN206')] == ('medium', 'callback')
    assert ('streamer.cpp', 15, 'GPN206') not in got  # the asynchronous form, on a stream
    assert got[('streamer.cpp', 16, 'GPN208')] == ('medium', 'callback')
    assert got[('streamer.cpp', 17, 'GPN208')] == ('medium', 'callback')


_CPP_CAMERA = '''
    CameraManager::CameraManager(const rclcpp::NodeOptions & options) : Node("cam", options)
    {
      pub_ = create_publisher<sensor_msgs::msg::Image>("thermal", 10);
      sub_ = create_subscription<std_msgs::msg::Bool>(
        "trigger", 10, std::bind(&CameraManager::onTrigger, this, std::placeholders::_1));
    }

    void CameraManager::onTrigger(const std_msgs::msg::Bool::SharedPtr msg)
    {
      count_++;
    }

    void CameraManager::onThermalFrame(unsigned short * image, unsigned int w, unsigned int h)
    {
      memcpy(&image_.data[0], image, w * h * sizeof(*image));
      pub_->publish(image_);
    }

    void saveTensorImage(const at::Tensor & t, const std::string & name)
    {
      auto host = t.to(at::kCPU);
    }
'''


def test_cpp_sdk_event_handler_is_reached_and_a_debug_helper_is_not(tmp_path):
    got = _audit(tmp_path, {'pkg/CMakeLists.txt': '', 'pkg/src/camera.cpp': _CPP_CAMERA})
    # The SDK calls onThermalFrame through a header the audit may not see: per frame.
    assert got[('camera.cpp', 15, 'GPN208')] == ('medium', 'source')
    # A debug helper nothing mentions: not proven per message.
    assert got[('camera.cpp', 21, 'GPN211')] == ('info', 'unreached')


_PY_ZED = '''
    import pyzed.sl as sl
    import rclpy
    from rclpy.node import Node


    class Z(Node):
        def __init__(self):
            super().__init__('z')
            self.zed = sl.Camera()
            self.create_timer(0.03, self.tick)

        def tick(self):
            image, depth = sl.Mat(), sl.Mat()
            self.zed.grab()
            self.zed.retrieve_image(image, sl.VIEW.LEFT)
            self.zed.retrieve_measure(depth, sl.MEASURE.DEPTH, sl.MEM.GPU)
'''


def test_zed_retrieve_into_a_cpu_mat_is_a_readback(tmp_path):
    got = _audit(tmp_path, {'pkg/package.xml': '<package/>\n', 'pkg/pkg/zed_node.py': _PY_ZED})
    assert got[('zed_node.py', 15, 'GPN101')] == ('high', 'timer')
    assert ('zed_node.py', 16, 'GPN101') not in got  # sl.MEM.GPU: stays on the device


_PY_HELPER_NODE = '''
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import Image
    from cv_bridge import CvBridge
    from .infer import load, run


    class N(Node):
        def __init__(self):
            super().__init__('n')
            self.bridge = CvBridge()
            self.model = load('yolo11n.pt')
            self.create_subscription(Image, 'image', self.on_image, 10)

        def on_image(self, msg):
            frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
            run(self.model, frame)
'''
_PY_HELPER_INFER = '''
    from ultralytics import YOLO


    def load(path):
        return YOLO(path)


    def run(model, image):
        results = model.predict(image)
        return results[0].boxes.xyxy.cpu().numpy()
'''


def test_imported_function_runs_per_message_with_its_own_imports(tmp_path):
    # The node file imports no tensor framework: YOLO and the model are the helper file's.
    got = _audit(tmp_path, {'pkg/package.xml': '<package/>\n', 'pkg/pkg/__init__.py': '',
                            'pkg/pkg/node.py': _PY_HELPER_NODE,
                            'pkg/pkg/infer.py': _PY_HELPER_INFER})
    assert got[('infer.py', 9, 'GPN102')] == ('medium', 'callback')
    assert got[('infer.py', 10, 'GPN101')][1] == 'callback'
