/* SPDX-License-Identifier: MIT */
/*
 * laio mode's hub: every thread's lazy calls that went to the background
 * come back through one laio_poll() (LAIO's completions are per process),
 * so the hub maps each handle to the connection, and the thread, that
 * made the call, and posts the completion to that thread's loop.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <uaio/laio.h>
#include "httpd.h"

struct hub_ent {
	void *h;
	struct server *s;
	struct conn *c;
	long res;
	struct hub_ent *next;
};

struct laio_hub {
	pthread_mutex_t mu;
	struct hub_ent *b[256];
};

struct laio_hub *hub_new(void)
{
	struct laio_hub *h = calloc(1, sizeof(*h));

	if (h)
		pthread_mutex_init(&h->mu, NULL);
	return h;
}

void hub_free(struct laio_hub *h)
{
	if (!h)
		return;
	for (int i = 0; i < 256; i++)
		for (struct hub_ent *e = h->b[i], *n; e; e = n) {
			n = e->next;
			free(e);
		}
	pthread_mutex_destroy(&h->mu);
	free(h);
}

void hub_lock(struct server *s)
{
	pthread_mutex_lock(&s->cfg->hub->mu);
}

void hub_unlock(struct server *s)
{
	pthread_mutex_unlock(&s->cfg->hub->mu);
}

static unsigned hslot(void *h)
{
	return (unsigned)(((uintptr_t)h >> 4) * 2654435761u) & 255;
}

static void deliver(void *arg)
{
	struct hub_ent *e = arg;
	struct conn *c = e->c;
	long res = e->res;

	free(e);
	files_complete(c, res);
}

/* Under the hub's lock. */
void hub_register(struct server *s, void *h, struct conn *c)
{
	struct laio_hub *hub = s->cfg->hub;
	struct hub_ent *e = malloc(sizeof(*e));

	if (!e)
		abort();	/* a lost completion would strand the connection */
	*e = (struct hub_ent){ .h = h, .s = s, .c = c };
	e->next = hub->b[hslot(h)];
	hub->b[hslot(h)] = e;
}

void hub_poll(struct server *s)
{
	struct laio_hub *hub = s->cfg->hub;
	static const struct timespec zero = { 0, 0 };
	struct laio_completion cs[64];
	struct hub_ent *got[64];
	int n;

	do {
		hub_lock(s);
		n = laio_poll(cs, 64, &zero);
		for (int i = 0; i < n; i++) {
			struct hub_ent **pp;

			for (pp = &hub->b[hslot(cs[i].laio_handle)]; *pp;
			     pp = &(*pp)->next)
				if ((*pp)->h == cs[i].laio_handle)
					break;
			if ((got[i] = *pp)) {
				*pp = got[i]->next;
				got[i]->res = cs[i].laio_return_value < 0 ?
						      -(long)cs[i].laio_errno :
						      cs[i].laio_return_value;
			}
		}
		hub_unlock(s);
		for (int i = 0; i < n; i++) {
			if (!got[i])
				continue;	/* not ours: cannot happen */
			if (got[i]->s == s)
				deliver(got[i]);
			else if (uaio_loop_post(got[i]->s->loop, deliver, got[i]) < 0)
				abort();
		}
	} while (n == 64);
}
