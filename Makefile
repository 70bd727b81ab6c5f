# The two commands of README.md: `make demo` and `make test`. Both set up what they need.
.PHONY: setup demo test bench
SCENARIO ?= scenarios/two-bulk-flows.yaml

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/netsteer run $(SCENARIO) --out out/demo

test: setup
	bash scripts/test.sh

bench: setup
	.venv/bin/python benchmarks/bench_solver.py
	.venv/bin/python benchmarks/bench_scale.py
	.venv/bin/python benchmarks/bench_mpi.py
	.venv/bin/python benchmarks/bench_stream.py
	.venv/bin/python benchmarks/bench_pftree.py
	.venv/bin/python benchmarks/bench_plan.py
	.venv/bin/python benchmarks/bench_unisonflow.py
