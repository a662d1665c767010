"""Tests of the replay web (crawlkit.replay)."""
