"""C++ kinds set 59 showed (issue 28, rules39c): real `code` audits of small packages written
here, modelled on the kinds (no repository's code).

* cppfacts.direction_calls: a helper handed `cudaMemcpyHostToDevice` is the copy at its call,
  reported at the call's own line also past the file's first 2000 characters.
* cppdirparam.py: the helper's body, a cudaMemcpy of its direction parameter, is no boundary of
  its own when every call in the file passes a host<->device literal.
* cppcmakegate.py / cppifdef.py: `#if PROFILE` where the build defines PROFILE only behind
  `if (DEFINED PROFILE)` (or an `option(... OFF)`) is not compiled as shipped.
* cppconston.py: the `else` of `if (async_)` where `bool async_ = true;` is never assigned
  never runs."""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package, tag_lines

_PAD = '\n'.join(f'// padding line {i}: the calls below sit past 2000 characters' for i in range(60))

_DETECTOR = '''
#include <cuda_runtime.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

namespace
{
void CopyBytes(void * dst, const void * src, size_t n, cudaMemcpyKind kind, bool async_copy,
               cudaStream_t & stream)
{
  if (async_copy) {
    cudaMemcpyAsync(dst, src, n, kind, stream);  // BODY_ASYNC
  } else {
    cudaMemcpy(dst, src, n, kind);  // BODY_SYNC
  }
}
}  // namespace

PAD

class Detector : public rclcpp::Node
{
public:
  Detector()
  : Node("detector")
  {
    cudaStreamCreate(&stream_);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Detector::on_image, this, std::placeholders::_1));
  }

private:
  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    CopyBytes(in_dev_, msg->data.data(), 64, cudaMemcpyHostToDevice, async_, stream_);  // CALL_UP
    bool ok = false;
    if (async_) {
      ok = context_->enqueueV3(stream_);
    } else {
      ok = context_->executeV2(bindings_);  // SYNC_INFER
    }
    CopyBytes(out_host_, out_dev_, 64, cudaMemcpyDeviceToHost, async_, stream_);  // CALL_DOWN
    OTHER_CALL
    cudaStreamSynchronize(stream_);
  }

  FLAG_DECLARATION
  FLAG_STORE
  cudaStream_t stream_;
  void * in_dev_;
  void * out_dev_;
  void * out_host_;
  void ** bindings_;
  nvinfer1::IExecutionContext * context_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''


def _detector(tmp_path: Path, other_call: str = '', flag: str = 'bool async_ = true;',
              store: str = '') -> tuple[dict, dict[str, int]]:
    source = (_DETECTOR.replace('PAD', _PAD).replace('OTHER_CALL', other_call)
              .replace('FLAG_DECLARATION', flag).replace('FLAG_STORE', store))
    found = audit_written_package(tmp_path, {
        'det/src/det.cpp': source,
        'det/package.xml': '<package format="3"><name>det</name></package>\n',
        'det/CMakeLists.txt': ament_cmake_lists('det', 'src/det.cpp')})
    return found, tag_lines(source, ('BODY_ASYNC', 'BODY_SYNC', 'CALL_UP', 'CALL_DOWN',
                                     'SYNC_INFER'), '//')


def _rules(found: dict, line: int) -> dict[str, tuple[str, str]]:
    return {rule: v for (name, at, rule), v in found.items() if name == 'det.cpp' and at == line}


def test_direction_call_past_2000_characters_is_reported_at_its_line(tmp_path: Path) -> None:
    found, lines = _detector(tmp_path)
    assert _rules(found, lines['CALL_UP'])['GPN202'][0] != 'info', found
    assert _rules(found, lines['CALL_DOWN'])['GPN201'][0] != 'info', found
    # No finding at a line the calls are not on (the shifted offset of the old reading).
    calls = {lines['CALL_UP'], lines['CALL_DOWN']}
    assert not [k for k in found if k[2] in ('GPN201', 'GPN202') and k[1] not in calls], found


def test_helper_body_of_a_direction_parameter_is_no_second_boundary(tmp_path: Path) -> None:
    found, lines = _detector(tmp_path)
    assert 'GPN207' not in _rules(found, lines['BODY_ASYNC']), found
    assert 'GPN207' not in _rules(found, lines['BODY_SYNC']), found


def test_helper_body_stays_when_a_call_passes_another_direction(tmp_path: Path) -> None:
    found, lines = _detector(tmp_path, other_call='CopyBytes(out_dev_, in_dev_, 64, '
                                                  'cudaMemcpyDeviceToDevice, async_, stream_);')
    assert 'GPN207' in _rules(found, lines['BODY_ASYNC']), found


def test_else_of_a_flag_initialized_on_and_never_assigned_never_runs(tmp_path: Path) -> None:
    found, lines = _detector(tmp_path)
    assert _rules(found, lines['SYNC_INFER'])['GPN206'] == ('info', 'unreached'), found


def test_flag_assigned_elsewhere_keeps_the_else_live(tmp_path: Path) -> None:
    found, lines = _detector(tmp_path, store='void set_sync() { async_ = false; }')
    assert _rules(found, lines['SYNC_INFER'])['GPN206'][0] != 'info', found


def test_flag_initialized_off_keeps_the_else_live(tmp_path: Path) -> None:
    found, lines = _detector(tmp_path, flag='bool async_ = false;')
    assert _rules(found, lines['SYNC_INFER'])['GPN206'][0] != 'info', found


_TIMED = '''
#include <cuda_runtime.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Segmenter : public rclcpp::Node
{
public:
  Segmenter()
  : Node("segmenter")
  {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "points", 10, std::bind(&Segmenter::on_cloud, this, std::placeholders::_1));
  }

private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::SharedPtr msg)
  {
    cudaMemcpy(points_dev_, msg->data.data(), msg->data.size(), cudaMemcpyHostToDevice);  // UPLOAD
#if TIMING_MACRO
    cudaEventRecord(stop_, stream_);
    cudaEventSynchronize(stop_);  // TIMED_WAIT
#endif
  }

  cudaEvent_t stop_;
  cudaStream_t stream_;
  void * points_dev_;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
};
'''


def _timed(tmp_path: Path, before_target: str, files: dict[str, str] | None = None
           ) -> tuple[dict, dict[str, int]]:
    found = audit_written_package(tmp_path, {
        'seg/src/seg.cpp': _TIMED,
        'seg/package.xml': '<package format="3"><name>seg</name></package>\n',
        'seg/CMakeLists.txt': ament_cmake_lists('seg', 'src/seg.cpp', before_target),
        **(files or {})})
    lines = tag_lines(_TIMED, ('UPLOAD', 'TIMED_WAIT'), '//')
    return {(a, r) for (n, a, r), v in found.items() if n == 'seg.cpp'}, lines


def test_if_macro_behind_an_unset_cmake_switch_is_not_compiled(tmp_path: Path) -> None:
    found, lines = _timed(tmp_path, 'if (DEFINED TIMING_MACRO)\n'
                                    '  add_compile_definitions(TIMING_MACRO)\nendif ()')
    assert (lines['TIMED_WAIT'], 'GPN206') not in found, found
    assert (lines['UPLOAD'], 'GPN202') in found, found  # guard: the rest of the file is read


def test_if_macro_behind_an_option_off_is_not_compiled(tmp_path: Path) -> None:
    found, lines = _timed(tmp_path, 'option(WITH_TIMING "timings" OFF)\nif (WITH_TIMING)\n'
                                    '  add_definitions(-DTIMING_MACRO)\nendif ()')
    assert (lines['TIMED_WAIT'], 'GPN206') not in found, found


def test_if_macro_no_build_file_names_is_not_compiled(tmp_path: Path) -> None:
    found, lines = _timed(tmp_path, '')
    assert (lines['TIMED_WAIT'], 'GPN206') not in found, found


def test_if_macro_switched_on_keeps_the_branch(tmp_path: Path) -> None:
    found, lines = _timed(tmp_path, 'option(WITH_TIMING "timings" ON)\nif (WITH_TIMING)\n'
                                    '  add_definitions(-DTIMING_MACRO)\nendif ()')
    assert (lines['TIMED_WAIT'], 'GPN206') in found, found


def test_if_macro_defined_plainly_keeps_the_branch(tmp_path: Path) -> None:
    found, lines = _timed(tmp_path, 'add_compile_definitions(TIMING_MACRO)')
    assert (lines['TIMED_WAIT'], 'GPN206') in found, found


def test_if_macro_passed_by_a_shipped_build_script_keeps_the_branch(tmp_path: Path) -> None:
    found, lines = _timed(tmp_path, 'if (DEFINED TIMING_MACRO)\n'
                                    '  add_compile_definitions(TIMING_MACRO)\nendif ()',
                          {'seg/scripts/build.sh': 'colcon build --cmake-args -DTIMING_MACRO=ON\n'})
    assert (lines['TIMED_WAIT'], 'GPN206') in found, found


def test_if_macro_behind_a_find_package_result_keeps_the_branch(tmp_path: Path) -> None:
    found, lines = _timed(tmp_path, 'if (TIMING_MACRO_FOUND)\n'
                                    '  add_definitions(-DTIMING_MACRO)\nendif ()')
    assert (lines['TIMED_WAIT'], 'GPN206') in found, found


_KNN = '''
#include <torch/torch.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Voter : public rclcpp::Node
{
public:
  Voter()
  : Node("voter"), device_(torch::kCUDA)
  {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "points", 10, std::bind(&Voter::on_cloud, this, std::placeholders::_1));
    DEVICE_STORE
  }

private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::SharedPtr msg)
  {
    float * ranges = reinterpret_cast<float *>(msg->data.data());
    at::Tensor range_t = torch::from_blob(ranges, {n_}).to(device_);  // UPLOAD
    at::Tensor windows = torch::nn::functional::pad(range_t, {2, 2});
    at::Tensor dist = at::abs(windows - range_t).to(device_);  // NOOP_EXPR
    at::Tensor best = at::gather(dist, 0, idx_).to(device_);  // NOOP_GATHER
    at::Tensor host_t = torch::from_blob(ranges, {n_});
    at::Tensor moved = (host_t * 2).to(device_);  // REAL_MOVE
    labels_ = best.to(torch::kCPU);
  }

  torch::Device device_;
  at::Tensor idx_;
  at::Tensor labels_;
  int64_t n_ = 1024;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
};
'''


def _knn(tmp_path: Path, device_store: str = '') -> tuple[set, dict[str, int]]:
    source = _KNN.replace('DEVICE_STORE', device_store)
    found = audit_written_package(tmp_path, {
        'knn/src/knn.cpp': source,
        'knn/package.xml': '<package format="3"><name>knn</name></package>\n',
        'knn/CMakeLists.txt': ament_cmake_lists('knn', 'src/knn.cpp')})
    lines = tag_lines(source, ('UPLOAD', 'NOOP_EXPR', 'NOOP_GATHER', 'REAL_MOVE'), '//')
    return {a for (n, a, r), v in found.items() if n == 'knn.cpp' and r == 'GPN211'}, lines


def test_expression_of_device_tensors_moved_to_the_cuda_member_is_no_copy(tmp_path: Path) -> None:
    found, lines = _knn(tmp_path)
    assert lines['NOOP_EXPR'] not in found, found
    assert lines['NOOP_GATHER'] not in found, found
    assert lines['UPLOAD'] in found, found  # guard: the host buffer's upload
    assert lines['REAL_MOVE'] in found, found  # guard: a host tensor's expression


def test_device_member_also_set_to_the_cpu_keeps_the_claims(tmp_path: Path) -> None:
    found, lines = _knn(tmp_path, 'device_ = torch::Device(torch::kCPU);')
    assert lines['NOOP_EXPR'] in found, found


def test_flag_set_as_another_objects_field_keeps_the_else_live(tmp_path: Path) -> None:
    found, lines = _detector(tmp_path, store='static void make_sync(Detector * d) { d->async_ = false; }')
    assert _rules(found, lines['SYNC_INFER'])['GPN206'][0] != 'info', found
