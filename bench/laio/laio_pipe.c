/* SPDX-License-Identifier: MIT */
/*
 * The LAIO paper's micro-benchmark: read one byte through a pipe N times.
 *   --case full:  the pipe always has data, reads never block
 *   --case empty: a writer thread feeds one byte per read (ping-pong over
 *                 a second, blocking pipe), so every read would block
 * Modes: block (read(2)), nb-epoll (O_NONBLOCK read, epoll_wait on
 * EAGAIN), uring (raw liburing read per op), libaio (IOCB_CMD_PREAD,
 * synchronous inside io_submit on a pipe), libaio-poll (IOCB_CMD_POLL,
 * then read), laio-op / laio-poll (laio_syscall(SYS_read) with each
 * background mechanism).
 * Prints one line: mode=... case=... n=... ns_per_read=... blocked=...
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <uaio/laio.h>

static int data[2], ack[2];
static long n = 100000;
static int empty;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void *writer(void *arg)
{
	char c;

	for (long i = 0; i < n; i++) {
		if (read(ack[0], &c, 1) != 1)
			die("ack read");
		if (write(data[1], "x", 1) != 1)
			die("data write");
	}
	return NULL;
}

/* Before each read in the empty case: let the writer send the next byte. */
static inline void kick(void)
{
	if (empty && write(ack[1], "a", 1) != 1)
		die("ack write");
}

int main(int argc, char **argv)
{
	const char *mode = "block";
	long blocked = 0;
	char c;
	pthread_t th;
	double t0, t1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			mode = argv[++i];
		else if (!strcmp(argv[i], "--case") && i + 1 < argc)
			empty = !strcmp(argv[++i], "empty");
		else if (!strcmp(argv[i], "--n") && i + 1 < argc)
			n = atol(argv[++i]);
		else {
			fprintf(stderr, "usage: %s --mode M --case full|empty [--n N]\n", argv[0]);
			return 2;
		}
	}
	if (!strncmp(mode, "laio-", 5))
		setenv("LAIO_BG", mode + 5, 1);
	if (pipe(data) || pipe(ack))
		die("pipe");
	if (!empty) {
		/* enough bytes for every read, written up front */
		if (fcntl(data[1], F_SETPIPE_SZ, 1 << 20) < (n > 65536 ? n : 65536)) {
			fprintf(stderr, "pipe too small for --n %ld\n", n);
			return 1;
		}
		char *b = calloc(1, (size_t)n);
		if (write(data[1], b, (size_t)n) != n)
			die("prefill");
		free(b);
	} else if (pthread_create(&th, NULL, writer, NULL)) {
		die("pthread_create");
	}

	if (!strcmp(mode, "block")) {
		t0 = now_s();
		for (long i = 0; i < n; i++) {
			kick();
			if (read(data[0], &c, 1) != 1)
				die("read");
		}
		t1 = now_s();
	} else if (!strcmp(mode, "nb-epoll")) {
		int ep = epoll_create1(0);
		struct epoll_event ev = { .events = EPOLLIN };
		fcntl(data[0], F_SETFL, O_NONBLOCK);
		epoll_ctl(ep, EPOLL_CTL_ADD, data[0], &ev);
		t0 = now_s();
		for (long i = 0; i < n; i++) {
			kick();
			while (read(data[0], &c, 1) != 1) {
				if (errno != EAGAIN)
					die("read");
				blocked++;
				if (epoll_wait(ep, &ev, 1, -1) < 0 && errno != EINTR)
					die("epoll_wait");
			}
		}
		t1 = now_s();
	} else if (!strcmp(mode, "uring")) {
		struct io_uring ring;
		struct io_uring_cqe *cqe;
		if (io_uring_queue_init(8, &ring, 0))
			die("io_uring_queue_init");
		t0 = now_s();
		for (long i = 0; i < n; i++) {
			kick();
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			io_uring_prep_read(sqe, data[0], &c, 1, -1);
			if (io_uring_submit_and_wait(&ring, 1) < 0 ||
			    io_uring_wait_cqe(&ring, &cqe) || cqe->res != 1)
				die("uring read");
			io_uring_cqe_seen(&ring, cqe);
		}
		t1 = now_s();
	} else if (!strcmp(mode, "libaio") || !strcmp(mode, "libaio-poll")) {
		io_context_t ctx = 0;
		struct iocb cb, *cbs[1] = { &cb };
		struct io_event ev;
		int poll_mode = !strcmp(mode, "libaio-poll");
		if (io_setup(8, &ctx))
			die("io_setup");
		if (poll_mode)
			fcntl(data[0], F_SETFL, O_NONBLOCK);
		t0 = now_s();
		for (long i = 0; i < n; i++) {
			kick();
			if (poll_mode) {
				/* readiness through AIO, then a non-blocking read */
				while (read(data[0], &c, 1) != 1) {
					if (errno != EAGAIN)
						die("read");
					blocked++;
					io_prep_poll(&cb, data[0], POLLIN);
					if (io_submit(ctx, 1, cbs) != 1 ||
					    io_getevents(ctx, 1, 1, &ev, NULL) != 1)
						die("aio poll");
				}
			} else {
				io_prep_pread(&cb, data[0], &c, 1, 0);
				if (io_submit(ctx, 1, cbs) != 1 ||
				    io_getevents(ctx, 1, 1, &ev, NULL) != 1 || ev.res != 1)
					die("aio pread");
			}
		}
		t1 = now_s();
	} else if (!strncmp(mode, "laio-", 5)) {
		struct laio_completion comp;
		/* start the engine outside the timed loop */
		laio_poll(&comp, 1, &(struct timespec){ 0, 0 });
		t0 = now_s();
		for (long i = 0; i < n; i++) {
			kick();
			long r = laio_syscall(SYS_read, data[0], &c, 1);
			if (r == -1 && errno == EINPROGRESS) {
				blocked++;
				if (laio_poll(&comp, 1, NULL) != 1 || comp.laio_return_value != 1)
					die("laio_poll");
			} else if (r != 1) {
				die("laio read");
			}
		}
		t1 = now_s();
	} else {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}
	if (empty)
		pthread_join(th, NULL);
	printf("mode=%s case=%s n=%ld ns_per_read=%.1f blocked=%.3f\n", mode,
	       empty ? "empty" : "full", n, (t1 - t0) * 1e9 / n, (double)blocked / n);
	return 0;
}
