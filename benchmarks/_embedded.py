"""The start-up shared by the benchmarks that read with the embedded model: its server and a chat port on it.

Not a benchmark itself (``run_all.py`` runs ``bench_*.py`` only). Import it the way the benchmarks import the
repository's code, after putting the repository's root on ``sys.path``::

    from benchmarks._embedded import embedded_port

    with embedded_port(settings, n_parallel=2) as (server, port):
        ...
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from interviewer.config import Settings
from interviewer.llm.client import ChatPort, reading_port
from interviewer.llm.embedded import EmbeddedServer


def chat_port(
    settings: Settings,
    server: EmbeddedServer,
    base_url: str,
    *,
    slots: int | None = None,
    temperature: float | None = 0.0,
) -> ChatPort:
    """A port on ``server`` at ``base_url`` as the reader uses it (:func:`reading_port`), named after the
    model, pinned to the server's slots (``slots``: another count).

    ``temperature`` None is the settings' own (what a live reply uses).
    """
    return reading_port(
        settings,
        base_url=base_url,
        model=server.served_model_id,
        display_name=server.model_name,
        slots=server.slots if slots is None else slots,
        temperature=temperature,
    )


@contextmanager
def embedded_port(
    settings: Settings, *, n_parallel: int = 2, base_url: str | None = None, slots: int | None = None
) -> Iterator[tuple[EmbeddedServer, ChatPort]]:
    """The embedded server with ``n_parallel`` slots, started (its progress printed), and a
    :func:`chat_port` on it at temperature 0; the server stops on leaving.

    ``base_url``: a server of that model already running there, with ``slots`` slots (the server's own count
    when None): nothing is started, and the weights are not checked again.
    """
    with EmbeddedServer(settings, n_parallel=n_parallel) as server:
        if base_url is None:
            base_url, slots = server.start(progress=print), server.slots
        yield server, chat_port(settings, server, base_url, slots=slots)
