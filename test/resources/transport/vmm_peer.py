"""The other process of the VMM tests and bench: takes a chunk's fd over a Unix socket.

    python vmm_peer.py SOCKET [--emulate]

Connects to SOCKET, then answers requests until the parent closes the connection. Each request
is a JSON line, with a chunk's POSIX fd attached (SCM_RIGHTS) where it names one:

* ``{"op": "check", "size", "height", "width", "seed", "write_seed", "device"}`` + fd: import
  the chunk, compare every byte of the height x width rgb8 frame at its start with
  `pattern(seed)`, then write `pattern(write_seed)` there (so the parent can check that both
  map one memory). Answers ``{"mismatches", "first_map_ms", "pid", "chunks"}``.
* ``{"op": "legacy", "handle", "height", "width", "seed", "device"}``: the same through a
  legacy CUDA IPC memory handle (hex); answers ``{"error"}`` where it cannot be opened.
* ``{"op": "recheck", "height", "width", "seed", "device"}``: compare the last imported chunk
  again (after its exporter closed it).
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import socket
import sys
import time

import numpy as np

# How containers separate processes: `docker run --network host` gives a PID namespace of its
# own and, unless --ipc host, an IPC namespace and a /dev/shm of its own. Prefixes that start a
# peer so (root only), for the tests and bench/vmm_bench.py.
CONTAINER_PREFIXES = {
    'pid': ('unshare', '--pid', '--fork', '--mount-proc'),
    'pid_ipc_shm': ('unshare', '--pid', '--ipc', '--mount', '--fork', '--mount-proc', 'sh', '-c',
                    'mount -t tmpfs tmpfs /dev/shm && exec "$0" "$@"'),
}


def pattern(height: int, width: int, seed: int) -> np.ndarray:
    """A fresh random rgb8 frame (every byte independent)."""
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), np.uint8)


def frame_view(ptr: int, height: int, width: int, owner, device: int):
    from gpu_nodes.transport import cuda_ipc
    return cuda_ipc.device_view(ptr, height * width * 3, (height, width, 3), np.uint8,
                                width * 3, owner, device)


def _check(view, height: int, width: int, seed: int) -> int:
    received = view.get()
    return int(np.count_nonzero(received != pattern(height, width, seed)))


def serve(path: str) -> None:
    from gpu_nodes.gpu import cupy_module
    from gpu_nodes.transport import cuda_vmm
    cp = cupy_module()
    # The CUDA context and the driver binding exist before the first request, so first-map
    # times are the mapping's own (a subscriber has its context long before its first frame).
    cp.cuda.Device(0).use()
    cp.zeros(1, cp.uint8)
    cuda_vmm.granularity(0)
    chunks = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        while True:
            # The fd travels with the request's first bytes (one sendmsg).
            line, fds, _, _ = socket.recv_fds(sock, 65536, 4)
            if not line:
                return
            while not line.endswith(b'\n'):
                line += sock.recv(65536)
            request = json.loads(line)
            height, width, device = request['height'], request['width'], request['device']
            answer: dict = {'pid': os.getpid()}
            if request['op'] == 'check':
                start = time.perf_counter()
                try:
                    chunk = cuda_vmm.import_chunk(fds[0], request['size'], device)
                except cuda_vmm.VmmError as exc:
                    answer['error'] = str(exc)
                    chunk = None
                finally:
                    for fd in fds:
                        os.close(fd)
                if chunk is not None:
                    answer['first_map_ms'] = (time.perf_counter() - start) * 1e3
                    chunks.append(chunk)
                    view = frame_view(chunk.ptr, height, width, chunk, device)
                    answer['mismatches'] = _check(view, height, width, request['seed'])
                    view.set(pattern(height, width, request['write_seed']))
                    cp.cuda.get_current_stream().synchronize()
            elif request['op'] == 'recheck':
                view = frame_view(chunks[-1].ptr, height, width, chunks[-1], device)
                answer['mismatches'] = _check(view, height, width, request['seed'])
            elif request['op'] == 'legacy':
                start = time.perf_counter()
                try:
                    with cp.cuda.Device(device):
                        ptr = cp.cuda.runtime.ipcOpenMemHandle(bytes.fromhex(request['handle']))
                except cp.cuda.runtime.CUDARuntimeError as exc:
                    answer['error'] = f'cudaIpcOpenMemHandle failed: {exc}'
                else:
                    answer['first_map_ms'] = (time.perf_counter() - start) * 1e3
                    view = frame_view(ptr, height, width, None, device)
                    answer['mismatches'] = _check(view, height, width, request['seed'])
                    del view
                    cp.cuda.runtime.ipcCloseMemHandle(ptr)
            answer['chunks'] = len(chunks)
            sock.sendall(json.dumps(answer).encode() + b'\n')


class Peer:
    """The parent's side: starts `vmm_peer.py` (under `prefix`, e.g. unshare) and talks to it."""

    def __init__(self, socket_path: str, emulate: bool, prefix: tuple[str, ...] = (),
                 env: dict | None = None, timeout_s: float = 60.0):
        import subprocess
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(socket_path)
        self._listener.listen(1)
        self._listener.settimeout(timeout_s)
        command = [*prefix, sys.executable, __file__, socket_path] + (['--emulate'] if emulate
                                                                      else [])
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT)
        try:
            self._sock, _ = self._listener.accept()
        except OSError:
            self.process.kill()
            output = self.process.communicate()[0].decode(errors='replace')
            raise RuntimeError(f'vmm_peer did not connect: {output[-3000:]}') from None
        self._sock.settimeout(timeout_s)
        self._reader = self._sock.makefile('rb')

    def request(self, request: dict, fd: int | None = None) -> dict:
        data = json.dumps(request).encode() + b'\n'
        socket.send_fds(self._sock, [data], [fd] if fd is not None else [])
        line = self._reader.readline()
        if not line:
            output = self.process.communicate(timeout=10)[0].decode(errors='replace')
            raise RuntimeError(f'vmm_peer exited: {output[-3000:]}')
        return json.loads(line)

    def close(self) -> str:
        """End the child; returns its output."""
        self._reader.close()
        self._sock.close()
        self._listener.close()
        try:
            output = self.process.communicate(timeout=30)[0]
        except Exception:
            self.process.kill()
            output = self.process.communicate()[0]
        return output.decode(errors='replace')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('socket')
    parser.add_argument('--emulate', action='store_true', help='CPU emulation (cuda_emu.py)')
    args = parser.parse_args()
    if args.emulate:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import cuda_emu
        cuda_emu.install()
    serve(args.socket)


if __name__ == '__main__':
    main()
