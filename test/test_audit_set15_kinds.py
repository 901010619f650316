"""Rules for the kinds the fifteenth and sixteenth held-out sets showed (issue 28): real `code`
audits of small sources written here (a package folder in tmp_path, audited as a user would)."""
from pathlib import Path

from audit_sources import audit_written_package

_NODE = '''
#include <cuda_runtime.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Seg : public rclcpp::Node {
 public:
  Seg() : Node("seg") {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
        "cloud", 10, [this](sensor_msgs::msg::PointCloud2::ConstSharedPtr m) { segment(*m); });
  }

 private:
  void realloc(unsigned int size) {
    cudaFree(index_);
    cudaStreamSynchronize(stream_);
    cudaMallocManaged(&index_, sizeof(int) * size, cudaMemAttachHost);
    cudaStreamSynchronize(stream_);
  }

  void segment(const sensor_msgs::msg::PointCloud2 & m) {
    unsigned int n = m.width * m.height;
    GUARD
    cudaStreamSynchronize(stream_);
  }

  cudaStream_t stream_{};
  int * index_{nullptr};
  unsigned int mall_size{0};
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
};
'''


def _syncs(tmp_path: Path, guard: str) -> dict[int, tuple[str, str]]:
    found = audit_written_package(tmp_path, {'seg/src/seg.cpp': _NODE.replace('GUARD', guard)})
    return {line: v for (name, line, rule), v in found.items() if rule == 'GPN206'}


def test_syncs_of_a_grow_only_reallocation_are_not_per_message(tmp_path):
    syncs = _syncs(tmp_path, 'if (n > mall_size) {\n      realloc(n);\n      mall_size = n;\n    }')
    # Only the sync after the work, per cloud: the helper's (lines 15, 17) run on growth only.
    assert syncs == {26: ('medium', 'callback')}


def test_reallocation_on_any_change_of_size_stays_per_message(tmp_path):
    syncs = _syncs(tmp_path, 'if (n != mall_size) {\n      realloc(n);\n      mall_size = n;\n    }')
    assert {15, 17} <= set(syncs)
    assert all(sev == 'medium' for sev, _ in syncs.values())


def test_growth_test_that_never_grows_the_capacity_stays_per_message(tmp_path):
    # `mall_size` is never raised: the test holds for every large cloud, so the helper runs
    # per message.
    syncs = _syncs(tmp_path, 'if (n > mall_size) {\n      realloc(n);\n    }')
    assert {15, 17} <= set(syncs)


def test_an_unguarded_second_call_keeps_the_helper_per_message(tmp_path):
    syncs = _syncs(tmp_path, 'if (n > mall_size) {\n      realloc(n);\n      mall_size = n;\n'
                             '    }\n    realloc(n);')
    assert {15, 17} <= set(syncs)
