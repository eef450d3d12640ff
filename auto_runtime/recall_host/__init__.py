"""The recall host: keeps recall functions' views, folded from their playbooks' events, on the lease holder."""
