python -m benchmarks --quick --json benchmarks/results/quick.json
