python -m benchmarks --memory --json benchmarks/results/memory.json
