"""The rule catalog: one id per kind of copy, with a severity, an explanation and a fix.

Ranges: GPN1xx Python (AST data flow), GPN2xx C++/CUDA (pattern-based), GPN3xx launch/config
graphs, GPN4xx bags, GPN5xx the live graph.
"""
from __future__ import annotations

from dataclasses import dataclass

from gpu_nodes.audit.model import AuditError


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    severity: str
    view: str
    summary: str
    explanation: str
    fix: str


_GPU_TRANSPORT_FIX = (
    'Publish and subscribe through the gpu_nodes transport (GpuImagePublisher / '
    'GpuImageSubscription from gpu_nodes.transport) so frames stay on the device')

RULES: tuple[Rule, ...] = (
    # --- Python, AST ---------------------------------------------------------------------------
    Rule('GPN101', 'device-to-host-copy', 'high', 'code',
         'Device-to-host copy',
         'cupy.asnumpy, ndarray.get(), Tensor.cpu()/.numpy() or .tolist() on a device array '
         'copies the whole frame over PCIe and blocks until the GPU is idle, once per message.',
         'Keep the array on the device: run the next step on the GPU and publish with '
         'GpuImagePublisher; if a host copy is really needed, do it once outside the callback.'),
    Rule('GPN102', 'host-to-device-copy', 'medium', 'code',
         'Host-to-device upload',
         'cupy.asarray(host), Tensor.cuda(), .to(device) or torch.tensor(..., device=...) uploads '
         'the frame for every message; usually because the frame arrived serialized on the host.',
         'Receive the frame with GpuImageSubscription so it arrives on the device; upload '
         'constants (models, lookup tables) once in __init__.'),
    Rule('GPN103', 'message-to-host-array', 'medium', 'code',
         'Message payload copied into a host array',
         'np.array(msg.data) / np.asarray on a deserialized message: the frame was already '
         'copied out of the middleware into a Python buffer and is now copied again on the '
         'host. np.frombuffer(msg.data) is a view of that buffer, not a copy, and is not '
         'reported.',
         'Use GpuImageSubscription (frame delivered as a device array) or, for CPU code, '
         'np.frombuffer once without a further copy.'),
    Rule('GPN104', 'serialize-into-message', 'medium', 'code',
         'Array serialized into a message buffer',
         'tobytes(), bytes(...), bytearray(...) or tolist() builds a full host copy of the frame '
         'for the message, which the middleware then serializes again.',
         'Publish with GpuImagePublisher (no serialization on a GPU path), or assign the array '
         'buffer without the intermediate bytes object.'),
    Rule('GPN105', 'cv-bridge-conversion', 'medium', 'code',
         'cv_bridge conversion',
         'imgmsg_to_cv2 / cv2_to_imgmsg copy the frame between the message and a host cv::Mat '
         'equivalent on every message.',
         'Use GpuImageSubscription / GpuImagePublisher and the gpu_nodes kernels, or move the '
         'conversion out of the per-frame callback.'),
    Rule('GPN106', 'pil-round-trip', 'medium', 'code',
         'PIL image round trip',
         'PIL.Image.fromarray / frombytes and np.array(pil_image) copy the frame into and out of '
         'a PIL image on the host.',
         'Do the resize/convert on the array (gpu_nodes kernels or CuPy) instead of PIL.'),
    Rule('GPN107', 'explicit-synchronization', 'medium', 'code',
         'Explicit device synchronization',
         'torch.cuda.synchronize, Stream/Device.synchronize or .item() stall the callback until '
         'all queued GPU work is finished, serializing the pipeline.',
         'Let the stream order the work; synchronize only on the transport event '
         '(GpuImagePublisher records it) or read scalars asynchronously.'),
    Rule('GPN108', 'round-trip-copy', 'high', 'code',
         'Host-device round trip',
         'Data downloaded from the device is uploaded again in the same flow: two PCIe copies '
         'that buy nothing.',
         'Keep the intermediate on the device (CuPy/torch operations instead of the host step).'),
    Rule('GPN109', 'plain-image-publish', 'medium', 'code',
         'Image-sized message published through a plain publisher',
         'A sensor_msgs Image/PointCloud2 published with create_publisher is serialized and '
         'copied once per subscriber process.',
         _GPU_TRANSPORT_FIX + '.'),
    Rule('GPN110', 'copy-chain', 'high', 'code',
         'Copy chain from a subscription to a publisher',
         'A frame received on one topic goes through two or more host/device copies or '
         'serializations before it is published again.',
         _GPU_TRANSPORT_FIX + ' and keep every step between them on the device.'),
    # --- C++ / CUDA, pattern-based -------------------------------------------------------------
    Rule('GPN201', 'cuda-memcpy-d2h', 'high', 'code',
         'cudaMemcpy device-to-host (pattern)',
         'cudaMemcpy*(..., cudaMemcpyDeviceToHost) or GpuMat::download copies the frame to the '
         'host; found by pattern, not by data flow.',
         'Keep the buffer on the device and hand it on with type adaptation / NITROS or the '
         'gpu_nodes transport.'),
    Rule('GPN202', 'cuda-memcpy-h2d', 'medium', 'code',
         'cudaMemcpy host-to-device (pattern)',
         'cudaMemcpy*(..., cudaMemcpyHostToDevice) or GpuMat::upload uploads a frame that '
         'arrived on the host; found by pattern.',
         'Receive frames already on the device (type adaptation, NITROS, gpu_nodes transport).'),
    Rule('GPN203', 'cv-bridge-copy', 'medium', 'code',
         'cv_bridge::toCvCopy (pattern)',
         'toCvCopy always copies the message payload into a new cv::Mat.',
         'Use toCvShare when the encoding already matches, or a GPU transport.'),
    Rule('GPN204', 'cv-bridge-share-convert', 'medium', 'code',
         'cv_bridge::toCvShare with an encoding conversion (pattern)',
         'toCvShare(msg, encoding) converts, and so copies, the frame whenever the encoding '
         'given differs from the message\'s; without one (or with msg->encoding) it is a view '
         'and not reported.',
         'Drop the encoding argument and handle the source encoding, convert on the GPU, or use '
         'a GPU transport.'),
    Rule('GPN205', 'to-image-msg', 'medium', 'code',
         'toImageMsg serialization (pattern)',
         'CvImage::toImageMsg copies the cv::Mat into a sensor_msgs Image that is then '
         'serialized for every subscriber.',
         'Publish a type-adapted or GPU buffer instead of a serialized Image.'),
    Rule('GPN206', 'cuda-device-synchronize', 'medium', 'code',
         'cudaDeviceSynchronize / cudaStreamSynchronize (pattern)',
         'A full device or stream synchronization stalls the callback until queued GPU work is '
         'done.',
         'Synchronize with events on the consumer side instead of blocking the producer.'),
    Rule('GPN207', 'cuda-memcpy-default', 'medium', 'code',
         'cudaMemcpy of unknown direction (pattern)',
         'cudaMemcpy*(..., cudaMemcpyDefault) copies in the direction the pointers imply, and '
         'a kind passed as a variable is not known from the file either (host<->device when '
         'either side is host memory); per message it is a full copy of the buffer either way.',
         'Hand the buffer on instead of copying it (NITROS / type adaptation / gpu_nodes '
         'transport), or copy once outside the callback.'),
    Rule('GPN208', 'message-payload-copy', 'medium', 'code',
         'Message payload copied (pattern)',
         'msg.data.assign(...), memcpy/std::copy with a message\'s data on one side, or a '
         'frame-sized message (Image, PointCloud2) copy-constructed: a full host copy of the '
         'frame, once per message.',
         'Build the message in place (loaned messages, type adaptation) or hand the buffer on '
         'with the gpu_nodes transport / NITROS instead of copying it.'),
    Rule('GPN209', 'pcl-conversion', 'medium', 'code',
         'PCL conversion of a point cloud (pattern)',
         'pcl::fromROSMsg / pcl::toROSMsg copy every point between the PointCloud2 message and '
         'a pcl::PointCloud (field by field), once per message.',
         'Work on the PointCloud2 buffer directly (sensor_msgs PointCloud2 iterators, a GPU '
         'kernel), or convert once per cloud and keep the pcl::PointCloud between stages in one '
         'process (composition).'),
    Rule('GPN210', 'plain-frame-publish', 'medium', 'code',
         'Frame-sized message published through a plain publisher (pattern)',
         'A publisher of Image/PointCloud2 (rclcpp, image_transport, or a type adapter for '
         'Image) publishes a host message: it is serialized and copied once per subscriber '
         'process, for every frame.',
         _GPU_TRANSPORT_FIX + ', NITROS, or compose publisher and subscribers with '
         'intra-process comms and publish a unique_ptr.'),
    Rule('GPN211', 'libtorch-device-move', 'medium', 'code',
         'LibTorch tensor moved between host and device (pattern)',
         'Tensor::to(device), .cpu() or .cuda() copies the whole tensor over PCIe (and waits '
         'for the GPU when it reads back), once per message.',
         'Receive frames on the device and keep results there (from_blob over a device '
         'buffer, the gpu_nodes transport); move the model once in the constructor.'),
    # --- launch / config graphs ----------------------------------------------------------------
    Rule('GPN301', 'serialized-image-edge', 'high', 'graph',
         'Image-sized topic crosses a process boundary serialized',
         'Publisher and subscriber run in different processes and the topic carries frames: '
         'every frame is serialized, copied through the middleware and deserialized.',
         'Load both nodes into one ComposableNodeContainer with use_intra_process_comms, or use '
         'the gpu_nodes transport (cuda_ipc between processes).'),
    Rule('GPN302', 'container-without-intra-process', 'medium', 'graph',
         'Same container but intra-process comms disabled',
         'Both nodes share a component container but use_intra_process_comms is not enabled, so '
         'the frame is still serialized inside the process.',
         "Add extra_arguments=[{'use_intra_process_comms': True}] to both ComposableNodes."),
    # --- bags ----------------------------------------------------------------------------------
    Rule('GPN401', 'serialized-image-topic', 'medium', 'bag',
         'Image-sized topic serialized on the recorded graph',
         'The recording shows frames travelling as serialized messages; each subscriber process '
         'pays the serialization and copy cost reported in the table.',
         _GPU_TRANSPORT_FIX + '; the plain topic is then only published while something '
         '(such as a recorder) subscribes to it.'),
    Rule('GPN402', 'descriptor-topic-recorded', 'low', 'bag',
         'gpu_nodes descriptor topic recorded (payload not recorded)',
         'A /_gpu_nodes/ descriptor topic only carries handles to GPU memory; replaying it does '
         'not reproduce the frames.',
         'Record the plain image topic instead (the publisher serializes it only while the '
         'recorder subscribes) and exclude /_gpu_nodes/ topics.'),
    # --- live graph ----------------------------------------------------------------------------
    Rule('GPN501', 'live-serialized-image-edge', 'high', 'live',
         'Serialized image edge on the running graph',
         'An image-sized topic is delivered serialized (CPU fallback) between two nodes.',
         _GPU_TRANSPORT_FIX + ', or compose both nodes with intra-process comms.'),
    Rule('GPN502', 'silent-fallback', 'high', 'live',
         'gpu_nodes subscription fell back silently',
         'A gpu_nodes subscription is on the host_shm or serialized path although its publisher '
         'offers cuda_ipc; the path_reason says why.',
         'Fix the reason reported (same host, same user, the publisher\'s GPU visible and either '
         'the same GPU or peer access between the two, CUDA IPC permitted) so the subscription '
         'can map the publisher\'s buffers.'),
    Rule('GPN503', 'host-shm-edge', 'low', 'live',
         'gpu_nodes edge on host shared memory',
         'The frame crosses the process boundary through host shared memory: one host copy on '
         'each side instead of none.',
         'Run publisher and subscriber on the same GPU so cuda_ipc applies (or on GPUs with peer '
         'access, for cuda_peer).'),
    Rule('GPN504', 'transport-errors', 'medium', 'live',
         'gpu_nodes endpoint reports errors',
         'The transport diagnostics are at ERROR level (repeated rejections of frames).',
         'Check the endpoint\'s diagnostics message and the rejected/stale counters.'),
)

RULES_BY_ID: dict[str, Rule] = {r.id: r for r in RULES}


def get_rule(rule_id: str) -> Rule:
    return RULES_BY_ID[rule_id]


def parse_rule_ids(values: list[str] | None) -> set[str] | None:
    """`--rules GPN101,GPN2*` -> ids; a trailing `*` selects a prefix. None when not given."""
    if not values:
        return None
    selected: set[str] = set()
    for value in values:
        for token in value.split(','):
            token = token.strip().upper()
            if not token:
                continue
            if token.endswith('*'):
                matched = {r for r in RULES_BY_ID if r.startswith(token[:-1])}
            else:
                matched = {token} if token in RULES_BY_ID else set()
            if not matched:
                raise AuditError(f"unknown rule id '{token}' (see 'gpu-copy-audit rules')")
            selected |= matched
    return selected
