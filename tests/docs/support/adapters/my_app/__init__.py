"""A small real application for the snippets of docs/adapters.md (they import ``my_app``)."""
