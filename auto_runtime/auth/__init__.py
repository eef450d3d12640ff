"""Access: local mode, API keys and the callers they authenticate."""
