/* SPDX-License-Identifier: MIT */
/*
 * A uaio loop driven by another event loop (libevent): the program's own
 * loop watches uaio_loop_fd() and sleeps no longer than
 * uaio_loop_timeout() says, then lets uaio run one iteration without
 * waiting. uaio's timers, ops and posts all work as under uaio_loop_run().
 *
 *   example_loop_in_libevent
 *
 * Starts a periodic uaio timer (5 ticks of 20 ms), a uaio read of a pipe
 * that another thread writes after 50 ms, and a post from that thread;
 * exits 0 once all of them have happened, 1 if libevent's own 5 s
 * deadline comes first.
 */
#define _GNU_SOURCE
#include <event2/event.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <uaio/loop.h>

struct app {
	uaio_loop *l;
	struct event_base *base;
	struct event *ready, *due;	/* uaio's descriptor; its next deadline */
	int ticks, got, posted;
};

/* After every uaio iteration: wake again when uaio_loop_timeout says. */
static void rearm(struct app *a)
{
	int64_t ns = uaio_loop_timeout(a->l);
	struct timeval tv;

	if (a->ticks >= 5 && a->got && a->posted) {
		event_base_loopbreak(a->base);
		return;
	}
	if (ns < 0) {
		evtimer_del(a->due);		/* only the descriptor can bring work */
		return;
	}
	tv.tv_sec = (time_t)(ns / 1000000000);
	tv.tv_usec = (suseconds_t)(ns % 1000000000 / 1000);
	evtimer_add(a->due, &tv);
}

static void run_uaio(evutil_socket_t fd, short what, void *arg)
{
	struct app *a = arg;

	(void)fd;
	(void)what;
	uaio_loop_run_once(a->l, 0);
	rearm(a);
}

static void on_tick(uaio_timer *t)
{
	struct app *a = t->data;

	if (++a->ticks == 5)
		uaio_timer_stop(a->l, t);
}

static void on_read(uaio_op *op, int res, void *data)
{
	struct app *a = data;

	(void)op;
	a->got = res;
}

static void on_post(void *data)
{
	((struct app *)data)->posted = 1;
}

static void give_up(evutil_socket_t fd, short what, void *base)
{
	(void)fd;
	(void)what;
	event_base_loopbreak(base);
}

struct writer {
	int fd;
	struct app *a;
};

static void *late_writer(void *arg)
{
	struct writer *w = arg;

	usleep(50000);
	if (write(w->fd, "x", 1) != 1)
		return NULL;
	uaio_loop_post(w->a->l, on_post, w->a);	/* from another thread */
	return NULL;
}

int main(void)
{
	struct app a = { 0 };
	struct timeval limit = { 5, 0 };
	struct event *deadline;
	uaio_timer tick;
	uaio_op op = { 0 };
	struct writer w;
	pthread_t th;
	char c;
	int p[2];

	a.l = uaio_loop_new(NULL);
	a.base = event_base_new();
	if (!a.l || !a.base || pipe(p) < 0 || uaio_loop_fd(a.l) < 0)
		return 1;
	a.ready = event_new(a.base, uaio_loop_fd(a.l), EV_READ | EV_PERSIST, run_uaio, &a);
	a.due = evtimer_new(a.base, run_uaio, &a);
	deadline = evtimer_new(a.base, give_up, a.base);
	event_add(a.ready, NULL);
	evtimer_add(deadline, &limit);

	uaio_timer_init(&tick, on_tick, &a);
	uaio_timer_start(a.l, &tick, 20000000, 20000000);
	uaio_op_read(a.l, &op, p[0], &c, 1, -1, on_read, &a);
	w = (struct writer){ p[1], &a };
	pthread_create(&th, NULL, late_writer, &w);
	rearm(&a);			/* the timer and the read, before any event */
	event_base_dispatch(a.base);
	pthread_join(th, NULL);

	printf("ticks %d, read %d, post %d\n", a.ticks, a.got, a.posted);
	event_free(deadline);
	event_free(a.ready);
	event_free(a.due);
	event_base_free(a.base);
	uaio_loop_free(a.l);
	close(p[0]);
	close(p[1]);
	return a.ticks == 5 && a.got == 1 && a.posted ? 0 : 1;
}
