/* SPDX-License-Identifier: Apache-2.0 */
/*
 * writer.c - lazily opened log file with kill-safe line layout (see writer.h),
 * closed (and its layout buffer freed) at library unload. A file that cannot be
 * made or written is a notice (core/log.h): no output, whatever NCCL_DEBUG says.
 */
#include "sink/json/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "io/files.h"
#include "sink/json/json.h"

#define PAGE INS_WRITER_PAGE

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_host[256];
static struct ins_files_dir g_dir; /* the dump directory, as first made (io/files.h) */
static int g_fd = -1;
static off_t g_off;    /* end of file: we are its only writer (we created it) */
static pid_t g_fd_pid; /* a forked child must not write to its parent's file */
static bool g_open_failed; /* the file could not be created: every later batch is lost */
static bool g_closed;      /* ins_writer_close: the library is going away */
static char *g_out;    /* layout buffer */
static size_t g_out_cap;
static atomic_int g_warned_write;
static char g_path[PATH_MAX + 320]; /* the open file's path: is it still there? (files.h) */
static atomic_int g_warned_gone;

void ins_writer_configure(const char *dir, const char *hostname) {
  pthread_mutex_lock(&g_lock);
  ins_files_dir_set(&g_dir, dir);
  snprintf(g_host, sizeof g_host, "%s", hostname);
  /* Made now, at the start, not at the first write (teardown, with the default interval):
   * what its path is now is what a making again is held to (io/files.h). Failing, it is
   * said by the dump layer's check, and tried again at the first write. */
  int fd = ins_files_dir_open(&g_dir, true);
  if (fd >= 0) close(fd);
  pthread_mutex_unlock(&g_lock);
}

size_t ins_writer_layout(const char *in, size_t len, size_t off, char *out, size_t cap,
                         size_t *pad_prev) {
  size_t o = 0;
  *pad_prev = 0;
  while (len) {
    const char *nl = memchr(in, '\n', len);
    size_t n = nl ? (size_t)(nl - in) + 1 : len;
    size_t pos = off + o, room = PAGE - pos % PAGE;
    if (n > room && pos % PAGE) {
      /* pad the line that ends here up to the boundary */
      if (o == 0) {
        *pad_prev = room;
      } else {
        if (o + room > cap) return (size_t)-1;
        out[o - 1] = ' ';
        memset(out + o, ' ', room - 1);
        out[o + room - 1] = '\n';
        o += room;
      }
    }
    if (o + n > cap) return (size_t)-1;
    memcpy(out + o, in, n);
    o += n;
    in += n;
    len -= n;
  }
  return o;
}

/* gone: the path of the file this one replaces (deleted while the job ran), or NULL. One
 * warning either way: that it was deleted, or that no new file can be made. */
static int open_locked(const char *gone) {
  char stem[sizeof g_host + 32], path[PATH_MAX + 320];
  snprintf(stem, sizeof stem, "%s-pid%ld", g_host, (long)getpid());
  bool renamed;
  g_fd = ins_files_create(&g_dir, stem, ".log", path, sizeof path, &renamed);
  if (g_fd < 0) {
    char why[INS_FILES_WHY_MAX];
    ins_notice(NULL, &ins_sink_dir_said, "cannot create a log file in '%s': %s; records are not "
               "written (they are counted; set NCCL_INSPECTOR_DUMP_DIR to a writable directory)",
               g_dir.path, ins_files_why(&g_dir, errno, why, sizeof why));
    return -1;
  }
  g_off = 0;
  g_fd_pid = getpid();
  snprintf(g_path, sizeof g_path, "%s", path);
  if (gone && !ins_warn_once(&g_warned_gone, "the log file %s was deleted while the job ran: "
                             "records go to a new file", gone))
    ins_info("the log file %s was deleted again: records go to a new file", gone);
  if (renamed)
    ins_warn("'%s/%s.log' already exists (a file left by an earlier process with this pid, or a "
             "link planted there): it is left alone, and records go to %s", g_dir.path, stem, path);
  else
    ins_info("writing records to %s", path);
  return 0;
}

/*
 * Write n bytes at the end of the file. Returns how many of them are now in
 * the file as whole lines: n, or after a failure (a full disk, a file size
 * limit, an I/O error) the bytes up to the last newline written, the file
 * being cut back there so that it never ends in a partial line (a later
 * batch would be glued onto it). g_off moves past what was kept.
 */
static size_t write_whole_lines(const char *data, size_t n) {
  size_t done = 0;
  int err = 0;
  while (done < n) {
    ssize_t w = pwrite(g_fd, data + done, n - done, g_off + (off_t)done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      err = w < 0 ? errno : ENOSPC;
      break;
    }
    done += (size_t)w;
  }
  if (done < n) {
    const char *nl = done ? memrchr(data, '\n', done) : NULL;
    done = nl ? (size_t)(nl - data) + 1 : 0;
    /* if this fails too, the partial line stays; the lines are counted lost either way */
    (void)!ftruncate(g_fd, g_off + (off_t)done);
    ins_notice(&g_warned_write, &ins_sink_dir_said, "writing to the log file failed: %s; the "
               "records that could not be written are counted and reported at exit", strerror(err));
  }
  g_off += (off_t)done;
  return done;
}

/* The newline that ends the file at g_off - 1 becomes pad spaces and a newline at
 * the page end (the write stays in one page: atomic). 0, or -1 with the file as it was. */
static int pad_last_line(size_t pad) {
  char buf[PAGE];
  memset(buf, ' ', pad);
  buf[pad] = '\n';
  off_t at = g_off - 1;
  g_off = at;
  if (write_whole_lines(buf, pad + 1) == pad + 1) return 0;
  /* not written: put the newline back (no new block needed) and the size as it was */
  g_off = at;
  if (pwrite(g_fd, "\n", 1, at) == 1) g_off = at + 1;
  (void)!ftruncate(g_fd, g_off);
  return -1;
}

static uint64_t append_locked(const char *data, size_t len, uint64_t records, const char *gone) {
  uint64_t lost = 0;
  if (g_fd >= 0 && g_fd_pid != getpid()) g_fd = -1; /* forked: start our own file */
  if (g_fd < 0 && !g_open_failed && !g_closed && open_locked(gone) != 0) g_open_failed = true;
  if (g_fd < 0) {
    lost = records;
    goto done;
  }
  size_t need = len + len / 8 + 2 * PAGE; /* padding adds < one line per page */
  if (need > g_out_cap) {
    char *p = realloc(g_out, need);
    if (p) g_out = p, g_out_cap = need;
  }
  size_t pad_prev = 0, n = (size_t)-1;
  if (g_out && g_out_cap >= need)
    n = ins_writer_layout(data, len, (size_t)g_off, g_out, g_out_cap, &pad_prev);
  if (n != (size_t)-1 && pad_prev) {
    /* The first line would straddle a page: pad the line that ends the file up
     * to the page end, then lay out again from there. */
    if (pad_last_line(pad_prev) != 0) {
      lost = records;
      goto done;
    }
    n = ins_writer_layout(data, len, (size_t)g_off, g_out, g_out_cap, &pad_prev);
  }
  const char *text = g_out;
  if (n == (size_t)-1) text = data, n = len; /* no memory for the layout: plain write */
  size_t kept = write_whole_lines(text, n);
  /* Exact: the record lines past what the file kept, whatever stats lines are among them. */
  if (kept < n) lost = ins_json_count_records(text + kept, n - kept);
done:
  return lost;
}

uint64_t ins_writer_append(const char *data, size_t len, uint64_t records) {
  if (!len) return 0;
  pthread_mutex_lock(&g_lock);
  uint64_t lost = append_locked(data, len, records, NULL);
  /* The file was deleted (or its directory) before or while this batch was written: the
   * batch reached no one. A new file (created as safely as the first, directory
   * included, checked against its first making: io/files.h) gets it again; one fstat
   * per batch. */
  if (g_fd >= 0 && ins_files_gone(g_fd, g_path)) {
    char gone[sizeof g_path];
    memcpy(gone, g_path, sizeof gone);
    close(g_fd);
    g_fd = -1;
    lost = append_locked(data, len, records, gone);
  }
  pthread_mutex_unlock(&g_lock);
  return lost;
}

static atomic_ullong g_unwritten;
static atomic_int g_warned_records;

void ins_writer_append_records(const char *data, size_t len, uint64_t records) {
  uint64_t lost = ins_writer_append(data, len, records);
  if (!lost) return;
  atomic_fetch_add(&g_unwritten, lost);
  ins_warn_once(&g_warned_records, "records could not be written; their number is reported at exit");
}

uint64_t ins_writer_unwritten(void) { return atomic_load(&g_unwritten); }

void ins_writer_close(void) {
  pthread_mutex_lock(&g_lock);
  if (g_fd >= 0 && g_fd_pid == getpid()) close(g_fd); /* a forked child's is its parent's */
  g_fd = -1;
  g_closed = true;
  free(g_out);
  g_out = NULL;
  g_out_cap = 0;
  pthread_mutex_unlock(&g_lock);
}
