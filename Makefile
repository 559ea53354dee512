# Front door: `make test` and `make bench` on a fresh Debian machine.
PREFIX ?= /usr/local
BUILD ?= build
BENCH_MODE ?= quick
JOBS ?= $(shell nproc)

.PHONY: all setup build test test-asan test-epoll test-fuzz bench bench-full bench-reshape install clean

all: build

setup:
	@scripts/setup.sh build

build: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	@ninja -C $(BUILD)

test: build
	@scripts/setup.sh test
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

test-epoll: build
	@scripts/setup.sh test
	cd $(BUILD) && UAIO_BACKEND=epoll ctest --output-on-failure -j$(JOBS)

test-asan: setup
	@scripts/setup.sh test
	@cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DUAIO_SANITIZE=ON -DUAIO_BUILD_BENCH=OFF >/dev/null
	@ninja -C build-asan
	cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j$(JOBS)

# libFuzzer on uaio-httpd's request path for FUZZ_SECONDS (clang); the
# corpus grows in build-fuzz/corpus, seeded from the repository's.
FUZZ_SECONDS ?= 60
test-fuzz:
	@scripts/setup.sh fuzz
	@CC=clang cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug -DUAIO_FUZZ=ON -DUAIO_BUILD_TESTS=OFF -DUAIO_BUILD_BENCH=OFF -DUAIO_BUILD_EXAMPLES=OFF >/dev/null
	@ninja -C build-fuzz fuzz_request
	@mkdir -p build-fuzz/corpus && cp -n tools/uaio-httpd/fuzz/corpus/* build-fuzz/corpus/
	build-fuzz/tools/uaio-httpd/fuzz_request -max_total_time=$(FUZZ_SECONDS) -max_len=9000 -timeout=10 build-fuzz/corpus

bench:
	@scripts/setup.sh bench
	@cmake -S . -B build-rel -G Ninja -DCMAKE_BUILD_TYPE=Release -DUAIO_BUILD_TESTS=OFF >/dev/null
	@ninja -C build-rel
	.venv/bin/python bench/run.py --build build-rel --mode $(BENCH_MODE)

bench-full:
	$(MAKE) bench BENCH_MODE=full

# Not part of make bench: builds the commit before the core reshaping beside
# build-rel (bench/reshape/bench.py) and compares the two.
bench-reshape:
	@scripts/setup.sh bench
	@cmake -S . -B build-rel -G Ninja -DCMAKE_BUILD_TYPE=Release -DUAIO_BUILD_TESTS=OFF >/dev/null
	@ninja -C build-rel
	.venv/bin/python bench/run.py --build build-rel --mode quick --only reshape

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) build-asan build-rel build-fuzz
