# The two commands of the README:
#   make run    set up what is missing, build, and train the MNIST job (1 server + 1 worker)
#   make test   set up what is missing, build, and run every test with ctest
# Other targets: make deps | test-deps | data | build | bench | convergence | bench-python | test-mpich | bench-mpi | bench-scaling | bench-embedding | sanitize
#   | fuzz | cross-aarch64 | clean.
# Variables: BUILD, NP, HOSTFILE, CMAKE_ARGS, CTEST_JOBS, ASAN_BUILD, FUZZ_BUILD, FUZZ_SECONDS, MPICH_BUILD,
#   MPICH_CTEST_ARGS.
BUILD    ?= build
ASAN_BUILD   ?= build-asan
FUZZ_BUILD   ?= build-fuzz
CROSS_BUILD  ?= build-aarch64
MPICH_BUILD  ?= build-mpich
MPICH_CTEST_ARGS ?=
FUZZ_SECONDS ?= 60
NP       ?= 2
HOSTFILE ?= hostfiles/localhost
RUN_ARGS ?=
CMAKE_ARGS ?=
JOBS     ?= $(shell nproc)
# make test and sanitize run two tests at a time (on 2 cores: about 17 min of make test's tests,
# not 20), whatever the core count: the MPI jobs oversubscribe their cores already. make
# test-mpich runs them one at a time (two at a time saved 56 s of 531 there).
# The tests that time a stall or a start-up run alone (RUN_SERIAL), and so do those declaring
# CTEST_JOBS PROCESSORS or more.
CTEST_JOBS ?= 2

# Open MPI refuses to run as root unless told; CI runs as root.
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1

.PHONY: all deps test-deps data configure build test run bench convergence bench-python test-mpich bench-mpi bench-scaling bench-embedding sanitize fuzz cross-aarch64 clean
all: build

# deps: what the build and the C++ job need; test-deps: also what the tests run (PyTorch, mpi4py,
# numpy, the network tools of the multi-host tests)
deps:
	@scripts/install-deps.sh

test-deps:
	@scripts/install-deps.sh --tests

data: deps
	@scripts/fetch-mnist.sh data/mnist

# One build for every CPU: the kernels are compiled for each instruction-set level and the best
# the CPU runs is chosen at run time (docs/PERFORMANCE.md "CPU kernels").
$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)

configure: deps $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The test packages go in before the build is configured; a build that `make run` configured
# earlier is configured again, so that what they brought (Slurm) is found and its tests run.
test: test-deps data build
	cmake $(BUILD) >/dev/null
	cd $(BUILD) && ctest --output-on-failure --timeout 900 -j $(CTEST_JOBS)

# `run` builds only the app and what it links (a fresh `make run` skips the tests, the benchmarks
# and the Python module; the CUDA backend, where CUDA is found, is part of the app). The demo's
# logdir is scratch (a fresh run each time); mnist_async itself resumes from the checkpoints of an
# existing --logdir, like the tutorial's Supervisor.
run: data configure
	cmake --build $(BUILD) -j $(JOBS) --target mnist_async
	rm -rf $(BUILD)/log_async
	mpirun -np $(NP) --hostfile $(HOSTFILE) $(BUILD)/bin/mnist_async --data_dir data/mnist --logdir $(BUILD)/log_async $(RUN_ARGS)

bench: data build
	@scripts/install-deps.sh --bench
	bench/run-bench.sh $(BUILD)

# accuracy under asynchrony (docs/CONVERGENCE.md), about 40 minutes on 2 cores; the Python binding's
# overhead and the PyTorch example next to PyTorch Hogwild (docs/PYTHON.md)
convergence: data build
	@scripts/install-deps.sh --bench
	/usr/bin/python3 bench/convergence.py --build $(BUILD)

bench-python: data build
	@scripts/install-deps.sh --bench
	bench/python.sh $(BUILD)

# The same project against MPICH (Debian's mpich: ch4:ucx, hydra) in $(MPICH_BUILD), and its tests
# run with mpiexec.mpich and srun --mpi=pmi2 (docs/MULTIHOST.md "Building for MPICH"). No Python
# module: Debian's mpi4py is built for Open MPI. MPICH_CTEST_ARGS: e.g. -L multihost.
test-mpich: data test-deps
	cmake -S . -B $(MPICH_BUILD) -DCMAKE_BUILD_TYPE=Release -DASYNCPS_MPI=mpich \
	  -DASYNCPS_BUILD_PYTHON=OFF -DASYNCPS_WITH_CUDA=OFF $(CMAKE_ARGS)
	cmake --build $(MPICH_BUILD) -j $(JOBS)
	cd $(MPICH_BUILD) && ctest --output-on-failure --timeout 900 $(MPICH_CTEST_ARGS)

# The transport matrix: Open MPI and MPICH, one host and across the simulated hosts, side by side
# (bench/mpi_matrix.sh; docs/MULTIHOST.md "The transport matrix").
bench-mpi: data build
	@scripts/install-deps.sh --bench
	cmake -S . -B $(MPICH_BUILD) -DCMAKE_BUILD_TYPE=Release -DASYNCPS_MPI=mpich \
	  -DASYNCPS_BUILD_PYTHON=OFF -DASYNCPS_WITH_CUDA=OFF $(CMAKE_ARGS)
	cmake --build $(MPICH_BUILD) -j $(JOBS) --target mnist_async bench_push_pull
	bench/mpi_matrix.sh $(BUILD) $(MPICH_BUILD)

# The scaling study: bench_scaling on 4 simulated hosts (1-4 servers, 1-12 workers, arenas of
# 36 KB to 256 MiB), the cost model fitted to it and its projection (docs/SCALING.md).
bench-scaling: build
	@scripts/install-deps.sh --bench
	bench/scaling.sh $(BUILD)

# The embedding tables' benchmark: ctr_async against all-reducing the tables' gradient and against
# PyTorch's sparse Hogwild, tables of 2^20-2^24 rows, one host and across (docs/EMBEDDINGS.md).
bench-embedding: build
	@scripts/install-deps.sh --bench
	bench/embedding.sh $(BUILD)

# ASan + UBSan (GCC): everything built with ASYNCPS_SANITIZE=address,undefined in $(ASAN_BUILD),
# the tests run under it; any sanitizer report fails (README "Sanitizers and fuzzers"). Left out
# by default: the tests that run no code of ours the others do not (labels build, install, doc:
# builds and text checks; multihost, slurm: the same jobs across simulated hosts or under srun,
# whose pt2pt/TCP transport the core tests run; cpu-levels: the whole model again at each forced
# CPU level, whose kernels test_nn [cpu-levels] runs at every level), and the longest whole-job
# tests (30-75 s each under ASan), whose code the shorter app, ctr and core tests run under it too
# (the event files: python_summary_writer_np1 and ctr_logdir_events_*; the examples' flag checks
# are Python's argparse and the Session refusals python_hostile_args_np3 runs).
# SANITIZE_CTEST_ARGS= runs all.
SANITIZE_LONG_JOBS := app_logdir_guards_np3|app_kill_restart_np3|app_checkpoint_restart|app_stall_ends_job_pt2pt_tcp|app_stall_ends_job_and_restart_resumes|app_full_disk_periodic_warns_final_fails_np3|app_eval_every_reports_time_to_target_np3|ctr_row_group_trains_as_separate_tables|ctr_wide_deep_two_workers_np3|ctr_wide_deep_two_servers_sgd_np4|ctr_allreduce_baseline_trains_np2|app_tensorboard_events_np2|python_examples_refuse_bad_flags_np2|ctr_eval_lines_name_their_model_and_training_time_np2|ctr_earlier_checkpoints_moved_aside_never_deleted_np2
SANITIZE_CTEST_ARGS ?= -LE '^(build|install|doc|multihost|slurm|cpu-levels)$$' -E '^($(SANITIZE_LONG_JOBS))$$'
sanitize: data test-deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DASYNCPS_SANITIZE=address,undefined \
	  -DASYNCPS_WITH_CUDA=OFF -DASYNCPS_BUILD_BENCH=OFF $(CMAKE_ARGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	scripts/run-sanitizer-tests.sh $(ASAN_BUILD) -j $(CTEST_JOBS) $(SANITIZE_CTEST_ARGS)

# The libFuzzer targets of fuzz/ (clang 14), each run for FUZZ_SECONDS on a copy of its seeds.
fuzz: deps
	@scripts/install-deps.sh --fuzz
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 \
	  -DCMAKE_C_COMPILER=clang-14 -DASYNCPS_BUILD_FUZZERS=ON -DASYNCPS_BUILD_TESTS=OFF -DASYNCPS_BUILD_BENCH=OFF \
	  -DASYNCPS_BUILD_APPS=OFF -DASYNCPS_BUILD_PYTHON=OFF -DASYNCPS_WITH_CUDA=OFF
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target asyncps_fuzzers
	scripts/run-fuzzers.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# The CPU kernels on aarch64: lib/nn's tests built with Debian's cross compiler and run under
# qemu-aarch64-static, and libasyncps compiled for aarch64 (scripts/cross-aarch64.sh).
cross-aarch64:
	@scripts/install-deps.sh --cross
	scripts/cross-aarch64.sh $(CROSS_BUILD)

clean:
	rm -rf $(BUILD)
