"""tunecast trainer: perf-DB data, baselines, seq2seq training and export to tunecast-ir JSON."""
