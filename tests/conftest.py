"""Shared test configuration: pytester is enabled in pyproject (``-p pytester``)."""
