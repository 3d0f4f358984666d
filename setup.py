"""The one compiled module, and the package index's description; the rest is in pyproject.toml.

The compiled module, sclite's alignment, is optional: where no C compiler
builds it, the install still succeeds and ``kit.asr.align`` runs the same
programme in Python. The description is the README with its links into the
checkout (``docs/...``) and its screenshot left as their text: on the
package index they lead nowhere.
"""

import re
from pathlib import Path

from setuptools import Extension, setup

#: A Markdown link or image whose target is a path of the checkout, not a URL.
RELATIVE = re.compile(r"(!?)\[([^\]]*)\]\((?![a-z][a-z0-9+.-]*:|#)[^)\s]+\)")


def package_description(readme: str) -> str:
    r"""Return ``readme`` for the package index: a relative link as its text, an image dropped.

    >>> package_description("See [sweeps](docs/sweeps.md) and [dask](https://dask.org).")
    'See sweeps and [dask](https://dask.org).'
    >>> package_description("![The widget](docs/_static/x.png)\nText")
    '\nText'
    """
    return RELATIVE.sub(lambda m: "" if m.group(1) else m.group(2), readme)


setup(
    ext_modules=[Extension("kit.asr._align", ["kit/asr/_align.c"], optional=True)],
    long_description=package_description(
        (Path(__file__).parent / "README.md").read_text(encoding="utf-8")
    ),
    long_description_content_type="text/markdown",
)
