"""Tests of the quality gates."""
