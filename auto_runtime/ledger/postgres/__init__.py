"""The PostgreSQL store: asyncpg on one asyncio thread per process, bridged to Trio; shared by servers."""
