/* SPDX-License-Identifier: Apache-2.0 */
/*
 * utf8.c - UTF-8 validation and cleaning (see utf8.h).
 */
#include "core/utf8.h"

#include <assert.h>
#include <string.h>

/* The bytes a character starting with lead c must have: its length, and the
 * range of its second byte (the rest are 80..BF). 0: c starts none. */
static size_t expected_len(unsigned char c, unsigned char *lo, unsigned char *hi) {
  *lo = 0x80, *hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) {
    if (c == 0xE0) *lo = 0xA0;      /* overlong below U+0800 */
    else if (c == 0xED) *hi = 0x9F; /* surrogates */
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (c == 0xF0) *lo = 0x90;      /* overlong below U+10000 */
    else if (c == 0xF4) *hi = 0x8F; /* above U+10FFFF */
    return 4;
  }
  return 0; /* a continuation byte, C0/C1 (overlong ASCII), or F5..FF */
}

/* How many bytes from s (at most len) fit the pattern of a sequence of len. */
static size_t matching(const unsigned char *s, size_t n, size_t len, unsigned char lo,
                       unsigned char hi) {
  size_t i = 1;
  if (i < n && i < len && s[1] >= lo && s[1] <= hi)
    for (i = 2; i < n && i < len && s[i] >= 0x80 && s[i] <= 0xBF; i++) {}
  return i;
}

size_t ins_utf8_char_len(const unsigned char *s, size_t n) {
  assert(n > 0);
  if (s[0] < 0x80) return 1;
  unsigned char lo, hi;
  size_t len = expected_len(s[0], &lo, &hi);
  return len && matching(s, n, len, lo, hi) == len ? len : 0;
}

size_t ins_utf8_invalid_len(const unsigned char *s, size_t n) {
  assert(n > 0 && ins_utf8_char_len(s, n) == 0);
  unsigned char lo, hi;
  size_t len = expected_len(s[0], &lo, &hi);
  return len ? matching(s, n, len, lo, hi) : 1;
}

static const char k_hex[] = "0123456789abcdef";

size_t ins_utf8_escape(char *dst, size_t cap, const char *src, ins_utf8_escape_fn escape,
                       int hex_invalid) {
  assert(cap > 0);
  const unsigned char *s = (const unsigned char *)(src ? src : "");
  size_t n = strlen((const char *)s), o = 0;
  char tmp[8];
  while (n) {
    size_t len = ins_utf8_char_len(s, n); /* bytes of src this piece stands for */
    const char *piece = (const char *)s;
    size_t plen = len;
    const char *esc = len == 1 && escape ? escape(*s, tmp) : NULL;
    if (esc) {
      piece = esc, plen = strlen(esc);
    } else if (len) {
      /* a valid character, as it is */
    } else if (hex_invalid) { /* one byte at a time, each visible */
      tmp[0] = '\\', tmp[1] = 'x', tmp[2] = k_hex[*s >> 4], tmp[3] = k_hex[*s & 15];
      piece = tmp, plen = 4, len = 1;
    } else {
      piece = INS_UTF8_REPLACEMENT, plen = sizeof INS_UTF8_REPLACEMENT - 1;
      len = ins_utf8_invalid_len(s, n);
    }
    if (o + plen >= cap) break; /* never cut a character or an escape: stop before it */
    memcpy(dst + o, piece, plen);
    o += plen;
    s += len;
    n -= len;
  }
  dst[o] = '\0';
  return o;
}

const char *ins_utf8_json_escape(unsigned char c, char *tmp) {
  if (c == '"') return "\\\"";
  if (c == '\\') return "\\\\";
  if (c >= 0x20) return NULL;
  memcpy(tmp, "\\u00", 4);
  tmp[4] = k_hex[c >> 4], tmp[5] = k_hex[c & 15], tmp[6] = '\0';
  return tmp;
}
