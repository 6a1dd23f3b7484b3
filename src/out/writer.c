/*
 * writer.c - lazily opened log file with kill-safe line layout (see writer.h).
 */
#include "out/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"

#define PAGE INS_WRITER_PAGE

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_dir[PATH_MAX], g_host[256];
static int g_fd = -1;
static off_t g_off;    /* end of file: we are its only writer (one file per pid) */
static pid_t g_fd_pid; /* a forked child must not write to its parent's file */
static int g_failed;
static char *g_out;    /* layout buffer */
static size_t g_out_cap;

void ins_writer_configure(const char *dir, const char *hostname) {
  pthread_mutex_lock(&g_lock);
  snprintf(g_dir, sizeof g_dir, "%s", dir);
  snprintf(g_host, sizeof g_host, "%s", hostname);
  pthread_mutex_unlock(&g_lock);
}

int ins_mkdir_p(const char *dir) {
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) return errno = ENAMETOOLONG, -1;
  for (char *p = path + 1;; p++) {
    if (*p == '/' || *p == '\0') {
      char saved = *p;
      *p = '\0';
      if (mkdir(path, 0755) == 0) {
        chmod(path, 0755); /* 0755 whatever the umask */
      } else if (errno != EEXIST) {
        return -1;
      }
      *p = saved;
      if (!saved) break;
    }
  }
  struct stat st;
  if (stat(path, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) return errno = ENOTDIR, -1;
  return 0;
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

static int open_locked(void) {
  char path[PATH_MAX + 300];
  snprintf(path, sizeof path, "%s/%s-pid%ld.log", g_dir, g_host, (long)getpid());
  if (ins_mkdir_p(g_dir) != 0) {
    ins_warn("cannot create dump directory '%s': %s; records are not written "
             "(set NCCL_INSPECTOR_DUMP_DIR to a writable directory)", g_dir, strerror(errno));
    return -1;
  }
  g_fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (g_fd < 0) {
    ins_warn("cannot open '%s': %s; records are not written", path, strerror(errno));
    return -1;
  }
  fchmod(g_fd, 0644);
  g_off = lseek(g_fd, 0, SEEK_END);
  if (g_off < 0) g_off = 0;
  g_fd_pid = getpid();
  ins_info("writing records to %s", path);
  return 0;
}

static int pwrite_all(const char *data, size_t len, off_t off) {
  while (len) {
    ssize_t n = pwrite(g_fd, data, len, off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (!g_failed) ins_warn("write to the dump file failed: %s", n < 0 ? strerror(errno) : "no space");
      g_failed = 1;
      return -1;
    }
    data += n;
    len -= (size_t)n;
    off += n;
  }
  return 0;
}

int ins_writer_append(const char *data, size_t len) {
  int rc = -1;
  pthread_mutex_lock(&g_lock);
  if (g_fd >= 0 && g_fd_pid != getpid()) g_fd = -1; /* forked: start our own file */
  if (g_fd < 0 && !g_failed && open_locked() != 0) g_failed = 1;
  if (g_fd >= 0 && !g_failed) {
    size_t need = len + len / 8 + 2 * PAGE; /* padding adds < one line per page */
    if (need > g_out_cap) {
      char *p = realloc(g_out, need);
      if (p) g_out = p, g_out_cap = need;
    }
    size_t pad_prev = 0, n = (size_t)-1;
    if (g_out) n = ins_writer_layout(data, len, (size_t)g_off, g_out, g_out_cap, &pad_prev);
    rc = 0;
    if (n != (size_t)-1 && pad_prev) {
      /* The first line would straddle a page: turn the newline that ends the
       * file into spaces up to the page end (one page: atomic), then lay out again. */
      char pad[PAGE];
      memset(pad, ' ', pad_prev);
      pad[pad_prev] = '\n';
      rc = pwrite_all(pad, pad_prev + 1, g_off - 1);
      if (rc == 0) {
        g_off += (off_t)pad_prev;
        n = ins_writer_layout(data, len, (size_t)g_off, g_out, g_out_cap, &pad_prev);
      }
    }
    if (rc == 0 && n == (size_t)-1) { /* no memory for the layout: plain write */
      rc = pwrite_all(data, len, g_off);
      if (rc == 0) g_off += (off_t)len;
    } else if (rc == 0) {
      rc = pwrite_all(g_out, n, g_off);
      if (rc == 0) g_off += (off_t)n;
    }
  }
  pthread_mutex_unlock(&g_lock);
  return rc;
}

static atomic_ullong g_unwritten;
static atomic_int g_warned_records;

void ins_writer_append_records(const char *data, size_t len, uint64_t records) {
  if (!len || ins_writer_append(data, len) == 0) return;
  atomic_fetch_add(&g_unwritten, records);
  ins_warn_once(&g_warned_records, "records could not be written; their number is reported at exit");
}

uint64_t ins_writer_unwritten(void) { return atomic_load(&g_unwritten); }
