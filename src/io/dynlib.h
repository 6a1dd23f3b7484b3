/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dynlib.h - loading an optional library at run time: dlopen once per process,
 * then a table of its functions resolved into the caller's pointers, or a
 * reason naming the library and the first symbol it lacks. For the libraries
 * the plugin must never link (libcurl for https://, net/curl.c; zlib for the
 * OTLP exporter's gzip, sink/otlp/otlp_export.c): a job that does not use them
 * never loads them, and one whose machine lacks them gets a warning, not a
 * plugin that fails to load. In io/, below net/ and sink/; it uses nothing of
 * ours.
 *
 * The caller compiles against the library's own header and declares each
 * pointer from the header's prototype (`__typeof__(deflate) *deflate_fn;`);
 * INS_DYNLIB_SYM pairs the pointer with the function's name and refuses, at
 * compile time, a pointer of another type. So the header checks every call,
 * and the plugin still has no NEEDED entry for the library (nothing takes the
 * function's address: _Generic does not evaluate its controlling expression).
 */
#ifndef INS_DYNLIB_H
#define INS_DYNLIB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* One function to resolve: its exported name, and where its address goes (the address
 * of a function pointer of the function's own type, INS_DYNLIB_SYM). */
struct ins_dynlib_sym {
  const char *name;
  void *slot;
};

/* {name, &slot} for function fn; slot must be declared __typeof__(fn) * (anything else
 * has no _Generic association: a compile error). The name is fn as the header spells it
 * after its own macros (zlib built with Z_PREFIX exports deflate as z_deflate); a
 * function-like macro of the same name (curl's typecheck-gcc.h wraps curl_easy_setopt)
 * is not expanded, for no parenthesis follows it. */
#define INS_DYNLIB_SYM(fn, slot) {INS_DYNLIB_STR_(fn), _Generic(&(slot), __typeof__(fn) **: &(slot))}
#define INS_DYNLIB_STR_(fn) INS_DYNLIB_STR__(fn)
#define INS_DYNLIB_STR__(fn) #fn

/* A library's load state, one per library per process: static, INS_DYNLIB_INIT. */
struct ins_dynlib {
  pthread_mutex_t lock;
  bool ok; /* loaded, and every slot filled: the pointers are read-only from then on */
};
#define INS_DYNLIB_INIT {PTHREAD_MUTEX_INITIALIZER, false}

enum ins_dynlib_status {
  INS_DYNLIB_LOADED = 0,
  INS_DYNLIB_NO_LIBRARY, /* dlopen failed: "<lib> cannot be loaded" */
  INS_DYNLIB_NO_SYMBOL,  /* "<lib> has no <name>" (the first missing in the table) */
};

/* Loads lib (a file name for dlopen's search, or a path) and fills every slot of syms[n]:
 * once per process; after a success later calls return INS_DYNLIB_LOADED at once, whatever
 * lib they name. A failure is not remembered (the next call tries again) and leaves the
 * slots unusable; why (whylen bytes) then says what failed, naming lib. Thread-safe: the
 * slots are filled under d's lock, and a caller that got INS_DYNLIB_LOADED reads them after
 * it. The library stays loaded for good (RTLD_NODELETE): its threads (libcurl's resolver)
 * may outlive anything of ours, and must never find their code gone; RTLD_LOCAL keeps its
 * symbols from the job's own lookups; RTLD_NOW fails here rather than in a later call. */
enum ins_dynlib_status ins_dynlib_load(struct ins_dynlib *d, const char *lib, const struct ins_dynlib_sym *syms,
                                       size_t n, char *why, size_t whylen);

#endif
