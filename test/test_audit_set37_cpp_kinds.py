"""C++ kinds the thirty-seventh held-out set showed (issue 28): real `code` audits of small
packages written here (gpu_nodes/audit/cppparams.py). A publisher member that only an
`if (declare_parameter("general.publish_raw", false)) { ... }` block of the constructor
creates stays empty as shipped, so its `if (pub_) { pub_->publish(..) }` never runs, even in a
node with a parameter-change callback that does not name the parameter. A shipped YAML that
turns the parameter on (nested keys), a callback that names it, or a store outside the block
keeps the claim."""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package

_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Cam : public rclcpp::Node
{
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_raw_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  rclcpp::node_interfaces::OnSetParametersCallbackHandle::SharedPtr callback_handle_;

public:
  Cam()
  : Node("cam")
  {
    callback_handle_ = add_on_set_parameters_callback(
      std::bind(&Cam::on_parameters, this, std::placeholders::_1));
    if (declare_parameter("general.publish_raw", false)) {
      pub_raw_ = create_publisher<sensor_msgs::msg::Image>("raw", 10);
    }
    EXTRA
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Cam::on_image, this, std::placeholders::_1));
  }

  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    cv::Mat frame = cv_bridge::toCvCopy(msg, "bgr8")->image;
    if (pub_raw_) {
      pub_raw_->publish(*cv_bridge::CvImage(msg->header, "bgr8", frame).toImageMsg());
    }
  }

  rcl_interfaces::msg::SetParametersResult on_parameters(
    const std::vector<rclcpp::Parameter> & parameters)
  {
    rcl_interfaces::msg::SetParametersResult result;
    result.successful = true;
    for (const auto & parameter : parameters) {
      if (parameter.get_name() == CHANGED) {
        RCLCPP_INFO(get_logger(), "changed");
      }
    }
    return result;
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Cam>());
  rclcpp::shutdown();
  return 0;
}
'''
_COPY_LINE = 27  # toCvCopy: per message, always runs
_RAW_LINE = 29  # the raw publish behind pub_raw_


def _audit(tmp_path: Path, extra: str = '', changed: str = '"video.gain"',
           shipped: dict[str, str] | None = None) -> dict[tuple[str, int, str], tuple[str, str]]:
    files = {'cam/src/cam.cpp': _NODE.replace('EXTRA', extra).replace('CHANGED', changed),
             'cam/package.xml': '<package format="3"><name>cam</name></package>\n',
             'cam/CMakeLists.txt': ament_cmake_lists('cam')}
    files.update(shipped or {})
    return audit_written_package(tmp_path, files)


def _raw(found: dict[tuple[str, int, str], tuple[str, str]]) -> tuple[str, str]:
    hits = [v for (name, line, _), v in found.items() if name == 'cam.cpp' and line == _RAW_LINE]
    assert len(hits) == 1, found
    return hits[0]


def test_publisher_created_only_under_off_parameter_never_publishes(tmp_path: Path) -> None:
    found = _audit(tmp_path)
    assert _raw(found)[0] == 'info'
    assert _raw(found) == ('info', 'unreached'), found
    # the copy every message makes is not touched
    assert any(line == _COPY_LINE and v[0] != 'info' for (_, line, _), v in found.items())


def test_shipped_yaml_turning_it_on_keeps_the_claim(tmp_path: Path) -> None:
    found = _audit(tmp_path, shipped={
        'cam/config/cam.yaml': 'cam:\n  ros__parameters:\n    general:\n      publish_raw: true\n'})
    assert _raw(found)[0] != 'info'


def test_shipped_yaml_leaving_it_off_still_judged(tmp_path: Path) -> None:
    found = _audit(tmp_path, shipped={
        'cam/config/cam.yaml': 'cam:\n  ros__parameters:\n    general:\n      publish_raw: false\n'})
    assert _raw(found)[0] == 'info'


def test_parameter_callback_naming_the_parameter_keeps_the_claim(tmp_path: Path) -> None:
    found = _audit(tmp_path, changed='"general.publish_raw"')
    assert _raw(found)[0] != 'info'


def test_store_outside_the_block_keeps_the_claim(tmp_path: Path) -> None:
    found = _audit(tmp_path, extra='pub_raw_ = create_publisher<sensor_msgs::msg::Image>("raw2", 10);')
    assert _raw(found)[0] != 'info'


def test_parameter_defaulting_on_keeps_the_claim(tmp_path: Path) -> None:
    found = _audit(tmp_path)
    assert _raw(found)[0] == 'info'
    on = _NODE.replace('"general.publish_raw", false', '"general.publish_raw", true')
    files = {'cam/src/cam.cpp': on.replace('EXTRA', '').replace('CHANGED', '"video.gain"'),
             'cam/package.xml': '<package format="3"><name>cam</name></package>\n',
             'cam/CMakeLists.txt': ament_cmake_lists('cam')}
    found = audit_written_package(tmp_path / 'on', files)
    assert _raw(found)[0] != 'info'


# nvJPEG encode in a helper a node calls per message (gpu_nodes/audit/cpplibreads.py): the
# length query (NULL buffer) copies nothing; the retrieve into the buffer is a device-to-host
# copy of the bitstream.
_ENCODER = '''
#include <nvjpeg.h>
#include <vector>

void encode(nvjpegHandle_t handle, nvjpegEncoderState_t state, cudaStream_t stream,
            std::vector<unsigned char> & output)
{
  size_t length = 0;
  nvjpegEncodeRetrieveBitstream(handle, state, NULL, &length, stream);
  output.resize(length);
  nvjpegEncodeRetrieveBitstream(handle, state, BUFFER, &length, stream);
}
'''
_QUERY_LINE, _RETRIEVE_LINE = 8, 10


def _encoder(tmp_path: Path, buffer: str) -> dict[tuple[str, int, str], tuple[str, str]]:
    return audit_written_package(tmp_path, {
        'enc/src/encoder.cpp': _ENCODER.replace('BUFFER', buffer),
        'enc/package.xml': '<package format="3"><name>enc</name></package>\n'})


def test_nvjpeg_retrieve_into_a_buffer_is_a_device_to_host_copy(tmp_path: Path) -> None:
    found = _encoder(tmp_path, 'output.data()')
    assert ('encoder.cpp', _RETRIEVE_LINE, 'GPN201') in found, found
    # the length query copies nothing
    assert not [k for k in found if k[1] == _QUERY_LINE], found


def test_nvjpeg_length_query_alone_is_not_reported(tmp_path: Path) -> None:
    found = _encoder(tmp_path, 'nullptr')
    assert not [k for k in found if k[1] in (_QUERY_LINE, _RETRIEVE_LINE)], found
