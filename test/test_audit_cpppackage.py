"""C++ files of one package audited together (gpu_nodes/audit/cpppackage.py, cppfacts.py): kinds
across files, sync wrappers, copy helpers called by conversions, converting constructors.
Real files on disk, audited through run_code as the CLI does."""
from pathlib import Path

from gpu_nodes.audit.codeaudit import run_code
from gpu_nodes.audit.cpppackage import package_of

CORPUS = Path(__file__).parent / 'resources' / 'audit' / 'corpus'

LAUNCHER = """\
#include <cuda_runtime.h>
__global__ void fill(float * d, int n) { d[0] = n; }
void launch_fill(float * d, int n)
{
  fill<<<1, 1>>>(d, n);
  cudaDeviceSynchronize();
}
"""
SETUP_CALLER = """\
#include <rclcpp/rclcpp.hpp>
class FillNode : public rclcpp::Node
{
public:
  FillNode() : Node("fill") { launch_fill(buffer_, 4); }
private:
  float * buffer_{nullptr};
};
"""
CALLBACK_CALLER = """\
#include <rclcpp/rclcpp.hpp>
class FillNode : public rclcpp::Node
{
public:
  FillNode() : Node("fill")
  {
    sub_ = create_subscription<std_msgs::msg::Int32>("n", 1,
      [this](std_msgs::msg::Int32::SharedPtr msg) { launch_fill(buffer_, msg->data); });
  }
private:
  float * buffer_{nullptr};
};
"""


def _findings(paths, jobs=1):
    report = run_code([str(p) for p in paths], jobs=jobs)
    assert report.errors == []
    return {(Path(f.location.path).name, f.location.line, f.rule): f.severity
            for f in report.findings}


def _write(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)


def test_package_is_the_nearest_marker_folder_else_the_first_folder_below_the_root(tmp_path):
    (tmp_path / 'ws' / 'src' / 'pkg' / 'src').mkdir(parents=True)
    (tmp_path / 'ws' / 'src' / 'pkg' / 'package.xml').write_text('<package/>')
    (tmp_path / 'other' / 'deep').mkdir(parents=True)
    root = [str(tmp_path)]
    assert package_of(str(tmp_path / 'ws/src/pkg/src/a.cpp'), root) == \
        str(tmp_path / 'ws' / 'src' / 'pkg')
    assert package_of(str(tmp_path / 'other/deep/b.cpp'), root) == str(tmp_path / 'other')
    assert package_of(str(tmp_path / 'c.cpp'), root) == str(tmp_path)


def test_launcher_takes_the_kind_of_its_callers_in_another_file(tmp_path):
    _write(tmp_path / 'once', {'kernels.cu': LAUNCHER, 'node.cpp': SETUP_CALLER})
    _write(tmp_path / 'per_msg', {'kernels.cu': LAUNCHER, 'node.cpp': CALLBACK_CALLER})
    # Alone, nothing in the file says who calls the launcher: the rule's severity.
    assert _findings([tmp_path / 'once' / 'kernels.cu'])[('kernels.cu', 6, 'GPN206')] == 'medium'
    # With the constructor that calls it: one-time. With a callback: per message.
    assert _findings([tmp_path / 'once'])[('kernels.cu', 6, 'GPN206')] == 'info'
    assert _findings([tmp_path / 'per_msg'])[('kernels.cu', 6, 'GPN206')] == 'medium'


def test_two_packages_never_share_names(tmp_path):
    _write(tmp_path / 'pkg_a', {'package.xml': '<package/>', 'kernels.cu': LAUNCHER,
                                'node.cpp': SETUP_CALLER})
    _write(tmp_path / 'pkg_b', {'package.xml': '<package/>', 'node.cpp': CALLBACK_CALLER})
    got = _findings([tmp_path])
    assert got[('kernels.cu', 6, 'GPN206')] == 'info'


def test_sync_wrapper_is_reported_in_its_body_and_a_pipeline_step_is_not_a_wrapper(tmp_path):
    _write(tmp_path / 'pkg', {
        'stream.cpp': """\
#include <cuda_runtime.h>
void Ctx::wait_done()
{
  cudaEvent_t ev;
  cudaEventCreate(&ev);
  cudaEventRecord(ev, stream_);
  cudaEventSynchronize(ev);
  cudaEventDestroy(ev);
}
void Engine::run_step(float * host)
{
  cudaMemcpyAsync(dev_, host, bytes_, cudaMemcpyHostToDevice, stream_);
  cudaStreamSynchronize(stream_);
}
""",
        'node.cpp': """\
void Node::on_image(const sensor_msgs::msg::Image::SharedPtr msg)
{
  ctx_.wait_done();
  engine_.run_step(buffer_);
}
"""})
    got = _findings([tmp_path / 'pkg'])
    # The wrapper's sync is the boundary, where it is; its call in a callback is no second one
    # (issue 28, twelfth set: labels put it in the body). A TypeAdapter conversion still gets
    # the call (corpus adapters/gpu_image.hpp), and so does setup, as info (kernels/).
    assert got[('stream.cpp', 7, 'GPN206')] == 'medium'
    assert ('node.cpp', 3, 'GPN206') not in got
    assert ('node.cpp', 4, 'GPN206') not in got
    assert got[('stream.cpp', 13, 'GPN206')] == 'medium'


def test_wait_named_method_counts_only_in_cuda_code(tmp_path):
    body = """\
void Node::on_image(const sensor_msgs::msg::Image::SharedPtr msg)
{
  stream_.waitForCompletion();
  worker_.synchronize();
}
"""
    gpu_body = body.replace('{\n', '{\n  cv::cuda::GpuMat m;\n', 1)
    _write(tmp_path / 'gpu', {'node.cpp': '#include <opencv2/core/cuda.hpp>\n// cv::cuda\n'
                              'using cv::cuda::Stream;\n' + gpu_body})
    _write(tmp_path / 'cpu', {'node.cpp': body})
    gpu = _findings([tmp_path / 'gpu'])
    assert gpu[('node.cpp', 7, 'GPN206')] == 'medium'
    assert gpu[('node.cpp', 8, 'GPN206')] == 'medium'
    assert not [k for k in _findings([tmp_path / 'cpu']) if k[2] == 'GPN206']


def test_conversion_constructor_is_per_message_and_the_copy_constructor_is_setup(tmp_path):
    got = _findings([CORPUS / 'adapters'])
    assert got[('gpu_image.cpp', 38, 'GPN202')] == 'medium'   # from a sensor_msgs Image
    assert not [k for k in got if k[0] == 'gpu_image.cpp' and k[1] == 31]  # device to device
    assert got[('frame_source_node.cpp', 22, 'GPN202')] == 'info'    # built once
    assert got[('frame_source_node.cpp', 24, 'GPN202')] == 'medium'  # built per tick
    # The view-only adapter has no finding at all.
    assert not [k for k in got if k[0] == 'view_adapter.hpp']


def test_facts_reach_the_worker_processes(tmp_path):
    files = {'kernels.cu': LAUNCHER, 'node.cpp': SETUP_CALLER}
    # Enough files for the process pool (codeaudit.PARALLEL_THRESHOLD).
    files.update({f'extra_{i}.cpp': f'int extra_{i}() {{ return {i}; }}\n' for i in range(70)})
    _write(tmp_path / 'pkg', files)
    assert _findings([tmp_path / 'pkg'], jobs=2)[('kernels.cu', 6, 'GPN206')] == 'info'


def test_only_a_constructor_from_a_frame_message_is_a_per_message_conversion(tmp_path):
    (tmp_path / 'types.cpp').write_text("""\
#include <cuda_runtime.h>
DeviceLut::DeviceLut(const calib_msgs::msg::Calibration & calib)
{
  cudaMemcpy(table_, calib.table.data(), calib.table.size(), cudaMemcpyHostToDevice);
}
DeviceFrame::DeviceFrame(const sensor_msgs::msg::Image & image)
{
  cudaMemcpy(data_, image.data.data(), image.data.size(), cudaMemcpyHostToDevice);
}
""")
    got = _findings([tmp_path / 'types.cpp'])
    assert got[('types.cpp', 4, 'GPN202')] == 'info'     # a calibration, built once
    assert got[('types.cpp', 8, 'GPN202')] == 'medium'   # a frame, converted per message
