"""Kit's notebook UI (ipywidgets); it imports ``kit``, never the reverse."""

__all__: list[str] = []
