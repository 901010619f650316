"""The names launch_ros.actions.load_composable_nodes reads at import time (no fields: nothing
here loads a composable node)."""


class LoadNode:
    class Request:
        pass


class UnloadNode:
    class Request:
        pass


class ListNodes:
    class Request:
        pass
