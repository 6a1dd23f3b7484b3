/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ok_collector.h - for unit tests of the OTLP sink that need its exporter to export at
 * every interval without a real collector: a thread of the test's own on 127.0.0.1 that
 * reads each request (headers, then Content-Length bytes, which it throws away) and
 * answers 200 at once, one keep-alive connection at a time. A collector that refuses
 * (closed_port.h) is not enough for that: the exporter makes its first bodies and then
 * waits with them, making no more until they are delivered (otlp_export.c).
 *
 * The thread lives as long as the process; a forked child has none (it inherits the
 * listening descriptor only, and never uses it). strcasestr and memmem need _GNU_SOURCE,
 * which the unit tests are built with.
 */
#ifndef INS_TEST_OK_COLLECTOR_H
#define INS_TEST_OK_COLLECTOR_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static inline void ok_collector_serve(int c) {
  static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";
  char head[8192];
  size_t have = 0;
  for (;;) { /* one request: its head, then its body, thrown away */
    char *end = NULL;
    while (!(end = memmem(head, have, "\r\n\r\n", 4))) {
      if (have == sizeof head - 1) return; /* a head this large is not the exporter's */
      ssize_t n = read(c, head + have, sizeof head - 1 - have);
      if (n <= 0) return;
      have += (size_t)n;
    }
    head[have] = '\0';
    *end = '\0';
    const char *cl = strcasestr(head, "\r\nContent-Length:");
    size_t body = cl ? strtoul(cl + 17, NULL, 10) : 0, got = have - (size_t)(end + 4 - head);
    while (got < body) {
      char skip[65536];
      size_t want = body - got < sizeof skip ? body - got : sizeof skip;
      ssize_t n = read(c, skip, want);
      if (n <= 0) return;
      got += (size_t)n;
    }
    have = 0; /* the exporter sends one request at a time and waits for its answer */
    if (write(c, answer, sizeof answer - 1) != (ssize_t)(sizeof answer - 1)) return;
  }
}

static inline void *ok_collector_thread(void *arg) {
  int fd = (int)(intptr_t)arg;
  for (;;) {
    int c = accept(fd, NULL, NULL);
    if (c < 0) continue;
    ok_collector_serve(c);
    close(c);
  }
  return NULL;
}

/* Starts the collector; returns its port, or -1. */
static inline int ok_collector_start(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  pthread_t t;
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 4) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &len) != 0 ||
      pthread_create(&t, NULL, ok_collector_thread, (void *)(intptr_t)fd) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  pthread_detach(t);
  return ntohs(a.sin_port);
}

#endif
