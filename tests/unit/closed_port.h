/*
 * closed_port.h - for unit tests of the OTLP sink: a port on 127.0.0.1 that nothing
 * listens on (bound, read back, closed), so that every export to it is refused at once
 * and costs nothing. The exporter makes its first bodies and then waits with them,
 * making no more until they are delivered (never, here; otlp_export.c): a test that
 * needs an export at every interval uses ok_collector.h.
 */
#ifndef INS_TEST_CLOSED_PORT_H
#define INS_TEST_CLOSED_PORT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

static inline int closed_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  int port = -1;
  if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(s, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  if (s >= 0) close(s);
  return port;
}

#endif
