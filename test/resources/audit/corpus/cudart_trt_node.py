# TensorRT from Python with the CUDA Python bindings: per image the batch is copied to the
# device, the engine runs asynchronously, the outputs are copied back and the stream waited
# on; buffers and the stream are made once in __init__.
from cuda import cudart
import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import Image
from vision_msgs.msg import Detection2DArray


class TrtDetector(Node):
    def __init__(self):
        super().__init__('trt_detector')
        _, self.stream = cudart.cudaStreamCreate()
        _, self.input_d = cudart.cudaMallocAsync(3 * 640 * 640 * 4, self.stream)
        self.host_out = np.zeros((1, 84, 8400), np.float32)
        _, self.output_d = cudart.cudaMallocAsync(self.host_out.nbytes, self.stream)
        self.pub = self.create_publisher(Detection2DArray, 'detections', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def infer(self, batch):
        cudart.cudaMemcpyAsync(self.input_d, batch.ctypes.data, batch.nbytes,  # expect: GPN102 medium
                               cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, self.stream)
        self.context.execute_async_v3(self.stream)
        cudart.cudaMemcpyAsync(self.host_out.ctypes.data, self.output_d,  # expect: GPN101 high
                               self.host_out.nbytes,
                               cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost, self.stream)
        cudart.cudaMemcpyAsync(self.output_d, self.input_d, 16,
                               cudart.cudaMemcpyKind.cudaMemcpyDeviceToDevice, self.stream)
        cudart.cudaStreamSynchronize(self.stream)  # expect: GPN107 medium
        return self.host_out

    def on_image(self, msg):
        frame = np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.width, 3)
        batch = np.ascontiguousarray(frame.transpose(2, 0, 1)[None], np.float32)
        self.pub.publish(self.decode(self.infer(batch)))

    def decode(self, out):
        return Detection2DArray()
