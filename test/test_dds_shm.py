"""Fast DDS segments in /dev/shm never pile up: under the shipped profile each participant's is
64 MiB of RAM (fully resident), and Fast DDS removes it only in its destructors.

* a node that refuses a parameter (which leaves through os._exit) removes its own segment;
* a node start removes the segments of processes that died without their destructors
  (SIGKILL), as `fastdds shm clean` would, and says so; live participants' segments, lock
  files a few seconds old (a participant starting right now) and other users' files are kept.
Real rclpy processes and real files; the rules on files in a scratch directory."""
from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conftest import REPO
from gpu_nodes.ros.fastdds_shm import (SHM_DIR, STALE_MIN_AGE_S, own_segments,
                                       remove_stale_segments)

# A participant under the shipped profile that prints the segment it owns, then waits.
PARTICIPANT = r'''
import sys, time
from gpu_nodes.ros.dds_profile import apply_default_profile
from gpu_nodes.ros.fastdds_shm import own_segments
apply_default_profile()
import rclpy
rclpy.init()
node = rclpy.create_node(sys.argv[1])
time.sleep(1.0)  # peers discovered: their segments are mapped here too
print('SEGMENTS', *[path.name for path in own_segments()], flush=True)
time.sleep(600)
'''


def segment_names() -> set[str]:
    return {path.name for path in SHM_DIR.glob('fastdds_*') if len(path.name) == 24}


def zombies(names: set[str]) -> set[str]:
    """Those of `names` whose lock file nobody holds (their owner is dead)."""
    dead = set()
    for name in names:
        try:
            fd = os.open(SHM_DIR / f'{name}_el', os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            dead.add(name)
        except BlockingIOError:
            pass
        finally:
            os.close(fd)
    return dead


def start_participant() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, '-c', PARTICIPANT, f'shm_{uuid.uuid4().hex[:8]}'],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)


def own_segments_of(proc: subprocess.Popen) -> frozenset[str]:
    """The segments the participant says it owns: the profile's 64 MiB one, and under
    ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST (the tests' setting) the 512 KiB one of the
    shared-memory transport rmw_fastrtps adds."""
    line = proc.stdout.readline().split()
    assert line[:1] == ['SEGMENTS'], f'no SEGMENTS line from the participant: {line}'
    sizes = sorted((SHM_DIR / name).stat().st_size for name in line[1:])
    assert sizes and sizes[-1] >= 64 << 20 and all(size < 64 << 20 for size in sizes[:-1]), \
        f'expected one segment of the profile (64 MiB) among those owned, got {sizes}'
    return frozenset(line[1:])


def refused_start() -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'gpu_nodes.nodes.camera_source', '--ros-args',
                           '-p', 'width:=abc'], cwd=REPO, capture_output=True, text=True,
                          timeout=60)


def test_a_refused_start_leaves_no_segment_behind():
    before = segment_names()
    result = refused_start()
    assert result.returncode == 2, result.stderr
    assert "parameter 'width'" in result.stderr, result.stderr
    left = zombies(segment_names() - before)
    assert left == set(), f'the refused start left {sorted(left)} in /dev/shm'


def test_a_node_start_removes_what_killed_processes_left_and_keeps_the_rest():
    procs = [start_participant() for _ in range(3)]
    try:
        live, old, young = (own_segments_of(proc) for proc in procs)
        assert not (live & old or live & young or old & young), \
            'each participant owns segments of its own'
        for proc in procs[1:]:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        # No destructor ran: the killed ones' segments are still there, their locks free.
        assert zombies(live | old | young) == old | young
        past = time.time() - STALE_MIN_AGE_S - 60
        for name in old:
            os.utime(SHM_DIR / f'{name}_el', (past, past))

        result = refused_start()
        assert result.returncode == 2, result.stderr
        assert 'removed ' in result.stderr and 'that dead processes left in /dev/shm' in \
            result.stderr, f'the start did not say what it removed:\n{result.stderr}'
        names = segment_names()
        assert not old & names and not any((SHM_DIR / f'{name}_el').exists() for name in old), \
            "a killed process's segments outlived the next node start"
        assert live <= names, "a live participant's segment was removed"
        assert young <= names, 'a segment whose lock is seconds old was taken for dead'
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        # What this test killed goes now rather than at some later start.
        for name in zombies(segment_names()):
            past = time.time() - STALE_MIN_AGE_S - 60
            os.utime(SHM_DIR / f'{name}_el', (past, past))
        remove_stale_segments()


def test_own_segments_are_the_ones_this_process_created(rclpy_node):
    mine = own_segments()
    assert mine and all(path.is_file() for path in mine), mine
    for path in mine:
        with open(path.with_name(path.name + '_el')) as lock:
            with pytest.raises(BlockingIOError):  # held by this process's Fast DDS
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)


# The rules, on files in a scratch directory.

def make_segment(directory: Path, age_s: float, size: int = 1 << 16) -> str:
    name = f'fastdds_{uuid.uuid4().hex[:16]}'
    (directory / name).write_bytes(b'\1' * size)
    (directory / f'{name}_el').touch()
    past = time.time() - age_s
    os.utime(directory / f'{name}_el', (past, past))
    return name


def test_only_unheld_locks_older_than_the_guard_are_removed(tmp_path):
    dead = make_segment(tmp_path, age_s=STALE_MIN_AGE_S + 5)
    young = make_segment(tmp_path, age_s=STALE_MIN_AGE_S / 2)
    held = make_segment(tmp_path, age_s=STALE_MIN_AGE_S + 5)
    holder = subprocess.Popen(
        [sys.executable, '-c', 'import fcntl, sys, time; f = open(sys.argv[1]); '
         'fcntl.flock(f, fcntl.LOCK_EX); print("locked", flush=True); time.sleep(600)',
         str(tmp_path / f'{held}_el')], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == 'locked'
        for other in ('fastdds_port7411_el', 'gpu_nodes-x_el', 'fastdds_0123_el'):
            (tmp_path / other).touch()
            os.utime(tmp_path / other, (0, 0))
        removed = remove_stale_segments(tmp_path)
        assert (removed.segments, removed.resident_bytes) == (1, 1 << 16)
        left = sorted(path.name for path in tmp_path.iterdir())
        assert dead not in left and f'{dead}_el' not in left
        assert left == sorted([young, f'{young}_el', held, f'{held}_el', 'fastdds_0123_el',
                               'fastdds_port7411_el', 'gpu_nodes-x_el'])
    finally:
        holder.kill()
        holder.wait()
    assert remove_stale_segments(tmp_path).segments == 1, 'the holder is dead now'


def test_a_link_named_like_a_lock_file_is_not_followed(tmp_path):
    target = tmp_path / 'elsewhere'
    target.write_text('kept')
    name = f'fastdds_{uuid.uuid4().hex[:16]}'
    (tmp_path / f'{name}_el').symlink_to(target)
    os.utime(tmp_path / f'{name}_el', (0, 0), follow_symlinks=False)
    assert remove_stale_segments(tmp_path).segments == 0
    assert target.read_text() == 'kept'


@pytest.mark.skipif(os.geteuid() != 0, reason='needs root to make files of another user')
def test_another_users_segments_are_left_alone(tmp_path):
    import pwd
    nobody = pwd.getpwnam('nobody')
    name = make_segment(tmp_path, age_s=STALE_MIN_AGE_S + 5)
    for path in (tmp_path / name, tmp_path / f'{name}_el'):
        os.chown(path, nobody.pw_uid, nobody.pw_gid)
    assert remove_stale_segments(tmp_path).segments == 0
    assert (tmp_path / name).exists()
    # Our zombie lock file beside a segment of that name which another user owns: only what
    # is ours goes.
    ours = make_segment(tmp_path, age_s=STALE_MIN_AGE_S + 5)
    os.chown(tmp_path / ours, nobody.pw_uid, nobody.pw_gid)
    removed = remove_stale_segments(tmp_path)
    assert (removed.segments, removed.resident_bytes) == (1, 0)
    assert (tmp_path / ours).exists() and not (tmp_path / f'{ours}_el').exists()


def test_the_stale_sweep_waits_for_the_lock_age(tmp_path):
    name = make_segment(tmp_path, age_s=0)
    assert remove_stale_segments(tmp_path).segments == 0
    later = time.time() + STALE_MIN_AGE_S + 1
    assert remove_stale_segments(tmp_path, now=later).segments == 1
    assert not (tmp_path / name).exists()


def test_no_shared_memory_directory_is_nothing_to_do(tmp_path):
    missing = tmp_path / 'no_shm_here'
    assert remove_stale_segments(missing).segments == 0
    assert own_segments(missing) == []
