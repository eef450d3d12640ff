"""auto-runtime: keeps playbooks for orgs, runs their definitions and records every fact in a ledger."""

__version__ = "0.1.0"
