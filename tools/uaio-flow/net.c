/* SPDX-License-Identifier: MIT */
/* uaio-flow: addresses and the sockets they name. */
#include "tool.h"

#include <ctype.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---------------------------------------------------------- addresses */

/* "HOST:PORT", "[V6]:PORT", or for listeners "PORT" alone. */
static int split_hostport(char *s, char **host, char **port, bool passive)
{
	char *c = strrchr(s, ':');

	if (s[0] == '[') {
		char *e = strchr(s, ']');

		if (!e || e[1] != ':' || e == s + 1)	/* "[]:P": no host */
			return -1;
		*e = 0;
		*host = s + 1;
		*port = e + 2;
		return 0;
	}
	if (!c) {
		if (!passive)
			return -1;
		*host = NULL;
		*port = s;
		return 0;
	}
	*c = 0;
	if (!*s && !passive)	/* ":P": a peer needs a host */
		return -1;
	if (strchr(s, ':'))	/* an IPv6 address goes in brackets ("::1" was
				 * host "::", port 1) */
		return -1;
	*host = *s ? s : NULL;
	*port = c + 1;
	return 0;
}

/* A numeric port must be 1 to 65535 (getaddrinfo would take 99999 as
 * 34463, and 0 is a port nobody can name back); a service name, letters
 * first, is getaddrinfo's to check ("+80" or " 80" is neither). */
static bool port_ok(const char *port)
{
	char *end;
	unsigned long v;

	if (!*port)
		return false;
	if (!isdigit((unsigned char)*port))
		return isalpha((unsigned char)*port);
	errno = 0;
	v = strtoul(port, &end, 10);
	return !errno && !*end && v >= 1 && v <= 65535;
}

/* The syntax of an address, checked before anything waits on it. */
void check_spec(const char *spec, bool passive)
{
	char *buf = strdup(spec), *host, *port;

	if (!buf)
		fail(spec, ENOMEM);
	if (split_hostport(buf, &host, &port, passive) < 0 || !port_ok(port))
		die_usage(passive ? "bad address '%s' (want [ADDR:]PORT)" :
			  "bad address '%s' (want HOST:PORT)", spec);
	/* a service name is looked up now: an unknown one is bad usage
	 * before any file is opened, as net_fd() would say it later */
	if (!isdigit((unsigned char)*port)) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
					  .ai_flags = AI_PASSIVE }, *res;
		int r = getaddrinfo(NULL, port, &hints, &res);

		if (r == EAI_SERVICE)
			die_usage("bad port in '%s'", spec);
		if (r == 0)
			freeaddrinfo(res);
	}
	free(buf);
}

int net_fd(const char *spec, bool passive)
{
	char *buf = strdup(spec), *host = NULL, *port = NULL;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = passive ? AI_PASSIVE : 0 }, *res, *a;
	int fd = -1, r, one = 1, zero = 0, err = 0;
	bool any;

	check_spec(spec, passive);
	if (!buf)
		fail(spec, ENOMEM);
	split_hostport(buf, &host, &port, passive);
	/* A listener on every address: IPv6's, which takes IPv4 too, first. */
	any = passive && !host;
	if ((r = getaddrinfo(host, port, &hints, &res))) {
		if (r == EAI_SERVICE)
			die_usage("bad port in '%s'", spec);
		fprintf(stderr, "%s: %s: %s\n", ME, spec, gai_strerror(r));
		exit(1);
	}
	for (int pass = any ? 0 : 1; pass < 2 && fd < 0; pass++)
		for (a = res; a && fd < 0; a = a->ai_next) {
			if (pass == 0 && a->ai_family != AF_INET6)
				continue;
			fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
			if (fd < 0) {
				err = errno;
				continue;
			}
			if (passive) {
				setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
				if (a->ai_family == AF_INET6 && any)
					setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
				r = bind(fd, a->ai_addr, a->ai_addrlen) || listen(fd, 1);
			} else {
				blocking_begin();
				r = connect(fd, a->ai_addr, a->ai_addrlen);
				blocking_end();
			}
			if (r) {
				err = errno;
				close(fd);
				fd = -1;
			}
		}
	freeaddrinfo(res);
	free(buf);
	if (fd < 0)
		fail(spec, err);
	return fd;
}

int accept_one(int ls, const char *spec, char *name, size_t n)
{
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);
	char host[NI_MAXHOST], port[NI_MAXSERV];
	int fd;

	blocking_begin();
	fd = accept4(ls, (struct sockaddr *)&sa, &len, SOCK_CLOEXEC);
	blocking_end();
	if (fd < 0)
		fail(spec, errno);
	close(ls);
	/* Messages name the peer as send names its: HOST:PORT, [V6]:PORT;
	 * an IPv4 peer of a dual-stack listener as IPv4. */
	if (sa.ss_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&((struct sockaddr_in6 *)&sa)->sin6_addr)) {
		struct sockaddr_in6 v6 = *(struct sockaddr_in6 *)&sa;
		struct sockaddr_in *v4 = (struct sockaddr_in *)&sa;

		memset(&sa, 0, sizeof(sa));
		v4->sin_family = AF_INET;
		v4->sin_port = v6.sin6_port;
		memcpy(&v4->sin_addr, &v6.sin6_addr.s6_addr[12], 4);
		len = sizeof(*v4);
	}
	if (getnameinfo((struct sockaddr *)&sa, len, host, sizeof(host), port, sizeof(port),
			NI_NUMERICHOST | NI_NUMERICSERV) == 0)
		snprintf(name, n, sa.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
	else
		snprintf(name, n, "%s", spec);
	return fd;
}
