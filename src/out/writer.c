/*
 * writer.c - lazily opened, append-only log file (see writer.h).
 */
#include "out/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_dir[PATH_MAX], g_host[256];
static int g_fd = -1;
static pid_t g_fd_pid; /* a forked child must not append to its parent's file */
static int g_failed;

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

static int open_locked(void) {
  char path[PATH_MAX + 300];
  snprintf(path, sizeof path, "%s/%s-pid%ld.log", g_dir, g_host, (long)getpid());
  if (ins_mkdir_p(g_dir) != 0) {
    ins_warn("cannot create dump directory '%s': %s; records are counted as dropped "
             "(set NCCL_INSPECTOR_DUMP_DIR to a writable directory)", g_dir, strerror(errno));
    return -1;
  }
  g_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (g_fd < 0) {
    ins_warn("cannot open '%s': %s; records are counted as dropped", path, strerror(errno));
    return -1;
  }
  fchmod(g_fd, 0644);
  g_fd_pid = getpid();
  ins_info("writing records to %s", path);
  return 0;
}

int ins_writer_append(const char *data, size_t len) {
  int rc = 0;
  pthread_mutex_lock(&g_lock);
  if (g_fd >= 0 && g_fd_pid != getpid()) g_fd = -1; /* forked: start our own file */
  if (g_fd < 0 && (g_failed || open_locked() != 0)) {
    g_failed = 1;
    rc = -1;
  }
  while (rc == 0 && len) {
    ssize_t n = write(g_fd, data, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (!g_failed) ins_warn("write to the dump file failed: %s", n < 0 ? strerror(errno) : "no space");
      g_failed = 1;
      rc = -1;
      break;
    }
    data += n;
    len -= (size_t)n;
  }
  pthread_mutex_unlock(&g_lock);
  return rc;
}
