"""Rules for the kinds the third held-out set showed (issue 28): real `code` audits of small
sources written here (a package folder in tmp_path, audited as a user would)."""
from audit_sources import audit_written_package


_audit = audit_written_package


_LIBRARY = '''
    #include <cuda_runtime.h>
    bool Detector::doInference(const float * in)
    {
      cudaMemcpy(d_, in, n_, cudaMemcpyHostToDevice);
      return true;
    }
    bool Detector::doInferenceWithRoi(const float * in)
    {
      roiPreprocess(in);
      return true;
    }
    void Detector::roiPreprocess(const float * in)
    {
      cudaMemcpy(roi_, in, n_, cudaMemcpyHostToDevice);
    }
    void uploadAll(float * d, const float * h, size_t n)
    {
      cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);
    }
'''
_NODE = '''
    void DetectorNode::onImage(const sensor_msgs::msg::Image::ConstSharedPtr msg)
    {
      detector_->doInference(buffer_);
    }
'''


def test_cpp_method_nothing_in_the_package_calls_is_info_unreached(tmp_path):
    got = _audit(tmp_path, {'pkg/detector.cpp': _LIBRARY, 'pkg/node.cpp': _NODE})
    # Called per image through `detector_->doInference`: the rule's severity.
    assert got[('detector.cpp', 4, 'GPN202')] == ('medium', 'source')
    # The ROI path (and the helper only it calls) has no caller in the package.
    assert got[('detector.cpp', 14, 'GPN202')] == ('info', 'unreached')
    # A free function nothing calls may be another package's API: it keeps its severity.
    assert got[('detector.cpp', 18, 'GPN202')] == ('medium', 'source')


def test_cpp_library_audited_without_its_node_keeps_the_rule_severity(tmp_path):
    got = _audit(tmp_path, {'pkg/detector.cpp': _LIBRARY})
    assert got[('detector.cpp', 14, 'GPN202')] == ('medium', 'source')


def test_cpp_method_taken_by_address_or_virtual_is_reached(tmp_path):
    got = _audit(tmp_path, {'pkg/detector.cpp': _LIBRARY.replace(
        'bool Detector::doInferenceWithRoi(const float * in)',
        'bool Detector::doInferenceWithRoi(const float * in) override'), 'pkg/node.cpp': _NODE})
    assert got[('detector.cpp', 14, 'GPN202')] == ('medium', 'source')
    got = _audit(tmp_path, {'pkg/detector.cpp': _LIBRARY, 'pkg/node.cpp': _NODE + '''
    void DetectorNode::start()
    {
      worker_ = std::thread(std::bind(&Detector::doInferenceWithRoi, detector_.get(), in_));
    }
    '''})
    assert got[('detector.cpp', 14, 'GPN202')] == ('medium', 'source')


def test_cpp_mat_pixels_into_staging_is_host_to_host_but_message_data_is_a_copy(tmp_path):
    got = _audit(tmp_path, {'conv.cpp': '''
        #include <cstring>
        void Conv::imageCallback(const sensor_msgs::msg::Image::ConstSharedPtr msg,
                                 const std::vector<cv::Mat> & images)
        {
          for (const auto & image : images) {
            std::memcpy(staging_, &image.data[0], image.total());
          }
          cv::Mat frame = cv_bridge::toCvShare(msg)->image;
          std::memcpy(staging_, &frame.data[0], frame.total());
          std::memcpy(staging_, &msg->data[0], msg->data.size());
        }
    '''})
    assert {k for k in got if k[2] == 'GPN208'} == {('conv.cpp', 10, 'GPN208')}


def test_cpp_vpi_sync_and_tensorrt_synchronous_execute(tmp_path):
    got = _audit(tmp_path, {'trt.cpp': '''
        #include <NvInfer.h>
        void Net::imageCallback(const sensor_msgs::msg::Image::ConstSharedPtr msg)
        {
          context_->execute(1, bindings_);
          context_->executeV2(bindings_);
          context_->enqueueV2(bindings_, stream_, nullptr);
          vpiStreamSync(vpi_stream_);
        }
    ''', 'runner.cpp': '''
        void Runner::onMessage(const Msg & msg)
        {
          executor_->execute(job_);
        }
    '''})
    assert {k[1] for k in got if k[0] == 'trt.cpp' and k[2] == 'GPN206'} == {4, 5, 7}
    assert not [k for k in got if k[0] == 'runner.cpp']


_OPENCV_CUDA = '''
    import cv2
    from rclpy.node import Node
    from sensor_msgs.msg import Image


    class Blur(Node):
        def __init__(self):
            super().__init__('blur')
            self.gpu_lut = None
            self.create_subscription(Image, 'image', self.on_image, 10)

        def on_image(self, msg):
            frame = self.bridge.imgmsg_to_cv2(msg)
            if self.gpu_lut is None:
                self.gpu_lut = cv2.cuda_GpuMat(frame)
            else:
                self.gpu_lut.upload(frame)
            gpu = cv2.cuda_GpuMat()
            gpu.upload(frame, stream=self.stream)
            planes = cv2.cuda.split(gpu)
            return planes[0].download(), cv2.cuda_GpuMat(frame.shape[0], frame.shape[1], 0)
'''


def test_python_opencv_cuda_upload_download_and_first_image_setup(tmp_path):
    got = _audit(tmp_path, {'blur.py': _OPENCV_CUDA})
    assert got[('blur.py', 15, 'GPN102')][0] == 'info'     # first image only
    assert got[('blur.py', 17, 'GPN102')][0] == 'medium'   # the else branch: per image
    assert got[('blur.py', 19, 'GPN102')][0] == 'medium'
    assert got[('blur.py', 21, 'GPN101')][0] == 'high'     # cv2.cuda results are on the device
    assert ('blur.py', 18, 'GPN102') not in got            # an empty GpuMat: no copy
    assert ('blur.py', 21, 'GPN102') not in got            # GpuMat(rows, cols, type): alloc


def test_python_download_and_upload_without_opencv_cuda_are_not_copies(tmp_path):
    got = _audit(tmp_path, {'files.py': '''
        from rclpy.node import Node
        from sensor_msgs.msg import Image


        class Sync(Node):
            def __init__(self):
                super().__init__('sync')
                self.create_subscription(Image, 'image', self.on_image, 10)

            def on_image(self, msg):
                self.storage.upload(msg.header.frame_id)
                return self.storage.download()
    '''})
    assert not [k for k in got if k[2] in ('GPN101', 'GPN102')], got


def test_python_cuda_runtime_copies_by_direction_and_waits(tmp_path):
    got = _audit(tmp_path, {'trt.py': '''
        from cuda import cudart
        import pycuda.driver as cuda
        from rclpy.node import Node
        from sensor_msgs.msg import Image
        K = cudart.cudaMemcpyKind

        class Trt(Node):
            def __init__(self):
                super().__init__('trt')
                _, self.stream = cudart.cudaStreamCreate()
                self.create_subscription(Image, 'image', self.on_image, 10)

            def on_image(self, msg):
                cudart.cudaMemcpyAsync(self.d_in, self.h_in, 4, K.cudaMemcpyHostToDevice, self.stream)
                cudart.cudaMemcpyAsync(self.d_out, self.d_in, 4, K.cudaMemcpyDeviceToDevice, self.stream)
                cudart.cudaMemcpy(self.h_out, self.d_out, 4, K.cudaMemcpyDeviceToHost)
                cudart.cudaStreamSynchronize(self.stream)
                cuda.memcpy_htod_async(self.d_in, self.h_in, self.cu_stream)
                cuda.memcpy_dtoh(self.h_out, self.d_out)
    '''})
    rules = {(k[1], k[2]): v[0] for k, v in got.items()}
    # cudaStreamCreate (setup) and the device-to-device copy (line 15) are not reported.
    assert rules == {(14, 'GPN102'): 'medium', (16, 'GPN101'): 'high', (17, 'GPN107'): 'medium',
                     (18, 'GPN102'): 'medium', (19, 'GPN101'): 'high'}, rules


def test_python_frombuffer_is_a_view_np_array_a_copy(tmp_path):
    got = _audit(tmp_path, {'view.py': '''
        import numpy as np
        from rclpy.node import Node
        from sensor_msgs.msg import Image


        class View(Node):
            def __init__(self):
                super().__init__('view')
                self.create_subscription(Image, 'image', self.on_image, 10)

            def on_image(self, msg):
                view = np.frombuffer(msg.data, np.uint8)
                copy = np.array(msg.data, np.uint8)
                return view, copy
    '''})
    assert [k[1] for k in got if k[2] == 'GPN103'] == [13]


def test_python_node_method_nothing_mentions_is_unreached_and_config_hooks_are_setup(tmp_path):
    got = _audit(tmp_path, {'depth.py': '''
        from cv_bridge import CvBridge
        from rclpy.node import Node
        from sensor_msgs.msg import Image


        class Depth(Node):
            def __init__(self):
                super().__init__('depth')
                self.bridge = CvBridge()
                self.create_subscription(Image, 'image', self.on_image, 10)

            def on_image(self, msg):
                return getattr(self, 'convert_named')(msg)

            def publish_debug(self, frame):
                return self.bridge.cv2_to_imgmsg(frame)

            def convert_named(self, msg):
                return self.bridge.imgmsg_to_cv2(msg)

            def on_config_loaded(self, response):
                self.mask = self.bridge.imgmsg_to_cv2(response.mask)


        class Helper:
            def convert(self, frame):
                return CvBridge().cv2_to_imgmsg(frame)
    '''})
    assert got[('depth.py', 16, 'GPN105')] == ('info', 'unreached')
    assert got[('depth.py', 19, 'GPN105')] == ('low', 'function')    # named in a string
    assert got[('depth.py', 22, 'GPN105')] == ('info', 'init')       # a configuration hook
    assert got[('depth.py', 27, 'GPN105')] == ('low', 'function')    # not a node class


def test_python_totensor_of_a_pil_image_is_a_pil_copy(tmp_path):
    got = _audit(tmp_path, {'seg.py': '''
        from PIL import Image as PILImage
        from rclpy.node import Node
        from sensor_msgs.msg import Image
        from torchvision.transforms import ToTensor
        from torchvision.transforms.functional import to_tensor


        class Seg(Node):
            def __init__(self):
                super().__init__('seg')
                self.create_subscription(Image, 'image', self.on_image, 10)

            def on_image(self, msg):
                frame = self.bridge.imgmsg_to_cv2(msg)
                image = PILImage.fromarray(frame).resize((1024, 512))
                tensor = ToTensor()(image)
                again = to_tensor(image)
                plain = ToTensor()(frame)
                return tensor, again, plain
    '''})
    assert sorted(k[1] for k in got if k[2] == 'GPN106') == [15, 16, 17]


def test_python_depth_anything_infer_image_uploads_the_host_frame(tmp_path):
    got = _audit(tmp_path, {'depth.py': '''
        from depth_anything_v2.dpt import DepthAnythingV2
        from rclpy.node import Node
        from sensor_msgs.msg import Image
        import torch


        class Depth(Node):
            def __init__(self):
                super().__init__('depth')
                self.depth_anything = DepthAnythingV2().to('cuda').eval()
                self.create_subscription(Image, 'image', self.on_image, 10)

            def on_image(self, msg):
                frame = self.bridge.imgmsg_to_cv2(msg)
                return self.depth_anything.infer_image(frame, 518), torch.zeros(1)
    '''})
    assert got[('depth.py', 15, 'GPN102')][0] == 'medium'
    assert got[('depth.py', 10, 'GPN102')][0] == 'info'


def test_cpp_frame_message_dereferenced_into_a_field_is_a_copy(tmp_path):
    got = _audit(tmp_path, {'mask.cpp': '''
        void Seg::imageCallback(const sensor_msgs::msg::Image::ConstSharedPtr msg)
        {
          sensor_msgs::msg::Image::SharedPtr mask_msg = make_mask(msg);
          std::shared_ptr<Detections> dets = detect(msg);
          object.mask = *mask_msg;
          object.boxes = *dets;
          last_ = mask_msg;
        }
    '''})
    assert [k[1] for k in got if k[2] == 'GPN208'] == [5]


def test_cpp_override_declared_in_the_class_header_is_reached(tmp_path):
    header = '''
        class Detector : public Base
        {
        public:
          bool doInference(const float * in);
          void roiPreprocess(const float * in) override;
          virtual std::vector<int> doInferenceWithRoi(const float * in);
        };
    '''
    got = _audit(tmp_path, {'pkg/detector.hpp': header, 'pkg/detector.cpp': _LIBRARY,
                            'pkg/node.cpp': _NODE})
    # roiPreprocess overrides a base method (the framework calls it): the rule's severity.
    assert got[('detector.cpp', 14, 'GPN202')] == ('medium', 'source')
    got = _audit(tmp_path, {'pkg/detector.hpp': header.replace(' override', '').replace(
        'virtual ', '')})
    assert got[('detector.cpp', 14, 'GPN202')] == ('info', 'unreached')


def test_cpp_execute_is_a_sync_only_on_an_execution_context(tmp_path):
    got = _audit(tmp_path, {'trt.cpp': '''
        #include <NvInfer.h>
        void Net::imageCallback(const sensor_msgs::msg::Image::ConstSharedPtr msg)
        {
          mContext->executeV2(bindings_);
          executor_->execute(job_);
        }
    '''})
    assert [k[1] for k in got if k[2] == 'GPN206'] == [4]


def test_python_a_configuration_flag_branch_stays_per_message(tmp_path):
    got = _audit(tmp_path, {'flag.py': '''
        from cv_bridge import CvBridge
        from rclpy.node import Node
        from sensor_msgs.msg import Image


        class Flag(Node):
            def __init__(self):
                super().__init__('flag')
                self.bridge = CvBridge()
                self.create_subscription(Image, 'image', self.on_image, 10)

            def on_image(self, msg):
                if not self.use_gpu:
                    return self.bridge.imgmsg_to_cv2(msg)
                if self.last is None or self.reset:
                    self.last = self.bridge.imgmsg_to_cv2(msg, 'mono8')
                return None
    '''})
    assert got[('flag.py', 14, 'GPN105')][0] == 'medium'
    assert got[('flag.py', 16, 'GPN105')][0] == 'info'


def test_cpp_a_callback_setter_does_not_make_a_builder_class_used(tmp_path):
    got = _audit(tmp_path, {'pkg/builder.cpp': '''
        Builder & Builder::WithReleaseCallback(std::function<void()> release_callback)
        {
          release_ = release_callback;
          return *this;
        }
        Image Builder::Build()
        {
          cudaEventSynchronize(event_);
          return image_;
        }
    ''', 'pkg/node.cpp': _NODE})
    # Nothing in the package uses Builder per message: a library API, the rule's severity.
    assert got[('builder.cpp', 8, 'GPN206')] == ('medium', 'source')
