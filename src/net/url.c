/*
 * url.c - parsing an endpoint URL (see url.h): RFC 3986's authority and path as
 * an HTTP client sends them (RFC 9110 7.1), IPv6 literals and their zones (RFC
 * 6874) included. Pure: no lookup, no allocation.
 */
#include "net/url.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static int fail_why(char *why, size_t n, const char *msg) {
  snprintf(why, n, "%s", msg);
  return -1;
}

/* Characters that may stand in a request-target as we send it: visible ASCII. A
 * space or a control character would end the request line early. */
static bool target_char_ok(unsigned char ch) { return ch > 0x20 && ch < 0x7f; }

static bool host_char_ok(unsigned char ch) { return isalnum(ch) || ch == '-' || ch == '.' || ch == '_'; }

int ins_net_url_parse(struct ins_net_url *u, const char *url, char *why, size_t whylen) {
  memset(u, 0, sizeof *u);
  const char *p;
  if (!strncasecmp(url, "http://", 7)) {
    p = url + 7;
  } else if (!strncasecmp(url, "https://", 8)) {
    u->https = true;
    p = url + 8;
  } else {
    return fail_why(why, whylen, "the scheme is neither http:// nor https://");
  }
  size_t alen = strcspn(p, "/?#");
  const char *aend = p + alen;
  if (memchr(p, '@', alen))
    return fail_why(why, whylen, "user:password@ in the URL is not supported (give credentials as headers)");
  const char *hend; /* end of the host text; the port (if any) follows a ':' there */
  if (*p == '[') {
    const char *rb = memchr(p, ']', alen);
    if (!rb || rb == p + 1) return fail_why(why, whylen, "an IPv6 address without its closing ']'");
    size_t n = (size_t)(rb - p - 1);
    if (n >= sizeof u->host) return fail_why(why, whylen, "the host is too long");
    /* hex digits, ':' and '.' (an IPv4 tail), then maybe a zone: "%25" and a name (RFC 6874) */
    const char *zone = memchr(p + 1, '%', n);
    size_t addr_n = zone ? (size_t)(zone - p - 1) : n;
    for (size_t i = 0; i < n; i++) {
      unsigned char ch = (unsigned char)p[1 + i];
      bool ok = i < addr_n ? isxdigit(ch) || ch == ':' || ch == '.' : i < addr_n + 3 || host_char_ok(ch);
      if (!ok) return fail_why(why, whylen, "a character that is not part of an IPv6 address");
    }
    if (zone && (n < addr_n + 4 || strncmp(zone, "%25", 3)))
      return fail_why(why, whylen, "an IPv6 zone not written %25name");
    memcpy(u->host, p + 1, n);
    hend = rb + 1;
    if (hend != aend && *hend != ':') return fail_why(why, whylen, "text after the IPv6 address");
  } else {
    hend = memchr(p, ':', alen);
    if (!hend) hend = aend;
    size_t n = (size_t)(hend - p);
    if (n == 0) return fail_why(why, whylen, "no host");
    if (n >= sizeof u->host) return fail_why(why, whylen, "the host is too long");
    for (size_t i = 0; i < n; i++)
      if (!host_char_ok((unsigned char)p[i]))
        return fail_why(why, whylen, "a character that may not stand in a host name");
    memcpy(u->host, p, n);
  }
  unsigned long port = u->https ? 443 : 80;
  if (hend < aend) { /* ":port", or ":" alone (the default, RFC 3986 3.2.3) */
    const char *q = hend + 1;
    if (q < aend) {
      port = 0;
      for (; q < aend; q++) {
        if (!isdigit((unsigned char)*q)) return fail_why(why, whylen, "the port is not a number");
        port = port * 10 + (unsigned long)(*q - '0');
        if (port > 65535) return fail_why(why, whylen, "the port is above 65535");
      }
      if (port == 0) return fail_why(why, whylen, "port 0");
    }
  }
  snprintf(u->port, sizeof u->port, "%lu", port);
  bool v6 = strchr(u->host, ':') != NULL;
  bool dflt = port == (u->https ? 443u : 80u);
  snprintf(u->host_hdr, sizeof u->host_hdr, "%s%s%s%s%s", v6 ? "[" : "", u->host, v6 ? "]" : "",
           dflt ? "" : ":", dflt ? "" : u->port);
  snprintf(u->origin, sizeof u->origin, "%s://%s%s%s:%s", u->https ? "https" : "http", v6 ? "[" : "",
           u->host, v6 ? "]" : "", u->port);
  /* The path is kept as given (the sink has appended /v1/metrics where the spec says);
   * the fragment is the client's own and never sent (RFC 9110 7.1). */
  size_t plen = strcspn(aend, "#");
  if (plen == 0) {
    strcpy(u->path, "/");
  } else {
    bool slash = aend[0] == '/'; /* "host?x=1": the path is empty, the target is "/?x=1" */
    if (plen + !slash >= sizeof u->path) return fail_why(why, whylen, "the path is too long");
    for (size_t i = 0; i < plen; i++)
      if (!target_char_ok((unsigned char)aend[i]))
        return fail_why(why, whylen, "a space or control character in the path");
    snprintf(u->path, sizeof u->path, "%s%.*s", slash ? "" : "/", (int)plen, aend);
  }
  /* A zone in a link-local address is written %25 in a URL (RFC 6874), % for getaddrinfo. */
  char *z = strstr(u->host, "%25");
  if (z) memmove(z + 1, z + 3, strlen(z + 3) + 1);
  return 0;
}
