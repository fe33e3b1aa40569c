"""`dt init`: render a new project from the Jinja2 templates in `templates/project`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import jinja2

from dtcli.errors import UsageError

# Dotfiles are stored without their dot (gitignore.j2) so packaging tools keep them.
_RENAME = {"gitignore": ".gitignore"}


def template_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "templates" / "project"


@dataclass
class Created:
    root: Path
    name: str
    files: list[Path]


def init_project(directory: Path, name: str | None = None) -> Created:
    root = directory.resolve()
    if (root / "dt_project.yml").exists():
        raise UsageError(f"{root} already holds a dt project", hint="choose an empty folder")
    name = name or re.sub(r"\W+", "_", root.name).strip("_").lower() or "my_project"
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(template_dir()), keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    files = []
    for template in sorted(env.list_templates(extensions=["j2"])):
        rel = Path(template[:-3])
        rel = rel.with_name(_RENAME.get(rel.name, rel.name))
        out = root / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(env.get_template(template).render(name=name), encoding="utf-8")
        files.append(out)
    return Created(root, name, files)
