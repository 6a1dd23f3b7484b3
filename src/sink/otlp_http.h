/*
 * otlp_http.h - the OTLP exporter's transport: one keep-alive connection to a
 * collector, over which a request body is POSTed and the answer classified.
 * Internal to the exporter (otlp_export.c) and its tests; the sink sees only
 * otlp_export.h, and its configuration (otlp_config.c) the rule for extra headers.
 *
 * Owns: parsing the endpoint URL, the plain HTTP/1.1 client (libc only: name
 * lookup, non-blocking sockets, poll(), the response parser), the https
 * client (libcurl, loaded with dlopen), and the OTLP/HTTP spec's rules for an
 * answer: which are retryable, how long to wait (Retry-After, backoff with
 * jitter), what a partial success or a failure's Status says. The transport
 * decides nothing: it says what the collector answered (a status, a
 * Retry-After, the start of the body), or why nothing came back; the exporter
 * (otlp_export.c) applies the rules, owns the queue and logs. Every wait is
 * bounded by the request's deadline, and cut short when the exporter is told
 * to stop (struct ins_otlp_cut).
 *
 * The rules are pure functions (time and randomness are parameters), so that
 * tests hold them to the spec without a network or a clock.
 */
#ifndef INS_OTLP_HTTP_H
#define INS_OTLP_HTTP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the endpoint ---- */

struct ins_otlp_url {
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
int ins_otlp_url_parse(struct ins_otlp_url *u, const char *url, char *why, size_t whylen);

/* ---- Retry-After (RFC 9110 10.2.3): delay-seconds or an HTTP-date ---- */

#define INS_OTLP_NO_RETRY_AFTER (-1)
/* The delay it asks for in ms (0 for a date already past), or INS_OTLP_NO_RETRY_AFTER
 * when v is not a valid value. now_unix_s is the wall clock (a parameter: tests fix it).
 * The three date forms recipients must accept: IMF-fixdate, RFC 850, asctime. */
int64_t ins_otlp_retry_after_ms(const char *v, int64_t now_unix_s);

/* ---- the HTTP/1.1 response parser (incremental; no allocation) ---- */

#define INS_OTLP_RESP_KEEP 4096  /* body bytes kept: a Status or partial success is far smaller */
#define INS_OTLP_RESP_LINE 8192  /* the longest status, header or chunk-size line */
#define INS_OTLP_RESP_HEAD (64 * 1024) /* the most header bytes accepted in a response, interim
                                          * (1xx) answers included */
/* The most interim (1xx) answers before the final one: a real server sends one or two
 * (100 Continue, 103 Early Hints); more is a server holding the request open. */
#define INS_OTLP_RESP_MAX_INTERIM 8

enum ins_otlp_resp_state {
  INS_RESP_HEAD,      /* status line and headers */
  INS_RESP_BODY_LEN,  /* Content-Length bytes */
  INS_RESP_BODY_EOF,  /* until the server closes (neither length nor chunked) */
  INS_RESP_CHUNK_SIZE,
  INS_RESP_CHUNK_DATA,
  INS_RESP_CHUNK_END, /* the CRLF after a chunk's data */
  INS_RESP_TRAILERS,
  INS_RESP_DONE,
  INS_RESP_ERROR,
};

struct ins_otlp_resp {
  enum ins_otlp_resp_state state;
  int status;             /* of the final (non-1xx) response */
  bool keep_alive;        /* the connection may carry the next request */
  bool chunked;
  bool saw_status;        /* a status line was parsed (for the current response) */
  bool http11;            /* HTTP/1.1 or later: keep-alive unless "Connection: close" */
  bool conn_close, conn_keep; /* the Connection header's tokens */
  bool te_other;          /* a Transfer-Encoding that does not end in chunked */
  int64_t content_length; /* -1: none */
  uint64_t left;          /* of the body or of the current chunk */
  size_t head_bytes;
  unsigned interim;       /* interim (1xx) answers before this one */
  char retry_after[64];   /* the header's value, "" when absent */
  char content_type[96];
  const char *error;      /* why INS_RESP_ERROR, for messages */
  size_t line_len;
  char line[INS_OTLP_RESP_LINE];
  size_t body_len;        /* bytes kept in body (at most INS_OTLP_RESP_KEEP) */
  uint64_t body_total;
  char body[INS_OTLP_RESP_KEEP];
};

void ins_otlp_resp_init(struct ins_otlp_resp *r);
/* Feeds n bytes; returns how many were consumed (fewer than n only once the response
 * is DONE: bytes after it belong to no request of ours, or on ERROR). */
size_t ins_otlp_resp_feed(struct ins_otlp_resp *r, const char *p, size_t n);
/* The server closed the connection: DONE if the body was delimited by the close. */
void ins_otlp_resp_eof(struct ins_otlp_resp *r);

/* ---- the connection ---- */

/* Cutting waits short when the exporter stops: while *stop_ns is 0 every wait also
 * watches wake_fd (written once by stop); once it is set, no wait goes past it. */
struct ins_otlp_cut {
  int wake_fd;
  const _Atomic uint64_t *stop_ns; /* CLOCK_MONOTONIC deadline of stop, 0 until then */
};

/* What one POST came to. */
struct ins_otlp_result {
  int status;             /* the HTTP status; 0 when no answer came back */
  bool timed_out;         /* no answer within the deadline (or before stop's) */
  char why[160];          /* no answer: what went wrong (connection refused, ...) */
  char retry_after[64];   /* the Retry-After header's value, "" when absent */
  bool json;              /* the answer's Content-Type is application/json */
  size_t body_len;        /* the start of the answer's body, for the partial success or */
  char body[INS_OTLP_RESP_KEEP]; /* the Status message of a failure */
};

struct ins_otlp_req {
  const char *content_type; /* application/x-protobuf or application/json */
  bool gzip;                /* Content-Encoding: gzip */
  const char *headers;      /* "Key: value\r\n" each, sent as given (but for the reserved
                             * ones: below); NULL for none */
  const char *body;
  size_t len;
};

/* A header the transport writes itself, or one that says how the request is framed
 * or carried (Host, Content-Length, Transfer-Encoding, Connection, Content-Type,
 * Content-Encoding, User-Agent, Expect and the other hop-by-hop fields; any case).
 * Given again among the extra headers it would stand beside ours and desynchronise
 * the request (two lengths, two hosts, a chunked claim over a counted body): the
 * configuration drops such headers with a warning, and the transport never sends
 * them (a caller that did not ask the configuration). name: len bytes, no colon. */
bool ins_otlp_header_reserved(const char *name, size_t len);

struct ins_otlp_conn;

/* A connection to u (nothing is opened until the first post). use_curl: through
 * libcurl (https, or http when a test asks); NULL with the reason in why if libcurl
 * cannot be loaded, or without memory. */
struct ins_otlp_conn *ins_otlp_conn_new(const struct ins_otlp_url *u, bool use_curl, char *why,
                                        size_t whylen);
/* POSTs one body, bounded by deadline_ns (CLOCK_MONOTONIC) and the cut: every step
 * (name lookup, connect, send, each read of the answer) looks at the deadline, so a
 * resolver that never answers, or a server that sends without end (an answer that
 * never completes, interim answers) cannot hold it longer. Fills res:
 * a status, or status 0 and why. Reuses the open connection; a reused connection
 * that fails before any byte of an answer (the server closed it while idle) is
 * replaced once, at once, as HTTP clients do. */
void ins_otlp_conn_post(struct ins_otlp_conn *c, const struct ins_otlp_req *req,
                        const struct ins_otlp_cut *cut, uint64_t deadline_ns,
                        struct ins_otlp_result *res);
/* Closes the connection (the next post opens a new one). */
void ins_otlp_conn_close(struct ins_otlp_conn *c);
void ins_otlp_conn_free(struct ins_otlp_conn *c);

/* ---- the spec's rules for an answer (https://opentelemetry.io/docs/specs/otlp/) ---- */

enum ins_otlp_verdict {
  INS_OTLP_DELIVERED, /* 2xx, a partial success included ("Partial Success": MUST NOT retry) */
  INS_OTLP_RETRY,     /* 429, 502, 503, 504, or no answer ("Retryable Response Codes", "Failures") */
  INS_OTLP_REJECTED,  /* any other status: "MUST NOT retry"; the body is dropped */
};
enum ins_otlp_verdict ins_otlp_verdict_of(const struct ins_otlp_result *res);

/* The retry schedule: exponential backoff with full jitter, floored by Retry-After.
 * After the n-th consecutive failure (n >= 1) the next attempt waits
 *   jitter = random % (min(cap, base * 2^(n-1)) + 1)   ms, and
 *   max(jitter, min(retry_after, INS_OTLP_RETRY_AFTER_MAX_MS)) when the answer had one.
 * Constants and their reasons: otlp_http.c. */
#define INS_OTLP_BACKOFF_BASE_MS 1000u
#define INS_OTLP_BACKOFF_CAP_MS 30000u
#define INS_OTLP_RETRY_AFTER_MAX_MS 300000
struct ins_otlp_backoff {
  uint32_t base_ms, cap_ms;
};
uint64_t ins_otlp_retry_delay_ms(const struct ins_otlp_backoff *b, unsigned failures,
                                 int64_t retry_after_ms, uint64_t random);

/* A 200's body: 1 with *rejected and msg filled when it holds a populated
 * partial_success (ExportMetricsServiceResponse, protobuf or JSON), else 0. */
int ins_otlp_partial_success(const char *body, size_t len, bool json, int64_t *rejected, char *msg,
                             size_t msglen);
/* A failure's body (google.rpc.Status, protobuf or JSON): its message into msg; 0 if
 * none could be read (msg is then ""). */
int ins_otlp_status_message(const char *body, size_t len, bool json, char *msg, size_t msglen);

/* ---- the libraries loaded at run time ---- */

#define INS_OTLP_CURL_LIB "libcurl.so.4"
#define INS_OTLP_ZLIB_LIB "libz.so.1"

/* Test hooks: read when an exporter or a connection is made, never changed while
 * one runs. Zero values mean the real thing. */
struct ins_otlp_test_hooks {
  const char *curl_lib;       /* a name dlopen cannot find: the missing-libcurl path */
  const char *zlib_lib;
  const char *ca_file;        /* CURLOPT_CAINFO: a test collector's self-signed certificate */
  bool curl_for_http;         /* http:// through libcurl too: the curl path without TLS */
  uint32_t backoff_base_ms;   /* a faster retry schedule (the rule is the same) */
  uint32_t backoff_cap_ms;
  uint64_t (*random)(void);   /* the jitter's random source */
  uint64_t (*now_ns)(void);   /* the transport's clock (CLOCK_MONOTONIC ns): every deadline
                               * the transport checks reads it */
  const char *anl_lib;        /* the asynchronous lookup from this library only (not libc's):
                               * a name dlopen cannot find is the plain-getaddrinfo fallback */
};
extern struct ins_otlp_test_hooks ins_otlp_test_hooks;

/* How names are looked up in this process: "getaddrinfo_a (libc)", "getaddrinfo_a
 * (libanl.so.1)" (both bounded by the request's deadline), or "getaddrinfo" (no
 * asynchronous lookup found: unbounded). Decided once, at the first lookup or call. */
const char *ins_otlp_lookup_kind(void);

#endif
