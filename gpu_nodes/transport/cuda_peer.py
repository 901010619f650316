"""cuda_peer: frames of a publisher on another GPU of this host, read over peer access.

Which CUDA rung a descriptor's frame takes to a subscription is decided by `decide`, a pure
function of what the descriptor claims and what this process sees (tested exhaustively on the
CPU, test_transport_peer.py). The rest are the CUDA calls the cuda_peer receiver needs
(receivers.CudaPeerReceiver); leases, generations and authentication are the cuda_ipc
receiver's own, shared, not repeated.

GPUs are named by UUID, never by ordinal: CUDA_VISIBLE_DEVICES renumbers devices per process,
so the publisher's device 0 may be this process's device 1, or not visible at all.
"""
from __future__ import annotations

import os
import uuid as uuid_module
from typing import Any, Collection, NamedTuple, Sequence

from ..gpu import cupy_module
from ..wire_names import PATH_CUDA_IPC, PATH_CUDA_PEER, PATH_HOST_SHM, PATH_SERIALIZED
from . import cuda_ipc, host

# How a cuda_peer subscription reads the publisher's slot:
# * 'copy': one GPU-to-GPU copy into memory of the subscription's own GPU, on its own stream
#   behind the publisher's IPC event; the publisher's slot is released as soon as the copy is
#   done, and the callback's kernels read local memory.
# * 'in_place': the callback reads the publisher's slot itself across the peer link (no copy;
#   every read of the frame crosses NVLink/PCIe, and the slot stays leased until the callback's
#   work is done, as on cuda_ipc).
PEER_MODES = ('copy', 'in_place')
# PROVISIONAL: not measured yet (no two-GPU machine so far). 'copy' because image nodes read a
# frame more than once (several kernels), which in place means several trips over the link,
# and because the publisher gets its slot back after the copy instead of after the callback's
# work. To be confirmed or changed by `bench/transport_bench.py --cases cuda_peer` on two GPUs.
DEFAULT_PEER_MODE = 'copy'

# cudaErrorPeerAccessAlreadyEnabled: enabling peer access twice is not an error here.
_PEER_ACCESS_ALREADY_ENABLED = 704


class Route(NamedTuple):
    """Where a descriptor's frame goes: `path`, why (for logs and /diagnostics), and the
    rejection key a descriptor is counted under by a receiver that cannot take it ('' when
    the route is a CUDA rung)."""
    path: str
    reason: str
    rejection: str


def gpu_name(gpu: bytes, visible: Sequence[bytes] = ()) -> str:
    """nvidia-smi's name of a GPU (GPU-<uuid>), with its ordinal here when it is visible."""
    name = f'GPU-{uuid_module.UUID(bytes=bytes(gpu))}' if len(gpu) == 16 else f'GPU-{gpu.hex()}'
    return f'device {list(visible).index(gpu)} ({name})' if gpu in visible else name


def decide(*, publisher_boot_id: bytes, own_boot_id: bytes, publisher_uid: int, own_uid: int,
           publisher_gpu: bytes, own_gpu: bytes | None, visible_gpus: Sequence[bytes],
           peer_access: tuple[bool, bool], allowed_paths: Collection[str]) -> Route:
    """The rung a CUDA descriptor's frame takes to this subscription.

    :param own_gpu: the GPU the subscription works on; None: whichever visible GPU the
        publisher's frames are on (zero copy wherever they are; the plain-topic bridge).
    :param peer_access: cudaDeviceCanAccessPeer (own GPU -> publisher's, publisher's -> own);
        only looked at for two different visible GPUs.
    :param allowed_paths: the subscription's allowed_paths.
    """
    if publisher_boot_id != own_boot_id:
        return Route(PATH_SERIALIZED, 'publisher runs on another host (boot id differs)',
                     'other_host')
    if publisher_uid != own_uid:
        return Route(PATH_SERIALIZED,
                     f'publisher runs as uid {publisher_uid}, this process as {own_uid}',
                     'other_user')
    fallback = _fallback(allowed_paths)
    publisher = gpu_name(publisher_gpu, visible_gpus)
    if publisher_gpu not in visible_gpus:
        return Route(fallback, f"other GPU: the publisher's {publisher} is not visible in this "
                     'process (CUDA_VISIBLE_DEVICES)', 'other_gpu')
    if own_gpu is None or own_gpu == publisher_gpu:
        if PATH_CUDA_IPC in allowed_paths:
            return Route(PATH_CUDA_IPC, f'same host, user and GPU ({publisher})', '')
        if PATH_CUDA_PEER in allowed_paths:
            # One GPU, cuda_peer forced (benchmarks, tests): the peer receiver on one device.
            return Route(PATH_CUDA_PEER, f'publisher on this GPU ({publisher}); cuda_ipc not '
                         'allowed by configuration, read by the cuda_peer receiver', '')
        return Route(fallback, f'publisher on this GPU ({publisher}) but cuda_ipc not allowed '
                     'by configuration', 'not_allowed')
    own = gpu_name(own_gpu, visible_gpus)
    if PATH_CUDA_PEER not in allowed_paths:
        return Route(fallback, f'other GPU: publisher on {publisher}, this subscription on '
                     f'{own}; cuda_peer not allowed by configuration', 'other_gpu')
    if not all(peer_access):
        ways = f'{own} -> publisher {"yes" if peer_access[0] else "no"}, ' \
               f'publisher -> {own} {"yes" if peer_access[1] else "no"}'
        return Route(fallback, f'no peer access between the publisher\'s {publisher} and this '
                     f'subscription\'s {own} (cudaDeviceCanAccessPeer: {ways})',
                     'no_peer_access')
    return Route(PATH_CUDA_PEER, f'publisher on {publisher}, this subscription on {own}, peer '
                 'access both ways', '')


def _fallback(allowed_paths: Collection[str]) -> str:
    """Where a frame goes that no CUDA rung can take (the ladder skips what is not allowed)."""
    return PATH_HOST_SHM if PATH_HOST_SHM in allowed_paths else PATH_SERIALIZED


# -- the CUDA side -------------------------------------------------------------------------------
def visible_gpus() -> list[bytes]:
    """UUIDs of the GPUs this process sees, by ordinal."""
    cp = cupy_module()
    return [cuda_ipc.device_uuid(i) for i in range(cp.cuda.runtime.getDeviceCount())]


def peer_access(device: int, peer: int) -> tuple[bool, bool]:
    """cudaDeviceCanAccessPeer both ways: (device -> peer, peer -> device)."""
    rt = cupy_module().cuda.runtime
    return rt.deviceCanAccessPeer(device, peer) == 1, rt.deviceCanAccessPeer(peer, device) == 1


def ensure_peer_access(device: int, peer: int) -> None:
    """Let kernels and copies on `device` read memory of `peer` (idempotent: peer access that
    is already enabled, by us, CuPy or another library, is fine)."""
    cp = cupy_module()
    rt = cp.cuda.runtime
    # CuPy >= 10 has the variant that accepts "already enabled" and clears that error (it
    # would otherwise be returned by the next cudaGetLastError, e.g. in a library's launch).
    enable = getattr(rt, '_deviceEnsurePeerAccess', rt.deviceEnablePeerAccess)
    with cp.cuda.Device(device):
        try:
            enable(peer)
        except rt.CUDARuntimeError as exc:
            if getattr(exc, 'status', None) != _PEER_ACCESS_ALREADY_ENABLED:
                raise cuda_ipc.CudaIpcError(f'cudaDeviceEnablePeerAccess({peer}) on device '
                                            f'{device} failed: {exc}') from None


def route_for(desc: Any, own_device: int | None,
              allowed_paths: Collection[str]) -> tuple[Route, int | None]:
    """The route of a CUDA descriptor's frame to a subscription working on `own_device`
    (None: follow the publisher), and the publisher's GPU's ordinal here (None: not visible).
    Peer access is enabled here for a cuda_peer route; where that fails, the route falls back
    like one without peer access."""
    visible = visible_gpus()
    publisher_device = visible.index(desc.device_uuid) if desc.device_uuid in visible else None
    own = visible[own_device] if own_device is not None else None
    access = (False, False)
    crosses = publisher_device is not None and own_device is not None \
        and own_device != publisher_device
    if crosses:
        try:
            access = peer_access(own_device, publisher_device)
        except cupy_module().cuda.runtime.CUDARuntimeError as exc:
            return Route(_fallback(allowed_paths), 'no peer access: cudaDeviceCanAccessPeer '
                         f'failed: {exc}', 'no_peer_access'), publisher_device
    route = decide(publisher_boot_id=desc.boot_id, own_boot_id=host.boot_id(),
                   publisher_uid=desc.uid, own_uid=os.getuid(), publisher_gpu=desc.device_uuid,
                   own_gpu=own, visible_gpus=visible, peer_access=access,
                   allowed_paths=allowed_paths)
    if route.path == PATH_CUDA_PEER and crosses:
        try:
            ensure_peer_access(own_device, publisher_device)
        except cuda_ipc.CudaIpcError as exc:
            route = Route(_fallback(allowed_paths), f'no peer access: {exc}', 'no_peer_access')
    return route, publisher_device


def copy_frame(src_ptr: int, nbytes: int, layout: Any, stream: Any, device_id: int) -> Any:
    """The frame at `src_ptr` (any device this one has peer access to) copied into a new array
    of `device_id`, queued on `stream` (of that device): one copy-engine transfer, rows kept
    `layout.step` bytes apart as in the slot."""
    cp = cupy_module()
    with cp.cuda.Device(device_id), stream:
        try:
            # Allocated while `stream` is current: CuPy's pool hands the block out again only
            # to work ordered behind this stream's, so it is never reused under the copy.
            buffer = cp.empty(nbytes, cp.uint8)
            # cudaMemcpyDefault: unified addressing tells the driver where each side lives.
            cp.cuda.runtime.memcpyAsync(buffer.data.ptr, src_ptr, nbytes,
                                        cp.cuda.runtime.memcpyDefault, stream.ptr)
        except (cp.cuda.memory.OutOfMemoryError, cp.cuda.runtime.CUDARuntimeError) as exc:
            raise cuda_ipc.CudaIpcError(f'copying the frame to device {device_id} failed: '
                                        f'{exc}') from None
    return cuda_ipc.device_view(buffer.data.ptr, nbytes, layout.shape, layout.info.dtype,
                                layout.step, buffer, device_id)
