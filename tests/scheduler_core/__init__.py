"""Tests of scheduler_core."""
