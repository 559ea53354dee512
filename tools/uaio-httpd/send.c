/* SPDX-License-Identifier: MIT */
/*
 * Sending a response's segments: memory and the first bytes of each file
 * range gathered into one sendmsg, the --disk-io mode reading those bytes
 * first; the rest of a larger range by flow (sendfile or splice in the
 * kernel); a full socket waits for room.
 */
#include <errno.h>
#include <string.h>
#include "httpd.h"

/* Bytes moved restart the send clock; a report of none (a client that
 * reads nothing) does not. */
static void flow_progress(uaio_flow *fl, uint64_t bytes, void *data)
{
	struct conn *c = data;

	if (bytes != c->resp->flow_seen) {
		c->resp->flow_seen = bytes;
		conn_send_clock(c);
	}
}

static void flow_done(uaio_flow *fl, int64_t res, int side, void *data)
{
	struct conn *c = data;
	struct resp *r = c->resp;
	struct seg *sg = &r->seg[r->cur];

	r->flow = NULL;
	if (c->state == C_CLOSING) {
		conn_released(c);
		return;
	}
	if (res != (int64_t)(sg->len - sg->loaded)) {
		/* The file shrank, or the client went away. */
		if (res >= 0)
			files_forget(c->srv->files, r->f);
		r->bytes += uaio_flow_bytes(fl);	/* what went, for the log */
		resp_finish(c, false);
		return;
	}
	r->bytes += (uint64_t)res;
	r->cur++;
	r->flow_next = false;
	resp_continue(c);
}

static int start_flow(struct conn *c)
{
	struct resp *r = c->resp;
	struct seg *sg = &r->seg[r->cur];
	struct uaio_flow_params p;

	r->flow_seen = 0;
	p = (struct uaio_flow_params){
		.src = { .type = UAIO_FLOW_FD, .fd = r->f->fd,
			 .off = (int64_t)(sg->off + sg->loaded), .buf_index = -1 },
		.dst = { .type = UAIO_FLOW_FD, .fd = c->fd, .off = -1,
			 .buf_index = -1 },
		.len = sg->len - sg->loaded,
		.mode = UAIO_FLOW_AUTO,
		.progress = flow_progress,
		/* the send clock restarts on progress: told often enough
		 * that a short --send-timeout sees bytes moving */
		.progress_ns = c->srv->cfg->send_timeout_ms &&
			       c->srv->cfg->send_timeout_ms < 4000 ?
			       (uint64_t)c->srv->cfg->send_timeout_ms * 250000u : 1000000000ull,
		.done = flow_done,
		.data = c,
	};

	return uaio_flow_start(c->srv->loop, &p, &r->flow);
}

/* A chunk of seg[cur] was read (n bytes; a read may come back short when
 * only part of it was cached): it joins the iovec, and the rest, if any,
 * goes by flow. 0 bytes means the file shrank. */
static void on_read(struct conn *c, ssize_t n);

static bool took(struct resp *r, ssize_t n)
{
	struct seg *sg = &r->seg[r->cur];

	if (n <= 0)
		return false;
	sg->loaded = (uint32_t)n;
	r->iov[r->iovcnt++] = (struct iovec){ r->body + r->body_used, (size_t)n };
	r->body_used += (size_t)n;
	r->bytes += (uint64_t)n;
	if ((uint64_t)n < sg->len)
		r->flow_next = true;
	else
		r->cur++;
	return true;
}

/* Collects memory segments and first chunks of file segments into the
 * iovec until the buffer is full or a file range needs a flow. Returns
 * -EINPROGRESS when a read went to the background. */
static int gather(struct conn *c)
{
	struct resp *r = c->resp;
	struct server *s = c->srv;

	if (!r->iovcnt)
		r->batch_base = r->bytes;
	while (r->cur < r->nseg && r->iovcnt < RESP_SEGS) {
		struct seg *sg = &r->seg[r->cur];
		size_t want;
		ssize_t n;

		if (!sg->file) {
			if (sg->len)
				r->iov[r->iovcnt++] = (struct iovec){ (void *)sg->mem, sg->len };
			if (r->cur > 0)		/* seg[0] is the head */
				r->bytes += sg->len;
			r->cur++;
			continue;
		}
		if (sg->len == 0) {
			r->cur++;
			continue;
		}
		want = HTTPD_BODY_BUF - r->body_used;
		if (want > sg->len)
			want = sg->len;
		if (want == 0)
			break;
		/* A range longer than one read, already cached: all of it by
		 * flow (sendfile, inline), none of it copied through here. */
		if (sg->len > HTTPD_BODY_BUF && !sg->loaded &&
		    files_cached(c, r->f, sg->off, want)) {
			r->flow_next = true;
			break;
		}
		if (!r->body && !(r->body = server_buf(s, true)))
			return -ENOMEM;
		n = files_read(c, r->f, r->body + r->body_used, want, sg->off, on_read);
		if (n == -EINPROGRESS)
			return (int)n;
		if (!took(r, n)) {
			if (n == 0)	/* the file shrank: not for the next one */
				files_forget(s->files, r->f);
			return n < 0 ? (int)n : -ENODATA;
		}
		if (r->flow_next)
			break;
	}
	return 0;
}

/* Body bytes the client was sent (for the log of a response cut
 * short): those gathered, less what of them is still in the iovec, plus
 * what a running flow moved. */
uint64_t resp_bytes_sent(const struct resp *r)
{
	uint64_t unsent = 0, batch = r->bytes - r->batch_base;

	for (int i = 0; i < r->iovcnt; i++)
		unsent += r->iov[i].iov_len;
	return r->bytes - (unsent < batch ? unsent : batch) +
	       (r->flow ? uaio_flow_bytes(r->flow) : 0);
}

static void on_read(struct conn *c, ssize_t n)
{
	if (!took(c->resp, n)) {
		if (n == 0)
			files_forget(c->srv->files, c->resp->f);
		resp_finish(c, false);
		return;
	}
	resp_continue(c);
}

void resp_continue(struct conn *c)
{
	struct resp *r = c->resp;

	for (;;) {
		int rc;

		if (!r->flow_next && r->cur < r->nseg) {
			rc = gather(c);
			if (rc == -EINPROGRESS)
				return;
			if (rc < 0) {
				resp_finish(c, false);
				return;
			}
		}
		if (r->iovcnt) {
			rc = conn_send(c, r->iov, &r->iovcnt, r->flow_next);
			if (rc < 0) {
				resp_finish(c, false);
				return;
			}
			if (rc == 0) {
				conn_want_write(c);
				return;
			}
			r->body_used = 0;
		}
		if (r->flow_next) {
			/* The rest goes by flow, which may take long (a
			 * client that reads slowly): the body buffer goes
			 * back now, taken again if a later part wants one. */
			if (r->body) {
				server_buf_put(c->srv, r->body, true);
				r->body = NULL;
			}
			if (start_flow(c) < 0)
				resp_finish(c, false);
			return;
		}
		if (r->cur >= r->nseg) {
			resp_finish(c, true);
			return;
		}
	}
}
