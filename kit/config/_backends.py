"""Where each ``parallel.env`` starts its cluster: one line a backend.

A backend is a function ``start(parallel, hook) -> (client, cluster)``
(``cluster`` None when it only connects) in a module of the cluster wing,
named here as ``module:function`` so that reading a config imports no
cluster code. A package adds a backend of its own without changing Kit,
with an entry point in the group ``kit.backends``::

    [project.entry-points."kit.backends"]
    mine = "mypkg.cluster:start"
"""

from __future__ import annotations

#: The built-in backends: ``parallel.env`` -> ``module:function`` that starts it.
#: ``inline`` starts none: its runs go on in the driver's process.
BACKENDS: dict[str, str] = {
    "inline": "",
    "local": "kit.cluster._builders:start_local",
    "local_gpu": "kit.cluster._builders:start_deployment",
    "remote": "kit.cluster._builders:start_remote",
    "gateway": "kit.cluster._builders:start_gateway",
    "ssh": "kit.cluster._builders:start_deployment",
    "kube": "kit.cluster._builders:start_deployment",
    "slurm": "kit.cluster._builders:start_job_queue",
    "pbs": "kit.cluster._builders:start_job_queue",
    "sge": "kit.cluster._builders:start_job_queue",
    "lsf": "kit.cluster._builders:start_job_queue",
    "htcondor": "kit.cluster._builders:start_job_queue",
    "moab": "kit.cluster._builders:start_job_queue",
    "oar": "kit.cluster._builders:start_job_queue",
}

#: The entry-point group in which packages name backends of their own.
GROUP = "kit.backends"


def installed_backends() -> dict[str, str]:
    """Return the backends installed packages add (``name -> module:function``).

    Examples
    --------
    >>> "local" in installed_backends()  # built-ins are not in the group
    False
    """
    # Here, not at the top: importlib.metadata is some 30 modules `import kit` need not load.
    from importlib.metadata import entry_points

    return {point.name: point.value for point in entry_points(group=GROUP)}


def backend_of(env: str) -> str:
    """Return ``module:function`` of ``env``'s backend: a built-in's, else an installed one's.

    Raises
    ------
    KeyError
        When no backend has that name.

    Examples
    --------
    >>> backend_of("slurm")
    'kit.cluster._builders:start_job_queue'
    """
    if env in BACKENDS:
        return BACKENDS[env]
    return installed_backends()[env]
