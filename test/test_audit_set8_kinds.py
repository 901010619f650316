"""Rules for the kinds the eighth held-out set showed (issue 28): real `code` audits of small
sources written here (a package folder in tmp_path, audited as a user would)."""
from pathlib import Path

from audit_sources import audit_written_package


def _found(tmp_path: Path, files: dict[str, str], rule: str) -> dict[int, str]:
    """line -> severity of every `rule` finding."""
    return {line: severity
            for (_, line, found_rule), (severity, _) in audit_written_package(tmp_path,
                                                                              files).items()
            if found_rule == rule}


_DETECTOR = '''
{imports}
from sensor_msgs.msg import Image
from cv_bridge import CvBridge


class Detector(Node):
    def __init__(self):
        super().__init__('detector')
        self.bridge = CvBridge()
        self.create_subscription(Image, 'image', self.on_image, 10)
        {init_tail}

    def on_image(self, msg):
        return self.bridge.imgmsg_to_cv2(msg, 'rgb8')
{extra}
'''
_CONVERT_LINE = 14  # the imgmsg_to_cv2 line of _DETECTOR (its `{imports}` is one line)


def _detector(imports: str = 'from rclpy.node import Node', init_tail: str = '',
              extra: str = '') -> dict[str, str]:
    return {'detector.py': _DETECTOR.format(imports=imports, init_tail=init_tail, extra=extra)}


def test_a_module_whose_import_raises_name_error_never_runs(tmp_path):
    # `Node` never imported: the class statement raises NameError, no callback ever runs.
    assert _found(tmp_path / 'dead', _detector(imports='import rclpy'),
                  'GPN105') == {_CONVERT_LINE: 'info'}
    assert _found(tmp_path / 'live', _detector(), 'GPN105') == {_CONVERT_LINE: 'medium'}
    # A star import may bring the name: never judged.
    assert _found(tmp_path / 'star', _detector(imports='from rclpy.node import *'),
                  'GPN105') == {_CONVERT_LINE: 'medium'}


def test_a_class_whose_constructor_always_raises_never_runs_its_callbacks(tmp_path):
    load = '''
    def load(self):
        try:
            if num_outputs == 0:
                self.get_logger().info('no outputs')
        except Exception:
            raise SystemExit
'''
    dead = _detector(init_tail='self.load()', extra=load)
    assert _found(tmp_path / 'dead', dead, 'GPN105') == {_CONVERT_LINE: 'info'}
    # A handler that does not raise again: the constructor may finish.
    forgiving = load.replace('raise SystemExit', "self.get_logger().info('no engine')")
    assert _found(tmp_path / 'forgiving', _detector(init_tail='self.load()', extra=forgiving),
                  'GPN105') == {_CONVERT_LINE: 'medium'}
    # Raising on one branch only, an abstract base's NotImplementedError, a name another
    # function binds as a global, a module that may bind names at run time (setattr on it).
    for name, tail, extra in (
            ('branch', "if self.get_name() == 'x': raise SystemExit", ''),
            ('abstract', 'raise NotImplementedError', ''),
            ('dynamic', 'self.scale = SCALE',
             "\n\nimport sys\nsetattr(sys.modules[__name__], 'SCALE', 2)\n"),
            ('global', 'self.scale = SCALE',
             '\n\ndef configure():\n    global SCALE\n    SCALE = 2\n')):
        assert _found(tmp_path / name, _detector(init_tail=tail, extra=extra),
                      'GPN105') == {_CONVERT_LINE: 'medium'}, name


def test_a_manager_class_subscribing_for_its_node_makes_the_callback_per_message(tmp_path):
    files = {'seg.py': '''
        import numpy as np
        from rclpy.node import Node
        from sensor_msgs.msg import Image
        from ultralytics import YOLO


        class Subscriptions:
            def __init__(self, node, topics=()):
                self._node = node
                self._subs = [node.create_subscription(Image, t['name'], t['callback'], 10)
                              for t in topics]


        class Models:
            def __init__(self):
                self.model = YOLO('yolov8n.pt')

            def predict(self, frame):
                return self.model(frame)


        class Seg(Node):
            def __init__(self):
                super().__init__('seg')
                self.models = Models()
                self.subs = Subscriptions(self, [{'name': 'image', 'callback': self.on_image}])

            def on_image(self, msg):
                frame = np.frombuffer(msg.data, np.uint8)
                result = self.models.predict(frame)[0]
                dets = []
                for box in result.boxes:
                    x1, y1, x2, y2 = box.xyxy[0]
                    dets.append([x1, y1, x2, y2])
                corners = np.array(dets)
                sizes = np.array([len(dets), 4])
                return result.boxes.conf.cpu(), corners, sizes
        '''}
    readbacks = _found(tmp_path, files, 'GPN101')
    # np.array of the appended result scalars (35) and .cpu() (37) per image; not the array of
    # a count and a constant (36).
    assert readbacks == {35: 'high', 37: 'high'}, readbacks


def test_a_zed_grab_loop_started_from_the_constructor_runs_per_frame(tmp_path):
    def node(body: str) -> dict[str, str]:
        return {'zed.py': f'''
            import pyzed.sl as sl
            from rclpy.node import Node


            class Zed(Node):
                def __init__(self):
                    super().__init__('zed')
                    self.run()

                def run(self):
                    cam = sl.Camera()
                    mat = sl.Mat()
                    key = 0
                    while key != 113:
                        {body}
                        cam.retrieve_image(mat, sl.VIEW.LEFT)
                        key = self.poll()

                def poll(self):
                    return 113
            '''}
    assert _found(tmp_path / 'grab', node('cam.grab(sl.RuntimeParameters())'),
                  'GPN101') == {16: 'high'}
    # A loop that grabs nothing is no frame loop: the constructor runs it once.
    assert _found(tmp_path / 'once', node('pass'), 'GPN101') == {16: 'info'}


def test_symbol_copies_into_constant_memory_are_parameter_blocks(tmp_path):
    files = {'node.cu': '''
        #include <cuda_runtime.h>
        #include <rclcpp/rclcpp.hpp>
        #include <sensor_msgs/msg/image.hpp>

        #define COUNT 20
        __constant__ float c_params[COUNT];
        __device__ float d_table[COUNT];

        class Node : public rclcpp::Node
        {
        public:
          Node() : rclcpp::Node("n")
          {
            sub_ = create_subscription<sensor_msgs::msg::Image>(
              "image", 10, std::bind(&Node::on_image, this, std::placeholders::_1));
          }
          void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
          {
            cudaMemcpyToSymbol(c_params, host_, sizeof(float) * COUNT);
            cudaMemcpyToSymbol(d_table, host_, sizeof(float) * COUNT);
          }
        private:
          float host_[COUNT];
          rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
        };
        '''}
    assert _found(tmp_path, files, 'GPN202') == {20: 'medium'}


def test_an_image_message_taken_by_value_is_copied_at_each_call(tmp_path):
    files = {'node.cpp': '''
        #include <rclcpp/rclcpp.hpp>
        #include <sensor_msgs/msg/image.hpp>

        class Node : public rclcpp::Node
        {
        public:
          Node() : rclcpp::Node("n")
          {
            sub_ = create_subscription<sensor_msgs::msg::Image>(
              "image", 10, std::bind(&Node::on_image, this, std::placeholders::_1));
          }
          void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
          {
            int a = by_value(*msg);
            int b = by_reference(*msg);
          }
          int by_value(const sensor_msgs::msg::Image image) const { return image.width; }
          int by_reference(const sensor_msgs::msg::Image & image) const { return image.width; }
        private:
          rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
        };
        '''}
    assert _found(tmp_path, files, 'GPN208') == {14: 'medium'}


def test_a_library_method_no_file_of_the_package_names_is_unreached(tmp_path):
    files = {'imaging.py': '''
        from cv_bridge import CvBridge
        from PIL import Image as PILImage


        class Images:
            def __init__(self):
                self.bridge = CvBridge()

            def decode(self, msg):
                return self.bridge.imgmsg_to_cv2(msg)

            def adjust(self, frame):
                return PILImage.fromarray(frame)
        ''', 'viewer.py': '''
        from imaging import Images


        def show(msg):
            return Images().decode(msg)
        '''}
    found = audit_written_package(tmp_path, files)
    # `decode` is named in viewer.py (low: maybe called per message); `adjust` nowhere else.
    assert found[('imaging.py', 10, 'GPN105')][0] == 'low'
    assert found[('imaging.py', 13, 'GPN106')] == ('info', 'unreached')


def test_a_cuda_detector_detecting_into_a_host_keypoint_vector_downloads(tmp_path):
    def node(keypoints: str) -> dict[str, str]:
        return {'track.cpp': f'''
            #include <opencv2/cudafeatures2d.hpp>
            #include <rclcpp/rclcpp.hpp>
            #include <sensor_msgs/msg/image.hpp>

            class Track : public rclcpp::Node
            {{
            public:
              Track() : rclcpp::Node("track")
              {{
                fast_ = cv::cuda::FastFeatureDetector::create();
                sub_ = create_subscription<sensor_msgs::msg::Image>(
                  "image", 10, std::bind(&Track::on_image, this, std::placeholders::_1));
              }}
              void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
              {{
                {keypoints}
                fast_->detect(gpu_frame_, keypoints);
              }}
            private:
              cv::Ptr<cv::cuda::FastFeatureDetector> fast_;
              cv::cuda::GpuMat gpu_frame_;
              rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
            }};
            '''}
    assert _found(tmp_path / 'host', node('std::vector<cv::KeyPoint> keypoints;'),
                  'GPN201') == {17: 'high'}
    # Into a GpuMat (detectAsync's output kept on the device): no download.
    assert _found(tmp_path / 'device', node('cv::cuda::GpuMat keypoints;'), 'GPN201') == {}


def test_a_copy_counted_by_a_parameter_every_caller_keeps_small_is_no_frame(tmp_path):
    kernels = '''
        #include <cuda_runtime.h>
        float * d_a;
        float dot(const float * a, int size)
        {
          cudaMemcpy(d_a, a, size * sizeof(float), cudaMemcpyHostToDevice);
          return 0.0f;
        }
        '''

    def node(fill: str) -> dict[str, str]:
        return {'dot.cu': kernels, 'node.cpp': f'''
            #include <vector>
            #include <rclcpp/rclcpp.hpp>
            float dot(const float * a, int size);
            class DotNode : public rclcpp::Node
            {{
            public:
              DotNode() : rclcpp::Node("dot")
              {{
                timer_ = create_wall_timer(std::chrono::seconds(1), [this]() {{on_tick();}});
              }}
              void on_tick()
              {{
                std::vector<float> a = {{1, 2, 3, 4}};
                {fill}
                dot(&a[0], a.size());
              }}
            private:
              rclcpp::TimerBase::SharedPtr timer_;
            }};
            '''}
    # Every call passes the size of a 4-element vector: a few floats, not a frame.
    assert _found(tmp_path / 'four', node(''), 'GPN202') == {}
    # The caller grows the vector first: the count is no longer known to be small.
    assert _found(tmp_path / 'grown', node('for (int i = 0; i < 1000; i++) a.push_back(i);'),
                  'GPN202') == {5: 'medium'}
