"""The HTTP transport: Quart-Trio routes made from the operation catalog, problems, documents and caching."""
