"""The old address of the local sessions, kept for notebooks and scripts written before the engine
was split by process: they live in launch/session.py."""

from dtcli.engine.launch.session import local_session, project_session, scratch_session

__all__ = ["local_session", "project_session", "scratch_session"]
