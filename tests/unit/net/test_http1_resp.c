/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_http1_resp.c - the HTTP/1.1 response parser (src/net/http1_resp.c), each answer fed
 * whole and then one byte at a time, for the same result: Content-Length, chunked (with an
 * extension and trailers), keep-alive by version and Connection, a body to the close, 204,
 * a close in the middle, malformed answers, endless headers refused, a large body kept in
 * part and consumed whole; interim (1xx) answers, INS_HTTP_RESP_MAX_INTERIM of them and no
 * more. No network. (Chunk sizes with hex letters are test_otlp_rules.c's; the connection's
 * use of the parser, test_http1_conn.c's.)
 *
 *   inspector-unit-http1_resp --list | --case NAME   (main: otlp_cases.h)
 */
#include <string.h>

#include "otlp_cases.h"
#include "net/http1_resp.h"

/* Feeds a whole response, then the same one byte at a time: the same result. */
static void parse_both_ways(const char *text, struct ins_http_resp *whole, struct ins_http_resp *bytes,
                            size_t *used_whole) {
  size_t n = strlen(text);
  ins_http_resp_init(whole);
  *used_whole = ins_http_resp_feed(whole, text, n);
  ins_http_resp_init(bytes);
  for (size_t i = 0; i < n && bytes->state != INS_RESP_DONE && bytes->state != INS_RESP_ERROR; i++)
    ins_http_resp_feed(bytes, text + i, 1);
}

static void case_response_parser(void) {
  static struct ins_http_resp w, b; /* 12 KiB each */
  size_t used;
  /* Content-Length, keep-alive (HTTP/1.1's default), Retry-After captured */
  const char *r503 = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 7\r\nContent-Length: 3\r\n\r\nabc";
  char with_extra[256];
  snprintf(with_extra, sizeof with_extra, "%sEXTRA", r503);
  parse_both_ways(with_extra, &w, &b, &used);
  CHECK(w.state == INS_RESP_DONE && b.state == INS_RESP_DONE);
  CHECK_EQ_U(w.status, 503);
  CHECK(w.keep_alive && b.keep_alive);
  CHECK_STR(w.retry_after, "7");
  CHECK_EQ_U(w.body_len, 3);
  CHECK(!memcmp(w.body, "abc", 3) && !memcmp(b.body, "abc", 3));
  CHECK_EQ_U(used, strlen(r503)); /* what follows the answer is not consumed */
  /* chunked, with an extension and trailers; Connection: close */
  parse_both_ways("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n"
                  "Content-Type: application/json\r\n\r\n"
                  "4;x=y\r\n{\"a\"\r\n2\r\n:1\r\n1\r\n}\r\n0\r\nT: v\r\n\r\n",
                  &w, &b, &used);
  CHECK(w.state == INS_RESP_DONE && b.state == INS_RESP_DONE);
  CHECK(w.chunked && !w.keep_alive);
  CHECK_STR(w.content_type, "application/json");
  CHECK_EQ_U(w.body_len, 7);
  CHECK(!memcmp(w.body, "{\"a\":1}", 7) && !memcmp(b.body, "{\"a\":1}", 7));
  /* an interim 100 Continue, then the answer; bare LF line ends */
  parse_both_ways("HTTP/1.1 100 Continue\n\nHTTP/1.1 400 Bad Request\nContent-Length: 0\n\n", &w, &b, &used);
  CHECK(w.state == INS_RESP_DONE && b.state == INS_RESP_DONE);
  CHECK_EQ_U(w.status, 400);
  /* HTTP/1.0: close unless keep-alive is said */
  parse_both_ways("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", &w, &b, &used);
  CHECK(w.state == INS_RESP_DONE && !w.keep_alive);
  parse_both_ways("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", &w, &b, &used);
  CHECK(w.state == INS_RESP_DONE && w.keep_alive);
  /* neither length nor chunked: the body ends with the connection */
  parse_both_ways("HTTP/1.1 200 OK\r\n\r\nxyz", &w, &b, &used);
  CHECK(w.state == INS_RESP_BODY_EOF && !w.keep_alive);
  ins_http_resp_eof(&w);
  CHECK(w.state == INS_RESP_DONE);
  CHECK_EQ_U(w.body_len, 3);
  /* 204: no body even without a length */
  parse_both_ways("HTTP/1.1 204 No Content\r\n\r\n", &w, &b, &used);
  CHECK(w.state == INS_RESP_DONE && w.keep_alive);
  /* a close in the middle is an error, not an answer */
  parse_both_ways("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", &w, &b, &used);
  ins_http_resp_eof(&w);
  CHECK(w.state == INS_RESP_ERROR);
  ins_http_resp_init(&w);
  ins_http_resp_eof(&w);
  CHECK(w.state == INS_RESP_ERROR);
  /* malformed */
  const char *bad[] = {"HTTP/2 200\r\n\r\n", "SSH-2.0-OpenSSH\r\n", "HTTP/1.1 20 OK\r\n\r\n",
                       "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
                       "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
                       "HTTP/1.1 101 Switching Protocols\r\n\r\n", "HTTP/1.1 200 OK\r\nnocolon\r\n\r\n"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    parse_both_ways(bad[i], &w, &b, &used);
    CHECK(w.state == INS_RESP_ERROR && b.state == INS_RESP_ERROR);
  }
  /* endless headers are refused, not buffered */
  ins_http_resp_init(&w);
  ins_http_resp_feed(&w, "HTTP/1.1 200 OK\r\n", 17);
  char line[1000];
  memset(line, 'a', sizeof line);
  memcpy(line, "X: ", 3);
  line[998] = '\r', line[999] = '\n';
  for (int i = 0; i < 100 && w.state != INS_RESP_ERROR; i++) ins_http_resp_feed(&w, line, sizeof line);
  CHECK(w.state == INS_RESP_ERROR);
  /* a large body: the start kept, all of it consumed */
  ins_http_resp_init(&w);
  const char *h = "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n";
  ins_http_resp_feed(&w, h, strlen(h));
  static char big[100000];
  memset(big, 'z', sizeof big);
  CHECK_EQ_U(ins_http_resp_feed(&w, big, sizeof big), sizeof big);
  CHECK(w.state == INS_RESP_DONE);
  CHECK_EQ_U(w.body_len, INS_HTTP_RESP_KEEP);
  CHECK_EQ_U(w.body_total, 100000);
}

/* Interim (1xx) answers are bounded: INS_HTTP_RESP_MAX_INTERIM of them, then the final
 * answer, parse; one more is an error (a server sending them without end would hold
 * the request for as long as it likes). */
static void case_interim_answers_bounded(void) {
  static struct ins_http_resp w, b;
  static char text[4096];
  size_t used, n = 0;
  for (int i = 0; i < INS_HTTP_RESP_MAX_INTERIM; i++)
    n += (size_t)snprintf(text + n, sizeof text - n, "HTTP/1.1 100 Continue\r\n\r\n");
  snprintf(text + n, sizeof text - n, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  parse_both_ways(text, &w, &b, &used);
  CHECK(w.state == INS_RESP_DONE && b.state == INS_RESP_DONE);
  CHECK_EQ_U(w.status, 200);
  CHECK_EQ_U(w.interim, INS_HTTP_RESP_MAX_INTERIM);
  n = 0;
  for (int i = 0; i < INS_HTTP_RESP_MAX_INTERIM + 1; i++)
    n += (size_t)snprintf(text + n, sizeof text - n, "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n");
  snprintf(text + n, sizeof text - n, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  parse_both_ways(text, &w, &b, &used);
  CHECK(w.state == INS_RESP_ERROR && b.state == INS_RESP_ERROR);
  CHECK(w.error && strstr(w.error, "interim"));
  /* the next response starts afresh */
  ins_http_resp_init(&w);
  CHECK_EQ_U(w.interim, 0);
}

static const struct otlp_case k_cases[] = {
    {"response_parser", case_response_parser, false},
    {"interim_answers_bounded", case_interim_answers_bounded, false},
};

int main(int argc, char **argv) {
  return otlp_cases_main(argc, argv, k_cases, sizeof k_cases / sizeof *k_cases, "http1_resp");
}
