/* SPDX-License-Identifier: Apache-2.0 */
/*
 * closed_port.h - for unit tests of the OTLP sink: a port on 127.0.0.1 that nothing
 * listens on, so that every export to it is refused at once and costs nothing. The
 * exporter makes its first bodies and then waits with them, making no more until they are
 * delivered (never, here; otlp_export.c): a test that needs an export at every interval
 * uses ok_collector.h.
 *
 * The port stays bound, by a socket that never listens, for the process's life (and its
 * children's): a connection to it is refused, and no other socket can take it. A port
 * bound, read back and closed, as this once did, was free again: the kernel handed it to
 * another test's receiver started meanwhile (ctest -j), whose requests then included this
 * test's exports (unit_http.reserved_headers_not_sent saw another process's body
 * as its first request, once, under ThreadSanitizer). One socket for every call.
 */
#ifndef INS_TEST_CLOSED_PORT_H
#define INS_TEST_CLOSED_PORT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

static inline int closed_port(void) {
  static int port = -1;
  if (port > 0) return port;
  /* close-on-exec: a program the test runs need not keep it; no SO_REUSEADDR: nothing
   * else may bind the port while it is held */
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(s, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port); /* s is kept, bound and not listening */
  else if (s >= 0)
    close(s);
  return port;
}

#endif
