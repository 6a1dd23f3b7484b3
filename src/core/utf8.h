/* SPDX-License-Identifier: Apache-2.0 */
/*
 * utf8.h - making byte strings from NCCL and the environment safe to print.
 *
 * Communicator names, host names, cluster names and NCCL's own strings are
 * byte strings: nothing promises they are UTF-8. A JSON line or a Prometheus
 * label value that holds an invalid sequence is rejected whole by parsers
 * (promtool: "invalid label value"), so every writer of text goes through
 * these: an invalid sequence becomes U+FFFD (the Unicode replacement
 * character) in output files, or visible \xNN escapes in log messages, and a string
 * cut to fit a buffer is cut between characters, never inside one.
 *
 * Valid means RFC 3629: no overlong forms, no surrogates (U+D800..DFFF),
 * nothing above U+10FFFF.
 */
#ifndef INS_UTF8_H
#define INS_UTF8_H

#include <stddef.h>

/* The UTF-8 encoding of U+FFFD, what an invalid byte becomes in output. */
#define INS_UTF8_REPLACEMENT "\xEF\xBF\xBD"

/* Length (1-4) of the valid UTF-8 character that starts at s (n > 0 bytes
 * available), or 0 if the bytes there are not one. */
size_t ins_utf8_char_len(const unsigned char *s, size_t n);

/* Where s does not start a valid character: how many bytes one U+FFFD stands
 * for (1-3): the "maximal subpart" of Unicode's recommended practice (section
 * 3.9, U+FFFD substitution), which Python's and browsers' decoders follow: a
 * valid start of a sequence cut short is one replacement, any other byte one. */
size_t ins_utf8_invalid_len(const unsigned char *s, size_t n);

/* What an output format writes for an ASCII byte c: NULL for the byte itself, or its
 * escape (written into tmp, at least 8 bytes, or a constant). */
typedef const char *(*ins_utf8_escape_fn)(unsigned char c, char *tmp);

/* The one walk every writer of text uses: src (NUL-terminated; NULL reads as "") into
 * dst of cap > 0 bytes as valid UTF-8, ASCII bytes through `escape` (NULL: none), each
 * invalid sequence as U+FFFD, or with hex_invalid each of its bytes as \xNN (log
 * messages show what the bytes were). Stops before the first piece (a character or an
 * escape) that does not fit, never inside one. Always NUL-terminates; returns the
 * length written. */
size_t ins_utf8_escape(char *dst, size_t cap, const char *src, ins_utf8_escape_fn escape,
                       int hex_invalid);

/* ins_utf8_escape with no escapes: the text as valid UTF-8. */
static inline size_t ins_utf8_clean(char *dst, size_t cap, const char *src) {
  return ins_utf8_escape(dst, cap, src, NULL, 0);
}

/* The escapes of a JSON string's content (", \, control characters as \u00XX). */
const char *ins_utf8_json_escape(unsigned char c, char *tmp);

#endif
