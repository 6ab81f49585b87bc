"""HTTP endpoints the product's daemons serve: `/metrics`, `/healthz`, `/readyz`, with optional TLS."""
