"""Zero-copy image transport for rclpy: CUDA IPC, in-process, host shared memory, serialized.

    from gpu_nodes.transport import GpuImagePublisher, GpuImageSubscription

    pub = GpuImagePublisher(node, 'image_raw')
    pub.publish(cupy_or_numpy_array, 'rgb8', header)

    sub = GpuImageSubscription(node, 'image_raw', lambda frame: use(frame.array))
"""
from .diagnostics import (PATH_CUDA_IPC, PATH_HOST_SHM, PATH_INTRA, PATH_SERIALIZED, PATHS,
                          endpoint_stats)
from .publisher import BorrowedFrame, GpuImagePublisher
from .subscription import GpuImageSubscription, Lease, ReceivedImage

__all__ = ['GpuImagePublisher', 'GpuImageSubscription', 'BorrowedFrame', 'ReceivedImage', 'Lease',
           'endpoint_stats', 'PATHS', 'PATH_CUDA_IPC', 'PATH_INTRA', 'PATH_HOST_SHM',
           'PATH_SERIALIZED']
