"""Alembic migrations of the session store (SQLite and PostgreSQL); applied by :class:`SessionStore` on open."""
