"""Tests of the scheduler actions."""
