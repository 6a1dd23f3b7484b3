/*
 * url.h - an http:// or https:// endpoint URL, parsed into what a client needs
 * (host, port, request-target, Host header) and what a message may show (the
 * origin, never the path: it may hold a token). Owns the parsing only: it opens
 * nothing, and redacting a URL for a log line is the configuration's
 * (sink/otlp/otlp_config.c).
 */
#ifndef INS_NET_URL_H
#define INS_NET_URL_H

#include <stdbool.h>
#include <stddef.h>

struct ins_net_url {
  bool https;
  char host[256];      /* a name, an IPv4 literal, or an IPv6 literal without brackets */
  char port[8];        /* decimal; 80 / 443 when the URL has none */
  char path[2048];     /* as given, query included, fragment removed; "/" when empty */
  char host_hdr[272];  /* the Host header's value: [v6] in brackets, :port unless the default */
  char origin[300];    /* scheme://host:port, for messages (never the path: it may hold a token) */
};

/* 0, or -1 with the reason in why. Accepts http:// and https:// (any case), a host
 * (name, IPv4, [IPv6]), an optional port, and a path; refuses user:password@ (the
 * headers carry credentials) and characters that would break the request line. */
int ins_net_url_parse(struct ins_net_url *u, const char *url, char *why, size_t whylen);

#endif
