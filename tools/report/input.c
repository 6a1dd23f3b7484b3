/* SPDX-License-Identifier: Apache-2.0 */
/*
 * input.c - files, units of work and the reading threads (see input.h).
 *
 * A unit is a whole file or a chunk of a plain one. Threads take units from a
 * shared counter, largest first (so that one big file is not left for last),
 * and feed lines to their own accumulator (acc.h). The main thread only
 * waits and prints progress. Line numbers in messages are made whole after the
 * read: each chunk counts its own lines, and a chunk's first line number is
 * the sum of the line counts of the file's earlier chunks.
 *
 * Plain files are mapped (mmap) rather than read: the scanner walks the
 * page cache directly, with no copy; gzip files are inflated by zlib into a
 * buffer, a line carried over between buffers. A stream (a named pipe, or the
 * /dev/fd/N of a shell's <(...), named on the command line) has no size and can
 * be read once only: it is one unit, read through zlib as well (which passes
 * bytes that are not gzip through unchanged), and nothing peeks at it before.
 *
 * Nothing found by walking a directory may block the report: only regular files
 * are read from a walk (a FIFO there has no writer, as often as not), each opened
 * O_NONBLOCK and checked again through its descriptor.
 *
 * The same log is read once (drop_duplicates), however often it is reached:
 *  - the same file: the same (device, inode), whatever the path (named twice,
 *    found in a walk and named, a symbolic or hard link, a directory given twice);
 *  - the same log in another file (a copied folder, a .log beside its .log.gz):
 *    the same first line, byte for byte, when that line is a record, stats or hang line
 *    (a hung job's first line can be its first hang line) that names its process
 *    (hostname and pid). A process writes one log, and its
 *    first line also holds the dump's wall-clock time in us and the first record's
 *    communicator, sequence number and times: another process (another host, or a
 *    restart that got the same pid) starts its log with another line. A line that
 *    names no process (hand-made logs) gives no identity: only the file's does.
 * Of one log's files the one with the most content is read (a copy taken while the
 * job ran is a prefix of the log; gzip's size is its trailer's, modulo 4 GiB), plain
 * before gzip when equal (a plain file is read in parallel chunks), then the first
 * named. The others are skipped, named in one warning with the file each repeats,
 * and counted (job.duplicates). A stream has no content to look at before it is read:
 * only its file identity counts (the same FIFO named twice would wait for a second
 * writer forever).
 */
#include "input.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "acc.h"
#include "../common/xalloc.h"

/* Plain files are split into units of this size; INSPECTOR_REPORT_CHUNK_BYTES overrides it
 * so that the tests can split small files (chunk edges, line numbers across chunks). */
#define CHUNK (16u << 20)
static uint64_t g_chunk = CHUNK;
#define GZ_BUF RPT_LINE_MAX /* a stream's (or gzip file's) line buffer */
#define SHOW_BAD_LINES 10

struct file {
  char *path;
  uint64_t size;
  bool gz;
  bool stream; /* not a regular file: read once, through zlib, size unknown (0) */
  dev_t dev;   /* the file's identity (stat, links followed) */
  ino_t ino;
  char *first;      /* its first line when that names its process (the log's identity), or NULL */
  uint64_t content; /* bytes of log it holds: plain, its size; gzip, its trailer's ISIZE */
  int order;        /* the order it was added in (command line, then walk) */
};

/* The first line is looked for in this many bytes at a file's start: a record line is
 * under 1 KiB (its strings are bounded: comm name, host name, op). */
#define FIRST_MAX 8192

struct unit {
  int file;
  uint64_t off, len; /* plain: the bytes whose lines start here; gz: the whole file */
  uint64_t lines;    /* lines starting in the unit (set by the reader) */
  bool opened;       /* read (or at least tried) */
};

static struct file *g_files;
static int g_nfiles, g_cfiles;
static struct unit *g_units;
static int g_nunits;
static atomic_int g_next_unit;
static _Atomic uint64_t g_bytes_done, g_records_seen;
static _Atomic uint64_t g_stream_bytes; /* read from streams, whose size was not known */
/* The main thread sleeps on this between progress lines; the last worker wakes it. */
static pthread_mutex_t g_done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_done_cond = PTHREAD_COND_INITIALIZER;
static int g_workers_done;

static bool is_log_name(const char *name) {
  static const char *const ends[] = {".log", ".jsonl", ".log.gz", ".jsonl.gz"};
  size_t n = strlen(name);
  for (size_t i = 0; i < sizeof ends / sizeof *ends; i++) {
    size_t k = strlen(ends[i]);
    if (n > k && !strcmp(name + n - k, ends[i])) return true;
  }
  return false;
}

/* The first non-blank line of buf[0..n) (eof: n is the whole file), as a string, when it is an
 * Inspector record or stats line naming its process; else NULL. */
static char *identity_line(const char *buf, size_t n, bool eof) {
  size_t p = 0;
  while (p < n) {
    const char *nl = memchr(buf + p, '\n', n - p);
    if (!nl && !eof) return NULL; /* longer than FIRST_MAX: no identity */
    size_t end = nl ? (size_t)(nl - buf) : n, len = end - p;
    struct rpt_line l;
    enum rpt_kind k = rpt_parse_line(buf + p, len, &l);
    if (k != RPT_BLANK) {
      bool inspector = k == RPT_RECORD || k == RPT_STATS || k == RPT_HANG || k == RPT_HANG_RESOLVED || k == RPT_IDLE;
      if (!inspector || !l.hdr.host[0] || l.hdr.pid < 0) return NULL;
      char *s = malloc(len + 1);
      if (!s) {
        fprintf(stderr, "inspector-report: out of memory\n");
        exit(1);
      }
      memcpy(s, buf + p, len);
      s[len] = '\0';
      return s;
    }
    p = end + 1;
  }
  return NULL;
}

/* f's identity line and content size, from its open descriptor (a regular file). */
static void read_identity(struct file *f, int fd, const struct stat *st) {
  char *buf = malloc(FIRST_MAX);
  if (!buf) {
    fprintf(stderr, "inspector-report: out of memory\n");
    exit(1);
  }
  ssize_t n = -1;
  f->content = (uint64_t)st->st_size;
  if (!f->gz) {
    n = pread(fd, buf, FIRST_MAX, 0);
  } else {
    unsigned char t[4]; /* ISIZE: the uncompressed size modulo 2^32, little-endian */
    if (st->st_size >= 18 && pread(fd, t, 4, st->st_size - 4) == 4)
      f->content = (uint64_t)t[0] | (uint64_t)t[1] << 8 | (uint64_t)t[2] << 16 | (uint64_t)t[3] << 24;
    int zfd = dup(fd);
    gzFile z = zfd >= 0 && lseek(zfd, 0, SEEK_SET) == 0 ? gzdopen(zfd, "rb") : NULL;
    if (z) {
      n = gzread(z, buf, FIRST_MAX);
      gzclose(z);
    } else if (zfd >= 0) {
      close(zfd);
    }
  }
  if (n > 0) f->first = identity_line(buf, (size_t)n, n < FIRST_MAX);
  free(buf);
}

static void add_file(const char *path, const struct stat *st, bool stream) {
  if (g_nfiles == g_cfiles) {
    g_cfiles = g_cfiles ? 2 * g_cfiles : 64;
    g_files = realloc(g_files, (size_t)g_cfiles * sizeof *g_files);
  }
  char *p = g_files ? strdup(path) : NULL;
  if (!p) {
    fprintf(stderr, "inspector-report: out of memory\n");
    exit(1);
  }
  struct file *f = &g_files[g_nfiles];
  *f = (struct file){.path = p, .size = stream ? 0 : (uint64_t)st->st_size, .stream = stream, .dev = st->st_dev,
                     .ino = st->st_ino, .order = g_nfiles};
  /* gzip by content, not by name: a renamed .gz is still read (a stream is not
   * peeked at: what is read from it is gone; zlib tells gzip from plain there) */
  int fd = stream ? -1 : open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd >= 0) {
    unsigned char m[2];
    struct stat fst;
    if (fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode)) {
      f->gz = read(fd, m, 2) == 2 && m[0] == 0x1f && m[1] == 0x8b;
      read_identity(f, fd, &fst);
    }
    close(fd);
  }
  g_nfiles++;
}

/* What a walk left out, said once per directory named on the command line. */
struct walk_skips {
  long deep;     /* directories more than WALK_DEPTH levels below it */
  long too_long; /* entries whose path does not fit WALK_PATH */
};

/* A job's logs lie a few levels deep; the bound keeps a pathological tree (or a loop
 * through bind mounts) from exhausting the stack or descriptors: 64 open directories,
 * 4 KB of stack each, at most. What lies deeper is counted and said, never dropped
 * silently. */
#define WALK_DEPTH 64
#define WALK_PATH 4096 /* bytes of a path, its NUL included */

static const char *special_kind(mode_t m) {
  if (S_ISFIFO(m)) return "a named pipe (FIFO)";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
  return NULL;
}

static void walk(const char *path, int depth, struct walk_skips *ws) {
  DIR *d = opendir(path);
  if (!d) {
    fprintf(stderr, "inspector-report: %s: %s\n", path, strerror(errno));
    return;
  }
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char p[WALK_PATH];
    if (snprintf(p, sizeof p, "%s/%s", path, e->d_name) >= (int)sizeof p) {
      ws->too_long++;
      continue;
    }
    struct stat st;
    if (lstat(p, &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (depth < WALK_DEPTH) walk(p, depth + 1, ws);
      else ws->deep++;
      continue;
    }
    if (!is_log_name(e->d_name)) continue;
    if (S_ISLNK(st.st_mode) && stat(p, &st) != 0) continue; /* a dangling link */
    const char *special = special_kind(st.st_mode);
    if (S_ISREG(st.st_mode))
      add_file(p, &st, false);
    else if (special) /* a FIFO with no writer would block the report forever */
      fprintf(stderr, "inspector-report: %s: skipped: %s, not a regular file (name it on the command line to "
                      "read it as a stream)\n", p, special);
  }
  closedir(d);
}

int rpt_input_add(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "inspector-report: %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) {
    /* named on purpose: a regular file is mapped; anything else (a named pipe, the
     * /dev/fd/N of <(...), a terminal) is read to its end as a stream */
    add_file(path, &st, !S_ISREG(st.st_mode));
    return 0;
  }
  int before = g_nfiles;
  struct walk_skips ws = {0, 0};
  walk(path, 0, &ws);
  if (ws.deep)
    fprintf(stderr, "inspector-report: %s: %ld director%s more than %d levels below it not read: logs in them are "
                    "not in this report\n", path, ws.deep, ws.deep == 1 ? "y" : "ies", WALK_DEPTH);
  if (ws.too_long)
    fprintf(stderr, "inspector-report: %s: %ld entr%s with a path longer than %d bytes not read\n", path,
            ws.too_long, ws.too_long == 1 ? "y" : "ies", WALK_PATH - 1);
  if (g_nfiles == before) {
    fprintf(stderr, "inspector-report: %s: no .log or .jsonl files (plain or .gz) under this directory\n", path);
    return -1;
  }
  return 0;
}

/* ---- the same log twice -------------------------------------------------- */

#define SHOW_DUPLICATES 10

static int cmp_identity(const void *x, const void *y) {
  const struct file *a = &g_files[*(const int *)x], *b = &g_files[*(const int *)y];
  if (a->dev != b->dev) return a->dev < b->dev ? -1 : 1;
  if (a->ino != b->ino) return a->ino < b->ino ? -1 : 1;
  return a->order - b->order;
}

/* By first line; of one line's files the one to read first (see the top). */
static int cmp_first(const void *x, const void *y) {
  const struct file *a = &g_files[*(const int *)x], *b = &g_files[*(const int *)y];
  int s = strcmp(a->first, b->first);
  if (s) return s;
  if (a->content != b->content) return a->content > b->content ? -1 : 1;
  if (a->gz != b->gz) return a->gz ? 1 : -1;
  return a->order - b->order;
}

/* Skips every file that repeats another's log (see the top); returns how many. */
static long drop_duplicates(void) {
  int n = g_nfiles;
  size_t cap = (size_t)(n ? n : 1);
  int *ix = malloc(cap * sizeof *ix), *dup_of = malloc(cap * sizeof *dup_of);
  bool *same_file = calloc(cap, sizeof *same_file);
  if (!ix || !dup_of || !same_file) {
    fprintf(stderr, "inspector-report: out of memory\n");
    exit(1);
  }
  long dups = 0;
  for (int i = 0; i < n; i++) ix[i] = i, dup_of[i] = -1;
  qsort(ix, (size_t)n, sizeof *ix, cmp_identity);
  for (int i = 1; i < n; i++) {
    const struct file *a = &g_files[ix[i - 1]], *b = &g_files[ix[i]];
    if (a->dev == b->dev && a->ino == b->ino) {
      dup_of[ix[i]] = dup_of[ix[i - 1]] >= 0 ? dup_of[ix[i - 1]] : ix[i - 1];
      same_file[ix[i]] = true;
      dups++;
    }
  }
  int m = 0;
  for (int i = 0; i < n; i++)
    if (dup_of[i] < 0 && g_files[i].first) ix[m++] = i;
  qsort(ix, (size_t)m, sizeof *ix, cmp_first);
  for (int i = 1, keep = m ? ix[0] : -1; i < m; i++) {
    if (strcmp(g_files[keep].first, g_files[ix[i]].first)) {
      keep = ix[i];
      continue;
    }
    dup_of[ix[i]] = keep;
    dups++;
  }
  /* the kept one of a file's other paths may itself repeat another log */
  for (int i = 0; i < n; i++)
    if (same_file[i] && dup_of[dup_of[i]] >= 0) dup_of[i] = dup_of[dup_of[i]];
  if (dups) {
    fprintf(stderr, "inspector-report: %ld file%s skipped: the same log as another input (each log is read once)\n",
            dups, dups == 1 ? "" : "s");
    long shown = 0;
    for (int i = 0; i < n && shown < SHOW_DUPLICATES; i++) {
      if (dup_of[i] < 0) continue;
      const struct file *k = &g_files[dup_of[i]];
      if (same_file[i] && !strcmp(g_files[i].path, k->path))
        fprintf(stderr, "inspector-report:   %s: named twice\n", g_files[i].path);
      else if (same_file[i] && k->dev == g_files[i].dev && k->ino == g_files[i].ino)
        fprintf(stderr, "inspector-report:   %s: the same file as %s\n", g_files[i].path, k->path);
      else
        fprintf(stderr, "inspector-report:   %s: a copy of %s (the same first line)\n", g_files[i].path, k->path);
      shown++;
    }
    if (dups > shown) fprintf(stderr, "inspector-report:   and %ld more\n", dups - shown);
  }
  /* keep the others, in their order */
  int w = 0;
  for (int i = 0; i < n; i++) {
    if (dup_of[i] >= 0) {
      free(g_files[i].path);
      free(g_files[i].first);
    } else {
      g_files[w++] = g_files[i];
    }
  }
  g_nfiles = w;
  free(ix);
  free(dup_of);
  free(same_file);
  return dups;
}

/* ---- reading ------------------------------------------------------------- */

struct worker {
  pthread_t tid;
  struct rpt_acc *acc;
};

/* Feeds the lines that start in [lo, hi) of a mapped file (the last may run past hi). */
uint64_t rpt_input_feed_mapped(struct rpt_acc *acc, int unit, const char *base, uint64_t size, uint64_t lo,
                               uint64_t hi) {
  uint64_t p = lo, lines = 0;
  if (lo > 0) { /* the line that holds byte lo - 1 belongs to the previous chunk */
    /* its end looked for in this chunk only: a line that spans it starts in none of its
     * bytes (a 4 GiB line once made each of its 256 chunks read on to its end) */
    const char *nl = memchr(base + lo - 1, '\n', (hi < size ? hi : size) - (lo - 1));
    p = nl ? (uint64_t)(nl - base) + 1 : hi;
  }
  uint64_t reported = p;
  while (p < hi && p < size) {
    const char *nl = memchr(base + p, '\n', size - p);
    uint64_t end = nl ? (uint64_t)(nl - base) : size;
    rpt_acc_line(acc, base + p, end - p, unit, ++lines);
    p = end + 1;
    if (p - reported >= (1u << 20)) {
      atomic_fetch_add_explicit(&g_bytes_done, p - reported, memory_order_relaxed);
      reported = p;
    }
  }
  if (p > reported) atomic_fetch_add_explicit(&g_bytes_done, (p < size ? p : size) - reported, memory_order_relaxed);
  return lines;
}

static void read_plain(struct rpt_acc *acc, int ui) {
  struct unit *u = &g_units[ui];
  const struct file *f = &g_files[u->file];
  if (f->size == 0) return;
  int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    fprintf(stderr, "inspector-report: cannot open %s: %s\n", f->path, strerror(errno));
    return;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) { /* replaced since it was listed */
    fprintf(stderr, "inspector-report: %s: no longer a regular file: skipped\n", f->path);
    close(fd);
    return;
  }
  void *m = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (m == MAP_FAILED) {
    fprintf(stderr, "inspector-report: cannot map %s: %s\n", f->path, strerror(errno));
    return;
  }
  madvise(m, f->size, MADV_SEQUENTIAL);
  u->lines = rpt_input_feed_mapped(acc, ui, m, f->size, u->off, u->off + u->len);
  munmap(m, f->size);
}

/* A gzip file, or a stream (gzip or not: zlib passes plain bytes through). A stream's
 * open waits for a writer when it is a named pipe: it was named on the command line. */
static void read_gz(struct rpt_acc *acc, int ui) {
  struct unit *u = &g_units[ui];
  const struct file *f = &g_files[u->file];
  int fd = open(f->path, O_RDONLY | O_CLOEXEC | (f->stream ? 0 : O_NONBLOCK));
  if (fd < 0) {
    fprintf(stderr, "inspector-report: cannot open %s: %s\n", f->path, strerror(errno));
    return;
  }
  struct stat st;
  if (!f->stream && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    fprintf(stderr, "inspector-report: %s: no longer a regular file: skipped\n", f->path);
    close(fd);
    return;
  }
  gzFile z = gzdopen(fd, "rb");
  if (!z) {
    close(fd);
    fprintf(stderr, "inspector-report: cannot open %s: out of memory\n", f->path);
    return;
  }
  gzbuffer(z, 1 << 17);
  /* A line is kept whole in buf (GZ_BUF, RPT_LINE_MAX bytes): one that fills it is too
   * long for an Inspector line and is skipped to its newline, counted, never kept. */
  char *buf = malloc(GZ_BUF);
  if (!buf) {
    fprintf(stderr, "inspector-report: out of memory\n");
    exit(1);
  }
  size_t have = 0;
  uint64_t lines = 0, skipping = 0; /* skipping: bytes of a too-long line read so far */
  z_off_t reported = 0;
  for (;;) {
    int got = gzread(z, buf + have, (unsigned)(GZ_BUF - have));
    if (got <= 0) break;
    have += (size_t)got;
    if (f->stream) atomic_fetch_add_explicit(&g_stream_bytes, (uint64_t)got, memory_order_relaxed);
    size_t p = 0;
    if (skipping) {
      char *nl = memchr(buf, '\n', have);
      p = nl ? (size_t)(nl - buf) : have;
      skipping += p;
      if (nl) {
        rpt_acc_long_line(acc, skipping, ui, ++lines);
        skipping = 0;
        p++;
      }
    }
    for (;;) {
      char *nl = memchr(buf + p, '\n', have - p);
      if (!nl) break;
      rpt_acc_line(acc, buf + p, (size_t)(nl - (buf + p)), ui, ++lines);
      p = (size_t)(nl - buf) + 1;
    }
    memmove(buf, buf + p, have - p);
    have -= p;
    if (have == GZ_BUF) skipping = have, have = 0; /* RPT_LINE_MAX bytes and no newline yet */
    z_off_t off = gzoffset(z);
    if (off > reported) {
      atomic_fetch_add_explicit(&g_bytes_done, (uint64_t)(off - reported), memory_order_relaxed);
      reported = off;
    }
  }
  /* the last line had no newline */
  if (skipping) rpt_acc_long_line(acc, skipping, ui, ++lines);
  else if (have) rpt_acc_line(acc, buf, have, ui, ++lines);
  int zerr = 0;
  const char *msg = gzerror(z, &zerr);
  if (zerr != Z_OK && zerr != Z_STREAM_END) /* a truncated .gz: what was read counts */
    fprintf(stderr, "inspector-report: %s: %s after line %llu\n", f->path, msg, (unsigned long long)lines);
  gzclose(z);
  free(buf);
  u->lines = lines;
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  for (;;) {
    int ui = atomic_fetch_add(&g_next_unit, 1);
    if (ui >= g_nunits) break;
    g_units[ui].opened = true;
    uint64_t before = rpt_acc_records(w->acc);
    if (g_files[g_units[ui].file].gz || g_files[g_units[ui].file].stream) read_gz(w->acc, ui);
    else read_plain(w->acc, ui);
    atomic_fetch_add_explicit(&g_records_seen, rpt_acc_records(w->acc) - before, memory_order_relaxed);
  }
  pthread_mutex_lock(&g_done_lock);
  g_workers_done++;
  pthread_cond_signal(&g_done_cond);
  pthread_mutex_unlock(&g_done_lock);
  return NULL;
}

static int cmp_unit_size(const void *x, const void *y) {
  const struct unit *a = x, *b = y;
  if (a->len != b->len) return a->len > b->len ? -1 : 1;
  if (a->file != b->file) return a->file - b->file;
  return a->off < b->off ? -1 : a->off > b->off;
}

static int cmp_unit_pos(const void *x, const void *y) {
  const struct unit *a = x, *b = y;
  if (a->file != b->file) return a->file - b->file;
  return a->off < b->off ? -1 : a->off > b->off;
}

/* A file's chunk: g_chunk, or larger so that no file has more than this many (a unit is
 * named by an int; with 16 MiB chunks, a file of 16 TiB). */
#define UNITS_PER_FILE (1u << 20)
static uint64_t chunk_of(const struct file *f) {
  return f->size / g_chunk < UNITS_PER_FILE ? g_chunk : f->size / UNITS_PER_FILE + 1;
}

static void make_units(void) {
  const char *env = getenv("INSPECTOR_REPORT_CHUNK_BYTES");
  if (env && atoll(env) > 0) g_chunk = (uint64_t)atoll(env);
  uint64_t cap = 0;
  for (int i = 0; i < g_nfiles; i++)
    cap += g_files[i].gz || g_files[i].stream ? 1 : g_files[i].size / chunk_of(&g_files[i]) + 1;
  if (cap > INT_MAX) {
    fprintf(stderr, "inspector-report: too many inputs: %llu units of work\n", (unsigned long long)cap);
    exit(1);
  }
  g_units = calloc((size_t)cap, sizeof *g_units);
  if (!g_units && cap) {
    fprintf(stderr, "inspector-report: out of memory\n");
    exit(1);
  }
  for (int i = 0; i < g_nfiles; i++) {
    if (g_files[i].gz || g_files[i].stream) {
      g_units[g_nunits++] = (struct unit){.file = i, .off = 0, .len = g_files[i].size};
      continue;
    }
    uint64_t off = 0, chunk = chunk_of(&g_files[i]);
    do {
      uint64_t len = g_files[i].size - off < chunk ? g_files[i].size - off : chunk;
      g_units[g_nunits++] = (struct unit){.file = i, .off = off, .len = len};
      off += len;
    } while (off < g_files[i].size);
  }
  if (g_nunits) qsort(g_units, (size_t)g_nunits, sizeof *g_units, cmp_unit_size);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct bad_ref {
  int file;
  uint64_t lineno;
  const char *why;
};

static int cmp_bad(const void *x, const void *y) {
  const struct bad_ref *a = x, *b = y;
  if (a->file != b->file) return a->file - b->file;
  return a->lineno < b->lineno ? -1 : a->lineno > b->lineno;
}

static int cmp_unit_index(const void *x, const void *y) {
  return cmp_unit_pos(&g_units[*(const int *)x], &g_units[*(const int *)y]);
}

/* The first few bad lines in file order, with whole-file line numbers. */
static void show_bad_lines(struct worker *w, int nw) {
  /* a unit's first line number within its file: units sorted by position, summed per file
   * (a sort, not a search per unit: a file cut in many chunks made that quadratic) */
  int *idx = malloc((size_t)g_nunits * sizeof *idx), *order = malloc((size_t)g_nunits * sizeof *order);
  uint64_t *first = malloc((size_t)g_nunits * sizeof *first);
  if (!idx || !first || !order) xalloc_die();
  for (int k = 0; k < g_nunits; k++) idx[k] = k;
  qsort(idx, (size_t)g_nunits, sizeof *idx, cmp_unit_index);
  for (int i = 0; i < g_nunits; i++) {
    const struct unit *u = &g_units[idx[i]], *prev = i > 0 ? &g_units[idx[i - 1]] : NULL;
    first[i] = prev && prev->file == u->file ? first[i - 1] + prev->lines : 0;
    order[idx[i]] = i;
  }
  size_t nb = 0, cb = 0;
  struct bad_ref *refs = NULL;
  for (int t = 0; t < nw; t++) {
    int n;
    const struct rpt_bad_line *b = rpt_acc_bad_lines(w[t].acc, &n);
    for (int i = 0; i < n; i++) {
      if (nb == cb) {
        cb = cb ? 2 * cb : 32;
        refs = realloc(refs, cb * sizeof *refs);
        if (!refs) xalloc_die();
      }
      refs[nb++] = (struct bad_ref){.file = g_units[b[i].unit].file,
                                    .lineno = first[order[b[i].unit]] + b[i].lineno, .why = b[i].why};
    }
  }
  if (nb) qsort(refs, nb, sizeof *refs, cmp_bad);
  for (size_t i = 0; i < nb && i < SHOW_BAD_LINES; i++)
    fprintf(stderr, "inspector-report: %s:%llu: %s\n", g_files[refs[i].file].path,
            (unsigned long long)refs[i].lineno, refs[i].why);
  free(refs);
  free(idx);
  free(first);
  free(order);
}

void rpt_input_read(struct rpt_job *j) {
  j->duplicates = drop_duplicates();
  make_units();
  int nw = j->opt.threads;
  if (nw > g_nunits) nw = g_nunits > 0 ? g_nunits : 1;
  struct worker *w = calloc((size_t)nw, sizeof *w);
  if (!w) xalloc_die();
  double t0 = now_s(), next = 1.0;
  uint64_t total = 0;
  for (int i = 0; i < g_nfiles; i++) total += g_files[i].size;
  int started = 0;
  for (int t = 0; t < nw; t++) {
    w[t].acc = rpt_acc_new(&j->opt, nw);
    if (pthread_create(&w[t].tid, NULL, worker_main, &w[t]) != 0) break;
    started++;
  }
  if (!started) worker_main(&w[0]); /* no thread could start: read here */
  bool said = false;
  pthread_mutex_lock(&g_done_lock);
  while (started && g_workers_done < started) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    pthread_cond_timedwait(&g_done_cond, &g_done_lock, &until);
    double t = now_s() - t0;
    if (g_workers_done < started && t >= next) {
      next = t + 1.0;
      said = true;
      fprintf(stderr, "inspector-report: reading: %.0f of %.0f MB (compressed sizes for .gz), %llu records, %.1f s\n",
              (double)atomic_load(&g_bytes_done) / 1e6, (double)total / 1e6,
              (unsigned long long)atomic_load(&g_records_seen), t);
    }
  }
  pthread_mutex_unlock(&g_done_lock);
  for (int t = 0; t < started; t++) pthread_join(w[t].tid, NULL);
  if (said)
    fprintf(stderr, "inspector-report: read %d files, %.1f MB, %llu records in %.1f s\n", g_nfiles,
            (double)(total + atomic_load(&g_stream_bytes)) / 1e6,
            (unsigned long long)atomic_load(&g_records_seen), now_s() - t0);
  show_bad_lines(w, started ? started : 1);
  j->files = g_nfiles;
  j->bytes_read = total + atomic_load(&g_stream_bytes);
  struct rpt_acc **accs = malloc((size_t)nw * sizeof *accs);
  if (!accs) xalloc_die();
  int na = started ? started : 1;
  for (int t = 0; t < na; t++) accs[t] = w[t].acc;
  for (int t = na; t < nw; t++) free(w[t].acc); /* never started */
  rpt_acc_merge(accs, na, j);
  free(accs);
  free(w);
  for (int i = 0; i < g_nfiles; i++) {
    free(g_files[i].path);
    free(g_files[i].first);
  }
  free(g_files);
  free(g_units);
}
