"""`auto-runtime bench`: what the paths of a server cost, measured from outside with raw keep-alive connections
(`load`), against a server the operator names or ones the command starts (`own_server`); `command` is the
command line, `table` the printed table. The repository's `benchmarks/` import the load generator from here."""
