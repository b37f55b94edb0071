"""Sessions and their event log (the schema the SQLite-only store had as version 1).

Revision ID: 0001
Revises:
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "meta",
        sa.Column("key", sa.Text, primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.create_table(
        "sessions",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("owner", sa.Text, nullable=False),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("updated", sa.Float, nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("plan", sa.Text, nullable=False),
    )
    op.create_index("sessions_owner", "sessions", ["owner", "updated"])
    op.create_table(
        "events",
        sa.Column("session_id", sa.Text, sa.ForeignKey("sessions.id"), primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("ts", sa.Float, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
    )
    op.execute(sa.text("INSERT INTO meta(key, value) VALUES ('schema', '1')"))


def downgrade() -> None:
    op.drop_table("events")
    op.drop_index("sessions_owner", table_name="sessions")
    op.drop_table("sessions")
    op.drop_table("meta")
