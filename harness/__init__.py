"""gemmconf harness: the pytest plugin and the steps of the conformance flow."""
