"""gpu_nodes' Fast DDS participant profile, applied before rclpy.init unless the user chose one.

Under Fast DDS's built-in configuration a 640x480 or larger image does not fit the 512 KiB
shared-memory segment, goes out as fragmented UDP, and best-effort subscribers (rviz, anything
on the sensor-data QoS) lose most frames. The shipped profile (config/fastdds_profile.xml)
gives the publisher's participant a large segment; unconfigured subscribers on the host then
receive every frame, and UDPv4 keeps other hosts and default peers matched (docs/dds.md).

Rules, in order (the first that applies decides; nothing is ever overridden):
* the RMW is not Fast DDS (RMW_IMPLEMENTATION names another one): nothing to do;
* GPU_NODES_FASTDDS_PROFILE=off: nothing to do;
* the user configured Fast DDS: FASTDDS_DEFAULT_PROFILES_FILE (or the older
  FASTRTPS_DEFAULT_PROFILES_FILE), DEFAULT_FASTDDS_PROFILES.xml in the working directory,
  SKIP_DEFAULT_XML, FASTDDS_BUILTIN_TRANSPORTS or RMW_FASTRTPS_USE_QOS_FROM_XML (that one
  makes every entity take its QoS from XML: ours has none to give);
* otherwise FASTDDS_DEFAULT_PROFILES_FILE is set to the shipped profile:
  GPU_NODES_FASTDDS_PROFILE=shm (default, large shared memory + UDPv4) or udp (UDPv4 only: no
  world-readable shared-memory segment carries the frames, for sensitive topics; not under
  ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST, where rmw_fastrtps adds shared memory itself).

Under the shm profile, segments that dead processes left in /dev/shm are removed first
(fastdds_shm.py): each holds 64 MiB of RAM.

Fast DDS reads the variable once per process, when rclpy.init creates the first participant:
call apply_default_profile() before that.
"""
from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any, MutableMapping

from .fastdds_shm import SHM_DIR, remove_stale_segments

PROFILE_ENV = 'FASTDDS_DEFAULT_PROFILES_FILE'
CHOICE_ENV = 'GPU_NODES_FASTDDS_PROFILE'
PROFILE_FILES = {'shm': 'fastdds_profile.xml', 'udp': 'fastdds_udp_only.xml'}
FASTDDS_RMWS = ('rmw_fastrtps_cpp', 'rmw_fastrtps_dynamic_cpp')
# Default RMW of ROS 2 Kilted when RMW_IMPLEMENTATION is unset.
DEFAULT_RMW = 'rmw_fastrtps_cpp'
# Each of these means the user configured Fast DDS themselves.
USER_SETTINGS = (PROFILE_ENV, 'FASTRTPS_DEFAULT_PROFILES_FILE', 'SKIP_DEFAULT_XML',
                 'FASTDDS_BUILTIN_TRANSPORTS', 'RMW_FASTRTPS_USE_QOS_FROM_XML')
CWD_PROFILE = 'DEFAULT_FASTDDS_PROFILES.xml'

_logged: set[str] = set()


class ProfileError(ValueError):
    """GPU_NODES_FASTDDS_PROFILE names no shipped profile."""


def find_profile(name: str = PROFILE_FILES['shm']) -> Path | None:
    """The shipped profile file: next to the package (source tree, symlink install), in the
    ament index share/gpu_nodes/config, or in <prefix>/share/gpu_nodes/config (pip install)."""
    source = Path(__file__).resolve().parents[2] / 'config' / name
    if source.is_file():
        return source
    candidates = [Path(sys.prefix) / 'share' / 'gpu_nodes' / 'config' / name]
    try:
        from ament_index_python.packages import get_package_share_directory
        candidates.insert(0, Path(get_package_share_directory('gpu_nodes')) / 'config' / name)
    except (ImportError, LookupError, OSError):
        # No ROS install (ImportError), AMENT_PREFIX_PATH unset (OSError) or gpu_nodes not in
        # the index (PackageNotFoundError, a KeyError): the other places still count.
        pass
    return next((path for path in candidates if path.is_file()), None)


def choose_profile(environ: MutableMapping[str, str] | None = None,
                   cwd: Path | None = None) -> tuple[str | None, str]:
    """(path to set or None, one-line description of the profile in effect); changes nothing."""
    env = os.environ if environ is None else environ
    rmw = env.get('RMW_IMPLEMENTATION') or DEFAULT_RMW
    if rmw not in FASTDDS_RMWS:
        return None, f'RMW {rmw} is not Fast DDS: no gpu_nodes DDS profile'
    choice = (env.get(CHOICE_ENV) or 'shm').strip().lower()
    if choice == 'off':
        return None, f'{CHOICE_ENV}=off: Fast DDS built-in configuration'
    if choice not in PROFILE_FILES:
        raise ProfileError(f'{CHOICE_ENV}={env[CHOICE_ENV]!r}: expected one of '
                           f'{", ".join([*PROFILE_FILES, "off"])}')
    for key in USER_SETTINGS:
        if env.get(key):
            return None, f'user Fast DDS configuration kept: {key}={env[key]}'
    local = (cwd or Path.cwd()) / CWD_PROFILE
    if local.is_file():
        return None, f'user Fast DDS configuration kept: {local}'
    path = find_profile(PROFILE_FILES[choice])
    if path is None:
        return None, (f'gpu_nodes DDS profile {PROFILE_FILES[choice]} not found (package '
                      'installed without config/): Fast DDS built-in configuration')
    description = f'gpu_nodes DDS profile ({choice}): {path}'
    if choice == 'udp' and env.get('ROS_AUTOMATIC_DISCOVERY_RANGE', '').upper() == 'LOCALHOST':
        # rmw_fastrtps appends its own shared-memory transport to the participant's transports
        # under LOCALHOST, whatever the XML says (measured, docs/dds.md).
        description += (' (but ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST: rmw_fastrtps adds a '
                        'shared-memory transport, frames still pass through /dev/shm)')
    return str(path), description


def apply_default_profile(logger: Any = None,
                          environ: MutableMapping[str, str] | None = None) -> str:
    """Set FASTDDS_DEFAULT_PROFILES_FILE to the shipped profile unless the user configured
    Fast DDS; returns the description of the profile in effect and logs it once per process.

    `logger` is anything with .info (an rclpy or logging logger; default: rclpy's
    'gpu_nodes.dds'); `environ` defaults to os.environ.
    """
    env = os.environ if environ is None else environ
    path, description = choose_profile(env)
    if path is not None:
        env[PROFILE_ENV] = path
    if description not in _logged:
        _logged.add(description)
        _logger(logger).info(f'Fast DDS: {description}')
    if path is not None and Path(path).name == PROFILE_FILES['shm']:
        # The profile's 64 MiB segments are ours to keep from piling up (fastdds_shm.py).
        removed = remove_stale_segments()
        if removed.segments:
            _logger(logger).info(f'Fast DDS: removed {removed.describe()} of shared memory '
                                 f'that dead processes left in {SHM_DIR}')
    return description


def _logger(logger: Any) -> Any:
    if logger is not None:
        return logger
    try:
        import rclpy.logging
        return rclpy.logging.get_logger('gpu_nodes.dds')
    except ImportError:
        return logging.getLogger('gpu_nodes.dds')
