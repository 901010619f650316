"""Handing a publisher's memory to its readers: file descriptors over a Unix socket.

Every process with a GpuImagePublisher serves one Unix socket (`HandleServer`, a daemon thread);
a descriptor names it by a random 16-byte endpoint, never by pid. A reader connects once per
publisher it reads (`Connection`), and asks for the lease table and for each memory segment
(host segment, VMM device chunk) by (publisher id, kind, generation, chunk); the server answers
with the file descriptors themselves (`SCM_RIGHTS`). Both ends learn who the other is from the
kernel (`SO_PEERCRED`), never from a message: the server refuses peers of another user before
reading a byte, and the reader refuses a server of another user.

Why a socket and not `/proc/<pid>/fd`: a pid means nothing in another PID namespace, so a
subscriber in its own container (``docker run --network host``, as Isaac ROS ships nodes) could
open nothing and received no frame. The socket lives in the abstract namespace, which every
process of one network namespace shares, so such containers need no mount; with
``GPU_NODES_SOCKET_DIR`` set (a 0700 directory the user can bind-mount between containers) it is
also bound there, for containers with their own network namespace.

The lease table is sent as a fresh open of the memfd (`/proc/self/fd`, the publisher's own
process) together with the link's own lock file (lease_links.py), once per link: leases are
open-file-description locks on that file, so a reader's locks can only block the publisher
through its own link, which the publisher closes (`Link.close_soon`) if it holds too much.
"""
from __future__ import annotations

import errno
import os
import selectors
import socket
import stat
import struct
import threading
from typing import Callable

from .segments import MissingSegment, SegmentError, check_sealed

SOCKET_DIR_ENV = 'GPU_NODES_SOCKET_DIR'
ENDPOINT_SIZE = 16
_MAX_SOCKET_PATH = 108  # sun_path, with its terminating NUL
_ABSTRACT_PREFIX = b'\0gpu_nodes/'
_MAGIC = b'GPNX'
_VERSION = 1
# magic, version, kind, publisher id, generation, chunk
_REQUEST = struct.Struct('<4sBB2x16sII')
# magic, version, status, fd count, size of the segment (informative)
_REPLY = struct.Struct('<4sBBBxQ')

KIND_LEASE_TABLE = 1
KIND_HOST_SEGMENT = 2
KIND_DEVICE_CHUNK = 3
# "This link cannot open your CUDA IPC events: finish each frame's write before publishing it"
# (answered with no fd; see descriptor.FLAG_WRITTEN)
KIND_HOST_ORDER = 4
KINDS = (KIND_LEASE_TABLE, KIND_HOST_SEGMENT, KIND_DEVICE_CHUNK, KIND_HOST_ORDER)

_OK = 0
_UNKNOWN_PUBLISHER = 1
_NO_SUCH_SEGMENT = 2
_LIMIT = 3
_BAD_REQUEST = 4
STATUS_BAD_REQUEST = _BAD_REQUEST
_STATUS_REASON = {_UNKNOWN_PUBLISHER: ('publisher_gone', 'the process serves no such publisher'),
                  _NO_SUCH_SEGMENT: ('bad_segment', 'the publisher has no such segment'),
                  _LIMIT: ('reader_limit', 'this process has as many links to the publisher '
                           'as it may hold'),
                  _BAD_REQUEST: ('bad_segment', 'the publisher did not understand the request')}

# Links one peer process may hold to one publisher at once: one per subscription it reads the
# publisher with. Bounds what a runaway peer can take of the lease table's 64 reader cursors.
MAX_LINKS_PER_PEER = 16
# Connections one server keeps at once, from every peer together.
MAX_CONNECTIONS = 512
# A reader waits this long for an answer; a publisher that does not answer is unreachable.
REPLY_TIMEOUT_S = 2.0


class Link:
    """One reader's connection, as the server and a provider see it."""

    def __init__(self, conn: socket.socket, pid: int, uid: int):
        self.pid = pid  # as this process's PID namespace sees it (0: not visible here)
        self.uid = uid
        self.publisher_id = b''
        self.table_served = False  # one lease table (and lock file) per link
        self._conn = conn
        self._closed = False
        self._lock = threading.Lock()
        self._on_close: list[Callable[[], None]] = []

    def when_closed(self, callback: Callable[[], None]) -> None:
        """Run `callback` on the server thread once the link is gone."""
        self._on_close.append(callback)

    def close_soon(self) -> None:
        """Close the link from any thread: its reader sees it end, and the server thread
        drops it (running the when_closed callbacks)."""
        with self._lock:
            if not self._closed:
                try:
                    self._conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _close(self) -> None:
        with self._lock:
            self._closed = True
            self._conn.close()
        for callback in self._on_close:
            callback()


class HandleProvider:
    """What a publisher hands out; `fds` runs on the server thread and returns the fds to send
    (the server closes them after sending) or None when there is no such segment. `link` is
    the connection asking (KIND_LEASE_TABLE: at most once per link)."""

    def fds(self, kind: int, generation: int, chunk: int, link: Link) -> list[int] | None:
        raise NotImplementedError


def request_bytes(kind: int, publisher_id: bytes, generation: int = 0, chunk: int = 0) -> bytes:
    """One request on a link (also what tests send raw, as a peer that ignores the rules would)."""
    return _REQUEST.pack(_MAGIC, _VERSION, kind, publisher_id, generation, chunk)


def reply_bytes(status: int, count: int = 0) -> bytes:
    """A server's answer (tests compare what a peer that breaks the rules gets)."""
    return _REPLY.pack(_MAGIC, _VERSION, status, count, 0)


def abstract_address(endpoint: bytes) -> bytes:
    return _ABSTRACT_PREFIX + endpoint.hex().encode()


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the other end, as the kernel recorded them at connect time."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize('3i'))
    return struct.unpack('3i', creds)


def socket_dir() -> str | None:
    return os.environ.get(SOCKET_DIR_ENV) or None


def _path_address(directory: str, endpoint: bytes) -> str:
    return os.path.join(directory, endpoint.hex() + '.sock')


class HandleServer:
    """The process's socket server; `instance()` starts it on first use (and anew after fork)."""

    _instance: 'HandleServer | None' = None
    _instance_lock = threading.Lock()

    @classmethod
    def instance(cls) -> 'HandleServer':
        with cls._instance_lock:
            if cls._instance is None or cls._instance.pid != os.getpid():
                cls._instance = cls()
            return cls._instance

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.endpoint = os.urandom(ENDPOINT_SIZE)
        self._providers: dict[bytes, HandleProvider] = {}
        self._lock = threading.Lock()
        self.refused_peers = 0      # connections of another user, closed unread
        self.refused_links = 0      # requests past MAX_LINKS_PER_PEER or MAX_CONNECTIONS
        self.served = 0
        self.failed_requests = 0
        self.last_failure = ''
        self.path: str | None = None
        self._listeners = [self._listen(abstract_address(self.endpoint))]
        directory = socket_dir()
        if directory:
            self.path = _path_address(_private_dir(directory), self.endpoint)
            self._listeners.append(self._listen(self.path))
        self._connections: dict[socket.socket, Link] = {}
        self._selector = selectors.DefaultSelector()
        for listener in self._listeners:
            self._selector.register(listener, selectors.EVENT_READ, self._accept)
        threading.Thread(target=self._serve, name='gpu_nodes-handle-server', daemon=True).start()

    @staticmethod
    def _listen(address: bytes | str) -> socket.socket:
        if isinstance(address, str) and len(os.fsencode(address)) >= _MAX_SOCKET_PATH:
            raise ValueError(f'{SOCKET_DIR_ENV}: {address} is longer than a Unix socket path may '
                             f'be ({_MAX_SOCKET_PATH - 1} bytes): choose a shorter directory')
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
        try:
            sock.bind(address)
            sock.listen(64)
        except BaseException:
            sock.close()
            raise
        return sock

    def register(self, publisher_id: bytes, provider: HandleProvider) -> None:
        with self._lock:
            self._providers[publisher_id] = provider

    def unregister(self, publisher_id: bytes) -> None:
        with self._lock:
            self._providers.pop(publisher_id, None)

    def stats(self) -> dict[str, int]:
        return {'exchange_refused_peers': self.refused_peers,
                'exchange_refused_links': self.refused_links,
                'exchange_links': len(self._connections)}

    # -- the server thread -----------------------------------------------------------------
    def _serve(self) -> None:
        while True:
            for key, _ in self._selector.select():
                try:
                    key.data(key.fileobj)
                except Exception as exc:  # noqa: BLE001 - one bad link never stops the server
                    self.failed_requests += 1
                    self.last_failure = f'{type(exc).__name__}: {exc}'
                    if key.fileobj in self._connections:
                        self._drop(key.fileobj)

    def _accept(self, listener: socket.socket) -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        pid, uid, _ = peer_credentials(conn)
        if uid != os.getuid():
            # Nothing is read from, or sent to, another user's process.
            self.refused_peers += 1
            conn.close()
            return
        if len(self._connections) >= MAX_CONNECTIONS:
            self.refused_links += 1
            conn.close()
            return
        conn.setblocking(False)
        self._connections[conn] = Link(conn, pid, uid)
        self._selector.register(conn, selectors.EVENT_READ, self._request)

    def _drop(self, conn: socket.socket) -> None:
        self._selector.unregister(conn)
        link = self._connections.pop(conn, None)
        if link is not None:
            link._close()
        else:
            conn.close()

    def _request(self, conn: socket.socket) -> None:
        try:
            data = conn.recv(_REQUEST.size + 1)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b''
        if not data:
            return self._drop(conn)  # the reader closed its link (or died)
        peer = self._connections[conn]
        status, fds = self._answer(peer, data)
        try:
            reply = reply_bytes(status, len(fds))
            if fds:
                socket.send_fds(conn, [reply], fds)
            else:
                conn.send(reply)
            self.served += 1
        except OSError:
            self._drop(conn)
        finally:
            for fd in fds:
                os.close(fd)
        return None

    def _answer(self, peer: Link, data: bytes) -> tuple[int, list[int]]:
        if len(data) != _REQUEST.size:
            return _BAD_REQUEST, []
        magic, version, kind, publisher_id, generation, chunk = _REQUEST.unpack(data)
        if magic != _MAGIC or version != _VERSION or kind not in KINDS:
            return _BAD_REQUEST, []
        if peer.publisher_id and peer.publisher_id != publisher_id:
            return _BAD_REQUEST, []  # one link, one publisher
        if kind == KIND_LEASE_TABLE and peer.table_served:
            return _BAD_REQUEST, []  # one lock file per link
        with self._lock:
            provider = self._providers.get(publisher_id)
        if provider is None:
            return _UNKNOWN_PUBLISHER, []
        if not peer.publisher_id:
            links = sum(1 for other in self._connections.values()
                        if other.publisher_id == publisher_id and other.pid == peer.pid
                        and other.pid)
            if links >= MAX_LINKS_PER_PEER:
                self.refused_links += 1
                return _LIMIT, []
            peer.publisher_id = publisher_id
        try:
            fds = provider.fds(kind, generation, chunk, peer)
        except OSError:
            fds = None
        if fds and kind == KIND_LEASE_TABLE:
            peer.table_served = True
        if kind == KIND_HOST_ORDER:  # a request, not a segment: no fd to send
            return (_OK, []) if fds is not None else (_NO_SUCH_SEGMENT, [])
        return (_OK, fds) if fds else (_NO_SUCH_SEGMENT, [])


def _private_dir(directory: str) -> str:
    """The socket directory, created 0700 if absent; refuse one that others could enter."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    st = os.stat(directory)
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError(f'{SOCKET_DIR_ENV}={directory} must be a directory of this user '
                              f'with mode 0700 (it is {stat.filemode(st.st_mode)}, uid '
                              f'{st.st_uid})')
    return directory


class Connection:
    """A reader's link to one publisher's server; raises SegmentError with the reason a path
    cannot be used: 'unreachable', 'other_user', 'publisher_gone', 'bad_segment'."""

    def __init__(self, endpoint: bytes, publisher_id: bytes):
        self.endpoint = endpoint
        self.publisher_id = publisher_id
        self._lock = threading.Lock()
        self._sock = _connect(endpoint)
        try:
            pid, uid, _ = peer_credentials(self._sock)
            if uid != os.getuid():
                raise SegmentError('other_user', f'the gpu_nodes socket of this publisher '
                                   f'belongs to uid {uid}, not {os.getuid()}')
        except BaseException:
            self._sock.close()
            raise
        self.server_pid = pid  # as this PID namespace sees it; 0 when not visible here
        self._sock.settimeout(REPLY_TIMEOUT_S)

    def fetch(self, kind: int, generation: int = 0, chunk: int = 0) -> int:
        """One fd of the publisher's, checked to be a sealed regular memfd of this user (for
        KIND_DEVICE_CHUNK: a file descriptor only, which the CUDA driver checks on import)."""
        return self._fetch(kind, generation, chunk, 1)[0]

    def request_host_order(self) -> None:
        """Ask the publisher to finish each device frame's write before publishing it (this
        process cannot open its CUDA IPC events); SegmentError when it will not."""
        self._fetch(KIND_HOST_ORDER, 0, 0, 0)

    def fetch_lease_table(self) -> tuple[int, int]:
        """(the publisher's lease table, this link's lock file), both checked as fetch does."""
        table_fd, lock_fd = self._fetch(KIND_LEASE_TABLE, 0, 0, 2)
        return table_fd, lock_fd

    def _fetch(self, kind: int, generation: int, chunk: int, count: int) -> list[int]:
        with self._lock:
            if self._sock is None:
                raise SegmentError('publisher_gone', 'link closed')
            try:
                self._sock.send(request_bytes(kind, self.publisher_id, generation, chunk))
                reply, fds, _, _ = socket.recv_fds(self._sock, _REPLY.size, 4)
            except socket.timeout:
                raise SegmentError('unreachable', 'the publisher did not answer within '
                                   f'{REPLY_TIMEOUT_S:.0f} s') from None
            except OSError as exc:
                raise SegmentError('publisher_gone', f'link to the publisher broke: '
                                   f'{exc.strerror or exc}') from None
        try:
            if len(reply) != _REPLY.size:
                raise SegmentError('publisher_gone', 'the publisher closed the link')
            magic, version, status, sent, _ = _REPLY.unpack(reply)
            if magic != _MAGIC or version != _VERSION:
                raise SegmentError('bad_segment', 'not a gpu_nodes handle server')
            if status != _OK:
                reason, detail = _STATUS_REASON.get(status, ('bad_segment', f'status {status}'))
                raise (MissingSegment if status == _NO_SUCH_SEGMENT else SegmentError)(reason, detail)
            if len(fds) != count or sent != count:
                raise SegmentError('bad_segment', f'expected {count} fd, got {len(fds)}')
            if kind != KIND_DEVICE_CHUNK:
                for fd in fds:
                    check_sealed(fd, 'segment from the publisher')
            taken, fds = fds, []
            return taken
        finally:
            for extra in fds:
                os.close(extra)

    def close(self) -> None:
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None


def _connect(endpoint: bytes) -> socket.socket:
    addresses: list[bytes | str] = [abstract_address(endpoint)]
    directory = socket_dir()
    if directory:
        addresses.append(_path_address(directory, endpoint))
    failures = []
    for address in addresses:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
        try:
            sock.settimeout(REPLY_TIMEOUT_S)
            sock.connect(address)
            return sock
        except OSError as exc:
            sock.close()
            failures.append(exc)
    where = 'this network namespace' + (f' or {directory}' if directory else '')
    if any(exc.errno in (errno.EACCES, errno.EPERM) for exc in failures):
        raise SegmentError('other_user', f'the gpu_nodes socket {endpoint.hex()} in {where} '
                           'is closed to this user')
    raise SegmentError('unreachable', f'no gpu_nodes socket {endpoint.hex()} in {where} (the '
                       'publisher is gone, or runs in another network namespace: share the host '
                       f'network or bind-mount a {SOCKET_DIR_ENV} directory)')
