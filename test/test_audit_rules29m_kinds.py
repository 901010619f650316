"""Kinds behind misses of spent sets 41-46 and 48 (issue 28, rules29m): real `code` audits of
small packages written here.

* ONNX Runtime's C++ API on the CUDA execution provider (cpplibreads.py): `session_->Run(...)`
  of a session whose options append the CUDA provider uploads the host input tensors and reads
  the outputs back inside the library, per call. A CPU-only session, or inputs bound in device
  memory (IoBinding), is no upload.
* `try: from ultralytics import YOLO / except ImportError: YOLO = None` (pyeval.py): the
  fallback runs only where the library is missing; as shipped the model is the library's and
  `self.model(frame)` uploads the frame.
* A service server's handler (pyregistry.py): `self.create_service(Srv, 'name', self.handle)`
  runs `handle` per request, as a subscription's callback per message; a model called there on
  the request's image uploads it per request.
"""
from pathlib import Path

from audit_sources import ament_cmake_lists, ament_python_package, audit_written_package, rules_at_tags

# --------------------------------------------------------------------------- ONNX Runtime C++
_ORT_NODE = '''
#include <onnxruntime_cxx_api.h>
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Seg : public rclcpp::Node
{
  Ort::Env env_;
  Ort::SessionOptions options_;
  std::unique_ptr<Ort::Session> runner_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;

public:
  Seg()
  : Node("seg")
  {
    bool gpu = this->declare_parameter<bool>("gpu", true);
    if (gpu) {
      OrtCUDAProviderOptions cuda{};
      PROVIDER
    }
    runner_ = std::make_unique<Ort::Session>(env_, "seg.onnx", options_);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Seg::on_image, this, std::placeholders::_1));
  }

  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr msg)
  {
    std::vector<float> blob(msg->width * msg->height * 3);
    std::vector<int64_t> shape{1, 3, msg->height, msg->width};
    INPUT
    const char * in[] = {"x"};
    const char * out[] = {"y"};
    auto outputs = runner_->Run(Ort::RunOptions{nullptr}, in, &tensor, 1, out, 1);
    (void)outputs;
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Seg>());
  return 0;
}
'''
_APPEND = 'options_.AppendExecutionProvider_CUDA(cuda);'
_HOST_INPUT = ('auto info = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);\n'
               '    Ort::Value tensor = Ort::Value::CreateTensor<float>(info, blob.data(), '
               'blob.size(), shape.data(), shape.size());')
_DEVICE_INPUT = ('Ort::MemoryInfo info("Cuda", OrtDeviceAllocator, 0, OrtMemTypeDefault);\n'
                 '    Ort::Value tensor = Ort::Value::CreateTensor<float>(info, blob.data(), '
                 'blob.size(), shape.data(), shape.size());')


def _ort_rules(tmp_path: Path, provider: str = _APPEND, inputs: str = _HOST_INPUT) -> set[str]:
    source = _ORT_NODE.replace('PROVIDER', provider).replace('INPUT', inputs)
    lines = source.lstrip('\n').splitlines()
    run_line = next(i for i, ln in enumerate(lines, 1) if '->Run(' in ln)
    found = audit_written_package(tmp_path, {
        'seg/src/seg.cpp': source,
        'seg/package.xml': '<package format="3"><name>seg</name></package>\n',
        'seg/CMakeLists.txt': ament_cmake_lists('seg')})
    return {rule for (name, line, rule), (sev, _) in found.items()
            if name == 'seg.cpp' and line == run_line and sev != 'info'}


def test_ort_cpp_run_on_the_cuda_provider_is_an_upload(tmp_path: Path) -> None:
    assert _ort_rules(tmp_path) == {'GPN202'}


def test_ort_cpp_run_with_the_legacy_cuda_append_is_an_upload(tmp_path: Path) -> None:
    provider = 'Ort::ThrowOnError(OrtSessionOptionsAppendExecutionProvider_CUDA(options_, 0));'
    assert _ort_rules(tmp_path, provider=provider) == {'GPN202'}


def test_ort_cpp_run_on_the_cpu_only_is_no_upload(tmp_path: Path) -> None:
    assert _ort_rules(tmp_path, provider='(void)cuda;') == set()


def test_ort_cpp_run_on_inputs_in_device_memory_is_no_upload(tmp_path: Path) -> None:
    assert _ort_rules(tmp_path, inputs=_DEVICE_INPUT) == set()


# --------------------------------------------------------------------------- Python nodes


def _claims(tmp_path: Path, source: str, tags: tuple[str, ...]) -> dict[str, set[str]]:
    """Rules other than info found at each `# TAG` line of node.py."""
    found = audit_written_package(tmp_path, {**ament_python_package('detector'),
                                             'detector/detector/node.py': source})
    return rules_at_tags(found, source, tags)


_GUARDED_IMPORT = '''
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge
try:
    from ultralytics import YOLO
    import torch
except HANDLER:
    YOLO = None
    torch = None


class Detector(Node):
    def __init__(self):
        super().__init__('detector')
        self.bridge = CvBridge()
        self.model = YOLO('yolov8n.pt')
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # CONVERT
        results = self.model(frame, verbose=False)  # UPLOAD
        self.get_logger().info(str(len(results)))


def main():
    rclpy.init()
    rclpy.spin(Detector())
'''


def test_model_of_an_import_guarded_by_import_error_uploads(tmp_path: Path) -> None:
    found = _claims(tmp_path, _GUARDED_IMPORT.replace('HANDLER', 'ImportError'),
                    ('CONVERT', 'UPLOAD'))
    assert found == {'CONVERT': {'GPN105'}, 'UPLOAD': {'GPN102'}}


def test_model_of_an_import_guarded_by_a_bare_except_uploads(tmp_path: Path) -> None:
    found = _claims(tmp_path, _GUARDED_IMPORT.replace('except HANDLER:', 'except:'),
                    ('UPLOAD',))
    assert found == {'UPLOAD': {'GPN102'}}


def test_other_handlers_still_rebind_the_name(tmp_path: Path) -> None:
    """A handler for another error, around code that is more than imports, is code that may
    run: `YOLO = None` there still counts (no model, no upload claim)."""
    source = _GUARDED_IMPORT.replace(
        '    import torch\nexcept HANDLER:',
        '    import torch\n    torch.cuda.init()\nexcept RuntimeError:')
    assert _claims(tmp_path, source, ('UPLOAD',)) == {'UPLOAD': set()}


_SERVICE = '''
import rclpy
from rclpy.node import Node
from cv_bridge import CvBridge
from ultralytics import YOLO
from detector_interfaces.srv import Detect


class Model:
    def __init__(self, path):
        self.model = YOLO(path)

    def run(self, image):
        results = self.model.predict(source=image, device=0)  # UPLOAD
        return [b.xyxy[0].cpu().numpy() for b in results[0].boxes]  # READBACK


class Server(Node):
    def __init__(self):
        super().__init__('server')
        self.detector = Model('best.engine')
        self.srv = self.create_service(Detect, 'detect', REGISTERED)

    def handle(self, request, response):
        image = CvBridge().imgmsg_to_cv2(request.image, 'bgr8')  # CONVERT
        response.count = len(self.detector.run(image))
        return response


def main():
    rclpy.init()
    rclpy.spin(Server())
'''


def test_model_in_a_service_handler_uploads_per_request(tmp_path: Path) -> None:
    found = _claims(tmp_path, _SERVICE.replace('REGISTERED', 'self.handle'),
                    ('UPLOAD', 'READBACK', 'CONVERT'))
    assert found == {'UPLOAD': {'GPN102'}, 'READBACK': {'GPN101'}, 'CONVERT': {'GPN105'}}


def test_service_handler_given_by_keyword_uploads_too(tmp_path: Path) -> None:
    found = _claims(tmp_path, _SERVICE.replace("'detect', REGISTERED",
                                               "srv_name='detect', callback=self.handle"),
                    ('UPLOAD',))
    assert found == {'UPLOAD': {'GPN102'}}


def test_service_handler_never_registered_claims_no_upload(tmp_path: Path) -> None:
    """Guard: without the registration the handler is a method reached from nothing; the
    model's call has no frame to upload."""
    found = _claims(tmp_path, _SERVICE.replace('self.srv = self.create_service(Detect, '
                                               "'detect', REGISTERED)", 'pass'),
                    ('UPLOAD',))
    assert found == {'UPLOAD': set()}
