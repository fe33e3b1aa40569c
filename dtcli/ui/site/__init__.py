"""The static site of `dt docs`: HTML pages, SVG charts and the scripts and styles it ships."""

from dtcli.ui.site.writer import write_site

__all__ = ["write_site"]
