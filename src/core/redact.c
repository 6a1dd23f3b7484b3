/* SPDX-License-Identifier: Apache-2.0 */
/*
 * redact.c - what a message may show of text that may hold a credential (see
 * redact.h).
 *
 * Why words, and why this strict: the text comes from outside (a collector's
 * error message may echo the Authorization header we sent it; a variable may hold
 * what was meant for another), and no rule can tell every credential from prose.
 * So a word must show that it is prose to be shown: letters and digits with a few
 * inner marks, short, no credential's shape or keyword, and no part of a secret the
 * caller knows. A message that loses a word to "***" loses little (the status code
 * and our own text say what happened); one that shows a token cannot be taken back,
 * and thousands of ranks write the same log.
 */
#include "core/redact.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define WORD_MAX 40    /* a longer word is not prose */
#define KNOWN_MIN 4    /* a known secret's part this long is looked for inside words */
#define PART_DIGIT 16  /* a part this long with a digit in it: a generated token */
#define PART_ANY 32    /* a part this long, whatever it holds */
#define VALUE_MAX 32   /* a variable's value longer than this is not shown */

/* Substrings that mark a credential, or the word that introduces one (any case). */
static const char *const k_keywords[] = {
    "auth", "bearer", "basic", "token", "secret", "passw", "pwd", "apikey", "api-key", "api_key",
    "cookie", "credential", "signature", "session", "private", "key",
};

static bool has_keyword(const char *w, size_t n) {
  for (size_t k = 0; k < sizeof k_keywords / sizeof *k_keywords; k++) {
    size_t kl = strlen(k_keywords[k]);
    for (size_t i = 0; i + kl <= n; i++)
      if (!strncasecmp(w + i, k_keywords[k], kl)) return true;
  }
  return false;
}

/* 8-4-4-4-12 hexadecimal digits: many services' API keys. */
static bool is_uuid(const char *w, size_t n) {
  if (n != 36) return false;
  for (size_t i = 0; i < n; i++) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? w[i] != '-' : !isxdigit((unsigned char)w[i])) return false;
  }
  return true;
}

bool ins_redact_looks_secret(const char *w, size_t n) {
  if (has_keyword(w, n) || is_uuid(w, n)) return true;
  /* parts between '.', '-' and '_': a host's labels, a sentence's hyphenated words */
  size_t len = 0;
  bool digit = false;
  for (size_t i = 0; i <= n; i++) {
    if (i == n || w[i] == '.' || w[i] == '-' || w[i] == '_') {
      if (len >= PART_ANY || (len >= PART_DIGIT && digit)) return true;
      len = 0, digit = false;
      continue;
    }
    len++;
    digit |= isdigit((unsigned char)w[i]) != 0;
  }
  return false;
}

/* Whether part p (pn bytes) of a known secret is in word w (n bytes): inside it when the
 * part is long enough to be told from prose, the whole word otherwise. */
static bool holds_part(const char *w, size_t n, const char *p, size_t pn) {
  if (pn < KNOWN_MIN) return pn == n && !strncasecmp(w, p, n);
  for (size_t i = 0; i + pn <= n; i++)
    if (!strncasecmp(w + i, p, pn)) return true;
  return false;
}

/* Whether word w holds any part of known: its pieces between blanks and the marks that
 * separate a header's name from its value or a list's entries. */
static bool holds_known(const char *w, size_t n, const char *known) {
  static const char sep[] = " \t\r\n:,;=";
  for (const char *p = known; p && *p;) {
    p += strspn(p, sep);
    size_t pn = strcspn(p, sep);
    if (pn && holds_part(w, n, p, pn)) return true;
    p += pn;
  }
  return false;
}

static bool plain_char(unsigned char ch) { return isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '\''; }

enum verdict { SHOW, HIDE, STOP };

/* A word (n bytes, no blank): shown, withheld, or a keyword after which nothing is
 * shown. Punctuation around it ("(x", "x,", "\"x\"", "x:") does not count against it. */
static enum verdict judge(const char *w, size_t n, const char *known) {
  size_t a = 0, b = n;
  while (a < b && strchr("(\"'[", w[a])) a++;
  while (b > a && strchr(",.;:!?)\"']", w[b - 1])) b--;
  if (has_keyword(w, n)) return STOP;
  if (b - a > WORD_MAX) return HIDE;
  for (size_t i = a; i < b; i++)
    if (!plain_char((unsigned char)w[i])) return HIDE;
  if (ins_redact_looks_secret(w + a, b - a) || holds_known(w + a, b - a, known)) return HIDE;
  return SHOW;
}

/* Appends n bytes of s to out (cap bytes, *o used) if they fit with room for "...";
 * false when they do not (the text is then cut). */
static bool put(char *out, size_t cap, size_t *o, const char *s, size_t n) {
  if (*o + n + 4 > cap) return false;
  memcpy(out + *o, s, n);
  *o += n;
  out[*o] = '\0';
  return true;
}

const char *ins_redact_text(char *out, size_t cap, const char *text, size_t n, const char *known) {
  if (!cap) return out;
  out[0] = '\0';
  if (cap < 8) return out; /* no room to say anything */
  size_t o = 0;
  bool hid_last = false, cut = false;
  for (size_t i = 0; i < n && !cut;) {
    while (i < n && (isspace((unsigned char)text[i]) || !text[i])) i++;
    size_t s = i;
    while (i < n && !isspace((unsigned char)text[i]) && text[i]) i++;
    if (i == s) break;
    enum verdict v = judge(text + s, i - s, known);
    if (v != SHOW && hid_last) { /* "***" once for a run of withheld words */
      if (v == STOP) break;
      continue;
    }
    if (o && !put(out, cap, &o, " ", 1)) cut = true;
    else if (v == SHOW ? !put(out, cap, &o, text + s, i - s) : !put(out, cap, &o, "***", 3)) cut = true;
    hid_last = v != SHOW;
    if (v == STOP) break;
  }
  if (cut) memcpy(out + o, "...", 4);
  return out;
}

const char *ins_redact_value(char *out, size_t cap, const char *value, size_t n) {
  if (!cap) return out;
  if (!value) n = 0;
  bool shown = n <= VALUE_MAX;
  for (size_t i = 0; shown && i < n;) { /* every word would be shown, and nothing else */
    while (i < n && value[i] == ' ') i++;
    size_t s = i;
    while (i < n && value[i] != ' ') i++;
    if (i > s && judge(value + s, i - s, NULL) != SHOW) shown = false;
  }
  if (shown) snprintf(out, cap, "'%.*s'", (int)n, value ? value : "");
  else snprintf(out, cap, "(%zu bytes, not shown)", n);
  return out;
}
