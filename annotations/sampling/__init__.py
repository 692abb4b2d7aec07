"""Pure: drawing a benchmark from a pool (stratified, seeded, de-duplicated, answer-balanced)."""
