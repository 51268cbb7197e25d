"""The repository's pytest configuration. The gemmconf plugin itself comes from the installed
package's pytest11 entry point (`make setup` installs the checkout in editable mode), under the
plugin name `gemmconf`, so it is loaded once however pytest is started."""
