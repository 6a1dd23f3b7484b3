/* SPDX-License-Identifier: Apache-2.0 */
/*
 * redact.h - what a message may show of text that may hold a credential: the one
 * place the rules are written. Every message that shows text the plugin did not
 * write itself (a variable's value, a collector's answer, an endpoint's host) goes
 * through one of these; an endpoint URL's structure is net/url.h's
 * (ins_net_url_shown), which asks ins_redact_looks_secret about its host.
 *
 * The rule, when in doubt: show less. A word is shown only when nothing about it
 * suggests a credential: its shape (a long run of letters and digits, a UUID),
 * a credential's keyword (authorization, bearer, basic, token, ...: what follows one is
 * never shown), characters a credential is written with ('=', '/', '+', ':'
 * inside, '@'), or a match with a secret the caller knows (the headers it sends).
 * What is withheld reads "***". Pure: no allocation, no logging.
 */
#ifndef INS_REDACT_H
#define INS_REDACT_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the n bytes of w are shaped like a credential: a keyword of one (auth,
 * bearer, token, secret, passw, key, ...; any case), a UUID, or a part (between
 * '.', '-' and '_') of 16 characters or more with a digit in it, or of 32 or more. Host
 * names ("otel-collector.monitoring.svc", "ip-10-0-0-1.ec2.internal") are not. */
bool ins_redact_looks_secret(const char *w, size_t n);

/* Free text from outside (a collector's message: it may echo what we sent) into out
 * (cap bytes), word by word: a word is kept only when it is plain (letters, digits,
 * inner '-', '_', '.', '\'', at most 40 bytes, punctuation around it), not shaped like a
 * credential, and holds no part of known (text whose every word is secret, such as the
 * request's extra "Name: value" header lines; NULL for none). Others read "***"; after a
 * credential's keyword nothing more is shown. Blanks become one space; cut to cap with
 * "..." at the end. Returns out. */
const char *ins_redact_text(char *out, size_t cap, const char *text, size_t n, const char *known);

/* A variable's value (n bytes) for a warning: the value in single quotes when it is at
 * most 32 bytes and every word of it (between spaces) would be shown by ins_redact_text,
 * else "(N bytes, not shown)". For settings whose values are numbers or words: a wrong
 * value is shown, a credential pasted into the wrong variable is not. Returns out. */
const char *ins_redact_value(char *out, size_t cap, const char *value, size_t n);
#define INS_REDACT_VALUE_SHOWN 48 /* a buffer for ins_redact_value */

#endif
