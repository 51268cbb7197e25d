"""In-repository runs load the gemmconf plugin from the source tree (installed users get it
through the package's pytest11 entry point under the same name, so it is never loaded twice)."""

pytest_plugins = ["harness.plugin"]
