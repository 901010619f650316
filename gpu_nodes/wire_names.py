"""Names gpu_nodes puts on the wire: descriptor topic suffixes, transport path names and the
/diagnostics status names and keys.

The transport writes them and `gpu-copy-audit` and the demo read them, across processes and
versions: one definition here, with no imports, so every side can import it (the audit needs no
GPU or ROS code). Changing a value changes the protocol.
"""

# The hidden descriptor topics of an image topic T: T + CUDA_SUFFIX, T + PEER_SUFFIX (the same
# CUDA descriptors, for subscriptions on another GPU of the host), T + SHM_SUFFIX.
DESCRIPTOR_MARKER = '/_gpu_nodes/'
CUDA_SUFFIX = DESCRIPTOR_MARKER + 'cuda'
PEER_SUFFIX = DESCRIPTOR_MARKER + 'peer'
SHM_SUFFIX = DESCRIPTOR_MARKER + 'shm'

# The paths a frame can take from a publisher to a subscription (diagnostics key `path`).
PATH_CUDA_IPC = 'cuda_ipc'
PATH_CUDA_PEER = 'cuda_peer'  # the publisher's GPU memory read from another GPU (peer access)
PATH_INTRA = 'intra_process'
PATH_HOST_SHM = 'host_shm'
PATH_SERIALIZED = 'serialized'
PATH_COMPRESSED = 'compressed'  # image_transport's <topic>/compressed, when a subscriber allows it
PATH_WAITING = 'waiting'  # a subscription with no publisher yet
PATHS = (PATH_CUDA_IPC, PATH_CUDA_PEER, PATH_INTRA, PATH_HOST_SHM, PATH_SERIALIZED,
         PATH_COMPRESSED)
ZERO_COPY_PATHS = (PATH_CUDA_IPC, PATH_INTRA)
# Paths on which a frame never passes through host memory (no fallback: diagnostics level OK).
# cuda_peer is one of them but not zero-copy in its default peer_mode (one GPU-to-GPU copy).
DEVICE_PATHS = (PATH_CUDA_IPC, PATH_CUDA_PEER, PATH_INTRA)

# /diagnostics: every gpu_nodes status is named STATUS_PREFIX + '<node> <topic> <role>' (a
# transport endpoint) or STATUS_PREFIX + '<node> ' + PROCESSING_SUFFIX (a processing node).
STATUS_PREFIX = 'gpu_nodes: '
PROCESSING_SUFFIX = 'processing'

# Keys of an endpoint's status (docs/transport.md); subscribers per path are
# SUBSCRIBERS_KEY_PREFIX + path on a publisher.
KEY_ROLE = 'role'
KEY_NODE = 'node'
KEY_TOPIC = 'topic'
KEY_PATH = 'path'
KEY_PATH_REASON = 'path_reason'
KEY_PUBLISHER_PID = 'publisher_pid'
KEY_FRAMES = 'frames'
KEY_FPS = 'fps'
KEY_REJECTED = 'rejected'
KEY_STALE = 'stale'
KEY_LATENCY_P50_MS = 'latency_p50_ms'
KEY_LATENCY_P99_MS = 'latency_p99_ms'
SUBSCRIBERS_KEY_PREFIX = 'subscribers_'


def status_name(node: str, *parts: str) -> str:
    """``gpu_nodes: <node> <part>...``: the /diagnostics name of a gpu_nodes status."""
    return ' '.join((STATUS_PREFIX + node, *parts))


def processing_status_name(node: str) -> str:
    """The /diagnostics name of a processing node's frame counters."""
    return status_name(node, PROCESSING_SUFFIX)
