/* SPDX-License-Identifier: Apache-2.0 */
/*
 * url.h - an http:// or https:// endpoint URL: where its parts start (the one
 * place that cuts an endpoint URL into parts), parsed into what a client needs
 * (host, port, request-target, Host header), and what a message may show of it.
 * Owns the parsing and the redaction of endpoint URLs: it opens nothing.
 */
#ifndef INS_NET_URL_H
#define INS_NET_URL_H

#include <stdbool.h>
#include <stddef.h>

/* Where each part of "scheme://authority/path?query#fragment" starts (RFC 3986's
 * generic syntax: the authority ends at the first '/', '?' or '#'), as offsets into
 * the text. scheme is the scheme's length (letters, digits, '+', '-', '.', starting
 * with a letter, at most 16) before "://", 0 when the text has none: then nothing is
 * an authority and every offset is 0 but end. Used by the parser below, by
 * ins_net_url_shown, and by a configuration that edits a URL (an empty port filled in,
 * a path appended before the query). */
struct ins_net_url_parts {
  size_t scheme;
  size_t auth;     /* the authority (after "//") */
  size_t path;     /* the path (its '/'), = query when empty */
  size_t query;    /* the '?' of the query, = fragment when none */
  size_t fragment; /* the '#' of the fragment, = end when none */
  size_t end;      /* strlen */
};
void ins_net_url_split(const char *url, struct ins_net_url_parts *p);

/* The scheme of url as ins_net_url_parse reads it (any case): http, https, or neither
 * (another scheme, or none). For a configuration that must know it before the URL is
 * whole (an empty port filled in, a path appended). */
enum ins_net_scheme { INS_NET_NOT_HTTP, INS_NET_HTTP, INS_NET_HTTPS };
enum ins_net_scheme ins_net_url_scheme(const char *url);

struct ins_net_url {
  bool https;
  char host[256];      /* a name, an IPv4 literal, or an IPv6 literal without brackets */
  char port[8];        /* decimal; 80 / 443 when the URL has none */
  char path[2048];     /* as given, query included, fragment removed; "/" when empty */
  char host_hdr[272];  /* the Host header's value: [v6] in brackets, :port unless the default */
  char origin[300];    /* scheme://host:port, what libcurl is given with the path: never put it
                        * in a message (the host may be a credential: ins_net_url_shown) */
};

/* 0, or -1 with the reason in why (never any of the URL's text). Accepts http:// and
 * https:// (any case), a host (name, IPv4, [IPv6]), an optional port, and a path;
 * refuses an '@' anywhere (user:password@ is not supported: the headers carry
 * credentials; and a password with '/', '?' or '#' in it would otherwise make its
 * first half the host, to which the headers would be sent) and characters that would
 * break the request line. */
int ins_net_url_parse(struct ins_net_url *u, const char *url, char *why, size_t whylen);

/*
 * What a message shows of a URL (any text given as one), into out (cap bytes; cut with
 * "..." at the end). By structure, so that it holds whatever the parts contain:
 *   - the scheme as given; text with no scheme is "***" whole;
 *   - everything between "//" and the last '@' of the text (the userinfo, whatever
 *     characters the password has) is "***@";
 *   - the host and port when the rest parses as an endpoint (ins_net_url_parse's rules)
 *     and the host is an IP address or a name that is not shaped like a credential
 *     (core/redact.h), "***" for the host otherwise; a rest that does not parse is "***"
 *     whole: a malformed URL shows nothing beyond its scheme;
 *   - the path is withheld: a '/' and "***" (a token may be in it), but "/" and the one
 *     path the caller names as safe (its protocol's standard path, "/v1/metrics"; NULL
 *     for none) are shown;
 *   - a query is "?***", a fragment "#***".
 * So "https://u:p/w@collector:4318/t0k/v1/metrics?k=v" shows its scheme, "***@" for
 * "u:p/w@", "collector:4318", and the withheld path and query. Returns out.
 */
const char *ins_net_url_shown(const char *url, const char *safe_path, char *out, size_t cap);

#endif
