"""AWS tests (a package, so its conftest does not shadow tests/conftest.py for `from conftest import ...`)."""
