"""Alembic environment: runs on the connection the store hands over (``config.attributes["connection"]``)."""

from __future__ import annotations

from alembic import context

from interviewer.store import METADATA

config = context.config
connection = config.attributes.get("connection")
if connection is None:  # `alembic` run by hand: connect to the URL given in the config
    from sqlalchemy import create_engine

    url = config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("set sqlalchemy.url (e.g. -x or alembic.ini) or let SessionStore run the migrations")
    with create_engine(url).connect() as conn:
        context.configure(connection=conn, target_metadata=METADATA, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
else:
    context.configure(connection=connection, target_metadata=METADATA, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
