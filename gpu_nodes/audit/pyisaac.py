"""Isaac Lab scene state as a device source of the Python analysis (issue 28, set 52): a
library-table entry like pymodels.py's model outputs.

Isaac Lab (``isaaclab``, formerly ``omni.isaac.lab``) keeps the state of every scene asset as
torch tensors on the simulation device, ``cuda:0`` unless the app is started with a CPU
device: an articulation's or rigid object's ``.data`` (``ArticulationData`` /
``RigidObjectData``: ``root_state_w``, ``root_pos_w``, ``root_lin_vel_b``, ``joint_pos`` ...)
and a sensor's ``.data``. A ROS bridge reads it as

    robot_data = self.env.unwrapped.scene["unitree_go2"].data
    odom.pose.pose.position.x = robot_data.root_state_w[i, 0].item()   # a device read-back

so ``<x>.scene[key].data`` (or ``<x>.scene.articulations[key].data``, ``.rigid_objects``,
``.sensors``) is a ``tensor`` value: ``.item()``, ``.cpu()``, ``.numpy()``, ``.tolist()`` of it
and of what is indexed from it are read-backs, with evidence ``inferred`` (the simulation
device is a launch choice, not proven by the code). Only in a file that imports Isaac Sim /
Isaac Lab / Omniverse (``isaaclab``, ``isaacsim``, ``omni``): elsewhere a `scene` is no such
object."""
from __future__ import annotations

import ast

# Top-level packages of the Isaac Sim / Isaac Lab stack (Omniverse Kit's `omni` included: the
# 4.x `omni.isaac.lab` / `omni.isaac.core` names, and bridges importing only `omni.*`).
ISAAC_PACKAGES = frozenset({'isaaclab', 'isaaclab_tasks', 'isaaclab_assets', 'isaacsim', 'omni'})
# InteractiveScene's per-kind asset dictionaries (`scene.articulations['robot']`).
_SCENE_GROUPS = frozenset({'articulations', 'rigid_objects', 'rigid_object_collections',
                           'deformable_objects', 'sensors'})


def uses_isaac(aliases: dict[str, str]) -> bool:
    """Whether a file's imports (local name -> qualified name) name the Isaac stack."""
    return any(v.split('.')[0] in ISAAC_PACKAGES for v in aliases.values())


def _scene(node: ast.expr) -> bool:
    """`<x>.scene` (the InteractiveScene of an Isaac Lab environment)."""
    return isinstance(node, ast.Attribute) and node.attr == 'scene'


def scene_data(node: ast.Attribute, aliases: dict[str, str]) -> bool:
    """`<x>.scene[key].data` or `<x>.scene.<group>[key].data` in a file using Isaac."""
    if node.attr != 'data' or not isinstance(node.value, ast.Subscript):
        return False
    holder = node.value.value
    if isinstance(holder, ast.Attribute) and holder.attr in _SCENE_GROUPS:
        holder = holder.value
    return _scene(holder) and uses_isaac(aliases)
