/* SPDX-License-Identifier: Apache-2.0 */
/*
 * resolve.c - bounded waits, name lookup and connect (see resolve.h).
 *
 * Every wait is bounded by the request's deadline and cut short by stop. Name
 * lookup goes through glibc's getaddrinfo_a (libc's own since 2.34, libanl.so.1
 * before), waited for in slices, because getaddrinfo itself cannot be bounded (a
 * resolver that does not answer holds it for timeout x attempts x search
 * domains: tens of seconds, minutes at worst); numeric hosts never look anything
 * up. Only without getaddrinfo_a (a libc other than glibc) is it getaddrinfo.
 *
 * Also the home of ins_net_test_hooks, beside the clock, its first hook.
 */
#include "net/resolve.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"

struct ins_net_test_hooks ins_net_test_hooks;

/* ============================================================================
 * Waiting, bounded by the deadline and by stop
 * ========================================================================= */

uint64_t ins_net_now_ns(void) {
  return ins_net_test_hooks.now_ns ? ins_net_test_hooks.now_ns() : ins_mono_ns();
}

uint64_t ins_net_deadline(const struct ins_net_cut *cut, uint64_t deadline, bool *stopping) {
  uint64_t s = cut && cut->stop_ns ? atomic_load(cut->stop_ns) : 0;
  *stopping = s != 0;
  return s && s < deadline ? s : deadline;
}

int ins_net_ms_until(uint64_t deadline, uint64_t now) {
  uint64_t ms = (deadline - now + 999999) / 1000000; /* rounded up: never a busy 0 ms poll */
  return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* The stop descriptor is watched only until stop is seen: it stays readable
 * afterwards, and stop's deadline rules. */
int ins_net_wait_fd(int fd, short ev, const struct ins_net_cut *cut, uint64_t deadline) {
  for (;;) {
    bool stopping;
    uint64_t d = ins_net_deadline(cut, deadline, &stopping), now = ins_net_now_ns();
    if (now >= d) return 0;
    struct pollfd p[2] = {{.fd = fd, .events = ev}, {.fd = cut ? cut->wake_fd : -1, .events = POLLIN}};
    int np = !stopping && cut && cut->wake_fd >= 0 ? 2 : 1;
    int r = poll(p, (nfds_t)np, ins_net_ms_until(d, now));
    if (r < 0 && errno != EINTR) return -1;
    if (r > 0 && p[0].revents) return 1;
  }
}

/* Looked at before every read and write, not only when one would block: a peer that
 * always has the next byte ready (an endless answer, interim answers without end)
 * never makes a socket call block. */
bool ins_net_past_deadline(const struct ins_net_cut *cut, uint64_t deadline) {
  bool stopping;
  return ins_net_now_ns() >= ins_net_deadline(cut, deadline, &stopping);
}

/* ============================================================================
 * Name lookup
 * ========================================================================= */

/* glibc's asynchronous lookup: in libc itself since 2.34, in libanl.so.1 before.
 * Looked up at run time so that the plugin needs neither at link time: first in the
 * process's global scope (RTLD_DEFAULT: libc >= 2.34, or a program linked with
 * libanl), then in libanl.so.1, which stays loaded (RTLD_NODELETE: its helper threads
 * may outlive any request of ours). Only where neither has it (a libc other than
 * glibc) is the lookup a plain getaddrinfo, which nothing can bound: the caller's
 * thread, and its stop, then wait for the resolver's own timeouts. g_anl.source says which
 * (tests read it through ins_net_lookup_kind). */
typedef int (*gai_a_fn)(int, struct gaicb *[], int, struct sigevent *);
typedef int (*gai_suspend_fn)(const struct gaicb *const[], int, const struct timespec *);
typedef int (*gai_job_fn)(struct gaicb *);
static struct {
  pthread_once_t once;
  gai_a_fn start;
  gai_suspend_fn suspend;
  gai_job_fn error, cancel;
  const char *source;
} g_anl = {.once = PTHREAD_ONCE_INIT, .source = "getaddrinfo"};

/* The four functions from one handle (RTLD_DEFAULT or libanl's); false if any is missing. */
static bool anl_take(void *h) {
  void *s[4] = {dlsym(h, "getaddrinfo_a"), dlsym(h, "gai_suspend"), dlsym(h, "gai_error"),
                dlsym(h, "gai_cancel")};
  if (!s[0] || !s[1] || !s[2] || !s[3]) return false;
  /* object to function pointer: POSIX allows (as for libcurl's symbols) */
  memcpy(&g_anl.start, &s[0], sizeof s[0]);
  memcpy(&g_anl.suspend, &s[1], sizeof s[1]);
  memcpy(&g_anl.error, &s[2], sizeof s[2]);
  memcpy(&g_anl.cancel, &s[3], sizeof s[3]);
  return true;
}

static void anl_load(void) {
#if defined(__SANITIZE_THREAD__)
  /* ThreadSanitizer builds (tests only): getaddrinfo_a's thread is started inside glibc,
   * where TSan cannot see it, and it crashes in the interceptors; the plain, unbounded
   * lookup is used there (the bound itself is tested in the other builds). */
  return;
#endif
  const char *lib = ins_net_test_hooks.anl_lib;
  /* RTLD_DEFAULT is the null handle: it must not be mistaken for a failed dlopen */
  if (!lib && anl_take(RTLD_DEFAULT)) {
    g_anl.source = "getaddrinfo_a (libc)";
    return;
  }
  void *h = dlopen(lib ? lib : "libanl.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (h && anl_take(h)) g_anl.source = "getaddrinfo_a (libanl.so.1)";
}

const char *ins_net_lookup_kind(void) {
  pthread_once(&g_anl.once, anl_load);
  return g_anl.source;
}

/* A lookup in flight. Heap-allocated and never freed while libc may still write into
 * it: a lookup that outlives its request's deadline is waited for again by the next
 * request (no second lookup piles up behind a hung resolver); one still running when
 * its owner is freed (ins_net_lookup_free) is cancelled, or, if libc cannot cancel it, left to libc
 * (a few hundred bytes, once, when the resolver hangs at exit). */
struct ins_net_lookup {
  struct gaicb cb;
  struct addrinfo hints;
  char host[256], port[8];
};

static void why_timeout(char *why, size_t whylen, bool *timed_out, const char *what) {
  snprintf(why, whylen, "%s", what);
  *timed_out = true;
}

static int resolve(struct ins_net_lookup **dns, const char *host, const char *port,
                   const struct ins_net_cut *cut, uint64_t deadline, struct addrinfo **out, char *why,
                   size_t whylen, bool *timed_out) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
  int e = getaddrinfo(host, port, &hints, out); /* a literal: no lookup, no wait */
  if (e != EAI_NONAME) goto done;
  pthread_once(&g_anl.once, anl_load);
  hints.ai_flags = AI_NUMERICSERV;
  if (!g_anl.start) {
    e = getaddrinfo(host, port, &hints, out);
    goto done;
  }
  if (!*dns) {
    struct ins_net_lookup *j = calloc(1, sizeof *j);
    if (!j) {
      snprintf(why, whylen, "out of memory");
      return -1;
    }
    j->hints = hints;
    snprintf(j->host, sizeof j->host, "%s", host);
    snprintf(j->port, sizeof j->port, "%s", port);
    j->cb = (struct gaicb){.ar_name = j->host, .ar_service = j->port, .ar_request = &j->hints};
    struct gaicb *list[1] = {&j->cb};
    if ((e = g_anl.start(GAI_NOWAIT, list, 1, NULL)) != 0) {
      free(j);
      goto done;
    }
    *dns = j;
  }
  const struct gaicb *const list[1] = {&(*dns)->cb};
  while ((e = g_anl.error(&(*dns)->cb)) == EAI_INPROGRESS) {
    bool stopping;
    uint64_t d = ins_net_deadline(cut, deadline, &stopping), now = ins_net_now_ns();
    if (now >= d) {
      why_timeout(why, whylen, timed_out, "the name lookup did not finish within the timeout");
      return -1; /* *dns stays: the next request waits for this lookup */
    }
    /* gai_suspend watches no descriptor: slices of 50 ms let stop cut the wait */
    uint64_t ns = d - now < 50000000ull ? d - now : 50000000ull;
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    g_anl.suspend(list, 1, &ts);
  }
  *out = e == 0 ? (*dns)->cb.ar_result : NULL;
  free(*dns);
  *dns = NULL;
done:
  if (e == 0) return 0;
  /* no host in it: the caller's message shows the endpoint as ins_net_url_shown allows */
  snprintf(why, whylen, "the host name cannot be resolved: %s",
           e == EAI_SYSTEM ? strerror(errno) : gai_strerror(e));
  return -1;
}

void ins_net_lookup_free(struct ins_net_lookup **dns) {
  struct ins_net_lookup *j = *dns;
  if (!j) return;
  int e = g_anl.cancel(&j->cb);
  if (e == EAI_NOTCANCELED) return; /* libc still writes into it: left to libc (above) */
  if (e == EAI_ALLDONE && g_anl.error(&j->cb) == 0) freeaddrinfo(j->cb.ar_result);
  free(j);
  *dns = NULL;
}

/* ============================================================================
 * Connect
 * ========================================================================= */

int ins_net_connect(struct ins_net_lookup **dns, const char *host, const char *port,
                    const struct ins_net_cut *cut, uint64_t deadline, char *why, size_t whylen,
                    bool *timed_out) {
  struct addrinfo *ai = NULL;
  if (resolve(dns, host, port, cut, deadline, &ai, why, whylen, timed_out) != 0) return -1;
  int fd = -1, err = 0;
  bool late = false;
  for (struct addrinfo *a = ai; a; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    err = errno;
    if (err == EINPROGRESS) {
      int w = ins_net_wait_fd(fd, POLLOUT, cut, deadline);
      socklen_t len = sizeof err;
      if (w == 0) {
        close(fd);
        fd = -1;
        why_timeout(why, whylen, timed_out, "no connection within the timeout");
        late = true;
        break;
      }
      if (w < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      if (err == 0) break;
    }
    close(fd);
    fd = -1;
  }
  freeaddrinfo(ai);
  if (fd < 0 && !late) snprintf(why, whylen, "cannot connect: %s", strerror(err ? err : ECONNREFUSED));
  return fd;
}
