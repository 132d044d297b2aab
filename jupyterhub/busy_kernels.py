"""A Jupyter server extension for each user's server on the class hub: a kernel that is busy counts as activity.

JupyterHub's idle culler stops a server whose last activity, as the server reports it to the hub, is older than the
idle timeout. Jupyter Server counts a kernel's messages as activity, so a kernel computing silently (a long training
loop that prints nothing, no browser tab open) looked idle, and its student lost her run. Jupyter Server counts every
setting whose name ends in `_last_activity` (ServerWebApplication.last_activity): this extension keeps one at "now"
while any kernel's execution state is busy. (A student may also report activity with her server's own token; the
culler's --max-age caps a server's life whatever it reports: jupyterhub/jupyterhub_config.py.)

scripts/class_hub.py copies this file into <prefix>/user-extensions/, on the users' servers' PYTHONPATH, and enables it
in their jupyter_server_config.json.
"""
from datetime import datetime, timezone

from tornado.ioloop import PeriodicCallback

SETTING = "busy_kernels_last_activity"
EVERY = 10_000   # milliseconds between looks


def _jupyter_server_extension_points():
    return [{"module": "busy_kernels"}]


def _load_jupyter_server_extension(serverapp) -> None:
    settings = serverapp.web_app.settings
    kernels = serverapp.kernel_manager

    def look() -> None:
        if any(getattr(kernels.get_kernel(kid), "execution_state", "") == "busy" for kid in kernels.list_kernel_ids()):
            settings[SETTING] = datetime.now(timezone.utc)

    PeriodicCallback(look, EVERY).start()
