"""AWS request signing (`signing`) and the default credential chain (`credentials`), used by the models and
the ledger alike; nothing here imports from either."""
