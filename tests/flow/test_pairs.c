/* SPDX-License-Identifier: MIT */
/* Every endpoint pair in every mode, at lengths 0, 1, chunk - 1, chunk + 1
 * and a few MB: the sink holds exactly the source's bytes, or the start
 * fails with EINVAL where the mode cannot serve the pair. */
#include "flow/flow_util.h"

#define CHUNK	(64u << 10)

static const char *dir = "/var/tmp";

/* Can mode move src -> dst at all (what flow.h promises)? */
static bool servable(int mode, int s, int d)
{
	if (s == E_MEM && d == E_MEM)
		return false;
	if (mode == UAIO_FLOW_PAGECACHE)
		return s != E_MEM && d != E_MEM;
	if (mode == UAIO_FLOW_MMAP)
		return s == E_FILE && d != E_MEM;
	return true;
}

static void one(uaio_loop *l, int mode, int s, int d, size_t n, const char *data)
{
	struct end src, dst;
	struct t_result r = { 0 };
	struct uaio_flow_params p = { .mode = mode, .chunk = CHUNK, .done = t_on_done,
				      .data = &r, .len = UAIO_FLOW_EOF };
	uaio_flow *f;
	int ret;

	if (!servable(mode, s, d)) {
		t_src(&src, s, data, 0, dir);
		t_dst(&dst, d, 1, dir);
		p.src = t_ep(&src);
		p.dst = t_ep(&dst);
		p.len = 1;
		CHECK_EQ(uaio_flow_start(l, &p, &f), -EINVAL);
		t_dst_finish(&dst);
		t_src_finish(&src);
		free(dst.buf);
		return;
	}
	t_src(&src, s, data, n, dir);
	t_dst(&dst, d, n, dir);
	p.src = t_ep(&src);
	p.dst = t_ep(&dst);
	if (s == E_DEV || ((s == E_MEM || d == E_MEM) && n == 0))
		p.len = n;
	ret = uaio_flow_start(l, &p, &f);
	if (ret < 0) {
		fprintf(stderr, "%s %s -> %s, %zu bytes: start %s\n", uaio_flow_mode_name(mode),
			e_names[s], e_names[d], n, strerror(-ret));
		exit(T_EXIT_FAIL);
	}
	if (mode != UAIO_FLOW_AUTO)
		CHECK_EQ(uaio_flow_mode(f), mode);
	else if (n == 1 && getenv("V"))
		fprintf(stderr, "    auto: %s, %s\n", uaio_flow_mode_name(uaio_flow_mode(f)),
			uaio_flow_method(f));
	T_RUN_UNTIL(l, r.done, 1000000);
	if (r.res != (int64_t)n) {
		fprintf(stderr, "%s %s -> %s, %zu bytes: res %lld side %d\n",
			uaio_flow_mode_name(mode), e_names[s], e_names[d], n,
			(long long)r.res, r.side);
		exit(T_EXIT_FAIL);
	}
	t_dst_finish(&dst);
	if (d != E_DEV) {
		CHECK_EQ(dst.got, n);
		if (memcmp(dst.buf, src.buf, n)) {
			fprintf(stderr, "%s %s -> %s, %zu bytes: contents differ\n",
				uaio_flow_mode_name(mode), e_names[s], e_names[d], n);
			exit(T_EXIT_FAIL);
		}
	}
	CHECK_EQ(r.done, 1);
	CHECK_EQ(r.side, UAIO_FLOW_SIDE_NONE);
	t_src_finish(&src);
	free(dst.buf);
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 0, 1, CHUNK - 1, CHUNK + 1, (3u << 20) + 17 };
	size_t big = sizes[4];
	char *data = malloc(big);
	uaio_loop *l;

	t_watchdog(300);
	t_banner("test_pairs");
	l = t_loop_new(0);
	t_fill(data, big, 1);
	for (int mode = UAIO_FLOW_AUTO; mode <= UAIO_FLOW_MMAP; mode++)
		for (int s = 0; s < E_COUNT; s++)
			for (int d = 0; d < E_COUNT; d++) {
				fprintf(stderr, "  %s %s -> %s\n", uaio_flow_mode_name(mode),
					e_names[s], e_names[d]);
				for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
					one(l, mode, s, d, sizes[i], data);
			}
	CHECK(uaio_loop_inflight(l) == 0);
	uaio_loop_free(l);
	free(data);
	return T_EXIT_PASS;
}
