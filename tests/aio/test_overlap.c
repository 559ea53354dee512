/* SPDX-License-Identifier: MIT */
/*
 * Requests on one descriptor that depend on each other take effect in
 * call order, as glibc runs a descriptor's requests one after another:
 * of two writes to a byte the later wins, a read sees every write made
 * before it and none made after it (also one past the file's end it
 * stops at), a write from a buffer waits for the read that fills it;
 * also behind an fsync and inside a list. Requests that share no byte
 * still run side by side (not asserted: timing). An O_APPEND write waits
 * for the reads before it.
 */
#include "aio/aio_util.h"

enum { SPAN = 256 * 1024, NOPS = 48, BIG = 1024 * 1024 };

/* A 4 KiB write made after a 1 MiB one over it wins; a 1 MiB read made
 * before a write inside it does not see it. */
static void later_write_wins(void)
{
	char *a = malloc(BIG), *b = malloc(4096), *rb = malloc(BIG);
	int fd = t_tmpfile(), err;

	memset(a, 'a', BIG);
	memset(b, 'b', 4096);
	for (int round = 0; round < 40; round++) {
		struct aiocb wa = t_cb(fd, a, BIG, 0), wb = t_cb(fd, b, 4096, 8192);
		struct aiocb r = t_cb(fd, rb, BIG, 0), wc = t_cb(fd, b, 4096, 65536);
		char got[4096];

		CHECK(ftruncate(fd, 0) == 0 && ftruncate(fd, BIG) == 0);
		CHECK_EQ(uaio_write(&wa), 0);
		CHECK_EQ(uaio_write(&wb), 0);
		CHECK_EQ(t_wait(&wa, &err), BIG);
		CHECK_EQ(t_wait(&wb, &err), 4096);
		CHECK(pread(fd, got, 4096, 8192) == 4096);
		CHECK(!memcmp(got, b, 4096));
		CHECK(pread(fd, got, 4096, 4096) == 4096 && got[0] == 'a' && got[4095] == 'a');

		/* write after read */
		CHECK(pwrite(fd, a, BIG, 0) == BIG);
		memset(rb, 0, BIG);
		CHECK_EQ(uaio_read(&r), 0);
		CHECK_EQ(uaio_write(&wc), 0);
		CHECK_EQ(t_wait(&r, &err), BIG);
		CHECK_EQ(t_wait(&wc, &err), 4096);
		CHECK(rb[65536] == 'a' && rb[65536 + 4095] == 'a');
		CHECK(pread(fd, got, 4096, 65536) == 4096 && !memcmp(got, b, 4096));
	}
	close(fd);
	free(a);
	free(b);
	free(rb);
}

/* Writes held behind an fsync keep their order among themselves. */
static void held_writes_in_order(void)
{
	char *a = malloc(BIG), c[4096], got[4096];
	int fd = t_tmpfile(), err;

	memset(a, 'a', BIG);
	memset(c, 'c', sizeof(c));
	for (int round = 0; round < 20; round++) {
		struct aiocb x = t_cb(fd, a, BIG, BIG), s = t_cb(fd, NULL, 0, 0);
		struct aiocb wa = t_cb(fd, a, BIG, 0), wc = t_cb(fd, c, 4096, 0);

		CHECK(ftruncate(fd, 0) == 0);
		CHECK_EQ(uaio_write(&x), 0);
		CHECK_EQ(uaio_fsync(O_DSYNC, &s), 0);
		CHECK_EQ(uaio_write(&wa), 0);
		CHECK_EQ(uaio_write(&wc), 0);
		CHECK_EQ(t_wait(&wc, &err), 4096);
		CHECK_EQ(t_wait(&wa, &err), BIG);
		CHECK_EQ(t_wait(&s, &err), 0);
		CHECK_EQ(t_wait(&x, &err), BIG);
		CHECK(pread(fd, got, 4096, 0) == 4096 && !memcmp(got, c, 4096));
	}
	close(fd);
	free(a);
}

struct op {
	struct aiocb cb;
	int kind;		/* 0 read, 1 write, 2 fsync */
	char *buf, *want;	/* a read's expected bytes */
};

/* Random reads, writes and fsyncs over a small span, made back to back
 * (one by one, or as one list without the fsyncs): each read must see
 * the file as a glibc that ran them in call order would, and so must the
 * file at the end. */
static void random_against_model(void)
{
	char *model = calloc(1, SPAN), *got = malloc(SPAN);
	struct op ops[NOPS];
	unsigned seed = 12345;
	int fd = t_tmpfile(), err;

	for (int round = 0; round < 150; round++) {
		bool list = round % 3 == 2;
		struct aiocb *l[NOPS];
		int n = 0;

		memset(model, 0, SPAN);
		CHECK(ftruncate(fd, 0) == 0 && ftruncate(fd, SPAN) == 0);
		for (int i = 0; i < NOPS; i++) {
			struct op *o = &ops[i];
			size_t len = 1 + rand_r(&seed) % (i % 4 ? 16384 : 131072);
			off_t off = rand_r(&seed) % (SPAN - len);
			int k = rand_r(&seed) % 10;

			o->kind = k < 3 ? 0 : k < 9 || list ? 1 : 2;
			o->buf = malloc(len);
			o->want = NULL;
			o->cb = t_cb(fd, o->buf, len, off);
			if (o->kind == 1) {
				t_fill(o->buf, len, (unsigned)(round * NOPS + i));
				memcpy(model + off, o->buf, len);
			} else if (o->kind == 0) {
				o->want = malloc(len);
				memcpy(o->want, model + off, len);
			}
			o->cb.aio_lio_opcode = o->kind ? LIO_WRITE : LIO_READ;
			l[n++] = &o->cb;
		}
		for (int i = 0; list ? i < 1 : i < NOPS; i++) {
			struct op *o = &ops[i];

			if (list)
				CHECK_EQ(ulio_listio(LIO_NOWAIT, l, n, NULL), 0);
			else if (o->kind == 2)
				CHECK_EQ(uaio_fsync(O_DSYNC, &o->cb), 0);
			else
				CHECK_EQ((o->kind ? uaio_write : uaio_read)(&o->cb), 0);
		}
		for (int i = 0; i < NOPS; i++) {
			struct op *o = &ops[i];
			ssize_t want = o->kind == 2 ? 0 : (ssize_t)o->cb.aio_nbytes;

			CHECK_EQ(t_wait(&o->cb, &err), want);
			CHECK_EQ(err, 0);
			if (o->kind == 0 && memcmp(o->buf, o->want, o->cb.aio_nbytes)) {
				fprintf(stderr, "    round %d: read %d (%zu at %lld) saw a write made after it or missed one before\n",
					round, i, o->cb.aio_nbytes, (long long)o->cb.aio_offset);
				CHECK(0);
			}
			free(o->buf);
			free(o->want);
		}
		CHECK(pread(fd, got, SPAN, 0) == SPAN);
		if (memcmp(got, model, SPAN)) {
			size_t at = 0;

			while (got[at] == model[at])
				at++;
			fprintf(stderr, "    round %d: the file differs from call order at byte %zu\n",
				round, at);
			CHECK(0);
		}
	}
	close(fd);
	free(model);
	free(got);
}

/* A write held behind an earlier one it overlaps is waiting, so it can
 * be cancelled: it then never lands. */
static void held_write_cancels(void)
{
	char *a = malloc(BIG), c[4096], got[4096];
	int fd = t_tmpfile(), err;

	memset(a, 'a', BIG);
	memset(c, 'c', sizeof(c));
	for (int round = 0; round < 20; round++) {
		struct aiocb wa = t_cb(fd, a, BIG, 0), wc = t_cb(fd, c, 4096, 0);
		int r;

		CHECK(ftruncate(fd, 0) == 0);
		CHECK_EQ(uaio_write(&wa), 0);
		CHECK_EQ(uaio_write(&wc), 0);
		r = uaio_cancel(fd, &wc);
		CHECK(r == AIO_CANCELED || r == AIO_NOTCANCELED || r == AIO_ALLDONE);
		CHECK_EQ(t_wait(&wa, &err), BIG);
		if (r == AIO_CANCELED) {
			CHECK_EQ(t_wait(&wc, &err), -1);
			CHECK_EQ(err, ECANCELED);
		} else {
			CHECK_EQ(t_wait(&wc, &err), 4096);
		}
		CHECK(pread(fd, got, 4096, 0) == 4096);
		CHECK(!memcmp(got, r == AIO_CANCELED ? a : c, 4096));
	}
	close(fd);
	free(a);
}

/* A read that ends at the file's end, and a later write past its range:
 * the read still stops at the old end (glibc ran it first). */
static void read_at_eof(void)
{
	char *rb = malloc(BIG), wb[4096], small[100];
	int fd = t_tmpfile(), err;

	memset(small, 'x', sizeof(small));
	memset(wb, 'w', sizeof(wb));
	for (int round = 0; round < 20; round++) {
		struct aiocb r = t_cb(fd, rb, BIG, 0), w = t_cb(fd, wb, 4096, BIG);

		CHECK(ftruncate(fd, 0) == 0 && pwrite(fd, small, sizeof(small), 0) == 100);
		if (round % 2)
			t_evict(fd);
		CHECK_EQ(uaio_read(&r), 0);
		CHECK_EQ(uaio_write(&w), 0);
		CHECK_EQ(t_wait(&r, &err), 100);
		CHECK_EQ(t_wait(&w, &err), 4096);
	}
	close(fd);
	free(rb);
}

/* A copy within the file through one buffer: read block A into it, then
 * write it to block B. No file byte is shared, but the write waits for
 * the read that fills its buffer. */
static void copy_through_buffer(void)
{
	char *src = malloc(BIG), *buf = malloc(BIG), *got = malloc(BIG);
	int fd = t_tmpfile(), err;

	t_fill(src, BIG, 9);
	for (int round = 0; round < 10; round++) {
		struct aiocb r = t_cb(fd, buf, BIG, 0), w = t_cb(fd, buf, BIG, 4 * BIG);

		CHECK(ftruncate(fd, 0) == 0 && pwrite(fd, src, BIG, 0) == BIG);
		if (round % 2)
			t_evict(fd);
		memset(buf, '.', BIG);
		CHECK_EQ(uaio_read(&r), 0);
		CHECK_EQ(uaio_write(&w), 0);
		CHECK_EQ(t_wait(&r, &err), BIG);
		CHECK_EQ(t_wait(&w, &err), BIG);
		CHECK(pread(fd, got, BIG, 4 * BIG) == BIG && !memcmp(got, src, BIG));
	}
	close(fd);
	free(src);
	free(buf);
	free(got);
}

/* Thousands of writes to one block, each held behind the one before,
 * each failing at once (no buffer): each ends with EFAULT, and the
 * engine's thread does not nest one end inside the other (it ran out of
 * stack after about 1 500). */
static void chain_of_failures(void)
{
	enum { N = 5000 };
	char *big = malloc(16 * BIG);
	struct aiocb *cbs = calloc(N, sizeof(*cbs)), w0;
	int fd = t_tmpfile(), err;

	memset(big, 'z', 16 * BIG);
	w0 = t_cb(fd, big, 16 * BIG, 0);
	CHECK_EQ(uaio_write(&w0), 0);
	for (int i = 0; i < N; i++) {
		cbs[i] = t_cb(fd, NULL, 4096, 0);
		CHECK_EQ(uaio_write(&cbs[i]), 0);
	}
	/* not in aio_suspend: the engine's thread runs the ends, as in a
	 * program that polls */
	while (uaio_error(&cbs[N - 1]) == EINPROGRESS)
		usleep(1000);
	CHECK_EQ(t_wait(&w0, &err), 16 * BIG);
	for (int i = 0; i < N; i++) {
		CHECK_EQ(t_wait(&cbs[i], &err), -1);
		CHECK_EQ(err, EFAULT);
	}
	close(fd);
	free(cbs);
	free(big);
}

/* aio_cancel(fd, NULL) of a read and a later write over it, both waiting
 * behind a write in flight: notified in call order, as glibc's queue
 * has them (the held writes went first). */
static void cancel_in_call_order(void)
{
	char *big = malloc(64 * BIG), rb[4096], wb[4096];
	int fd = t_tmpfile(), err, both = 0;
	sigset_t set;

	memset(big, 'z', 64 * BIG);
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	CHECK(sigprocmask(SIG_BLOCK, &set, NULL) == 0);
	for (int round = 0; round < 5; round++) {
		struct aiocb w0 = t_cb(fd, big, 64 * BIG, 0);
		struct aiocb r1 = t_cb(fd, rb, 4096, 64 * BIG), w2 = t_cb(fd, wb, 4096, 64 * BIG);
		struct timespec ts = { 0, 0 };
		siginfo_t si;
		int c, got[2], n = 0;

		CHECK(ftruncate(fd, 0) == 0);
		r1.aio_sigevent.sigev_notify = w2.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
		r1.aio_sigevent.sigev_signo = w2.aio_sigevent.sigev_signo = SIGRTMIN;
		r1.aio_sigevent.sigev_value.sival_int = 1;
		w2.aio_sigevent.sigev_value.sival_int = 2;
		CHECK_EQ(uaio_write(&w0), 0);
		CHECK_EQ(uaio_read(&r1), 0);
		CHECK_EQ(uaio_write(&w2), 0);
		c = uaio_cancel(fd, NULL);
		t_wait(&w0, &err);
		t_wait(&r1, NULL);
		t_wait(&w2, NULL);
		while (n < 2 && sigtimedwait(&set, &si, &ts) == SIGRTMIN)
			got[n++] = si.si_value.sival_int;
		CHECK_EQ(n, 2);
		if (c == AIO_NOTCANCELED && uaio_error(&r1) == ECANCELED &&
		    uaio_error(&w2) == ECANCELED) {
			both++;
			CHECK(got[0] == 1 && got[1] == 2);
		}
	}
	if (!both)
		fprintf(stderr, "    (the 64 MiB write ended before every cancel: order not seen)\n");
	close(fd);
	free(big);
}

/* A read to the end of an O_APPEND file, then an append on the same
 * descriptor, in one list and as two calls: glibc runs the read first,
 * which sees none of the appended bytes. The read went side by side
 * (a list's entries are issued at its end), the append on the file's
 * FIFO, and the append could land first. */
static void append_after_read(void)
{
	size_t have = 198463, rn = 751250, an = 291929;
	char *init = malloc(have), *rb = malloc(rn), *ab = malloc(an);
	char path[] = "/dev/shm/uaio-appendXXXXXX";
	int fd = mkstemp(path), err;

	CHECK(fd >= 0 && init && rb && ab);
	CHECK(unlink(path) == 0);
	CHECK(fcntl(fd, F_SETFL, O_APPEND) == 0);
	memset(init, 'i', have);
	memset(ab, 'a', an);
	for (int round = 0; round < 40; round++) {
		struct aiocb r = t_cb(fd, rb, rn, (off_t)have), w = t_cb(fd, ab, an, 0);

		CHECK(ftruncate(fd, 0) == 0);
		CHECK(pwrite(fd, init, have, 0) == (ssize_t)have);
		r.aio_lio_opcode = LIO_READ;
		w.aio_lio_opcode = LIO_WRITE;
		t_submit_two(&r, &w, LIO_NOWAIT, round % 2);
		CHECK_EQ(t_wait(&r, &err), 0);
		CHECK_EQ(err, 0);
		CHECK_EQ(t_wait(&w, &err), (ssize_t)an);
		CHECK_EQ(lseek(fd, 0, SEEK_END), (off_t)(have + an));
	}
	close(fd);
	free(init);
	free(rb);
	free(ab);
}

int main(void)
{
	t_watchdog(120);
	RUN(later_write_wins);
	RUN(held_writes_in_order);
	RUN(random_against_model);
	RUN(held_write_cancels);
	RUN(read_at_eof);
	RUN(copy_through_buffer);
	RUN(chain_of_failures);
	RUN(cancel_in_call_order);
	RUN(append_after_read);
	return T_EXIT_PASS;
}
