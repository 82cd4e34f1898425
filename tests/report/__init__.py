"""Tests of the reports (terminal, markdown, HTML, JUnit, CI summary) and xdist parity."""
