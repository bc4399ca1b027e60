"""Worker scripts run by a product's own Python (stdlib + the product only; never memharness)."""
