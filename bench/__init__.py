"""autodev's benchmarks (`make bench`): see bench/run.py."""
