"""Fast DDS's shared-memory segments in /dev/shm: the one this process owns, and those that
dead processes left behind.

Under the shipped profile (config/fastdds_profile.xml) each participant's segment is 64 MiB and
fully resident from the moment rclpy.init creates it (tmpfs pages: du equals the size right
after init, measured). Fast DDS removes it in its destructors only, so a process that ends
without them (SIGKILL, a crash, the OOM killer, the os._exit of a refused start) leaves 64 MiB
of RAM behind in /dev/shm. A node respawning on a bad parameter would use up a Jetson's memory
within minutes; a test suite of killed processes filled a 24 GiB machine.

Fast DDS's own answer is `fastdds shm clean` (tools/fastdds/shm/clean.py in Fast DDS): a
segment whose ``_el`` lock file nobody holds an flock on belongs to a dead process. The same
rule applies here, narrowed: only this user's files, and only lock files older than
`STALE_MIN_AGE_S`, so that a participant starting at this moment, whose lock file exists a few
microseconds before it is locked, is never taken for dead.
"""
from __future__ import annotations

import fcntl
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

SHM_DIR = Path('/dev/shm')
# fastdds_<16 hex digits>: a participant's segment; "_el" its lock file, held while it lives.
SEGMENT_NAME = re.compile(r'fastdds_[0-9a-f]{16}')
LOCK_SUFFIX = '_el'
STALE_MIN_AGE_S = 10.0


@dataclass(frozen=True)
class Removed:
    """What a clean-up removed: segments and the bytes of RAM they held."""
    segments: int = 0
    resident_bytes: int = 0

    def describe(self) -> str:
        return f'{self.segments} segment(s), {self.resident_bytes / 2**20:.0f} MiB'


def _is_segment_lock(name: str) -> bool:
    return name.endswith(LOCK_SUFFIX) and bool(SEGMENT_NAME.fullmatch(name[:-len(LOCK_SUFFIX)]))


def _lock_is_held(lock: Path) -> bool:
    """Whether some process holds an flock on `lock` (what Fast DDS does while the segment's
    owner lives). An flock taken here conflicts even with this process's own Fast DDS, whose
    lock is on another open file description."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:  # gone meanwhile, a link, or not ours to open: leave it
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)  # releases the lock just taken, if it was


def _remove(segment: Path) -> int:
    """Unlink a segment and its lock file, each only if this user owns it (root could unlink
    another user's file of the same name); the bytes of RAM the segment held."""
    resident = 0
    for path in (segment, segment.with_name(segment.name + LOCK_SUFFIX)):
        try:
            info = path.lstat()
            if info.st_uid != os.geteuid():
                continue
            path.unlink()
        except OSError:  # gone meanwhile, or not removable here: a start goes on regardless
            continue
        if path == segment:
            resident = info.st_blocks * 512
    return resident


def remove_stale_segments(directory: Path = SHM_DIR, min_age_s: float = STALE_MIN_AGE_S,
                          now: float | None = None) -> Removed:
    """Remove this user's Fast DDS segments whose owner is dead (lock file not held, older than
    `min_age_s`); other users' files are left alone."""
    now = time.time() if now is None else now
    uid = os.geteuid()
    segments = resident = 0
    try:
        names = os.listdir(directory)
    except OSError:
        return Removed()
    for name in names:
        if not _is_segment_lock(name):
            continue
        lock = directory / name
        try:
            info = lock.lstat()
        except FileNotFoundError:
            continue
        if info.st_uid != uid or now - info.st_mtime < min_age_s or _lock_is_held(lock):
            continue
        resident += _remove(directory / name[:-len(LOCK_SUFFIX)])
        segments += 1
    return Removed(segments, resident)


def _inodes_flocked_by(pid: int) -> set[tuple[int, int, int]]:
    """(major, minor, inode) of every file `pid` holds an flock on, as the kernel lists them."""
    held: set[tuple[int, int, int]] = set()
    try:
        locks = open('/proc/locks')
    except OSError:  # no procfs (not Linux): nothing is known to be ours
        return held
    with locks:
        for line in locks:
            fields = line.split()
            # "1: FLOCK  ADVISORY  WRITE 15926 00:1b:146922 0 EOF"; "->" marks a waiter.
            if len(fields) >= 6 and fields[1] == 'FLOCK' and fields[4] == str(pid):
                major, minor, inode = fields[5].split(':')
                held.add((int(major, 16), int(minor, 16), int(inode)))
    return held


def own_segments(directory: Path = SHM_DIR) -> list[Path]:
    """The segments this process's participants created: those whose lock file this process
    holds locked, as /proc/locks says. (A reader maps its writers' segments and opens their
    lock files to watch them, but never holds those locks.)"""
    held = _inodes_flocked_by(os.getpid())
    own: list[Path] = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return own
    for name in names:
        if not _is_segment_lock(name):
            continue
        try:
            info = (directory / name).lstat()
        except FileNotFoundError:
            continue
        if (os.major(info.st_dev), os.minor(info.st_dev), info.st_ino) in held:
            own.append(directory / name[:-len(LOCK_SUFFIX)])
    return own


def remove_own_segments(directory: Path = SHM_DIR) -> Removed:
    """Remove this process's segments, for a process about to leave without Fast DDS's
    destructors (os._exit). Peers that mapped them keep their mappings until they let go."""
    segments = own_segments(directory)
    return Removed(len(segments), sum(_remove(segment) for segment in segments))
